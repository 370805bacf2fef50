"""The summary tables do not need a run's rows of the long table to be contiguous."""

from __future__ import annotations

import numpy as np
import pandas as pd

from lit_bench.analysis import summarize
from lit_bench.analysis.load import evaluations_table, load_tables, read_runs, runs_table

from ..helpers import make_sweep, write_run


def test_tables_and_bands_of_a_shuffled_long_table_are_the_same(tmp_path):
    sweep = make_sweep(tmp_path) / "fixture_sweep"
    for seed in range(3, 6):  # a config of more seeds, one of them shorter (the grid ends at the shortest run)
        write_run(sweep, "ppo", "CartPole", seed, "lit", [10.0 * seed, 200.0, 400.0 + seed][: 2 + (seed > 3)])
    runs, evals = load_tables([sweep], metrics=["mean_return"])  # (as the report)
    # round robin: every run's first row, then every run's second row, ...: runs first appear in the same order
    # (which orders the seeds the bootstrap resamples), but no run's rows are contiguous
    shuffled = evals.iloc[np.lexsort((np.arange(len(evals)), evals.groupby("run_dir").cumcount()))]
    assert (shuffled.run_dir.to_numpy()[1:] != shuffled.run_dir.to_numpy()[:-1]).all()
    pd.testing.assert_frame_equal(summarize.run_table(runs, shuffled), summarize.run_table(runs, evals))
    summary = summarize.summary_table(runs, evals)
    pd.testing.assert_frame_equal(summarize.summary_table(runs, shuffled), summary)
    bands, shuffled_bands = summarize.curve_bands(evals, summary), summarize.curve_bands(shuffled, summary)
    assert set(bands) == set(shuffled_bands) and len(bands) == 3  # ppo lit, ppo sb3, a2c (its killed run)
    for index, band in bands.items():
        pd.testing.assert_frame_equal(shuffled_bands[index], band)
    lit = summary.index[(summary.algo == "ppo") & (summary.backend == "lit")][0]
    band = bands[lit]  # the grid's points from the first evaluation (1000) to the shortest run's last (2000)
    assert (band.n_runs == 6).all() and band.timesteps.min() >= 1000 and np.isclose(band.timesteps.max(), 2000.0)


def test_returns_of_the_parsed_runs_are_those_of_the_long_table(tmp_path):
    sweep = make_sweep(tmp_path) / "fixture_sweep"
    write_run(sweep, "dqn", "CartPole", 0, "lit", [])  # completed without evaluations: damaged
    cut = write_run(sweep, "dqn", "CartPole", 1, "lit", [1.0, 2.0])
    (cut / "eval.csv").write_text((cut / "eval.csv").read_text()[:-3])  # damaged: its rows are never used
    gap = write_run(sweep, "sac", "Pendulum", 0, "lit", [-900.0, -500.0, -300.0], env_id="Pendulum-v1", status=None)
    (gap / "eval.csv").write_text((gap / "eval.csv").read_text().replace(",-500.0,", ",,"))  # no number: damaged
    parsed = read_runs([sweep])
    runs = runs_table(parsed)
    want = summarize.Returns.of(evaluations_table(parsed, runs, ["mean_return"]))
    got = summarize.Returns.of_parsed(parsed, runs)
    pd.testing.assert_frame_equal(got.info, want.info)
    for field in ("run_dirs", "order", "bounds", "timesteps", "values"):
        assert np.array_equal(getattr(got, field), getattr(want, field)), field
    assert len(got.run_dirs) == 7 and got.bounds[-1] == 3 * 6 + 2  # ppo x 6 and a2c's killed run


def test_a_run_that_failed_early_does_not_cut_the_completed_runs_curve_short(tmp_path):
    """The band's grid ends at its shortest run: a config's completed runs are drawn on their own (a failed run
    stopped at 1,000 steps would end the curve there); a config with no completed run keeps all of them."""
    sweep = make_sweep(tmp_path) / "fixture_sweep"
    for seed in range(3):
        write_run(sweep, "dqn", "CartPole", seed, "lit", [10.0, 20.0, 30.0 + seed])
    write_run(sweep, "dqn", "CartPole", 3, "lit", [5.0], status="failed")
    write_run(sweep, "sac", "Pendulum", 0, "lit", [-900.0, -500.0], status="failed", env_id="Pendulum-v1")
    write_run(sweep, "sac", "Pendulum", 1, "lit", [-800.0], status="failed", env_id="Pendulum-v1")
    runs, evals = load_tables([sweep], metrics=["mean_return"])
    summary = summarize.summary_table(runs, evals)
    bands = summarize.curve_bands(evals, summary)
    dqn = bands[summary.index[(summary.algo == "dqn") & (summary.backend == "lit")][0]]
    assert np.isclose(dqn.timesteps.max(), 3000.0) and (dqn.n_runs == 3).all()
    sac = bands[summary.index[summary.algo == "sac"][0]]
    assert np.isclose(sac.timesteps.max(), 1000.0) and (sac.n_runs == 2).all()  # none completed: all, to the shortest

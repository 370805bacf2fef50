"""The summary tables do not need a run's rows of the long table to be contiguous."""

from __future__ import annotations

import numpy as np
import pandas as pd

from lit_bench.analysis import summarize
from lit_bench.analysis.load import load_tables

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

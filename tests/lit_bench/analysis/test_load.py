"""Loading run directories: every run kept, failed and truncated ones marked."""

from __future__ import annotations

import pytest

from lit_bench.analysis.load import find_run_dirs, load_evaluations, load_runs
from lit_bench.config.identity import config_id
from tests.lit_bench.helpers import make_sweep, write_run


def test_load_runs_keeps_and_marks_every_run(tmp_path):
    root = make_sweep(tmp_path)
    runs = load_runs([root / "fixture_sweep"])
    assert len(runs) == 8
    status = runs.set_index(["algo", "backend", "seed"])["status"]
    assert status[("a2c", "lit", 0)] == "failed"
    assert status[("a2c", "lit", 1)] == "incomplete"
    assert (runs[runs.algo == "ppo"]["status"] == "completed").all()
    assert set(runs.backend) == {"lit", "sb3"}
    # runs without the run-identity keys: sweep from the path, one config per sweep
    assert set(runs.sweep) == {"fixture_sweep"} and set(runs.config_id) == {""} and set(runs.variant) == {""}


def test_load_evaluations_is_tidy_and_accepts_globs(tmp_path):
    make_sweep(tmp_path)
    evals = load_evaluations([tmp_path / "fixture_sweep*"])
    assert list(evals.columns) == [
        "algo",
        "backend",
        "env",
        "env_id",
        "seed",
        "sweep",
        "config_id",
        "variant",
        "status",
        "run_dir",
        "timesteps",
        "metric",
        "value",
    ]
    ret = evals[(evals.metric == "mean_return") & (evals.algo == "ppo") & (evals.backend == "lit")]
    assert sorted(ret[ret.seed == 1]["value"]) == [120.0, 320.0, 490.0]
    failed = evals[(evals.algo == "a2c") & (evals.seed == 0)]
    assert len(failed) == 1 and failed["status"].item() == "failed" and failed["value"].isna().all()
    truncated = evals[(evals.algo == "a2c") & (evals.seed == 1) & (evals.metric == "mean_return")]
    assert list(truncated["value"]) == [50.0, 120.0] and (truncated["status"] == "incomplete").all()


def test_missing_path_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        find_run_dirs([tmp_path / "nope"])


def test_what_is_below_a_run_is_not_a_run(tmp_path):
    """A run's own folders (train/, checkpoints/, a copy of a run's files kept inside it) are not walked."""
    run = tmp_path / "sweep" / "ppo" / "CartPole" / "seed_0"
    (run / "checkpoints" / "old").mkdir(parents=True)
    (run / "summary.json").write_text("{}")
    (run / "checkpoints" / "old" / "eval.csv").write_text("timesteps,mean_return\n")
    (tmp_path / "sweep" / "ppo" / "CartPole" / "seed_1").mkdir()
    (tmp_path / "sweep" / "ppo" / "CartPole" / "seed_1" / "eval.csv").write_text("timesteps,mean_return\n")
    assert [p.name for p in find_run_dirs([tmp_path])] == ["seed_0", "seed_1"]


def test_runs_at_any_depth_keep_their_config(tmp_path):
    """One sweep with the defaults and two variants (the run-identity layout), plus an old run without config ids."""
    sweep = tmp_path / "hp"
    for variant in ("algo.learning_rate=0.001-0123456789", "algo.learning_rate=0.003-abcdef0123"):
        for seed in (0, 1):
            write_run(sweep / "ppo" / "CartPole" / variant, "", "", seed, "lit", [10.0, 20.0], status=None)
    old = write_run(sweep, "ppo", "CartPole", 0, "lit", [30.0])
    (old / "config.yaml").write_text("seed: 0\nbudget: 1000\nsweep: hp\nalgo: {gamma: 0.9}\n")
    runs = load_runs([sweep])
    assert len(runs) == 5 and (runs.sweep == "hp").all()
    assert (runs.algo == "ppo").all() and (runs.env == "CartPole").all()
    variants = runs.groupby("variant").seed.apply(sorted).to_dict()
    assert variants == {"": [0], "algo.learning_rate=0.001": [0, 1], "algo.learning_rate=0.003": [0, 1]}
    assert runs[runs.variant == ""].config_id.item() == config_id({"seed": 5, "budget": 1000, "algo": {"gamma": 0.9}})

"""Loading run directories: every run kept, failed and truncated ones marked."""

from __future__ import annotations

import pytest

from lit_bench.analysis.load import find_run_dirs, load_evaluations, load_runs

from .fixtures import make_sweep


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
    assert list(evals.columns) == ["algo", "backend", "env", "env_id", "seed", "sweep", "config_id", "variant",
                                   "status", "run_dir", "timesteps", "metric", "value"]
    ret = evals[(evals.metric == "mean_return") & (evals.algo == "ppo") & (evals.backend == "lit")]
    assert sorted(ret[ret.seed == 1]["value"]) == [120.0, 320.0, 490.0]
    failed = evals[(evals.algo == "a2c") & (evals.seed == 0)]
    assert len(failed) == 1 and failed["status"].item() == "failed" and failed["value"].isna().all()
    truncated = evals[(evals.algo == "a2c") & (evals.seed == 1) & (evals.metric == "mean_return")]
    assert list(truncated["value"]) == [50.0, 120.0] and (truncated["status"] == "incomplete").all()


def test_missing_path_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        find_run_dirs([tmp_path / "nope"])

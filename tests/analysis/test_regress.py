"""The regression checker passes when thresholds are met and fails (non-zero) when one is not."""

from __future__ import annotations

import pandas as pd
import pytest

from lit_bench import regress

from .fixtures import make_sweep


@pytest.fixture
def fixture_suite(tmp_path, monkeypatch):
    make_sweep(tmp_path, sb3=False)
    monkeypatch.setattr(regress, "run_suite", lambda suite, backend, out, launcher=None: [tmp_path / "fixture_sweep"])
    return tmp_path


def _baselines(path, threshold):
    pd.DataFrame({"algo": ["ppo"], "env": ["CartPole"], "threshold": [threshold]}).to_csv(path, index=False)
    return path


def test_passes_when_thresholds_are_met(fixture_suite, capsys):
    # the fixture's ppo/lit final IQM is 490 (last evaluations 480, 490, 500)
    assert regress.main(["--suite", "ci", "--baselines", str(_baselines(fixture_suite / "b.csv", 480.0))]) == 0
    out = capsys.readouterr().out
    assert "1 passed, 0 failed" in out and "REGRESSION" not in out


def test_fails_on_a_regression(fixture_suite, capsys):
    assert regress.main(["--suite", "ci", "--baselines", str(_baselines(fixture_suite / "b.csv", 495.0))]) == 1
    assert "REGRESSION" in capsys.readouterr().out


def test_failed_or_missing_runs_are_regressions(fixture_suite):
    baselines = pd.DataFrame({"algo": ["a2c", "sac"], "env": ["CartPole", "Pendulum"], "threshold": [-1e9, -1e9]})
    result = regress.compare(regress.measured(fixture_suite / "fixture_sweep"), baselines)
    assert not result.passed.any()


def test_thresholds_take_the_lower_backend_with_margin():
    lit = pd.DataFrame({"algo": ["sac"], "env": ["Pendulum"], "final_iqm": [-150.0], "ci_low": [-200.0]})
    sb3 = pd.DataFrame({"algo": ["sac"], "env": ["Pendulum"], "final_iqm": [-160.0], "ci_low": [-180.0]})
    table = regress.thresholds({"lit": lit, "sb3": sb3}, margin=0.25)
    assert table.threshold.item() == pytest.approx(-250.0)


def test_unknown_suite_lists_the_available_ones():
    with pytest.raises(SystemExit, match="suite: unknown suite 'nope'; available: ci"):
        regress.load_suite("nope")

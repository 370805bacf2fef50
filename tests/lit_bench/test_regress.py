"""The regression checker passes when thresholds are met and fails (non-zero) when one is not."""

from __future__ import annotations

import pandas as pd
import pytest

from lit_bench.cli import regress
from tests.lit_bench.helpers import make_sweep


@pytest.fixture
def fixture_suite(tmp_path, monkeypatch):
    make_sweep(tmp_path, sb3=False)
    monkeypatch.setattr(
        regress, "run_suite", lambda suite, backend, out, launcher=None, kind="entries": [tmp_path / "fixture_sweep"]
    )
    suite = {"name": "ci", "seeds": [0, 1, 2], "margin": 0.25, "entries": [{"algo": "ppo", "env": "CartPole"}]}
    monkeypatch.setattr(regress, "load_suite", lambda name: suite)
    no_parity = regress.parity_result({"seeds": [], "parity": []}, pd.DataFrame(), pd.DataFrame())
    monkeypatch.setattr(regress, "check_parity", lambda suite, out, launcher=None: no_parity)
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


def _runs(finals, status="completed"):
    return pd.DataFrame(
        {"algo": "sac", "env": "Pendulum", "seed": range(len(finals)), "status": status, "final_mean_return": finals}
    )


def test_parity_entries_pass_only_when_every_seed_is_identical():
    suite = {"seeds": [0, 1], "parity": [{"algo": "sac", "env": "Pendulum", "budget": 10}]}
    assert regress.parity_result(suite, _runs([-150.25, -160.5]), _runs([-150.25, -160.5])).passed.all()
    assert regress.parity_result(suite, _runs([-150.25, -160.5]), _runs([-150.25, -160.50001])).passed.tolist() == [
        True,
        False,
    ]
    assert not regress.parity_result(suite, _runs([-150.25]), _runs([-150.25, -160.5])).passed.iloc[1]  # missing
    assert not regress.parity_result(suite, _runs([1.0, 2.0], "failed"), _runs([1.0, 2.0])).passed.any()


def test_a_parity_difference_fails_the_suite(fixture_suite, monkeypatch, capsys):
    suite = {"seeds": [0], "parity": [{"algo": "sac", "env": "Pendulum", "budget": 10}]}
    differing = regress.parity_result(suite, _runs([1.0]), _runs([2.0]))
    monkeypatch.setattr(regress, "check_parity", lambda suite, out, launcher=None: differing)
    assert regress.main(["--suite", "ci", "--baselines", str(_baselines(fixture_suite / "b.csv", 300.0))]) == 1
    assert "DIFFERENT" in capsys.readouterr().out


def test_an_entry_without_a_threshold_is_a_regression():
    table = pd.DataFrame(
        {
            "algo": ["ppo"],
            "env": ["CartPole"],
            "seeds": [2],
            "failed": [0],
            "final_iqm": [400.0],
            "ci_low": [390.0],
            "ci_high": [410.0],
        }
    )
    suite = {"entries": [{"algo": "ppo", "env": "CartPole"}, {"algo": "trpo", "env": "CartPole"}]}
    baselines = pd.DataFrame({"algo": ["ppo"], "env": ["CartPole"], "threshold": [300.0]})
    assert regress.compare(table, baselines, suite).passed.tolist() == [True, False]  # trpo: nothing recorded


def test_record_with_only_rewrites_the_measured_thresholds_and_keeps_the_others(tmp_path, monkeypatch, capsys):
    make_sweep(tmp_path)  # ppo on CartPole: lit finals 480, 490, 500; SB3 finals 470 for every seed
    sweep = tmp_path / "fixture_sweep"
    monkeypatch.setattr(
        regress,
        "run_suite",
        lambda suite, backend, out, launcher=None, kind="entries": sorted(
            (sweep / ("ppo@sb3" if backend == "sb3" else "ppo")).glob("CartPole/seed_*")
        ),
    )
    suite = {
        "name": "ci",
        "seeds": [0, 1, 2],
        "margin": 0.25,
        "entries": [{"algo": "ppo", "env": "CartPole"}, {"algo": "sac", "env": "Pendulum"}],
    }
    monkeypatch.setattr(regress, "load_suite", lambda name: suite)
    baselines = tmp_path / "ci.csv"
    pd.DataFrame({"algo": ["ppo", "sac"], "env": ["CartPole", "Pendulum"], "threshold": [1.0, -200.0]}).to_csv(
        baselines, index=False
    )
    assert regress.main(["--suite", "ci", "--record", "--only", "ppo:CartPole", "--baselines", str(baselines)]) == 0
    table = pd.read_csv(baselines).set_index("algo")
    assert table.loc["ppo", "threshold"] == pytest.approx(470 - 0.25 * 470)  # SB3's CI is the lower one
    assert table.loc["sac", "threshold"] == -200.0  # not measured this time: its recorded threshold is kept
    assert f"thresholds written to {baselines}" in capsys.readouterr().out

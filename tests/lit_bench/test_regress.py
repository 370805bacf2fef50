"""The regression checker passes when thresholds are met and fails (non-zero) when one is not."""

from __future__ import annotations

import pandas as pd
import pytest

from lit_bench.analysis.load import load_runs
from lit_bench.cli import regress
from lit_bench.cli.regression import suites, verdicts
from lit_bench.cli.regression.verdicts import MIN_SEEDS
from tests.lit_bench.helpers import make_sweep, write_run


@pytest.fixture
def fixture_suite(tmp_path, monkeypatch):
    make_sweep(tmp_path, sb3=False)
    monkeypatch.setattr(
        regress, "run_suite", lambda suite, backend, out, launcher=None, kind="entries": [tmp_path / "fixture_sweep"]
    )
    suite = {"name": "ci", "seeds": [0, 1, 2], "margin": 0.25, "entries": [{"algo": "ppo", "env": "CartPole"}]}
    monkeypatch.setattr(regress, "load_suite", lambda name: suite)
    no_parity = verdicts.parity_result({"seeds": [], "parity": []}, pd.DataFrame(), pd.DataFrame())
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
    result = verdicts.compare(verdicts.measured(fixture_suite / "fixture_sweep"), baselines)
    assert not result.passed.any()


def test_thresholds_take_the_lower_backend_with_margin():
    row = {"algo": ["sac"], "env": ["Pendulum"]}
    lit = pd.DataFrame({**row, "final_iqm": [-150.0], "ci_low": [-200.0], "seeds": [6]})
    sb3 = pd.DataFrame({**row, "final_iqm": [-160.0], "ci_low": [-180.0], "seeds": [5]})
    table = verdicts.thresholds({"lit": lit, "sb3": sb3}, margin=0.25)
    assert table.threshold.item() == pytest.approx(-250.0)
    assert table.seeds.item() == 5 and table.random.item() == pytest.approx(-1208.0)  # the fewer seeds count


def test_unknown_suite_lists_the_available_ones():
    with pytest.raises(SystemExit, match="suite: unknown suite 'nope'; available: ci"):
        suites.load_suite("nope")


def _runs(finals, status="completed"):
    return pd.DataFrame(
        {"algo": "sac", "env": "Pendulum", "seed": range(len(finals)), "status": status, "final_mean_return": finals}
    )


def test_parity_entries_pass_only_when_every_seed_is_identical():
    suite = {"seeds": [0, 1], "parity": [{"algo": "sac", "env": "Pendulum", "budget": 10}]}
    assert verdicts.parity_result(suite, _runs([-150.25, -160.5]), _runs([-150.25, -160.5])).passed.all()
    assert verdicts.parity_result(suite, _runs([-150.25, -160.5]), _runs([-150.25, -160.50001])).passed.tolist() == [
        True,
        False,
    ]
    assert not verdicts.parity_result(suite, _runs([-150.25]), _runs([-150.25, -160.5])).passed.iloc[1]  # missing
    assert not verdicts.parity_result(suite, _runs([1.0, 2.0], "failed"), _runs([1.0, 2.0])).passed.any()


def test_parity_entries_run_their_own_seeds_and_the_entries_the_suites(tmp_path, monkeypatch, capsys):
    suite = {
        "name": "ci",
        "seeds": FIVE,
        "parity_seeds": [0, 1],
        "entries": [{"algo": "ppo", "env": "CartPole", "budget": 100}],
        "parity": [{"algo": "sac", "env": "Pendulum", "budget": 10}],
    }
    commands: list[list[str]] = []
    monkeypatch.setattr(regress.subprocess, "run", lambda command, **kwargs: commands.append(command))
    regress.run_suite(suite, "lit", tmp_path, kind="entries")
    regress.run_suite(suite, "sb3", tmp_path, kind="parity")
    assert [[a for a in c if a.startswith(("algo=", "seed="))] for c in commands] == [
        ["algo=ppo", "seed=0,1,2,3,4"],
        ["algo=sac", "seed=0,1"],
    ]
    # the parity verdict expects exactly those seeds: a seed the parity runs did not train is not judged missing
    result = verdicts.parity_result(suite, _runs([-150.25, -160.5]), _runs([-150.25, -160.5]))
    assert result.seed.tolist() == [0, 1] and result.passed.all()
    suites.dry_run(suite, None)
    out = capsys.readouterr().out
    assert "ci entries (lit; seeds [0, 1, 2, 3, 4])" in out and "ci parity (lit, sb3; seeds [0, 1])" in out
    # without parity_seeds, parity entries run the suite's seeds
    assert suites.seeds_of({"seeds": [3, 4]}, "parity") == [3, 4]
    with pytest.raises(ValueError, match="kind: 'entrys' is not a suite list; valid: entries, parity"):
        suites.seeds_of(suite, "entrys")


def test_the_ci_suite_records_from_at_least_five_seeds_and_checks_parity_on_fewer():
    suite = suites.load_suite("ci")
    assert len(suites.seeds_of(suite)) >= MIN_SEEDS
    parity = suites.seeds_of(suite, "parity")
    assert 2 <= len(parity) < len(suites.seeds_of(suite)) and set(parity) <= set(suite["seeds"])


def test_a_parity_difference_fails_the_suite(fixture_suite, monkeypatch, capsys):
    suite = {"seeds": [0], "parity": [{"algo": "sac", "env": "Pendulum", "budget": 10}]}
    differing = verdicts.parity_result(suite, _runs([1.0]), _runs([2.0]))
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
    assert verdicts.compare(table, baselines, suite).passed.tolist() == [True, False]  # trpo: nothing recorded


def _recorded_sweep(root, lit: dict[str, list[float]], sb3: dict[str, list[float]]):
    """Final evaluations per entry ("algo:env") and seed, as run directories of both backends."""
    runs: dict[str, list] = {"lit": [], "sb3": []}
    for backend, finals in (("lit", lit), ("sb3", sb3)):
        for name, scores in finals.items():
            algo, env = name.split(":")
            for seed, score in enumerate(scores):
                run = write_run(
                    root / f"sweep_{backend}", algo, env, seed, backend, [score / 2, score], env_id=f"{env}-v1"
                )
                runs[backend].append(run)
    return runs


def _record(tmp_path, monkeypatch, suite, runs, *args):
    monkeypatch.setattr(
        regress, "run_suite", lambda suite, backend, out, launcher=None, kind="entries": sorted(runs[backend])
    )
    monkeypatch.setattr(regress, "load_suite", lambda name: suite)
    return regress.main(["--suite", "ci", "--record", "--baselines", str(tmp_path / "ci.csv"), *args])


FIVE = [0, 1, 2, 3, 4]


def test_record_with_only_rewrites_the_measured_thresholds_and_keeps_the_others(tmp_path, monkeypatch, capsys):
    runs = _recorded_sweep(tmp_path, {"ppo:CartPole": [480, 490, 500, 495, 485]}, {"ppo:CartPole": [470] * 5})
    suite = {
        "name": "ci",
        "seeds": FIVE,
        "margin": 0.25,
        "entries": [{"algo": "ppo", "env": "CartPole"}, {"algo": "sac", "env": "Pendulum"}],
    }
    baselines = tmp_path / "ci.csv"
    pd.DataFrame({"algo": ["ppo", "sac"], "env": ["CartPole", "Pendulum"], "threshold": [1.0, -200.0]}).to_csv(
        baselines, index=False
    )
    assert _record(tmp_path, monkeypatch, suite, runs, "--only", "ppo:CartPole") == 0
    table = pd.read_csv(baselines).set_index("algo")
    assert table.loc["ppo", "threshold"] == pytest.approx(470 - 0.25 * 470)  # SB3's CI is the lower one
    assert table.loc["ppo", "seeds"] == 5 and table.loc["ppo", "random"] == pytest.approx(23.68)
    assert table.loc["sac", "threshold"] == -200.0  # not measured this time: its recorded threshold is kept
    seeds = pd.read_csv(tmp_path / "ci_seeds.csv")
    assert len(seeds) == 10 and set(seeds.backend) == {"lit", "sb3"}  # the evidence: every seed's final score
    assert sorted(seeds[seeds.backend == "lit"].final_mean_return) == [480, 485, 490, 495, 500]
    assert f"thresholds written to {baselines}" in capsys.readouterr().out


def test_the_recorder_refuses_fewer_than_five_seeds_before_running_anything(tmp_path, monkeypatch):
    suite = {"name": "ci", "seeds": [0, 1], "margin": 0.25, "entries": [{"algo": "td3", "env": "Pendulum"}]}
    ran = []
    monkeypatch.setattr(regress, "run_suite", lambda *args, **kwargs: ran.append(args) or [])
    monkeypatch.setattr(regress, "load_suite", lambda name: suite)
    with pytest.raises(SystemExit, match="runs 2 seeds; thresholds are recorded from at least 5"):
        regress.main(["--suite", "ci", "--record", "--baselines", str(tmp_path / "ci.csv")])
    assert not ran and not (tmp_path / "ci.csv").exists()


def test_the_recorder_refuses_a_threshold_without_teeth_and_writes_nothing(tmp_path, monkeypatch, capsys):
    # TD3 on Pendulum as recorded on 2026-12-01: one seed that barely learned widened the CI until the threshold sat
    # near a random policy's score (-1208): it would only catch an agent that learned nothing.
    lit = {"td3:Pendulum": [-813.5, -60.0, -55.0, -150.0, -700.0], "sac:Pendulum": [-150.0, -140.0, -160.0, -145, -155]}
    sb3 = {"td3:Pendulum": [-134.0, -215.0, -120.0, -900.0, -130.0], "sac:Pendulum": [-150.0, -148, -152, -146, -154]}
    runs = _recorded_sweep(tmp_path, lit, sb3)
    suite = {
        "name": "ci",
        "seeds": FIVE,
        "margin": 0.25,
        "entries": [{"algo": "td3", "env": "Pendulum"}, {"algo": "sac", "env": "Pendulum"}],
    }
    (tmp_path / "ci.csv").write_text("algo,env,threshold\ntd3,Pendulum,-300.0\n")
    assert _record(tmp_path, monkeypatch, suite, runs) == 1
    out = capsys.readouterr().out
    assert "refused: td3:Pendulum: threshold" in out and "of the way from a random policy (-1208.0)" in out
    assert "sac:Pendulum" not in out  # five seeds that agree give a threshold with teeth
    assert (tmp_path / "ci.csv").read_text() == "algo,env,threshold\ntd3,Pendulum,-300.0\n"  # nothing written
    assert not (tmp_path / "ci_seeds.csv").exists()


def test_a_threshold_a_random_policy_reaches_is_refused():
    table = pd.DataFrame(
        {
            "algo": ["dqn"],
            "env": ["CartPole"],
            "lit_final_iqm": [30.0],
            "sb3_final_iqm": [40.0],
            "threshold": [20.0],
            "seeds": [5],
            "random": [23.68],
        }
    )
    assert verdicts.toothless(table, ["lit", "sb3"]) == [
        "dqn:CartPole: threshold 20.0 is reached by a random policy (23.7)"
    ]


@pytest.mark.harness
def test_an_exact_parity_entry_fails_when_one_side_trains_with_another_hyperparameter(tmp_path):
    """Both backends through the real harness: identical seed for seed; then lit_sb3 with one hyperparameter off its
    default (as a changed default in lit_sb3 would be), and the entry fails, whatever the seeds' noise."""
    entry = {"algo": "td3", "env": "Pendulum", "budget": 300, "overrides": ["algo.learning_starts=100"]}
    suite = {"name": "ci", "seeds": [0], "eval_episodes": 1, "parity": [entry]}
    same = regress.check_parity(suite, tmp_path / "same", launcher="basic")
    assert len(same) == 1 and same.passed.all(), same.to_string()
    changed = {**suite, "parity": [{**entry, "overrides": [*entry["overrides"], "algo.tau=0.01"]}]}
    lit = regress.run_suite(changed, "lit", tmp_path / "changed", "basic", kind="parity")
    sb3 = regress.run_suite(suite, "sb3", tmp_path / "changed", "basic", kind="parity")
    result = verdicts.parity_result(suite, load_runs(lit), load_runs(sb3))
    assert (result.lit_status == "completed").all() and (result.sb3_status == "completed").all()
    assert not result.passed.any(), result.to_string()

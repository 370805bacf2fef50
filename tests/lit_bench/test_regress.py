"""The regression checker passes when thresholds are met and fails (non-zero) when one is not."""

from __future__ import annotations

import os

import pandas as pd
import pytest

from lit_bench.analysis.load import load_runs
from lit_bench.cli import regress
from lit_bench.cli.regression import suites, verdicts
from lit_bench.cli.regression.verdicts import MIN_RECORD_SEEDS, MIN_SEEDS
from tests.lit_bench.helpers import make_sweep, write_run


@pytest.fixture
def fixture_suite(tmp_path, monkeypatch):
    make_sweep(tmp_path, sb3=False)
    monkeypatch.setattr(
        regress, "run_suite", lambda suite, backend, out, launcher=None, kind="entries": [tmp_path / "fixture_sweep"]
    )
    suite = {"name": "ci", "seeds": [0, 1, 2], "entries": [{"algo": "ppo", "env": "CartPole"}]}
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


def _seed_scores(lit: list[float], sb3: list[float], algo: str = "ppo", env: str = "CartPole") -> pd.DataFrame:
    rows = [(backend, seed, v) for backend, values in (("lit", lit), ("sb3", sb3)) for seed, v in enumerate(values)]
    return pd.DataFrame(
        {"algo": algo, "env": env, "backend": [r[0] for r in rows], "seed": [r[1] for r in rows]}
    ).assign(final_mean_return=[r[2] for r in rows], status="completed")


def test_a_threshold_is_the_lower_backends_false_alarm_quantile_of_a_checks_iqm():
    # SB3: 8 of 10 seeds balance the pole, 2 reach 150. A 5-seed check's IQM (the mean of its middle 3) falls to
    # 266.7 when 3 of its 5 seeds are bad (P = 5.8%), to 150 when 4 or 5 are (P = 0.67%): its 1% quantile is 266.7.
    lit, sb3 = [500.0] * 10, [500.0] * 8 + [150.0] * 2
    summary = pd.DataFrame({"algo": ["ppo"], "env": ["CartPole"], "seeds": [10], "final_iqm": [500.0]})
    summary = summary.assign(ci_low=400.0, ci_high=500.0)
    table = verdicts.thresholds({"lit": summary, "sb3": summary}, _seed_scores(lit, sb3), 5, 0.01)
    row = table.iloc[0]
    assert row.threshold == pytest.approx(266.666)  # rounded down: rounding never raises a threshold
    assert row.lit_false_alarm == 0.0 and row.sb3_false_alarm == pytest.approx(0.0067, abs=0.0015)
    assert row.detection == 1.0  # seeds halfway from random (23.7) to 500 reach 261.8: below it, always
    assert row.seeds == 10 and row.random == pytest.approx(23.68) and row.check_seeds == 5
    # the quantile is the false-alarm rate asked for: a stricter one lowers the threshold to 150
    assert verdicts.thresholds({"lit": summary, "sb3": summary}, _seed_scores(lit, sb3), 5, 0.005).threshold[0] == 150


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
    regress.run_suite({**suite, "seeds_per_process": 3}, "lit", tmp_path, kind="entries")
    regress.run_suite({**suite, "seeds_per_process": 3}, "lit", tmp_path, kind="parity")
    regress.run_suite({**suite, "seeds_per_process": 3}, "sb3", tmp_path, kind="entries")
    regress.run_suite(suite, "sb3", tmp_path, kind="parity")
    keys = ("algo=", "seed=", "parity=", "seeds_per_process=")
    assert [[a for a in c if a.startswith(keys)] for c in commands] == [
        ["algo=ppo", "seed=0,1,2,3,4", "seeds_per_process=3"],  # lit's seeds batched as the suite says
        ["algo=sac", "seed=0,1", "parity=true", "seeds_per_process=1"],  # the ordinary path, a process per seed
        ["algo=ppo", "seed=0,1,2,3,4"],  # SB3: as the harness runs it
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


def test_the_ci_suite_records_from_at_least_ten_seeds_checks_five_and_checks_parity_on_fewer():
    suite = suites.load_suite("ci")
    assert len(suites.seeds_of(suite)) >= MIN_SEEDS
    assert len(suite["record_seeds"]) >= MIN_RECORD_SEEDS and set(suite["seeds"]) <= set(suite["record_seeds"])
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
TEN = list(range(10))


def test_record_with_only_rewrites_the_measured_thresholds_and_keeps_the_suites_others(tmp_path, monkeypatch, capsys):
    runs = _recorded_sweep(tmp_path, {"ppo:CartPole": [480, 490, 500, 495, 485] * 2}, {"ppo:CartPole": [470] * 10})
    suite = {
        "name": "ci",
        "seeds": FIVE,
        "record_seeds": TEN,
        "false_alarm": 0.01,
        "entries": [{"algo": "ppo", "env": "CartPole"}, {"algo": "sac", "env": "Pendulum"}],
    }
    baselines = tmp_path / "ci.csv"
    recorded = {
        "algo": ["ppo", "sac", "dqn"],
        "env": ["CartPole", "Pendulum", "CartPole"],
        "threshold": [1.0, -200.0, 9],
    }
    pd.DataFrame(recorded).to_csv(baselines, index=False)
    assert _record(tmp_path, monkeypatch, suite, runs, "--only", "ppo:CartPole") == 0
    table = pd.read_csv(baselines).set_index("algo")
    assert sorted(table.index) == ["ppo", "sac"]  # dqn: no longer an entry of the suite, its threshold goes
    assert "10.000" not in baselines.read_text()  # counts stay integers beside the kept row that has none
    assert table.loc["ppo", "threshold"] == 470  # SB3's seeds are the lower ones
    assert table.loc["ppo", "seeds"] == 10 and table.loc["ppo", "random"] == pytest.approx(23.68)
    assert table.loc["ppo", "sb3_false_alarm"] == 0 and table.loc["ppo", "check_seeds"] == 5
    assert table.loc["sac", "threshold"] == -200.0  # not measured this time: its recorded threshold is kept
    seeds = pd.read_csv(tmp_path / "ci_seeds.csv")
    assert len(seeds) == 20 and set(seeds.backend) == {"lit", "sb3"}  # the evidence: every seed's final score
    assert sorted(seeds[seeds.backend == "lit"].final_mean_return) == sorted([480, 485, 490, 495, 500] * 2)
    assert not seeds.batched.any()  # (the fixture's runs record no batched group)
    assert f"thresholds written to {baselines}" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("seeds", "record_seeds", "error"),
    [
        ([0, 1], TEN, "checks 2 seeds; a threshold judges the IQM of at least 5 "),
        (FIVE, FIVE, "records 5 seeds; thresholds are recorded from at least 10 per backend"),
    ],
)
def test_the_recorder_refuses_too_few_seeds_before_running_anything(tmp_path, monkeypatch, seeds, record_seeds, error):
    entries = [{"algo": "td3", "env": "Pendulum"}]
    suite = {"name": "ci", "seeds": seeds, "record_seeds": record_seeds, "false_alarm": 0.01, "entries": entries}
    ran = []
    monkeypatch.setattr(regress, "run_suite", lambda *args, **kwargs: ran.append(args) or [])
    monkeypatch.setattr(regress, "load_suite", lambda name: suite)
    with pytest.raises(SystemExit, match=error):
        regress.main(["--suite", "ci", "--record", "--baselines", str(tmp_path / "ci.csv")])
    assert not ran and not (tmp_path / "ci.csv").exists()


def test_the_recorder_refuses_a_threshold_without_teeth_and_writes_nothing(tmp_path, monkeypatch, capsys):
    # TD3 on Pendulum, as in CI on 2026-12-01 (lit seed 1 at -813.5) but with 4 such seeds in 10: a check of 5 seeds
    # then often holds 3 that barely learned, and a threshold that rarely fails on that noise sits near a random
    # policy's score (-1208): it would only catch an agent that learned nothing.
    td3_lit = [-813.5, -60.0, -55.0, -150.0, -700.0, -65.0, -900.0, -58.0, -140.0, -750.0]
    lit = {"td3:Pendulum": td3_lit, "sac:Pendulum": [-150.0, -140.0, -160.0, -145, -155] * 2}
    sb3 = {
        "td3:Pendulum": [-134.0, -215.0, -120.0, -200.0, -130.0] * 2,
        "sac:Pendulum": [-150.0, -148, -152] * 3 + [-146],
    }
    runs = _recorded_sweep(tmp_path, lit, sb3)
    suite = {
        "name": "ci",
        "seeds": FIVE,
        "record_seeds": TEN,
        "false_alarm": 0.01,
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
            "seeds": [10],
            "random": [23.68],
        }
    )
    assert verdicts.toothless(table, ["lit", "sb3"]) == [
        "dqn:CartPole: threshold 20.0 is reached by a random policy (23.7)"
    ]


# Started by every Python process of the harness that has this file's directory on PYTHONPATH (``site`` imports a
# ``sitecustomize`` module): lit_sb3's TD3 with another default for ``n_steps``, an argument the harness's config
# (conf/algo/td3.yaml) does not set, so the class's default is what trains, as after a changed default in lit_sb3.
CHANGED_DEFAULT = """
import inspect

from lit_sb3.algorithms.td3.td3 import TD3

init = inspect.unwrap(TD3.__init__)
names = init.__code__.co_varnames[: init.__code__.co_argcount]
defaults = list(init.__defaults__)
defaults[names.index("n_steps") - (len(names) - len(defaults))] = 3
init.__defaults__ = tuple(defaults)
"""


@pytest.mark.harness
def test_an_exact_parity_entry_fails_when_a_default_of_lit_sb3_changes(tmp_path, monkeypatch, capsys):
    """The check CI runs (``regress.check``: both backends through the real harness, the parity verdicts, the exit
    code): identical seed for seed with lit_sb3 as it is; then with one of its TD3 defaults changed, the entry is
    DIFFERENT and the suite fails, whatever the seeds' noise."""
    entry = {"algo": "td3", "env": "Pendulum", "budget": 300, "overrides": ["algo.learning_starts=100"]}
    suite = {"name": "ci", "seeds": [0], "eval_episodes": 1, "entries": [], "parity": [entry]}
    baselines = tmp_path / "ci.csv"
    baselines.write_text("algo,env,threshold\n")
    assert regress.check(suite, baselines, tmp_path / "as_is", launcher="basic") == 0
    out = capsys.readouterr().out
    assert "identical" in out and "1 passed, 0 failed" in out
    patch = tmp_path / "changed_default"
    patch.mkdir()
    (patch / "sitecustomize.py").write_text(CHANGED_DEFAULT)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(patch), os.environ.get("PYTHONPATH")) if p))
    assert regress.check(suite, baselines, tmp_path / "changed", launcher="basic") == 1
    out = capsys.readouterr().out
    assert "DIFFERENT" in out and "0 passed, 1 failed" in out
    changed = load_runs(sorted((tmp_path / "changed").glob("regress_ci_parity_*/*/Pendulum/*/seed_0")))
    assert (changed.status == "completed").all() and len(changed) == 2  # both trained: the values differ

"""Results that cannot lie: options that change how much is trained are refused, a completed run trained its whole
budget, the report counts each run once, a non-finite score is one honest status, and the steps actually trained
are the ones labelled and compared."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lit_bench.analysis.markdown import markdown
from lit_bench.analysis.tables import tables
from lit_bench.run import backends, train
from tests.lit_bench.helpers import TINY, compose_run, write_run

pytestmark = pytest.mark.harness

NAN_REWARDS = "env.make={_target_:tests.lit_bench.crash_env.nan_reward_env,_partial_:true}"


@pytest.mark.parametrize(
    "option",
    [
        "+trainer.limit_train_batches=0",
        "+trainer.max_epochs=1",
        "+trainer.fast_dev_run=true",
        "+trainer.max_steps=10",
        "+trainer.min_steps=5",
        "+trainer.overfit_batches=1",
        "+trainer.limit_val_batches=0",
        "+trainer.max_time=1",
    ],
)
def test_a_trainer_option_that_changes_how_much_is_trained_is_refused(
    tmp_path: Path, option: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(train, "make_envs", lambda *a, **k: pytest.fail("refused before any env is built"))
    summary = train.run(compose_run(*TINY, "budget=3000", option, f"out_dir={tmp_path}"))
    name = option.split("=")[0].lstrip("+")
    assert summary["status"] == "failed" and summary["error"].startswith(f"{name}="), summary["error"]
    assert "budget=" in summary["error"] and "\n" not in summary["error"]


def test_completed_requires_the_whole_budget_trained(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = backends.BACKENDS["lit"]

    def short(job: backends.Job) -> object:  # a backend that stops early (any cause) must not complete the run
        job.budget = 256
        return real(job)

    monkeypatch.setitem(backends.BACKENDS, "lit", short)
    summary = train.run(compose_run(*TINY, f"out_dir={tmp_path}"))
    assert summary["status"] == "failed" and summary["timesteps"] == 256, summary
    assert "trained 256 of the budget's 512 env steps" in summary["error"]


def test_the_report_counts_each_run_once(tmp_path: Path) -> None:
    sweep = tmp_path / "S"
    for seed in range(3):
        write_run(sweep, "ppo", "CartPole", seed, "lit", [100.0, 200.0 + seed])
    _, summary, _ = tables([sweep, sweep / ".." / "S", f"{sweep}/ppo"])
    assert summary.seeds.tolist() == [3] and bool(summary.ci_flagged.iloc[0])


DQN_TINY = (
    "algo=dqn",
    "env=CartPole",
    "budget=256",
    "eval.every=128",
    "eval.episodes=2",
    "algo.learning_starts=32",
    "algo.buffer_size=500",
    "algo.train_freq=4",
    "algo.policy_kwargs={net_arch:[16]}",
)


def test_a_non_finite_score_is_one_honest_status(tmp_path: Path, capfd: pytest.CaptureFixture) -> None:
    overrides = [*DQN_TINY, NAN_REWARDS, f"out_dir={tmp_path}", "sweep=nan"]
    first = train.run(compose_run(*overrides))
    assert first["status"] == "failed" and first["error"].startswith("diverged: "), first.get("error")
    assert "nan" in first["error"] and "\n" not in first["error"]
    run_dir = Path(first["run_dir"])
    capfd.readouterr()
    again = train.run(compose_run(*overrides))  # the same outcome, without a warning that the run is damaged
    assert again["status"] == "failed" and again["error"] == first["error"]
    assert "running it again" not in capfd.readouterr().err
    assert json.loads((run_dir / "summary.json").read_text())["status"] == "failed"
    write_run(tmp_path / "nan", "ppo", "CartPole", 0, "lit", [100.0])  # one completed run for the report
    _, table, _ = tables([tmp_path / "nan"])
    dqn = table.set_index("algo").loc["dqn"]
    assert dqn.failed == 1 and dqn.damaged == 0
    assert "damaged" not in capfd.readouterr().err


def test_steps_beyond_the_budget_are_labelled_compared_and_warned(tmp_path: Path, capfd: pytest.CaptureFixture) -> None:
    """PPO with 8 envs x 32 steps: budget=300 trains 512 env steps, as SB3's learn(300) does."""
    summary = train.run(compose_run(*TINY, "budget=300", "eval.every=256", f"out_dir={tmp_path}", "sweep=over"))
    assert summary["status"] == "completed" and summary["timesteps"] == 512 and summary["budget"] == 300
    err = capfd.readouterr().err
    assert "budget=300 is not a multiple of the 256 env steps" in err and "trains 512" in err
    _, table, _ = tables([tmp_path / "over"])
    row = table.iloc[0]
    assert row.budget == 300 and row.trained == 512
    assert "512 env steps trained (budget=300)" in markdown(table)


def test_ars_seeds_that_trained_different_steps_beyond_the_budget_are_labelled_at_their_median(tmp_path: Path) -> None:
    """ARS stops only between updates of whole episodes, so each seed overshoots a small budget by its own amount."""
    for seed, steps in enumerate((284, 1000, 400)):
        write_run(tmp_path, "ars", "CartPole", seed, "lit", [10.0], budget=100, timesteps=steps)
    _, table, _ = tables([tmp_path])
    row = table.iloc[0]
    assert row.budget == 100 and row.trained == 400
    assert "400 env steps trained (budget=100): the last rollout (ARS: the last update's episodes" in markdown(table)

"""Loggers compose (logger=[tensorboard,wandb]), need the loggers extra (one line when missing), and W&B runs carry
the run's identity; the slow test trains both backends briefly and reads the eval returns back from TensorBoard."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from lit_bench.config.checks import ConfigError, check_loggers
from lit_bench.config.hydra_versions import VERSION_BASE
from lit_bench.run import loggers
from lit_bench.store.rundir import RunDir

ROOT = Path(__file__).resolve().parents[2]


def _logger_cfg(*overrides: str):
    with initialize_config_dir(config_dir=str(ROOT / "conf"), **VERSION_BASE):
        cfg = compose("config", overrides=list(overrides))
    # the names the harness derives from Hydra's runtime choices, set by hand outside a Hydra app
    return OmegaConf.merge(
        cfg,
        {"algo_name": "ppo", "algo_dir": "ppo@sb3", "env_name": "CartPole", "backend": "sb3", "sweep": "s1", "seed": 3},
    )


def test_loggers_compose_as_a_list():
    assert loggers.logger_nodes(_logger_cfg()) == {}
    assert list(loggers.logger_nodes(_logger_cfg("logger=tensorboard"))) == ["tensorboard"]
    assert list(loggers.logger_nodes(_logger_cfg("logger=[tensorboard,wandb]"))) == ["tensorboard", "wandb"]


def test_a_missing_logger_package_is_one_line_naming_the_extra(monkeypatch):
    cfg = _logger_cfg("logger=[tensorboard,wandb]")
    find_spec = importlib.util.find_spec
    # tensorboard present (installed or not: the check asks only find_spec), wandb missing
    present = {"tensorboard": importlib.machinery.ModuleSpec("tensorboard", None)}
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "wandb" else present.get(name) or find_spec(name, *a),
    )
    with pytest.raises(ConfigError) as error:
        check_loggers(cfg)
    assert str(error.value) == (
        "logger=wandb: needs the wandb package, which is not installed; install the loggers "
        "extra: pip install -e '.[loggers]'"
    )


@pytest.mark.skipif(
    importlib.util.find_spec("wandb") is None or importlib.util.find_spec("tensorboard") is None,
    reason="needs the loggers extra",
)
def test_lightning_loggers_carry_the_run_identity(tmp_path):
    from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger, WandbLogger
    from stable_baselines3.common.logger import TensorBoardOutputFormat

    cfg = _logger_cfg("logger=[tensorboard,wandb]", f"out_dir={tmp_path}")
    run = RunDir(tmp_path / "s1" / "ppo@sb3" / "CartPole" / "algo.learning_rate=0.001-0123456789" / "seed_3")
    run.root.mkdir(parents=True)
    run.config.write_text("algo:\n  learning_rate: 0.001\nseed: 3\n")
    csv, tb, wandb_logger = loggers.lightning_loggers(cfg, run)
    assert isinstance(csv, CSVLogger) and isinstance(tb, TensorBoardLogger) and isinstance(wandb_logger, WandbLogger)
    assert Path(tb.log_dir) == run.root / "train" / "tb"
    init = wandb_logger._wandb_init
    # named like its directory, variant included: two configs of one sweep never share a W&B run name
    assert init["name"] == "s1/ppo@sb3/CartPole/algo.learning_rate=0.001-0123456789/seed_3" and init["group"] == "s1"
    assert init["tags"] == ["ppo", "CartPole", "sb3", "seed_3"]
    assert init["config"] == {"algo": {"learning_rate": 0.001}, "seed": 3} and wandb_logger._offline
    formats = loggers.sb3_output_formats(_logger_cfg("logger=tensorboard"), run)
    assert len(formats) == 1 and isinstance(formats[0], TensorBoardOutputFormat)  # the same folder as lit's
    formats[0].close()
    loggers.finish_loggers()  # the W&B run lightning_loggers started ends here, not in a later test


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("tensorboard") is None, reason="needs the loggers extra")
def test_both_backends_log_eval_returns_to_tensorboard_at_the_env_step(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    command = [
        sys.executable,
        "run.py",
        "-m",
        "algo=ppo",
        "env=CartPole",
        "seed=0",
        "budget=1000",
        "backend=lit,sb3",
        "logger=[tensorboard]",
        "sweep=tb",
        f"out_dir={tmp_path}",
        "hydra/launcher=basic",
    ]
    subprocess.run(
        command,
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=600,
        env={**__import__("os").environ, "OMP_NUM_THREADS": "1"},
    )
    for algo_dir in ("ppo", "ppo@sb3"):
        [run] = (tmp_path / "tb" / algo_dir / "CartPole").glob("**/seed_0")  # under its variant directory
        logged = {}
        for events in (run / "train" / "tb").glob("events.*"):
            accumulator = EventAccumulator(str(events))
            accumulator.Reload()
            if "eval/mean_reward" in accumulator.Tags()["scalars"]:
                logged.update({e.step: e.value for e in accumulator.Scalars("eval/mean_reward")})
        evals = [line.split(",") for line in (run / "eval.csv").read_text().splitlines()[1:]]
        assert logged == pytest.approx({int(r[0]): float(r[2]) for r in evals}), algo_dir
        assert (run / "evaluations.npz").is_file()

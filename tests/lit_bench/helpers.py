"""Shared helpers of the lit_bench tests: the repository's configs, run.py as a subprocess, run directories on disk,
and small synthetic sweeps in the harness's run-directory layout (hand-written numbers, no training)."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from lit_bench.config.checks import ConfigError, algorithm_class
from lit_bench.config.hydra_versions import VERSION_BASE
from lit_bench.store.format import EVAL_FIELDS

REPO = Path(__file__).resolve().parents[2]
CONF = REPO / "conf"
ALGOS = sorted(p.stem for p in (CONF / "algo").glob("*.yaml"))
ENVS = sorted(p.stem for p in (CONF / "env").glob("*.yaml"))
# the env families with their own extra (Atari, Box2D, ...) are tested in test_envs.py
CORE_ENVS = [e for e in ENVS if "\nextra:" not in (CONF / "env" / f"{e}.yaml").read_text()]
PAIRS = sorted(p.stem for p in (CONF / "algo_env").glob("*.yaml"))
# run.py children find crash_env.py (a Hydra _target_ of the failure tests) next to this file
CHILD_ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HYDRA_FULL_ERROR": "0", "PYTHONPATH": str(Path(__file__).parent)}


def compose_run(*overrides: str) -> DictConfig:
    """The config run.py would get (with ${hydra:...} resolvable, as in a real run)."""
    with initialize_config_dir(config_dir=str(CONF), **VERSION_BASE):
        cfg = compose("config", overrides=list(overrides), return_hydra_config=True)
    HydraConfig.instance().set_config(cfg)
    return cfg


def lit_class_or_skip(cfg: DictConfig) -> type:
    try:
        return algorithm_class(str(cfg.algo._target_), "lit")
    except ConfigError:
        pytest.skip(f"{cfg.algo._target_} is not in lit_sb3 yet")


def harness_kwargs(cfg: DictConfig, cls: type, env: Any, backend: str) -> dict[str, Any]:
    """The constructor arguments the harness gives ``cls`` for ``cfg`` on ``env`` (schedules, classes, noise)."""
    from lit_bench.run.backends import Job, algorithm_kwargs

    job = Job(cfg, cls, None, env, None, budget=1, seed=0, checkpoint_every=1, resume=False)  # type: ignore[arg-type]
    return algorithm_kwargs(job, backend)


RUN_PY_LIMIT_S = 300.0  # a run.py call of a test on an idle machine: seconds before it counts as hung


def patience(seconds: float) -> float:
    """A limit that catches a hang, never a busy machine: ``seconds`` (enough on an idle one) times the load per core
    when above 1 (four jobs on two cores: 2x), times ``LIT_BENCH_TEST_PATIENCE`` (default 1) for a slow machine."""
    load = os.getloadavg()[0] / (os.cpu_count() or 1)
    return seconds * max(1.0, load) * float(os.environ.get("LIT_BENCH_TEST_PATIENCE", "1"))


def run_py(
    *args: str, env: dict[str, str] | None = None, timeout: float = RUN_PY_LIMIT_S
) -> subprocess.CompletedProcess:
    """``python run.py *args`` from the repository root; ``timeout``: seconds on an idle machine (``patience``)."""
    return subprocess.run(
        [sys.executable, "run.py", *args],
        cwd=REPO,
        env=env or CHILD_ENV,
        capture_output=True,
        text=True,
        timeout=patience(timeout),
    )


def kill_when_checkpointed(args: list[str], sweep_dir: Path, at_least: int, seed: int = 0) -> Path:
    """Start run.py, SIGKILL its process group once the run of ``seed`` under ``sweep_dir`` has a checkpoint of at
    least ``at_least`` steps; returns that run's directory."""
    process = subprocess.Popen(
        [sys.executable, "run.py", *args],
        cwd=REPO,
        env=CHILD_ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    run_dir = None
    try:
        deadline = time.monotonic() + patience(120)
        while time.monotonic() < deadline:
            run_dir = find_run(sweep_dir, seed)
            state = run_dir / "checkpoints" / "state.json" if run_dir else None
            if state and state.is_file() and json.loads(state.read_text())["timesteps"] >= at_least:
                break
            assert process.poll() is None, "the run ended before it could be killed"
            time.sleep(0.02)
        os.killpg(process.pid, signal.SIGKILL)
    finally:
        process.wait()
    assert run_dir is not None, "the run never wrote its directory"
    return run_dir


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as file:
        return list(csv.DictReader(file))


def find_run(parent: Path, seed: int) -> Path | None:
    """The run directory of ``seed`` under ``<sweep>/<algo>/<env>`` (its config decides the level in between)."""
    found = sorted(parent.glob(f"**/seed_{seed}"))
    assert len(found) <= 1, found
    return found[0] if found else None


TINY = (
    "env=CartPole",
    "env.n_envs=8",
    "algo.n_steps=32",
    "budget=512",
    "eval.every=256",
    "eval.episodes=2",
    "log_interval=1",
)


def write_run(
    root: Path,
    algo: str,
    env: str,
    seed: int,
    backend: str,
    returns: list[float],
    *,
    status: str | None = "completed",
    env_id: str = "CartPole-v1",
    every: int = 1000,
    fps: float = 1000.0,
    subdir: str = "",
    **identity: Any,
) -> Path:
    """One run in ``root/<algo>[@sb3]/<env>[/<subdir>]/seed_<n>``; ``identity`` adds summary keys (sweep, config_id,
    variant, ...)."""
    run_dir = root / (f"{algo}@sb3" if backend == "sb3" else algo) / env / subdir / f"seed_{seed}"
    run_dir.mkdir(parents=True)
    lines = [",".join(EVAL_FIELDS)]
    for i, value in enumerate(returns, start=1):
        row = {
            "timesteps": i * every,
            "wall_time_s": i * every / fps,
            "mean_return": value,
            "std_return": 1.0,
            "median_return": value,
            "mean_ep_length": value,
            "success_rate": "",
            "fps": fps,
        }
        lines.append(",".join(str(row[f]) for f in EVAL_FIELDS))
    (run_dir / "eval.csv").write_text("\n".join(lines) + "\n")
    if status is not None:
        summary = {
            "algo": algo,
            "env": env,
            "env_id": env_id,
            "seed": seed,
            "backend": backend,
            "status": status,
            "final_mean_return": returns[-1] if returns else None,
            "fps": fps,
            "budget": len(returns) * every,
            "timesteps": len(returns) * every,
            "threshold": 475.0,
            "versions": {"lit_sb3": "0.1.0"},
            **identity,
        }
        if status == "failed":
            summary["error"] = "RuntimeError: boom"
        (run_dir / "summary.json").write_text(json.dumps(summary))
    return run_dir


def make_sweep(root: Path, *, sb3: bool = True) -> Path:
    """ppo on both backends x 3 seeds in one sweep, a2c with one failed and one truncated run (no summary)."""
    sweep = root / "fixture_sweep"
    for seed, offset in enumerate((0.0, 20.0, 40.0)):
        write_run(
            sweep,
            "ppo",
            "CartPole",
            seed,
            "lit",
            [100 + offset, 300 + offset, 480 + offset / 2],
            fps=1000.0 + 100 * seed,
        )
        if sb3:
            write_run(sweep, "ppo", "CartPole", seed, "sb3", [90 + offset, 280 + offset, 470.0], fps=1250.0)
    write_run(sweep, "a2c", "CartPole", 0, "lit", [], status="failed")
    write_run(sweep, "a2c", "CartPole", 1, "lit", [50.0, 120.0], status=None)  # killed before any summary
    return root


def write_config_and_metrics(run_dir: Path, config: dict[str, Any], rows: int = 5) -> None:
    """A run's ``config.yaml`` (``config``, as a resolved config) and a ``train/metrics.csv`` of ``rows`` rows (the
    schema both backends write: Lightning CSVLogger's, env steps in ``step``)."""
    import yaml

    (run_dir / "config.yaml").write_text(yaml.safe_dump(config))
    (run_dir / "train").mkdir(exist_ok=True)
    lines = ["rollout/ep_rew_mean,step,train/loss,train/value_loss"]
    lines += [f"{20.0 + 10 * i},{256 * (i + 1)},{1.0 / (i + 1)},{2.0 / (i + 1)}" for i in range(rows)]
    (run_dir / "train" / "metrics.csv").write_text("\n".join(lines) + "\n")


def make_mixed_sweeps(root: Path) -> Path:
    """``make_sweep``'s sweep, a learning-rate sweep on CartPole and Acrobot (configs and training metrics) with
    unequal seeds per env: the mix a notebook meets."""
    make_sweep(root)
    for env, env_id, base in (("CartPole", "CartPole-v1", 100.0), ("Acrobot", "Acrobot-v1", -300.0)):
        for k, lr in enumerate((0.001, 0.0003)):
            for seed in range(3 if env == "CartPole" else 2):
                run = write_run(
                    root / "fixture_lr",
                    "ppo",
                    env,
                    seed,
                    "lit",
                    [base, base + 50 * (k + 1) + seed],
                    env_id=env_id,
                    subdir=f"lr{k}",
                    sweep="fixture_lr",
                    config_id=f"{env}{k}",
                    variant=f"algo.learning_rate={lr}",
                )
                write_config_and_metrics(
                    run,
                    {
                        "seed": seed,
                        "sweep": "fixture_lr",
                        "env": {"id": env_id},
                        "algo": {"learning_rate": lr, "gamma": 0.99},
                    },
                )
    return root


def make_plain_sweep(root: Path, *, sb3: bool) -> Path:
    """``run.py -m algo=ppo,a2c env=CartPole,Acrobot seed=0,1,2`` at a small budget, as written: PPO's runs on
    CartPole have the usual training metrics, on Acrobot only ``time/*`` ones (no episode ended in its one rollout,
    no loss was dumped), A2C's none (its ``log_interval`` of 100 rollouts never came); with ``sb3`` each run on both
    backends."""
    sweep = root / "plain"
    for algo in ("ppo", "a2c"):
        for env, env_id, base in (("CartPole", "CartPole-v1", 20.0), ("Acrobot", "Acrobot-v1", -500.0)):
            for seed in range(3):
                for backend in ("lit", "sb3") if sb3 else ("lit",):
                    run = write_run(
                        sweep, algo, env, seed, backend, [base, base + 10 + seed], env_id=env_id, sweep="plain"
                    )
                    if algo == "ppo":
                        write_config_and_metrics(run, {"seed": seed, "sweep": "plain", "env": {"id": env_id}})
                    if algo == "ppo" and env == "Acrobot":
                        (run / "train" / "metrics.csv").write_text("step,time/fps\n4096,380.0\n")
    return sweep

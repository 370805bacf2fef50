"""Synthetic run directories in the harness's on-disk layout, for timing the analysis at scale (no training).

    python benchmarks/synthetic_runs.py /tmp/lit_bench_scale/1000 --runs 1000 [--configs 60] [--evals 100]

Each run is ``<root>/<sweep>/<algo>[@sb3]/<env>/[<variant>-<config_id>/]seed_<n>`` (``lit_bench.config.identity``)
with the files ``lit_bench.run.train`` writes and the analysis reads: ``summary.json`` (the same keys), ``eval.csv``
(``format.EVAL_FIELDS``, one row per evaluation), ``evaluations.npz`` (SB3's ``EvalCallback`` arrays), ``config.yaml``
``overrides.yaml`` and ``train/metrics.csv`` (the SB3 logger's keys of the algorithm, one row per dump: the report's
training figures read it), with an empty ``checkpoints/`` (its files are left out: the report does not read them). The
runs are
``--configs`` configs (algorithms x envs x both backends, then variants, over ``--sweeps`` sweeps) of equally many
seeds: the report's work grows with runs (loading, statistics) and with configs (one curve and bar each in the
figures), so vary both. About 1% of the runs
failed, 1% were killed mid-run (``running``) and 0.2% have a damaged ``eval.csv``, as in real sweeps. Everything is
drawn from a fixed seed, so the same arguments always write the same files. Keep the output out of the repository.
``copies`` writes copies of one real run directory instead (every file a run has).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lit_bench.store.format import EVAL_FIELDS

EPISODES = 5
BUDGET = 100_000
# (algo, env name, env id, threshold, score at the start, score learned) of each config group
PAIRS = [
    ("ppo", "CartPole", "CartPole-v1", 475.0, 20.0, 500.0),
    ("a2c", "CartPole", "CartPole-v1", 475.0, 20.0, 480.0),
    ("dqn", "CartPole", "CartPole-v1", 475.0, 10.0, 450.0),
    ("ppo", "Acrobot", "Acrobot-v1", -100.0, -500.0, -80.0),
    ("a2c", "Acrobot", "Acrobot-v1", -100.0, -500.0, -90.0),
    ("ppo", "LunarLander", "LunarLander-v3", 200.0, -300.0, 220.0),
    ("dqn", "LunarLander", "LunarLander-v3", 200.0, -300.0, 150.0),
    ("sac", "Pendulum", "Pendulum-v1", None, -1400.0, -160.0),
    ("td3", "Pendulum", "Pendulum-v1", None, -1400.0, -170.0),
    ("ppo", "Pendulum", "Pendulum-v1", None, -1400.0, -400.0),
]
BACKENDS = ("lit", "sb3")
TIME_KEYS = ["time/fps", "time/time_elapsed", "time/total_timesteps"]
TRAIN_KEYS = {  # the SB3 logger's train/ keys of each algorithm (besides train/learning_rate, train/n_updates)
    "ppo": ["approx_kl", "clip_fraction", "clip_range", "entropy_loss", "explained_variance", "loss",
            "policy_gradient_loss", "value_loss"],
    "a2c": ["entropy_loss", "explained_variance", "policy_loss", "value_loss"],
    "dqn": ["loss"],
    "sac": ["actor_loss", "critic_loss", "ent_coef", "ent_coef_loss"],
    "td3": ["actor_loss", "critic_loss"],
}  # fmt: skip
DUMPS = 100  # rows of a run's train/metrics.csv over its budget
VERSIONS = {
    "lit_sb3": "0.1.0",
    "stable-baselines3": "2.9.2",
    "sb3-contrib": "2.9.2",
    "torch": "2.13.0+cpu",
    "lightning": "2.6.6",
    "gymnasium": "1.4.0",
    "mujoco": "4.0.0",
    "hydra-core": "1.3.8",
}


def _config_id(*parts: Any) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:10]


def group(index: int, n_sweeps: int) -> dict[str, Any]:
    """The ``index``-th config: algo / env pairs and backends cycle fastest, then variants, spread over sweeps."""
    algo, env, env_id, threshold, start, learned = PAIRS[index // len(BACKENDS) % len(PAIRS)]
    backend = BACKENDS[index % len(BACKENDS)]
    variant_index = index // (len(PAIRS) * len(BACKENDS))
    sweep = f"synthetic_{variant_index % n_sweeps}"
    lr = variant_index // n_sweeps  # 0: the composed defaults of that sweep, else a learning-rate variant
    variant = f"algo.learning_rate={3e-4 * (1 + lr):.4g}" if lr else ""
    cid = _config_id(algo, env, backend, variant)
    return {
        "algo": algo,
        "env": env,
        "env_id": env_id,
        "threshold": threshold,
        "start": start,
        "learned": learned,
        "backend": backend,
        "sweep": sweep,
        "variant": variant,
        "config_id": cid,
        "subdir": Path(sweep)
        / (f"{algo}@sb3" if backend == "sb3" else algo)
        / env
        / (f"{variant}-{cid}" if variant else ""),
    }


def _curve(rng: np.random.Generator, g: dict[str, Any], n_evals: int) -> tuple[np.ndarray, np.ndarray]:
    """Evaluation episodes (n_evals, EPISODES): a noisy sigmoid from the start score to a per-seed learned score."""
    progress = 1.0 / (1.0 + np.exp(-(np.arange(1, n_evals + 1) / n_evals - rng.uniform(0.2, 0.6)) * 10.0))
    top = g["learned"] * rng.uniform(0.8, 1.05) if g["learned"] > 0 else g["learned"] * rng.uniform(0.95, 1.3)
    mean = g["start"] + (top - g["start"]) * progress
    scale = 0.05 * abs(g["learned"] - g["start"])
    returns = np.round(mean[:, None] + rng.normal(0.0, scale, size=(n_evals, EPISODES)), 1)
    lengths = np.clip(np.abs(returns).astype(np.int64), 1, 1000)
    return returns, lengths


def write_run(root: Path, g: dict[str, Any], seed: int, n_evals: int, fate: str, rng: np.random.Generator) -> None:
    """One run: ``fate`` is completed, failed (after a third of its evaluations), running (killed) or damaged."""
    run_dir = root / g["subdir"] / f"seed_{seed}"
    run_dir.mkdir(parents=True, exist_ok=True)
    every = BUDGET // n_evals
    returns, lengths = _curve(rng, g, n_evals)
    done = {"completed": n_evals, "damaged": n_evals, "failed": n_evals // 3, "running": n_evals // 2}[fate]
    steps = np.arange(1, done + 1) * every
    fps = round(float(rng.uniform(300.0, 3000.0)), 1)
    columns = zip(
        steps.tolist(),
        (steps / fps).round(3).tolist(),
        returns.mean(1).round(3).tolist(),
        returns.std(1).round(3).tolist(),
        np.median(returns, 1).tolist(),
        lengths.mean(1).tolist(),
    )
    rows = [f"{t},{w},{m},{s},{med},{length},,{fps}" for t, w, m, s, med, length in list(columns)[:done]]
    text = ",".join(EVAL_FIELDS) + "\n" + "".join(r + "\n" for r in rows)
    if fate == "damaged":
        text = text[:-15]  # the last row cut short, as by a crash during a non-atomic copy
    (run_dir / "eval.csv").write_text(text)
    _write_metrics(run_dir, g, returns.mean(1)[:done], done * every, fps, rng)
    np.savez(run_dir / "evaluations.npz", timesteps=steps, results=returns[:done], ep_lengths=lengths[:done])
    overrides = [
        f"algo={g['algo']}",
        f"env={g['env']}",
        f"seed={seed}",
        f"backend={g['backend']}",
        f"sweep={g['sweep']}",
        *([g["variant"]] if g["variant"] else []),
    ]
    (run_dir / "overrides.yaml").write_text("".join(f"- {o}\n" for o in overrides))
    (run_dir / "config.yaml").write_text(
        f"seed: {seed}\nbackend: {g['backend']}\nbudget: {BUDGET}\nsweep: {g['sweep']}\nalgo_name: {g['algo']}\n"
        f"env_name: {g['env']}\nenv:\n  id: {g['env_id']}\n  threshold: {g['threshold']}\n"
    )
    last = rows[-1].split(",") if rows else None
    summary: dict[str, Any] = {
        "algo": g["algo"],
        "env": g["env"],
        "env_id": g["env_id"],
        "seed": seed,
        "backend": g["backend"],
        "budget": BUDGET,
        "run_dir": str(run_dir),
        "sweep": g["sweep"],
        "variant": g["variant"],
        "config_id": g["config_id"],
        "config_hash": _config_id(g["config_id"], seed)[:16],
        "overrides": overrides[5:],
        "invocation": None,
        "status": "completed" if fate == "damaged" else fate,
        "resumed_from": None,
        "started_at": "2026-11-30T12:00:00+0000",
        "host": "synthetic",
        "python": "3.11.7",
        "versions": VERSIONS,
        "git": {"commit": None, "dirty": None},
    }
    if fate in ("completed", "damaged") and last:
        summary.update(
            timesteps=BUDGET,
            final_mean_return=float(last[2]),
            final_std_return=float(last[3]),
            final_success_rate=None,
            threshold=g["threshold"],
            steps_to_threshold=None,
            wall_time_s=float(last[1]),
            fps=fps,
            startup_s=0.3,
            objective=float(last[2]),
        )
    elif fate == "failed":
        summary.update(error="RuntimeError: synthetic failure", traceback=None)
    if fate != "running":
        summary["finished_at"] = "2026-11-30T12:10:00+0000"
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")


def _write_metrics(
    run_dir: Path, g: dict[str, Any], returns: np.ndarray, trained: int, fps: float, rng: np.random.Generator
) -> None:
    """``train/metrics.csv``: a row per dump up to ``trained`` env steps, the rollout return following the evaluations,
    losses decaying with noise."""
    keys = ["rollout/ep_len_mean", "rollout/ep_rew_mean", *TIME_KEYS, "train/learning_rate", "train/n_updates"]
    keys += [f"train/{k}" for k in TRAIN_KEYS[g["algo"]]]
    steps = np.arange(1, DUMPS * trained // BUDGET + 1) * (BUDGET // DUMPS)
    at = np.minimum(np.arange(steps.size) * max(returns.size, 1) // max(steps.size, 1), max(returns.size - 1, 0))
    reward = returns[at] if returns.size else np.zeros(steps.size)
    decay = np.exp(-steps / BUDGET * rng.uniform(1.0, 3.0))
    columns = {
        "rollout/ep_len_mean": np.clip(np.abs(reward), 1, 1000),
        "rollout/ep_rew_mean": reward + rng.normal(0.0, 1.0, steps.size),
        "time/fps": np.full(steps.size, fps),
        "time/time_elapsed": steps / fps,
        "time/total_timesteps": steps,
        "train/learning_rate": np.full(steps.size, 3e-4),
        "train/n_updates": np.arange(1, steps.size + 1) * 10,
    }
    for key in keys[len(columns) :]:
        columns[key] = decay * rng.uniform(0.1, 10.0) + rng.normal(0.0, 0.01, steps.size)
    (run_dir / "train").mkdir()
    (run_dir / "checkpoints").mkdir()
    lines = [",".join([*keys, "step"])]
    lines += [",".join(f"{columns[k][i]:.6g}" for k in keys) + f",{steps[i]}" for i in range(steps.size)]
    (run_dir / "train" / "metrics.csv").write_text("\n".join(lines) + "\n")


def generate(
    root: Path, n_runs: int, *, n_configs: int = 60, n_evals: int = 100, n_sweeps: int = 2, seed: int = 0
) -> list[Path]:
    """Write ``n_runs`` runs of ``n_configs`` configs under ``root``; returns the sweep directories."""
    rng = np.random.default_rng(seed)
    fates = rng.choice(["completed", "failed", "running", "damaged"], size=n_runs, p=[0.978, 0.01, 0.01, 0.002])
    seeds = math.ceil(n_runs / min(n_configs, n_runs))
    sweeps = set()
    for i in range(n_runs):
        g = group(i // seeds, n_sweeps)
        write_run(root, g, i % seeds, n_evals, str(fates[i]), rng)
        sweeps.add(root / g["sweep"])
    return sorted(sweeps)


def copies(source: Path, root: Path, n_runs: int, *, n_configs: int = 20) -> list[Path]:
    """``n_runs`` copies of one real run directory ``source`` (every file it has: checkpoints, monitor files, ...) as
    ``n_configs`` configs of equally many seeds in one sweep under ``root``: each copy's ``summary.json`` names its
    own seed, config and directory, everything else is the source's bytes (the shape of a real sweep on disk, which
    the synthetic runs only imitate). Returns the sweep directory."""
    summary = json.loads((source / "summary.json").read_text())
    seeds = math.ceil(n_runs / min(n_configs, n_runs))
    sweep = root / "copies"
    for i in range(n_runs):
        config, seed = divmod(i, seeds)
        config_id = _config_id("copy", config)
        run_dir = sweep / str(summary["algo"]) / str(summary["env"]) / f"c{config}-{config_id}" / f"seed_{seed}"
        shutil.copytree(source, run_dir, symlinks=False, ignore=shutil.ignore_patterns(".lock"))
        own = {
            **summary,
            "seed": seed,
            "sweep": "copies",
            "variant": f"c{config}",
            "config_id": config_id,
            "config_hash": _config_id("copy", config, seed),
            "run_dir": str(run_dir),
        }
        (run_dir / "summary.json").write_text(json.dumps(own))
    return sweep


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path, help="an empty or missing directory (outside the repository)")
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--configs", type=int, default=60, help="configs (the runs are their seeds)")
    parser.add_argument("--evals", type=int, default=100, help="evaluations per run")
    parser.add_argument("--sweeps", type=int, default=2)
    args = parser.parse_args()
    if args.root.exists() and any(args.root.iterdir()):
        raise SystemExit(f"synthetic_runs: {args.root} is not empty; choose an empty or missing directory")
    start = time.perf_counter()
    generate(args.root, args.runs, n_configs=args.configs, n_evals=args.evals, n_sweeps=args.sweeps)
    seeds = math.ceil(args.runs / min(args.configs, args.runs))
    print(
        f"{args.runs} runs ({math.ceil(args.runs / seeds)} configs x up to {seeds} seeds, {args.evals} evaluations "
        f"each) written to {args.root} in {time.perf_counter() - start:.1f} s"
    )


if __name__ == "__main__":
    main()

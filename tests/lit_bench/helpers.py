"""Small synthetic sweeps on disk in the harness's run-directory layout (hand-written numbers, no training)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lit_bench.rundir import EVAL_FIELDS


def write_run(root: Path, algo: str, env: str, seed: int, backend: str, returns: list[float], *,
              status: str | None = "completed", env_id: str = "CartPole-v1", every: int = 1000,
              fps: float = 1000.0, subdir: str = "", **identity: Any) -> Path:
    """One run in ``root/<algo>[@sb3]/<env>[/<subdir>]/seed_<n>``; ``identity`` adds summary keys (sweep, config_id,
    variant, ...)."""
    run_dir = root / (f"{algo}@sb3" if backend == "sb3" else algo) / env / subdir / f"seed_{seed}"
    run_dir.mkdir(parents=True)
    lines = [",".join(EVAL_FIELDS)]
    for i, value in enumerate(returns, start=1):
        row = {"timesteps": i * every, "wall_time_s": i * every / fps, "mean_return": value, "std_return": 1.0,
               "median_return": value, "mean_ep_length": value, "success_rate": "", "fps": fps}
        lines.append(",".join(str(row[f]) for f in EVAL_FIELDS))
    (run_dir / "eval.csv").write_text("\n".join(lines) + "\n")
    if status is not None:
        summary = {"algo": algo, "env": env, "env_id": env_id, "seed": seed, "backend": backend, "status": status,
                   "final_mean_return": returns[-1] if returns else None, "fps": fps, "budget": len(returns) * every,
                   "timesteps": len(returns) * every, "threshold": 475.0, "versions": {"lit_sb3": "0.1.0"},
                   **identity}
        if status == "failed":
            summary["error"] = "RuntimeError: boom"
        (run_dir / "summary.json").write_text(json.dumps(summary))
    return run_dir


def make_sweep(root: Path, *, sb3: bool = True) -> Path:
    """ppo on both backends x 3 seeds in one sweep, a2c with one failed and one truncated run (no summary)."""
    sweep = root / "fixture_sweep"
    for seed, offset in enumerate((0.0, 20.0, 40.0)):
        write_run(sweep, "ppo", "CartPole", seed, "lit", [100 + offset, 300 + offset, 480 + offset / 2],
                  fps=1000.0 + 100 * seed)
        if sb3:
            write_run(sweep, "ppo", "CartPole", seed, "sb3", [90 + offset, 280 + offset, 470.0], fps=1250.0)
    write_run(sweep, "a2c", "CartPole", 0, "lit", [], status="failed")
    write_run(sweep, "a2c", "CartPole", 1, "lit", [50.0, 120.0], status=None)  # killed before any summary
    return root

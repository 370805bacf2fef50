"""Measure the return of a uniformly random policy on the project's envs, for score normalization.

    python benchmarks/random_scores.py [--groups classic box2d mujoco atari ...] [--episodes 100] [--seed 0]
        [--out results/reference/random_scores.csv]

Each env of ``conf/env/`` (its group: its ``extra:``, else ``mujoco`` for MuJoCo ids, else ``classic``) is made with
``gymnasium.make(id, **kwargs)`` as the harness makes it (its ``package:`` imported first; no wrappers, its own time
limit) and played for
``--episodes`` episodes with actions drawn uniformly from its action space (seeded: the same file every time). Envs
whose package is not installed are skipped and named on stderr. The rows are merged into ``--out`` (rows of envs not
measured this time are kept), each with the command, the number of episodes and the package versions.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from importlib import metadata
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
FIELDS = [
    "env",
    "env_id",
    "group",
    "episodes",
    "mean_return",
    "std_return",
    "min_return",
    "max_return",
    "seed",
    "command",
    "versions",
]
MUJOCO = (
    "Ant",
    "HalfCheetah",
    "Hopper",
    "Humanoid",
    "InvertedDoublePendulum",
    "InvertedPendulum",
    "Reacher",
    "Swimmer",
    "Walker2d",
)


def env_groups() -> dict[str, tuple[str, str, dict, list[str]]]:
    """env name -> (group, env id, make kwargs, packages to import first) of every ``conf/env`` file with a plain
    ``id``."""
    found = {}
    for path in sorted((ROOT / "conf" / "env").glob("*.yaml")):
        cfg = yaml.safe_load(path.read_text())
        if not cfg.get("id") or cfg.get("make"):
            continue
        group = cfg.get("extra") or ("mujoco" if cfg["id"].split("-")[0] in MUJOCO else "classic")
        packages = cfg.get("package") or []
        found[path.stem] = (
            str(group),
            str(cfg["id"]),
            dict(cfg.get("kwargs") or {}),
            [packages] if isinstance(packages, str) else list(packages),
        )
    return found


def random_returns(env_id: str, kwargs: dict, episodes: int, seed: int, packages: list[str]) -> np.ndarray:
    import importlib

    import gymnasium as gym

    for package in packages:  # (as the harness does: the package registers the id)
        importlib.import_module(package)
    if "NoFrameskip" in env_id:
        import ale_py

        gym.register_envs(ale_py)
    env = gym.make(env_id, **kwargs)
    env.action_space.seed(seed)
    returns = []
    for episode in range(episodes):
        env.reset(seed=seed + episode)
        total, done = 0.0, False
        while not done:
            _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    env.close()
    return np.array(returns)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", nargs="+", default=["classic", "box2d", "mujoco"])
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "reference" / "random_scores.csv")
    args = parser.parse_args()
    rows = {}
    if args.out.is_file():
        with args.out.open(newline="") as file:
            rows = {r["env"]: r for r in csv.DictReader(file)}
    versions = " ".join(
        f"{p}=={metadata.version(p)}" for p in ("gymnasium", "mujoco", "box2d", "ale-py") if _installed(p)
    )
    command = " ".join(["python", "benchmarks/random_scores.py", *sys.argv[1:]])
    for env, (group, env_id, kwargs, packages) in env_groups().items():
        if group not in args.groups:
            continue
        start = time.perf_counter()
        try:
            returns = random_returns(env_id, kwargs, args.episodes, args.seed, packages)
        except Exception as error:  # a missing package or env: named, the others still measured
            print(f"skipped {env} ({env_id}): {type(error).__name__}: {error}", file=sys.stderr)
            continue
        rows[env] = {
            "env": env,
            "env_id": env_id,
            "group": group,
            "episodes": args.episodes,
            "mean_return": f"{returns.mean():.4g}",
            "std_return": f"{returns.std():.4g}",
            "min_return": f"{returns.min():.4g}",
            "max_return": f"{returns.max():.4g}",
            "seed": args.seed,
            "command": command,
            "versions": versions,
        }
        print(f"{env}: {returns.mean():.4g} +/- {returns.std():.3g} ({time.perf_counter() - start:.0f} s)", flush=True)
        _write(args.out, rows)  # after each env: a long measurement keeps what it has


def _write(path: Path, rows: dict[str, dict]) -> None:
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", newline="") as file:
        writer = csv.DictWriter(file, FIELDS)
        writer.writeheader()
        writer.writerows(rows[k] for k in sorted(rows))
    tmp.replace(path)


def _installed(package: str) -> bool:
    try:
        metadata.version(package)
    except metadata.PackageNotFoundError:
        return False
    return True


if __name__ == "__main__":
    main()

"""Measure the return of a uniformly random policy on the project's envs, for score normalization.

    python benchmarks/random_scores.py [--groups classic box2d mujoco atari ...] [--envs NAME ...] [--episodes 100]
        [--seed 0] [--out results/reference/random_scores.csv]

Each env of ``conf/env/`` (its group: its ``extra:``, else ``mujoco`` for MuJoCo ids, else ``classic``) is made as
the harness makes it (``gymnasium.make(id, **kwargs)`` after its ``package:`` is imported, or its ``make:`` factory;
no wrappers, its own time limit) and played for ``--episodes`` episodes with actions drawn uniformly from its action
space, or, for a masked env (``action_masks()``), from the actions valid at each step, as an untrained masked policy
draws them (seeded: the same file every time). Envs whose package is not installed are skipped and named on stderr.
``--envs`` measures only the envs it names. The rows are merged into ``--out`` (rows of envs not measured this time
are kept), each with the command, the number of episodes and the package versions.
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


def env_groups() -> dict[str, tuple[str, str, dict, list[str], bool]]:
    """env name -> (group, env id or the ``make:`` factory's target, its kwargs, packages to import first, whether
    it is a factory) of every ``conf/env`` file."""
    found = {}
    for path in sorted((ROOT / "conf" / "env").glob("*.yaml")):
        cfg = yaml.safe_load(path.read_text())
        make = cfg.get("make") or {}
        if not cfg.get("id") and not make.get("_target_"):
            continue
        env_id = str(cfg.get("id") or make["_target_"])
        group = cfg.get("extra") or ("mujoco" if env_id.split("-")[0] in MUJOCO else "classic")
        packages = cfg.get("package") or []
        kwargs = {k: v for k, v in make.items() if not k.startswith("_")} if make else cfg.get("kwargs") or {}
        packages = [packages] if isinstance(packages, str) else list(packages)
        found[path.stem] = (str(group), env_id, dict(kwargs), packages, bool(make))
    return found


def random_returns(
    env_id: str, kwargs: dict, episodes: int, seed: int, packages: list[str], factory: bool = False
) -> np.ndarray:
    import importlib

    import gymnasium as gym

    for package in packages:  # (as the harness does: the package registers the id)
        importlib.import_module(package)
    if "NoFrameskip" in env_id:
        import ale_py

        gym.register_envs(ale_py)
    if factory:  # the class a conf/env file's make: node names (this checkout's own config)
        module, name = env_id.rsplit(".", 1)
        env = getattr(importlib.import_module(module), name)(**kwargs)
    else:
        env = gym.make(env_id, **kwargs)
    env.action_space.seed(seed)
    np.random.seed(seed)  # (sb3-contrib's masked envs draw their invalid actions from numpy's global generator)
    # the policy's own stream: default_rng(seed) would repeat the action space's (gymnasium seeds it the same way),
    # and a masked identity env draws its states from its action space
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
    masks = getattr(env.unwrapped, "action_masks", None)
    returns = []
    for episode in range(episodes):
        env.reset(seed=seed + episode)
        total, done = 0.0, False
        while not done:
            action = rng.choice(np.flatnonzero(masks())) if masks else env.action_space.sample()
            _, reward, terminated, truncated, _ = env.step(action)
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    env.close()
    return np.array(returns)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", nargs="+", default=["classic", "box2d", "mujoco"])
    parser.add_argument("--envs", nargs="+", default=None, help="only these conf/env names (of those groups)")
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "reference" / "random_scores.csv")
    args = parser.parse_args()
    unknown = sorted(set(args.envs or []) - set(env_groups()))
    if unknown:
        parser.error(f"--envs: unknown {', '.join(unknown)}; valid: {', '.join(env_groups())}")
    rows = {}
    if args.out.is_file():
        with args.out.open(newline="") as file:
            rows = {r["env"]: r for r in csv.DictReader(file)}
    versions = " ".join(
        f"{p}=={metadata.version(p)}" for p in ("gymnasium", "mujoco", "box2d", "ale-py") if _installed(p)
    )
    command = " ".join(["python", "benchmarks/random_scores.py", *sys.argv[1:]])
    for env, (group, env_id, kwargs, packages, factory) in env_groups().items():
        if group not in args.groups or (args.envs is not None and env not in args.envs):
            continue
        start = time.perf_counter()
        try:
            returns = random_returns(env_id, kwargs, args.episodes, args.seed, packages, factory)
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

"""A sweep's seeds trained as seed groups against one process per seed (SB3's algorithm and lit_sb3's).

    OMP_NUM_THREADS=1 python benchmarks/seeds.py --algo ppo a2c --seeds 10 --steps 20000 --jobs 2 --repeats 2

Every run is a fresh ``python -c`` process timed over its whole life, imports included, as a sweep launches them:

- ``sb3`` / ``lit``: one process per seed, ``--jobs`` of them at a time (today's default sweep: joblib, one
  process per seed, as many at once as cores);
- ``grouped``: the seeds split into ``--jobs`` seed groups (``lit_sb3.SeedGroup``), one process each, at once.

Modes are interleaved (each repeat runs them all, the order rotating). For each mode it prints the sweep's wall
time, the CPU time of its processes (``RUSAGE_CHILDREN``), and the ratios of the other modes' wall and CPU time to
the grouped sweep's; the load average before and after. To add a configuration, add a row to ``CONFIGS``.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Config:
    """One benchmarked configuration: the class name (in SB3 and lit_sb3), env id, envs per seed, arguments."""

    algo: str
    env: str
    n_envs: int
    kwargs: dict[str, Any] = field(default_factory=dict)
    #: arguments that are objects, as Python expressions (TD3's action noise), evaluated after ``_NOISE_IMPORTS``
    exprs: dict[str, str] = field(default_factory=dict)
    sb3_package: str = "stable_baselines3"  # where SB3's class is (QR-DQN: sb3_contrib)

    def arguments(self) -> str:
        """The algorithm's keyword arguments as source text."""
        return ", ".join([f"**{self.kwargs!r}", *(f"{k}={v}" for k, v in self.exprs.items())])

    def imports(self) -> str:
        return _NOISE_IMPORTS if self.exprs else ""


_NOISE_IMPORTS = "import numpy as np\nfrom stable_baselines3.common.noise import NormalActionNoise\n"
_TD3_NOISE = {"action_noise": "NormalActionNoise(np.zeros(1), 0.1 * np.ones(1))"}
# the RL Zoo's off-policy Pendulum / CartPole settings; learning_starts 100 (TD3's Zoo value is 10,000) so that short
# budgets train
_SAC = {"learning_rate": 1e-3, "learning_starts": 100}
_TD3 = {"gamma": 0.98, "buffer_size": 200_000, "learning_starts": 100, "learning_rate": 1e-3}

# the RL Zoo's CartPole settings of DQN, and QR-DQN's (the same, with 10 quantiles)
_DQN = {
    "learning_rate": 2.3e-3,
    "batch_size": 64,
    "buffer_size": 100_000,
    "learning_starts": 1000,
    "gamma": 0.99,
    "target_update_interval": 10,
    "train_freq": 256,
    "gradient_steps": 128,
    "exploration_fraction": 0.16,
    "exploration_final_eps": 0.04,
    "policy_kwargs": {"net_arch": [256, 256]},
}
_QRDQN = {**_DQN, "policy_kwargs": {"net_arch": [256, 256], "n_quantiles": 10}}


CONFIGS = {
    # the RL Zoo's settings, with constant learning rate and clip range (the Zoo's are linear schedules)
    "ppo": Config(
        "PPO",
        "CartPole-v1",
        8,
        {
            "n_steps": 32,
            "batch_size": 256,
            "gae_lambda": 0.8,
            "gamma": 0.98,
            "n_epochs": 20,
            "learning_rate": 1e-3,
        },
    ),
    "a2c": Config("A2C", "Acrobot-v1", 16, {"ent_coef": 0.0}),
    "dqn": Config("DQN", "CartPole-v1", 1, _DQN),
    "qrdqn": Config("QRDQN", "CartPole-v1", 1, _QRDQN, sb3_package="sb3_contrib"),
    "sac": Config("SAC", "Pendulum-v1", 1, {**_SAC, "policy_kwargs": {"net_arch": [64, 64]}}),
    "sac-400-300": Config("SAC", "Pendulum-v1", 1, {**_SAC, "policy_kwargs": {"net_arch": [400, 300]}}),
    # TQC: the Zoo's Pendulum settings (its learning rate) on SAC's small networks and learning start
    "tqc": Config(
        "TQC", "Pendulum-v1", 1, {**_SAC, "policy_kwargs": {"net_arch": [64, 64]}}, sb3_package="sb3_contrib"
    ),
    "td3": Config("TD3", "Pendulum-v1", 1, {**_TD3, "policy_kwargs": {"net_arch": [64, 64]}}, _TD3_NOISE),
    "td3-400-300": Config("TD3", "Pendulum-v1", 1, {**_TD3, "policy_kwargs": {"net_arch": [400, 300]}}, _TD3_NOISE),
    "ddpg": Config("DDPG", "Pendulum-v1", 1, {**_TD3, "policy_kwargs": {"net_arch": [64, 64]}}, _TD3_NOISE),
    # continuous actions for the on-policy pair: the Zoo's Pendulum settings without gSDE (seed groups do not batch
    # it) and without VecNormalize (the benchmark's envs are plain), so they learn more slowly than the Zoo's
    "ppo-pendulum": Config(
        "PPO",
        "Pendulum-v1",
        4,
        {"n_steps": 1024, "gae_lambda": 0.95, "gamma": 0.9, "n_epochs": 10, "ent_coef": 0.0, "learning_rate": 1e-3},
    ),
    "a2c-pendulum": Config(
        "A2C", "Pendulum-v1", 8, {"n_steps": 8, "gae_lambda": 0.9, "gamma": 0.9, "ent_coef": 0.0, "learning_rate": 7e-4}
    ),
}


def _per_seed_code(backend: str, config: Config, seed: int, steps: int) -> str:
    if backend == "sb3":
        return config.imports() + (
            f"from {config.sb3_package} import {config.algo} as Algo\n"
            "from stable_baselines3.common.env_util import make_vec_env\n"
            f"env = make_vec_env({config.env!r}, n_envs={config.n_envs}, seed={seed})\n"
            f"Algo('MlpPolicy', env, seed={seed}, {config.arguments()}).learn({steps})\n"
        )
    return config.imports() + (
        f"from lit_sb3 import {config.algo} as Algo\n"
        "from lit_sb3.common.envs import to_vec_env\n"
        f"env = to_vec_env({config.env!r}, {config.n_envs})\n"
        f"Algo('MlpPolicy', env=env, seed={seed}, {config.arguments()}).learn({steps})\n"
    )


def _group_code(config: Config, seeds: list[int], steps: int) -> str:
    return config.imports() + (
        f"from lit_sb3 import {config.algo} as Algo, SeedGroup\n"
        f"SeedGroup(Algo, seeds={seeds!r}, env={config.env!r}, n_envs={config.n_envs}, {config.arguments()})"
        f".learn({steps})\n"
    )


def _run_all(codes: list[str], jobs: int) -> tuple[float, float]:
    """Run the programs, ``jobs`` at a time; the wall time of the whole and the CPU time of the processes."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    pending, running = list(codes), []
    while pending or running:
        while pending and len(running) < jobs:
            running.append(subprocess.Popen([sys.executable, "-c", pending.pop(0)]))
        running[0].wait()
        for process in [p for p in running if p.poll() is not None]:
            if process.returncode != 0:
                raise SystemExit(f"a benchmarked run failed (exit {process.returncode})")
            running.remove(process)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _codes(mode: str, config: Config, n_seeds: int, steps: int, jobs: int) -> list[str]:
    seeds = list(range(n_seeds))
    if mode == "grouped":
        shares = [seeds[i::jobs] for i in range(min(jobs, n_seeds))]
        return [_group_code(config, share, steps) for share in shares]
    return [_per_seed_code(mode, config, seed, steps) for seed in seeds]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--algo", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--steps", type=int, default=20_000, help="env steps per seed")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes at once (cores)")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--modes", nargs="+", default=["grouped", "lit", "sb3"], choices=["grouped", "lit", "sb3"])
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}; {args.seeds} seeds x {args.steps} steps, {args.jobs} at a time")
    for name in args.algo:
        config = CONFIGS[name]
        times: dict[str, list[tuple[float, float]]] = {mode: [] for mode in args.modes}
        for repeat in range(args.repeats):
            shift = repeat % len(args.modes)
            for mode in args.modes[shift:] + args.modes[:shift]:
                times[mode].append(_run_all(_codes(mode, config, args.seeds, args.steps, args.jobs), args.jobs))
        walls = {mode: statistics.median(w for w, _ in runs) for mode, runs in times.items()}
        cpus = {mode: statistics.median(c for _, c in runs) for mode, runs in times.items()}
        print(f"{config.algo} {config.env} (n_envs={config.n_envs}):")
        for mode in args.modes:
            spread = ", ".join(f"{w:.1f}" for w, _ in times[mode])
            line = f"  {mode:8s} wall {walls[mode]:7.1f} s [{spread}]  cpu {cpus[mode]:7.1f} s"
            if "grouped" in walls and mode != "grouped":
                line += f"  -> grouped is {walls[mode] / walls['grouped']:.2f}x faster (wall), "
                line += f"{cpus[mode] / cpus['grouped']:.2f}x less CPU"
            print(line, flush=True)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()

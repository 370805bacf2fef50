"""The harness's whole sweep of a config's seeds: one process per seed (today's default: joblib) against the seeds
in batched groups (``seeds_per_process=N``, lit_bench.run.batched), side by side.

    OMP_NUM_THREADS=1 python benchmarks/seed_groups.py --configs ppo_cartpole --seeds 10 --budget 20000 --repeats 1
    OMP_NUM_THREADS=1 python benchmarks/seed_groups.py --configs sac_pendulum_64 td3_pendulum_64 --budget 2000

Each mode is one ``python run.py -m ...`` command timed over its whole life (imports, plan, report included), into a
fresh output directory: ``alone`` (``seeds_per_process=1``, joblib with ``--jobs`` workers) and ``grouped`` (the
seeds split into ``--jobs`` batched groups, one joblib job each). It prints each mode's wall time and the CPU time
of all its processes (``descendants``: joblib's forked workers too, once they have ended), the ratio alone /
grouped of both, and the load average before and after.
Modes alternate, the order rotating by repeat. To add a configuration, add a row to ``CONFIGS``.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from descendants import adopt_descendants, cpu_of_descendants, reap_descendants

REPO = Path(__file__).resolve().parent.parent
# The RL Zoo's settings (algo_env/), and SAC / TD3 on Pendulum with small [64, 64] and the Zoo's [400, 300] networks
# (TD3's learning from step 100, not the Zoo's 10,000, so that a short budget measures the updates).
_TD3 = ["algo=td3", "env=Pendulum", "algo.learning_starts=100"]
CONFIGS = {
    "ppo_cartpole": ["algo=ppo", "env=CartPole"],
    "a2c_acrobot": ["algo=a2c", "env=Acrobot"],
    "dqn_cartpole": ["algo=dqn", "env=CartPole"],
    "qrdqn_cartpole": ["algo=qrdqn", "env=CartPole"],
    "sac_pendulum_64": ["algo=sac", "env=Pendulum", "algo.policy_kwargs={net_arch:[64,64]}"],
    "sac_pendulum_400_300": ["algo=sac", "env=Pendulum", "algo.policy_kwargs={net_arch:[400,300]}"],
    "td3_pendulum_64": [*_TD3, "algo.policy_kwargs.net_arch=[64,64]"],
    "td3_pendulum_400_300": _TD3,
}


def sweep(config: list[str], seeds: int, budget: int, jobs: int, grouped: bool, out: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one whole sweep."""
    per_process = math.ceil(seeds / jobs) if grouped else 1
    command = [sys.executable, "run.py", "-m", *config, f"seed={','.join(str(s) for s in range(seeds))}"]
    command += [f"budget={budget}", f"seeds_per_process={per_process}", f"hydra.launcher.n_jobs={jobs}"]
    command += [f"out_dir={out}", "sweep=bench"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "LIT_BENCH_CONSOLE": "off"}
    cpu, start = cpu_of_descendants(), time.perf_counter()
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start  # the command's: its workers' forkserver ends after it, on its own
    reap_descendants()
    if done.returncode != 0 or f"{seeds} completed" not in done.stdout:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return wall, cpu_of_descendants() - cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", nargs="+", choices=sorted(CONFIGS), default=sorted(CONFIGS))
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--budget", type=int, default=20000)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args(argv)
    adopt_descendants()
    print(f"load average before: {os.getloadavg()}", flush=True)
    for name in args.configs:
        times: dict[str, list[tuple[float, float]]] = {"alone": [], "grouped": []}
        for repeat in range(args.repeats):
            order = ["alone", "grouped"] if repeat % 2 == 0 else ["grouped", "alone"]
            for mode in order:
                with tempfile.TemporaryDirectory() as out:
                    times[mode].append(
                        sweep(CONFIGS[name], args.seeds, args.budget, args.jobs, mode == "grouped", Path(out))
                    )
        (wall_a, cpu_a), (wall_g, cpu_g) = (
            tuple(statistics.median(x) for x in zip(*times[m], strict=True)) for m in ("alone", "grouped")
        )
        # each repeat's pair (alone, grouped run one after the other) gives a ratio: their range is the spread
        wall_ratios = [a[0] / g[0] for a, g in zip(times["alone"], times["grouped"], strict=True)]
        cpu_ratios = [a[1] / g[1] for a, g in zip(times["alone"], times["grouped"], strict=True)]
        print(
            f"{name}: {args.seeds} seeds x {args.budget} steps, {args.jobs} jobs, median of {args.repeats}: "
            f"alone {wall_a:.1f} s wall / {cpu_a:.1f} s CPU; grouped {wall_g:.1f} s wall / {cpu_g:.1f} s CPU; "
            f"alone/grouped: wall {wall_a / wall_g:.2f}x, CPU {cpu_a / cpu_g:.2f}x; each repeat's ratios: wall "
            f"{min(wall_ratios):.2f}-{max(wall_ratios):.2f}x, CPU {min(cpu_ratios):.2f}-{max(cpu_ratios):.2f}x",
            flush=True,
        )
    print(f"load average after: {os.getloadavg()}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

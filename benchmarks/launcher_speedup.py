"""Wall time of N-job multiruns on the joblib launcher vs the same N jobs one after the other (basic launcher), and
the fixed cost of one run's process.

    python benchmarks/launcher_speedup.py [--jobs 2 6 12] [--budget 5000] [--reps 3] [--singles 3] [--root DIR ...]

Each repetition runs, for every N, PPO on CartPole with seeds 0..N-1 on both launchers (alternating which goes
first), every job with one torch thread and ``force=true``; joblib gets ``--workers`` processes (2: the cores of the
machine the issue targets). Runs are short (one evaluation, at the end): the sweep's cost is mostly start-up.
Prints per N the medians, min-max, the per-repetition speed-ups (sequential wall / joblib wall) and the CPU seconds
of each multirun's processes (less sensitive than wall time to other load on the machine).

``--singles K`` also starts K single runs (``python run.py``) and prints their fixed cost: the process's wall time
minus the run's own ``wall_time_s`` (interpreter, imports, Hydra, checks and exit), and ``startup_s`` (in
``run()``, up to the first env step). ``--root`` measures other checkouts of the project (e.g. an older commit
exported with ``git archive``): several roots alternate within each repetition, so that a before / after
comparison shares the machine's load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from descendants import adopt_descendants, cpu_of_descendants, reap_descendants


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):7.1f} [{min(values):.1f}-{max(values):.1f}]"


def cpu_of(pid: int) -> float | None:
    """CPU seconds of a live process so far (Linux /proc; None elsewhere or once it has gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def launch(root: Path, overrides: list[str]) -> tuple[float, float, float]:
    """Wall and CPU seconds of ``python run.py <overrides>`` in ``root`` (which must exit 0): all its processes, and
    the first process alone (sampled until it exits: a sweep's parent, apart from its workers)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(root)}
    with tempfile.TemporaryFile("w+") as stderr:
        start, cpu = time.perf_counter(), cpu_of_descendants()
        process = subprocess.Popen(
            [sys.executable, str(root / "run.py"), *overrides],
            cwd=root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
        own = 0.0
        while process.poll() is None:
            own = cpu_of(process.pid) or own
            time.sleep(0.05)
        wall = time.perf_counter() - start
        reap_descendants()  # (a joblib sweep's forked workers: their forkserver ends after the command)
        if process.returncode != 0:
            stderr.seek(0)
            raise RuntimeError(f"run.py {' '.join(overrides)} exited {process.returncode}: {stderr.read()[-2000:]}")
    return wall, cpu_of_descendants() - cpu, own


def multirun(root: Path, launcher: str, jobs: int, budget: int, workers: int, out: Path) -> tuple[float, float, float]:
    seeds = ",".join(str(s) for s in range(jobs))
    extra = [f"hydra.launcher.n_jobs={workers}"] if launcher == "joblib" else []
    return launch(
        root,
        [
            "-m",
            "algo=ppo",
            "env=CartPole",
            f"seed={seeds}",
            f"budget={budget}",
            f"hydra/launcher={launcher}",
            *extra,
            f"out_dir={out}",
            f"sweep={launcher}{jobs}",
            "force=true",
            *short_run(budget),
        ],
    )


def short_run(budget: int) -> list[str]:
    """One evaluation (at the end) of 2 episodes: the run is mostly its start-up, which is what this measures."""
    return [f"eval.every={budget}", "eval.episodes=2"]


def single_run(root: Path, seed: int, budget: int, out: Path) -> tuple[float, float, float]:
    """One ``python run.py``: its process wall, the run's ``wall_time_s`` and ``startup_s`` (from summary.json)."""
    wall, _, _ = launch(
        root,
        [
            "algo=ppo",
            "env=CartPole",
            f"seed={seed}",
            f"budget={budget}",
            f"out_dir={out}",
            "sweep=single",
            "force=true",
            *short_run(budget),
        ],
    )
    summary = json.loads(next(out.rglob("summary.json")).read_text())
    return wall, float(summary["wall_time_s"]), float(summary["startup_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, nargs="+", default=[2, 6, 12])
    parser.add_argument("--budget", type=int, default=5_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2, help="joblib processes (hydra.launcher.n_jobs)")
    parser.add_argument("--singles", type=int, default=0, help="single runs to time the fixed cost of one process")
    parser.add_argument("--root", type=Path, nargs="+", default=[Path(__file__).resolve().parents[1]])
    args = parser.parse_args()
    adopt_descendants()
    roots = [root.resolve() for root in args.root]
    walls: dict[tuple[Path, str, int], list[float]] = {}
    cpus: dict[tuple[Path, str, int], list[float]] = {}
    parents: dict[tuple[Path, int], list[float]] = {}
    fixed: dict[Path, list[float]] = {root: [] for root in roots}
    startup: dict[Path, list[float]] = {root: [] for root in roots}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.reps):
            for jobs in args.jobs:
                for k, root in enumerate(roots if rep % 2 == 0 else roots[::-1]):
                    order = ["joblib", "basic"] if (rep + jobs + k) % 2 == 0 else ["basic", "joblib"]
                    for launcher in order:
                        wall, cpu, own = multirun(root, launcher, jobs, args.budget, args.workers, Path(tmp) / str(rep))
                        walls.setdefault((root, launcher, jobs), []).append(wall)
                        cpus.setdefault((root, launcher, jobs), []).append(cpu)
                        if launcher == "joblib":
                            parents.setdefault((root, jobs), []).append(own)
                        print(
                            f"rep {rep} {root.name} {jobs:2d} jobs {launcher:6s}: {wall:.1f} s wall, {cpu:.1f} s CPU "
                            f"(first process {own:.1f})",
                            flush=True,
                        )
        for i in range(args.singles):
            for root in roots if i % 2 == 0 else roots[::-1]:
                wall, run_wall, startup_s = single_run(root, i, args.budget, Path(tmp) / f"{root.name}-single{i}")
                fixed[root].append(wall - run_wall)
                startup[root].append(startup_s)
                print(
                    f"single run {i} {root.name}: process {wall:.1f} s, run {run_wall:.1f} s, startup_s {startup_s}",
                    flush=True,
                )
    for root in roots:
        print(
            f"\n{root}: PPO CartPole, budget {args.budget}, {args.workers} joblib workers, {args.reps} reps; "
            "wall s: median [min-max]"
        )
        print(
            f"{'jobs':>4} {'joblib':>20} {'sequential':>20} {'speed-up':>8}  per rep  |  CPU s: joblib (its parent), "
            "sequential; speed-up on 2 idle cores estimated from CPU"
        )
        for jobs in args.jobs:
            parallel, sequential = walls[(root, "joblib", jobs)], walls[(root, "basic", jobs)]
            ratios = [s / p for s, p in zip(sequential, parallel, strict=True)]
            cpu_par, cpu_seq, parent = cpus[(root, "joblib", jobs)], cpus[(root, "basic", jobs)], parents[(root, jobs)]
            # idle cores, one thread per job: the parent, then its work shared by the 2 workers; sequential = its CPU
            estimate = [s / (p + (c - p) / args.workers) for s, c, p in zip(cpu_seq, cpu_par, parent, strict=True)]
            print(
                f"{jobs:4d} {spread(parallel):>20} {spread(sequential):>20} {statistics.median(ratios):7.2f}x  "
                + " ".join(f"{r:.2f}" for r in ratios)
                + f"  |  {spread(cpu_par)} ({statistics.median(parent):.1f}), {spread(cpu_seq)}; "
                + f"{statistics.median(estimate):.2f}x"
            )
        if fixed[root]:
            print(f"one run's process, fixed cost (process wall - run wall_time_s): {spread(fixed[root])} s")
            print(f"startup_s (run() to first env step, imports excluded): {spread(startup[root])} s")


if __name__ == "__main__":
    main()

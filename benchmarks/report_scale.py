"""Wall time, CPU time and peak memory of ``python -m lit_bench.cli.report`` on sweeps of N copies of a real run.

    python benchmarks/report_scale.py --runs 1000 10000 [--configs 60 20] [--root /tmp/lit_bench_scale]
        [--reps 1] [--workers N] [--code DIR] [--from-run DIR | --synthetic]

The runs are copies of one real run directory (every file a run has: ``eval.csv``, ``train/metrics.csv``,
checkpoints, monitor files, ...; ``benchmarks/synthetic_runs.copies``), each its own seed and config: by default of
a run this script trains once under ``--root/source`` (``run.py algo=ppo env=CartPole budget=25600
eval.every=256``: 100 evaluations, 100 training-metrics rows, ~30 CPU s), or of ``--from-run DIR``.
``--synthetic`` writes imitation runs instead (``benchmarks/synthetic_runs.py``: failed, interrupted and damaged
runs among them). The sweeps are written under ``--root`` once and kept for later calls (outside the repository),
then the report is timed on them: ``cold`` without the analysis cache (as a first report), ``warm`` with the cache
the cold report left (as a second report). CPU seconds include the report's figure workers. Peak memory:
``largest`` is the largest resident set of one process (the report or a worker), ``all`` the peak of the memory of
all of them together, sampled every 50 ms (proportional set sizes: pages forked workers share with the report
counted once). The figures cost per config (one curve, bar and label each), the rest per run: ``--configs`` takes
several shapes, by default 60 configs (~167 seeds each at 10,000 runs) and the many-seeds shape of 20 configs (500
seeds each), every one timed. ``--workers`` is passed to the report (its default: the usable CPUs); ``--code``
times another checkout's ``lit_bench`` (e.g. ``git archive main | tar -x -C /tmp/main``) with the same data, for
before/after tables. The machine is shared: alternate, and compare CPU seconds and ratios rather than wall seconds;
the load average is printed beside each line.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic_runs import copies, generate

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from lit_bench.analysis.cache import CACHE_FILE  # noqa: E402

REPORT = "lit_bench.cli.report"


def tree_pss_mb(pid: int) -> float:
    """Proportional set size of a process and its descendants, MB (0 for a process that is gone)."""
    total = 0.0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            total += next(int(line.split()[1]) for line in rollup if line.startswith("Pss:")) / 1024
        children = [
            int(c)
            for t in os.listdir(f"/proc/{pid}/task")
            for c in Path(f"/proc/{pid}/task/{t}/children").read_text().split()
        ]
    except (OSError, StopIteration, ValueError):
        return total
    return total + sum(tree_pss_mb(c) for c in children)


def timed(command: list[str], code: Path) -> tuple[float, float, float, float]:
    """(wall s, CPU s, largest RSS MB, peak PSS MB of all processes) of one child process; raises when it fails."""
    start = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(code), "OMP_NUM_THREADS": "1"}
    child = subprocess.Popen(command, cwd=code, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert child.stderr is not None
    peak = [0.0]

    def sample() -> None:  # until the child is waited for (its /proc entry then disappears)
        while os.path.exists(f"/proc/{child.pid}"):
            peak[0] = max(peak[0], tree_pss_mb(child.pid))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    errors = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    sampler.join()
    child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({child.returncode}):\n{errors.decode()[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, peak[0]


# The real run the copies are made of: 100 evaluations and 100 training-metrics rows, as a sweep's runs have.
SOURCE_RUN = ["algo=ppo", "env=CartPole", "budget=25600", "eval.every=256", "sweep=source", "seed=0"]


def real_run(root: Path) -> Path:
    """The run directory of ``SOURCE_RUN`` under ``root/source``, trained once (by this checkout's ``run.py``)."""
    found = sorted((root / "source").glob("source/*/*/*/seed_0/summary.json"))
    if not found:
        command = [sys.executable, str(ROOT / "run.py"), *SOURCE_RUN, f"out_dir={root / 'source'}"]
        done = subprocess.run(command, cwd=ROOT, env={**os.environ, "OMP_NUM_THREADS": "1"}, capture_output=True)
        if done.returncode != 0:
            raise SystemExit(f"report_scale: the source run failed:\n{done.stderr.decode()[-2000:]}")
        found = sorted((root / "source").glob("source/*/*/*/seed_0/summary.json"))
    return found[0].parent


def drop_caches(root: Path) -> None:
    for cache in root.rglob(CACHE_FILE):
        cache.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--root", type=Path, default=Path("/tmp/lit_bench_scale"))
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument(
        "--configs",
        type=int,
        nargs="+",
        default=[60, 20],
        help="shapes: configs of each synthetic sweep (the runs: their seeds)",
    )
    parser.add_argument("--workers", type=int, default=None, help="the report's --workers (default: its own)")
    parser.add_argument(
        "--from-run",
        type=Path,
        default=None,
        help="a real run directory: the runs are copies of it (all its files) instead of synthetic ones",
    )
    parser.add_argument(
        "--synthetic", action="store_true", help="imitation runs (benchmarks/synthetic_runs.py) instead of copies"
    )
    parser.add_argument("--code", type=Path, default=ROOT, help="the checkout whose lit_bench is timed")
    args = parser.parse_args()
    if args.synthetic and args.from_run is not None:
        raise SystemExit("report_scale: --synthetic and --from-run exclude each other; choose one")
    source = None if args.synthetic else (args.from_run or real_run(args.root))
    print(
        "| runs | configs x seeds | report | wall s | CPU s | peak MB, largest process | peak MB, all processes "
        "| load |\n|---:|---|---|---:|---:|---:|---:|---:|"
    )
    for n, configs in ((n, c) for n in args.runs for c in args.configs):
        runs = args.root / (str(n) if configs == 60 else f"{n}_c{configs}")
        if source is not None:
            runs = args.root / f"copies_{n}_c{configs}"
        if not (runs / ".complete").is_file():
            if runs.exists() and any(runs.iterdir()):
                raise SystemExit(f"report_scale: {runs} holds something other than a finished sweep of this script")
            if source is not None:
                copies(source, runs, n, n_configs=configs)
            else:
                generate(runs, n, n_configs=configs)
            (runs / ".complete").write_text(f"{n}\n")
        shape = f"{min(configs, n)} x {-(-n // min(configs, n))}"
        command = [sys.executable, "-m", REPORT, str(runs), "--out", str(args.root / f"report_{runs.name}")]
        command += [] if args.workers is None else ["--workers", str(args.workers)]
        for _ in range(args.reps):
            drop_caches(runs)
            for kind in ("cold", "warm"):
                wall, cpu, largest, everything = timed(command, args.code.resolve())
                load = os.getloadavg()[0]
                print(
                    f"| {n:,} | {shape} | {kind} | {wall:.1f} | {cpu:.1f} | {largest:.0f} | {everything:.0f} "
                    f"| {load:.1f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()

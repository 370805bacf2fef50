"""Wall time, CPU time and peak memory of ``python -m lit_bench.report`` on synthetic sweeps of N runs.

    python benchmarks/report_scale.py --runs 1000 10000 [--configs 60] [--root /tmp/lit_bench_scale] [--reps 1]

Writes the runs with ``benchmarks/synthetic_runs.py`` under ``--root/<N>`` (once; kept for later calls, outside the
repository), then times the report on them: ``cold`` without the analysis cache (as a first report), ``warm`` with
the cache the cold report left (as a second report). Peak memory is the report process's maximum resident set size.
The figures cost per config (one curve, bar and label each), the rest per run: vary ``--configs`` to see both.
The machine is shared: compare CPU seconds and ratios rather than wall seconds.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic_runs import generate

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from lit_bench.analysis.cache import CACHE_FILE  # noqa: E402


def timed(command: list[str]) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MB) of one child process; raises when it fails."""
    start = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    child = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert child.stderr is not None
    errors = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({child.returncode}):\n{errors.decode()[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def drop_caches(root: Path) -> None:
    for cache in root.rglob(CACHE_FILE):
        cache.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--root", type=Path, default=Path("/tmp/lit_bench_scale"))
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--configs", type=int, default=60, help="configs per synthetic sweep (the runs: their seeds)")
    args = parser.parse_args()
    print("| runs | report | wall s | CPU s | peak MB |\n|---:|---|---:|---:|---:|")
    for n in args.runs:
        runs = args.root / (str(n) if args.configs == 60 else f"{n}_c{args.configs}")
        if not (runs / ".complete").is_file():
            if runs.exists() and any(runs.iterdir()):
                raise SystemExit(f"report_scale: {runs} holds something other than a finished synthetic sweep")
            generate(runs, n, n_configs=args.configs)
            (runs / ".complete").write_text(f"{n}\n")
        command = [sys.executable, "-m", "lit_bench.report", str(runs), "--out", str(args.root / f"report_{runs.name}")]
        for _ in range(args.reps):
            drop_caches(runs)
            for kind in ("cold", "warm"):
                wall, cpu, peak = timed(command)
                print(f"| {n:,} | {kind} | {wall:.1f} | {cpu:.1f} | {peak:.0f} |", flush=True)


if __name__ == "__main__":
    main()

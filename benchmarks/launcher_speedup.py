"""Wall time of a 2-job multirun on the joblib launcher vs the same 2 jobs run one after the other (basic launcher).

    python benchmarks/launcher_speedup.py [--budget 20000] [--reps 2]

Prints both wall times, the speed-up (target >= 1.8x on 2 cores) and the harness's per-run start-up
(``startup_s`` in summary.json: from ``run()`` to the first env step, imports excluded).
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

ROOT = Path(__file__).resolve().parents[1]


def multirun(launcher: str, budget: int, out: Path) -> float:
    command = [sys.executable, str(ROOT / "run.py"), "-m", "algo=ppo", "env=CartPole", "seed=0,1",
               f"budget={budget}", f"hydra/launcher={launcher}", f"out_dir={out}", f"sweep={launcher}", "force=true"]
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, check=True, capture_output=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=int, default=20_000)
    parser.add_argument("--reps", type=int, default=2)
    args = parser.parse_args()
    parallel, sequential, startups = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        for rep in range(args.reps):
            order = [("joblib", parallel), ("basic", sequential)]
            for launcher, sink in order if rep % 2 == 0 else reversed(order):
                sink.append(multirun(launcher, args.budget, out))
                print(f"rep {rep} {launcher}: {sink[-1]:.1f} s", flush=True)
        startups = [json.loads(p.read_text()).get("startup_s") for p in out.rglob("summary.json")]
    p, s = statistics.median(parallel), statistics.median(sequential)
    print(f"\n2 jobs (PPO CartPole, {args.budget} steps, seeds 0,1): joblib {p:.1f} s, one after the other {s:.1f} s, "
          f"speed-up {s / p:.2f}x")
    valid = [x for x in startups if x is not None]
    if valid:
        print(f"harness start-up per run (run() to first env step): median {statistics.median(valid):.2f} s")


if __name__ == "__main__":
    main()

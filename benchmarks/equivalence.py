"""Outcome-level equivalence of lit_sb3 and SB3 with the defaults (fused Adam, so runs diverge chaotically).

    python benchmarks/equivalence.py                          # PPO, SAC, DQN, TD3; 10 seeds; both backends
    python benchmarks/equivalence.py --seeds 2 --scale 0.1    # a quick check that everything runs

Trains every case with both backends through the harness (``run.py -m``, RL Zoo hyperparameters, joblib launcher),
then reports per case: the final-evaluation IQM of each backend, their difference (lit - SB3) with a paired
bootstrap 95% CI over seeds, and the probability of improvement P(lit > SB3) (rliable's). Equivalent
implementations show a CI that contains 0 and P(lit > SB3) near 0.5. Writes ``equivalence.csv`` and
``equivalence.md`` next to the runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from lit_bench.analysis.load import load_runs
from lit_bench.cli import regress
from lit_bench.stats import iqm, probability_of_improvement
from lit_bench.store.rundir import atomic_write_text

ROOT = Path(__file__).resolve().parents[1]

CASES = {  # name: suite entry (budgets where each already learns, as in conf/suite/ci.yaml)
    "ppo": {"algo": "ppo", "env": "CartPole", "budget": 30000},
    "sac": {"algo": "sac", "env": "Pendulum", "budget": 6000},
    "dqn": {"algo": "dqn", "env": "CartPole", "budget": 30000},
    "td3": {"algo": "td3", "env": "Pendulum", "budget": 6000, "overrides": ["algo.learning_starts=1000"]},
}


def paired_difference_ci(
    lit: np.ndarray, sb3: np.ndarray, n_boot: int = 5000, seed: int = 0
) -> tuple[float, float, float]:
    """IQM(lit) - IQM(sb3) and its percentile 95% CI, resampling seeds (pairs) with replacement."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(lit), size=(n_boot, len(lit)))
    diffs = np.array([iqm(lit[i]) - iqm(sb3[i]) for i in idx])
    low, high = np.quantile(diffs, [0.025, 0.975])
    return iqm(lit) - iqm(sb3), float(low), float(high)


def finals(run_dirs: list[Path], entry: dict) -> pd.Series:
    """Final evaluation return per seed of one entry's completed runs."""
    runs = load_runs(run_dirs)
    runs = runs[(runs.algo == entry["algo"]) & (runs.env == entry["env"]) & (runs.status == "completed")]
    return runs.set_index("seed").final_mean_return.astype(float)


def compare(entry: dict, lit: pd.Series, sb3: pd.Series) -> dict:
    seeds = sorted(set(lit.index) & set(sb3.index))
    a, b = lit.loc[seeds].to_numpy(), sb3.loc[seeds].to_numpy()
    diff, low, high = paired_difference_ci(a, b) if seeds else (np.nan, np.nan, np.nan)
    return {
        "algo": entry["algo"],
        "env": entry["env"],
        "budget": entry["budget"],
        "seeds": len(seeds),
        "lit_iqm": iqm(a) if seeds else np.nan,
        "sb3_iqm": iqm(b) if seeds else np.nan,
        "diff": diff,
        "diff_ci_low": low,
        "diff_ci_high": high,
        "p_lit_gt_sb3": probability_of_improvement(a, b) if seeds else np.nan,
    }


def markdown(table: pd.DataFrame) -> str:
    lines = [
        "| algo | env | budget | seeds | lit IQM | SB3 IQM | lit - SB3 [95% CI] | P(lit > SB3) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in table.itertuples():
        flag = " (CI over < 5 seeds)" if r.seeds < 5 else ""
        lines.append(
            f"| {r.algo} | {r.env} | {r.budget} | {r.seeds}{flag} | {r.lit_iqm:.1f} | {r.sb3_iqm:.1f} | "
            f"{r.diff:+.1f} [{r.diff_ci_low:+.1f}, {r.diff_ci_high:+.1f}] | {r.p_lit_gt_sb3:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="*", default=list(CASES), choices=list(CASES))
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every budget (quick checks)")
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--out-dir", type=Path, default=ROOT / "results" / "runs")
    args = parser.parse_args(argv)
    if args.seeds < 2:
        parser.error("--seeds: at least 2 (a CI needs several seeds; 10 or more for a conclusion)")
    entries = [{**CASES[c], "budget": max(int(CASES[c]["budget"] * args.scale), 100)} for c in args.cases]
    suite = {
        "name": "equivalence",
        "seeds": list(range(args.seeds)),
        "eval_episodes": args.eval_episodes,
        "entries": entries,
    }
    runs = {backend: regress.run_suite(suite, backend, args.out_dir) for backend in ("lit", "sb3")}
    table = pd.DataFrame([compare(e, finals(runs["lit"], e), finals(runs["sb3"], e)) for e in entries])
    text = markdown(table)
    atomic_write_text(args.out_dir / "equivalence.csv", table.to_csv(index=False, float_format="%.4f"))
    atomic_write_text(args.out_dir / "equivalence.md", text)
    print(text)
    missing = table.seeds < args.seeds
    if missing.any():
        print(f"incomplete: {', '.join(table.algo[missing])} lack completed runs for some seeds (see the sweeps)")
    return 1 if missing.any() else 0


if __name__ == "__main__":
    sys.exit(main())

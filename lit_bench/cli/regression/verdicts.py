"""A regression suite's verdicts from its runs: the measured scores, thresholds from both backends' CIs,
measured vs threshold per entry, the exact-parity comparison per seed, and the tables printed for them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from lit_bench.analysis.load import load_evaluations, load_runs
from lit_bench.analysis.summarize import summary_table


def measured(runs: Path | Sequence[Path], suite: dict[str, Any] | None = None) -> pd.DataFrame:
    """The report's summary table of runs or sweeps (only the suite's active entries when ``suite`` is given)."""
    paths = [runs] if isinstance(runs, Path) else list(runs)
    table = summary_table(load_runs(paths), load_evaluations(paths))
    return table if suite is None else selected(table, suite)


def selected(table: pd.DataFrame, suite: dict[str, Any]) -> pd.DataFrame:
    active = {f"{e['algo']}:{e['env']}" for e in suite["entries"] if not e.get("skip")}
    return table[(table.algo + ":" + table.env).isin(active)]


def thresholds(scores: dict[str, pd.DataFrame], margin: float) -> pd.DataFrame:
    """Per (algo, env): the lowest CI lower bound across backends, lowered by ``margin`` of its magnitude."""
    merged = None
    for backend, table in scores.items():
        part = table[["algo", "env", "final_iqm", "ci_low"]].rename(
            columns={"final_iqm": f"{backend}_final_iqm", "ci_low": f"{backend}_ci_low"}
        )
        merged = part if merged is None else merged.merge(part, on=["algo", "env"], how="outer")
    assert merged is not None
    lows = merged[[f"{b}_ci_low" for b in scores]].min(axis=1)
    merged["threshold"] = lows - margin * lows.abs()
    merged["margin"] = margin
    return merged


def compare(table: pd.DataFrame, baselines: pd.DataFrame, suite: dict[str, Any] | None = None) -> pd.DataFrame:
    """Measured vs threshold for every suite entry; a missing or failed measurement is a regression too, and so is
    an entry of ``suite`` that has no recorded threshold."""
    if suite is not None:
        entries = pd.DataFrame(
            [{"algo": e["algo"], "env": e["env"]} for e in suite["entries"] if not e.get("skip")],
            columns=["algo", "env"],
        )
        baselines = entries.merge(baselines, on=["algo", "env"], how="left")
    merged = baselines[["algo", "env", "threshold"]].merge(
        table[["algo", "env", "seeds", "failed", "final_iqm", "ci_low", "ci_high"]], on=["algo", "env"], how="left"
    )
    merged["passed"] = (merged.final_iqm >= merged.threshold) & (merged.failed.fillna(1) == 0)
    return merged


def parity_result(suite: dict[str, Any], lit_runs: pd.DataFrame, sb3_runs: pd.DataFrame) -> pd.DataFrame:
    """Per parity entry and seed: both backends' final evaluations; passed when both completed with equal values."""
    expected = pd.DataFrame(
        [
            {"algo": e["algo"], "env": e["env"], "seed": seed}
            for e in suite.get("parity", [])
            if not e.get("skip")
            for seed in suite["seeds"]
        ],
        columns=["algo", "env", "seed"],
    )
    keys = {"algo": str, "env": str, "seed": int}
    result = expected.astype(keys)
    for backend, runs in (("lit", lit_runs), ("sb3", sb3_runs)):
        part = runs.reindex(columns=["algo", "env", "seed", "status", "final_mean_return"])
        part = part.dropna(subset=["algo", "env", "seed"]).astype(keys)
        part = part.rename(columns={"status": f"{backend}_status", "final_mean_return": f"{backend}_final"})
        result = result.merge(part, on=["algo", "env", "seed"], how="left")
    result["passed"] = (
        (result.lit_status == "completed") & (result.sb3_status == "completed") & (result.lit_final == result.sb3_final)
    )
    return result


def print_parity(result: pd.DataFrame) -> None:
    print(
        f"\nexact parity (lit_sb3 parity=true vs SB3)\n{'algo':<6} {'env':<18} {'seed':>4} {'lit':>12} {'sb3':>12}"
        f"  verdict"
    )
    for r in result.itertuples():
        lit, sb3 = (f"{v:.4f}" if pd.notna(v) else "-" for v in (r.lit_final, r.sb3_final))
        print(f"{r.algo:<6} {r.env:<18} {r.seed:>4} {lit:>12} {sb3:>12}  {'identical' if r.passed else 'DIFFERENT'}")


def print_table(result: pd.DataFrame) -> None:
    print(
        f"\n{'algo':<6} {'env':<18} {'seeds':>5} {'failed':>6} {'final IQM':>10} {'95% CI':>20} "
        f"{'threshold':>10}  verdict"
    )
    for r in result.itertuples():
        ci = f"[{r.ci_low:.1f}, {r.ci_high:.1f}]" if pd.notna(r.ci_low) else "-"
        score = f"{r.final_iqm:.1f}" if pd.notna(r.final_iqm) else "-"
        print(
            f"{r.algo:<6} {r.env:<18} {_int(r.seeds):>5} {_int(r.failed):>6} {score:>10} {ci:>20} "
            f"{r.threshold:>10.1f}  {'ok' if r.passed else 'REGRESSION'}"
        )


def _int(value: Any) -> str:
    return "-" if pd.isna(value) else str(int(value))

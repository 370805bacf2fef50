"""A regression suite's verdicts from its runs: the measured scores, thresholds from both backends' CIs,
measured vs threshold per entry, the exact-parity comparison per seed, and the tables printed for them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from lit_bench.analysis.load import load_evaluations, load_runs
from lit_bench.analysis.summarize import summary_table
from lit_bench.cli.regression.suites import seeds_of
from lit_bench.config.resources import reference_dir

# A threshold is evidence only when it separates a regression from seed noise. With fewer seeds the IQM's bootstrap
# CI is as wide as the seeds' spread (two seeds: the CI's low end is the worse seed), and a threshold under it
# catches only an agent that learned nothing.
MIN_SEEDS = 5
# ... and when it sits at least this share of the way from a random policy's score up to the lower backend's IQM:
# a recorded threshold nearer to random than that says the seeds disagreed too much to judge anything.
MIN_TEETH = 0.5


def measured(runs: Path | Sequence[Path], suite: dict[str, Any] | None = None) -> pd.DataFrame:
    """The report's summary table of runs or sweeps (only the suite's active entries when ``suite`` is given)."""
    paths = [runs] if isinstance(runs, Path) else list(runs)
    table = summary_table(load_runs(paths), load_evaluations(paths))
    return table if suite is None else selected(table, suite)


def selected(table: pd.DataFrame, suite: dict[str, Any]) -> pd.DataFrame:
    active = {f"{e['algo']}:{e['env']}" for e in suite["entries"] if not e.get("skip")}
    return table[(table.algo + ":" + table.env).isin(active)]


def thresholds(scores: dict[str, pd.DataFrame], margin: float) -> pd.DataFrame:
    """Per (algo, env): the lowest CI lower bound across backends, lowered by ``margin`` of its magnitude; with the
    fewest seeds a backend measured and a random policy's score, the evidence ``toothless`` judges it by."""
    merged = None
    for backend, table in scores.items():
        columns = {"final_iqm": f"{backend}_final_iqm", "ci_low": f"{backend}_ci_low", "seeds": f"{backend}_seeds"}
        part = table[["algo", "env", *columns]].rename(columns=columns)
        merged = part if merged is None else merged.merge(part, on=["algo", "env"], how="outer")
    assert merged is not None
    lows = merged[[f"{b}_ci_low" for b in scores]].min(axis=1)
    merged["threshold"] = lows - margin * lows.abs()
    merged["margin"] = margin
    merged["seeds"] = merged[[f"{b}_seeds" for b in scores]].min(axis=1)
    merged["random"] = merged.env.map(random_scores())
    return merged.drop(columns=[f"{b}_seeds" for b in scores])


def random_scores() -> dict[str, float]:
    """A uniformly random policy's mean return per env short name (``results/reference/random_scores.csv``)."""
    table = pd.read_csv(reference_dir() / "random_scores.csv")
    return dict(zip(table.env, table.mean_return.astype(float)))


def toothless(table: pd.DataFrame, backends: Sequence[str]) -> list[str]:
    """One line per recorded threshold that cannot tell a regression from seed noise: from fewer than
    ``MIN_SEEDS`` seeds, reached by a random policy, or far below what the recorded seeds reach (``MIN_TEETH``)."""
    lines = []
    for r in table.itertuples():
        name, iqm = f"{r.algo}:{r.env}", min(getattr(r, f"{b}_final_iqm") for b in backends)
        if pd.isna(r.seeds) or int(r.seeds) < MIN_SEEDS:
            seeds = 0 if pd.isna(r.seeds) else int(r.seeds)
            lines.append(f"{name}: recorded from {seeds} seeds; a threshold needs at least {MIN_SEEDS} per backend")
        elif pd.isna(r.random):
            continue  # no random-policy score for this env: the seed count is the check
        elif r.threshold <= r.random:
            lines.append(f"{name}: threshold {r.threshold:.1f} is reached by a random policy ({r.random:.1f})")
        elif r.threshold < r.random + MIN_TEETH * (iqm - r.random):
            lines.append(
                f"{name}: threshold {r.threshold:.1f} is less than {MIN_TEETH:.0%} of the way from a random policy "
                f"({r.random:.1f}) to the recorded IQM ({iqm:.1f}): the seeds disagree too much; record more seeds"
            )
    return lines


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
            for seed in seeds_of(suite, "parity")
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

"""A regression suite's verdicts from its runs: the measured scores, thresholds from both backends' recorded seeds
(with their estimated false-alarm rates), measured vs threshold per entry, the exact-parity comparison per seed,
and the tables printed for them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from lit_bench.analysis.load import load_evaluations, load_runs
from lit_bench.analysis.summarize import summary_table
from lit_bench.cli.regression.suites import seeds_of
from lit_bench.config.resources import reference_dir

# A check (CI) judges the IQM of a suite's ``seeds``: at least this many, since with fewer the IQM's bootstrap CI is as
# wide as the seeds' spread (two seeds: the CI's low end is the worse seed).
MIN_SEEDS = 5
# A threshold is recorded from at least this many seeds per backend: it is a low quantile of the IQM of a check's
# seeds drawn from the recorded ones, and a check's 5 seeds resampled from only 5 recorded ones mostly redraw the worst.
MIN_RECORD_SEEDS = 10
# ... and only when it sits at least this share of the way from a random policy's score up to the lower backend's
# IQM: an agent that learned half as much then fails it (a threshold nearer to random says the seeds disagreed too
# much to judge anything at this budget).
MIN_TEETH = 0.5
# A check of a suite's seeds fails on seed noise at most this often per entry (estimated; a suite's ``false_alarm``)
FALSE_ALARM = 0.01
RESAMPLES = 100_000  # resampled checks per backend: the false-alarm estimate's Monte Carlo error is under 0.001
DECIMALS = 3  # the thresholds file's precision: a threshold is rounded down to it, so rounding never raises it


def measured(runs: Path | Sequence[Path], suite: dict[str, Any] | None = None) -> pd.DataFrame:
    """The report's summary table of runs or sweeps (only the suite's active entries when ``suite`` is given)."""
    paths = [runs] if isinstance(runs, Path) else list(runs)
    if not paths:  # no entry ran (a suite, or an --only, of parity entries alone)
        return pd.DataFrame(columns=["algo", "env", "seeds", "failed", "final_iqm", "ci_low", "ci_high"])
    table = summary_table(load_runs(paths), load_evaluations(paths))
    return table if suite is None else selected(table, suite)


def selected(table: pd.DataFrame, suite: dict[str, Any]) -> pd.DataFrame:
    active = {f"{e['algo']}:{e['env']}" for e in suite["entries"] if not e.get("skip")}
    return table[(table.algo + ":" + table.env).isin(active)]


def check_iqms(scores: Sequence[float] | np.ndarray, check_seeds: int, seed: int = 0) -> np.ndarray:
    """``RESAMPLES`` IQMs of ``check_seeds`` seeds drawn with replacement from ``scores`` (one per recorded seed):
    what a check's score would be with other seeds of the same code, e.g. after a change that moves every seed's
    numbers without changing what the algorithm does (a dependency's upgrade)."""
    values = np.asarray(scores, dtype=float)
    draws = np.sort(values[np.random.default_rng(seed).integers(0, values.size, (RESAMPLES, check_seeds))], axis=1)
    cut = check_seeds // 4  # stats.iqm's cut: the mean of the middle half
    return draws[:, cut : check_seeds - cut].mean(axis=1)


def thresholds(
    scores: dict[str, pd.DataFrame], seeds: pd.DataFrame, check_seeds: int, false_alarm: float
) -> pd.DataFrame:
    """Per (algo, env), from each backend's summary (``scores``: its IQM and 95% CI) and recorded seeds' final
    scores (``seeds``: ``per_seed``'s table): the threshold a check of ``check_seeds`` seeds must reach, the lower of
    the two backends' ``false_alarm`` quantiles of ``check_iqms`` (rounded down to ``DECIMALS``), so that a check
    with other seeds of either implementation fails it at most that often; beside it, each backend's estimated
    false-alarm rate at that threshold, the rate at which an agent whose every seed learned half as much (halfway
    from a random policy's score to its own) fails it (``detection``, from lit_sb3's seeds), the fewest recorded
    seeds of a backend and a random policy's score (what ``toothless`` judges it by)."""
    merged = None
    for backend, table in scores.items():
        columns = {name: f"{backend}_{name}" for name in ("seeds", "final_iqm", "ci_low", "ci_high")}
        part = table[["algo", "env", *columns]].rename(columns=columns)
        merged = part if merged is None else merged.merge(part, on=["algo", "env"], how="outer")
    assert merged is not None
    random = random_scores()
    rows = []
    for r in merged.itertuples():
        own = seeds[(seeds.algo == r.algo) & (seeds.env == r.env)]
        finals = {b: own[own.backend == b].final_mean_return.dropna().to_numpy(float) for b in scores}
        resampled = {b: check_iqms(v, check_seeds) for b, v in finals.items() if v.size}
        low = min(
            (float(np.quantile(v, false_alarm, method="inverted_cdf")) for v in resampled.values()), default=np.nan
        )
        threshold = math.floor(low * 10**DECIMALS) / 10**DECIMALS if np.isfinite(low) else np.nan
        row: dict[str, Any] = {"threshold": threshold, "check_seeds": check_seeds, "false_alarm": false_alarm}
        for b in scores:
            row[f"{b}_false_alarm"] = float((resampled[b] < threshold).mean()) if b in resampled else np.nan
        base = random.get(r.env, np.nan)
        lit = finals.get("lit", np.empty(0))
        halfway = check_iqms(base + 0.5 * (lit - base), check_seeds) if lit.size and np.isfinite(base) else None
        row["detection"] = float((halfway < threshold).mean()) if halfway is not None else np.nan
        row["seeds"] = min(v.size for v in finals.values())
        row["random"] = base
        rows.append(row)
    return pd.concat([merged.reset_index(drop=True), pd.DataFrame(rows)], axis=1)


def random_scores() -> dict[str, float]:
    """A uniformly random policy's mean return per env short name (``results/reference/random_scores.csv``)."""
    table = pd.read_csv(reference_dir() / "random_scores.csv")
    return dict(zip(table.env, table.mean_return.astype(float)))


def toothless(table: pd.DataFrame, backends: Sequence[str]) -> list[str]:
    """One line per recorded threshold that cannot tell a regression from seed noise: from fewer than
    ``MIN_RECORD_SEEDS`` seeds, reached by a random policy, or far below what the recorded seeds reach
    (``MIN_TEETH``)."""
    lines = []
    for r in table.itertuples():
        name, iqm = f"{r.algo}:{r.env}", min(getattr(r, f"{b}_final_iqm") for b in backends)
        if pd.isna(r.seeds) or int(r.seeds) < MIN_RECORD_SEEDS:
            seeds = 0 if pd.isna(r.seeds) else int(r.seeds)
            lines.append(
                f"{name}: recorded from {seeds} completed seeds; a threshold needs at least {MIN_RECORD_SEEDS} per "
                f"backend"
            )
        elif pd.isna(r.random):
            continue  # no random-policy score for this env: the seed count is the check
        elif r.threshold <= r.random:
            lines.append(f"{name}: threshold {r.threshold:.1f} is reached by a random policy ({r.random:.1f})")
        elif r.threshold < r.random + MIN_TEETH * (iqm - r.random):
            lines.append(
                f"{name}: threshold {r.threshold:.1f} is less than {MIN_TEETH:.0%} of the way from a random policy "
                f"({r.random:.1f}) to the recorded IQM ({iqm:.1f}): the seeds disagree too much at this budget; "
                f"a larger budget, or no threshold where exact parity covers the algorithm"
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

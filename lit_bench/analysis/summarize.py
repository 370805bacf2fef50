"""A sweep's results as tables (frames in, frames out): one row per run, per config, and per lit-vs-SB3 pair.

Runs are grouped by (sweep, algo, backend, env, config), never by seed number alone. "Final" is ``aggregate.FINAL``;
scores across seeds are IQMs with stratified-bootstrap 95% CIs (fixed ``seed``, so tables are reproducible), flagged
under ``aggregate.MIN_SEEDS_FOR_CI`` seeds; SB3's reference is taken at the runs' own budget.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from lit_bench.analysis import aggregate as agg
from lit_bench.analysis import cache
from lit_bench.analysis.load import METRICS, RUN_COLUMNS
from lit_bench.analysis.reference import reference_at_budget, reference_score

GROUP = ["sweep", "algo", "backend", "env", "config_id"]  # one row per config: all its seeds, nothing else
PAIR = ["sweep", "algo", "env", "variant"]  # lit and SB3 runs of the same config (the backend is not a variant)


@dataclass(frozen=True)
class Returns:
    """Every run's evaluation returns (``mean_return`` rows with a value) as arrays, grouped by run.

    Built in one pass over the long table (its rows of a run are contiguous when it comes from ``load``): filtering,
    grouping or factorizing its string columns costs ~0.5 s per use at 10,000 runs (1M rows), this ~0.05 s once.
    """

    run_dirs: np.ndarray  # the runs, in the order they first appear (as groupby(sort=False))
    info: pd.DataFrame  # one row per run: the long table's run columns (GROUP, variant, seed, status, ...)
    order: np.ndarray  # positions into timesteps/values, grouped by run (file order within a run)
    bounds: np.ndarray  # run k's positions: order[bounds[k]:bounds[k + 1]]
    timesteps: np.ndarray
    values: np.ndarray

    @classmethod
    def of(cls, evals: pd.DataFrame) -> Returns:
        rows = np.flatnonzero((evals.metric == "mean_return").to_numpy(bool) & evals.value.notna().to_numpy())
        dirs = evals.run_dir.to_numpy(object)[rows]
        starts = np.flatnonzero(np.r_[True, dirs[1:] != dirs[:-1]]) if dirs.size else np.zeros(0, dtype=int)
        block_runs, run_dirs = pd.factorize(dirs[starts])  # (a run split over several blocks still gets one code)
        codes = np.repeat(block_runs, np.diff(np.r_[starts, dirs.size]))
        order = np.argsort(codes, kind="stable")
        bounds = np.searchsorted(codes[order], np.arange(len(run_dirs) + 1))  # (code -1, no run dir, comes first)
        info = evals.iloc[rows[order[bounds[:-1]]]].drop(columns=["timesteps", "metric", "value"])
        return cls(np.asarray(run_dirs, dtype=object), info.reset_index(drop=True), order, bounds,
                   evals.timesteps.to_numpy(float)[rows], evals.value.to_numpy(float)[rows])

    @classmethod
    def of_parsed(cls, parsed: cache.Parsed, runs: pd.DataFrame) -> Returns:
        """``Returns.of(evals)`` without the long table: from the parsed runs and their ``load.runs_table`` (damaged
        runs left out, as ``load.evaluations_table`` does). The long table's string columns are most of a report's
        memory and ~0.3 s at 10,000 runs."""
        column = METRICS.index("mean_return")
        value = parsed.values[:, column]
        usable = (runs.status != "damaged").to_numpy(bool)
        rows = np.flatnonzero(parsed.present[parsed.eval_run, column] & usable[parsed.eval_run] & ~np.isnan(value))
        run = parsed.eval_run[rows]  # (in order: a run's rows are contiguous, in file order)
        starts = np.flatnonzero(np.r_[True, run[1:] != run[:-1]]) if run.size else np.zeros(0, dtype=np.int64)
        info = pd.DataFrame({c: runs[c].to_numpy()[run[starts]] for c in RUN_COLUMNS})
        return cls(info.run_dir.to_numpy(object), info, np.arange(run.size), np.r_[starts, run.size],
                   parsed.timesteps[rows], value[rows])

    def of_runs(self, runs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(positions, codes)`` of the points of ``runs`` (indices): code i for the points of ``runs[i]``."""
        lengths = self.bounds[runs + 1] - self.bounds[runs]
        codes = np.repeat(np.arange(len(runs)), lengths)
        firsts = np.repeat(self.bounds[runs] - (np.cumsum(lengths) - lengths), lengths)
        return self.order[firsts + np.arange(codes.size)], codes


def run_table(runs: pd.DataFrame, evals: pd.DataFrame | None, *, returns: Returns | None = None) -> pd.DataFrame:
    """One row per run with a usable result: group keys, seed, final score (``agg.FINAL``), steps to threshold, fps.

    Only completed runs have a final score; interrupted and incomplete ones still count for steps to threshold.
    ``returns``: ``Returns.of(evals)`` when the caller has it already (``evals`` is then not read).
    """
    returns = returns if returns is not None else Returns.of(evals)
    keys = [*GROUP, "variant", "seed", "env_id", "status", "run_dir"]
    info = runs.drop_duplicates("run_dir").set_index("run_dir", drop=False).loc[returns.run_dirs]  # one lookup
    table = info[keys].reset_index(drop=True)
    steps, values, order, bounds = returns.timesteps, returns.values, returns.order, returns.bounds
    completed = (table.status == "completed").to_numpy()
    thresholds, fps = (pd.to_numeric(info[c], errors="coerce").to_numpy(float) if c in info else
                       np.full(len(info), np.nan) for c in ("threshold", "fps"))
    final, to_threshold = np.full(len(table), np.nan), np.full(len(table), np.nan)
    for k in range(len(table)):
        rows = order[bounds[k]:bounds[k + 1]]
        if completed[k]:
            final[k] = agg.final_score(steps[rows], values[rows])
        to_threshold[k] = agg.steps_to_threshold(steps[rows], values[rows], thresholds[k])
    return table.assign(final=final, steps_to_threshold=to_threshold, fps=np.where(completed, fps, np.nan))


def summary_table(runs: pd.DataFrame, evals: pd.DataFrame | None, *, seed: int = 0,
                  per_run: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per (sweep, algo, backend, env, config): run counts, final IQM [95% CI], SB3's reference at the same
    budget and the ratio to it, steps to threshold, env steps/s. ``per_run``: ``run_table(runs, evals)`` if known
    (``evals`` is then not read)."""
    per_run = run_table(runs, evals) if per_run is None else per_run
    results_of = {group_key(key): group for key, group in per_run.groupby(GROUP, sort=False, dropna=False)}
    rows = []
    for key, group_runs in runs.groupby(GROUP, sort=True, dropna=False):
        identity = dict(zip(GROUP, key))
        results = results_of.get(group_key(key), per_run.iloc[:0])  # grouped once, not a merge per config
        env_id = next((e for e in group_runs.env_id if isinstance(e, str)), None)
        budget = number(group_runs.get("budget"))
        if not np.isfinite(budget):
            budget = number(group_runs.get("timesteps"))
        finals = results.final.dropna().to_numpy()
        scores = _final_scores(finals, seed)
        rows.append({
            **identity, "variant": str(group_runs.variant.iloc[0]), "env_id": env_id, "seeds": int(finals.size),
            **_status_counts(group_runs.status), "budget": budget, **scores,
            "threshold": number(group_runs.get("threshold")),
            **_threshold_columns(results.steps_to_threshold.to_numpy(float)), **_fps_columns(results.fps.dropna()),
            **_reference_columns(str(identity["algo"]), env_id, budget, scores["final_iqm"]),
        })
    return pd.DataFrame(rows)


def _final_scores(finals: np.ndarray, seed: int) -> dict[str, Any]:
    point, low, high = agg.stratified_bootstrap_ci(finals, agg.iqm, seed=seed) if finals.size else (
        np.nan, np.nan, np.nan)
    if finals.size < 2:
        low = high = np.nan  # one value has no interval
    return {"final_iqm": point, "ci_low": low, "ci_high": high,
            "ci_flagged": bool(finals.size < agg.MIN_SEEDS_FOR_CI),
            "final_mean": float(np.mean(finals)) if finals.size else np.nan}


def _status_counts(status: pd.Series) -> dict[str, int]:
    return {"failed": int((status == "failed").sum()),
            "incomplete": int(status.isin(["incomplete", "interrupted", "pruned"]).sum()),  # pruned: an Optuna trial
            "damaged": int((status == "damaged").sum())}


def _threshold_columns(to_threshold: np.ndarray) -> dict[str, Any]:
    reached = np.isfinite(to_threshold)
    return {"steps_to_threshold_median": float(np.median(to_threshold[reached])) if reached.any() else np.nan,
            "solved_seeds": int(reached.sum()), "threshold_runs": int(to_threshold.size)}


def _fps_columns(fps: pd.Series) -> dict[str, float]:
    if fps.empty:
        return {"fps_median": np.nan, "fps_low": np.nan, "fps_high": np.nan}
    return {"fps_median": float(fps.median()), "fps_low": float(fps.min()), "fps_high": float(fps.max())}


def _reference_columns(algo: str, env_id: str | None, budget: float, point: float) -> dict[str, Any]:
    """SB3's benchmark score and its value at ``budget`` (when the reference curves have one), and the ratio."""
    ref = reference_score(algo, env_id) if env_id else None
    at_budget = reference_at_budget(algo, env_id, budget) if env_id and np.isfinite(budget) else None
    return {
        "sb3_reference": ref.score if ref else np.nan,
        "sb3_reference_budget": ref.budget if ref else np.nan,
        "sb3_reference_env": ref.reference_env_id if ref else None,
        "reference_same_version": ref.same_version if ref else None,
        "reference_at_budget": at_budget.score if at_budget else np.nan,
        "reference_at_budget_how": at_budget.how if at_budget else None,
        "reference_at_budget_source": at_budget.source if at_budget else None,
        "ratio_to_reference": point / at_budget.score if at_budget and at_budget.score else np.nan,
    }


def comparison_table(runs: pd.DataFrame, evals: pd.DataFrame | None, *, seed: int = 0,
                     per_run: pd.DataFrame | None = None) -> pd.DataFrame:
    """lit vs SB3 for every (sweep, algo, env, variant) that ran on both backends, paired by seed (``per_run``:
    ``run_table(runs, evals)`` if known)."""
    per_run = (run_table(runs, evals) if per_run is None else per_run).dropna(subset=["final"])
    per_run = per_run.assign(side=np.where(per_run.backend == "sb3", "sb3", "lit"))
    rows = []
    for key, pair in per_run.groupby(PAIR, sort=True):
        sides = {side: runs_.set_index("seed") for side, runs_ in pair.groupby("side")}
        if set(sides) != {"lit", "sb3"}:
            continue
        if any(s.index.duplicated().any() or s.backend.nunique() > 1 for s in sides.values()):
            print(f"warning: {dict(zip(PAIR, key))}: several runs per seed and backend; not compared",
                  file=sys.stderr)
            continue
        result = agg.paired_comparison(sides["lit"].final.to_dict(), sides["sb3"].final.to_dict(), seed=seed)
        if result is None:
            continue
        fps_ratio = agg.ratio_spread(sides["lit"].fps.to_dict(), sides["sb3"].fps.to_dict())
        rows.append({
            **dict(zip(PAIR, key)), "env_id": pair.env_id.iloc[0], "n": len(result.seeds), "seeds": result.seeds,
            "lit_iqm": result.lit_iqm, "sb3_iqm": result.sb3_iqm, "differences": result.differences,
            "iqm_difference": result.iqm_difference, "ci_low": result.ci_low, "ci_high": result.ci_high,
            "ci_flagged": result.ci_flagged, "probability_of_improvement": result.probability_of_improvement,
            "verdict": result.verdict, "fps_ratio_median": fps_ratio[0], "fps_ratio_min": fps_ratio[1],
            "fps_ratio_max": fps_ratio[2],
        })
    return pd.DataFrame(rows)


def curve_bands(evals: pd.DataFrame | None, summary: pd.DataFrame, *, seed: int = 0, n_points: int = 50,
                n_boot: int = 300, returns: Returns | None = None) -> dict[Any, pd.DataFrame]:
    """Per summary row (by its index): the IQM [95% CI] band of its runs' evaluation returns on an even grid up to
    its shortest run (damaged runs left out); a row without evaluations has none. ``returns``: ``Returns.of(evals)``
    when the caller has it already (``evals`` is then not read)."""
    returns = returns if returns is not None else Returns.of(evals)
    usable = returns.info[returns.info.status != "damaged"]
    runs_of = {group_key(key): group.index.to_numpy() for key, group in usable.groupby(GROUP, sort=False, dropna=False)}
    bands = {}
    for index, row in summary.iterrows():
        runs = runs_of.get(group_key(tuple(row[k] for k in GROUP)))
        if runs is None:
            continue
        runs = runs[np.argsort(returns.run_dirs[runs].astype(str), kind="stable")]  # sorted, as curves_on_grid
        positions, codes = returns.of_runs(runs)
        steps = returns.timesteps[positions]
        last = np.full(len(runs), -np.inf)
        np.fmax.at(last, codes, steps)
        grid = agg.common_grid(last, n_points=n_points)
        on_grid = agg.runs_on_grid(codes, len(runs), steps, returns.values[positions], grid)
        bands[index] = agg.iqm_band(on_grid, grid, n_boot=n_boot, seed=seed)
    return bands


def group_key(values: tuple) -> tuple:
    """A group key to look up (NaN, which equals nothing, as None)."""
    return tuple(None if pd.isna(v) else v for v in values)


def number(values: pd.Series | float | None) -> float:
    """The first number among ``values`` (NaN when none)."""
    if values is None:
        return np.nan
    numbers = pd.to_numeric(pd.Series(values).reset_index(drop=True), errors="coerce").dropna()
    return float(numbers.iloc[0]) if not numbers.empty else np.nan

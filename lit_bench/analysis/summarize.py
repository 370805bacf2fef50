"""A sweep's results as tables (frames in, frames out): one row per run, per config, and per lit-vs-SB3 pair.

Runs are grouped by (sweep, algo, backend, env, config), never by seed number alone. "Final" is ``stats.FINAL``;
scores across seeds are IQMs with stratified-bootstrap 95% CIs (fixed ``seed``, so tables are reproducible), flagged
under ``stats.MIN_SEEDS_FOR_CI`` seeds; the ratio to SB3 is against the config's own ``backend=sb3`` runs when
there are any, else the RL Zoo's at the runs' own budget (``with_ratio``).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from lit_bench import stats
from lit_bench.analysis import cache, variants
from lit_bench.analysis.eval_csv import METRICS
from lit_bench.analysis.load import RUN_COLUMNS
from lit_bench.analysis.paired import one_run_per_seed, paired_columns
from lit_bench.analysis.reference import reference_at_budget, reference_score
from lit_bench.config.identity import BATCHED

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
        return cls(
            np.asarray(run_dirs, dtype=object),
            info.reset_index(drop=True),
            order,
            bounds,
            evals.timesteps.to_numpy(float)[rows],
            evals.value.to_numpy(float)[rows],
        )

    @classmethod
    def of_parsed(cls, parsed: cache.Parsed, runs: pd.DataFrame, *, x: str = "timesteps") -> Returns:
        """``Returns.of(evals)`` without the long table: from the parsed runs and their ``load.runs_table`` (damaged
        runs left out, as ``load.evaluations_table`` does). The long table's string columns are most of a report's
        memory and ~0.3 s at 10,000 runs. ``x``: another eval.csv column in place of ``timesteps`` (e.g.
        ``wall_time_s``, for curves against wall-clock time; points without it left out)."""
        column = METRICS.index("mean_return")
        value = parsed.values[:, column]
        steps = parsed.timesteps if x == "timesteps" else parsed.values[:, METRICS.index(x)]
        usable = (runs.status != "damaged").to_numpy(bool)
        rows = np.flatnonzero(
            parsed.present[parsed.eval_run, column] & usable[parsed.eval_run] & ~np.isnan(value) & ~np.isnan(steps)
        )
        run = parsed.eval_run[rows]  # (in order: a run's rows are contiguous, in file order)
        starts = np.flatnonzero(np.r_[True, run[1:] != run[:-1]]) if run.size else np.zeros(0, dtype=np.int64)
        info = pd.DataFrame({c: runs[c].to_numpy()[run[starts]] for c in RUN_COLUMNS})
        return cls(
            info.run_dir.to_numpy(object), info, np.arange(run.size), np.r_[starts, run.size], steps[rows], value[rows]
        )

    def of_runs(self, runs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(positions, codes)`` of the points of ``runs`` (indices): code i for the points of ``runs[i]``."""
        lengths = self.bounds[runs + 1] - self.bounds[runs]
        codes = np.repeat(np.arange(len(runs)), lengths)
        firsts = np.repeat(self.bounds[runs] - (np.cumsum(lengths) - lengths), lengths)
        return self.order[firsts + np.arange(codes.size)], codes


def run_table(runs: pd.DataFrame, evals: pd.DataFrame | None, *, returns: Returns | None = None) -> pd.DataFrame:
    """One row per run with a usable result: group keys, seed, final score (``stats.FINAL``), steps to threshold, fps.

    Only completed runs have a final score; interrupted and incomplete ones still count for steps to threshold.
    ``returns``: ``Returns.of(evals)`` when the caller has it already (``evals`` is then not read).
    """
    returns = returns if returns is not None else Returns.of(evals)
    keys = [*GROUP, "variant", "seed", "env_id", "status", "run_dir"]
    info = runs.drop_duplicates("run_dir").set_index("run_dir", drop=False).loc[returns.run_dirs]  # one lookup
    table = info[keys].reset_index(drop=True)
    steps, values, order, bounds = returns.timesteps, returns.values, returns.order, returns.bounds
    completed = (table.status == "completed").to_numpy()
    thresholds, fps_wall, fps_cpu = (
        pd.to_numeric(info[c], errors="coerce").to_numpy(float) if c in info else np.full(len(info), np.nan)
        for c in ("threshold", "fps", "cpu_fps")
    )
    # the speed compared: env steps per CPU-second where the run recorded it (a busy machine changes it far less
    # than the wall-clock one, which older runs have only)
    fps = np.where(np.isfinite(fps_cpu), fps_cpu, fps_wall)
    clock = np.where(np.isfinite(fps_cpu), "cpu", "wall")
    final, to_threshold = np.full(len(table), np.nan), np.full(len(table), np.nan)
    for k in range(len(table)):
        rows = order[bounds[k] : bounds[k + 1]]
        if completed[k]:
            final[k] = stats.final_score(steps[rows], values[rows])
        to_threshold[k] = stats.steps_to_threshold(steps[rows], values[rows], thresholds[k])
    return table.assign(
        final=final,
        steps_to_threshold=to_threshold,
        fps=np.where(completed, fps, np.nan),
        fps_wall=np.where(completed, fps_wall, np.nan),
        fps_clock=clock,
    )


def summary_table(
    runs: pd.DataFrame, evals: pd.DataFrame | None, *, seed: int = 0, per_run: pd.DataFrame | None = None
) -> pd.DataFrame:
    """One row per (sweep, algo, backend, env, config): run counts, final IQM [95% CI], SB3's reference at the same
    budget (a variant's: its base's) and the ratio to it, steps to threshold, env steps/s. ``per_run``:
    ``run_table(runs, evals)`` if known (``evals`` is then not read)."""
    per_run = run_table(runs, evals) if per_run is None else per_run
    results_of = {group_key(key): group for key, group in per_run.groupby(GROUP, sort=False, dropna=False)}
    rows, run_dirs = [], []
    for key, group_runs in runs.groupby(GROUP, sort=True, dropna=False):
        identity = dict(zip(GROUP, key))
        results = results_of.get(group_key(key), per_run.iloc[:0])  # grouped once, not a merge per config
        env_id = next((e for e in group_runs.env_id if isinstance(e, str)), None)
        base = next((b for b in group_runs.get("base", ()) if isinstance(b, str)), None)  # a variant's base algo
        budget = number(group_runs.get("budget"))
        # the env steps its completed runs trained (SB3 and lit_sb3 finish the last rollout: more than a budget that
        # is not a multiple of it; ARS its last update's episodes, so its seeds differ: their median): what the run
        # is labelled with and compared at
        completed = group_runs[group_runs.status == "completed"]
        steps = pd.to_numeric(completed.timesteps, errors="coerce").dropna() if "timesteps" in completed else None
        trained = float(steps.median()) if steps is not None and not steps.empty else np.nan
        if not np.isfinite(budget):
            budget = number(group_runs.get("timesteps"))
        if not np.isfinite(trained):
            trained = budget
        finals = results.final.dropna().to_numpy()
        scores = _final_scores(finals, seed)
        run_dirs.append(list(completed.run_dir) + list(group_runs.run_dir[group_runs.status != "completed"]))
        rows.append(
            {
                **identity,
                "variant": str(group_runs.variant.iloc[0]),
                "base": base,
                "env_id": env_id,
                "seeds": int(finals.size),
                **_status_counts(group_runs.status),
                "budget": budget,
                "trained": trained,
                **scores,
                "threshold": number(group_runs.get("threshold")),
                **_threshold_columns(results.steps_to_threshold.to_numpy(float)),
                **_fps_columns(results),
                **_reference_columns(base or str(identity["algo"]), env_id, trained),  # a variant: its base's
                "versions": mixed_versions(completed.get("versions", pd.Series(dtype=object))),
                "batched_seeds": int((completed.get(BATCHED, pd.Series(dtype=object)) == True).sum()),  # noqa: E712
            }
        )
    return with_ratio(in_value_order(pd.DataFrame(rows), run_dirs))


def in_value_order(summary: pd.DataFrame, run_dirs: list[list[str]]) -> pd.DataFrame:
    """The summary with a ``defaults`` column (the composed defaults each config keeps of the hyperparameters
    other configs set, read from its runs' ``config.yaml``: ``variants.kept_defaults``), the configs of each
    (sweep, algo, backend, env) in the order of their hyperparameter values (a learning-rate sweep reads top to
    bottom, the defaults in their place), then by config_id."""
    if summary.empty:
        return summary.assign(defaults=[])
    names = summary.variant.astype(str).tolist()
    keys = variants.keys_of(names)
    identity = [tuple(map(str, t)) for t in zip(summary.sweep, summary.algo, summary.env)]
    kept = variants.kept_defaults([(*t, v) for t, v in zip(identity, names)], run_dirs, keys)
    block = summary.groupby(GROUP[:-1], sort=False, dropna=False).ngroup().to_numpy()  # (grouped: contiguous)
    order = sorted(
        range(len(summary)),
        key=lambda i: (block[i], variants.order_key(names[i], kept[i], keys), str(summary.config_id.iloc[i])),
    )
    summary = summary.assign(defaults=kept)
    columns = list(summary.columns)
    columns.insert(columns.index("variant") + 1, columns.pop())
    return summary[columns].iloc[order].reset_index(drop=True)


def with_ratio(summary: pd.DataFrame) -> pd.DataFrame:
    """The ratio of each config's final IQM to SB3's, and what it is against (``ratio_against``, ``ratio_n``).

    SB3 is the runs of ``backend=sb3`` of the same config (same sweep, algo, env, variant) when there are any: as
    many seeds as they have. Otherwise the RL Zoo's benchmark when it was trained for exactly this budget (one agent:
    n=1). The Zoo's single-seed eval curve at a budget below its own is shown beside, never taken as the
    denominator: one seed part-way through training says little about SB3 at that budget.
    """
    if summary.empty:
        return summary.assign(ratio_to_reference=[], ratio_against=[], ratio_n=[])
    sb3 = summary[(summary.backend == "sb3") & (summary.seeds > 0)].set_index(PAIR)
    sb3 = sb3[~sb3.index.duplicated()]
    ratio: list[float] = []
    against: list[str | None] = []
    n: list[int] = []
    for r in summary.itertuples():
        key = tuple(getattr(r, k) for k in PAIR)
        if r.backend != "sb3" and key in sb3.index:
            other = sb3.loc[key]
            ratio.append(r.final_iqm / other.final_iqm if other.final_iqm else np.nan)
            against.append("SB3 runs of this config")
            n.append(int(other.seeds))
        elif np.isfinite(r.sb3_reference) and r.sb3_reference_budget == r.budget and r.sb3_reference:
            ratio.append(r.final_iqm / r.sb3_reference)
            against.append("RL Zoo benchmark (1 agent)")
            n.append(1)
        else:
            ratio.append(np.nan)
            against.append(None)
            n.append(0)
    return summary.assign(ratio_to_reference=ratio, ratio_against=against, ratio_n=n)


def _final_scores(finals: np.ndarray, seed: int) -> dict[str, Any]:
    point, low, high = (
        stats.stratified_bootstrap_ci(finals, stats.iqm, seed=seed) if finals.size else (np.nan, np.nan, np.nan)
    )
    if finals.size < 2:
        low = high = np.nan  # one value has no interval
    return {
        "final_iqm": point,
        "ci_low": low,
        "ci_high": high,
        "ci_flagged": bool(finals.size < stats.MIN_SEEDS_FOR_CI),
        "final_mean": float(np.mean(finals)) if finals.size else np.nan,
    }


def mixed_versions(recorded: pd.Series) -> str:
    """What a config's completed runs differ in, of the versions that change numbers (runs' ``versions`` column:
    JSON text): ``torch 1.13.0 (1) / 2.13.0 (3)``, packages separated by semicolons; "" when they agree (a version a
    run did not record is no difference)."""
    seen: dict[str, dict[str, int]] = {}
    for text in recorded.dropna():
        for package, version in json.loads(text).items():
            counts = seen.setdefault(package, {})
            counts[version] = counts.get(version, 0) + 1
    return "; ".join(
        f"{package} " + " / ".join(f"{v} ({n})" for v, n in sorted(counts.items()))
        for package, counts in seen.items()
        if len(counts) > 1
    )


def _status_counts(status: pd.Series) -> dict[str, int]:
    return {
        "failed": int((status == "failed").sum()),
        "incomplete": int(status.isin(["incomplete", "interrupted", "pruned"]).sum()),  # pruned: an Optuna trial
        "damaged": int((status == "damaged").sum()),
    }


def _threshold_columns(to_threshold: np.ndarray) -> dict[str, Any]:
    reached = np.isfinite(to_threshold)
    return {
        "steps_to_threshold_median": float(np.median(to_threshold[reached])) if reached.any() else np.nan,
        "solved_seeds": int(reached.sum()),
        "threshold_runs": int(to_threshold.size),
    }


def _fps_columns(results: pd.DataFrame) -> dict[str, Any]:
    """Median and min-max over a config's runs of its speed: per CPU-second when every run recorded its CPU time,
    else the wall-clock speed of all of them (one clock per config)."""
    timed = results[np.isfinite(results.fps.to_numpy(float))]
    clock = "cpu" if len(timed) and (timed.fps_clock == "cpu").all() else "wall"
    fps = (timed.fps if clock == "cpu" else timed.fps_wall).dropna()
    if fps.empty:
        return {"fps_median": np.nan, "fps_low": np.nan, "fps_high": np.nan, "fps_clock": clock}
    return {
        "fps_median": float(fps.median()),
        "fps_low": float(fps.min()),
        "fps_high": float(fps.max()),
        "fps_clock": clock,
    }


def _reference_columns(algo: str, env_id: str | None, budget: float) -> dict[str, Any]:
    """The RL Zoo's benchmark score and its single-seed value at ``budget`` (when its curve has one)."""
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
    }


def comparison_table(
    runs: pd.DataFrame,
    evals: pd.DataFrame | None,
    *,
    seed: int = 0,
    per_run: pd.DataFrame | None = None,
    summary: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """lit vs SB3 for every (sweep, algo, env, variant) that ran on both backends, paired by seed (``per_run``:
    ``run_table(runs, evals)`` if known), in the order of ``summary`` (``summary_table``'s: by hyperparameter
    values) when given, else by name."""
    per_run = (run_table(runs, evals) if per_run is None else per_run).dropna(subset=["final"])
    per_run = per_run.assign(side=np.where(per_run.backend == "sb3", "sb3", "lit"))
    rows = []
    for key, pair in per_run.groupby(PAIR, sort=True):
        sides = dict(tuple(pair.groupby("side")))
        if set(sides) != {"lit", "sb3"}:
            continue
        if not all(one_run_per_seed(s) and s.backend.nunique() == 1 for s in sides.values()):
            print(f"warning: {dict(zip(PAIR, key))}: several runs per seed and backend; not compared", file=sys.stderr)
            continue
        columns = paired_columns(sides["lit"], sides["sb3"], seed=seed, name="lit")
        if columns is not None:
            rows.append(
                {
                    **dict(zip(PAIR, key)),
                    "env_id": pair.env_id.iloc[0],
                    "n": columns.pop("n"),
                    "seeds": columns.pop("seeds"),
                    "lit_iqm": columns.pop("a_iqm"),
                    "sb3_iqm": columns.pop("b_iqm"),
                    **columns,
                }
            )  # (the columns of comparison.csv, in order)
    if summary is not None and rows:
        place = {k: i for i, k in enumerate(dict.fromkeys(zip(*(summary[c] for c in PAIR))))}
        rows.sort(key=lambda r: place.get(tuple(r[c] for c in PAIR), len(place)))  # (stable: by name otherwise)
    return pd.DataFrame(rows)


def curve_bands(
    evals: pd.DataFrame | None,
    summary: pd.DataFrame,
    *,
    seed: int = 0,
    n_points: int = 50,
    n_boot: int = 300,
    returns: Returns | None = None,
) -> dict[Any, pd.DataFrame]:
    """Per summary row (by its index): the IQM [95% CI] band of its runs' evaluation returns on their shared
    evaluation steps (``attrs[stats.AT_EVALUATIONS]`` True), else on an even grid up to its shortest run
    (damaged runs left out; only the completed ones where there are any: ``stats.band_runs``); a row without
    evaluations has none. ``returns``: ``Returns.of(evals)`` when the caller has it already (``evals`` is then
    not read)."""
    returns = returns if returns is not None else Returns.of(evals)
    usable = returns.info[returns.info.status != "damaged"]
    runs_of = {
        group_key(key): group.index.to_numpy()[stats.band_runs(group.status.to_numpy())]
        for key, group in usable.groupby(GROUP, sort=False, dropna=False)
    }
    bands = {}
    for index, row in summary.iterrows():
        runs = runs_of.get(group_key(tuple(row[k] for k in GROUP)))
        if runs is None:
            continue
        runs = runs[np.argsort(returns.run_dirs[runs].astype(str), kind="stable")]  # sorted, as curves_on_grid
        positions, codes = returns.of_runs(runs)
        steps = returns.timesteps[positions]
        grid, at_evaluations = stats.evaluation_grid(codes, len(runs), steps, n_points=n_points)
        on_grid = stats.runs_on_grid(codes, len(runs), steps, returns.values[positions], grid)
        bands[index] = stats.iqm_band(on_grid, grid, n_boot=n_boot, seed=seed)
        bands[index].attrs[stats.AT_EVALUATIONS] = at_evaluations  # (the curve's points are evaluations: markers)
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

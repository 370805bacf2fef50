"""Training metrics (``train/metrics.csv``: rollout returns, ``train/*`` losses, on both backends) as a long table,
and their curves across seeds on a matplotlib ``Axes``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from lit_bench import stats
from lit_bench.analysis import style
from lit_bench.analysis.load import RUN_COLUMNS, load_runs
from lit_bench.analysis.metrics_csv import MetricRows, metric_names, metrics_csvs, read_metrics_csvs
from lit_bench.store.rundir import RunDir

PREFERRED = (
    "rollout/ep_rew_mean",
    "train/loss",
    "train/value_loss",
    "train/critic_loss",
    "train/actor_loss",
    "train/entropy_loss",
    "train/ent_coef",
    "train/approx_kl",
)  # drawn first when present


def read_metrics(run_dir: Path, metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """One run's ``train/metrics.csv`` as ``[timesteps, metric, value]`` (rows without the metric left out); empty
    when the file is absent or unreadable."""
    long = _long(list(read_metrics_csvs([RunDir(run_dir).metrics_csv], metrics)))
    return long.drop(columns="run").reset_index(drop=True)


def _long(parts: list[MetricRows]) -> pd.DataFrame:
    """``[run, timesteps, metric, value]`` of the rows of ``parts``: a row per metric a file's row has, each run's
    rows together, in its file's order of columns, then of rows."""
    pieces = [
        (part.run[keep], part.timesteps[keep], name, part.values[keep, j])
        for part in parts
        for j, name in enumerate(part.names)
        if (keep := ~np.isnan(part.values[:, j]) & ~np.isnan(part.timesteps)).any()
    ]
    if not pieces:
        return pd.DataFrame({"run": [], "timesteps": [], "metric": [], "value": []})
    run = np.concatenate([r for r, _, _, _ in pieces])
    order = np.argsort(run, kind="stable")
    names = np.repeat(np.array([n for _, _, n, _ in pieces], dtype=object), [r.size for r, _, _, _ in pieces])
    return pd.DataFrame(
        {
            "run": run[order],
            "timesteps": np.concatenate([t for _, t, _, _ in pieces])[order],
            "metric": names[order],
            "value": np.concatenate([v for _, _, _, v in pieces])[order],
        }
    )


def load_metrics(runs: pd.DataFrame | Iterable[str | Path], metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """The training metrics of runs (``load_runs``' table, or paths to load it from) as the long table
    ``[<run identity>, timesteps, metric, value]`` (``metrics``: only these); runs without the file add nothing."""
    table = runs if isinstance(runs, pd.DataFrame) else load_runs(runs, hyperparameters=False)
    table = table[table.status != "damaged"]
    long = _long(list(read_metrics_csvs(metrics_csvs(table.run_dir.astype(str).tolist()), metrics)))
    identity = table[RUN_COLUMNS].iloc[long.run.to_numpy()].reset_index(drop=True)
    return pd.concat([identity, long.drop(columns="run")], axis=1)


def run_metric_names(runs: pd.DataFrame) -> list[str]:
    """The metric names in the ``train/metrics.csv`` headers of ``runs`` (``load_runs``' table), in file order."""
    return metric_names(metrics_csvs(runs.run_dir.astype(str).tolist()))


def metric_band(long: pd.DataFrame, metric: str, *, n_points: int = 40, seed: int = 0) -> pd.DataFrame:
    """IQM [95% CI] across runs of one metric of one config (``load_metrics`` rows), on a grid up to its shortest
    run (only the completed ones where there are any: ``stats.band_runs``; see ``stats.iqm_band``); empty
    (float columns) when no run has it. ``config_bands`` makes the same bands of many configs from the files."""
    rows = long[long.metric == metric]
    if "status" in rows:
        rows = rows[stats.band_runs(rows.status.to_numpy())]
    codes, dirs = pd.factorize(rows.run_dir, sort=True)
    return _band(codes, len(dirs), rows.timesteps.to_numpy(float), rows.value.to_numpy(float), n_points, seed)


def _band(
    codes: np.ndarray, n_runs: int, steps: np.ndarray, values: np.ndarray, n_points: int, seed: int
) -> pd.DataFrame:
    """``metric_band`` of points numbered by run (``codes``: 0 .. n_runs - 1, in the order of the runs' paths)."""
    if not n_runs:  # (float columns: an empty band draws as nothing, as any other band)
        return pd.DataFrame({c: np.array([], dtype=float) for c in ("timesteps", "iqm", "ci_low", "ci_high", "n_runs")})
    last = np.full(n_runs, -np.inf)
    np.fmax.at(last, codes, steps)
    grid = stats.common_grid(last.tolist(), n_points=n_points)
    matrix = stats.runs_on_grid(codes, n_runs, steps, values, grid)
    return stats.iqm_band(matrix, grid, n_boot=300, seed=seed)


def config_bands(
    runs: pd.DataFrame, metrics: Sequence[str], *, n_points: int = 40, seed: int = 0
) -> dict[tuple[str, str, str, str], dict[str, pd.DataFrame]]:
    """``metric_band`` of each metric for each (sweep, algo, variant, backend) of ``runs`` (``load_runs``' table),
    read from the files once, without the long table (the same numbers: ~1M rows of it at 2,500 runs)."""
    table = runs[runs.status != "damaged"]
    keys = ["sweep", "algo", "variant", "backend"]
    table = table[table.groupby(keys, sort=False).status.transform(lambda s: stats.band_runs(s.to_numpy()))]
    table = table.reset_index(drop=True)
    parts = list(read_metrics_csvs(metrics_csvs(table.run_dir.astype(str).tolist()), metrics))
    if not parts:
        return {}
    run = np.concatenate([p.run for p in parts])
    steps = np.concatenate([p.timesteps for p in parts])
    values = np.full((run.size, len(metrics)), np.nan)  # (a header's columns in ``metrics``' order)
    column = {m: j for j, m in enumerate(metrics)}
    start = 0
    for p in parts:
        values[start : start + p.run.size, [column[n] for n in p.names]] = p.values
        start += p.run.size
    grouped = table.groupby(keys, sort=False)
    of_row = grouped.ngroup().to_numpy()[run]
    order = np.argsort(of_row, kind="stable")  # (each config's rows together, once)
    bounds = np.searchsorted(of_row[order], np.arange(grouped.ngroups + 1))
    rank = np.argsort(np.argsort(table.run_dir.to_numpy(str), kind="stable"), kind="stable")  # (paths' order)
    bands: dict[tuple[str, str, str, str], dict[str, pd.DataFrame]] = {}
    for g, key in enumerate(grouped.groups):
        rows = order[bounds[g] : bounds[g + 1]]
        for j, metric in enumerate(metrics):
            has = rows[~np.isnan(values[rows, j]) & ~np.isnan(steps[rows])]
            if has.size:
                used, codes = np.unique(rank[run[has]], return_inverse=True)
                band = _band(codes, used.size, steps[has], values[has, j], n_points, seed)
                bands.setdefault(tuple(map(str, key)), {})[metric] = band  # type: ignore[arg-type]
    return bands


def draw_metric(
    ax: Axes,
    bands: Mapping[str, pd.DataFrame],
    lines: Mapping[str, style.LineStyle],
    metric: str,
    *,
    xlabel: str = "env steps",
) -> Axes:
    """One training metric: an IQM line with its 95% CI band per label, in the labels' styles."""
    from matplotlib.ticker import EngFormatter

    for name, band in bands.items():
        if band.empty:  # a config without this metric (e.g. no episode ended yet): nothing to draw
            continue
        line = lines.get(name, style.LineStyle("C0"))
        ax.plot(band.timesteps, band.iqm, color=line.color, ls=line.linestyle)
        ax.fill_between(band.timesteps, band.ci_low, band.ci_high, color=line.color, alpha=0.15, lw=0)
    ax.set_title(metric)
    ax.set_xlabel(xlabel)
    ax.xaxis.set_major_formatter(EngFormatter(sep=""))
    ax.grid(alpha=0.3)
    return ax


def chosen_metrics(
    long: pd.DataFrame | Sequence[str], wanted: Sequence[str] | None = None, at_most: int = 4
) -> list[str]:
    """The metrics to draw of a long table's (or of these names): ``wanted`` (those present), else the preferred
    ones present, up to ``at_most``."""
    present = list(dict.fromkeys(long.metric if isinstance(long, pd.DataFrame) else long))
    if wanted:
        return [m for m in wanted if m in present]
    return [m for m in PREFERRED if m in present][:at_most]

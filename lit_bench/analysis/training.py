"""Training metrics (``train/metrics.csv``: rollout returns, ``train/*`` losses, on both backends) as a long table,
their curves across seeds on a matplotlib ``Axes``, and the hyperparameters of runs parsed from their configs."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from lit_bench.analysis import aggregate as agg
from lit_bench.analysis import style
from lit_bench.analysis.load import RUN_COLUMNS
from lit_bench.store.rundir import RunDir

STEP_COLUMNS = ("time/total_timesteps", "step")  # env steps of a metrics row (the first present)
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
NOT_HYPERPARAMETERS = {"seed", "out_dir", "sweep", "force", "algo_dir", "algo_name", "env_name", "hydra"}


def read_metrics(run_dir: Path, metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """One run's ``train/metrics.csv`` as ``[timesteps, metric, value]`` (rows without the metric left out); empty
    when the file is absent or unreadable."""
    path = RunDir(run_dir).metrics_csv
    try:
        frame = pd.read_csv(path)
    except (OSError, ValueError, pd.errors.ParserError):
        return pd.DataFrame(columns=["timesteps", "metric", "value"])
    step = next((c for c in STEP_COLUMNS if c in frame), None)
    columns = [c for c in frame.columns if c not in STEP_COLUMNS and (metrics is None or c in metrics)]
    if step is None or not columns:
        return pd.DataFrame(columns=["timesteps", "metric", "value"])
    long = frame.melt(id_vars=[step], value_vars=columns, var_name="metric", value_name="value")
    long["value"] = pd.to_numeric(long.value, errors="coerce")
    return long.dropna(subset=["value", step]).rename(columns={step: "timesteps"})


def load_metrics(runs: pd.DataFrame | Iterable[str | Path], metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """The training metrics of runs (``load_runs``' table, or paths to load it from) as the long table
    ``[<run identity>, timesteps, metric, value]`` (``metrics``: only these); runs without the file add nothing."""
    from lit_bench.analysis.load import load_runs

    table = runs if isinstance(runs, pd.DataFrame) else load_runs(runs, hyperparameters=False)
    frames = []
    for run in table[table.status != "damaged"].itertuples(index=False):
        long = read_metrics(Path(run.run_dir), metrics)
        if not long.empty:
            frames.append(long.assign(**{c: getattr(run, c) for c in RUN_COLUMNS}))
    columns = [*RUN_COLUMNS, "timesteps", "metric", "value"]
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)


def metric_band(long: pd.DataFrame, metric: str, *, n_points: int = 40, seed: int = 0) -> pd.DataFrame:
    """IQM [95% CI] across runs of one metric of one config (``load_metrics`` rows), on a grid up to its shortest
    run (see ``aggregate.iqm_band``)."""
    rows = long[long.metric == metric]
    codes, dirs = pd.factorize(rows.run_dir, sort=True)
    if not len(dirs):
        return pd.DataFrame(columns=["timesteps", "iqm", "ci_low", "ci_high", "n_runs"])
    steps = rows.timesteps.to_numpy(float)
    last = np.full(len(dirs), -np.inf)
    np.fmax.at(last, codes, steps)
    grid = agg.common_grid(last.tolist(), n_points=n_points)
    matrix = agg.runs_on_grid(codes, len(dirs), steps, rows.value.to_numpy(float), grid)
    return agg.iqm_band(matrix, grid, n_boot=300, seed=seed)


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
        line = lines.get(name, style.LineStyle("C0"))
        ax.plot(band.timesteps, band.iqm, color=line.color, ls=line.linestyle)
        ax.fill_between(band.timesteps, band.ci_low, band.ci_high, color=line.color, alpha=0.15, lw=0)
    ax.set_title(metric)
    ax.set_xlabel(xlabel)
    ax.xaxis.set_major_formatter(EngFormatter(sep=""))
    ax.grid(alpha=0.3)
    return ax


def chosen_metrics(long: pd.DataFrame, wanted: Sequence[str] | None = None, at_most: int = 4) -> list[str]:
    """The metrics to draw: ``wanted`` (those present), else the preferred ones present, up to ``at_most``."""
    present = list(dict.fromkeys(long.metric))
    if wanted:
        return [m for m in wanted if m in present]
    return [m for m in PREFERRED if m in present][:at_most]


def flatten(config: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted keys of a config's leaves (lists as JSON text, so that they compare and fit a column)."""
    if not isinstance(config, dict):
        return {prefix: json.dumps(config) if isinstance(config, list) else config}
    out: dict[str, Any] = {}
    for key, value in config.items():
        out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return out


def hyperparameter_columns(runs: pd.DataFrame) -> pd.DataFrame:
    """One column per hyperparameter whose value differs among ``runs`` (``load_runs``' table), parsed from each
    run's ``config.yaml`` (one read per config: its seeds share it), named by its dotted key (``algo.gamma``);
    ``NOT_HYPERPARAMETERS`` (seed, paths, names) left out. A run without a readable config gets NaN."""
    if runs.empty:
        return pd.DataFrame(index=runs.index)
    per_config: dict[Any, dict[str, Any]] = {}
    keys = list(zip(runs.config_id, runs.backend))
    for key, run_dir in zip(keys, runs.run_dir):
        if key not in per_config:
            config = RunDir(Path(run_dir)).read_config() or {}
            per_config[key] = {
                k: v for k, v in flatten(config).items() if k.split(".", 1)[0] not in NOT_HYPERPARAMETERS
            }
    table = pd.DataFrame([per_config[k] for k in keys], index=runs.index)
    differing = [c for c in table.columns if table[c].astype(str).nunique(dropna=False) > 1 and c not in runs]
    return table[sorted(differing)]

"""Figures of aggregated results: an axis in, the same axis out, no file I/O (the report saves them)."""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.ticker import EngFormatter


def learning_curves(
    ax: Axes,
    bands: Mapping[str, pd.DataFrame],
    *,
    reference_score: float | None = None,
    reference_budget: float | None = None,
    reference_label: str = "SB3 reference",
    reference_curve: pd.DataFrame | None = None,
    threshold: float | None = None,
    title: str = "",
) -> Axes:
    """One line per label (IQM across seeds) with its 95% CI band.

    :param bands: label -> frame with ``timesteps``, ``iqm``, ``ci_low``, ``ci_high`` (see ``aggregate.curve_band``)
    :param reference_score: SB3's published final score, drawn as a marker at ``reference_budget``
    :param reference_curve: SB3's reference learning curve (``timesteps``, ``mean_reward``), drawn dashed
    :param threshold: the env's solved threshold, drawn as a dotted line
    """
    for label, band in bands.items():
        (line,) = ax.plot(band["timesteps"], band["iqm"], label=f"{label} (IQM, n={int(band['n_runs'].max())})")
        ax.fill_between(band["timesteps"], band["ci_low"], band["ci_high"], color=line.get_color(), alpha=0.2)
    if reference_curve is not None and not reference_curve.empty:
        ax.plot(reference_curve["timesteps"], reference_curve["mean_reward"], "k--", lw=1,
                label=f"{reference_label} curve (1 seed)")
    if reference_score is not None:
        x = reference_budget if reference_budget is not None else ax.get_xlim()[1]
        ax.plot([x], [reference_score], marker="*", ms=14, color="k", ls="none", label=reference_label)
        ax.axhline(reference_score, color="k", lw=0.6, alpha=0.4)
    if threshold is not None:
        ax.axhline(threshold, color="tab:green", ls=":", lw=1, label=f"solved ({threshold:g})")
    ax.set_xlabel("env steps")
    ax.set_ylabel("evaluation return")
    ax.xaxis.set_major_formatter(EngFormatter())
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="best")
    return ax


def final_scores(ax: Axes, summary: pd.DataFrame, *, value: str = "final_iqm", xlabel: str = "final return") -> Axes:
    """Interval plot: one row per label with its point estimate and 95% CI (``<value>``, ``ci_low``, ``ci_high``)."""
    rows = summary.reset_index(drop=True)
    y = range(len(rows))
    ax.errorbar(rows[value], list(y), xerr=[rows[value] - rows["ci_low"], rows["ci_high"] - rows[value]],
                fmt="o", capsize=4)
    if "reference" in rows:
        ax.scatter(rows["reference"], list(y), marker="*", s=120, color="k", label="SB3 reference", zorder=3)
        ax.legend(fontsize="small")
    ax.set_yticks(list(y), rows["label"])
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", alpha=0.3)
    return ax


def throughput(ax: Axes, summary: pd.DataFrame) -> Axes:
    """Bar chart of env steps/s per label (``label``, ``fps``)."""
    ax.barh(summary["label"], summary["fps"], color="tab:blue")
    ax.set_xlabel("env steps / s")
    ax.xaxis.set_major_formatter(EngFormatter())
    ax.grid(axis="x", alpha=0.3)
    return ax


def new_axes(width: float = 7.0, height: float = 4.5) -> Axes:
    """A fresh figure with one axis (the caller owns and closes the figure)."""
    _, ax = plt.subplots(figsize=(width, height), layout="constrained")
    return ax

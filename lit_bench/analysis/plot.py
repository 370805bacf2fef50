"""Figures of aggregated results: an axis in, the same axis out, no file I/O (the report saves them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.ticker import EngFormatter


@dataclass(frozen=True)
class ReferenceMark:
    """SB3's published result for one algorithm: final ``score`` at ``budget`` steps, optionally its curve."""

    score: float
    budget: float
    label: str = "SB3 reference"
    curve: pd.DataFrame | None = None  # columns timesteps, mean_reward


def learning_curves(
    ax: Axes,
    bands: Mapping[str, pd.DataFrame],
    *,
    references: Mapping[str, ReferenceMark] | None = None,
    threshold: float | None = None,
    title: str = "",
) -> Axes:
    """One line per label (IQM across seeds) with its 95% CI band, and SB3's reference in the same colour.

    :param bands: label -> frame with ``timesteps``, ``iqm``, ``ci_low``, ``ci_high``, ``n_runs``
        (see ``aggregate.curve_band``)
    :param references: label -> SB3's reference for that line's algorithm: a star at its budget when the budget
        lies inside the plotted range, else a dotted level marked with the budget; its curve dashed when given
    :param threshold: the env's solved threshold, drawn as a dotted green line
    """
    colors = {}
    x_max = 0.0
    for label, band in bands.items():
        (line,) = ax.plot(band["timesteps"], band["iqm"], label=f"{label} (IQM, n={int(band['n_runs'].max())})")
        ax.fill_between(band["timesteps"], band["ci_low"], band["ci_high"], color=line.get_color(), alpha=0.2)
        colors[label] = line.get_color()
        x_max = max(x_max, float(band["timesteps"].max()))
    for label, ref in (references or {}).items():
        color = colors.get(label, "k")
        if ref.curve is not None and not ref.curve.empty:
            shown = ref.curve[ref.curve["timesteps"] <= x_max * 1.05]  # our budget sets the x-range
            ax.plot(shown["timesteps"], shown["mean_reward"], ls="--", lw=1, color=color,
                    label=f"{ref.label} curve (1 seed)")
        if ref.budget <= x_max * 1.05:
            ax.plot([ref.budget], [ref.score], marker="*", ms=14, color=color, mec="k", ls="none",
                    label=f"{ref.label}: {ref.score:g}")
        else:
            ax.axhline(ref.score, color=color, ls="-.", lw=1, label=f"{ref.label}: {ref.score:g} at {ref.budget:,.0f}")
    if threshold is not None:
        ax.axhline(threshold, color="tab:green", ls=":", lw=1, label=f"solved ({threshold:g})")
    ax.set_xlabel("env steps")
    ax.set_ylabel("evaluation return (deterministic)")
    ax.xaxis.set_major_formatter(EngFormatter())
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the plot, not on it
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


def new_axes(width: float = 9.0, height: float = 4.5) -> Axes:
    """A fresh figure with one axis (the caller owns and closes the figure)."""
    _, ax = plt.subplots(figsize=(width, height), layout="constrained")
    return ax

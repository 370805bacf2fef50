"""Figures of aggregated results: an axis in, the same axis out, no file I/O (the report saves them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.ticker import EngFormatter


@dataclass(frozen=True)
class ReferenceMark:
    """SB3's published result for one algorithm: final ``score`` at ``budget`` steps, optionally its curve."""

    score: float
    budget: float
    label: str = "SB3 reference"
    curve: pd.DataFrame | None = None  # columns timesteps, mean_reward


@dataclass(frozen=True)
class LineStyle:
    """How one learning curve is drawn: the algorithm's colour, the backend's line style and marker."""

    color: str
    linestyle: str = "-"
    marker: str = "o"
    linewidth: float = 2.0


def backend_style(backend: str, color: str) -> LineStyle:
    """lit: a thick solid line with circles; SB3: a thinner dashed line with squares, so equal curves both show."""
    if backend == "sb3":
        return LineStyle(color, "--", "s", 1.3)
    return LineStyle(color, "-", "o", 2.4)


class _Scale:
    """The y-range of the runs' data; levels far outside it (references, thresholds) become notes, not lines."""

    def __init__(self, bands: Mapping[str, pd.DataFrame]) -> None:
        values = np.concatenate([b[c].to_numpy(float) for b in bands.values() for c in ("ci_low", "ci_high", "iqm")]
                                or [np.array([0.0, 1.0])])
        values = values[np.isfinite(values)]
        self.low, self.high = (float(values.min()), float(values.max())) if values.size else (0.0, 1.0)
        self.span = max(self.high - self.low, 0.05 * max(abs(self.high), abs(self.low), 1.0))
        self.shown = [self.low, self.high]

    def near(self, y: float) -> bool:
        """Within half the data's span of the data: drawn, and the axis grows to show it."""
        return self.low - 0.5 * self.span <= y <= self.high + 0.5 * self.span

    def include(self, y: float) -> None:
        self.shown.append(y)

    def limits(self) -> tuple[float, float]:
        low, high = min(self.shown), max(self.shown)
        pad = 0.05 * max(high - low, self.span)
        return low - pad, high + pad


def learning_curves(
    ax: Axes,
    bands: Mapping[str, pd.DataFrame],
    *,
    styles: Mapping[str, LineStyle] | None = None,
    references: Mapping[str, ReferenceMark] | None = None,
    threshold: float | None = None,
    title: str = "",
) -> Axes:
    """One line per label (IQM across seeds) with its 95% CI band, and SB3's reference in the same colour.

    The y-axis is scaled to the runs' data: a reference or threshold far from it (more than half the data's span
    away), or a reference budget beyond the plotted steps, is written as a note beside the plot instead of being
    drawn, and the legend lists only what is drawn.

    :param bands: label -> frame with ``timesteps``, ``iqm``, ``ci_low``, ``ci_high``, ``n_runs``
        (see ``aggregate.curve_band``)
    :param styles: label -> line style (see ``backend_style``); matplotlib's colour cycle when absent
    :param references: label -> SB3's reference for that line's algorithm: a star at its budget and its eval curve
        (dotted, the part inside the plotted steps), in the line's colour
    :param threshold: the env's solved threshold, drawn as a dotted green line
    """
    colors = {}
    x_max = 0.0
    for i, (label, band) in enumerate(bands.items()):
        style = (styles or {}).get(label)
        kwargs = {} if style is None else {"color": style.color, "ls": style.linestyle, "marker": style.marker,
                                           "lw": style.linewidth, "ms": 2 + 2 * style.linewidth}
        every = max(len(band) // 10, 1)  # markers staggered between lines, so coinciding curves show both
        (line,) = ax.plot(band["timesteps"], band["iqm"], label=f"{label} (IQM, n={int(band['n_runs'].max())})",
                          markevery=(i * max(every // 3, 1) % every, every), mfc="none", **kwargs)
        ax.fill_between(band["timesteps"], band["ci_low"], band["ci_high"], color=line.get_color(), alpha=0.15)
        colors[label] = line.get_color()
        x_max = max(x_max, float(band["timesteps"].max()))
    scale = _Scale(bands)
    notes = [f"{a} and {b}: the same curve (drawn on top of each other)" for a, b in _coinciding(bands)]
    for label, ref in (references or {}).items():
        color = colors.get(label, "k")
        if ref.curve is not None and not ref.curve.empty:
            shown = ref.curve[ref.curve["timesteps"] <= x_max * 1.05]  # our budget sets the x-range
            near = [y for y in shown["mean_reward"] if scale.near(y)]
            if near:
                for y in near:
                    scale.include(y)
                clipped = " (partly off the scale)" if len(near) < len(shown) else ""
                ax.plot(shown["timesteps"], shown["mean_reward"], ls=":", lw=1.2, color=color, marker="x", ms=6,
                        label=f"{ref.label} eval curve (1 seed){clipped}")
            elif not shown.empty:
                notes.append(f"not drawn: {ref.label} eval curve, {shown['mean_reward'].min():g} to "
                             f"{shown['mean_reward'].max():g} (off the scale)")
        where = f"{ref.label}: {ref.score:g} at {_steps(ref.budget)} steps"
        if ref.budget > x_max * 1.05:
            notes.append(f"not drawn: {where} (beyond these runs' budget)")
        elif scale.near(ref.score):
            scale.include(ref.score)
            ax.plot([ref.budget], [ref.score], marker="*", ms=14, color=color, mec="k", ls="none", label=where)
        else:
            notes.append(f"not drawn: {where} (off the scale)")
    if threshold is not None:
        if scale.near(threshold):
            scale.include(threshold)
            ax.axhline(threshold, color="tab:green", ls=":", lw=1, label=f"solved ({threshold:g})")
        else:
            notes.append(f"not drawn: solved threshold {threshold:g} (off the scale)")
    ax.set_ylim(*scale.limits())
    ax.set_xlabel("env steps")
    ax.set_ylabel("evaluation return (deterministic)")
    ax.xaxis.set_major_formatter(EngFormatter())
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the plot, not on it
    if notes:
        ax.text(1.01, 0.0, "\n".join(notes), transform=ax.transAxes, fontsize="small",
                va="bottom", ha="left")
    return ax


def _coinciding(bands: Mapping[str, pd.DataFrame]) -> list[tuple[str, str]]:
    """Pairs of labels whose curves are identical (e.g. lit and SB3 on the same seeds with bit-identical results)."""
    labels = list(bands)
    return [(a, b) for i, a in enumerate(labels) for b in labels[i + 1:]
            if bands[a]["timesteps"].to_numpy().shape == bands[b]["timesteps"].to_numpy().shape
            and np.allclose(bands[a]["timesteps"], bands[b]["timesteps"])
            and np.allclose(bands[a]["iqm"], bands[b]["iqm"], equal_nan=True)]


def final_scores(ax: Axes, summary: pd.DataFrame, *, value: str = "final_iqm", xlabel: str = "final return") -> Axes:
    """Interval plot: one row per label with its point estimate and 95% CI (``<value>``, ``ci_low``, ``ci_high``);
    ``reference`` (optional) is SB3's value at the same budget, a star (rows without one have none)."""
    rows = summary.reset_index(drop=True)
    y = np.arange(len(rows))
    ax.errorbar(rows[value], y, xerr=[rows[value] - rows["ci_low"], rows["ci_high"] - rows[value]],
                fmt="o", capsize=4)
    if "reference" in rows and np.isfinite(rows["reference"].to_numpy(float)).any():
        ax.scatter(rows["reference"], y, marker="*", s=120, color="k", label="SB3 at the same budget", zorder=3)
        ax.legend(fontsize="small", loc="best")
    ax.set_yticks(y, rows["label"])
    ax.invert_yaxis()  # first row on top, as in the tables
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", alpha=0.3)
    return ax


def throughput(ax: Axes, summary: pd.DataFrame) -> Axes:
    """Bars of env steps/s per label (``label``, ``fps``: median over seeds), the min-max over seeds as whiskers
    (``fps_low``, ``fps_high``, optional), the number on each bar and an optional ``note`` (e.g. the lit/SB3 ratio);
    optional ``color`` and ``hatch`` per bar."""
    rows = summary.reset_index(drop=True)
    fps = rows["fps"].to_numpy(float)
    xerr = None
    if {"fps_low", "fps_high"} <= set(rows):
        xerr = np.vstack([fps - rows["fps_low"].to_numpy(float), rows["fps_high"].to_numpy(float) - fps])
    bars = ax.barh(rows["label"], fps, xerr=xerr, capsize=4, color=rows.get("color", "tab:blue"),
                   hatch=rows.get("hatch"), edgecolor="white")
    notes = rows["note"] if "note" in rows else [""] * len(rows)
    ax.bar_label(bars, labels=[f"{v:,.0f}/s  {n}".rstrip() for v, n in zip(fps, notes)], padding=6,
                 fontsize="small")
    right = np.nanmax(xerr[1] + fps) if xerr is not None else np.nanmax(fps)
    ax.set_xlim(0, right * 1.6)  # room for the numbers
    ax.invert_yaxis()  # first row on top, as in the tables
    ax.set_xlabel("env steps / s (median over seeds; whiskers: min to max)")
    ax.xaxis.set_major_formatter(EngFormatter())
    ax.grid(axis="x", alpha=0.3)
    return ax


def paired_differences(ax: Axes, comparisons: pd.DataFrame, names: tuple[str, str] = ("lit", "SB3")) -> Axes:
    """A - B per pair of runs (``names``: lit and SB3 by default): each seed's difference (dots), the IQM difference
    with its 95% CI (bar), zero marked; ``label``, ``differences`` (list per row), ``iqm_difference``, ``ci_low``,
    ``ci_high``, ``ci_flagged``, ``note`` (written beside each row)."""
    a, b = names
    rows = comparisons.reset_index(drop=True)
    for i, r in enumerate(rows.itertuples()):
        ax.scatter(r.differences, np.full(len(r.differences), i + 0.18), s=18, color="0.45", zorder=3)
        color = "tab:orange" if r.ci_flagged else "tab:blue"
        xerr = [[r.iqm_difference - r.ci_low], [r.ci_high - r.iqm_difference]] if len(r.differences) > 1 else None
        ax.errorbar([r.iqm_difference], [i], xerr=xerr, fmt="D", color=color, capsize=5)
        ax.annotate(r.note, (1.02, i), xycoords=("axes fraction", "data"), va="center", fontsize="small")
    ax.axvline(0.0, color="k", lw=1)
    handles = [Line2D([], [], marker="o", ls="none", color="0.45", label=f"one seed: {a} - {b}"),
               Line2D([], [], marker="D", color="tab:blue", label=f"IQM({a}) - IQM({b}), 95% CI")]
    if rows["ci_flagged"].any():
        handles.append(Line2D([], [], marker="D", color="tab:orange", label="... under 5 seeds: CI unreliable"))
    ax.legend(handles=handles, fontsize="small", loc="lower left", bbox_to_anchor=(0.0, 1.02), ncols=3)
    ax.set_yticks(range(len(rows)), rows["label"])
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.invert_yaxis()
    ax.set_xlabel(f"final return: {a} - {b} (paired by seed; > 0: {a} better)")
    ax.grid(axis="x", alpha=0.3)
    return ax


def _steps(value: float) -> str:
    return EngFormatter(sep="")(value)


def new_axes(width: float = 9.0, height: float = 4.5) -> Axes:
    """A fresh figure with one axis (the caller owns and closes the figure)."""
    _, ax = plt.subplots(figsize=(width, height), layout="constrained")
    return ax

"""Figures of aggregated results: an axis in, the same axis out, no file I/O (the report saves them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import EngFormatter, FuncFormatter

from lit_bench.analysis import style
from lit_bench.analysis.style import LineStyle
from lit_bench.stats import AT_EVALUATIONS


@dataclass(frozen=True)
class ReferenceMark:
    """SB3's published result for one algorithm: final ``score`` at ``budget`` steps, optionally its curve."""

    score: float
    budget: float
    label: str = "RL Zoo"
    curve: pd.DataFrame | None = None  # columns timesteps, mean_reward
    marker: str | None = None  # its algorithm's (``style.Look.marker``)


def backend_style(backend: str, color: str) -> LineStyle:
    """lit: a solid line in the algorithm's ``color``; SB3: a dashed one (``style.BACKEND_LINES``) in a darker shade,
    its band hatched."""
    return LineStyle(
        style.backend_color(color, backend),
        style.BACKEND_LINES.get(backend, ":"),
        "o",
        hatch=style.BACKEND_HATCH.get(backend),
    )


class _Scale:
    """The y-range of the runs' data; levels far outside it (references, thresholds) become notes, not lines."""

    def __init__(self, bands: Mapping[str, pd.DataFrame]) -> None:
        values = np.concatenate(
            [b[c].to_numpy(float) for b in bands.values() for c in ("ci_low", "ci_high", "iqm")]
            or [np.array([0.0, 1.0])]
        )
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
    handles: Sequence[Artist] | None = None,
    legend: str | None = "below",
    xlabel: str = "env steps",
    ylabel: str = "evaluation return (deterministic)",
) -> Axes:
    """One line per label (IQM across seeds) with its 95% CI band, and published references in dark grey.

    The y-axis is scaled to the runs' data: a reference or threshold far from it (more than half the data's span
    away), or a reference budget beyond the plotted steps, is written as a note under the legend instead of being
    drawn, and the legend lists only what is drawn.

    :param bands: label -> frame with ``timesteps`` (the x values: env steps, or seconds for a wall-clock axis),
        ``iqm``, ``ci_low``, ``ci_high``, ``n_runs`` (see ``stats.curve_band``)
    :param styles: label -> line style (``style.Look.line``); matplotlib's colour cycle when absent
    :param references: name -> a published single-agent result (the RL Zoo's): its eval curve dotted in dark grey
        with the marker of its algorithm, its benchmark score a star at its budget. Labelled as one seed: it is never
        an estimate of SB3 across seeds (runs of ``backend=sb3`` are)
    :param threshold: the env's solved threshold, drawn as a dotted green line
    :param handles: the legend's entries for the lines (e.g. one per config plus one per backend's line style);
        default: one per label, ``<label> (n=...)``. References and the threshold are added to them
    :param legend: ``below`` the plot (the plot keeps the figure's width), ``beside`` it, or None (the caller draws
        one legend for a grid: the entries are in ``ax.legend_entries``)
    """
    x_max = 0.0
    own: list[Artist] = []
    for name, band in bands.items():
        line_style = (styles or {}).get(name)
        kwargs: dict[str, Any] = {} if line_style is None else {"color": line_style.color, "ls": line_style.linestyle}
        if line_style is not None and line_style.linewidth:
            kwargs["lw"] = line_style.linewidth
        hatch = line_style.hatch if line_style is not None else None
        if band.attrs.get(AT_EVALUATIONS):  # markers only where the points are evaluations (not a grid over runs)
            kwargs.update(marker="o", ms=3.5, **({"mfc": "white"} if hatch else {}))  # SB3's open, as its band
        (line,) = ax.plot(band["timesteps"], band["iqm"], label=f"{name} (n={int(band['n_runs'].max())})", **kwargs)
        fill: dict[str, Any] = {"color": line.get_color(), "alpha": 0.15}  # lit: filled; SB3: hatched
        if hatch:
            fill = {"facecolor": "none", "edgecolor": line.get_color(), "hatch": hatch, "alpha": 0.35}
        ax.fill_between(band["timesteps"], band["ci_low"], band["ci_high"], lw=0, **fill)
        own.append(line)
        x_max = max(x_max, float(band["timesteps"].max()))
    scale = _Scale(bands)
    notes = [f"{a} and {b}: the same curve (drawn on top of each other)" for a, b in _coinciding(bands)]
    extra: list[Artist] = []
    beyond: list[str] = []  # references past the runs' budget: one note for all of them
    for ref in (references or {}).values():
        marker = ref.marker or "x"
        if ref.curve is not None and not ref.curve.empty:
            shown = ref.curve[ref.curve["timesteps"] <= x_max * 1.05]  # our budget sets the x-range
            near = [y for y in shown["mean_reward"] if scale.near(y)]
            if near:
                for y in near:
                    scale.include(y)
                clipped = " (partly off the scale)" if len(near) < len(shown) else ""
                (line,) = ax.plot(
                    shown["timesteps"],
                    shown["mean_reward"],
                    ls=":",
                    lw=1.0,
                    color=style.REFERENCE_COLOR,
                    marker=marker,
                    mfc="none",
                    label=f"{ref.label} eval curve, 1 seed{clipped}",
                )
                extra.append(line)
            elif not shown.empty:
                notes.append(
                    f"not drawn: {ref.label} eval curve (1 seed), {shown['mean_reward'].min():g} to "
                    f"{shown['mean_reward'].max():g} (off the scale)"
                )
        where = f"{ref.label}: {ref.score:.4g} at {_steps(ref.budget)} steps (1 agent)"
        if ref.budget > x_max * 1.05:
            beyond.append(where)
        elif scale.near(ref.score):
            scale.include(ref.score)
            (star,) = ax.plot(
                [ref.budget],
                [ref.score],
                marker=ref.marker or "*",
                ms=9,
                color=style.REFERENCE_COLOR,
                mec="k",
                ls="none",
                label=where,
            )  # (filled: the agent's final score, not its curve)
            extra.append(star)
        else:
            notes.append(f"not drawn: {where} (off the scale)")
    if beyond:
        notes.append(f"not drawn, beyond these runs' budget: {'; '.join(beyond)}")
    if threshold is not None:
        if scale.near(threshold):
            scale.include(threshold)
            extra.append(ax.axhline(threshold, color="tab:green", ls=":", lw=1, label=f"solved ({threshold:g})"))
        else:
            notes.append(f"not drawn: solved threshold {threshold:g} (off the scale)")
    ax.set_ylim(*scale.limits())
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.xaxis.set_major_formatter(EngFormatter(sep=""))
    ax.set_title(title)
    ax.grid(alpha=0.3)
    entries = [*(own if handles is None else handles), *extra]
    ax.legend_entries = entries  # type: ignore[attr-defined]  # (for a caller that draws a grid's one legend)
    ax.notes = notes  # type: ignore[attr-defined]
    if legend is not None:
        place_legend(ax, entries, notes, where=legend)
    return ax


def _figure(ax: Axes) -> Figure:
    """The whole figure ``ax`` is drawn in (also when ``ax`` is in a subfigure)."""
    figure = ax.get_figure(root=True)
    if not isinstance(figure, Figure):
        raise ValueError("plot: the axes belong to no figure")
    return figure


def place_legend(ax: Axes, entries: Sequence[Artist], notes: Sequence[str] = (), *, where: str = "below") -> None:
    """The legend of ``ax``'s figure under the plots (columns as the width allows) or beside them, with ``notes``
    (what was not drawn) as its heading: the plots keep the figure's width (below) or most of it (beside)."""
    figure = _figure(ax)
    notes = style.wrap_notes(notes, figure.get_figwidth())  # (one long note made the suite page ~36 in wide)
    title = "\n".join(notes) or None
    if where == "below":
        ncols = style.legend_columns([str(e.get_label()) for e in entries], figure.get_figwidth())
        lines = -(-len(entries) // ncols) + len(notes)  # the figure grows by the legend: the plots keep their size
        figure.set_figheight(figure.get_figheight() + lines * style.legend_points() * 1.5 / 72)
        # matplotlib fills a legend's columns first: reordered, the entries read row by row, in the given order
        entries = [entries[i] for c in range(ncols) for i in range(c, len(entries), ncols)]
        box = figure.legend(
            handles=entries, loc="outside lower center", ncols=ncols, title=title, title_fontsize="small"
        )
    elif where == "beside":
        box = figure.legend(handles=list(entries), loc="outside right upper", title=title, title_fontsize="small")
    else:
        raise ValueError(f"legend: unknown {where!r}; choose from below, beside")
    box.get_title().set_color("0.3")


def _coinciding(bands: Mapping[str, pd.DataFrame]) -> list[tuple[str, str]]:
    """Pairs of labels whose curves are identical (e.g. lit and SB3 on the same seeds with bit-identical results)."""
    labels = list(bands)
    return [
        (a, b)
        for i, a in enumerate(labels)
        for b in labels[i + 1 :]
        if bands[a]["timesteps"].to_numpy().shape == bands[b]["timesteps"].to_numpy().shape
        and np.allclose(bands[a]["timesteps"], bands[b]["timesteps"])
        and np.allclose(bands[a]["iqm"], bands[b]["iqm"], equal_nan=True)
    ]


def intervals(
    ax: Axes,
    y: np.ndarray,
    value: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    *,
    colors: Sequence[str],
    markers: Sequence[str],
    filled: Sequence[bool],
) -> None:
    """Point estimates with their intervals, one row each, in a few artists whatever the rows: the intervals one
    line collection (with caps), the points one scatter per marker (open markers: white inside)."""
    y, value = np.asarray(y, dtype=float), np.asarray(value, dtype=float)
    ax.hlines(y, low, high, colors=list(colors), lw=plt.rcParams["lines.linewidth"])
    ax.scatter(
        np.r_[low, high], np.r_[y, y], marker="|", c=list(colors) * 2, s=40, linewidths=plt.rcParams["lines.linewidth"]
    )
    for marker in dict.fromkeys(markers):
        rows = np.flatnonzero(np.asarray(markers) == marker)
        faces = [colors[i] if filled[i] else "white" for i in rows.tolist()]
        ax.scatter(
            value[rows],
            y[rows],
            marker=marker,
            c=faces,
            edgecolors=[colors[i] for i in rows.tolist()],
            zorder=3,
            s=plt.rcParams["lines.markersize"] ** 2 * 1.6,
        )


def final_scores(ax: Axes, summary: pd.DataFrame, *, value: str = "final_iqm", xlabel: str = "final return") -> Axes:
    """Interval plot: one row per label with its point estimate and 95% CI (``<value>``, ``ci_low``, ``ci_high``), in
    the row's ``color`` and ``marker`` (optional; filled for lit, open for SB3 when ``backend`` is given);
    ``reference`` (optional) is a published single agent's value at the same budget, a grey star."""
    rows = summary.reset_index(drop=True)
    y = np.arange(len(rows))
    intervals(
        ax,
        y,
        rows[value].to_numpy(float),
        rows["ci_low"].to_numpy(float),
        rows["ci_high"].to_numpy(float),
        colors=list(rows["color"]) if "color" in rows else ["C0"] * len(rows),
        markers=list(rows["marker"]) if "marker" in rows else ["o"] * len(rows),
        filled=list(rows["backend"] != "sb3") if "backend" in rows else [True] * len(rows),
    )
    if "reference" in rows and np.isfinite(rows["reference"].to_numpy(float)).any():
        ax.scatter(
            rows["reference"],
            y,
            marker="*",
            s=90,
            color=style.REFERENCE_COLOR,
            edgecolors="k",
            zorder=3,
            label=rows.attrs.get("reference_label", "published reference at the same budget"),
        )
        if not _figure(ax).legends:  # (one legend for a figure of several panels)
            place_legend(ax, [ax.collections[-1]])
    ax.set_yticks(y, rows["label"])
    ax.set_ylim(-0.6, len(rows) - 0.4)
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
    bars = ax.barh(
        rows["label"],
        fps,
        xerr=xerr,
        capsize=4,
        color=rows.get("color", "tab:blue"),
        hatch=rows.get("hatch"),
        edgecolor="white",
    )
    notes = rows["note"] if "note" in rows else [""] * len(rows)
    ax.bar_label(bars, labels=[f"{v:,.0f}/s  {n}".rstrip() for v, n in zip(fps, notes)], padding=6, fontsize="small")
    right = np.nanmax(xerr[1] + fps) if xerr is not None else np.nanmax(fps)
    ax.set_xlim(0, right * 1.6)  # room for the numbers
    ax.invert_yaxis()  # first row on top, as in the tables
    cpu = "fps_clock" in rows and bool((rows["fps_clock"] == "cpu").all())
    per = "env steps per CPU-second" if cpu else "env steps / s, wall-clock"
    ax.set_xlabel(f"{per} (median over seeds; whiskers: min to max)")
    ax.xaxis.set_major_formatter(FuncFormatter(_plain_number))  # 0.5, 1,200: never SI prefixes ("500 m")
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
        ax.annotate(
            r.note, (0.01, i - 0.22), xycoords=("axes fraction", "data"), va="bottom", fontsize="small", color="0.3"
        )  # (above its row, inside the plot: the plot keeps the figure's width)
    ax.axvline(0.0, color="k", lw=1)
    handles = [
        Line2D([], [], marker="o", ls="none", color="0.45", label=f"one seed: {a} - {b}"),
        Line2D([], [], marker="D", color="tab:blue", label=f"IQM({a}) - IQM({b}), 95% CI"),
    ]
    if rows["ci_flagged"].any():
        handles.append(Line2D([], [], marker="D", color="tab:orange", label="... under 5 seeds: CI unreliable"))
    ax.legend(handles=handles, fontsize="small", loc="lower left", bbox_to_anchor=(0.0, 1.02), ncols=3)
    ax.set_yticks(range(len(rows)), rows["label"])
    ax.set_ylim(-0.7, len(rows) - 0.4)
    ax.invert_yaxis()
    ax.set_xlabel(f"final return: {a} - {b} (paired by seed; > 0: {a} better)")
    ax.grid(axis="x", alpha=0.3)
    return ax


def _steps(value: float) -> str:
    return EngFormatter(sep="")(value)


def _plain_number(value: float, _position: int | None = None) -> str:
    """A speed tick: thousands separated, small ones as they are (0.5), no SI prefix."""
    return f"{value:,.0f}" if abs(value) >= 10 else f"{value:g}"


def new_axes(width: float | None = None, height: float | None = None) -> Axes:
    """A fresh figure with one axis, by default of the current style's size (the caller owns and closes it)."""
    look = style.current()
    _, ax = plt.subplots(figsize=(width or look.width, height or look.height), layout="constrained")
    return ax


def rows_width(labels: Sequence[str]) -> float:
    """The width of a figure with one row per label: the style's, widened (up to the page's) for long labels."""
    look = style.current()
    text = 0.5 * plt.rcParams["ytick.labelsize"] / 72 * max((len(str(t)) for t in labels), default=0)
    return min(look.wide, max(look.width, text + 2.4))  # (2.4 in: the plot itself)


def rows_height(n: int) -> float:
    """The height of a figure with one row per label (final scores, throughput), in the current style."""
    look = style.current()
    return 0.9 + (0.17 if look.name == "paper" else 0.32) * n

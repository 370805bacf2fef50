"""The report's ``suite`` page: normalized final scores of every config over the envs it ran on, aggregated as in
rliable (``suite``): IQM / median / mean / optimality gap with 95% CIs, performance profiles and P(improvement).

A suite needs the same tasks for every entry: the envs are the largest set that the most configs ran on (at least
two envs with a normalizer), each config's runs per env the fewest it has on any of them (its lowest seeds); what
is left out is said under the figure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.lines import Line2D

from lit_bench.analysis import plot, style, suite
from lit_bench.analysis.normalize import normalizer

MAX_PAIRS = 12  # P(improvement) rows drawn at most (lit vs SB3 of each config first, then configs on one backend)


@dataclass
class Suite:
    """Normalized ``[runs, tasks]`` final scores per entry, and how they were chosen."""

    tasks: list[str]  # env ids
    scores: dict[str, np.ndarray]
    lines: dict[str, style.LineStyle]
    kinds: list[str]  # each task's normalization
    notes: list[str] = field(default_factory=list)
    pairs: list[tuple[str, str]] = field(default_factory=list)


def suite_of(per_run: pd.DataFrame, look: style.Look) -> Suite | None:
    """The suite of a report's completed runs (``summarize.run_table``); None with fewer than two envs to share."""
    done = per_run.dropna(subset=["final"])
    done = done[done.env_id.map(lambda e: isinstance(e, str) and normalizer(e) is not None)]
    if done.env_id.nunique() < 2:
        return None
    keys = ["sweep", "algo", "variant", "backend"]
    envs_of = {key: frozenset(group.env_id) for key, group in done.groupby(keys, sort=True)}
    candidates = [t for t in set(envs_of.values()) if len(t) >= 2]
    if not candidates:
        return None
    tasks_set = max(candidates, key=lambda t: (sum(t <= e for e in envs_of.values()) * len(t), sorted(t)))
    tasks = sorted(tasks_set)
    every = look.sort({k[:3] for k in envs_of})  # by their hyperparameter values
    entries = sorted((k for k, e in envs_of.items() if tasks_set <= e), key=lambda k: (every.index(k[:3]), k[3]))
    configs = list(dict.fromkeys(k[:3] for k in entries))
    short = dict(zip(configs, look.labels(configs, with_sweep=len({c[0] for c in configs}) > 1)))
    result = Suite(tasks, {}, {}, [normalizer(t).kind for t in tasks])  # type: ignore[union-attr]
    left_out: dict[tuple[str, str, str], list[str]] = {}
    for key in sorted((k for k, e in envs_of.items() if not tasks_set <= e), key=lambda k: (every.index(k[:3]), k[3])):
        left_out.setdefault(key[:3], []).append(key[3])
    if left_out:  # (named among every config: with their sweeps when there are several)
        named = dict(zip(every, look.labels(every, with_sweep=len({c[0] for c in every}) > 1)))
        listed = "; ".join(f"{named[c]} / {'+'.join(backends)}" for c, backends in left_out.items())
        result.notes.append(f"left out, not on every env of the suite: {listed}")
    uneven = []
    for key in entries:
        rows = done[(done[keys] == pd.Series(key, index=keys)).all(axis=1) & done.env_id.isin(tasks)]
        per_task = [rows[rows.env_id == t].sort_values("seed").final.to_numpy(float) for t in tasks]
        n = min(len(c) for c in per_task)
        if max(len(c) for c in per_task) > n:
            uneven.append(n)
        name = f"{short[key[:3]]} / {key[3]}"
        result.scores[name] = np.stack([normalizer(t)(c[:n]) for t, c in zip(tasks, per_task)], axis=1)  # type: ignore[misc]
        result.lines[name] = look.line(*key)
    if uneven:  # (one line, not one per entry: 60 of them at 60 configs)
        result.notes.append(
            f"{len(uneven)} of {len(entries)} entries have more runs on some env than on another: each keeps its "
            f"fewest on any env, its lowest seeds ({_span(uneven)} runs per env)"
        )
    names = list(result.scores)
    paired = [
        (f"{short[c]} / lit", f"{short[c]} / sb3")
        for c in configs
        if f"{short[c]} / lit" in result.scores and f"{short[c]} / sb3" in result.scores
    ]
    others = [
        (a, b)
        for i, a in enumerate(names)
        for b in names[i + 1 :]  # configs against each other: same backend
        if (a, b) not in paired and a.rsplit(" / ", 1)[1] == b.rsplit(" / ", 1)[1]
    ]
    result.pairs = (paired + others)[:MAX_PAIRS]
    return result


def draw(found: Suite, *, n_boot: int = 2000, seed: int = 0, aggregates: pd.DataFrame | None = None) -> Axes:
    """The suite page: four aggregate panels over one row, the performance profile and P(improvement) below
    (``aggregates``: ``suite.aggregate_table(found.scores, n_boot=n_boot, seed=seed)`` when known)."""
    look = style.current()
    names = list(found.scores)
    height = 1.2 + (0.16 if look.name == "paper" else 0.3) * len(names)
    figure = plt.figure(figsize=(look.wide, height + (2.4 if look.name == "paper" else 4.0)), layout="constrained")
    parts = figure.subfigures(2, 1, height_ratios=[height, 2.4 if look.name == "paper" else 4.0])
    assert isinstance(parts, np.ndarray)  # (two subfigures: an array of them)
    top, bottom = parts
    if aggregates is None:
        aggregates = suite.aggregate_table(found.scores, n_boot=n_boot, seed=seed)
    axes = top.subplots(1, len(suite.AGGREGATES), sharey=True)
    for ax, metric in zip(axes, suite.AGGREGATES):
        rows = aggregates[aggregates.metric == metric].set_index("name").loc[names]
        lines = [found.lines[n] for n in names]
        plot.intervals(
            ax,
            np.arange(len(names)),
            rows.value.to_numpy(),
            rows.ci_low.to_numpy(),
            rows.ci_high.to_numpy(),
            colors=[line.color for line in lines],
            markers=[line.marker for line in lines],
            filled=[line.linestyle != "--" for line in lines],
        )
        ax.set_title(metric + (" (lower is better)" if metric == "optimality gap" else ""))
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(range(len(names)), names)
    axes[0].set_ylim(-0.6, len(names) - 0.4)
    axes[0].invert_yaxis()
    kind = " / ".join(sorted(set(found.kinds)))
    top.supxlabel(f"normalized final score ({kind}), 95% stratified bootstrap CI", fontsize="small")
    profile_ax, improvement_ax = bottom.subplots(1, 2, width_ratios=[1.2, 1])
    _profiles(profile_ax, found, n_boot=n_boot, seed=seed)
    _improvements(improvement_ax, found, n_boot=n_boot, seed=seed)
    runs = [m.shape[0] for m in found.scores.values()]
    figure.suptitle(f"suite of {len(found.tasks)} envs: {', '.join(found.tasks)}; runs per env: {_span(runs)}")
    handles = [
        Line2D(
            [],
            [],
            color=found.lines[n].color,
            marker=found.lines[n].marker,
            ls=found.lines[n].linestyle,
            mfc="white" if found.lines[n].linestyle == "--" else found.lines[n].color,
            label=n,
        )
        for n in names
    ]
    plot.place_legend(profile_ax, handles, found.notes)
    return axes[0]


def _span(counts: list[int]) -> str:
    """``160`` or ``159-167``: the fewest and most of ``counts``."""
    return f"{min(counts)}" if min(counts) == max(counts) else f"{min(counts)}-{max(counts)}"


def _profiles(ax: Axes, found: Suite, *, n_boot: int, seed: int) -> None:
    every = np.concatenate([m.ravel() for m in found.scores.values()])
    taus = np.linspace(min(0.0, every.min()), max(1.0, every.max()), 101)
    profile = suite.performance_profile(found.scores, taus, n_boot=n_boot, seed=seed)
    for name, rows in profile.groupby("name", sort=False):
        line = found.lines[str(name)]
        ax.plot(rows.tau, rows.fraction, color=line.color, ls=line.linestyle)
        ax.fill_between(rows.tau, rows.ci_low, rows.ci_high, color=line.color, alpha=0.15, lw=0)
    ax.set_xlabel(r"normalized score $\tau$")
    ax.set_ylabel(r"fraction of runs with score $> \tau$")
    ax.set_ylim(0, 1.02)
    ax.set_title("performance profile (95% CI)")
    ax.grid(alpha=0.3)


def _improvements(ax: Axes, found: Suite, *, n_boot: int, seed: int) -> None:
    if not found.pairs:
        ax.set_axis_off()
        return
    table = suite.improvement_table(found.scores, found.pairs, n_boot=n_boot, seed=seed)
    y = np.arange(len(table))
    plot.intervals(
        ax,
        y,
        table.probability.to_numpy(),
        table.ci_low.to_numpy(),
        table.ci_high.to_numpy(),
        colors=[found.lines[x].color for x in table.x],
        markers=["o"] * len(table),
        filled=[True] * len(table),
    )
    ax.axvline(0.5, color="k", lw=0.8, ls=":")
    ax.set_yticks(y, [pair_label(r.x, r.y) for r in table.itertuples()])
    ax.set_ylim(-0.6, len(table) - 0.4)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("P(X > Y): probability of improvement (95% CI)")
    ax.set_title("probability of improvement over the suite")
    ax.grid(axis="x", alpha=0.3)


def pair_label(x: str, y: str) -> str:
    """``ppo: lit > SB3`` for the two backends of a config, ``lr=0.001 > lr=0.01 (lit)`` for two configs on one
    backend, else ``x > y`` (names ``<config> / <backend>``)."""
    (xc, _, xb), (yc, _, yb) = x.rpartition(" / "), y.rpartition(" / ")
    if xc == yc:
        return f"{xc}: {'SB3' if xb == 'sb3' else xb} > {'SB3' if yb == 'sb3' else yb}"
    if xb == yb:
        return f"{xc} > {yc} ({xb})"
    return f"{x} > {y}"

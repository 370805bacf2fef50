"""The report's figures, each a drawing of the tables: learning curves and training metrics per env, final scores,
throughput, lit-vs-SB3 differences, paired ablations and the suite page (``pool`` draws and saves them)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from lit_bench import stats
from lit_bench.analysis import plot, style, suite_page, training
from lit_bench.analysis.markdown import FLAG, MIXED, Row
from lit_bench.analysis.metrics_csv import metric_names, metrics_csvs
from lit_bench.analysis.paired import ablation_figure
from lit_bench.analysis.pool import Drawing, draw
from lit_bench.analysis.reference import reference_curve, reference_score
from lit_bench.analysis.summarize import Returns, curve_bands


def figures(
    evals: pd.DataFrame | Returns,
    summary: pd.DataFrame,
    out: Path,
    *,
    comparison: pd.DataFrame | None = None,
    seed: int = 0,
    suffixes: Sequence[str] = (".png", ".pdf"),
    workers: int = 1,
    x: str = "timesteps",
    extra: Sequence[Drawing] | None = None,
    ablations: pd.DataFrame | None = None,
) -> list[Path]:
    """Learning curves per env (with the RL Zoo's, labelled as one seed), final-score intervals per env, throughput,
    lit-vs-SB3 differences, paired ablations, and ``extra``.

    ``evals``: the long table, or its ``Returns.of(evals)`` (all the figures read of it; its ``timesteps`` are
    seconds when ``x`` is ``wall_time_s``). ``extra``: more figures to draw (the suite page, training curves).
    ``workers`` > 1 draws the figures in that many processes (``pool.draw``: the same files as drawn here alone).
    """
    several = summary.sweep.nunique() > 1
    look = style.Look.of(summary)  # one colour per algorithm (shades per config), decided once for every figure
    labelled = summary.assign(label=short_labels(summary, look=look))
    returns = evals if isinstance(evals, Returns) else Returns.of(evals)
    per_env = list(summary.groupby("env", sort=True))
    curves: list[Drawing] = [
        partial(_curves, env, rows, partial(curve_bands, None, rows, seed=seed, returns=returns), look, several, x)
        for env, rows in per_env
    ]
    per_config: list[Drawing] = [
        partial(_final_scores, labelled, look),
        partial(_throughput, labelled, comparison, look),
        partial(_comparison, comparison, several, look),
        partial(ablation_figure, ablations),
    ]
    drawings = [*curves, *per_config, *(extra or ())]
    # the largest first (the suite page, then the figures of a row per config, then the curves by their configs), so
    # that the processes end together: a large figure last would leave the others idle while it is drawn
    first_extra = len(curves) + len(per_config)
    by_size = sorted(range(len(curves)), key=lambda i: -len(per_env[i][1]))
    order = [*range(len(drawings) - 1, first_extra - 1, -1), *range(len(curves), first_extra), *by_size]
    return draw(drawings, out, suffixes, workers=workers, order=order)


def _curves(
    env: str,
    rows: pd.DataFrame,
    bands_of: Callable[[], dict[Any, pd.DataFrame]],
    look: style.Look,
    several: bool,
    x: str = "timesteps",
) -> tuple[plt.Axes, str] | None:
    """One env's learning curves: a band per config and backend (the config's colour, the backend's line style),
    one legend entry per config, the RL Zoo's single-seed curve once per algorithm (steps axis only)."""
    bands = bands_of()  # (computed here: in the figure's worker when drawn in parallel)
    rows = rows[rows.index.isin(list(bands))]
    if rows.empty:
        return None
    configs = list(dict.fromkeys(zip(rows.sweep, rows.algo, rows.variant)))
    short = dict(zip(configs, look.labels(configs, with_sweep=several, envs=[env] * len(configs))))
    named: dict[str, pd.DataFrame] = {}
    styles: dict[str, style.LineStyle] = {}
    seeds: dict[tuple[str, str, str], dict[str, int]] = {}
    references: dict[str, plot.ReferenceMark] = {}
    for r in rows.itertuples():
        config = (r.sweep, r.algo, r.variant)
        name = f"{short[config]} / {r.backend}"
        named[name], styles[name] = bands[r.Index], look.line(*config, r.backend)
        seeds.setdefault(config, {})[r.backend] = int(bands[r.Index].n_runs.max())
        base = getattr(r, "base", None)
        algo = base if isinstance(base, str) else r.algo  # a variant is drawn against its base's reference
        ref = reference_score(algo, r.env_id) if isinstance(r.env_id, str) and x == "timesteps" else None
        if ref is not None and algo not in references:
            version = "" if ref.same_version else f" ({ref.reference_env_id})"
            references[algo] = plot.ReferenceMark(
                ref.score, ref.budget, f"RL Zoo {algo}{version}", reference_curve(algo, r.env_id), look.marker[r.algo]
            )
    backends = sorted({str(b) for b in rows.backend})
    mixed = {(r.sweep, r.algo, r.variant) for r in rows.itertuples() if getattr(r, "versions", "")}
    notes = {c: _seeds_note(seeds[c]) + (f", {MIXED} mixed versions" if c in mixed else "") for c in configs}
    same = len(set(notes.values())) == 1  # then said once, in the title
    handles = [
        Line2D(
            [],
            [],
            color=look.line(*c, "lit").color,
            label=short[c] + ("" if same else f" ({notes[c]})"),
        )
        for c in configs
    ]
    first = rows.iloc[0]
    ax = plot.learning_curves(
        plot.new_axes(),
        named,
        styles=styles,
        references=references,
        handles=handles + style.backend_handles(backends) * (len(backends) > 1 or "sb3" in backends),
        threshold=first.threshold if np.isfinite(first.threshold) else None,
        title=f"{first.env_id or env}" + (f" ({next(iter(notes.values()))} seeds each)" if same else ""),
        xlabel="wall-clock seconds" if x == "wall_time_s" else "env steps",
        ylabel="evaluation return\n(IQM over seeds, 95% CI)",
    )
    return ax, f"curves_{env}"


def short_labels(rows: pd.DataFrame, *, backend: bool = True, look: style.Look | None = None) -> list[str]:
    """Figure labels of summary or comparison rows: the algorithm and the overrides that differ among them with
    their values (``style.Look.labels``: ``look``, else the rows'), the backend, and the env when there are several
    (full strings: the tables)."""
    configs = list(zip(rows.sweep, rows.algo, rows.variant.fillna("")))
    look = look or style.Look.of(rows)
    names = look.labels(configs, with_sweep=rows.sweep.nunique() > 1, envs=list(rows.env))
    several_envs = rows.env.nunique() > 1
    return [
        name + (f" / {r.backend}" if backend else "") + (f" · {r.env}" if several_envs else "")
        for name, r in zip(names, rows.itertuples())
    ]


def _seeds_note(seeds: dict[str, int]) -> str:
    """``n=5`` for one backend, ``n=5 lit, 5 SB3`` for both."""
    if len(seeds) == 1:
        return f"n={next(iter(seeds.values()))}"
    return "n=" + ", ".join(f"{n} {'SB3' if b == 'sb3' else b}" for b, n in sorted(seeds.items()))


def _final_scores(labelled: pd.DataFrame, look: style.Look) -> tuple[plt.Axes, str] | None:
    """Final IQM [95% CI] per config and backend: one panel per env (each on its own scale), rows in the configs'
    colours and markers (open: SB3), a grey star where the RL Zoo's agent was trained for the same budget."""
    finite = labelled[np.isfinite(labelled.final_iqm)]
    if finite.empty:
        return None
    envs = sorted(finite.env.unique())
    sizes = [int((finite.env == env).sum()) for env in envs]
    _, axes = plt.subplots(
        len(envs),
        1,
        squeeze=False,
        layout="constrained",
        height_ratios=sizes,
        figsize=(
            plot.rows_width([f"{t} (n=000)" for t in finite.label]),
            plot.rows_height(sum(sizes)) + 0.5 * (len(envs) - 1),
        ),
    )
    for ax, env in zip(axes[:, 0], envs):
        rows = finite[finite.env == env]
        zoo = rows.reference_at_budget.where(rows.sb3_reference_budget == rows.budget)  # a whole agent only
        configs = list(zip(rows.sweep, rows.algo, rows.variant))
        short = look.labels(configs, with_sweep=rows.sweep.nunique() > 1, envs=[env] * len(configs))
        with_ref = rows.assign(
            label=[
                f"{name} / {r.backend} (n={r.seeds}{FLAG if r.ci_flagged else ''})"
                for name, r in zip(short, rows.itertuples())
            ],
            reference=zoo,
            ci_low=rows.ci_low.fillna(rows.final_iqm),
            ci_high=rows.ci_high.fillna(rows.final_iqm),
            color=[look.line(*c, "lit").color for c in configs],
            marker=[look.marker[c[1]] for c in configs],
        )
        with_ref.attrs["reference_label"] = "RL Zoo benchmark at this budget (1 agent)"
        plot.final_scores(ax, with_ref, xlabel="")
        ax.set_title(str(rows.env_id.iloc[0] or env), loc="left")
    axes[-1, 0].set_xlabel(
        "final return (IQM over seeds, 95% CI)"
        + (f"\n{FLAG} under {stats.MIN_SEEDS_FOR_CI} seeds: the CI is unreliable" if finite.ci_flagged.any() else "")
    )
    return axes[0, 0], "final_scores"


def _throughput(
    labelled: pd.DataFrame, comparison: pd.DataFrame | None, look: style.Look
) -> tuple[plt.Axes, str] | None:
    fps = labelled[np.isfinite(labelled.fps_median)].rename(columns={"fps_median": "fps"})
    if fps.empty:
        return None
    fps = fps.assign(
        note=[_ratio_note(r, comparison) for r in fps.itertuples()],
        color=[look.line(r.sweep, r.algo, r.variant, r.backend).color for r in fps.itertuples()],
        hatch=["//" if r.backend == "sb3" else "" for r in fps.itertuples()],
    )
    ax = plot.new_axes(width=plot.rows_width(list(fps.label)), height=plot.rows_height(len(fps)))
    return plot.throughput(ax, fps), "throughput"


def _comparison(comparison: pd.DataFrame | None, several: bool, look: style.Look) -> tuple[plt.Axes, str] | None:
    if comparison is None or comparison.empty:
        return None
    rows = comparison.assign(
        label=[
            f"{name} / {r.env}"
            for name, r in zip(
                look.labels(
                    list(zip(comparison.sweep, comparison.algo, comparison.variant.fillna(""))),
                    with_sweep=several,
                    envs=list(comparison.env),
                ),
                comparison.itertuples(),
            )
        ],
        note=[
            f"n={r.n}, P(lit>SB3)={r.probability_of_improvement:.2f}, verdict: {r.verdict}"
            + (f", speed x{r.fps_ratio_median:.2f}{_clock(r)}" if np.isfinite(r.fps_ratio_median) else "")
            for r in comparison.itertuples()
        ],
    )
    return plot.paired_differences(plot.new_axes(height=plot.rows_height(2 * len(rows)) + 0.4), rows), "comparison"


def training_figure(
    env: str, runs: pd.DataFrame, look: style.Look, wanted: Sequence[str]
) -> tuple[plt.Axes, str] | None:
    """One env's training metrics (``train/metrics.csv``) against env steps: a panel per metric, a band per config
    and backend in the curves' styles, one legend; None when no run of the env has the file."""
    paths = metrics_csvs(runs.run_dir.astype(str).tolist())
    metrics = training.chosen_metrics(metric_names(paths), list(wanted))  # (from the files' headers)
    if not metrics:
        return None  # (no run of the env has the file: one failed open per run, cheap at 10,000 runs)
    bands_of = training.config_bands(runs, metrics)
    configs = look.sort(dict.fromkeys(key[:3] for key in bands_of))
    several = len({c[0] for c in configs}) > 1
    short = dict(zip(configs, look.labels(configs, with_sweep=several, envs=[env] * len(configs))))
    groups = sorted(bands_of.items(), key=lambda g: (configs.index(g[0][:3]), g[0][3]))  # (the look's order)
    current = style.current()
    _, axes = plt.subplots(1, len(metrics), squeeze=False, layout="constrained", figsize=(current.wide, current.height))
    handles = {}
    for ax, metric in zip(axes[0], metrics):
        bands, lines = {}, {}
        for (sweep, algo, variant, backend), of_config in groups:
            name = f"{short[(sweep, algo, variant)]} / {backend}"
            band = of_config.get(metric, pd.DataFrame())
            if not band.empty:
                bands[name], lines[name] = band, look.line(sweep, algo, variant, backend)
                handles[name] = Line2D(
                    [],
                    [],
                    color=lines[name].color,
                    ls=lines[name].linestyle,
                    label=f"{name} (n={int(band.n_runs.max())})",
                )
        training.draw_metric(ax, bands, lines, metric)
    axes[0, 0].set_ylabel("IQM over seeds (95% CI)")
    plot.place_legend(axes[0, 0], list(handles.values()))
    axes[0, 0].get_figure(root=True).suptitle(f"{env}: training metrics (train/metrics.csv)")
    return axes[0, 0], f"training_{env}"


def suite_figure(found: suite_page.Suite, seed: int, aggregates: pd.DataFrame) -> tuple[plt.Axes, str]:
    return suite_page.draw(found, seed=seed, aggregates=aggregates), "suite"


def _ratio_note(row: Row, comparison: pd.DataFrame | None) -> str:
    """On a lit bar: its env-steps/s ratio to SB3's on the same seeds (median, min-max)."""
    if comparison is None or comparison.empty or row.backend == "sb3":
        return ""
    match = comparison[
        (comparison.sweep == row.sweep)
        & (comparison.algo == row.algo)
        & (comparison.env == row.env)
        & (comparison.variant == row.variant)
    ]
    if match.empty or not np.isfinite(match.fps_ratio_median.iloc[0]):
        return ""
    m = match.iloc[0]
    return f"= {m.fps_ratio_median:.2f}x SB3 ({m.fps_ratio_min:.2f}-{m.fps_ratio_max:.2f}){_clock(m)}"


def _clock(row: Any) -> str:
    """What a speed ratio measures: CPU time unless the runs recorded wall-clock time only."""
    return " per CPU-s" if getattr(row, "fps_clock", "wall") == "cpu" else " wall-clock"

"""Summary table, lit-vs-SB3 comparison and figures of one or more sweeps, against SB3's runs of the same configs.

    python -m lit_bench.cli.report results/runs/<sweep> [more runs or globs] [--out DIR] [--formats png pdf]
        [--style screen|paper] [--x steps|wall] [--train-metrics METRIC ...] [--compare A B ...]

Writes ``summary.csv``, ``summary.md``, ``comparison.csv`` (when both backends ran), ``ablations.csv`` (variants vs
their base, ``--compare`` pairs: ``lit_bench.analysis.paired``) and the figures ``curves_<env>``, ``training_<env>``
(from ``train/metrics.csv``), ``final_scores``, ``throughput``, ``comparison``, ``ablations`` and, over two or more
envs, ``suite`` with ``suite.csv`` and ``normalization.csv`` (.png/.pdf, or ``--formats``), in one visual language
(``analysis.style``). The ratio to SB3 is against the config's own ``backend=sb3`` runs (n seeds), else the RL Zoo
benchmark at its own budget (``summarize.with_ratio``). "Final" is the
last evaluation, at the end of the budget, as on the console and in the sweep table. Scores are deterministic
evaluation returns; the point estimate across seeds is the IQM with a stratified-bootstrap 95% CI (fixed seed, so
reports are reproducible), flagged under ``aggregate.MIN_SEEDS_FOR_CI`` seeds. Runs are grouped by (sweep, algo,
backend, env, config), never by seed number alone; damaged run files are named on stderr and left out.
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing as mp
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from lit_bench.analysis import aggregate as agg
from lit_bench.analysis import plot, style, suite, suite_page, training
from lit_bench.analysis.cache import Parsed
from lit_bench.analysis.hpo import plot_sweep
from lit_bench.analysis.load import evaluations_table, read_runs, runs_table
from lit_bench.analysis.normalize import normalization_table
from lit_bench.analysis.paired import CompareError, ablation_figure, ablation_markdown, ablation_table
from lit_bench.analysis.reference import reference_curve, reference_score
from lit_bench.analysis.summarize import (
    GROUP,
    Returns,
    comparison_table,
    curve_bands,
    group_key,
    run_table,
    summary_table,
)
from lit_bench.store.rundir import RunDir, atomic_write, atomic_write_text

FLAG = "‡"
OVERSHOOT = "§"  # a config that trained more env steps than its budget (the last rollout runs to its end)


def label(row: pd.Series | tuple, several_sweeps: bool, *, backend: bool = True) -> str:
    """``algo[variant] / backend (sweep)`` for tables and figures (the sweep only when several are shown)."""
    text = str(row.algo) + (f"[{row.variant}]" if row.variant else "")
    text += f" / {row.backend}" if backend else ""
    return text + (f" ({row.sweep})" if several_sweeps else "")


def markdown(summary: pd.DataFrame, comparison: pd.DataFrame | None = None, links_from: Path | None = None) -> str:
    """The summary (and the lit-vs-SB3 comparison) as Markdown a person can read; runs with a ``video/final.mp4``
    get links in a ``video`` column (relative to ``links_from`` when given)."""
    several = summary.sweep.nunique() > 1
    videos = summary.get("videos", pd.Series("", index=summary.index)).fillna("")
    video_column = bool(videos.str.len().gt(0).any())
    lines = [
        f"Final = {agg.FINAL}; IQM across seeds [95% stratified bootstrap CI]; n = seeds with a final score; "
        f"{FLAG} = under {agg.MIN_SEEDS_FOR_CI} seeds, the CI is little more than the range of the scores.",
        "",
        "| run | env | n (other runs) | final IQM [95% CI] | ratio to SB3 (against, n) | RL Zoo at this budget "
        "(1 seed) | RL Zoo benchmark (1 agent) | steps to threshold (solved / runs) | env steps/s (min-max) |"
        + " video |"
        * video_column,
        "|---|---|---|---|---|---|---|---|---|" + "---|" * video_column,
    ]
    sources, overshoots = {}, []
    for r in summary.itertuples():
        trained = getattr(r, "trained", r.budget)
        over = bool(np.isfinite(trained) and np.isfinite(r.budget) and trained != r.budget)
        if over:
            overshoots.append(
                f"{OVERSHOOT} {label(r, several)} on {r.env}: {trained:.0f} env steps trained (budget="
                f"{r.budget:.0f}): the last rollout runs to its end, as in SB3; labelled and compared "
                f"with SB3 at {trained:.0f}."
            )
        bench = "-"
        if np.isfinite(r.sb3_reference):
            flag = "" if r.reference_same_version else f" ({r.sb3_reference_env}†)"
            bench = f"{r.sb3_reference:.1f} @ {_steps(r.sb3_reference_budget)}{flag}"
        at_budget = "-"
        if np.isfinite(r.reference_at_budget):
            algo = r.base if isinstance(getattr(r, "base", None), str) else r.algo  # a variant: its base's reference
            key = f"{algo} on {r.env_id} at {_steps(trained)}"  # one footnote per reference, shared by rows
            sources.setdefault(key, (r.reference_at_budget_how, r.reference_at_budget_source))
            at_budget = f"{r.reference_at_budget:.1f} [{list(sources).index(key) + 1}]"
        elif np.isfinite(r.sb3_reference) and trained > 0:
            at_budget = "none at " + _steps(trained)
        to_threshold = "-"
        if np.isfinite(r.threshold):
            reached = _steps(r.steps_to_threshold_median) if np.isfinite(r.steps_to_threshold_median) else "never"
            to_threshold = f"{reached} ({r.solved_seeds}/{r.threshold_runs})"
        lines.append(
            f"| {label(r, several)}{' ' + OVERSHOOT if over else ''} | {r.env} | {_runs(r)} | {_score(r)} | "
            f"{_ratio(r)} | {at_budget} | {bench} | {to_threshold} | {_fps(r)} |"
            + (f" {_video_links(videos[r.Index], links_from)} |" if video_column else "")
        )
    lines.append("")
    lines += [f"[{i}] SB3 {name}: {how} ({source})" for i, (name, (how, source)) in enumerate(sources.items(), 1)]
    lines.append(
        "Ratio: the final IQM over SB3's: the same config's backend=sb3 runs when there are any (n seeds), "
        "else the RL Zoo benchmark when trained for this budget (one agent); the Zoo's single-seed eval "
        "curve below its budget is shown, never a denominator."
    )
    lines += overshoots
    lines.append(
        f"Steps to threshold: the first evaluation from which {agg.THRESHOLD_WINDOW} evaluations in a row "
        "reach the env's threshold (median over runs that did)."
    )
    if (summary.reference_same_version == False).any():  # noqa: E712 - None means no reference
        lines.append(
            "† SB3's reference was trained on an older env version (see results/reference/"
            "env_version_map.csv); compare with care."
        )
    if comparison is not None and not comparison.empty:
        lines += ["", comparison_markdown(comparison, several)]
    return "\n".join(lines) + "\n"


def _video_links(paths: str, links_from: Path | None) -> str:
    from lit_bench.run.video import (
        video_links,  # (lit_bench.run.video imports SB3 and torch: 0.4 GB and 3 s, only for videos)
    )

    return video_links(paths, links_from)


def comparison_markdown(comparison: pd.DataFrame, several_sweeps: bool = False) -> str:
    lines = [
        f"## lit vs SB3, paired by seed (final = {agg.FINAL})",
        "",
        "| run | env | n | lit IQM | SB3 IQM | lit - SB3 per seed | IQM(lit) - IQM(SB3) [95% CI] | P(lit > SB3) "
        "| verdict | env steps/s lit / SB3 (min-max) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in comparison.itertuples():
        per_seed = ", ".join(f"{s}: {d:+.1f}" for s, d in zip(r.seeds, r.differences))
        ci = f" [{r.ci_low:+.1f}, {r.ci_high:+.1f}]{FLAG if r.ci_flagged else ''}" if r.n > 1 else ""
        ratio = (
            "-"
            if not np.isfinite(r.fps_ratio_median)
            else f"{r.fps_ratio_median:.2f}x"
            + (f" ({r.fps_ratio_min:.2f}-{r.fps_ratio_max:.2f})" if r.fps_ratio_min != r.fps_ratio_max else "")
        )
        lines.append(
            f"| {label(r, several_sweeps, backend=False)} | {r.env} | {r.n} | {r.lit_iqm:.1f} | {r.sb3_iqm:.1f} | "
            f"{per_seed} | {r.iqm_difference:+.1f}{ci} | "
            f"{r.probability_of_improvement:.2f} | {r.verdict} | {ratio} |"
        )
    lines += [
        "",
        f"The CI resamples seeds jointly for both backends (a paired, stratified bootstrap); the verdict "
        f'reads it ("lit better" / "lit worse" when it excludes 0, else "indistinguishable") and is '
        f"withheld under {agg.MIN_SEEDS_FOR_CI} seeds ({FLAG}).",
    ]
    return "\n".join(lines)


def _ratio(r: tuple) -> str:
    """The ratio to SB3 and what it is against (``summarize.with_ratio``)."""
    if not np.isfinite(r.ratio_to_reference):
        return "-"
    against = "SB3 runs" if r.ratio_against == "SB3 runs of this config" else "Zoo benchmark"
    return f"{r.ratio_to_reference:.2f} ({against}, n={r.ratio_n})"


def _runs(r: tuple) -> str:
    others = [f"{getattr(r, k)} {k}" for k in ("failed", "incomplete", "damaged") if getattr(r, k)]
    return f"{r.seeds}" + (f" ({', '.join(others)})" if others else "")


def _score(r: tuple) -> str:
    if not np.isfinite(r.final_iqm):
        return "-"
    if not np.isfinite(r.ci_low):
        return f"{r.final_iqm:.1f}"
    return f"{r.final_iqm:.1f} [{r.ci_low:.1f}, {r.ci_high:.1f}]{FLAG if r.ci_flagged else ''}"


def _fps(r: tuple) -> str:
    if not np.isfinite(r.fps_median):
        return "-"
    return (
        f"{r.fps_median:.0f} ({r.fps_low:.0f}-{r.fps_high:.0f})" if r.fps_low != r.fps_high else (f"{r.fps_median:.0f}")
    )


def _steps(value: float) -> str:
    return f"{value / 1e6:g}M" if value >= 1e6 else f"{value / 1e3:g}k" if value >= 1e3 else f"{value:g}"


DPI = 120


def _save(named: tuple[plt.Axes, str] | None, out: Path, suffixes: Sequence[str]) -> list[Path]:
    """Write a figure as ``<out>/<name><suffix>`` and close it (nothing for None: a figure without data).

    The layout and the tight bounding box are computed once, for the PNG's resolution, and kept for every format
    (``savefig(bbox_inches="tight")`` lays the figure out again, in a dry-run draw, for each file; the layout engine
    alone gives the same layout at ~60% of the cost). PNGs are compressed lightly: the same pixels, encoded ~1.5x
    faster.
    """
    if named is None:
        return []
    ax, name = named
    figure = ax.get_figure(root=True)  # (the whole figure when ax is in a subfigure)
    figure.set_dpi(DPI)
    if (engine := figure.get_layout_engine()) is not None:
        engine.execute(figure)
    bbox = figure.get_tightbbox(figure.canvas.get_renderer()).padded(plt.rcParams["savefig.pad_inches"])
    figure.set_layout_engine("none")
    paths = []
    for suffix in suffixes:
        path = out / f"{name}{suffix}"
        options = {"pil_kwargs": {"compress_level": 1}} if suffix == ".png" else {}
        atomic_write(
            path, lambda tmp, s=suffix, o=options: figure.savefig(tmp, dpi=DPI, format=s[1:], bbox_inches=bbox, **o)
        )
        paths.append(path)
    plt.close(figure)
    return paths


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
    ``workers`` > 1 draws the figures in that many processes, this one and ``workers - 1`` forked ones (each figure
    whole in one of them: the same files as drawn here alone); a figure that fails, or a worker that dies, ends the
    report with an error.
    """
    several = summary.sweep.nunique() > 1
    look = style.Look.of(summary)  # one colour per algorithm (shades per config), decided once for every figure
    labelled = summary.assign(label=short_labels(summary))
    returns = evals if isinstance(evals, Returns) else Returns.of(evals)
    curves: list[Drawing] = [
        partial(_curves, env, rows, partial(curve_bands, None, rows, seed=seed, returns=returns), look, several, x)
        for env, rows in summary.groupby("env", sort=True)
    ]
    per_config: list[Drawing] = [
        partial(_final_scores, labelled, look),
        partial(_throughput, labelled, comparison, look),
        partial(_comparison, comparison, several),
        partial(ablation_figure, ablations),
        *(extra or ()),
    ]
    drawings = curves + per_config
    workers = min(workers, len(drawings)) if "fork" in mp.get_all_start_methods() else 1
    if workers <= 1:
        return [path for draw in drawings for path in _save(draw(), out, suffixes)]
    fork = mp.get_context("fork")
    order = [*range(len(curves), len(drawings)), *range(len(curves))]  # the largest (a row per config) first
    queue = _Queue(drawings, order, fork.Value("i"), out, tuple(suffixes))
    gc.freeze()  # (what the workers share with this process stays out of their garbage collection: less copied)
    try:
        with ProcessPoolExecutor(workers - 1, mp_context=fork, initializer=_receive, initargs=(queue,)) as pool:
            others = [pool.submit(_drain) for _ in range(workers - 1)]
            try:
                written = queue.drain()  # this process draws too
            finally:
                queue.close()  # (after an error here: the workers stop after their current figure)
            for future in others:
                written.update(future.result())
    except BrokenProcessPool as error:
        raise SystemExit(f"report: a process drawing the figures died ({error}); the figures are incomplete") from None
    finally:
        gc.unfreeze()
    return [path for i in range(len(drawings)) for path in written[i]]


Drawing = Callable[[], "tuple[plt.Axes, str] | None"]  # a figure and its file name (None: no data to draw)


@dataclass
class _Queue:
    """The report's figures, drawn one at a time by whichever process (this one or a forked worker) takes the next:
    ``taken`` counts the figures taken, in ``order``, across processes."""

    drawings: list[Drawing]
    order: list[int]
    taken: Any  # a multiprocessing Value("i")
    out: Path
    suffixes: tuple[str, ...]

    def drain(self) -> dict[int, list[Path]]:
        """Draw and save figures until none is left: their files by position in ``drawings``."""
        written = {}
        while True:
            with self.taken.get_lock():
                k, self.taken.value = self.taken.value, self.taken.value + 1
            if k >= len(self.order):
                return written
            i = self.order[k]
            written[i] = _save(self.drawings[i](), self.out, self.suffixes)

    def close(self) -> None:
        """No more figures for anyone."""
        with self.taken.get_lock():
            self.taken.value = len(self.order)


_queue: list[_Queue] = []  # in a figure worker: the report's queue (set by the pool's initializer, inherited by fork)


def _receive(queue: _Queue) -> None:
    _queue[:] = [queue]


def _drain() -> dict[int, list[Path]]:
    """In a figure worker: draw figures from the queue until none is left."""
    return _queue[0].drain()


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
    short = dict(zip(configs, style.short_labels(configs, with_sweep=several)))
    named, styles, seeds, references = {}, {}, {}, {}
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
    notes = {c: _seeds_note(seeds[c]) for c in configs}
    same = len(set(notes.values())) == 1  # then said once, in the title
    handles = [
        Line2D(
            [],
            [],
            color=look.line(*c, "lit").color,
            marker=look.marker[c[1]],
            mfc="none",
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


def short_labels(rows: pd.DataFrame, *, backend: bool = True) -> list[str]:
    """Figure labels of summary or comparison rows: the algorithm and the overrides that differ among them
    (``style.short_labels``), the backend, and the env when there are several (full strings: the tables)."""
    configs = list(zip(rows.sweep, rows.algo, rows.variant.fillna("")))
    names = style.short_labels(configs, with_sweep=rows.sweep.nunique() > 1)
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
        short = style.short_labels(configs, with_sweep=rows.sweep.nunique() > 1)
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
        + (f"\n{FLAG} under {agg.MIN_SEEDS_FOR_CI} seeds: the CI is unreliable" if finite.ci_flagged.any() else "")
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


def _comparison(comparison: pd.DataFrame | None, several: bool) -> tuple[plt.Axes, str] | None:
    if comparison is None or comparison.empty:
        return None
    rows = comparison.assign(
        label=[
            f"{name} / {r.env}"
            for name, r in zip(
                style.short_labels(
                    list(zip(comparison.sweep, comparison.algo, comparison.variant.fillna(""))), with_sweep=several
                ),
                comparison.itertuples(),
            )
        ],
        note=[
            f"n={r.n}, P(lit>SB3)={r.probability_of_improvement:.2f}, verdict: {r.verdict}"
            + (f", fps x{r.fps_ratio_median:.2f}" if np.isfinite(r.fps_ratio_median) else "")
            for r in comparison.itertuples()
        ],
    )
    return plot.paired_differences(plot.new_axes(height=plot.rows_height(2 * len(rows)) + 0.4), rows), "comparison"


def _training(env: str, runs: pd.DataFrame, look: style.Look, wanted: Sequence[str]) -> tuple[plt.Axes, str] | None:
    """One env's training metrics (``train/metrics.csv``) against env steps: a panel per metric, a band per config
    and backend in the curves' styles, one legend; None when no run of the env has the file."""
    if not any(os.path.isfile(os.path.join(d, "train", "metrics.csv")) for d in runs.run_dir):
        return None  # (one stat per run: cheap at 10,000 runs without them)
    long = training.load_metrics(runs)
    metrics = training.chosen_metrics(long, list(wanted))
    if not metrics:
        return None
    configs = list(dict.fromkeys(zip(long.sweep, long.algo, long.variant)))
    short = dict(zip(configs, style.short_labels(configs, with_sweep=len({c[0] for c in configs}) > 1)))
    current = style.current()
    _, axes = plt.subplots(1, len(metrics), squeeze=False, layout="constrained", figsize=(current.wide, current.height))
    handles = {}
    for ax, metric in zip(axes[0], metrics):
        bands, lines = {}, {}
        for (sweep, algo, variant, backend), group in long.groupby(["sweep", "algo", "variant", "backend"]):
            name = f"{short[(sweep, algo, variant)]} / {backend}"
            band = training.metric_band(group, metric)
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


def _suite_page(found: suite_page.Suite, seed: int, aggregates: pd.DataFrame) -> tuple[plt.Axes, str]:
    return suite_page.draw(found, seed=seed, aggregates=aggregates), "suite"


def _ratio_note(row: tuple, comparison: pd.DataFrame | None) -> str:
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
    return f"= {m.fps_ratio_median:.2f}x SB3 ({m.fps_ratio_min:.2f}-{m.fps_ratio_max:.2f})"


def warn_damaged(runs: pd.DataFrame) -> None:
    """One line per damaged run file on stderr: named, and left out of every statistic."""
    for problem in runs.loc[runs.status == "damaged", "problem"]:
        print(f"warning: {problem}; run left out", file=sys.stderr)


FORMATS = ("png", "pdf")
X_AXES = {"steps": "timesteps", "wall": "wall_time_s"}  # --x: the eval.csv column on the curves' x-axis


def usable_cpus() -> int:
    """The CPUs this process may run on (the default number of figure workers)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def write_report(
    paths: Sequence[str | Path],
    out: Path,
    *,
    seed: int = 0,
    formats: Sequence[str] = FORMATS,
    workers: int | None = None,
    x: str = "steps",
    look: str = "screen",
    compare: Sequence[tuple[str, str]] = (),
) -> pd.DataFrame:
    """Everything the CLI writes (figures in ``formats``, drawn by ``workers`` processes, default
    ``usable_cpus()``; ``x`` and ``look``: the CLI's ``--x`` and ``--style``; ``compare``: pairs of config names,
    ``lit_bench.analysis.paired``); returns the summary table."""
    return _write(
        paths,
        out,
        seed=seed,
        formats=formats,
        workers=workers or usable_cpus(),
        x=X_AXES[x],
        look=look,
        compare=compare,
    )[0]


def tables(
    paths: Sequence[str | Path], *, seed: int = 0, workers: int = 1
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``(evals, summary, comparison)`` of the runs under ``paths``; damaged runs named on stderr and left out (run
    files not cached are parsed by ``workers`` processes).

    Exits with one line when a path is missing, there are no runs, or none of them completed.
    """
    parsed, runs, _, summary, comparison, _, _ = _tables(paths, seed=seed, workers=workers)
    return evaluations_table(parsed, runs, ["mean_return"]), summary, comparison  # (the report uses the returns only)


def _tables(
    paths: Sequence[str | Path], *, seed: int = 0, workers: int = 1, compare: Sequence[tuple[str, str]] = ()
) -> tuple[Parsed, pd.DataFrame, Returns, pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``tables`` without the long table: ``(parsed runs, runs, their returns, summary, comparison, per run,
    ablations)`` (ablations: ``lit_bench.analysis.paired``, variants vs their bases and the ``compare`` pairs)."""
    where = ", ".join(map(str, paths))
    try:
        parsed = read_runs(paths, workers=workers)  # one pass over the files
    except FileNotFoundError as error:
        raise SystemExit(f"report: {error}") from None
    runs = runs_table(parsed)
    if runs.empty:
        raise SystemExit(f"report: no run directories under {where}")
    warn_damaged(runs)
    if not (runs.status == "completed").any():
        counts = ", ".join(f"{n} {status}" for status, n in runs.status.value_counts().sort_index().items())
        raise SystemExit(f"report: none of the {len(runs)} runs under {where} completed ({counts}); nothing to report")
    returns = Returns.of_parsed(parsed, runs)
    per_run = run_table(runs, None, returns=returns)  # once for both tables
    summary = summary_table(runs, None, seed=seed, per_run=per_run)
    try:
        ablations = ablation_table(runs, per_run, compare=list(compare), seed=seed)
    except CompareError as error:
        raise SystemExit(f"report: {error}") from None
    return (
        parsed,
        runs,
        returns,
        with_videos(summary, runs),
        comparison_table(runs, None, seed=seed, per_run=per_run),
        per_run,
        ablations,
    )


def with_videos(summary: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """The summary with a ``videos`` column: each config's runs' ``video/final.mp4`` files, space separated."""
    video = str(RunDir("").final_video)  # the file's path inside a run directory
    dirs_of = {group_key(key): group.run_dir for key, group in runs.groupby(GROUP, sort=False, dropna=False)}

    def videos(row: pd.Series) -> str:  # (str paths: Path objects were most of the time at 10,000 runs)
        paths = (os.path.join(d, video) for d in dirs_of.get(group_key(tuple(row[k] for k in GROUP)), ()))
        return " ".join(v for v in paths if os.path.isfile(v))

    return summary.assign(videos=[videos(row) for _, row in summary.iterrows()] if len(summary) else [])


def _write(
    paths: Sequence[str | Path],
    out: Path,
    *,
    seed: int = 0,
    formats: Sequence[str] = FORMATS,
    workers: int = 1,
    x: str = "timesteps",
    look: str = "screen",
    train_metrics: Sequence[str] = (),
    compare: Sequence[tuple[str, str]] = (),
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Write the report; returns the summary, the lit-vs-SB3 comparison and the other paired comparisons."""
    parsed, runs, returns, summary, comparison, per_run, ablations = _tables(
        paths, seed=seed, workers=workers, compare=compare
    )
    style.use(look)
    look_of = style.Look.of(summary)
    found = suite_page.suite_of(per_run, look_of)
    if x != "timesteps":  # the curves against another column of eval.csv (the tables stay per env step)
        returns = Returns.of_parsed(parsed, runs, x=x)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "summary.csv", summary.to_csv(index=False))
    atomic_write_text(out / "summary.md", markdown(summary, comparison, out) + _ablations_text(ablations))
    if not comparison.empty:
        atomic_write_text(out / "comparison.csv", comparison.to_csv(index=False))
    extra = []
    extra += [
        partial(_training, env, rows, look_of, train_metrics)
        for env, rows in runs.groupby("env", sort=True)
        if train_metrics != ["none"]
    ]
    if found is not None:  # normalized scores over several envs: the suite's tables and page
        aggregates = suite.aggregate_table(found.scores, seed=seed)
        atomic_write_text(out / "suite.csv", aggregates.to_csv(index=False))
        atomic_write_text(out / "normalization.csv", normalization_table(found.tasks).to_csv(index=False))
        extra.append(partial(_suite_page, found, seed, aggregates))
    if not ablations.empty:
        atomic_write_text(out / "ablations.csv", ablations.to_csv(index=False))
    figures(
        returns,
        summary,
        out,
        comparison=comparison,
        seed=seed,
        suffixes=[f".{f}" for f in formats],
        workers=workers,
        x=x,
        extra=extra,
        ablations=ablations,
    )
    for path in paths:  # a sweep directory of an Optuna study: its figures too (lit_bench.analysis.hpo)
        plot_sweep(Path(path), out)
    return summary, comparison, ablations


def _ablations_text(ablations: pd.DataFrame) -> str:
    return f"\n{ablation_markdown(ablations)}\n" if len(ablations) else ""


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="run directories, sweep directories or globs")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: <first run path>/report)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap")
    parser.add_argument(
        "--formats",
        nargs="+",
        choices=FORMATS,
        default=list(FORMATS),
        help="file formats of the figures (png alone: ~30%% less time drawing)",
    )
    parser.add_argument(
        "--workers",
        type=_positive,
        default=usable_cpus(),
        help="processes drawing the figures (default: the usable CPUs; 1: all in this process)",
    )
    parser.add_argument(
        "--style",
        choices=list(style.STYLES),
        default="screen",
        help="figure sizes and fonts: screen, or paper (one column of a two-column paper)",
    )
    parser.add_argument(
        "--x",
        choices=list(X_AXES),
        default="steps",
        help="x-axis of the learning curves: env steps, or wall-clock seconds of training",
    )
    parser.add_argument(
        "--train-metrics",
        nargs="+",
        default=[],
        metavar="METRIC",
        help="train/metrics.csv columns drawn in training_<env> (default: the rollout return and "
        "the main losses present; none: no training figures)",
    )
    parser.add_argument(
        "--compare",
        nargs=2,
        action="append",
        default=[],
        metavar=("A", "B"),
        help="pair two configs by seed, each named ALGO[@BACKEND][[VARIANT]] (e.g. my_ppo ppo, "
        "ppo ppo@sb3); repeatable. Variants (base: <algo>) are paired with their base without it",
    )
    args = parser.parse_args(argv)
    out = args.out or Path(str(args.runs[0]).rstrip("*/")) / "report"
    writable_out(out)
    try:
        summary, comparison, ablations = _write(
            args.runs,
            out,
            seed=args.seed,
            formats=args.formats,
            workers=args.workers,
            x=X_AXES[args.x],
            look=args.style,
            train_metrics=args.train_metrics,
            compare=args.compare,
        )
    except OSError as error:  # e.g. the disk filled while the figures were written
        raise SystemExit(
            f"report: cannot write the report to {out} ({error.strerror or error}); "
            f"choose another folder with --out DIR"
        ) from None
    print(markdown(summary, comparison) + _ablations_text(ablations))
    print(f"report written to {out}/ (summary.csv, summary.md, {'comparison.csv, ' if len(comparison) else ''}figures)")


def writable_out(out: Path) -> None:
    """Exit with one line unless ``out`` is a folder this process can write in, or can be made in one: checked before
    the runs are read."""
    existing = next(p for p in (out, *out.absolute().parents) if p.exists())  # (nothing is made before the runs)
    if not existing.is_dir():
        raise SystemExit(f"report: --out {out}: {existing} is a file, not a folder; choose a folder with --out DIR")
    try:
        tempfile.TemporaryFile(dir=existing).close()
    except OSError as error:
        raise SystemExit(
            f"report: cannot write the report to {out} ({error.strerror or error}); "
            f"choose a writable folder with --out DIR"
        ) from None


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: a whole number >= 1 (processes)")
    return int(text)


if __name__ == "__main__":
    main()

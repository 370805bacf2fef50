"""Summary table, lit-vs-SB3 comparison and figures of one or more sweeps, against SB3's reference at equal budgets.

    python -m lit_bench.report results/runs/<sweep> [more runs or globs] [--out DIR] [--formats png pdf]

Writes ``summary.csv``, ``summary.md``, ``comparison.csv`` (when both backends ran) and the figures
``curves_<env>``, ``final_scores``, ``throughput`` and ``comparison`` (.png/.pdf, or ``--formats``). "Final" is the
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

from lit_bench.analysis import aggregate as agg
from lit_bench.analysis import plot
from lit_bench.analysis.cache import Parsed
from lit_bench.analysis.hpo import plot_sweep
from lit_bench.analysis.load import evaluations_table, read_runs, runs_table
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
        "| run | env | n (other runs) | final IQM [95% CI] | SB3 at this budget | ratio | SB3 benchmark | "
        "steps to threshold (solved / runs) | env steps/s (min-max) |" + " video |" * video_column,
        "|---|---|---|---|---|---|---|---|---|" + "---|" * video_column,
    ]
    sources = {}
    for r in summary.itertuples():
        bench = "-"
        if np.isfinite(r.sb3_reference):
            flag = "" if r.reference_same_version else f" ({r.sb3_reference_env}†)"
            bench = f"{r.sb3_reference:.1f} @ {_steps(r.sb3_reference_budget)}{flag}"
        at_budget = "-"
        if np.isfinite(r.reference_at_budget):
            key = f"{r.algo} on {r.env_id} at {_steps(r.budget)}"  # one footnote per reference, shared by rows
            sources.setdefault(key, (r.reference_at_budget_how, r.reference_at_budget_source))
            at_budget = f"{r.reference_at_budget:.1f} [{list(sources).index(key) + 1}]"
        elif np.isfinite(r.sb3_reference) and r.budget > 0:
            at_budget = "none at " + _steps(r.budget)
        to_threshold = "-"
        if np.isfinite(r.threshold):
            reached = _steps(r.steps_to_threshold_median) if np.isfinite(r.steps_to_threshold_median) else "never"
            to_threshold = f"{reached} ({r.solved_seeds}/{r.threshold_runs})"
        lines.append(
            f"| {label(r, several)} | {r.env} | {_runs(r)} | {_score(r)} | {at_budget} | "
            f"{_fmt(r.ratio_to_reference, '.2f')} | {bench} | {to_threshold} | {_fps(r)} |"
            + (f" {_video_links(videos[r.Index], links_from)} |" if video_column else "")
        )
    lines.append("")
    lines += [f"[{i}] SB3 {name}: {how} ({source})" for i, (name, (how, source)) in enumerate(sources.items(), 1)]
    lines.append(f"Steps to threshold: the first evaluation from which {agg.THRESHOLD_WINDOW} evaluations in a row "
                 "reach the env's threshold (median over runs that did).")
    if (summary.reference_same_version == False).any():  # noqa: E712 - None means no reference
        lines.append("† SB3's reference was trained on an older env version (see results/reference/"
                     "env_version_map.csv); compare with care.")
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
        ratio = "-" if not np.isfinite(r.fps_ratio_median) else f"{r.fps_ratio_median:.2f}x" + (
            f" ({r.fps_ratio_min:.2f}-{r.fps_ratio_max:.2f})" if r.fps_ratio_min != r.fps_ratio_max else "")
        lines.append(
            f"| {label(r, several_sweeps, backend=False)} | {r.env} | {r.n} | {r.lit_iqm:.1f} | {r.sb3_iqm:.1f} | "
            f"{per_seed} | {r.iqm_difference:+.1f}{ci} | "
            f"{r.probability_of_improvement:.2f} | {r.verdict} | {ratio} |"
        )
    lines += ["", f"The CI resamples seeds jointly for both backends (a paired, stratified bootstrap); the verdict "
              f"reads it (\"lit better\" / \"lit worse\" when it excludes 0, else \"indistinguishable\") and is "
              f"withheld under {agg.MIN_SEEDS_FOR_CI} seeds ({FLAG})."]
    return "\n".join(lines)


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
    return f"{r.fps_median:.0f} ({r.fps_low:.0f}-{r.fps_high:.0f})" if r.fps_low != r.fps_high else (
        f"{r.fps_median:.0f}")


def _fmt(value: float, spec: str) -> str:
    return format(value, spec) if np.isfinite(value) else "-"


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
    figure = ax.figure
    figure.set_dpi(DPI)
    if (engine := figure.get_layout_engine()) is not None:
        engine.execute(figure)
    bbox = figure.get_tightbbox(figure.canvas.get_renderer()).padded(plt.rcParams["savefig.pad_inches"])
    figure.set_layout_engine("none")
    paths = []
    for suffix in suffixes:
        path = out / f"{name}{suffix}"
        options = {"pil_kwargs": {"compress_level": 1}} if suffix == ".png" else {}
        atomic_write(path, lambda tmp, s=suffix, o=options: figure.savefig(tmp, dpi=DPI, format=s[1:], bbox_inches=bbox,
                                                                         **o))
        paths.append(path)
    plt.close(figure)
    return paths


def figures(evals: pd.DataFrame | Returns, summary: pd.DataFrame, out: Path, *,
            comparison: pd.DataFrame | None = None, seed: int = 0, suffixes: Sequence[str] = (".png", ".pdf"),
            workers: int = 1) -> list[Path]:
    """Learning curves per env (with SB3's reference), final-score intervals, throughput, lit-vs-SB3 differences.

    ``evals``: the long table, or its ``Returns.of(evals)`` (all the figures read of it). ``workers`` > 1 draws the
    figures in that many processes, this one and ``workers - 1`` forked ones (each figure whole in one of them: the
    same files as drawn here alone); a figure that fails, or a worker that dies, ends the report with an error.
    """
    several = summary.sweep.nunique() > 1
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    colour_of: dict[tuple, str] = {}
    for r in summary.itertuples():  # one colour per algorithm (and config); the backend sets the line style
        colour_of.setdefault((r.sweep, r.algo, r.variant), palette[len(colour_of) % len(palette)])
    labelled = summary.assign(label=[label(r, several) for r in summary.itertuples()])
    returns = evals if isinstance(evals, Returns) else Returns.of(evals)
    curves: list[Drawing] = [
        partial(_curves, env, rows, partial(curve_bands, None, rows, seed=seed, returns=returns), colour_of, several)
        for env, rows in summary.groupby("env", sort=True)]
    per_config: list[Drawing] = [partial(_final_scores, labelled),
                                 partial(_throughput, labelled, comparison, colour_of),
                                 partial(_comparison, comparison, several)]
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


def _curves(env: str, rows: pd.DataFrame, bands_of: Callable[[], dict[Any, pd.DataFrame]],
            colour_of: dict[tuple, str], several: bool) -> tuple[plt.Axes, str] | None:
    """One env's learning curves (a band per config, SB3's reference curve once per algorithm and config)."""
    bands = bands_of()  # (computed here: in the figure's worker when drawn in parallel)
    named, styles, references = {}, {}, {}
    for r in rows.itertuples():
        if r.Index not in bands:
            continue
        name = label(r, several)
        named[name] = bands[r.Index]
        styles[name] = plot.backend_style(r.backend, colour_of[(r.sweep, r.algo, r.variant)])
        ref = reference_score(r.algo, r.env_id) if isinstance(r.env_id, str) else None
        if ref is not None and (r.sweep, r.algo, r.variant) not in {k for k, _ in references.values()}:
            version = "" if ref.same_version else f", {ref.reference_env_id}"
            references[name] = ((r.sweep, r.algo, r.variant), plot.ReferenceMark(
                ref.score, ref.budget, f"SB3 zoo {r.algo}{version}", reference_curve(r.algo, r.env_id)))
    if not named:
        return None
    first = rows.iloc[0]
    ax = plot.learning_curves(
        plot.new_axes(), named, styles=styles, references={k: m for k, (_, m) in references.items()},
        threshold=first.threshold if np.isfinite(first.threshold) else None,
        title=f"{env} ({first.env_id}): IQM across seeds, 95% CI",
    )
    return ax, f"curves_{env}"


def _final_scores(labelled: pd.DataFrame) -> tuple[plt.Axes, str] | None:
    finite = labelled[np.isfinite(labelled.final_iqm)]
    if finite.empty:
        return None
    with_ref = finite.assign(label=[f"{r.label} (n={r.seeds}{FLAG if r.ci_flagged else ''})"
                                    for r in finite.itertuples()], reference=finite.reference_at_budget,
                             ci_low=finite.ci_low.fillna(finite.final_iqm),
                             ci_high=finite.ci_high.fillna(finite.final_iqm))
    ax = plot.final_scores(plot.new_axes(height=1.2 + 0.5 * len(finite)), with_ref,
                           xlabel=f"final return ({agg.FINAL}): IQM across seeds, 95% bootstrap CI"
                           + (f"\n{FLAG} under {agg.MIN_SEEDS_FOR_CI} seeds: the CI is unreliable"
                              if finite.ci_flagged.any() else ""))
    return ax, "final_scores"


def _throughput(labelled: pd.DataFrame, comparison: pd.DataFrame | None,
                colour_of: dict[tuple, str]) -> tuple[plt.Axes, str] | None:
    fps = labelled[np.isfinite(labelled.fps_median)].rename(columns={"fps_median": "fps"})
    if fps.empty:
        return None
    fps = fps.assign(note=[_ratio_note(r, comparison) for r in fps.itertuples()],
                     color=[colour_of[(r.sweep, r.algo, r.variant)] for r in fps.itertuples()],
                     hatch=["//" if r.backend == "sb3" else "" for r in fps.itertuples()])
    return plot.throughput(plot.new_axes(height=1 + 0.5 * len(fps)), fps), "throughput"


def _comparison(comparison: pd.DataFrame | None, several: bool) -> tuple[plt.Axes, str] | None:
    if comparison is None or comparison.empty:
        return None
    rows = comparison.assign(
        label=[f"{label(r, several, backend=False)} / {r.env}" for r in comparison.itertuples()],
        note=[f"n={r.n}, P(lit>SB3)={r.probability_of_improvement:.2f}, verdict: {r.verdict}"
              + (f", fps x{r.fps_ratio_median:.2f}" if np.isfinite(r.fps_ratio_median) else "")
              for r in comparison.itertuples()])
    return plot.paired_differences(plot.new_axes(height=1.6 + 0.6 * len(rows)), rows), "comparison"


def _ratio_note(row: tuple, comparison: pd.DataFrame | None) -> str:
    """On a lit bar: its env-steps/s ratio to SB3's on the same seeds (median, min-max)."""
    if comparison is None or comparison.empty or row.backend == "sb3":
        return ""
    match = comparison[(comparison.sweep == row.sweep) & (comparison.algo == row.algo) & (comparison.env == row.env)
                       & (comparison.variant == row.variant)]
    if match.empty or not np.isfinite(match.fps_ratio_median.iloc[0]):
        return ""
    m = match.iloc[0]
    return f"= {m.fps_ratio_median:.2f}x SB3 ({m.fps_ratio_min:.2f}-{m.fps_ratio_max:.2f})"


def warn_damaged(runs: pd.DataFrame) -> None:
    """One line per damaged run file on stderr: named, and left out of every statistic."""
    for problem in runs.loc[runs.status == "damaged", "problem"]:
        print(f"warning: {problem}; run left out", file=sys.stderr)


FORMATS = ("png", "pdf")


def usable_cpus() -> int:
    """The CPUs this process may run on (the default number of figure workers)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def write_report(paths: Sequence[str | Path], out: Path, *, seed: int = 0, formats: Sequence[str] = FORMATS,
                 workers: int | None = None) -> pd.DataFrame:
    """Everything the CLI writes (figures in ``formats``, drawn by ``workers`` processes, default
    ``usable_cpus()``); returns the summary table."""
    return _write(paths, out, seed=seed, formats=formats, workers=workers or usable_cpus())[0]


def tables(paths: Sequence[str | Path], *, seed: int = 0,
           workers: int = 1) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``(evals, summary, comparison)`` of the runs under ``paths``; damaged runs named on stderr and left out (run
    files not cached are parsed by ``workers`` processes).

    Exits with one line when a path is missing, there are no runs, or none of them completed.
    """
    parsed, runs, _, summary, comparison = _tables(paths, seed=seed, workers=workers)
    return evaluations_table(parsed, runs, ["mean_return"]), summary, comparison  # (the report uses the returns only)


def _tables(paths: Sequence[str | Path], *, seed: int = 0,
            workers: int = 1) -> tuple[Parsed, pd.DataFrame, Returns, pd.DataFrame, pd.DataFrame]:
    """``tables`` without the long table: ``(parsed runs, runs, their returns, summary, comparison)``."""
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
    return parsed, runs, returns, with_videos(summary, runs), comparison_table(runs, None, seed=seed, per_run=per_run)


def with_videos(summary: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """The summary with a ``videos`` column: each config's runs' ``video/final.mp4`` files, space separated."""
    video = str(RunDir("").final_video)  # the file's path inside a run directory
    dirs_of = {group_key(key): group.run_dir for key, group in runs.groupby(GROUP, sort=False, dropna=False)}

    def videos(row: pd.Series) -> str:  # (str paths: Path objects were most of the time at 10,000 runs)
        paths = (os.path.join(d, video) for d in dirs_of.get(group_key(tuple(row[k] for k in GROUP)), ()))
        return " ".join(v for v in paths if os.path.isfile(v))

    return summary.assign(videos=[videos(row) for _, row in summary.iterrows()] if len(summary) else [])


def _write(paths: Sequence[str | Path], out: Path, *, seed: int = 0, formats: Sequence[str] = FORMATS,
           workers: int = 1) -> tuple[pd.DataFrame, pd.DataFrame]:
    _, _, returns, summary, comparison = _tables(paths, seed=seed, workers=workers)  # (all the figures need)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "summary.csv", summary.to_csv(index=False))
    atomic_write_text(out / "summary.md", markdown(summary, comparison, out))
    if not comparison.empty:
        atomic_write_text(out / "comparison.csv", comparison.to_csv(index=False))
    figures(returns, summary, out, comparison=comparison, seed=seed, suffixes=[f".{f}" for f in formats],
            workers=workers)
    for path in paths:  # a sweep directory of an Optuna study: its figures too (lit_bench.analysis.hpo)
        plot_sweep(Path(path), out)
    return summary, comparison


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="run directories, sweep directories or globs")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: <first run path>/report)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap")
    parser.add_argument("--formats", nargs="+", choices=FORMATS, default=list(FORMATS),
                        help="file formats of the figures (png alone: ~30%% less time drawing)")
    parser.add_argument("--workers", type=_positive, default=usable_cpus(),
                        help="processes drawing the figures (default: the usable CPUs; 1: all in this process)")
    args = parser.parse_args(argv)
    out = args.out or Path(str(args.runs[0]).rstrip("*/")) / "report"
    summary, comparison = _write(args.runs, out, seed=args.seed, formats=args.formats, workers=args.workers)
    print(markdown(summary, comparison))
    print(f"report written to {out}/ (summary.csv, summary.md, {'comparison.csv, ' if len(comparison) else ''}figures)")


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: a whole number >= 1 (processes)")
    return int(text)


if __name__ == "__main__":
    main()

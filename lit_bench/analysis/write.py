"""Writing a report: its tables (``summary.csv``, ``summary.md``, ``comparison.csv``, ``ablations.csv``, the suite's
``suite.csv`` and ``normalization.csv``) and its figures into one folder, in the chosen style and formats."""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import partial
from pathlib import Path

import pandas as pd

from lit_bench.analysis import style, suite, suite_page
from lit_bench.analysis.figures import figures, suite_figure, training_figure
from lit_bench.analysis.hpo import plot_sweep
from lit_bench.analysis.markdown import ablations_section, markdown
from lit_bench.analysis.normalize import normalization_table
from lit_bench.analysis.pool import Drawing
from lit_bench.analysis.summarize import Returns
from lit_bench.analysis.tables import read_tables
from lit_bench.store.rundir import atomic_write_text

FORMATS = ("png", "pdf")
# each style's formats unless asked (--formats): PDFs, vector with Type 42 fonts, for a paper come with its sizes; a
# screen-sized PDF is no figure for a paper, and a third of the drawing time at 60 configs
STYLE_FORMATS = {"screen": ("png",), "paper": ("png", "pdf")}
X_AXES = {"steps": "timesteps", "wall": "wall_time_s"}  # --x: the eval.csv column on the curves' x-axis


def usable_cpus() -> int:
    """The CPUs this process may run on (the default number of figure workers)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def write_report(
    paths: Sequence[str | Path],
    out: Path,
    *,
    seed: int = 0,
    formats: Sequence[str] | None = None,
    workers: int | None = None,
    x: str = "steps",
    look: str = "screen",
    compare: Sequence[tuple[str, str]] = (),
) -> pd.DataFrame:
    """Everything the CLI writes (figures in ``formats``, default ``STYLE_FORMATS[look]``, drawn by ``workers``
    processes, default ``usable_cpus()``; ``x`` and ``look``: the CLI's ``--x`` and ``--style``; ``compare``: pairs of
    config names, ``lit_bench.analysis.paired``); returns the summary table."""
    return write(
        paths,
        out,
        seed=seed,
        formats=formats,
        workers=workers or usable_cpus(),
        x=X_AXES[x],
        look=look,
        compare=compare,
    )[0]


def write(
    paths: Sequence[str | Path],
    out: Path,
    *,
    seed: int = 0,
    formats: Sequence[str] | None = None,
    workers: int = 1,
    x: str = "timesteps",
    look: str = "screen",
    train_metrics: Sequence[str] = (),
    compare: Sequence[tuple[str, str]] = (),
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Write the report (``x``: the eval.csv column on the curves' x-axis; ``train_metrics``: the CLI's
    ``--train-metrics``); returns the summary, the lit-vs-SB3 comparison and the other paired comparisons."""
    formats = formats or STYLE_FORMATS[look]
    parsed, runs, returns, summary, comparison, per_run, ablations = read_tables(
        paths, seed=seed, workers=workers, compare=compare
    )
    style.use(look)
    look_of = style.Look.of(summary)
    found = suite_page.suite_of(per_run, look_of)
    if x != "timesteps":  # the curves against another column of eval.csv (the tables stay per env step)
        returns = Returns.of_parsed(parsed, runs, x=x)
    del parsed  # (every evaluation of every run: the figures need only the returns)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "summary.csv", summary.to_csv(index=False))
    atomic_write_text(out / "summary.md", markdown(summary, comparison, out) + ablations_section(ablations))
    if not comparison.empty:
        atomic_write_text(out / "comparison.csv", comparison.to_csv(index=False))
    extra: list[Drawing] = [
        partial(training_figure, env, rows, look_of, train_metrics)
        for env, rows in runs.groupby("env", sort=True)
        if train_metrics != ["none"]
    ]
    if found is not None:  # normalized scores over several envs: the suite's tables and page
        aggregates = suite.aggregate_table(found.scores, seed=seed)
        atomic_write_text(out / "suite.csv", aggregates.to_csv(index=False))
        atomic_write_text(out / "normalization.csv", normalization_table(found.tasks).to_csv(index=False))
        extra.append(partial(suite_figure, found, seed, aggregates))
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
    notes = left_out(out, f".{formats[0]}", sorted(runs.env.astype(str).unique()) if train_metrics != ["none"] else [])
    if notes:  # a figure left out is named with why, on the console and in summary.md
        print("\n".join(notes), flush=True)
        text = markdown(summary, comparison, out) + ablations_section(ablations)
        atomic_write_text(out / "summary.md", text + "\n" + "\n".join(notes) + "\n")
    return summary, comparison, ablations


def left_out(out: Path, suffix: str, envs: Sequence[str]) -> list[str]:
    """A note per training figure not drawn (no run of its env wrote training metrics), saying why."""
    return [
        f"note: training_{env} not drawn: no run on {env} has training metrics to draw (train/metrics.csv); they are "
        f"written every log_interval rollouts (on-policy) or episodes (off-policy), so a run shorter than one interval "
        f"has none: rerun with e.g. log_interval=1"
        for env in envs
        if not (out / f"training_{env}{suffix}").exists()
    ]

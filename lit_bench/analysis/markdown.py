"""The report's text: ``summary.md`` (and what the report prints), the summary and the lit-vs-SB3 comparison as
Markdown tables a person can read, with their footnotes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from lit_bench import stats
from lit_bench.analysis.paired import ablation_markdown, per_seed_text

FLAG = "‡"
OVERSHOOT = "§"  # a config that trained more env steps than its budget (the last rollout runs to its end)
MIXED = "¶"  # a config whose runs were trained with different versions of a package that changes numbers
Row = Any  # a row of a table: its itertuples() namedtuple, or a Series, read by column name


def label(row: Row, several_sweeps: bool, *, backend: bool = True) -> str:
    """``algo[variant] / backend (sweep)`` for tables and figures (the sweep only when several are shown)."""
    text = str(row.algo) + (f"[{row.variant}]" if row.variant else "")
    text += f" / {row.backend}" if backend else ""
    return text + (f" ({row.sweep})" if several_sweeps else "")


WALL_CLOCK = " wall-clock"  # a speed of runs that did not record their CPU time: it changes with the machine's load
SPEED_NOTE = (
    "Speed: env steps per CPU-second of training in each run's process (evaluations excluded), the median over "
    "seeds with its min-max; lit / SB3 is the ratio of the same config on the same seed. Speeds marked wall-clock "
    "(runs without recorded CPU time) change with the machine's load: compare them with care."
)


def markdown(summary: pd.DataFrame, comparison: pd.DataFrame | None = None, links_from: Path | None = None) -> str:
    """The summary (and the lit-vs-SB3 comparison) as Markdown a person can read; runs with a ``video/final.mp4``
    get links in a ``video`` column (relative to ``links_from`` when given)."""
    several = summary.sweep.nunique() > 1
    videos = summary.get("videos", pd.Series("", index=summary.index)).fillna("")
    video_column = bool(videos.str.len().gt(0).any())
    lines = [
        f"Final = {stats.FINAL}; IQM across seeds [95% stratified bootstrap CI]; n = seeds with a final score; "
        f"{FLAG} = under {stats.MIN_SEEDS_FOR_CI} seeds, the CI is little more than the range of the scores.",
        "",
        "| run | env | n (other runs) | final IQM [95% CI] | ratio to SB3 (against, n) | RL Zoo at this budget "
        "(1 seed) | RL Zoo benchmark (1 agent) | steps to threshold (solved / runs) | env steps per CPU-s (min-max) |"
        + " video |"
        * video_column,
        "|---|---|---|---|---|---|---|---|---|" + "---|" * video_column,
    ]
    sources: dict[str, tuple[str, str]] = {}
    overshoots: list[str] = []
    mixed: list[str] = []
    for r in summary.itertuples():
        if getattr(r, "versions", ""):
            mixed.append(
                f"{MIXED} {label(r, several)} on {r.env}: its runs were trained with different versions "
                f"({r.versions}): pooled in one row; compare with care, or keep each version's runs in a sweep of "
                "their own."
            )
        trained = getattr(r, "trained", r.budget)
        over = bool(np.isfinite(trained) and np.isfinite(r.budget) and trained != r.budget)
        if over:
            overshoots.append(
                f"{OVERSHOOT} {label(r, several)} on {r.env}: {trained:.0f} env steps trained (budget="
                f"{r.budget:.0f}): the last rollout (ARS: the last update's episodes; its seeds' median) runs to "
                f"its end, as in SB3; labelled and compared with SB3 at {trained:.0f}."
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
            f"| {label(r, several)}{' ' + OVERSHOOT if over else ''}{' ' + MIXED if getattr(r, 'versions', '') else ''}"
            f" | {r.env} | {_runs(r)} | {_score(r)} | "
            f"{_ratio(r)} | {at_budget} | {bench} | {to_threshold} | {_fps(r)} |"
            + (f" {video_links(videos[r.Index], links_from)} |" if video_column else "")
        )
    lines.append("")
    lines += [f"[{i}] SB3 {name}: {how} ({source})" for i, (name, (how, source)) in enumerate(sources.items(), 1)]
    lines.append(
        "Ratio: the final IQM over SB3's: the same config's backend=sb3 runs when there are any (n seeds), "
        "else the RL Zoo benchmark when trained for this budget (one agent); the Zoo's single-seed eval "
        "curve below its budget is shown, never a denominator."
    )
    lines += overshoots
    lines += mixed
    lines += batched_note(summary, several)
    lines.append(SPEED_NOTE)
    lines.append(
        f"Steps to threshold: the first evaluation from which {stats.THRESHOLD_WINDOW} evaluations in a row "
        "reach the env's threshold (median over runs that did)."
    )
    if (summary.reference_same_version == False).any():  # noqa: E712 - None means no reference
        lines.append(
            "† SB3's reference was trained on an older env version (see results/reference/"
            "env_version_map.csv); compare with care."
        )
    if comparison is not None and not comparison.empty:
        lines += ["", comparison_markdown(comparison, several)]
    lines += sb3_section(summary)
    return "\n".join(lines) + "\n"


def batched_note(summary: pd.DataFrame, several_sweeps: bool) -> list[str]:
    """One line naming the configs with seeds trained in batched seed groups (none: no line)."""
    rows = [
        f"{label(r, several_sweeps)} on {r.env} ({r.batched_seeds} of {r.seeds})"
        for r in summary.itertuples()
        if getattr(r, "batched_seeds", 0)
    ]
    if not rows:
        return []
    return [
        "Seeds trained in batched seed groups (seeds_per_process; one model for a config's seeds, each seed drawing "
        "the random numbers of its own process, so its numbers are that run's to float32 rounding and independent of "
        f"the seeds beside it; its CPU time the group's over its seeds): {'; '.join(rows)}."
    ]


def sb3_section(summary: pd.DataFrame) -> list[str]:
    """The commands that add SB3 runs to lit configs that have none (``tables.with_sb3_commands``)."""
    commands = [c for c in dict.fromkeys(summary.get("sb3_command", ())) if c]
    if not commands:
        return []
    return [
        "",
        "## lit vs SB3",
        "",
        "These lit configs have no SB3 runs of the same config, so no lit-vs-SB3 verdict. Run them on SB3 into the "
        "same sweep (completed runs are skipped), then this report again:",
        "",
        "```",
        *commands,
        "```",
    ]


def video_links(paths: str, links_from: Path | None) -> str:
    """Markdown links ``[1](...) [2](...)`` to the space-separated video ``paths`` (relative to ``links_from``)."""
    links = [os.path.relpath(p, links_from) if links_from is not None else p for p in paths.split()]
    return " ".join(f"[{i + 1}]({link})" for i, link in enumerate(links)) or "-"


def comparison_markdown(comparison: pd.DataFrame, several_sweeps: bool = False) -> str:
    lines = [
        f"## lit vs SB3, paired by seed (final = {stats.FINAL})",
        "",
        "| run | env | n | lit IQM | SB3 IQM | lit - SB3 per seed | IQM(lit) - IQM(SB3) [95% CI] | P(lit > SB3) "
        "| verdict | speed lit / SB3 per CPU-s (min-max) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in comparison.itertuples():
        per_seed = per_seed_text(r.seeds, r.differences, "comparison.csv")
        ci = f" [{r.ci_low:+.1f}, {r.ci_high:+.1f}]{FLAG if r.ci_flagged else ''}" if r.n > 1 else ""
        ratio = (
            "-"
            if not np.isfinite(r.fps_ratio_median)
            else f"{r.fps_ratio_median:.2f}x"
            + (f" ({r.fps_ratio_min:.2f}-{r.fps_ratio_max:.2f})" if r.fps_ratio_min != r.fps_ratio_max else "")
            + WALL_CLOCK * (getattr(r, "fps_clock", "wall") == "wall")
        )
        lines.append(
            f"| {label(r, several_sweeps, backend=False)} | {r.env} | {r.n} | {r.lit_iqm:.1f} | {r.sb3_iqm:.1f} | "
            f"{per_seed} | {r.iqm_difference:+.1f}{ci} | "
            f"{r.probability_of_improvement:.2f} | {r.verdict} | {ratio} |"
        )
    lines += [
        "",
        f"The CI resamples seeds jointly for both backends (a paired, stratified bootstrap); the verdict "
        f'reads it ("lit better" / "lit worse" when it excludes 0 and the paired sign-flip test of the per-seed '
        f'differences rejects at 5%; else "indistinguishable"; the test\'s p-value is in comparison.csv) and is '
        f"withheld under {stats.MIN_SEEDS_FOR_VERDICT} seeds, where that test cannot reject.",
        SPEED_NOTE,
    ]
    return "\n".join(lines)


def _ratio(r: Row) -> str:
    """The ratio to SB3 and what it is against (``summarize.with_ratio``)."""
    if not np.isfinite(r.ratio_to_reference):
        return "-"
    against = "SB3 runs" if r.ratio_against == "SB3 runs of this config" else "Zoo benchmark"
    return f"{r.ratio_to_reference:.2f} ({against}, n={r.ratio_n})"


def _runs(r: Row) -> str:
    others = [f"{getattr(r, k)} {k}" for k in ("failed", "incomplete", "damaged") if getattr(r, k)]
    return f"{r.seeds}" + (f" ({', '.join(others)})" if others else "")


def _score(r: Row) -> str:
    if not np.isfinite(r.final_iqm):
        return "-"
    if not np.isfinite(r.ci_low):
        return f"{r.final_iqm:.1f}"
    return f"{r.final_iqm:.1f} [{r.ci_low:.1f}, {r.ci_high:.1f}]{FLAG if r.ci_flagged else ''}"


def _fps(r: Row) -> str:
    if not np.isfinite(r.fps_median):
        return "-"
    return (
        f"{r.fps_median:.0f} ({r.fps_low:.0f}-{r.fps_high:.0f})" if r.fps_low != r.fps_high else (f"{r.fps_median:.0f}")
    ) + WALL_CLOCK * (getattr(r, "fps_clock", "wall") == "wall")


def _steps(value: float) -> str:
    return f"{value / 1e6:g}M" if value >= 1e6 else f"{value / 1e3:g}k" if value >= 1e3 else f"{value:g}"


def ablations_section(ablations: pd.DataFrame) -> str:
    """The paired ablations' table as a section appended to the summary (nothing when there are none)."""
    return f"\n{ablation_markdown(ablations)}\n" if len(ablations) else ""

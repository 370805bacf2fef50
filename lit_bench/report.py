"""Summary table and figures of one or more sweeps, against SB3's reference scores.

    python -m lit_bench.report results/runs/<sweep> [more runs or globs] [--out DIR]

Writes ``summary.csv``, ``summary.md`` and, per env, ``curves_<env>.png/.pdf``, plus ``final_scores`` and
``throughput`` figures. Scores are deterministic evaluation returns; the point estimate across seeds is the IQM with
a stratified-bootstrap 95% CI (fixed seed, so reports are reproducible).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from lit_bench.analysis import aggregate as agg
from lit_bench.analysis import plot
from lit_bench.analysis.load import load_evaluations, load_runs
from lit_bench.analysis.reference import reference_curve, reference_score
from lit_bench.rundir import atomic_write, atomic_write_text

GROUP = ["algo", "backend", "env"]


def summary_table(runs: pd.DataFrame, evals: pd.DataFrame, *, last_n: int = 3, seed: int = 0) -> pd.DataFrame:
    """One row per (algo, backend, env): seeds, final IQM [95% CI], SB3 reference and ratio, steps to threshold, fps."""
    returns = evals[evals.metric == "mean_return"].dropna(subset=["value"])
    rows = []
    for (algo, backend, env), group_runs in runs.groupby(GROUP, sort=True, dropna=False):
        curves = returns[(returns.algo == algo) & (returns.backend == backend) & (returns.env == env)]
        # a final score is measured at the end of the budget: truncated and failed runs have none
        completed = curves[curves.status == "completed"]
        finals = [agg.final_score(c.timesteps, c.value, last_n) for _, c in completed.groupby("seed")]
        env_id = next((e for e in group_runs.env_id if isinstance(e, str)), None)
        threshold = _first_number(group_runs.get("threshold"))
        point, low, high = agg.stratified_bootstrap_ci(np.array(finals), agg.iqm, seed=seed) if finals else (
            np.nan, np.nan, np.nan)
        to_threshold = [agg.steps_to_threshold(c.timesteps, c.value, threshold) for _, c in curves.groupby("seed")]
        ref = reference_score(str(algo), env_id) if env_id else None
        rows.append({
            "algo": algo, "backend": backend, "env": env, "env_id": env_id,
            "seeds": int((group_runs.status == "completed").sum()),
            "failed": int((group_runs.status == "failed").sum()),
            "incomplete": int(group_runs.status.isin(["incomplete", "interrupted"]).sum()),
            "budget": _first_number(group_runs.get("timesteps")),
            "final_iqm": point, "ci_low": low, "ci_high": high,
            "final_mean": float(np.mean(finals)) if finals else np.nan,
            "threshold": threshold,
            "steps_to_threshold_median": float(np.nanmedian(to_threshold)) if np.isfinite(to_threshold).any()
            else np.nan,
            "solved_seeds": int(np.isfinite(to_threshold).sum()),
            "fps_median": float(pd.to_numeric(group_runs.get("fps"), errors="coerce").median()),
            "sb3_reference": ref.score if ref else np.nan,
            "sb3_reference_budget": ref.budget if ref else np.nan,
            "sb3_reference_env": ref.reference_env_id if ref else None,
            "reference_same_version": ref.same_version if ref else None,
            "ratio_to_reference": point / ref.score if ref and ref.score else np.nan,
            "videos": " ".join(str(v) for v in (Path(d) / "video" / "final.mp4" for d in group_runs.run_dir)
                               if v.is_file()),
        })
    return pd.DataFrame(rows)


def _first_number(values: pd.Series | None) -> float:
    if values is None:
        return np.nan
    numbers = pd.to_numeric(values, errors="coerce").dropna()
    return float(numbers.iloc[0]) if not numbers.empty else np.nan


def markdown(summary: pd.DataFrame, links_from: Path | None = None) -> str:
    """The summary as a Markdown table a person can read (versions that differ from SB3's are flagged).

    Runs with a ``video/final.mp4`` get links in a ``video`` column (relative to ``links_from`` when given)."""
    videos = summary.get("videos", pd.Series("", index=summary.index)).fillna("")
    video_column = bool(videos.str.len().gt(0).any())
    lines = [
        "| algo | backend | env | seeds (failed) | final IQM [95% CI] | SB3 reference | ratio | steps to threshold "
        "(solved seeds) | env steps/s |" + (" video |" if video_column else ""),
        "|---|---|---|---|---|---|---|---|---|" + ("---|" if video_column else ""),
    ]
    for r in summary.itertuples():
        ref = "-"
        if np.isfinite(r.sb3_reference):
            flag = "" if r.reference_same_version else f" ({r.sb3_reference_env}†)"
            ref = f"{r.sb3_reference:.1f} @ {_steps(r.sb3_reference_budget)}{flag}"
        to_threshold = "-"
        if np.isfinite(r.threshold):
            reached = _steps(r.steps_to_threshold_median) if np.isfinite(r.steps_to_threshold_median) else "never"
            to_threshold = f"{reached} ({r.solved_seeds}/{r.seeds + r.incomplete})"
        lines.append(
            f"| {r.algo} | {r.backend} | {r.env} | {r.seeds} ({r.failed}) | {r.final_iqm:.1f} [{r.ci_low:.1f}, "
            f"{r.ci_high:.1f}] | {ref} | {_fmt(r.ratio_to_reference, '.2f')} | {to_threshold} | "
            f"{_fmt(r.fps_median, '.0f')} |" + (f" {_video_links(videos[r.Index], links_from)} |" * video_column)
        )
    if (summary.reference_same_version == False).any():  # noqa: E712 - None means no reference
        lines.append("\n† SB3's reference was trained on an older env version (see results/reference/"
                     "env_version_map.csv); compare with care.")
    return "\n".join(lines) + "\n"


def _video_links(paths: str, links_from: Path | None) -> str:
    links = [os.path.relpath(p, links_from) if links_from is not None else p for p in paths.split()]
    return " ".join(f"[{i + 1}]({link})" for i, link in enumerate(links)) or "-"


def _fmt(value: float, spec: str) -> str:
    return format(value, spec) if np.isfinite(value) else "-"


def _steps(value: float) -> str:
    return f"{value / 1e6:g}M" if value >= 1e6 else f"{value / 1e3:g}k" if value >= 1e3 else f"{value:g}"


def _save(ax: plt.Axes, out: Path, name: str) -> list[Path]:
    paths = []
    for suffix in (".png", ".pdf"):
        path = out / f"{name}{suffix}"
        atomic_write(path, lambda tmp, s=suffix: ax.figure.savefig(tmp, dpi=120, format=s[1:]))
        paths.append(path)
    plt.close(ax.figure)
    return paths


def figures(evals: pd.DataFrame, summary: pd.DataFrame, out: Path, *, seed: int = 0) -> list[Path]:
    """Learning curves per env (with SB3's reference), final-score intervals and throughput."""
    returns = evals[evals.metric == "mean_return"].dropna(subset=["value"])
    written: list[Path] = []
    for env, env_curves in returns.groupby("env", sort=True):
        bands = {}
        for (algo, backend), curves in env_curves.groupby(["algo", "backend"], sort=True):
            grid = agg.common_grid(curves.groupby("seed").timesteps.max(), n_points=50)
            bands[f"{algo} / {backend}"] = agg.curve_band(agg.curves_on_grid(curves, grid), n_boot=300, seed=seed)
        first = summary[summary.env == env].iloc[0]
        references = {}
        for label in bands:
            algo = label.split(" / ")[0]
            ref = reference_score(algo, first.env_id) if isinstance(first.env_id, str) else None
            if ref is not None and algo not in {k.split(" / ")[0] for k in references}:
                version = "" if ref.same_version else f", {ref.reference_env_id}"
                references[label] = plot.ReferenceMark(ref.score, ref.budget, f"SB3 {algo}{version}",
                                                       reference_curve(algo, first.env_id))
        ax = plot.learning_curves(
            plot.new_axes(), bands, references=references,
            threshold=first.threshold if np.isfinite(first.threshold) else None,
            title=f"{env} ({first.env_id})",
        )
        written += _save(ax, out, f"curves_{env}")
    labelled = summary.assign(label=summary.algo + " / " + summary.backend + " / " + summary.env)
    finite = labelled[np.isfinite(labelled.final_iqm)]
    if not finite.empty:
        with_ref = finite.assign(reference=finite.sb3_reference)
        ax = plot.final_scores(plot.new_axes(height=1.2 + 0.5 * len(finite)), with_ref,
                               xlabel="final evaluation return (IQM across seeds, 95% bootstrap CI)")
        written += _save(ax, out, "final_scores")
        fps = labelled[np.isfinite(labelled.fps_median)].rename(columns={"fps_median": "fps"})
        if not fps.empty:
            written += _save(plot.throughput(plot.new_axes(height=1 + 0.5 * len(fps)), fps), out, "throughput")
    return written


def write_report(paths: Sequence[str | Path], out: Path, *, seed: int = 0) -> pd.DataFrame:
    """Everything the CLI writes; returns the summary table."""
    runs = load_runs(paths)
    if runs.empty:
        raise SystemExit(f"report: no run directories under {', '.join(map(str, paths))}")
    evals = load_evaluations(paths)
    summary = summary_table(runs, evals, seed=seed)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "summary.csv", summary.to_csv(index=False))
    atomic_write_text(out / "summary.md", markdown(summary, out))
    figures(evals, summary, out, seed=seed)
    return summary


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="run directories, sweep directories or globs")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: <first run path>/report)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap")
    args = parser.parse_args(argv)
    out = args.out or Path(str(args.runs[0]).rstrip("*/")) / "report"
    summary = write_report(args.runs, out, seed=args.seed)
    print(markdown(summary))
    print(f"report written to {out}/ (summary.csv, summary.md, figures)")


if __name__ == "__main__":
    main()

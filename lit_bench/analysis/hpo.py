"""Figures of an Optuna study, from its ``trials.csv`` rows (lit_bench.control.hpo_results): optimization history,
parameter importances, intermediate values with the pruned trials visible. Data only: no Optuna needed to redraw."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from lit_bench.store.format import BEST_TRIAL
from lit_bench.store.rundir import atomic_write, read_csv

STYLE = {
    "completed": ("tab:blue", "o", "-"),
    "pruned": ("tab:gray", "x", "--"),
    "failed": ("tab:red", "s", ":"),
    "running": ("tab:orange", ".", ":"),
}
DPI = 120


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _curve(row: dict[str, Any]) -> tuple[list[float], list[float]]:
    values = json.loads(row.get("intermediate_values") or "{}")
    steps = sorted(values, key=float)
    return [float(s) for s in steps], [float(values[s]) for s in steps]


def _save(figure: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, lambda tmp: figure.savefig(tmp, dpi=DPI, format="png", bbox_inches="tight"))
    plt.close(figure)
    return path


def history(rows: Sequence[dict[str, Any]], direction: str) -> Any:
    """Each trial's value by trial number, the best so far, and pruned trials at their last reported value."""
    figure, ax = plt.subplots(figsize=(6.4, 3.6))
    best, best_line = math.nan, []
    better = max if direction == "maximize" else min
    for row in sorted(rows, key=lambda r: int(r["number"])):
        value = _number(row["value"])
        if row["state"] == "completed" and not math.isnan(value):
            best = value if math.isnan(best) else better(best, value)
        best_line.append((int(row["number"]), best))
    for state in ("completed", "pruned"):
        points = [(int(r["number"]), _number(r["value"])) for r in rows if r["state"] == state]
        points = [(n, v) for n, v in points if not math.isnan(v)]
        if points:
            color, marker, _ = STYLE[state]
            label = state if state == "completed" else "pruned (last reported value)"
            ax.scatter(*zip(*points), color=color, marker=marker, label=f"{label} (n={len(points)})", zorder=3)
    if best_line:
        ax.step(*zip(*best_line), where="post", color="tab:green", label="best so far")
    failed = sum(r["state"] == "failed" for r in rows)
    ax.set(xlabel="trial", ylabel="objective", title="Optimization history" + (f" ({failed} failed)" if failed else ""))
    ax.legend(fontsize="small")
    return figure


def importance_bars(found: dict[str, float]) -> Any:
    figure, ax = plt.subplots(figsize=(6.4, 0.5 + 0.4 * len(found)))
    names = sorted(found, key=lambda name: found[name])
    ax.barh(names, [found[n] for n in names], color="tab:blue")
    ax.set(xlabel="importance (PED-ANOVA, completed trials)", title="Parameter importances")
    return figure


def intermediate(rows: Sequence[dict[str, Any]]) -> Any:
    """Every trial's reported values by env step; a pruned trial's curve ends with an x where it was stopped."""
    figure, ax = plt.subplots(figsize=(6.4, 3.6))
    labelled: set[str] = set()
    for row in rows:
        steps, values = _curve(row)
        if not steps:
            continue
        state = row["state"] if row["state"] in STYLE else "running"
        color, marker, line = STYLE[state]
        n = sum(r["state"] == state for r in rows)
        ax.plot(
            steps,
            values,
            color=color,
            linestyle=line,
            alpha=0.8,
            linewidth=1,
            label=None if state in labelled else f"{state} (n={n})",
        )
        labelled.add(state)
        if state == "pruned":
            ax.scatter(steps[-1:], values[-1:], color=color, marker=marker, zorder=3)
    ax.set(xlabel="env steps", ylabel="reported value (evaluation mean return)", title="Intermediate values")
    if labelled:
        ax.legend(fontsize="small")
    return figure


def plot_study(rows: Sequence[dict[str, Any]], found: dict[str, float], direction: str, out: Path) -> list[Path]:
    """The study's figures as ``<out>/hpo_history.png``, ``hpo_importances.png``, ``hpo_intermediate.png``."""
    if not rows:
        return []
    paths = [_save(history(rows, direction), out / "hpo_history.png")]
    if found:
        paths.append(_save(importance_bars(found), out / "hpo_importances.png"))
    if any(_curve(r)[0] for r in rows):
        paths.append(_save(intermediate(rows), out / "hpo_intermediate.png"))
    return paths


def plot_sweep(sweep_dir: Path, out: Path) -> list[Path]:
    """Redraw a sweep's study figures from its ``trials.csv`` / ``param_importances.csv`` (none if it has none)."""
    trials = sweep_dir / "trials.csv"
    if not trials.is_file():
        return []
    best = sweep_dir / BEST_TRIAL
    direction = "minimize" if best.is_file() and "\ndirection: minimize\n" in best.read_text() else "maximize"
    found = (
        {r["param"]: float(r["importance"]) for r in read_csv(sweep_dir / "param_importances.csv")}
        if (sweep_dir / "param_importances.csv").is_file()
        else {}
    )
    return plot_study(read_csv(trials), found, direction, out)

"""Read run directories (any sweeps, globs, both backends) into tidy pandas tables.

``load_runs`` gives one row per run (status and summary numbers); ``load_evaluations`` gives the long table
``[algo, backend, env, env_id, seed, sweep, status, run_dir, config_id, variant, timesteps, metric, value]`` of
every evaluation. Runs are found at any depth; ``config_id`` (the config without its seed, ``lit_bench.identity``)
tells the configs of a sweep apart and ``variant`` names them ("" for the composed defaults). Failed, interrupted
and truncated runs are kept and marked, never dropped: a run without ``summary.json`` is ``incomplete``; one still
saying ``running`` (killed mid-run) is ``interrupted``.
"""

from __future__ import annotations

import glob
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from lit_bench.identity import config_id, parse_run_path
from lit_bench.rundir import EVAL_FIELDS, RunDir

RUN_COLUMNS = ["algo", "backend", "env", "env_id", "seed", "sweep", "status", "run_dir", "config_id", "variant"]
METRICS = [f for f in EVAL_FIELDS if f != "timesteps"]


def find_run_dirs(paths: Iterable[str | Path]) -> list[Path]:
    """Run directories under each path or glob (a directory holding ``summary.json`` or ``eval.csv``)."""
    found: set[Path] = set()
    for pattern in paths:
        for match in glob.glob(str(pattern)) or [str(pattern)]:
            root = Path(match)
            if not root.exists():
                raise FileNotFoundError(f"runs: {root} does not exist")
            markers = [root / "summary.json", root / "eval.csv"] if root.is_dir() else []
            if any(m.is_file() for m in markers):
                found.add(root)
            found.update(p.parent for name in ("summary.json", "eval.csv") for p in root.rglob(name))
    return sorted(found)


def _status(summary: dict[str, Any] | None) -> str:
    if summary is None:
        return "incomplete"
    status = str(summary.get("status", "incomplete"))
    return {"running": "interrupted", "skipped": "completed"}.get(status, status)


def load_runs(paths: Iterable[str | Path]) -> pd.DataFrame:
    """One row per run directory: identity, status and the summary's numbers (NaN where a run has none)."""
    rows = []
    for run_dir in find_run_dirs(paths):
        summary_file = run_dir / "summary.json"
        summary = json.loads(summary_file.read_text()) if summary_file.is_file() else None
        row = {**parse_run_path(run_dir), **{k: v for k, v in (summary or {}).items() if not isinstance(v, dict)}}
        row.update(status=_status(summary), run_dir=str(run_dir))
        row.setdefault("backend", "lit_sb3")
        if not row.get("config_id"):  # runs written before config ids: hash their config.yaml the same way
            config = RunDir(run_dir).read_config()
            row["config_id"] = config_id(config) if config else None
        rows.append(row)
    frame = pd.DataFrame(rows)
    for column in RUN_COLUMNS:
        if column not in frame:
            frame[column] = None
    return frame[RUN_COLUMNS + [c for c in frame.columns if c not in RUN_COLUMNS]]


def load_evaluations(paths: Iterable[str | Path]) -> pd.DataFrame:
    """The long table of every evaluation of every run; a run with no evaluation keeps one row with NaN values."""
    runs = load_runs(paths)
    frames = []
    for run in runs.itertuples(index=False):
        identity = {c: getattr(run, c) for c in RUN_COLUMNS}
        eval_csv = Path(run.run_dir) / "eval.csv"
        evals = pd.read_csv(eval_csv) if eval_csv.is_file() and eval_csv.stat().st_size else pd.DataFrame()
        if evals.empty or "timesteps" not in evals:
            frames.append(pd.DataFrame([{**identity, "timesteps": float("nan"), "metric": None,
                                         "value": float("nan")}]))
            continue
        long = evals.melt(id_vars="timesteps", value_vars=[m for m in METRICS if m in evals],
                          var_name="metric", value_name="value")
        frames.append(long.assign(**identity))
    columns = [*RUN_COLUMNS, "timesteps", "metric", "value"]
    if not frames:
        return pd.DataFrame(columns=columns)
    return pd.concat(frames, ignore_index=True)[columns]

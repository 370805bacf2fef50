"""Read run directories (any sweeps, globs, both backends) into tidy pandas tables.

``load_runs`` gives one row per run (status and summary numbers); ``load_evaluations`` gives the long table
``[algo, backend, env, env_id, seed, sweep, config_id, variant, status, run_dir, timesteps, metric, value]`` of every
evaluation. Runs are found at any depth; ``config_id`` (the config without its seed, ``lit_bench.identity``) tells
the configs of a sweep apart and ``variant`` names them ("" for the composed defaults). Failed, interrupted,
truncated and damaged runs are kept and marked, never dropped: a run without ``summary.json`` is ``incomplete``; one
still saying ``running`` (killed mid-run) is ``interrupted``; one whose ``summary.json`` or ``eval.csv`` cannot be
trusted is ``damaged`` (``problem`` names the file and the fault).
"""

from __future__ import annotations

import glob
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from lit_bench.identity import config_id, parse_run_path
from lit_bench.rundir import EVAL_FIELDS, RunDir

RUN_COLUMNS = ["algo", "backend", "env", "env_id", "seed", "sweep", "config_id", "variant", "status", "run_dir"]
METRICS = [f for f in EVAL_FIELDS if f != "timesteps"]
EVALUATIONS_NPZ = "evaluations.npz"  # SB3's EvalCallback file name, read by the RL Zoo's plotting scripts


def read_evaluations_npz(path: Path) -> dict[str, np.ndarray]:
    """``evaluations.npz`` as SB3's ``EvalCallback`` writes it: ``timesteps`` (n,), ``results`` and ``ep_lengths``
    (n, episodes), ``successes`` when the env reports them; empty when the file is absent."""
    if not path.is_file():
        return {}
    with np.load(path, allow_pickle=False) as data:
        return {key: data[key] for key in data.files}


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


def _read_summary(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """The summary (None when absent) and what is wrong with the file, if anything."""
    if not path.is_file():
        return None, None
    try:
        summary = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        return None, f"{path}: unreadable ({type(error).__name__}: {error})"
    if not isinstance(summary, dict):
        return None, f"{path}: not a JSON object"
    return summary, None


def read_eval_csv(path: Path) -> tuple[pd.DataFrame, str | None]:
    """A run's evaluations (empty when the file is absent) and what is wrong with the file, if anything."""
    if not path.is_file() or path.stat().st_size == 0:  # (judged by the caller: fine for a run not yet evaluated)
        return pd.DataFrame(), None
    try:
        evals = pd.read_csv(path)
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        return pd.DataFrame(), f"{path}: unreadable ({type(error).__name__})"
    if not path.read_bytes().endswith(b"\n"):  # the harness writes whole lines, atomically
        return pd.DataFrame(), f"{path}: the last row is cut short (no line end)"
    missing = [c for c in ("timesteps", "mean_return") if c not in evals]
    if missing:
        return pd.DataFrame(), f"{path}: no {', '.join(missing)} column"
    numbers = evals[["timesteps", "mean_return"]].apply(pd.to_numeric, errors="coerce")
    if numbers.isna().any().any():
        row = int(numbers.isna().any(axis=1).to_numpy().argmax()) + 1
        return pd.DataFrame(), f"{path}: row {row} has no number for timesteps or mean_return"
    return evals, None


def _completed_run_problem(run_dir: Path, summary: dict[str, Any]) -> str | None:
    """A completed run's final evaluation is at the end of its budget: an eval.csv that stops earlier was cut."""
    evals, problem = read_eval_csv(run_dir / "eval.csv")
    if problem:
        return problem
    if evals.empty:
        return f"{run_dir / 'eval.csv'}: missing or empty although the run completed"
    last = evals.sort_values("timesteps").iloc[-1]
    steps = pd.to_numeric(pd.Series([summary.get("timesteps")]), errors="coerce").iloc[0]
    if pd.notna(steps) and float(last.timesteps) < float(steps):
        return (f"{run_dir / 'eval.csv'}: ends at {int(last.timesteps)} env steps but the run completed "
                f"{int(steps)} (truncated)")
    final = pd.to_numeric(pd.Series([summary.get("final_mean_return")]), errors="coerce").iloc[0]
    if pd.notna(final) and abs(float(last.mean_return) - float(final)) > 1e-6 * max(1.0, abs(float(final))):
        return f"{run_dir / 'eval.csv'}: last return {last.mean_return:g} is not summary.json's final {final:g}"
    return None


def load_runs(paths: Iterable[str | Path]) -> pd.DataFrame:
    """One row per run directory: identity, status and the summary's numbers (NaN where a run has none).

    A run whose ``summary.json`` or ``eval.csv`` is damaged gets status ``damaged`` and the reason in ``problem``.
    Runs written before the run-identity keys existed get ``config_id`` and ``variant`` "" (one config per sweep).
    """
    rows = []
    for run_dir in find_run_dirs(paths):
        summary, problem = _read_summary(run_dir / "summary.json")
        status = _status(summary)
        if problem is None and status == "completed":
            problem = _completed_run_problem(run_dir, summary or {})
        elif problem is None:
            problem = read_eval_csv(run_dir / "eval.csv")[1]
        path_identity = parse_run_path(run_dir)
        row = {**path_identity, **{k: v for k, v in (summary or {}).items() if not isinstance(v, (dict, list))}}
        row.update(status="damaged" if problem else status, problem=problem, run_dir=str(run_dir))
        row["sweep"] = str(row.get("sweep") or path_identity["sweep"])
        if not isinstance(row.get("config_id"), str):  # runs written before config ids: hash their config.yaml
            config = RunDir(run_dir).read_config()
            row["config_id"] = config_id(config) if config else ""
        for key, default in (("backend", "lit"), ("variant", "")):
            if not isinstance(row.get(key), str):
                row[key] = default
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
        evals = pd.DataFrame() if run.status == "damaged" else read_eval_csv(Path(run.run_dir) / "eval.csv")[0]
        if evals.empty:
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


def load_episode_returns(paths: Iterable[str | Path]) -> pd.DataFrame:
    """Every evaluation episode of every run from its ``evaluations.npz``:
    ``[<run identity>, timesteps, episode, return, length]``; runs without the file (or damaged ones) add nothing."""
    frames = []
    for run in load_runs(paths).itertuples(index=False):
        data = read_evaluations_npz(Path(run.run_dir) / EVALUATIONS_NPZ) if run.status != "damaged" else {}
        if not data:
            continue
        n_evals, n_episodes = data["results"].shape
        frames.append(pd.DataFrame({
            **{c: getattr(run, c) for c in RUN_COLUMNS},
            "timesteps": np.repeat(data["timesteps"], n_episodes), "episode": np.tile(np.arange(n_episodes), n_evals),
            "return": data["results"].ravel(), "length": data["ep_lengths"].ravel(),
        }))
    columns = [*RUN_COLUMNS, "timesteps", "episode", "return", "length"]
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)

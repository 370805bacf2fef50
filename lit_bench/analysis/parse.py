"""Parsing run directories' files into ``cache.Parsed`` (the uncached path of ``load.read_runs``): each run's
summary, status, identity row and the fault that makes it ``damaged``, its evaluations, in one process or several."""

from __future__ import annotations

import json
import multiprocessing as mp
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from lit_bench.analysis import cache
from lit_bench.analysis.eval_csv import METRICS, read_eval_csvs
from lit_bench.analysis.variants import split_variant
from lit_bench.config.identity import BATCHED, config_id, parse_run_path
from lit_bench.store.format import EVAL_CSV, NUMBER_VERSIONS, SUMMARY, format_problem
from lit_bench.store.rundir import RunDir


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
    problem = format_problem(summary)
    return (None, f"{path}: {problem}") if problem else (summary, None)


def _number(value: Any) -> float:
    """A summary value as a number, NaN when it is none (``pd.to_numeric(..., errors="coerce")`` of one scalar)."""
    if isinstance(value, (bool, int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return float("nan")
    return float("nan")


def _completed_run_problem(
    run_dir: Path, summary: dict[str, Any], timesteps: np.ndarray, returns: np.ndarray, sha256: str | None
) -> str | None:
    """A completed run's final evaluation is at the end of its budget: an eval.csv that stops earlier was cut; one
    that is not the file the run recorded writing (format 3: evaluations, checksum) was changed since.

    ``timesteps`` and ``returns`` are its evaluations in file order; the last one is the last of the latest step.
    """
    if timesteps.size == 0:
        return f"{run_dir / EVAL_CSV}: missing or empty although the run completed"
    last = timesteps.size - 1 - int(np.argmax(timesteps[::-1]))
    last_step, last_return = float(timesteps[last]), float(returns[last])
    steps = _number(summary.get("timesteps"))
    if np.isfinite(steps) and last_step < steps:
        return (
            f"{run_dir / EVAL_CSV}: ends at {int(last_step)} env steps but the run completed {int(steps)} (truncated)"
        )
    final = _number(summary.get("final_mean_return"))
    if not np.isnan(final) and abs(last_return - final) > 1e-6 * max(1.0, abs(final)):
        return f"{run_dir / EVAL_CSV}: last return {last_return:g} is not {SUMMARY}'s final {final:g}"
    recorded = summary.get("evaluations")
    if recorded is not None and recorded != timesteps.size:
        return f"{run_dir / EVAL_CSV}: holds {timesteps.size} evaluations, {SUMMARY} recorded {recorded}"
    if summary.get("eval_csv_sha256") not in (None, sha256):
        return f"{run_dir / EVAL_CSV}: not the file the run wrote (its checksum differs from {SUMMARY}'s)"
    return None


def _run_row(run_dir: Path, summary: dict[str, Any] | None) -> dict[str, Any]:
    """``load_runs``' row of one run, without status and problem (set once its eval.csv is read)."""
    path_identity = parse_run_path(run_dir)
    row = {**path_identity, **{k: v for k, v in (summary or {}).items() if not isinstance(v, (dict, list))}}
    row.update(status=None, problem=None, run_dir=str(run_dir), versions=_number_versions(summary))
    row["sweep"] = str(row.get("sweep") or path_identity["sweep"])
    if not isinstance(row.get("config_id"), str):  # runs written before config ids: hash their config.yaml
        config = RunDir(run_dir).read_config()
        row["config_id"] = config_id(config) if config else ""
    for key, default in (("backend", "lit"), ("variant", "")):
        if not isinstance(row.get(key), str):
            row[key] = default
    return _as_seed_of_its_config(row, run_dir)


def _as_seed_of_its_config(row: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """A seed trained in a batched group (``batched`` true) under its config trained ungrouped: the same
    hyperparameters, so the report pools, labels and pairs it with SB3's seeds as an ordinary run of that config
    (``batched`` marks it for the report's note). From its summary's ``unbatched_*`` fields; a run without them
    (no summary yet) from its ``config.yaml`` and its variant without ``batched=true``."""
    batched = split_variant(row["variant"]).get(BATCHED) == "true"
    row[BATCHED] = batched
    if not batched:
        return row
    if isinstance(row.get("unbatched_config_id"), str) and isinstance(row.get("unbatched_variant"), str):
        row["config_id"], row["variant"] = row["unbatched_config_id"], row["unbatched_variant"]
        return row
    config = RunDir(run_dir).read_config()
    if config:
        row["config_id"] = config_id({**config, BATCHED: False})
    row["variant"] = ",".join(part for part in row["variant"].split(",") if part != f"{BATCHED}=true")
    return row


def _number_versions(summary: dict[str, Any] | None) -> str:
    """The recorded versions of the packages that change a run's numbers (``NUMBER_VERSIONS``), as JSON text."""
    recorded = (summary or {}).get("versions")
    recorded = recorded if isinstance(recorded, dict) else {}
    return json.dumps({k: str(recorded[k]) for k in NUMBER_VERSIONS if recorded.get(k) is not None})


SPLIT_FROM = 1000  # runs: fewer are parsed in one process (a forked worker's start costs more than it saves)
RESULT_PIECES = 4  # pieces of each forked worker's share of the runs (see parse_runs)


def parse_runs(run_dirs: list[Path], workers: int = 1) -> cache.Parsed:
    """Read the files of ``run_dirs`` (the uncached path): summaries one by one, evaluations in one pass.

    ``workers`` > 1 (and ``SPLIT_FROM`` runs or more): the runs are split into consecutive parts, the first (a
    ``workers``-th) parsed by this process while forked ones parse the others, and put together in order (the same
    as parsed in one piece).
    """
    workers = min(workers, len(run_dirs) // (SPLIT_FROM // 2)) if "fork" in mp.get_all_start_methods() else 1
    if workers <= 1:
        return _parse_runs(run_dirs)
    size = -(-len(run_dirs) // workers)
    # the other processes' runs go in pieces: each piece's result comes back pickled (a copy in both processes) on
    # its own, so that the largest copy is a piece's (the whole share's was ~100 MB of the peak at 10,000 runs)
    piece = -(-size // RESULT_PIECES)
    pieces = [run_dirs[start : start + piece] for start in range(size, len(run_dirs), piece)]
    with ProcessPoolExecutor(workers - 1, mp_context=mp.get_context("fork")) as pool:
        others = [pool.submit(_parse_runs, part) for part in pieces]
        first = _parse_runs(run_dirs[:size])
        return cache.Parsed.concat([first, *(future.result() for future in others)])


def _parse_runs(run_dirs: list[Path]) -> cache.Parsed:
    signatures = np.array([cache.signature(d) for d in run_dirs], dtype=np.int64)  # before reading: see cache
    summaries = [_read_summary(d / SUMMARY) for d in run_dirs]
    evals = read_eval_csvs([d / EVAL_CSV for d in run_dirs])
    run = np.concatenate(evals.run) if evals.run else np.zeros(0, dtype=np.int64)
    timesteps = np.concatenate(evals.timesteps) if evals.run else np.zeros(0)
    values = np.concatenate(evals.values) if evals.run else np.zeros((0, len(METRICS)))
    evals.run, evals.timesteps, evals.values = [], [], []  # (the parts, freed now: a copy less at the peak)
    if np.any(np.diff(run) < 0):  # files read one by one came in between
        order = np.argsort(run, kind="stable")
        run, timesteps, values = run[order], timesteps[order], values[order]
    bounds = np.searchsorted(run, np.arange(len(run_dirs) + 1))
    rows, damaged = [], np.zeros(len(run_dirs), dtype=bool)
    for i, (run_dir, (summary, problem)) in enumerate(zip(run_dirs, summaries)):
        row = _run_row(run_dir, summary)
        status = _status(summary)
        if problem is None and status == "completed":
            s, e = bounds[i], bounds[i + 1]
            problem = evals.problems.get(i) or _completed_run_problem(
                run_dir, summary or {}, timesteps[s:e], values[s:e, METRICS.index("mean_return")], evals.sha256.get(i)
            )
        elif problem is None:
            problem = evals.problems.get(i)
        row.update(status="damaged" if problem else status, problem=problem)
        damaged[i] = bool(problem)
        rows.append(row)
    present = np.zeros((len(run_dirs), len(METRICS)), dtype=bool)
    for i, mask in evals.present.items():
        present[i] = mask
    keep = ~damaged[run]  # a damaged run's evaluations are never used
    if not keep.all():  # (one array at a time: the unfiltered one freed before the next is copied)
        values = values[keep]
        timesteps = timesteps[keep]
        run = run[keep]
    return cache.Parsed(
        [str(d) for d in run_dirs],
        signatures.reshape(len(run_dirs), cache.SIGNATURE),
        rows,
        run,
        timesteps,
        values,
        present,
    )

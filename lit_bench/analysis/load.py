"""Read run directories (any sweeps, globs, both backends) into tidy pandas tables.

``load_runs`` gives one row per run (status and summary numbers); ``load_evaluations`` gives the long table
``[algo, backend, env, env_id, seed, sweep, config_id, variant, status, run_dir, timesteps, metric, value]`` of every
evaluation. Runs are found at any depth; ``config_id`` (the config without its seed, ``lit_bench.config.identity``)
tells the configs of a sweep apart and ``variant`` names them ("" for the composed defaults). Failed, interrupted,
truncated and damaged runs are kept and marked, never dropped: a run without ``summary.json`` is ``incomplete``; one
still saying ``running`` (killed mid-run) is ``interrupted``; one whose ``summary.json`` or ``eval.csv`` cannot be
trusted is ``damaged`` (``problem`` names the file and the fault).
"""

from __future__ import annotations

import glob
import io
import json
import multiprocessing as mp
import os
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd  # (imported by the functions that use it: a training run imports this module, not pandas)

from lit_bench.analysis import cache
from lit_bench.config.identity import _VARIANT_DIR, config_id, parse_run_path
from lit_bench.store.format import EVALUATIONS_NPZ, format_problem
from lit_bench.store.rundir import EVAL_FIELDS, RunDir, read_evaluations_npz

RUN_COLUMNS = ["algo", "backend", "env", "env_id", "seed", "sweep", "config_id", "variant", "status", "run_dir"]
METRICS = [f for f in EVAL_FIELDS if f != "timesteps"]


def find_run_dirs(paths: Iterable[str | Path]) -> list[Path]:
    """Run directories under each path or glob (a directory holding ``summary.json`` or ``eval.csv``)."""
    found: dict[str, Path] = {}  # real path -> the first spelling of it: a run named twice is one run
    for pattern in paths:
        for match in glob.glob(str(pattern)) or [str(pattern)]:
            root = Path(match)
            if not root.exists():
                raise FileNotFoundError(f"runs: {root} does not exist")
            # one walk of the tree (two rglobs were ~1 s at 10,000 runs); as rglob, not into symlinked directories, so
            # below the root every directory is itself: its real path is the root's and its own names (one realpath
            # a run, a stat of each part of its path, was ~0.4 s at 10,000 runs)
            top, real = os.fspath(root), os.path.realpath(root)
            for d, _, files in os.walk(top):
                if _MARKERS.intersection(files):
                    found.setdefault(os.path.join(real, d[len(top) :].lstrip(os.sep)), Path(d))
    return sorted(found.values())


_MARKERS = {"summary.json", "eval.csv"}


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


def read_eval_csv(path: Path) -> tuple[pd.DataFrame, str | None]:
    """A run's evaluations (empty when the file is absent) and what is wrong with the file, if anything."""
    import pandas as pd

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
    run_dir: Path, summary: dict[str, Any], timesteps: np.ndarray, returns: np.ndarray
) -> str | None:
    """A completed run's final evaluation is at the end of its budget: an eval.csv that stops earlier was cut.

    ``timesteps`` and ``returns`` are its evaluations in file order; the last one is the last of the latest step.
    """
    if timesteps.size == 0:
        return f"{run_dir / 'eval.csv'}: missing or empty although the run completed"
    last = timesteps.size - 1 - int(np.argmax(timesteps[::-1]))
    last_step, last_return = float(timesteps[last]), float(returns[last])
    steps = _number(summary.get("timesteps"))
    if np.isfinite(steps) and last_step < steps:
        return (
            f"{run_dir / 'eval.csv'}: ends at {int(last_step)} env steps but the run completed {int(steps)} (truncated)"
        )
    final = _number(summary.get("final_mean_return"))
    if not np.isnan(final) and abs(last_return - final) > 1e-6 * max(1.0, abs(final)):
        return f"{run_dir / 'eval.csv'}: last return {last_return:g} is not summary.json's final {final:g}"
    return None


_HEADER = (",".join(EVAL_FIELDS) + "\n").encode()


def _plain(data: bytes) -> bool:
    """An eval.csv exactly as the harness writes it (its header, whole lines of all fields, nothing quoted), whose
    rows can be parsed together with other runs' rows; any other file is read on its own (``read_eval_csv``)."""
    return (
        data.startswith(_HEADER)
        and data.endswith(b"\n")
        and b"\n\n" not in data
        and b'"' not in data
        and b"\r" not in data
        and data.count(b",") == (len(EVAL_FIELDS) - 1) * data.count(b"\n")
    )


@dataclass
class _Evals:
    """Evaluations of a list of runs (``cache.Parsed``'s columns) and each run's eval.csv problem."""

    run: list[np.ndarray] = field(default_factory=list)
    timesteps: list[np.ndarray] = field(default_factory=list)
    values: list[np.ndarray] = field(default_factory=list)
    present: dict[int, np.ndarray] = field(default_factory=dict)
    problems: dict[int, str] = field(default_factory=dict)

    def add(self, position: int, timesteps: np.ndarray, values: np.ndarray, present: np.ndarray) -> None:
        self.run.append(np.full(timesteps.size, position, dtype=np.int64))
        self.timesteps.append(timesteps.astype(float))
        self.values.append(values.astype(float))
        self.present[position] = present


def _read_one(path: Path, position: int, evals: _Evals) -> None:
    import pandas as pd

    frame, problem = read_eval_csv(path)
    if problem:
        evals.problems[position] = problem
    elif not frame.empty:
        columns = [
            pd.to_numeric(frame[m], errors="coerce").to_numpy(float) if m in frame else np.full(len(frame), np.nan)
            for m in METRICS
        ]
        evals.add(
            position,
            frame.timesteps.to_numpy(float),
            np.stack(columns, axis=1),
            np.array([m in frame for m in METRICS]),
        )


def _read_plain(files: list[tuple[int, Path, bytes]], evals: _Evals) -> bool:
    """Parse the rows of all ``files`` (their bytes without the header) in one ``read_csv``; False when that fails
    (then each is read on its own)."""
    import pandas as pd

    counts = np.array([data.count(b"\n") for _, _, data in files], dtype=np.int64)
    if counts.sum() == 0:
        return True
    try:
        table = pd.read_csv(io.BytesIO(b"".join(data for _, _, data in files)), header=None, names=list(EVAL_FIELDS))
    except (ValueError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError):
        return False
    if not isinstance(table.index, pd.RangeIndex) or len(table) != counts.sum():
        return False
    numbers = np.stack([pd.to_numeric(table[f], errors="coerce").to_numpy(float) for f in EVAL_FIELDS], axis=1)
    del table
    position = np.repeat(np.array([p for p, _, _ in files], dtype=np.int64), counts)
    start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    bad = np.isnan(numbers[:, 0]) | np.isnan(numbers[:, EVAL_FIELDS.index("mean_return")])
    keep = np.ones(len(numbers), dtype=bool)
    for k in np.unique(np.searchsorted(start, np.flatnonzero(bad), side="right") - 1):
        row = int(np.argmax(bad[start[k] : start[k] + counts[k]])) + 1
        pos, path, _ = files[k]
        evals.problems[pos] = f"{path}: row {row} has no number for timesteps or mean_return"
        keep[start[k] : start[k] + counts[k]] = False
    evals.run.append(position[keep])
    evals.timesteps.append(numbers[keep, 0])
    evals.values.append(numbers[keep, 1:])
    everything = np.ones(len(METRICS), dtype=bool)
    evals.present.update((pos, everything) for pos, _, _ in files)
    return True


def _read_chunk(files: list[tuple[int, Path, bytes]], evals: _Evals) -> None:
    if not _read_plain(files, evals):
        for position, path, _ in files:
            _read_one(path, position, evals)


def read_eval_csvs(paths: list[Path], chunk: int = 2000) -> _Evals:
    """The evaluations of many eval.csv files: plain ones parsed together, ``chunk`` files at a time (which bounds the
    memory of the text held at once), others one by one."""
    evals, plain = _Evals(), []
    for position, path in enumerate(paths):
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            continue  # (judged by the caller: fine for a run not yet evaluated)
        except OSError:
            _read_one(path, position, evals)
            continue
        if not data:
            continue
        if _plain(data):
            plain.append((position, path, data[len(_HEADER) :]))
        else:
            _read_one(path, position, evals)
        if len(plain) == chunk:
            _read_chunk(plain, evals)
            plain = []
    _read_chunk(plain, evals)
    return evals


def _run_row(run_dir: Path, summary: dict[str, Any] | None) -> dict[str, Any]:
    """``load_runs``' row of one run, without status and problem (set once its eval.csv is read)."""
    path_identity = parse_run_path(run_dir)
    row = {**path_identity, **{k: v for k, v in (summary or {}).items() if not isinstance(v, (dict, list))}}
    row.update(status=None, problem=None, run_dir=str(run_dir))
    row["sweep"] = str(row.get("sweep") or path_identity["sweep"])
    if not isinstance(row.get("config_id"), str):  # runs written before config ids: hash their config.yaml
        config = RunDir(run_dir).read_config()
        row["config_id"] = config_id(config) if config else ""
    for key, default in (("backend", "lit"), ("variant", "")):
        if not isinstance(row.get(key), str):
            row[key] = default
    return row


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
    summaries = [_read_summary(d / "summary.json") for d in run_dirs]
    evals = read_eval_csvs([d / "eval.csv" for d in run_dirs])
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
                run_dir, summary or {}, timesteps[s:e], values[s:e, METRICS.index("mean_return")]
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


def sweep_dir(run_dir: Path) -> Path | None:
    """``<out_dir>/<sweep>`` of a run in the harness layout (``lit_bench.config.identity``); None for any other path."""
    return _sweep_of(run_dir.parent) if run_dir.name.startswith("seed_") else None


@lru_cache(maxsize=4096)
def _sweep_of(parent: Path) -> Path | None:
    """``sweep_dir`` of the runs in ``parent`` (the seeds of one config share it: worked out once)."""
    parts = (*parent.parts, "seed_")
    end = len(parts) - 1
    if end and _VARIANT_DIR.search(parts[end - 1]):
        end -= 1
    if end < 3:
        return None
    root = Path(*parts[: end - 2])
    return None if root == Path(root.anchor) else root


def _load_sweep(root: Path | None, run_dirs: list[Path], workers: int = 1) -> cache.Parsed:
    """The runs of one sweep: unchanged ones from its cache, the others parsed (and the cache brought up to date)."""
    if root is None:
        return parse_runs(run_dirs, workers)
    cached = cache.read(root)
    index = {d: i for i, d in enumerate(cached.run_dirs)} if cached else {}
    reused, fresh = [], []
    for k, run_dir in enumerate(run_dirs):
        i = index.get(str(run_dir))
        if i is not None and cached is not None and cached.signatures[i].tolist() == cache.signature(run_dir):
            reused.append((k, i))
        else:
            fresh.append(k)
    if cached is not None and not fresh and len(cached.run_dirs) == len(run_dirs):
        return cached.take(np.array([i for _, i in reused], dtype=np.int64))
    parts = [parse_runs([run_dirs[k] for k in fresh], workers)]
    if cached is not None and reused:
        parts.insert(0, cached.take(np.array([i for _, i in reused], dtype=np.int64)))
    positions = [k for k, _ in reused] if cached is not None and reused else []
    parsed = cache.Parsed.concat(parts).take(np.argsort(positions + fresh, kind="stable"))
    cache.write(root, parsed)
    return parsed


def read_runs(paths: Iterable[str | Path], *, use_cache: bool = True, workers: int = 1) -> cache.Parsed:
    """Every run under ``paths`` (sorted by directory), from each sweep's cache where its files are unchanged (the
    others parsed by ``workers`` processes: ``parse_runs``)."""
    run_dirs = find_run_dirs(paths)
    sweeps: dict[Path | None, list[int]] = {}
    for k, run_dir in enumerate(run_dirs):
        sweeps.setdefault(sweep_dir(run_dir) if use_cache else None, []).append(k)
    if not sweeps:
        return cache.Parsed.empty(len(METRICS))
    parts = [_load_sweep(root, [run_dirs[k] for k in ks], workers) for root, ks in sweeps.items()]
    positions = [k for ks in sweeps.values() for k in ks]
    return cache.Parsed.concat(parts).take(np.argsort(positions, kind="stable"))


def runs_table(parsed: cache.Parsed) -> pd.DataFrame:
    """``load_runs``' table of parsed runs."""
    import pandas as pd

    frame = pd.DataFrame(parsed.rows)
    for column in RUN_COLUMNS:
        if column not in frame:
            frame[column] = None
    return frame[RUN_COLUMNS + [c for c in frame.columns if c not in RUN_COLUMNS]]


def evaluations_table(parsed: cache.Parsed, runs: pd.DataFrame, metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """``load_evaluations``' long table of parsed runs, built in one reshape: per run, per metric, file order."""
    import pandas as pd

    unknown = sorted(set(metrics or ()) - set(METRICS))
    if unknown:
        raise ValueError(f"metrics: unknown {', '.join(unknown)}; choose from {', '.join(METRICS)}")
    names = [m for m in METRICS if metrics is None or m in metrics]
    usable = (runs.status != "damaged").to_numpy(bool)
    run_parts, code_parts, row_parts = [], [], []
    for code, metric in enumerate(names):
        column = METRICS.index(metric)
        rows = np.flatnonzero(parsed.present[parsed.eval_run, column] & usable[parsed.eval_run])
        run_parts.append(parsed.eval_run[rows])
        code_parts.append(np.full(rows.size, code))
        row_parts.append(rows)
    covered = np.zeros(len(runs), dtype=bool)
    for part in run_parts:
        covered[part] = True
    bare = np.flatnonzero(~covered)  # no evaluation: one row with NaN values
    run = np.concatenate([*run_parts, bare]).astype(np.int64)
    code = np.concatenate([*code_parts, np.full(bare.size, -1)]).astype(np.int64)
    row = np.concatenate([*row_parts, np.full(bare.size, -1)]).astype(np.int64)
    order = np.argsort(run * (len(names) + 1) + code + 1, kind="stable")
    run, code, row = run[order], code[order], row[order]
    has = row >= 0
    timesteps = np.where(has, parsed.timesteps[row], np.nan)
    value = np.full(row.size, np.nan)
    columns = np.array([METRICS.index(m) for m in names], dtype=np.int64)
    value[has] = parsed.values[row[has], columns[code[has]]]
    if has.all() and np.array_equal(timesteps, np.round(timesteps)):
        timesteps = timesteps.astype(np.int64)
    table = {c: runs[c].to_numpy()[run] for c in RUN_COLUMNS}
    table.update(timesteps=timesteps, metric=pd.Categorical.from_codes(code, categories=names), value=value)
    return pd.DataFrame(table)


def load_tables(
    paths: Iterable[str | Path], *, metrics: Sequence[str] | None = None, use_cache: bool = True, workers: int = 1
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(load_runs, load_evaluations)`` of ``paths`` from one pass over their files (``metrics``: only these; files
    not cached are parsed by ``workers`` processes)."""
    parsed = read_runs(paths, use_cache=use_cache, workers=workers)
    runs = runs_table(parsed)
    return runs, evaluations_table(parsed, runs, metrics)


def load_runs(paths: Iterable[str | Path], *, use_cache: bool = True, hyperparameters: bool = True) -> pd.DataFrame:
    """One row per run directory: identity, status and the summary's numbers (NaN where a run has none), and
    (``hyperparameters``) one column per hyperparameter whose value differs among these runs, parsed from their
    ``config.yaml`` (``algo.learning_rate``, ``env.n_envs``, ...: ``training.hyperparameter_columns``).

    A run whose ``summary.json`` or ``eval.csv`` is damaged gets status ``damaged`` and the reason in ``problem``.
    Runs written before the run-identity keys existed get ``config_id`` and ``variant`` "" (one config per sweep).
    """
    runs = runs_table(read_runs(paths, use_cache=use_cache))
    if not hyperparameters:
        return runs
    from lit_bench.analysis.training import hyperparameter_columns

    return runs.join(hyperparameter_columns(runs))


def load_evaluations(
    paths: Iterable[str | Path], *, metrics: Sequence[str] | None = None, use_cache: bool = True
) -> pd.DataFrame:
    """The long table of every evaluation of every run (``metrics``: only these); a run with no evaluation keeps one
    row with NaN values (damaged runs too: their evaluations are not used)."""
    return load_tables(paths, metrics=metrics, use_cache=use_cache)[1]


def load_episode_returns(paths: Iterable[str | Path]) -> pd.DataFrame:
    """Every evaluation episode of every run from its ``evaluations.npz``:
    ``[<run identity>, timesteps, episode, return, length]``; runs without the file (or damaged ones) add nothing."""
    import pandas as pd

    frames = []
    for run in load_runs(paths, hyperparameters=False).itertuples(index=False):
        data = read_evaluations_npz(Path(run.run_dir) / EVALUATIONS_NPZ) if run.status != "damaged" else {}
        if not data:
            continue
        n_evals, n_episodes = data["results"].shape
        frames.append(
            pd.DataFrame(
                {
                    **{c: getattr(run, c) for c in RUN_COLUMNS},
                    "timesteps": np.repeat(data["timesteps"], n_episodes),
                    "episode": np.tile(np.arange(n_episodes), n_evals),
                    "return": data["results"].ravel(),
                    "length": data["ep_lengths"].ravel(),
                }
            )
        )
    columns = [*RUN_COLUMNS, "timesteps", "episode", "return", "length"]
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)

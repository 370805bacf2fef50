"""Reading ``eval.csv`` files into numbers: one file into a table (``read_eval_csv``) or many at once
(``read_eval_csvs``: the files the harness wrote plainly parsed together, any other one on its own), each file's fault
named (a cut last row, a missing column, a row without a number)."""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd  # (imported by the functions that use it: a training run imports this module, not pandas)

from lit_bench.store.format import EVAL_FIELDS
from lit_bench.store.rundir import unix_line_ends

METRICS = [f for f in EVAL_FIELDS if f != "timesteps"]  # the numbers of an evaluation


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
class Evals:
    """Evaluations of a list of runs (``cache.Parsed``'s columns) and each run's eval.csv problem."""

    run: list[np.ndarray] = field(default_factory=list)
    timesteps: list[np.ndarray] = field(default_factory=list)
    values: list[np.ndarray] = field(default_factory=list)
    present: dict[int, np.ndarray] = field(default_factory=dict)
    problems: dict[int, str] = field(default_factory=dict)
    sha256: dict[int, str] = field(default_factory=dict)  # each file's checksum (summary.json's eval_csv_sha256)

    def add(self, position: int, timesteps: np.ndarray, values: np.ndarray, present: np.ndarray) -> None:
        self.run.append(np.full(timesteps.size, position, dtype=np.int64))
        self.timesteps.append(timesteps.astype(float))
        self.values.append(values.astype(float))
        self.present[position] = present


def _read_one(path: Path, position: int, evals: Evals) -> None:
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


def _read_plain(files: list[tuple[int, Path, bytes]], evals: Evals) -> bool:
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


def _read_chunk(files: list[tuple[int, Path, bytes]], evals: Evals) -> None:
    if not _read_plain(files, evals):
        for position, path, _ in files:
            _read_one(path, position, evals)


def read_eval_csvs(paths: list[Path], chunk: int = 2000) -> Evals:
    """The evaluations of many eval.csv files: plain ones parsed together, ``chunk`` files at a time (which bounds the
    memory of the text held at once), others one by one."""
    evals, plain = Evals(), []
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
        evals.sha256[position] = hashlib.sha256(data).hexdigest()  # (of the bytes as written)
        data = unix_line_ends(data)
        if _plain(data):
            plain.append((position, path, data[len(_HEADER) :]))
        else:
            _read_one(path, position, evals)
        if len(plain) == chunk:
            _read_chunk(plain, evals)
            plain = []
    _read_chunk(plain, evals)
    return evals

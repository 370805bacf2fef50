"""Reading many runs' ``train/metrics.csv`` into numbers at once: the files of one header parsed together, only the
metrics asked for (a file read alone when it is not plainly written, skipped when it cannot be read), as
``eval_csv`` does for ``eval.csv``. At 10,000 runs (60 configs), a ``read_csv`` and a melt per file made each env's
training figure 13-24 s."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from lit_bench.store.format import METRICS_CSV
from lit_bench.store.rundir import unix_line_ends

STEP_COLUMNS = ("time/total_timesteps", "step")  # env steps of a metrics row (the first present)


def metrics_csvs(run_dirs: Sequence[str]) -> list[str]:
    """The ``train/metrics.csv`` of each run directory (str joins: a ``RunDir`` per run, ~14 paths each, was 0.7 of
    a training figure's 2.3 s under cProfile at 2,500 runs)."""
    return [os.path.join(d, METRICS_CSV) for d in run_dirs]


def step_column(names: Sequence[str]) -> str | None:
    return next((c for c in STEP_COLUMNS if c in names), None)


def metric_names(paths: Sequence[str | Path]) -> list[str]:
    """The metrics the files' headers name (first seen first; a file without a step column names none), read
    without their rows."""
    names: dict[str, None] = {}
    for header in dict.fromkeys(_header(p) for p in paths):
        columns = header.decode(errors="replace").split(",") if header else []
        if step_column(columns):
            names.update(dict.fromkeys(c for c in columns if c not in STEP_COLUMNS))
    return list(names)


def _header(path: str | Path) -> bytes:
    try:
        with open(path, "rb") as file:
            return file.readline().rstrip(b"\r\n")
    except OSError:
        return b""


@dataclass
class MetricRows:
    """The rows of some files: ``run[i]`` is the position (in the paths read) of row ``i``'s file; ``values[:, j]``
    is metric ``names[j]`` (NaN where a row has none)."""

    run: np.ndarray
    timesteps: np.ndarray
    names: list[str]
    values: np.ndarray


def read_metrics_csvs(paths: Sequence[str | Path], metrics: Sequence[str] | None = None) -> Iterator[MetricRows]:
    """The rows of every readable file among ``paths``, a ``MetricRows`` per header (``metrics``: only these)."""
    by_header: dict[bytes, list[tuple[int, bytes]]] = {}
    for position, path in enumerate(paths):
        try:
            with open(path, "rb") as file:
                header, sep, body = unix_line_ends(file.read()).partition(b"\n")
        except OSError:
            continue  # (absent: a run that logged nothing yet)
        if sep and body:
            by_header.setdefault(header.rstrip(b"\r"), []).append((position, body))
    for header, files in by_header.items():
        names = header.decode(errors="replace").split(",")
        step = step_column(names)
        wanted = [c for c in names if c not in STEP_COLUMNS and (metrics is None or c in metrics)]
        if step is None or not wanted or len(set(names)) < len(names):
            continue
        plain = [f for f in files if _plain(f[1], len(names))]
        parsed = _parse([step, *wanted], names, plain) if plain else None
        together = {p for p, _ in plain} if parsed is not None else set()
        if parsed is not None:
            yield parsed
        for position, body in files:
            if position not in together:  # (on its own: not plain, or the plain ones did not parse together)
                one = _parse([step, *wanted], names, [(position, body)], header=header)
                if one is not None:
                    yield one


def _plain(body: bytes, n_fields: int) -> bool:
    """Rows as the harness writes them: whole lines of all fields, nothing quoted (parsed with other files' rows)."""
    return (
        body.endswith(b"\n")
        and b'"' not in body
        and b"\r" not in body
        and b"\n\n" not in body
        and body.count(b",") == (n_fields - 1) * body.count(b"\n")
    )


def _parse(
    columns: list[str], names: list[str], files: list[tuple[int, bytes]], header: bytes | None = None
) -> MetricRows | None:
    """One ``read_csv`` of the files' rows (``header``: one file, parsed with it, as pandas reads any CSV); None when
    it cannot be read or its rows do not add up."""
    data = b"".join(body for _, body in files)
    try:
        if header is None:
            table = pd.read_csv(io.BytesIO(data), header=None, names=names, usecols=columns)
        else:
            table = pd.read_csv(io.BytesIO(header + b"\n" + data), usecols=columns)
    except (ValueError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError):
        return None
    counts = np.array([len(table)] if header else [body.count(b"\n") for _, body in files], dtype=np.int64)
    if len(table) != counts.sum():
        return None
    numbers = np.stack([pd.to_numeric(table[c], errors="coerce").to_numpy(float) for c in columns], axis=1)
    run = np.repeat(np.array([p for p, _ in files], dtype=np.int64), counts)
    return MetricRows(run, numbers[:, 0], columns[1:], numbers[:, 1:])

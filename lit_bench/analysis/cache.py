"""The parsed run files of one sweep, kept in ``<sweep>/.lit_bench_cache.npz`` so that a second report is instant.

Each run's entry is valid while its files are unchanged: ``signature`` holds inode, size, mtime and ctime of every
file its entry was parsed from (``os.replace`` gives a rewritten file a new inode, so an atomic rewrite within the
same clock tick is seen too). A changed, added or removed run is parsed again and the file is rewritten whole,
atomically (temporary file + rename), so a reader never sees half of one and concurrent reports cannot corrupt it
(the last writer wins). The file is plain ``numpy`` arrays and JSON text, loaded with ``allow_pickle=False``; a file
that cannot be read or does not hold what this version writes is ignored (and replaced), never trusted.
"""

from __future__ import annotations

import contextlib
import json
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lit_bench.store import format as fmt
from lit_bench.store.format import EVAL_FIELDS
from lit_bench.store.rundir import atomic_write

CACHE_FILE = fmt.SWEEP_CACHE
FORMAT = 3  # bump when the parsing of run files changes what an entry holds (2: eval.csv checked against its
# record; 3: a batched seed under its config trained ungrouped)
SIGNED_FILES = (fmt.SUMMARY, fmt.EVAL_CSV, fmt.CONFIG)  # the files a run's entry is parsed from
MISSING = (-1, -1, -1, -1)
SIGNATURE = len(MISSING) * len(SIGNED_FILES)  # numbers per run


def signature(run_dir: Path) -> list[int]:
    """inode, size, mtime_ns, ctime_ns of each of ``SIGNED_FILES`` (-1s for a missing one), flat."""
    values: list[int] = []
    for name in SIGNED_FILES:
        try:
            st = os.stat(os.path.join(run_dir, name))  # (a str join: Path's / was most of the cost at 10,000 runs)
            values += [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
        except OSError:
            values += MISSING
    return values


@dataclass
class Parsed:
    """Parsed files of a list of runs: one ``rows`` entry per run, evaluations as one wide table for all runs.

    ``eval_run[i]`` is the run (index into ``rows``) of evaluation row ``i``; ``values[i]`` its ``METRICS`` in
    ``EVAL_FIELDS`` order (without timesteps); ``present[r, j]``: run ``r``'s ``eval.csv`` has metric ``j``'s column.
    Rows of one run are contiguous and in file order.
    """

    run_dirs: list[str]
    signatures: np.ndarray  # (runs, SIGNATURE) int64
    rows: list[dict]
    eval_run: np.ndarray  # (evaluations,) int64
    timesteps: np.ndarray  # (evaluations,) float64
    values: np.ndarray  # (evaluations, metrics) float64
    present: np.ndarray  # (runs, metrics) bool

    @staticmethod
    def empty(n_metrics: int) -> Parsed:
        return Parsed(
            [],
            np.zeros((0, SIGNATURE), np.int64),
            [],
            np.zeros(0, np.int64),
            np.zeros(0),
            np.zeros((0, n_metrics)),
            np.zeros((0, n_metrics), bool),
        )

    def take(self, runs: np.ndarray) -> Parsed:
        """The runs at positions ``runs`` (in that order) with their evaluations (itself for all of them in order:
        no copy of its arrays, the largest of the report)."""
        runs = np.asarray(runs, dtype=np.int64)
        if runs.size == len(self.rows) and np.array_equal(runs, np.arange(runs.size)):
            return self
        counts = np.bincount(self.eval_run, minlength=len(self.rows))
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        sizes = counts[runs]
        offsets = np.repeat(starts[runs] - np.concatenate([[0], np.cumsum(sizes)[:-1]]), sizes)
        picked = np.arange(int(sizes.sum())) + offsets
        return Parsed(
            [self.run_dirs[r] for r in runs],
            self.signatures[runs],
            [self.rows[r] for r in runs],
            np.repeat(np.arange(runs.size), sizes),
            self.timesteps[picked],
            self.values[picked],
            self.present[runs],
        )

    @staticmethod
    def concat(parts: list[Parsed]) -> Parsed:
        """The runs of ``parts`` one after the other (one part: itself, not a copy)."""
        if len(parts) == 1:
            return parts[0]
        offsets = np.cumsum([0] + [len(p.rows) for p in parts])
        return Parsed(
            [d for p in parts for d in p.run_dirs],
            np.concatenate([p.signatures for p in parts]),
            [r for p in parts for r in p.rows],
            np.concatenate([p.eval_run + o for p, o in zip(parts, offsets)]),
            np.concatenate([p.timesteps for p in parts]),
            np.concatenate([p.values for p in parts]),
            np.concatenate([p.present for p in parts]),
        )


def _key(sweep_dir: Path) -> str:
    return json.dumps({"format": FORMAT, "fields": EVAL_FIELDS, "sweep_dir": str(sweep_dir)})


def _bytes(text: str) -> np.ndarray:
    return np.frombuffer(text.encode(), dtype=np.uint8)  # UTF-8 bytes (a numpy str array takes 4 bytes a character)


def _text(array: np.ndarray) -> str:
    if array.dtype != np.uint8 or array.ndim != 1:
        raise ValueError("not a text array")
    return array.tobytes().decode()


def read(sweep_dir: Path) -> Parsed | None:
    """The cached runs of ``sweep_dir`` (run dirs relative to it made whole again); None when there is no usable
    cache (missing, damaged, another format, or written for another spelling of the path)."""
    path = sweep_dir / CACHE_FILE
    try:
        with np.load(path, allow_pickle=False) as data:
            if _text(data["key"]) != _key(sweep_dir):
                return None
            parsed = Parsed(
                [os.path.join(sweep_dir, rel) for rel in json.loads(_text(data["run_dirs"]))],
                data["signatures"].astype(np.int64),
                json.loads(_text(data["rows"])),
                data["eval_run"].astype(np.int64),
                data["timesteps"].astype(float),
                data["values"].astype(float),
                data["present"].astype(bool),
            )
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile, UnicodeDecodeError):
        return None
    n = len(parsed.run_dirs)
    valid = (
        isinstance(parsed.rows, list)
        and len(parsed.rows) == n
        and all(isinstance(r, dict) for r in parsed.rows)
        and parsed.signatures.shape == (n, SIGNATURE)
        and parsed.present.shape == (n, len(EVAL_FIELDS) - 1)
        and parsed.values.shape == (parsed.eval_run.size, len(EVAL_FIELDS) - 1)
        and parsed.timesteps.shape == parsed.eval_run.shape
        and bool(np.all((parsed.eval_run >= 0) & (parsed.eval_run < n)))
        and bool(np.all(np.diff(parsed.eval_run) >= 0))
    )
    return parsed if valid else None


def _relative(run_dirs: list[str], sweep_dir: Path) -> list[str]:
    """``os.path.relpath(d, sweep_dir)`` of each run dir (its prefix cut off where it has one: relpath's own work,
    two absolute paths a run, was 0.2 s at 10,000 runs)."""
    prefix = os.path.join(sweep_dir, "")
    return [d[len(prefix) :] if d.startswith(prefix) else os.path.relpath(d, sweep_dir) for d in run_dirs]


def write(sweep_dir: Path, parsed: Parsed) -> None:
    """Replace the cache of ``sweep_dir`` atomically; a sweep that cannot be written to simply has no cache."""

    def save(tmp: Path) -> None:
        with tmp.open("wb") as file:  # a file object: np.savez would append ".npz" to a bare path
            np.savez(
                file,
                key=_bytes(_key(sweep_dir)),
                run_dirs=_bytes(json.dumps(_relative(parsed.run_dirs, sweep_dir))),
                signatures=parsed.signatures,
                rows=_bytes(json.dumps(parsed.rows)),
                eval_run=parsed.eval_run,
                timesteps=parsed.timesteps,
                values=parsed.values,
                present=parsed.present,
            )

    with contextlib.suppress(OSError):
        atomic_write(sweep_dir / CACHE_FILE, save)

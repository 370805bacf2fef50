"""One run's directory: its files (named in ``lit_bench.store.format``), atomic writes, and the CSV bookkeeping that
keeps resumed runs continuous.

Every file is written to a temporary name in the same directory and moved into place with ``os.replace``, so a run
killed at any moment leaves either the old or the new version of each file, never half of one.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import fcntl
import hashlib
import io
import json
import math
import os
import shutil
import socket
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from lit_bench.store import format as fmt
from lit_bench.store.format import EVAL_FIELDS, FINAL_VIDEO

__all__ = [
    "HeldRun",
    "RunDir",
    "atomic_write",
    "atomic_write_json",
    "atomic_write_text",
    "csv_text",
    "read_csv",
    "read_evaluations_npz",
]

# safe_load's loader, in C where libyaml is there (~6x faster on a run's config.yaml: a report reads one per config)
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def fresh_tmp(path: Path, suffix: str = "") -> Path:
    """A temporary sibling of ``path`` with nothing at its name: whatever is there (a file a killed run left, a
    symlink someone planted) is removed, so that writing it creates a new file instead of following a link."""
    tmp = path.with_name(f".{path.stem if suffix else path.name}.{os.getpid()}.tmp{suffix}")
    tmp.unlink(missing_ok=True)
    return tmp


def _symlink_refused(path: Path) -> OSError:
    return OSError(errno.ELOOP, f"{path} is a symlink; the harness never writes through one: remove it")


def open_no_follow(path: Path, flags: int) -> int:
    """``os.open(path, flags)`` that refuses a symlink at ``path`` (one line naming it) instead of following it."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise _symlink_refused(path) from None
        raise


def atomic_write(path: Path, write: Callable[[Path], object]) -> None:
    """Call ``write(tmp)`` for a new temporary sibling of ``path``, then move it over ``path`` (``os.replace``
    replaces a symlink at ``path`` itself, never the file it points to)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = fresh_tmp(path)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _write_new(tmp: Path, text: str) -> None:
    with os.fdopen(open_no_follow(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL), "w") as file:
        file.write(text)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write(path, lambda tmp: _write_new(tmp, text))


def atomic_write_json(path: Path, data: dict[str, Any]) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, default=str) + "\n")


def csv_text(fieldnames: Iterable[str], rows: Iterable[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(fieldnames), extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def unix_line_ends(data: bytes) -> bytes:
    """CSV text with ``\n`` line ends: ``csv_text`` (the csv module) ends every line with ``\r\n``, and readers
    that parse many files' rows together split on ``\n``. Text with any other ``\r`` is returned as it is (such a
    file is read on its own)."""
    if b"\r\n" not in data:
        return data
    unix = data.replace(b"\r\n", b"\n")
    return data if b"\r" in unix else unix


def read_csv(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        return []
    with path.open(newline="") as file:
        return list(csv.DictReader(file))


def read_evaluations_npz(path: Path) -> dict[str, np.ndarray]:
    """``evaluations.npz`` as SB3's ``EvalCallback`` writes it: ``timesteps`` (n,), ``results`` and ``ep_lengths``
    (n, episodes), ``successes`` when the env reports them; empty when the file is absent."""
    if not path.is_file():
        return {}
    with np.load(path, allow_pickle=False) as data:
        return {key: data[key] for key in data.files}


def _step_of(row: dict[str, Any], key: str) -> float:
    value = row.get(key)
    return float(value) if value not in (None, "") else -1.0


LOCK_POLL_S = 0.2  # how often a process waiting for another's run lock looks again (and at a pending signal)


def _wait_for_lock(handle: Any, poll: Callable[[], None], root: Path, holder: str) -> None:
    """Block until ``handle``'s lock is ours, calling ``poll`` every ``LOCK_POLL_S`` (it may raise, e.g. on a
    signal, to stop the wait instead of blocking until the other process ends). Says so, once, when the holder is
    (or becomes) a stopped process: that wait would not end by itself."""
    said_stopped = False
    while True:
        poll()
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            note = None if said_stopped else stopped_holder(holder)
            if note:
                print(f"{root}: {note}", flush=True)
                said_stopped = True
            time.sleep(LOCK_POLL_S)


def stopped_holder(holder: str) -> str | None:
    """What to say when ``holder`` (a lock's ``pid N on <host>``) is a process of this machine that is stopped
    (SIGSTOP, Ctrl-Z; state T or t in /proc/N/stat): it is not progressing, so the wait would not end."""
    words = holder.split()
    if len(words) != 4 or words[0] != "pid" or words[2] != "on" or words[3] != socket.gethostname():
        return None
    pid = words[1]
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):  # gone, or no /proc (not Linux)
        return None
    if state not in ("T", "t"):
        return None
    return (
        f"pid {pid} on {words[3]} holds the lock and is stopped (SIGSTOP or Ctrl-Z; /proc/{pid}/stat state {state}): "
        f"it is not progressing; kill -CONT {pid} resumes it, Ctrl-C stops this wait"
    )


class Untouchable(Exception):
    """A run directory that the harness must neither delete, rewrite, skip nor resume (its message: why, one line)."""


class RunDir:
    """Paths and files of one run directory (``lit_bench.config.identity`` decides where it is)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.lock_file = self.root / fmt.LOCK
        self.config = self.root / fmt.CONFIG
        self.overrides = self.root / fmt.OVERRIDES
        self.eval_csv = self.root / fmt.EVAL_CSV
        self.evaluations_npz = self.root / fmt.EVALUATIONS_NPZ
        self.summary = self.root / fmt.SUMMARY
        self.vecnormalize = self.root / fmt.VECNORMALIZE
        self.metrics_csv = self.root / fmt.METRICS_CSV
        self.train_dir = self.metrics_csv.parent
        self.checkpoints = self.root / fmt.CHECKPOINTS
        self.video = self.root / fmt.VIDEO
        self.monitor = self.root / fmt.MONITOR  # SB3 Monitor files of the training envs: <i>.monitor.csv
        self.final_video = self.video / FINAL_VIDEO
        self.checkpoint_state = self.checkpoints / fmt.CHECKPOINT_STATE
        self._metrics_before_resume = self.root / fmt.METRICS_BEFORE_RESUME

    # ------------------------------------------------------------------ summary

    def read_summary(self) -> dict[str, Any] | None:
        try:
            summary = json.loads(self.summary.read_text())
        except (OSError, ValueError):  # missing, unreadable, or not JSON (ValueError covers JSONDecodeError)
            return None
        return summary if isinstance(summary, dict) else None

    def write_summary(self, summary: dict[str, Any]) -> None:
        """``summary.json`` in this version's format (its ``format`` field first)."""
        atomic_write_json(self.summary, {"format": fmt.FORMAT, **{k: v for k, v in summary.items() if k != "format"}})

    def read_config(self) -> dict[str, Any] | None:
        """The resolved config of the run that wrote this directory (None when there is none)."""
        try:
            config = yaml.load(self.config.read_text(), Loader=SAFE_LOADER)
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            return None
        return config if isinstance(config, dict) else None

    def held_run(self) -> HeldRun:
        """What this directory holds, read once its lock is held (nothing yet: a :class:`HeldRun` of Nones).
        :class:`Untouchable` when what it holds cannot be shown to be a run of the harness (``unproven``: it may be a
        finished run, or not the harness's at all) or was written by a newer lit_bench (``format_problem``)."""
        unproven = self.unproven()
        if unproven is not None:
            raise Untouchable(
                f"{self.root}: {unproven}, so it cannot be shown to be a run of this config; "
                f"nothing was changed: move it, or use another sweep="
            )
        summary = self.read_summary()
        problem = fmt.format_problem(summary) if summary is not None else None
        if problem:
            raise Untouchable(f"{self.summary}: {problem}; nothing was changed")
        config = self.read_config()
        if config is None:  # no run of the harness here yet: nothing of it to check
            return HeldRun(summary)
        damage, rows = self._checked_evaluations(summary)
        return HeldRun(summary, config, damage, rows)

    def unproven(self) -> str | None:
        """Why this directory cannot be shown to be a run of the harness (None: it can, or it holds nothing).

        Its own runs have a readable ``config.yaml`` (compared with the config by the caller); the only traces it
        leaves without one are the lock, temporary files and the summary of a config mistake found before training.
        Anything else is never deleted or rewritten.
        """
        if self.config.exists() or self.config.is_symlink():
            if self.config.is_symlink() or not self.config.is_file():
                return "config.yaml is not a regular file"
            try:
                config = yaml.load(self.config.read_text(), Loader=SAFE_LOADER)
            except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
                return f"config.yaml is unreadable ({type(error).__name__})"
            return None if isinstance(config, dict) else "config.yaml is not a mapping"
        if not self.root.is_dir():
            return None
        summary = self.read_summary()
        for child in self.root.iterdir():
            if child == self.lock_file or (child.name.startswith(".") and child.name.endswith(".tmp")):
                continue
            if (
                child == self.summary
                and summary is not None
                and summary.get("status") == "failed"
                and not summary.get("timesteps")
            ):
                continue
            return f"it holds {child.name} but no config.yaml"
        return None

    def wipe(self) -> None:
        """Start over: remove everything a previous run of this config left here (the lock file stays: it is held)."""
        self.root.mkdir(parents=True, exist_ok=True)
        for child in self.root.iterdir():
            if child == self.lock_file:
                continue
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()

    def make_ready(
        self, resume_at: int | None, n_envs: int, config: dict[str, Any], overrides: list[str], summary: dict[str, Any]
    ) -> None:
        """Ready the directory for a run that resumes at ``resume_at`` env steps (its files cut back to that
        checkpoint: evaluations, training metrics, the ``n_envs`` training envs' episodes) or starts afresh (None:
        cleared); then the run's config, its command-line overrides and its ``running`` summary, in that order."""
        if resume_at is None:
            self.wipe()
        else:
            self.truncate_eval(resume_at)
            self.stash_metrics(resume_at)
            self.truncate_monitor(resume_at, n_envs)
        atomic_write_text(self.config, yaml.safe_dump(config, sort_keys=False))
        atomic_write_text(self.overrides, yaml.safe_dump(overrides))
        self.write_summary(summary)

    @contextlib.contextmanager
    def lock(self, poll: Callable[[], None] = lambda: None) -> Iterator[None]:
        """One writer per run directory: an exclusive ``flock`` on ``.lock``, held for the whole run.

        The OS drops the lock when its process ends, however it ends, so a killed run never blocks its resume. A
        second process reaching a locked run says so in one line and waits (calling ``poll`` every
        ``LOCK_POLL_S``: what it raises ends the wait); it then finds the run completed (and skips it) or
        interrupted (and resumes it). ``flock`` is local to one machine (and NFS clients that map it to POSIX
        locks). Nothing is written through a symlink: at ``.lock``, at the run directory or at a directory the run
        writes into (``WRITTEN_DIRS``), one is refused before anything is written (OSError naming it).
        """
        self.refuse_symlinked_dirs()
        self.root.mkdir(parents=True, exist_ok=True)
        with os.fdopen(open_no_follow(self.lock_file, os.O_RDWR | os.O_CREAT), "r+") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.seek(0)
                holder = handle.read().strip() or "another process"
                print(f"{self.root}: being written by {holder}; waiting for it to finish", flush=True)
                _wait_for_lock(handle, poll, self.root, holder)
            handle.seek(0)
            handle.truncate()
            handle.write(f"pid {os.getpid()} on {socket.gethostname()}\n")
            handle.flush()
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def left_running(self) -> bool:
        """Whether summary.json says ``running`` while no process holds the run's lock (its writer is gone)."""
        if (self.read_summary() or {}).get("status") != "running":
            return False
        try:
            handle = open_no_follow(self.lock_file, os.O_RDWR)
        except OSError:
            return False
        with os.fdopen(handle, "r+") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False  # a live writer
            fcntl.flock(lock, fcntl.LOCK_UN)
        return True

    def record_lost(self, error: str) -> None:
        """A run whose process died without recording its end: ``failed`` with ``error`` (a rerun resumes it from its
        checkpoint), so that its directory says what the sweep table says. A run that recorded its end, or that a
        live process is writing, is left as it is."""
        if self.left_running():
            summary = self.read_summary() or {}
            self.write_summary({**summary, "status": "failed", "error": error, "traceback": None})

    def refuse_symlinked_dirs(self) -> None:
        """OSError (one line naming it) when the run directory, or a directory in it that the harness or its loggers
        write into, is a symlink: writing into it would change the files the link points to."""
        for path in (self.root, *(self.root / name for name in fmt.WRITTEN_DIRS)):
            if path.is_symlink():
                raise _symlink_refused(path)

    # ------------------------------------------------------------------ checkpoints

    def checkpoint_step(self) -> int | None:
        """Env steps of the last complete checkpoint (state.json is written after the checkpoint files)."""
        try:
            return int(json.loads(self.checkpoint_state.read_text())["timesteps"])
        except (FileNotFoundError, KeyError, ValueError):
            return None

    def checkpoint_wall_time(self) -> float:
        try:
            return float(json.loads(self.checkpoint_state.read_text()).get("wall_time_s", 0.0))
        except (FileNotFoundError, ValueError):
            return 0.0

    def mark_checkpoint(self, timesteps: int, wall_time_s: float) -> None:
        atomic_write_json(self.checkpoint_state, {"timesteps": int(timesteps), "wall_time_s": round(wall_time_s, 3)})

    # ------------------------------------------------------------------ eval.csv

    def eval_rows(self) -> list[dict[str, str]]:
        return read_csv(self.eval_csv)

    def record_evaluation(self, row: dict[str, Any], history: dict[str, list[Any]]) -> None:
        """One evaluation on disk: its ``row`` appended to eval.csv, then ``history`` (every evaluation's episodes so
        far, as SB3's ``EvalCallback`` keeps them) written as evaluations.npz."""
        self.append_eval(row)
        self.write_evaluations(history)

    def append_eval(self, row: dict[str, Any]) -> None:
        # Rewritten whole (a few hundred rows at most) so that the file on disk is always complete.
        atomic_write_text(self.eval_csv, csv_text(EVAL_FIELDS, [*self.eval_rows(), row]))

    def truncate_eval(self, upto: int) -> None:
        """Drop evaluations past ``upto`` env steps (they happened after the checkpoint a resumed run starts from)."""
        rows = [r for r in self.eval_rows() if _step_of(r, "timesteps") <= upto]
        atomic_write_text(self.eval_csv, csv_text(EVAL_FIELDS, rows))

    # ------------------------------------------------------------------ evaluations.npz

    def read_evaluations(self) -> dict[str, np.ndarray]:
        return read_evaluations_npz(self.evaluations_npz)

    def write_evaluations(self, history: dict[str, list[Any]]) -> None:
        def write(tmp: Path) -> None:
            with tmp.open("wb") as file:  # a file object: np.savez would append ".npz" to a temporary name
                arrays: dict[str, Any] = {key: np.asarray(values) for key, values in history.items()}
                np.savez(file, **arrays)

        atomic_write(self.evaluations_npz, write)

    def monitor_files(self) -> list[Path]:
        return sorted(self.monitor.glob("*.monitor.csv"))

    def truncate_monitor(self, upto: int, n_envs: int) -> None:
        """Drop the episodes the training envs ended after ``upto`` env steps (``upto / n_envs`` steps of each env):
        the resumed run's Monitors append theirs."""
        per_env = upto // max(n_envs, 1)
        for path in self.monitor_files():
            header, *lines = path.read_text().splitlines(keepends=True)
            rows = list(csv.DictReader(lines))
            kept, steps = 0, 0
            for row in rows:
                steps += int(float(row["l"]))
                if steps > per_env:
                    break
                kept += 1
            atomic_write_text(path, header + "".join(lines[: kept + 1]))

    # ------------------------------------------------------------------ train/metrics.csv

    def stash_metrics(self, upto: int) -> None:
        """Before a resume: keep training metrics up to ``upto`` aside (the CSV logger starts a fresh file)."""
        rows = read_csv(self._metrics_before_resume) + read_csv(self.metrics_csv)
        rows = [r for r in rows if _step_of(r, "step") <= upto]
        self._write_metrics(self._metrics_before_resume, rows)

    def merge_metrics(self) -> None:
        """After training: put the stashed metrics back in front of the resumed run's."""
        if not self._metrics_before_resume.is_file():
            return
        self._write_metrics(self.metrics_csv, read_csv(self._metrics_before_resume) + read_csv(self.metrics_csv))
        self._metrics_before_resume.unlink()

    @staticmethod
    def _write_metrics(path: Path, rows: list[dict[str, Any]]) -> None:
        fields = sorted({key for row in rows for key in row})  # Lightning's CSVLogger sorts its columns too
        atomic_write_text(path, csv_text(fields, rows))

    # ------------------------------------------------------------------ checking a finished run

    def written(self) -> dict[str, Any]:
        """What a completed run records about the eval.csv it wrote (``format.WRITTEN``): its number of evaluations
        and its checksum, so that a later change to the file is found (``damage``)."""
        data = self.eval_csv.read_bytes()
        return {"evaluations": len(read_csv(self.eval_csv)), "eval_csv_sha256": hashlib.sha256(data).hexdigest()}

    def _checked_evaluations(self, summary: dict[str, Any] | None) -> tuple[str | None, list[dict[str, str]]]:
        """What is wrong with the files of a run before it is skipped as completed (None: nothing, or not completed),
        and its evaluations (a completed run's eval.csv rows, read here once; empty for any other run).

        A completed run's eval.csv has a number in every row, ends with the final evaluation that its summary.json
        reports and (format 3 on) is the file the run wrote: as many evaluations, the same checksum.
        """
        if summary is None:
            return ("summary.json is unreadable" if self.summary.exists() else None), []
        if summary.get("status") != "completed":
            return None, []
        try:
            data = self.eval_csv.read_bytes()
            text = data.decode()
        except FileNotFoundError:
            return "eval.csv is missing", []
        except (OSError, ValueError) as error:
            return f"eval.csv is unreadable ({error})", []
        rows = list(csv.DictReader(io.StringIO(text)))
        return _damage(summary, text, data, rows), rows


@dataclass(frozen=True)
class HeldRun:
    """What a locked run directory holds (``RunDir.held_run``), read once for the run's decision: the summary and the
    config of the run that wrote it (None: none there, or unreadable), what is wrong with a completed run's files
    (``damage``; None: nothing, or no config there) and that completed run's evaluations (``eval_rows``)."""

    summary: dict[str, Any] | None = None
    config: dict[str, Any] | None = None
    damage: str | None = None
    eval_rows: list[dict[str, str]] = field(default_factory=list)


def _damage(summary: dict[str, Any], text: str, data: bytes, rows: list[dict[str, str]]) -> str | None:
    """What is wrong with a completed run's eval.csv (``text``, its bytes ``data``, its ``rows``) for its summary."""
    if not rows:
        return "eval.csv is empty"
    last = rows[-1]
    if not text.endswith("\n") or None in last or None in last.values():
        return "eval.csv is truncated (its last row is incomplete)"
    for n, row in enumerate(rows, start=1):
        if not all(math.isfinite(_number(row.get(key))) for key in ("timesteps", "mean_return")):
            return f"eval.csv is damaged (row {n} has no number for timesteps or mean_return)"
    final_step, final_return = int(float(last["timesteps"])), float(last["mean_return"])
    if final_step != summary.get("timesteps") or final_return != summary.get("final_mean_return"):
        return (
            f"eval.csv does not end with the final evaluation in summary.json "
            f"({final_step} vs {summary.get('timesteps')} env steps)"
        )
    recorded = summary.get("evaluations")
    if recorded is not None and recorded != len(rows):
        return f"eval.csv holds {len(rows)} evaluations, summary.json recorded {recorded}"
    digest = summary.get("eval_csv_sha256")
    if digest is not None and digest != hashlib.sha256(data).hexdigest():
        return "eval.csv is not the file the run wrote (its checksum differs from summary.json's)"
    return None


def _number(value: Any) -> float:
    """A CSV cell as a number; NaN when it is none."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan

"""A signal during a run or a sweep: checkpoint, record ``interrupted``, exit 128 + the signal (130 for SIGINT, 143
for SIGTERM, 129 for SIGHUP, ...).

Every signal that would end the process and that Python can catch (``CAUGHT``: SIGINT, SIGTERM, SIGHUP, SIGQUIT,
SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF, SIGXCPU, SIGPWR) takes the same path; one another library handles
already (a profiler's SIGPROF) or one that is ignored (nohup's SIGHUP) is left to it. SIGHUP (a closed terminal or
SSH session) also sends further output that went to the terminal to /dev/null: writing there would fail.

A signal is noted, not acted on where it lands (half a rollout cannot be checkpointed consistently): the run stops
at its next checkpoint boundary (after the update in progress), writes a checkpoint there with the usual
checkpoint callback and raises :class:`Interrupted`, which ``train.run`` records in summary.json. An evaluation
in progress, or a wait for another process's run lock, stops at its next env step / poll (the last checkpoint on
disk stays the one to resume from). Whatever the run is doing, it ends within ``stop_timeout_s`` seconds of the
first signal (``STOP_TIMEOUT_S`` by default; an env whose ``reset``/``step`` hangs never reaches a boundary): then,
as on a second signal, the summary is recorded ``interrupted`` and the process exits at once, 128 + the signal
(the last checkpoint on disk stays valid). In a joblib sweep the parent forwards
the signal to its workers, the jobs not started yet are skipped (stop file), and the sweep table is printed. Under
submitit, its requeue signal (SIGUSR2) is handled the same way, then handed to submitit, which requeues the job;
the requeued job resumes from the checkpoint.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any, NoReturn

STOP_FILE_ENV = "LIT_BENCH_STOP_FILE"  # created when a sweep is interrupted: its workers start no further job
SWEEP_PID_ENV = "LIT_BENCH_SWEEP_PID"  # the process that runs the sweep (joblib workers are other processes)
# the sweep whose joblib workers are forked by its forkserver (hydra_plugins.lit_bench_launchers.joblib_launcher)
FORKSERVER_OF_ENV = "LIT_BENCH_FORKSERVER_OF"
SWEEP_MAIN_ENV = "LIT_BENCH_SWEEP_MAIN"  # that sweep's main module, which its forkserver leaves to the workers to run

STOP_TIMEOUT_S = 30.0  # the longest a run takes to stop after the first signal (config: stop_timeout_s)

_pending: int | None = None
_previous: dict[int, Any] = {}  # handlers installed before ours (submitit's requeue handler is called after us)
_stop_timeout_s = STOP_TIMEOUT_S
_on_hard_stop: list[Callable[[str, str, str | None], None]] = []  # what a run records before the process exits at once
_timer: threading.Timer | None = None


class Interrupted(BaseException):
    """Raised at a checkpoint boundary after a signal (not an Exception: a run's failure handling must not eat it)."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.name = signal.Signals(signum).name
        super().__init__(self.name)


def pending() -> int | None:
    """The signal received in this process, if any."""
    return _pending


def exit_code() -> int | None:
    return None if _pending is None else 128 + _pending


def in_sweep_process() -> bool:
    """This process runs the multirun itself (and, with the basic launcher, its jobs)."""
    return os.environ.get(SWEEP_PID_ENV) == str(os.getpid())


def in_joblib_worker() -> bool:
    sweep_pid = os.environ.get(SWEEP_PID_ENV)
    return sweep_pid is not None and sweep_pid != str(os.getpid()) and "SUBMITIT_EXECUTOR" not in os.environ


def sweep_stopped() -> bool:
    stop_file = os.environ.get(STOP_FILE_ENV)
    return stop_file is not None and os.path.exists(stop_file)


def _workers() -> list[int]:
    """Pids of this process's joblib (loky) workers."""
    from joblib.externals.loky import reusable_executor

    executor = getattr(reusable_executor, "_executor", None)
    return list(getattr(executor, "_processes", None) or {})


def set_stop_timeout(seconds: float) -> None:
    """How long a run may take to stop after the first signal before the process exits anyway."""
    global _stop_timeout_s
    _stop_timeout_s = float(seconds)


@contextlib.contextmanager
def on_hard_stop(record: Callable[[str, str, str | None], None]) -> Iterator[None]:
    """While the block runs, ``record(status, why, signal name)`` is called (from any thread) just before a hard stop
    exits the process."""
    _on_hard_stop.append(record)
    try:
        yield
    finally:
        _on_hard_stop.remove(record)
        if not _on_hard_stop and _timer is not None:  # the run stopped by itself: this process lives on
            _timer.cancel()


def hard_stop(why: str, code: int, status: str = "interrupted", signum: int | None = None) -> NoReturn:
    """Record the run in progress as ``status`` (``why`` says what happened), kill this process's joblib workers and
    exit now with ``code``. Safe from a timer thread: the main thread may be stuck in an env."""
    print(f"\n{why}: stopping now; the last checkpoint on disk is kept", file=sys.stderr, flush=True)
    name = signal.Signals(signum).name if signum is not None else None
    for record in list(_on_hard_stop):
        with contextlib.suppress(Exception):  # exiting matters more than any one record
            record(status, why, name)
    for pid in _workers():
        _kill(pid, signal.SIGKILL)
    os._exit(code)


def _stop_timer(signum: int) -> None:
    """Exit ``_stop_timeout_s`` after the first signal if the run has not stopped by itself by then."""
    name = signal.Signals(signum).name
    why = f"{name}: not stopped within stop_timeout_s={_stop_timeout_s:g} s (an env or evaluation is not responding)"
    global _timer
    _timer = threading.Timer(_stop_timeout_s, hard_stop, (why, 128 + signum), {"signum": signum})
    _timer.daemon = True
    _timer.start()


def _handler(signum: int, frame: FrameType | None) -> None:
    global _pending
    name = signal.Signals(signum).name
    if signum == getattr(signal, "SIGHUP", None):
        _quiet_closed_terminal()
    worker = in_joblib_worker()
    if _pending is not None and not worker:
        hard_stop(f"{name} again", 128 + signum, signum=signum)
    if _pending is not None:
        return  # a worker gets a terminal's Ctrl-C twice (directly and forwarded): once is enough
    _pending = signum
    if _on_hard_stop:  # a run is in progress in this process: it stops in bounded time
        _stop_timer(signum)
    stop_file = os.environ.get(STOP_FILE_ENV)
    if stop_file and in_sweep_process():  # only the sweep stops the sweep (a requeued submitit job must run)
        open(stop_file, "a").close()
    if not worker:
        # a run (or a sweep's workers) stops at its next checkpoint; a process waiting for a run's lock, at once
        what = "at the next checkpoint" if _on_hard_stop or in_sweep_process() else "now"
        print(f"\n{name}: stopping {what} (send it again to stop at once)", file=sys.stderr, flush=True)
        for pid in _workers():
            if _catches(pid, signum):
                _kill(pid, signum)


def _catches(pid: int, signum: int) -> bool:
    """Whether a worker has a handler for ``signum``: one that runs a job has the harness's; an idle one (a pool
    larger than the sweep's jobs: a small sweep, seeds grouped into fewer jobs) would die of it and break the pool,
    killing the running jobs before they checkpoint. Read from Linux's /proc (elsewhere: every worker)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            caught = next(line for line in status if line.startswith("SigCgt:"))
    except (OSError, StopIteration):
        return True
    return bool(int(caught.split()[1], 16) >> (signum - 1) & 1)


def _parent_of(pid: int) -> int | None:
    """A process's parent pid (Linux's /proc; None once it has gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return int(stat.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _kill(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # a worker that has just exited
        os.kill(pid, signum)


# Signals whose default action ends the process and that a run can stop for in an orderly way (not the faults a
# process raises on itself, SIGSEGV and the like, nor SIGPIPE / SIGXFSZ, which Python ignores).
CAUGHT = tuple(
    getattr(signal, name)
    for name in (
        "SIGINT",
        "SIGTERM",
        "SIGHUP",
        "SIGQUIT",
        "SIGUSR1",
        "SIGUSR2",
        "SIGALRM",
        "SIGVTALRM",
        "SIGPROF",
        "SIGXCPU",
        "SIGPWR",
    )
    if hasattr(signal, name)
)
TAKEN_OVER = ("SIGINT", "SIGTERM", "SIGUSR2")  # replaced whatever their handler (Python's, Lightning's, submitit's)


def _signals() -> list[signal.Signals]:
    """The signals this process handles: ``TAKEN_OVER`` ones always (submitit's SIGUSR2 handler is called after
    ours, in ``finish``), the others while nothing else handles them."""
    return [s for s in CAUGHT if s.name in TAKEN_OVER or signal.getsignal(s) in (signal.SIG_DFL, _handler)]


def install() -> None:
    """Handle every signal of ``_signals()`` in this process; idempotent. Ignored signals stay so."""
    for signum in _signals():
        current = signal.getsignal(signum)
        if current in (_handler, signal.SIG_IGN):
            continue
        _previous[signum] = current
        signal.signal(signum, _handler)


def _quiet_closed_terminal() -> None:
    """After SIGHUP: output to the terminal that hung up goes to /dev/null (a write there fails with EIO, which would
    turn the orderly stop into a traceback); output to files and pipes is kept."""
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        for fd in (1, 2):
            if os.isatty(fd):
                os.dup2(devnull, fd)
        os.close(devnull)


def reinstall() -> None:
    """Lightning installs its own SIGTERM handler at fit start (it stops without a checkpoint): take it back. Only
    ``TAKEN_OVER`` signals: a handler installed since for another one is its owner's (the ``step_timeout_s``
    watchdog's SIGALRM, Lightning's SLURM requeue on SIGUSR1)."""
    for signum in _previous:
        if signal.Signals(signum).name in TAKEN_OVER:
            signal.signal(signum, _handler)


PARENT_POLL_S = 0.5  # how often a joblib worker looks whether its sweep's process is still there
_watching = False
_orphaned = False  # this joblib worker's sweep process is gone
_in_job = False


@contextlib.contextmanager
def job() -> Iterator[None]:
    """One job of a multirun runs in this process. A joblib worker whose sweep is gone exits when the job is over
    (there is no one to return its result to)."""
    global _in_job
    _in_job = True
    try:
        yield
    finally:
        _in_job = False
        if _orphaned:
            os._exit(128 + (_pending or signal.SIGHUP))


def watch_sweep() -> None:
    """In a joblib worker: never outlive the sweep. When the sweep's process is gone (killed, or ended without
    stopping its workers) the worker is reparented; it then stops as on SIGHUP: a run in progress checkpoints and is
    recorded ``interrupted`` (resumable, within ``stop_timeout_s``), and the worker exits. A thread that polls the
    parent pid, not prctl(PR_SET_PDEATHSIG): that signal follows the thread that started the worker (a thread of
    loky's executor), not the sweep's process, and Linux only. A worker forked by the sweep's forkserver (Linux)
    watches the forkserver's parent: the forkserver outlives the sweep while any worker does (each holds the pipe
    whose end tells it to exit), but it is handed to another parent when the sweep's process ends."""
    global _watching
    sweep_pid = os.environ.get(SWEEP_PID_ENV)
    parent = os.getppid()
    forked = str(parent) != sweep_pid and os.environ.get(FORKSERVER_OF_ENV) == sweep_pid
    # only a child of the sweep's process or of its forkserver (a loky worker): a Ray worker inherits the variable
    # from a raylet
    if _watching or sweep_pid is None or not in_joblib_worker() or (str(parent) != sweep_pid and not forked):
        return
    _watching = True

    def sweep_alive() -> bool:
        return os.getppid() == parent and (not forked or _parent_of(parent) == int(str(sweep_pid)))

    def watch() -> None:
        global _orphaned
        while sweep_alive():
            time.sleep(PARENT_POLL_S)
        _orphaned = True
        _handler(signal.SIGHUP, None)  # (called, not sent: under nohup SIGHUP is ignored)
        if not _in_job:
            os._exit(128 + signal.SIGHUP)

    threading.Thread(target=watch, name="lit_bench-sweep-watch", daemon=True).start()


def start_sweep(stop_file: str) -> None:
    """In the process that runs a multirun: make its workers able to tell that the sweep was stopped."""
    os.environ[SWEEP_PID_ENV] = str(os.getpid())
    os.environ[STOP_FILE_ENV] = stop_file
    install()


def _quiet_exit(signum: int, frame: FrameType | None) -> None:
    sys.exit(128 + signum)


def quiet_while_importing() -> None:
    """Until ``install`` takes over, Ctrl-C exits 130 quietly (no traceback from inside an import): ``run.py`` calls
    this before it imports the rest."""
    signal.signal(signal.SIGINT, _quiet_exit)


def finish() -> None:
    """After a run in a process that got a signal: hand it to the previous handler (submitit requeues the job) and
    exit 128 + the signal; a joblib worker returns instead (its parent reports the sweep and exits)."""
    if _pending is None:
        return
    previous = _previous.get(_pending)
    if callable(previous) and previous not in (signal.default_int_handler, _quiet_exit):
        previous(_pending, None)
    if not in_joblib_worker():
        exit_now(128 + _pending)


def exit_now(code: int) -> NoReturn:
    """Exit once the run is recorded: logs and output flushed, without the interpreter's teardown (its final garbage
    collection of torch's, Lightning's and SB3's objects took seconds, 10 s on a busy machine, after the run had
    already stopped)."""
    import logging

    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def stop_if_pending() -> None:
    if _pending is not None:
        raise Interrupted(_pending)

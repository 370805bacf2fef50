"""#36: every signal, every process. Any terminating signal the harness can catch stops a run as SIGTERM does
(checkpoint, honest status, 128 + n); a joblib sweep's workers never outlive their parent; a wait for a lock held by
a stopped process says so and still stops within the poll (real subprocesses, real signals)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lit_bench.control import signals
from tests.lit_bench.helpers import CHILD_ENV, REPO
from tests.lit_bench.test_signals_stop import LONG, _interrupted, _start, _wait_for_checkpoint, joblib_sweep

pytestmark = pytest.mark.harness


@pytest.mark.parametrize("name", ["SIGHUP", "SIGUSR1", "SIGALRM"])
def test_any_terminating_signal_stops_a_run_at_a_checkpoint(name: str, tmp_path: Path) -> None:
    signum = signal.Signals[name]
    args = [*LONG, "budget=20000", f"out_dir={tmp_path}", "sweep=sig"]
    process = _start(args)
    [run_dir] = _wait_for_checkpoint(process, tmp_path / "sig" / "ppo" / "CartPole" / "seed_0")
    os.kill(process.pid, signum)
    output, _ = process.communicate(timeout=120)
    assert process.returncode == 128 + signum, output
    assert "Traceback" not in output and f"stopped by {name} at" in output
    assert _interrupted(run_dir, name) < 20000  # checkpointed at a boundary, resumable


def test_every_catchable_terminating_signal_is_handled() -> None:
    names = {s.name for s in signals.CAUGHT}
    assert {"SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGXCPU"} <= names
    assert not names & {"SIGKILL", "SIGSTOP", "SIGSEGV", "SIGPIPE", "SIGCHLD"}


class _Exited(Exception):
    pass


def test_a_signalled_run_exits_without_the_interpreter_teardown(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once its summary is recorded the process exits at once (os._exit after flushing): the teardown's garbage
    collection of torch's objects took 3-10 s after a lock wait had already stopped."""

    def exit_now(code: int) -> None:
        raise _Exited(code)

    monkeypatch.setattr(os, "_exit", exit_now)
    monkeypatch.setattr(signals, "_pending", int(signal.SIGINT))
    monkeypatch.setitem(signals._previous, signal.SIGINT, signals._quiet_exit)
    monkeypatch.delenv(signals.SWEEP_PID_ENV, raising=False)
    with pytest.raises(_Exited) as exited:
        signals.finish()
    assert exited.value.args == (130,)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _wait_group_gone(pgid: int, timeout: float = 120) -> float:
    """Seconds until no process of the group is left (SIGKILLs the group and fails after ``timeout``)."""
    start = time.monotonic()
    while _group_alive(pgid):
        if time.monotonic() - start > timeout:
            os.killpg(pgid, signal.SIGKILL)
            raise AssertionError(f"processes of the sweep still alive {timeout} s after it ended")
        time.sleep(0.1)
    return time.monotonic() - start


def test_sighup_to_a_joblib_sweep_parent_stops_its_workers(tmp_path: Path) -> None:
    """A closed terminal or SSH session: the parent forwards SIGHUP, prints its table, exits 129, nothing lingers."""
    process, root = joblib_sweep(tmp_path)
    os.kill(process.pid, signal.SIGHUP)
    output, _ = process.communicate(timeout=180)
    assert process.returncode == 129, output
    assert "Traceback" not in output and "2 interrupted (2 runs)" in output and "sweep stopped by SIGHUP" in output
    for seed in (0, 1):
        _interrupted(root / f"seed_{seed}", "SIGHUP")
    assert not (root / "seed_2" / "summary.json").exists()
    _wait_group_gone(process.pid)


def test_a_killed_sweep_parent_leaves_no_worker_behind(tmp_path: Path) -> None:
    """The parent dies without a word (SIGKILL): each worker sees it is gone, checkpoints its run, records it
    interrupted (resumable) and exits; loky's idle workers do not wait out their 300 s timeout."""
    process, root = joblib_sweep(tmp_path)
    process.kill()
    process.communicate(timeout=60)
    _wait_group_gone(process.pid)
    for seed in (0, 1):
        _interrupted(root / f"seed_{seed}", "SIGHUP")
        assert (
            "rerun the same command to resume"
            in json.loads((root / f"seed_{seed}" / "summary.json").read_text())["error"]
        )


def test_a_lock_held_by_a_stopped_process_is_named_and_sigint_stops_the_wait(tmp_path: Path) -> None:
    args = [*LONG, "budget=20000", f"out_dir={tmp_path}", "sweep=lk"]
    holder = _start(args)
    [run_dir] = _wait_for_checkpoint(holder, tmp_path / "lk" / "ppo" / "CartPole" / "seed_0", step=64)
    os.kill(holder.pid, signal.SIGSTOP)
    try:
        log = tmp_path / "log"
        waiter = subprocess.Popen(
            [sys.executable, "run.py", *args],
            cwd=REPO,
            env=CHILD_ENV,
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 120
        while "is stopped (SIGSTOP" not in log.read_text():
            assert waiter.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        output = log.read_text()
        assert f"pid {holder.pid} on " in output and "it is not progressing" in output, output
        before = json.loads((run_dir / "summary.json").read_text())
        os.kill(waiter.pid, signal.SIGINT)
        waiter.wait(timeout=60)
        output = log.read_text()
        assert waiter.returncode == 130, output
        assert "Traceback" not in output and "while waiting for the run's lock; nothing was changed" in output
        assert "stopping at the next checkpoint" not in output  # it holds no run: it stops within the lock's poll
        assert json.loads((run_dir / "summary.json").read_text()) == before
    finally:
        os.kill(holder.pid, signal.SIGCONT)
        holder.kill()
        holder.communicate()


def test_a_worker_that_is_no_child_of_the_sweep_does_not_watch_it() -> None:
    """A Ray worker inherits the sweep's pid from its raylet but is not the sweep's child: it must not take the
    other parent for a dead sweep (it would stop every run it starts)."""
    code = (
        "import os, time; from lit_bench.control import signals; signals.watch_sweep(); "
        "time.sleep(3 * signals.PARENT_POLL_S); print('alive')"
    )
    env = {**CHILD_ENV, signals.SWEEP_PID_ENV: str(os.getpid() + 10**6)}  # a sweep that is not its parent
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout == "alive\n", (result.returncode, result.stdout, result.stderr)

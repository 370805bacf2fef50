"""``step_timeout_s``: a per-run watchdog that fails a run whose env stops responding, in one line.

Every ``reset`` and ``step`` of the run's envs (training and evaluation, inside each env copy) is timed by one
watchdog thread. One that has not returned after ``step_timeout_s`` seconds is interrupted: ``EnvTimeout`` is raised
in the main thread (a signal, so that it also breaks a ``sleep`` or a blocking read), and the run is recorded
``failed`` as any failed run (a sweep's other runs carry on). An env stuck where Python cannot interrupt it (C code
holding the GIL aside) gets ``GRACE_S`` more seconds; then the run is recorded failed and the process exits 1.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import gymnasium as gym

from lit_bench.control import signals

GRACE_S = 5.0  # after the timeout, how long the main thread has to unwind before the process exits


class EnvTimeout(Exception):
    """An env's ``reset`` or ``step`` did not return within ``step_timeout_s``."""


class StepWatchdog:
    """Times env calls (``watch``) and interrupts one that runs past ``timeout_s``; ``close`` stops the thread."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = float(timeout_s)
        self._since: float | None = None
        self._what = ""
        self._calls = 0
        self._message: str | None = None
        self._stop = threading.Event()
        self._main = threading.main_thread().ident
        self._previous = signal.signal(signal.SIGALRM, self._raise)
        self._thread = threading.Thread(target=self._watch, name="lit_bench-step-watchdog", daemon=True)
        self._thread.start()

    @contextlib.contextmanager
    def watch(self, what: str) -> Iterator[None]:
        self._since, self._what = time.monotonic(), what
        try:
            yield
        finally:
            self._since = None
            self._calls += 1

    def wrap(self, env: gym.Env) -> gym.Env:
        """``env`` with its ``reset`` and ``step`` timed by this watchdog (``make_envs``' ``outer``)."""
        return Watched(env, self)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        signal.signal(signal.SIGALRM, self._previous)

    def __enter__(self) -> StepWatchdog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _raise(self, signum: int, frame: Any) -> None:
        if self._message is not None:
            raise EnvTimeout(self._message)

    def _watch(self) -> None:
        poll = min(1.0, self.timeout_s / 4)
        while not self._stop.wait(poll):
            since = self._since
            if since is None or time.monotonic() - since < self.timeout_s:
                continue
            calls = self._calls
            self._message = (
                f"step_timeout_s={self.timeout_s:g}: the env's {self._what} did not return within "
                f"{self.timeout_s:g} s (the env stopped responding)"
            )
            assert self._main is not None
            signal.pthread_kill(self._main, signal.SIGALRM)
            if not self._stop.wait(GRACE_S) and self._calls == calls and self._since is not None:
                signals.hard_stop(self._message, 1, status="failed")
            return


class Watched(gym.Wrapper):
    """Times this env's ``reset`` and ``step`` with a ``StepWatchdog`` (the outermost wrapper of each env copy)."""

    def __init__(self, env: gym.Env, watchdog: StepWatchdog) -> None:
        super().__init__(env)
        self.watchdog = watchdog

    def reset(self, **kwargs: Any) -> Any:
        with self.watchdog.watch("reset"):
            return self.env.reset(**kwargs)

    def step(self, action: Any) -> Any:
        with self.watchdog.watch("step"):
            return self.env.step(action)

"""The live console of a run: where it is, how fast it goes, how it scores, and when it will be done.

One status line -- env steps / budget, env steps per second, the last evaluation's mean return and when the next
comes, ETA -- shown three ways (``console.progress``):

- ``bar``: rewritten in place on a terminal (a single run);
- ``lines``: one line per evaluation, plus a heartbeat line when nothing was printed for ``console.heartbeat_s``
  seconds: the form for logs (submitit, Ray, redirected output) and for sweeps whose jobs share a terminal (joblib),
  where bars would interleave;
- ``off``: nothing but the final line.

``auto`` (the default) is ``bar`` for a single run on a terminal and ``lines`` otherwise; with Lightning's own progress
bar on (``trainer.enable_progress_bar=true``, which shows the evaluation returns too) it stays quiet on a terminal.
Everything goes to stderr, so stdout keeps the one result line per run.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from omegaconf import DictConfig

from lit_bench.config.budget import next_boundary

BAR_REFRESH_S = 0.5


def choose_mode(requested: str, *, terminal: bool, multirun: bool, lightning_bar: bool) -> str:
    """The mode ``auto`` stands for here (other modes are what they say; ``requested`` was checked with the run's
    config: ``lit_bench.config.checks.check_console``)."""
    if requested != "auto":
        return requested
    if terminal and lightning_bar and not multirun:
        return "off"
    return "bar" if terminal and not multirun else "lines"


def console_mode(cfg: DictConfig) -> str:
    """``console.progress`` resolved for this process (``auto``: a bar on a terminal, lines in logs and sweeps)."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    try:
        multirun = HydraConfig.get().mode == RunMode.MULTIRUN
    except ValueError:  # run(cfg) called from Python
        multirun = False
    console = cfg.get("console") or {}
    return choose_mode(
        str(console.get("progress", "auto")),
        terminal=sys.stderr.isatty(),
        multirun=multirun,
        lightning_bar=str(cfg.backend) == "lit" and bool(cfg.trainer.get("enable_progress_bar")),
    )


def _duration(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}"


class ConsoleProgress:
    """Status of one run for the console (see the module docstring); fed by the periodic evaluation callback.

    :param name: how lines name the run (``ppo CartPole seed 0``)
    :param budget: the env-step budget
    :param every: env steps between evaluations
    :param mode: ``bar``, ``lines`` or ``off``
    :param heartbeat_s: seconds without output after which ``lines`` prints the status anyway
    :param stream: where to write (stderr)
    """

    def __init__(
        self, name: str, budget: int, every: int, mode: str, heartbeat_s: float = 60.0, stream: TextIO | None = None
    ) -> None:
        self.name, self.budget, self.every, self.mode = name, budget, every, mode
        self.heartbeat_s = heartbeat_s
        self.stream = stream or sys.stderr
        self.started = time.monotonic()
        self.steps_at_start: int | None = None
        self.steps = 0
        self.last: dict[str, Any] | None = None
        self._printed_at = self.started
        self._next_check = self.started

    def status(self) -> str:
        steps, elapsed = self.steps, time.monotonic() - self.started
        rate = (steps - (self.steps_at_start or 0)) / elapsed if elapsed > 0 else 0.0
        parts = [
            f"{steps:,}/{self.budget:,} env steps ({100 * steps / max(self.budget, 1):.0f}%)",
            f"{rate:,.0f} steps/s",
        ]
        if self.last is not None:
            parts.append(
                f"eval {self.last['mean_return']:.1f} +/- {self.last['std_return']:.1f} "
                f"at {int(self.last['timesteps']):,}"
            )
        next_eval = next_boundary(steps, self.every)
        if next_eval <= self.budget:
            parts.append(f"next eval at {next_eval:,}")
        parts.append(f"ETA {_duration((self.budget - steps) / rate) if rate > 0 else '?'}")
        return f"[{self.name}] " + " | ".join(parts)

    def start(self, steps: int) -> None:
        self.steps_at_start = self.steps = steps
        if self.mode == "lines":
            first = min(next_boundary(steps, self.every), self.budget)
            resumed = f" (resumed at {steps:,})" if steps else ""
            # the grid's points up to the budget, and the final evaluation at the end when it is off the grid
            count = self.budget // self.every - steps // self.every + (1 if self.budget % self.every else 0)
            evaluations = f"{count} evaluation{'s' if count != 1 else ''}"
            self._write(
                f"[{self.name}] training to {self.budget:,} env steps{resumed}; {evaluations}, every "
                f"{self.every:,} env steps, the first at {first:,}\n"
            )

    def step(self, steps: int) -> None:
        """After an env step: refresh the bar, or print a heartbeat (cheap when neither is due)."""
        self.steps = steps
        now = time.monotonic()
        if now < self._next_check:
            return
        if self.mode == "bar":
            self._write(f"\r{self.status()}\x1b[K")
            self._next_check = now + BAR_REFRESH_S
        elif self.mode == "lines":
            if now - self._printed_at >= self.heartbeat_s:
                self._write(f"{self.status()} (still training)\n")
            self._next_check = self._printed_at + self.heartbeat_s

    def evaluated(self, row: dict[str, Any]) -> None:
        self.last, self.steps = row, max(self.steps, int(row["timesteps"]))
        if self.mode == "lines":
            self._write(f"{self.status()}\n")
        elif self.mode == "bar":
            self._write(f"\r{self.status()}\x1b[K")

    def close(self) -> None:
        if self.mode == "bar":
            self._write("\n")

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()
        self._printed_at = time.monotonic()
        self._next_check = self._printed_at + (BAR_REFRESH_S if self.mode == "bar" else self.heartbeat_s)

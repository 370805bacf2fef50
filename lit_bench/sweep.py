"""Hydra callback that ends a multirun with a table of its runs' statuses, and a non-zero exit if any failed."""

from __future__ import annotations

import json
import os
import signal
import sys
import uuid
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from lit_bench import signals
from lit_bench.train import INVOCATION_ENV

MAX_ROWS = 40  # one screen; beyond it only the failed runs are listed


def collect(sweep_dir: Path, invocation: str | None) -> list[dict[str, Any]]:
    summaries = []
    for path in sorted(sweep_dir.glob("*/*/seed_*/summary.json")):
        try:
            summary = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if invocation is None or summary.get("invocation") == invocation:
            summaries.append(summary)
    return summaries


def table(summaries: list[dict[str, Any]]) -> str:
    rows = summaries if len(summaries) <= MAX_ROWS else [s for s in summaries if s.get("status") != "completed"]
    lines = [f"{'algo':<12} {'env':<22} {'seed':>4} {'backend':<7} {'status':<11} {'steps':>9} {'final':>9} "
             f"{'wall_s':>8}  error"]
    for s in rows:
        final = s.get("final_mean_return")
        lines.append(
            f"{s.get('algo', '?'):<12} {s.get('env', '?'):<22} {s.get('seed', '?'):>4} {s.get('backend', '?'):<7} "
            f"{s.get('status', '?'):<11} {s.get('timesteps') or '':>9} {'' if final is None else f'{final:.1f}':>9} "
            f"{s.get('wall_time_s') or '':>8}  {(s.get('error') or '')[:100]}"
        )
    counts: dict[str, int] = {}
    for s in summaries:
        counts[s.get("status", "?")] = counts.get(s.get("status", "?"), 0) + 1
    lines.append(", ".join(f"{n} {status}" for status, n in sorted(counts.items())) + f" ({len(summaries)} runs)")
    return "\n".join(lines)


class SweepReport(Callback):
    """Tags this multirun's jobs (env var inherited by launcher workers) and reports them when all have ended."""

    def __init__(self) -> None:
        self.invocation: str | None = None

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        self.invocation = uuid.uuid4().hex[:12]
        os.environ[INVOCATION_ENV] = self.invocation

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        report(Path(str(config.hydra.sweep.dir)), self.invocation)


def report(sweep_dir: Path, invocation: str | None) -> None:
    """Print the table of this multirun's runs; exit non-zero if any did not complete (128 + signal if stopped)."""
    summaries = collect(sweep_dir, invocation)
    print(f"\nsweep {sweep_dir}:\n{table(summaries)}", flush=True)
    stopped = signals.pending()
    if stopped is not None:
        print(f"sweep stopped by {signal.Signals(stopped).name}: runs not listed did not start; "
              f"rerun the same command to resume", flush=True)
        sys.exit(128 + stopped)
    if any(s.get("status") != "completed" for s in summaries):
        sys.exit(1)

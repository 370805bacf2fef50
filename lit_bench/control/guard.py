"""Hydra callback run before Hydra creates any directory: ``out_dir`` must be writable and ``sweep`` a relative path
below it, each value of a swept one too (else one line, exit 1), then this process takes over SIGINT / SIGTERM
(lit_bench.control.signals)."""

from __future__ import annotations

import os
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from lit_bench.config.checks import ConfigError, check_out_dir, check_sweep
from lit_bench.control import signals
from lit_bench.control.sweep import swept


def _check_out_dir(config: DictConfig) -> None:
    """Every ``out_dir`` and ``sweep`` the run or the multirun's jobs use (each value of ``-m sweep=a,b``): checked
    here, before Hydra makes the sweep's or any job's directory."""
    try:
        for out_dir in swept(config, "out_dir"):
            check_out_dir(out_dir)
            for sweep in swept(config, "sweep"):
                check_sweep(sweep, out_dir)
    except ConfigError as error:
        print(f"Error: {error}", file=sys.stderr, flush=True)
        sys.exit(1)


class RunGuard(Callback):
    def __init__(self) -> None:
        self.stop_file = Path(tempfile.gettempdir()) / f"lit_bench-stop-{os.getpid()}-{uuid.uuid4().hex[:8]}"

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        _check_out_dir(config)
        signals.install()

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        _check_out_dir(config)
        signals.start_sweep(str(self.stop_file))

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        self.stop_file.unlink(missing_ok=True)

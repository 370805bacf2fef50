"""Imported by run.py before the heavy modules: until lit_bench.control.signals takes over, Ctrl-C exits 130 quietly
(no traceback from inside an import)."""

import signal
import sys
from types import FrameType


def _quiet_exit(signum: int, frame: FrameType | None) -> None:
    sys.exit(128 + signum)


signal.signal(signal.SIGINT, _quiet_exit)

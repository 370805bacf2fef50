"""CPU time of every process a benchmarked command starts, including those that outlive it.

``resource.RUSAGE_CHILDREN`` counts the descendants that have ended and been waited for. A joblib sweep's workers are
children of Python's forkserver (``hydra_plugins.lit_bench_launchers.joblib_launcher``), which the sweep's command
does not wait for: it ends after the command, by itself. ``adopt_descendants`` makes this process the one they are
handed to when their parent ends (Linux's child subreaper), and ``reap_descendants`` waits for them, so that their
CPU time reaches ``RUSAGE_CHILDREN`` too. Call ``adopt_descendants`` once before starting commands.
"""

from __future__ import annotations

import ctypes
import os
import resource
import sys

_PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>


def adopt_descendants() -> None:
    """Descendants whose parent ends are handed to this process (Linux); elsewhere one line and exit 2."""
    libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
    if libc is None or libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise SystemExit("CPU time of a sweep's forked workers: needs Linux's child subreaper (prctl)")


def reap_descendants() -> None:
    """Wait for every child, the adopted ones included, until none is left."""
    while True:
        try:
            os.wait()
        except ChildProcessError:
            return


def cpu_of_descendants() -> float:
    """CPU seconds of the ended, waited-for descendants (call ``reap_descendants`` first)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime

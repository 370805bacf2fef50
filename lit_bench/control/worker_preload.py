"""What the forkserver of a sweep's joblib workers imports (``hydra_plugins.lit_bench_launchers.joblib_launcher``): a
job's modules, with Python's cyclic garbage collector paused during the imports and their objects frozen after.

That import is a sweep's critical path (its first job starts when it ends), and the collector, traversing the growing
heap of module objects again and again, was ~20% of it (measured here: 2.9 s -> 2.4 s). Frozen (``gc.freeze``), the
imported objects are left out of the forked workers' collections and their memory pages stay shared, as Python's
documentation advises for a process that forks without exec. Garbage made after the imports is collected as usual;
the cycles the imports themselves left (~13k of ~720k objects, measured) stay frozen with them, shared by the
workers, rather than cost a full collection on the critical path.
"""

from __future__ import annotations

import gc
import importlib
import os

from lit_bench.control.signals import SWEEP_MAIN_ENV

JOB_MODULES = ("lit_bench.cli.bench", "lit_bench.run.train", "lit_bench.run.group", "lit_bench.run.batched")


def import_job_modules(skip: str | None) -> None:
    """Import :data:`JOB_MODULES` but ``skip`` without the collector, then freeze what is alive. ``skip`` is the
    sweep's main module (``SWEEP_MAIN_ENV``) when it is one of them: a forked worker runs it again as ``__mp_main__``
    (multiprocessing's preparation of a child), and runpy warns in each worker that it was imported already."""
    gc.disable()
    try:
        for name in JOB_MODULES:
            if name != skip:
                importlib.import_module(name)
    finally:
        gc.enable()
    gc.freeze()


import_job_modules(os.environ.get(SWEEP_MAIN_ENV))

"""Only for ``lit_bench.run.batched``, which imports ``console_mode`` from here: it is ``lit_bench.run.console``'s.
The run's checks (``prepare``, ``warn_budget``) are in ``lit_bench.run.train``. Remove this module once
``run/batched.py`` imports ``console_mode`` from ``lit_bench.run.console``."""

from lit_bench.run.console import console_mode

__all__ = ["console_mode"]

"""The command-line tools: ``lit-bench`` (runs and sweeps, ``bench``) and ``lit-bench <tool>`` (report, regress,
enjoy, coverage, quickstart, export, migrate; each also ``python -m lit_bench.cli.<tool>``).

Nothing outside this package imports them.
"""

"""The parts of ``python -m lit_bench.cli.regress`` (the command line, running a suite through the harness and the
check / record flows stay in ``cli.regress``, with the public names): ``suites`` (a suite's config and options),
``verdicts`` (scores, thresholds, parity and their tables).
"""

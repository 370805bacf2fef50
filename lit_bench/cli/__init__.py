"""The command-line tools (``python -m lit_bench.<tool>``): report, regress, enjoy, coverage, quickstart.

Nothing outside this package imports them.
"""

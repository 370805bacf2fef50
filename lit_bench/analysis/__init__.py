"""Turn sweeps into tables and figures: load -> aggregate -> plot; ``python -m lit_bench.report`` is the CLI."""

"""``python -m lit_bench ...``: the ``lit-bench`` command."""

from lit_bench.cli.bench import main

main()

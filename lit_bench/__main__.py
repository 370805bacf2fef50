"""``python -m lit_bench ...``: the ``lit-bench`` command."""

from lit_bench.bench import main

main()

"""``python run.py ...``: the ``lit-bench`` command from a clone (``lit_bench.cli.bench``), e.g.
``python run.py -m algo=ppo,a2c env=CartPole seed=0,1,2``."""

import lit_bench.control.startup  # noqa: F401, I001  (first: a quiet Ctrl-C while the rest imports)

from lit_bench.cli.bench import main

if __name__ == "__main__":
    main()

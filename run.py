"""``python run.py ...``: the ``lit-bench`` command from a clone (``lit_bench.cli.bench``), e.g.
``python run.py -m algo=ppo,a2c env=CartPole seed=0,1,2``."""

from lit_bench.control import signals

signals.quiet_while_importing()  # first: a quiet Ctrl-C while the rest imports

from lit_bench.cli.bench import main  # noqa: E402

if __name__ == "__main__":
    main()

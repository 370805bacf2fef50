"""Benchmark entry point: ``python run.py [algo=ppo env=CartPole seed=0 budget=...]``, or ``-m`` to sweep.

Groups and options live in conf/ (see the README); each run writes results/runs/<sweep>/<algo>/<env>/seed_<n>/.
"""

import sys

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from lit_bench.train import describe, run


@hydra.main(config_path="conf", config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> None:
    summary = run(cfg)
    print(describe(summary), flush=True)
    if summary["status"] == "failed" and HydraConfig.get().mode == RunMode.RUN:
        sys.exit(1)  # a multirun carries on; its SweepReport exits non-zero at the end


if __name__ == "__main__":
    main()

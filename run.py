"""Benchmark entry point: ``python run.py [algo=ppo env=CartPole seed=0 budget=...]``, or ``-m`` to sweep.

Groups and options live in conf/ (see the README); each run writes its own directory under results/runs/<sweep>/
(layout: lit_bench.identity) and returns its objective, so Hydra sweepers such as Optuna can use it.
"""

import hydra
from omegaconf import DictConfig

from lit_bench.sweep import job_result
from lit_bench.train import describe, run


@hydra.main(config_path="conf", config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> float:
    summary = run(cfg)
    print(describe(summary), flush=True)
    return job_result(cfg, summary)  # a failed run: exit 1 (single run) or a failed job/trial (multirun)


if __name__ == "__main__":
    main()

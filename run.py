"""Benchmark entry point: ``python run.py [algo=ppo env=CartPole seed=0 budget=...]``, or ``-m`` to sweep.

Groups and options live in conf/ (see the README); each run writes its own directory under results/runs/<sweep>/
(layout: lit_bench.identity) and returns its objective, so Hydra sweepers such as Optuna can use it.
"""

import lit_bench.startup  # noqa: F401, I001  (first: a quiet Ctrl-C while the rest imports)

import os
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from lit_bench import signals
from lit_bench.ranks import rank_exit_code
from lit_bench.sweep import job_result, record_job, report
from lit_bench.train import INVOCATION_ENV, describe, run


@hydra.main(config_path="conf", config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> float | None:
    if HydraConfig.get().mode == RunMode.MULTIRUN and signals.sweep_stopped():
        return None  # a joblib worker after the sweep was interrupted: start no new run
    signals.install()
    summary = run(cfg)
    if "rank" in summary:  # a further process of a multi-process run: rank 0 reports the run
        sys.exit(rank_exit_code(summary))
    print(describe(summary), flush=True)
    if signals.pending() is None:
        return job_result(cfg, summary)  # a failed run: exit 1 (single run) or a failed job/trial (multirun)
    record_job(cfg, summary)  # interrupted: in the sweep table
    if signals.in_sweep_process():
        report(Path(str(cfg.out_dir)) / str(cfg.sweep), os.environ.get(INVOCATION_ENV))  # sequential sweep: stop
    signals.finish()  # exits 130 / 143 (a joblib worker returns: its parent reports)
    return None


if __name__ == "__main__":
    main()

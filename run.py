"""Benchmark entry point: ``python run.py [algo=ppo env=CartPole seed=0 budget=...]``, or ``-m`` to sweep.

Groups and options live in conf/ (see the README); each run writes its own directory under results/runs/<sweep>/
(layout: lit_bench.config.identity) and returns its objective, so Hydra sweepers such as Optuna can use it.
"""

import lit_bench.control.startup  # noqa: F401, I001  (first: a quiet Ctrl-C while the rest imports)

import os
import sys

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from lit_bench.control import signals
from lit_bench.config.identity import sweep_path
from lit_bench.control.sweep import INVOCATION_ENV, job_result, record_job, report


@hydra.main(config_path="conf", config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> float | None:
    if HydraConfig.get().mode == RunMode.MULTIRUN and signals.sweep_stopped():
        return None  # a joblib worker after the sweep was interrupted: start no new run
    signals.install()
    # Imported here, not above: a joblib sweep's parent process only launches and reports, and never pays for
    # Lightning, SB3 and torch; its workers import them once each (loky reuses them for the following jobs).
    from lit_bench.run.train import describe, run

    summary = run(cfg)
    if "rank" in summary:  # a further process of a multi-process run: rank 0 reports the run
        from lit_bench.run.ranks import rank_exit_code

        sys.exit(rank_exit_code(summary))
    print(describe(summary), flush=True)
    if signals.pending() is None:
        return job_result(cfg, summary)  # a failed run: exit 1 (single run) or a failed job/trial (multirun)
    record_job(cfg, summary)  # interrupted: in the sweep table
    if signals.in_sweep_process():
        report(sweep_path(cfg), os.environ.get(INVOCATION_ENV))  # sequential sweep: stop
    signals.finish()  # exits 130 / 143 (a joblib worker returns: its parent reports)
    return None


if __name__ == "__main__":
    main()

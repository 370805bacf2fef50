"""Benchmark entry point: ``python run.py [algo=ppo env=CartPole seed=0 budget=...]``, or ``-m`` to sweep.

Groups and options live in conf/ (see the README); each run writes results/runs/<sweep>/<algo>/<env>/seed_<n>/.
"""

import os
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

import lit_bench.startup  # noqa: F401  (first: a quiet Ctrl-C while the rest imports)
from lit_bench import signals
from lit_bench.sweep import report
from lit_bench.train import INVOCATION_ENV, describe, run


@hydra.main(config_path="conf", config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> None:
    multirun = HydraConfig.get().mode == RunMode.MULTIRUN
    if multirun and signals.sweep_stopped():
        return  # a joblib worker after the sweep was interrupted: start no new run
    signals.install()
    summary = run(cfg)
    print(describe(summary), flush=True)
    if signals.pending() is not None and signals.in_sweep_process():
        report(Path(HydraConfig.get().sweep.dir), os.environ.get(INVOCATION_ENV))  # sequential sweep: stop here
    signals.finish()  # exits 130 / 143 after a signal (a joblib worker returns: its parent reports)
    if summary["status"] == "failed" and not multirun:
        sys.exit(1)  # a multirun carries on; its SweepReport exits non-zero at the end


if __name__ == "__main__":
    main()

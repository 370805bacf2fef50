"""Hydra benchmarking harness for lit_sb3 (and SB3 as a reference backend)."""

from omegaconf import OmegaConf

from lit_bench.identity import algo_dir, run_path, run_subdir, sweep_path

# The run-directory layout, defined once in lit_bench.identity, for conf/config.yaml: Hydra's directories and the
# harness's are the same by construction.
OmegaConf.register_new_resolver("algo_dir", algo_dir, replace=True)
OmegaConf.register_new_resolver("run_path", lambda _root_: str(run_path(_root_)), replace=True)
OmegaConf.register_new_resolver("sweep_path", lambda _root_: str(sweep_path(_root_)), replace=True)
OmegaConf.register_new_resolver("run_subdir", run_subdir, replace=True)

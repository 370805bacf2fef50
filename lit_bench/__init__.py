"""Hydra benchmarking harness for lit_sb3 (and SB3 as a reference backend).

Layers, bottom up (``tests/lit_bench/test_layers.py`` checks the imports): ``store`` (the run directory on disk),
``config`` (what a run is), ``control`` (sweeps, signals, processes), ``run`` (one run, start to finish),
``analysis`` (run directories -> tables and figures; imports store and config only), ``cli`` (the command-line
tools; nothing imports them). ``noise`` and ``wrappers`` are what configs name by module path (``_target_``,
``env.package``): a config id hashes that path, so these two stay where they are (moving one renames every run
directory of a config that names it).
"""

from lit_bench.config.hydra_versions import register_resolver
from lit_bench.config.identity import algo_dir, run_path, run_subdir, sweep_path

# The run-directory layout, defined once in lit_bench.config.identity, for conf/config.yaml: Hydra's directories and
# the harness's are the same by construction. (register_resolver: OmegaConf 2.4's API, 2.3's on 2.3.)
register_resolver("algo_dir", algo_dir)
register_resolver("run_path", lambda _root_: str(run_path(_root_)))
register_resolver("sweep_path", lambda _root_: str(sweep_path(_root_)))
register_resolver("run_subdir", run_subdir)

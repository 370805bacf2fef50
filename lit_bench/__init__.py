"""Hydra benchmarking harness for lit_sb3 (and SB3 as a reference backend)."""

from omegaconf import OmegaConf

from lit_bench.identity import run_subdir

# Run directories: <algo> for lit_sb3, <algo>@<backend> otherwise, so a backend comparison never shares a directory.
OmegaConf.register_new_resolver("backend_suffix", lambda backend: "" if backend == "lit" else f"@{backend}",
                                replace=True)
# The run's directory below <out_dir>/<sweep>, from its whole config (lit_bench.identity): used by hydra.run.dir and
# hydra.sweep.subdir, so Hydra's directories and the harness's are the same by construction.
OmegaConf.register_new_resolver("run_subdir", run_subdir, replace=True)
# parity=true runs (lit_sb3 with SB3's exact optimizer) go to <algo>+parity: they are other runs than the defaults.
OmegaConf.register_new_resolver(
    "parity_suffix", lambda backend, parity: "+parity" if parity and backend == "lit" else "", replace=True
)

"""Hydra benchmarking harness for lit_sb3 (and SB3 as a reference backend)."""

from omegaconf import OmegaConf

# Run directories: <algo> for lit_sb3, <algo>@<backend> otherwise, so a backend comparison never shares a directory.
OmegaConf.register_new_resolver("backend_suffix", lambda backend: "" if backend == "lit" else f"@{backend}",
                                replace=True)

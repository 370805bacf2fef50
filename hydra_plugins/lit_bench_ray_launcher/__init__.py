"""lit_bench's Hydra launcher plugins (a ``hydra_plugins`` namespace package, where Hydra looks for them)."""

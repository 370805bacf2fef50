"""Hydra benchmarking harness for lit_sb3 (and SB3 as a reference backend)."""

"""What :class:`~lit_sb3.trainer.RLTrainer` keeps out of an RL run: Lightning's per-call tips and the warnings that do
not apply to RL (a clean console), and the per-trainer read of every installed package's entry points (a cost paid
at each ``learn``; patch 14 of :mod:`lit_sb3.lightning_compat`)."""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import logging
import warnings
from collections.abc import Iterator

from lit_sb3.lightning_compat.internals import callback_entry_points

# Lightning's per-fit chatter that says nothing about an RL run (the iterable is the algorithm's own).
_QUIET_WARNINGS = (
    r".*does not have many workers.*",
    r".*`training_step` returned `None`.*",
    r".*You defined a `validation_step` but have no `val_dataloader`.*",
    r".*Total length of .* across ranks is zero.*",
    r".*The number of training batches .* is smaller than the logging interval.*",
    r".*`isinstance\(treespec, LeafSpec\)` is deprecated.*",
    r".*LeafSpec.*is deprecated.*",
    r".*Your `val_dataloader`'s sampler has shuffling enabled.*",
    r".*configure_optimizers` returned `None`, this fit will run with no optimizer.*",  # ARS: no gradient
    r".*The `srun` command is available on your system but is not used.*",  # any machine with SLURM installed
)
_QUIET_LOGGERS = ("lightning.pytorch.utilities.rank_zero", "lightning.pytorch.accelerators.cuda", "lightning.fabric")


@contextlib.contextmanager
def quiet_lightning() -> Iterator[None]:
    """Silence Lightning's tips and the warnings that do not apply to RL, for the duration of a call."""
    levels = {name: logging.getLogger(name).level for name in _QUIET_LOGGERS}
    for name in _QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    try:
        with warnings.catch_warnings():
            for pattern in _QUIET_WARNINGS:
                warnings.filterwarnings("ignore", message=pattern)
            yield
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


@functools.cache
def _entry_points(group: str) -> importlib.metadata.EntryPoints:
    """The installed entry points of ``group``, read once per process."""
    return importlib.metadata.entry_points(group=group)


@contextlib.contextmanager
def installed_callbacks_read_once() -> Iterator[None]:
    """Each Trainer reads every installed package's metadata for callback factories (~8 ms, as much as a whole
    A2C rollout); ``learn`` builds a trainer per call, so the entry points are read once per process instead (the
    factories still run for every trainer; a plugin installed while the process runs is not seen)."""
    with callback_entry_points(_entry_points):
        yield

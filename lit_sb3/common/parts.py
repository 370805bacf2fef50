"""The protocol of an algorithm's typed parts (entropy temperature, epsilon-greedy schedule, target networks).

An algorithm creates a part in one line (``self.temperature = EntropyTemperature(...)``); the generic code of the
base classes finds its parts among its attributes (:func:`parts_of`) and drives them through the hooks of
:class:`Part`, so no algorithm repeats the hook-up (persistence, optimizers, per-step updates, logging).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import torch
from gymnasium import spaces

from lit_sb3.common.saved_state import StateFormat


class Part:
    """A piece of an algorithm with its own state. Every hook defaults to nothing; where each one is called:

    - :meth:`build`: once the env's spaces are known, after the networks (``BaseAlgorithm.build``)
    - :meth:`optimizers`: after the algorithm's own, in ``configure_optimizers`` and SB3's save names
    - :meth:`state` / :meth:`load_state`: in Lightning checkpoints and SB3 zips (``BaseAlgorithm._extra_state``)
    - :meth:`on_step`: after every vector env step of the off-policy collection
    - :meth:`explores`: before each action of the collection and of ``predict`` (not deterministic)
    - :meth:`record`: when the logs are dumped
    """

    #: SB3's attributes of the algorithm that live on this part, under the same names (see :meth:`sb3_attributes`)
    sb3_names: ClassVar[tuple[str, ...]] = ()

    def build(self, action_space: spaces.Space) -> dict[str, Any]:
        """Finish what depends on the env; returns the hyperparameters it resolved (kept in ``hparams``)."""
        return {}

    def optimizers(self) -> dict[str, torch.optim.Optimizer]:
        """This part's optimizers under SB3's save names."""
        return {}

    def state(self, fmt: StateFormat) -> dict[str, Any]:
        """What a checkpoint or zip keeps of this part besides the algorithm's ``state_dict``."""
        return {}

    def load_state(self, state: dict[str, Any], fmt: StateFormat) -> None:
        """Restore from the algorithm's whole extra state (the entries :meth:`state` wrote, when present)."""

    def on_step(self, progress_remaining: float, n_envs: int) -> None:
        """After a vector env step of the collection."""

    def explores(self) -> bool:
        """Take a uniformly random action this time?"""
        return False

    def record(self, record: Callable[..., None]) -> None:
        """Record this part's values in the SB3 logger (``record(key, value)``)."""

    @classmethod
    def sb3_attributes(cls, slot: str) -> tuple[_Forward, ...]:
        """Descriptors for the algorithm's class body: SB3's attribute names, read from (and written to) the part
        stored as ``slot``: ``log_ent_coef, ent_coef_optimizer, target_entropy = EntropyTemperature.sb3_attributes(
        "temperature")``."""
        return tuple(_Forward(slot, cls.sb3_names) for _ in cls.sb3_names)


class _Forward:
    """An algorithm attribute that lives on one of its parts, under the same name."""

    def __init__(self, slot: str, names: tuple[str, ...]) -> None:
        self.slot, self.names, self.name = slot, names, ""

    def __set_name__(self, owner: type, name: str) -> None:
        if name not in self.names:
            raise TypeError(f"{owner.__name__}.{name}: the part in {self.slot!r} has no such attribute ({self.names})")
        self.name = name

    def __get__(self, algorithm: object, owner: type | None = None) -> Any:
        return self if algorithm is None else getattr(getattr(algorithm, self.slot), self.name)

    def __set__(self, algorithm: object, value: Any) -> None:
        setattr(getattr(algorithm, self.slot), self.name, value)


def parts_of(owner: torch.nn.Module) -> list[Part]:
    """The parts among ``owner``'s submodules and attributes (submodules first, each in assignment order)."""
    return [value for value in (*owner._modules.values(), *vars(owner).values()) if isinstance(value, Part)]

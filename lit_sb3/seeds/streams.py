"""Each seed's own random streams, and the batched sampling that draws every seed's noise from its own stream.

A seed's ``torch.Generator`` and numpy ``Generator`` are seeded from the seed alone, and every draw of the group
takes the same shape from each seed's generator in turn, so seed i's draws are the same whatever seeds share its
group. The draws are then turned into actions in one batched transform: Gumbel-max for categorical actions
(``argmax(logits + Gumbel noise)`` is a sample of ``Categorical(logits)``), the reparameterized Gaussian
(``mean + std * noise``) for Box actions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch


class SeedStreams:
    """The random streams of the seeds of a group: ``torch[i]`` (action noise) and ``numpy[i]`` (minibatch order)."""

    def __init__(self, seeds: Sequence[int]) -> None:
        self.torch = [torch.Generator().manual_seed(seed) for seed in seeds]
        self.numpy = [np.random.default_rng(seed) for seed in seeds]

    def uniform(self, shape: Sequence[int]) -> torch.Tensor:
        """``[N, *shape]`` uniform [0, 1) draws, seed i's from its own generator."""
        return torch.stack([torch.rand(tuple(shape), generator=g) for g in self.torch])

    def normal(self, shape: Sequence[int]) -> torch.Tensor:
        """``[N, *shape]`` standard normal draws, seed i's from its own generator."""
        return torch.stack([torch.randn(tuple(shape), generator=g) for g in self.torch])

    def permutations(self, size: int) -> np.ndarray:
        """``[N, size]``: a random order of ``range(size)`` per seed (its minibatch order)."""
        return np.stack([rng.permutation(size) for rng in self.numpy])

    def state(self, index: int) -> dict[str, Any]:
        """Seed ``index``'s generator states (a tensor and plain data)."""
        return {"torch": self.torch[index].get_state(), "numpy": self.numpy[index].bit_generator.state}

    def load_state(self, index: int, state: dict[str, Any]) -> None:
        self.torch[index].set_state(state["torch"])
        self.numpy[index].bit_generator.state = state["numpy"]


def gumbel_max(logits: torch.Tensor, uniform: torch.Tensor) -> torch.Tensor:
    """Categorical samples from uniform draws of the logits' shape: ``argmax(logits - log(-log(u)))``."""
    tiny = torch.finfo(uniform.dtype).tiny
    gumbel = -torch.log(-torch.log(uniform.clamp(min=tiny)))
    return torch.argmax(logits + gumbel, dim=-1)


def gaussian(mean: torch.Tensor, log_std: torch.Tensor, normal: torch.Tensor) -> torch.Tensor:
    """Diagonal Gaussian samples ``mean + exp(log_std) * noise``; ``log_std`` is ``[N, A]``, the rest ``[N, B, A]``."""
    return mean + log_std.exp().unsqueeze(1) * normal

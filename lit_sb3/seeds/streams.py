"""Each seed's random streams: the generators its own process would draw from, and draws made as that process makes
them.

An ordinary lit_sb3 run draws from the process's global generators: torch's (action noise, SAC's reparameterized
draws, TD3's target smoothing noise) and numpy's legacy ``np.random`` (SB3's minibatch permutations and replay
indices, the action noise objects, DQN's exploration test). A seed group gives seed i a ``torch.Generator`` and a
``np.random.RandomState`` holding the states those global generators have once seed i's ordinary model is built
(:meth:`SeedStreams.take_global`), and draws from them with the same calls, shapes and order as the ordinary run, so
that a seed of a group follows the run its own process trains, up to the rounding of the batched kernels.

The draws are made on the host, seed by seed (so a seed's draws do not depend on its group, and a CUDA group draws
the CPU run's noise); the transforms that turn them into actions are batched over the seeds:
:func:`categorical_sample` is ``torch.multinomial(probs, 1, True)`` from its own exponential draws (torch's CPU
kernel for one sample per row: ``argmax(probs / q)`` with ``q ~ Exp(1)``, which
``tests/lit_sb3/seeds/test_core.py`` checks against ``torch.multinomial``), :func:`gaussian` is
``Normal.rsample``'s ``loc + eps * scale``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

#: the kind of streams a seed state holds (``seed_state["streams_format"]``): 2, the seed's process streams
#: (a torch generator and numpy's legacy MT19937); states without the entry were written by the group's own streams
#: (a torch generator and a PCG64 numpy generator per seed, seeded from the seed), which cannot resume as format 2
STREAMS_FORMAT = 2


class SeedStreams:
    """The random streams of the seeds of a group: ``torch[i]`` and ``numpy[i]`` (a legacy ``RandomState``) stand
    for seed i's process's global torch and numpy generators. Built seeded from ``seeds`` (as ``torch.manual_seed``
    and ``np.random.seed`` seed them)."""

    def __init__(self, seeds: Sequence[int]) -> None:
        self.torch = [torch.Generator().manual_seed(seed) for seed in seeds]
        self.numpy = [np.random.RandomState(seed) for seed in seeds]

    def take_global(self, index: int) -> None:
        """Seed ``index``'s streams from here on are the process's global torch and numpy generators as they are now
        (called right after the seed's ordinary model is built: what its own run draws from first)."""
        self.torch[index].set_state(torch.get_rng_state())
        self.numpy[index].set_state(np.random.get_state(legacy=True))

    def exponential(self, shape: Sequence[int]) -> torch.Tensor:
        """``[N, *shape]`` Exp(1) draws (the noise of ``torch.multinomial(probs, 1, True)`` for ``probs`` of
        ``shape``), seed i's from its own generator."""
        return torch.stack([torch.empty(tuple(shape)).exponential_(1.0, generator=g) for g in self.torch])

    def normal(self, shape: Sequence[int], std: float = 1.0) -> torch.Tensor:
        """``[N, *shape]`` normal draws (mean 0), seed i's as ``torch.empty(shape).normal_(0, std)`` draws them on its
        generator (``Normal.rsample``'s noise for ``std`` 1, TD3's target smoothing noise)."""
        return torch.stack([torch.empty(tuple(shape)).normal_(0.0, std, generator=g) for g in self.torch])

    def permutations(self, size: int, drawing: Sequence[bool]) -> np.ndarray:
        """``[N, size]``: SB3's ``RolloutBuffer.get`` order (``np.random.permutation``) for the seeds ``drawing``;
        ``range(size)`` for the others, which draw nothing (a seed whose update stopped draws no further order)."""
        return np.stack(
            [rng.permutation(size) if draws else np.arange(size) for rng, draws in zip(self.numpy, drawing)]
        )

    def state(self, index: int) -> dict[str, Any]:
        """Seed ``index``'s generator states (tensors and plain data: ``torch.load(weights_only=True)``)."""
        kind, keys, pos, has_gauss, cached = self.numpy[index].get_state(legacy=True)
        return {
            "torch": self.torch[index].get_state(),
            "numpy": {
                "kind": str(kind),
                "keys": torch.from_numpy(np.asarray(keys, dtype=np.int64)),
                "pos": int(pos),
                "has_gauss": int(has_gauss),
                "cached_gaussian": float(cached),
            },
        }

    def load_state(self, index: int, state: dict[str, Any]) -> None:
        self.torch[index].set_state(state["torch"])
        numpy_state = state["numpy"]
        self.numpy[index].set_state(
            (
                numpy_state["kind"],
                numpy_state["keys"].numpy().astype(np.uint32),
                numpy_state["pos"],
                numpy_state["has_gauss"],
                numpy_state["cached_gaussian"],
            )
        )


def categorical_sample(probs: torch.Tensor, exponential: torch.Tensor) -> torch.Tensor:
    """One sample per row of ``probs`` (``[..., n]``) from Exp(1) draws of its shape, as ``torch.multinomial(probs,
    1, True)`` computes it on the CPU: ``argmax(probs / q)``."""
    return torch.argmax(probs / exponential, dim=-1)


def gaussian(mean: torch.Tensor, log_std: torch.Tensor, normal: torch.Tensor) -> torch.Tensor:
    """Diagonal Gaussian samples as ``Normal.rsample`` forms them, ``mean + noise * exp(log_std)``; ``log_std`` is
    ``[N, A]``, the rest ``[N, B, A]``."""
    return mean + normal * log_std.exp().unsqueeze(1)

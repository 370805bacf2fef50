"""Host <-> device copies of a seed group on a GPU: the arrays of one env step (or one minibatch) in one copy each way.

A copy between the host and a CUDA device costs a fixed latency (tens of microseconds, and a synchronisation on the
way back) whatever its size, and the arrays a group moves per env step are small (every seed's observations, noise,
actions), so the arrays of one dtype travel together: concatenated flat on the sending side, one copy, split into
views on the receiving side. On the CPU nothing is copied: the arrays come back as tensors (numpy arrays) sharing
their memory, so the CPU path computes exactly what it computed without this module.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

ArrayLike = np.ndarray | torch.Tensor


def _split(flat: torch.Tensor, shapes: Sequence[torch.Size]) -> list[torch.Tensor]:
    sizes = [int(np.prod(shape)) for shape in shapes]
    return [part.view(shape) for part, shape in zip(flat.split(sizes), shapes)]


def to_device(arrays: Sequence[ArrayLike], device: torch.device) -> list[torch.Tensor]:
    """The host ``arrays`` as tensors on ``device``, one copy per dtype among them (none on the CPU)."""
    tensors = [torch.as_tensor(a) for a in arrays]
    if device.type == "cpu":
        return tensors
    out: list[torch.Tensor | None] = [None] * len(tensors)
    for dtype in dict.fromkeys(t.dtype for t in tensors):
        indices = [k for k, t in enumerate(tensors) if t.dtype == dtype]
        flat = torch.cat([tensors[k].reshape(-1) for k in indices]).to(device)
        for k, part in zip(indices, _split(flat, [tensors[k].shape for k in indices])):
            out[k] = part
    return [t for t in out if t is not None]


def to_host(tensors: Sequence[torch.Tensor]) -> list[np.ndarray]:
    """The (detached) ``tensors`` as host numpy arrays, one copy per dtype among them (none from the CPU)."""
    tensors = [t.detach() for t in tensors]
    if all(t.device.type == "cpu" for t in tensors):
        return [t.numpy() for t in tensors]
    out: list[np.ndarray | None] = [None] * len(tensors)
    for dtype in dict.fromkeys(t.dtype for t in tensors):
        indices = [k for k, t in enumerate(tensors) if t.dtype == dtype]
        flat = torch.cat([tensors[k].reshape(-1) for k in indices]).cpu()
        for k, part in zip(indices, _split(flat, [tensors[k].shape for k in indices])):
            out[k] = part.numpy()
    return [a for a in out if a is not None]

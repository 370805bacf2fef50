"""The numerical parts of TRPO's natural-gradient step, as pure functions on flat tensors."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch


def flat_grad(
    output: torch.Tensor,
    params: Sequence[torch.Tensor],
    *,
    create_graph: bool = False,
    retain_graph: bool | None = None,
) -> torch.Tensor:
    """d output / d params as one flat vector (parameters ``output`` does not depend on contribute zeros)."""
    grads = torch.autograd.grad(output, params, create_graph=create_graph, retain_graph=retain_graph, allow_unused=True)
    return torch.cat([(torch.zeros_like(p) if g is None else g).reshape(-1) for g, p in zip(grads, params)])


def max_step_size(direction: torch.Tensor, fisher_direction: torch.Tensor, max_kl: float) -> float:
    """Largest step along ``direction`` whose quadratic KL estimate 0.5 * beta^2 * s^T F s equals ``max_kl``.

    In double precision on the host, as sb3-contrib computes it (the step then rounds as sb3-contrib's does); no
    step (0) when the curvature along ``direction`` is not positive.
    """
    curvature = float(direction.dot(fisher_direction))
    return math.sqrt(2.0 * max_kl / curvature) if curvature > 0 else 0.0


def backtracking_line_search(
    evaluate: Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]],
    start: torch.Tensor,
    full_step: torch.Tensor,
    old_objective: torch.Tensor,
    max_kl: float,
    shrinking_factor: float,
    max_iter: int,
    step_size: float = 1.0,
) -> tuple[torch.Tensor, bool, torch.Tensor, torch.Tensor]:
    """Shrink ``step_size * full_step`` until the objective improves while the KL stays below ``max_kl``.

    ``evaluate(params)`` returns (objective, kl) at flat parameters ``params``. Returns the accepted parameters
    (``start`` when no step was accepted), whether one was, and the objective and KL there (KL 0 when none).
    The scalar factors are multiplied first, on the host, as in sb3-contrib (same rounding).
    """
    coefficient = 1.0
    for _ in range(max_iter):
        candidate = start + (coefficient * step_size) * full_step
        objective, kl = evaluate(candidate)
        if kl < max_kl and objective > old_objective:
            return candidate, True, objective, kl
        coefficient *= shrinking_factor
    return start, False, old_objective, torch.zeros_like(old_objective)

"""The numerical parts of TRPO's natural-gradient step, as pure functions on flat tensors."""

from __future__ import annotations

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
    grads = torch.autograd.grad(
        output, params, create_graph=create_graph, retain_graph=retain_graph, allow_unused=True
    )
    return torch.cat([(torch.zeros_like(p) if g is None else g).reshape(-1) for g, p in zip(grads, params)])


def conjugate_gradient(
    matvec: Callable[[torch.Tensor], torch.Tensor],
    b: torch.Tensor,
    max_iter: int,
    residual_tol: float = 1e-10,
) -> torch.Tensor:
    """Approximate solution x of A x = b for a symmetric positive-definite A known only through ``matvec``.

    Starts from x = 0 and stops after ``max_iter`` matrix-vector products or once the squared residual norm
    falls below ``residual_tol``.
    """
    x = torch.zeros_like(b)
    residual = b.clone()
    direction = b.clone()
    residual_sq = residual.dot(residual)
    for _ in range(max_iter):
        if residual_sq < residual_tol:
            break
        a_direction = matvec(direction)
        step = residual_sq / direction.dot(a_direction)
        x += step * direction
        residual -= step * a_direction
        new_residual_sq = residual.dot(residual)
        direction = residual + (new_residual_sq / residual_sq) * direction
        residual_sq = new_residual_sq
    return x


def max_step_size(direction: torch.Tensor, fisher_direction: torch.Tensor, max_kl: float) -> torch.Tensor:
    """Largest step along ``direction`` whose quadratic KL estimate 0.5 * beta^2 * s^T F s equals ``max_kl``."""
    return torch.sqrt(2.0 * max_kl / direction.dot(fisher_direction))


def backtracking_line_search(
    evaluate: Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]],
    start: torch.Tensor,
    full_step: torch.Tensor,
    old_objective: torch.Tensor,
    max_kl: float,
    shrinking_factor: float,
    max_iter: int,
) -> tuple[torch.Tensor, bool, torch.Tensor, torch.Tensor]:
    """Shrink ``full_step`` until the objective improves while the KL stays below ``max_kl``.

    ``evaluate(params)`` returns (objective, kl) at flat parameters ``params``. Returns the accepted parameters
    (``start`` when no step was accepted), whether one was, and the objective and KL there (KL 0 when none).
    """
    coefficient = 1.0
    for _ in range(max_iter):
        candidate = start + coefficient * full_step
        objective, kl = evaluate(candidate)
        if kl < max_kl and objective > old_objective:
            return candidate, True, objective, kl
        coefficient *= shrinking_factor
    return start, False, old_objective, torch.zeros_like(old_objective)

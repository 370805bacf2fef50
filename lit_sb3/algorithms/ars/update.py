"""ARS's update in pure functions: the perturbed candidates of an iteration and the step from their returns."""

from __future__ import annotations

from typing import NamedTuple

import torch


class ARSUpdate(NamedTuple):
    """Result of one ARS update: the new weights and what sb3-contrib logs about the step."""

    weights: torch.Tensor
    step_size: torch.Tensor
    return_std: torch.Tensor


def perturbed_candidates(weights: torch.Tensor, deltas: torch.Tensor, delta_std: float) -> torch.Tensor:
    """The ``2 * n_delta`` candidates: first every ``weights + delta_std * delta``, then every ``weights - ...``."""
    noise = deltas * delta_std
    return torch.cat([weights + noise, weights - noise])


def ars_update(
    weights: torch.Tensor, deltas: torch.Tensor, candidate_returns: torch.Tensor, n_top: int, learning_rate: float
) -> ARSUpdate:
    """One ARS step (paper's V1-t update without observation filtering, as sb3-contrib does it).

    The ``n_top`` directions whose better side (``max(r+, r-)``) scored highest are kept; the step is the
    finite-difference estimate ``sum((r+ - r-) * delta)`` scaled by ``learning_rate / (n_top * std(kept returns))``.

    :param weights: current flat parameter vector, shape ``(n_params,)``
    :param deltas: unscaled standard-normal directions, shape ``(n_delta, n_params)``
    :param candidate_returns: returns of the ``+delta`` candidates followed by those of the ``-delta`` ones
    :param n_top: directions kept
    :param learning_rate: step size before the return-std scaling
    """
    n_delta = deltas.shape[0]
    plus, minus = candidate_returns[:n_delta], candidate_returns[n_delta:]
    best_side = torch.maximum(plus, minus)
    kept = torch.argsort(best_side, descending=True)[:n_top]
    plus, minus = plus[kept], minus[kept]
    return_std = torch.cat([plus, minus]).std()
    step_size = learning_rate / (n_top * return_std + 1e-6)  # the epsilon keeps equal returns from dividing by zero
    return ARSUpdate(weights + step_size * ((plus - minus) @ deltas[kept]), step_size, return_std)

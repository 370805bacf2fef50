"""The ARS update as a pure function: hand-computed steps and progress on a known quadratic objective."""

from __future__ import annotations

import math

import torch

from lit_sb3.algorithms.ars.update import ars_update, perturbed_candidates


def test_candidates_are_plus_then_minus_scaled_directions():
    weights = torch.tensor([1.0, 2.0])
    deltas = torch.tensor([[1.0, 0.0], [0.0, -2.0]])
    expected = torch.tensor([[1.5, 2.0], [1.0, 1.0], [0.5, 2.0], [1.0, 3.0]])
    torch.testing.assert_close(perturbed_candidates(weights, deltas, 0.5), expected)


def test_hand_computed_update_with_all_directions():
    # r+ = [3, 1], r- = [1, 2]: std([3, 1, 1, 2]) (unbiased) = sqrt(2.75 / 3); sum((r+ - r-) * delta) = [2, -1]
    weights = torch.tensor([0.5, -0.5])
    deltas = torch.eye(2)
    update = ars_update(weights, deltas, torch.tensor([3.0, 1.0, 1.0, 2.0]), n_top=2, learning_rate=0.1)
    std = math.sqrt(2.75 / 3)
    step = 0.1 / (2 * std + 1e-6)
    assert math.isclose(update.return_std.item(), std, rel_tol=1e-6)
    assert math.isclose(update.step_size.item(), step, rel_tol=1e-6)
    torch.testing.assert_close(update.weights, torch.tensor([0.5 + 2 * step, -0.5 - step]))


def test_only_the_top_directions_by_their_better_side_are_used():
    # best sides: max(0, 5) = 5, max(4, 1) = 4, max(1, 0) = 1 -> n_top=2 keeps directions 0 and 1
    deltas = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    returns = torch.tensor([0.0, 4.0, 1.0, 5.0, 1.0, 0.0])
    update = ars_update(torch.zeros(3), deltas, returns, n_top=2, learning_rate=1.0)
    std = torch.tensor([0.0, 4.0, 5.0, 1.0]).std()
    step = 1.0 / (2 * std + 1e-6)
    torch.testing.assert_close(update.weights, torch.stack([-5 * step, 3 * step, torch.tensor(0.0)]))


def test_equal_returns_leave_the_weights_unchanged():
    weights = torch.tensor([0.3, -0.2])
    update = ars_update(weights, torch.randn(4, 2), torch.full((8,), 7.0), n_top=4, learning_rate=0.02)
    torch.testing.assert_close(update.weights, weights)
    assert update.return_std.item() == 0.0


def test_iterations_climb_a_quadratic_to_its_optimum():
    """f(w) = -||w - w*||^2 evaluated exactly: ARS gets 20x closer to w* within 300 iterations."""
    gen = torch.Generator().manual_seed(0)
    optimum = torch.tensor([1.0, -2.0, 0.5, 3.0])
    weights = torch.zeros(4)

    def objective(w: torch.Tensor) -> torch.Tensor:
        return -((w - optimum) ** 2).sum(dim=-1)

    start = torch.dist(weights, optimum).item()
    distances = []
    for _ in range(300):
        deltas = torch.randn(8, 4, generator=gen)
        returns = objective(perturbed_candidates(weights, deltas, 0.05))
        weights = ars_update(weights, deltas, returns, n_top=4, learning_rate=0.05).weights
        distances.append(torch.dist(weights, optimum).item())
    assert distances[9] < start  # it moves toward the optimum from the first iterations
    assert distances[-1] < start / 20

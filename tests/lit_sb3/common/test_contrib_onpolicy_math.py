"""TRPO's numerics, masked PPO means and masked action distributions, on hand-computed or brute-force values."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from sb3_contrib.common.maskable.distributions import MaskableCategoricalDistribution

import lit_sb3
from lit_sb3.common import losses
from lit_sb3.common.ppo_update import ppo_loss
from lit_sb3.common.trust_region import backtracking_line_search, flat_grad, max_step_size

t = torch.tensor


def test_trpo_hessian_vector_product_equals_full_hessian_times_vector():
    """F v from double backprop equals the brute-force Hessian of the KL (tiny network), plus the damping."""
    torch.manual_seed(0)
    model = lit_sb3.TRPO("MlpPolicy", env="CartPole-v1", cg_damping=0.1, policy_kwargs={"net_arch": [3]})
    obs = torch.randn(5, 4)
    params = [p for n, p in model.policy.named_parameters() if "value" not in n]
    shapes = [p.shape for p in params]
    sizes = [p.numel() for p in params]

    with torch.no_grad():
        old_logits = model.policy.get_distribution(obs).distribution.logits.clone()

    def kl_of(flat: torch.Tensor) -> torch.Tensor:  # the same policy written out by hand: Linear-tanh-Linear
        chunks = [c.reshape(s) for c, s in zip(torch.split(flat, sizes), shapes)]
        named = dict(zip([n for n, _ in model.policy.named_parameters() if "value" not in n], chunks))
        w, b = named["mlp_extractor.policy_net.0.weight"], named["mlp_extractor.policy_net.0.bias"]
        hidden = torch.tanh(obs @ w.T + b)
        logits = hidden @ named["action_net.weight"].T + named["action_net.bias"]
        new = torch.distributions.Categorical(logits=logits)
        old = torch.distributions.Categorical(logits=old_logits)
        return torch.distributions.kl_divergence(new, old).mean()

    flat = torch.cat([p.detach().reshape(-1) for p in params])
    hessian = torch.autograd.functional.hessian(kl_of, flat)

    distribution = model.policy.get_distribution(obs)
    old = torch.distributions.Categorical(logits=old_logits)
    kl = torch.distributions.kl_divergence(distribution.distribution, old).mean()
    grad_kl = flat_grad(kl, params, create_graph=True)
    vector = torch.randn_like(flat)
    product = model.hessian_vector_product(params, grad_kl, vector)
    assert torch.allclose(product, hessian @ vector + 0.1 * vector, atol=1e-5)


def test_line_search_accepts_the_first_step_that_improves_inside_the_trust_region():
    start, step = t([0.0]), t([8.0])
    tried = []

    def evaluate(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        tried.append(x.item())
        return -(x - 1.0).square().sum(), 0.5 * x.square().sum()  # objective peaks at 1, KL = x^2 / 2

    params, ok, objective, kl = backtracking_line_search(evaluate, start, step, t(-1.0), 1.0, 0.5, 10)
    assert tried == [8.0, 4.0, 2.0, 1.0] and ok and params.item() == 1.0  # 2.0 fails the KL limit (2 >= 1)
    assert objective.item() == 0.0 and kl.item() == 0.5


def test_line_search_restores_the_start_when_nothing_improves():
    params, ok, objective, kl = backtracking_line_search(
        lambda x: (-x.square().sum(), x.square().sum()), t([0.0]), t([1.0]), t(0.0), 10.0, 0.5, 3
    )
    assert not ok and params.item() == 0.0 and objective.item() == 0.0 and kl.item() == 0.0


def test_max_step_size_reaches_the_kl_limit_of_the_quadratic_model():
    direction, fisher_direction = t([1.0, 2.0]), t([2.0, 4.0])  # s^T F s = 10
    beta = max_step_size(direction, fisher_direction, 0.05)
    assert 0.5 * beta**2 * 10.0 == pytest.approx(0.05)
    assert max_step_size(direction, -fisher_direction, 0.05) == 0.0  # no curvature along it: no step


def test_line_search_scales_the_direction_by_the_step_size():
    tried = []

    def evaluate(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        tried.append(x.item())
        return x.sum(), t(0.0)

    backtracking_line_search(evaluate, t([1.0]), t([2.0]), t(10.0), 1.0, 0.5, 2, step_size=3.0)
    assert tried == [7.0, 4.0]  # 1 + 3 * 2, then 1 + 1.5 * 2


def test_surrogate_objective_by_hand():
    adv, old, new = t([1.0, -2.0]), t([0.0, 0.0]), torch.log(t([2.0, 0.5]))
    assert losses.surrogate_objective(adv, new, old).item() == pytest.approx((2.0 - 1.0) / 2)


def test_masked_ppo_loss_equals_the_loss_on_the_valid_entries_only():
    torch.manual_seed(1)
    n = 10
    batch = SimpleNamespace(
        advantages=torch.randn(n), old_log_prob=torch.randn(n), returns=torch.randn(n), old_values=torch.randn(n)
    )
    values, log_prob, entropy = torch.randn(n), torch.randn(n), torch.rand(n)
    mask = torch.tensor([True, False] * 5)
    kwargs = dict(clip_range=0.2, clip_range_vf=0.3, normalize_advantage=True, ent_coef=0.01, vf_coef=0.5)
    masked, masked_terms = ppo_loss(values, log_prob, entropy, batch, mask=mask, **kwargs)
    valid = SimpleNamespace(**{k: v[mask] for k, v in vars(batch).items()})
    plain, plain_terms = ppo_loss(values[mask], log_prob[mask], entropy[mask], valid, **kwargs)
    assert masked.item() == pytest.approx(plain.item(), abs=1e-6)
    for key in plain_terms:
        assert masked_terms[key].item() == pytest.approx(plain_terms[key].item(), abs=1e-6), key


def test_masked_categorical_gives_masked_actions_no_probability():
    dist = MaskableCategoricalDistribution(4)
    dist.proba_distribution(torch.zeros(1, 4))
    dist.apply_masking(np.array([[True, False, True, False]]))
    log_prob = dist.log_prob(torch.arange(4))
    assert torch.allclose(log_prob[[0, 2]], torch.full((2,), math.log(0.5)))
    assert torch.isinf(log_prob[[1, 3]]).all() or (log_prob[[1, 3]] < -1e6).all()
    assert {dist.sample().item() for _ in range(50)} <= {0, 2}

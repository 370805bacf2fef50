"""lit_sb3's fused Adam zeroes its subnormal moments every SUBNORMAL_FLUSH_EVERY steps on the CPU: the parameters
stay those of the plain fused Adam; SB3's optimizer (sb3_parity) and RMSprop are left as they are."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from lit_sb3 import DQN, SAC, sb3_parity
from lit_sb3.common.optimizers import SUBNORMAL_FLUSH_EVERY, flush_subnormal_moments

TINY = torch.finfo(torch.float32).tiny


def _subnormal_count(optimizer: torch.optim.Optimizer) -> int:
    moments = [s[name] for s in optimizer.state.values() for name in ("exp_avg", "exp_avg_sq")]
    return sum(int(((m != 0) & (m.abs() < TINY)).sum()) for m in moments)


def _train(optimizer: torch.optim.Optimizer, params: list[torch.Tensor], steps: int) -> None:
    """Gradients that stop for half of each parameter's entries after 20 steps (units no sample reaches any more):
    their first moments decay into the subnormal range and stay there."""
    gen = torch.Generator().manual_seed(0)
    for step in range(steps):
        for p in params:
            grad = torch.randn(p.shape, generator=gen) * 1e-3
            if step >= 20:
                grad.view(-1)[::2] = 0.0
            p.grad = grad
        optimizer.step()


def test_flushed_moments_move_the_parameters_as_the_plain_fused_adam_does() -> None:
    shapes = [(64, 4), (64,), (2, 64)]
    gen = torch.Generator().manual_seed(1)
    start = [torch.randn(shape, generator=gen) for shape in shapes]
    plain_params = [t.clone().requires_grad_(True) for t in start]
    flushed_params = [t.clone().requires_grad_(True) for t in start]
    plain = torch.optim.Adam(plain_params, lr=1e-3, fused=True)
    flushed = torch.optim.Adam(flushed_params, lr=1e-3, fused=True)
    flush_subnormal_moments(flushed)
    flush_subnormal_moments(flushed)  # registered once
    steps = 16 * SUBNORMAL_FLUSH_EVERY
    _train(plain, plain_params, steps)
    _train(flushed, flushed_params, steps)
    # the case the flush is for: every first moment whose gradient stopped is stuck among the subnormals
    assert _subnormal_count(plain) == sum(p.numel() for p in plain_params) // 2
    assert _subnormal_count(flushed) == 0
    assert all(torch.equal(a, b) for a, b in zip(plain_params, flushed_params))


@pytest.mark.parametrize(
    ("make", "moment"),
    [
        (lambda p: torch.optim.Adam(p, lr=1e-3, fused=False), "exp_avg"),  # sb3_parity's: SB3's optimizer
        (lambda p: torch.optim.RMSprop(p, lr=1e-3), "square_avg"),
    ],
)
def test_other_optimizers_are_left_as_they_are(make: Any, moment: str) -> None:
    params = [torch.zeros(64, 4, requires_grad=True)]
    optimizer = make(params)
    flush_subnormal_moments(optimizer)
    params[0].grad = torch.zeros(64, 4)
    optimizer.step()
    optimizer.state[params[0]][moment].fill_(TINY / 8)
    optimizer.state[params[0]]["step"].fill_(SUBNORMAL_FLUSH_EVERY - 1)
    optimizer.step()
    assert bool((optimizer.state[params[0]][moment] != 0).all())


def _one_step_after(model_optimizer: torch.optim.Optimizer, count: int) -> int:
    """Plant a subnormal in every first moment, set the step counts to ``count``, take one step with zero
    gradients: the subnormal moments left."""
    for group in model_optimizer.param_groups:
        for p in group["params"]:
            state = model_optimizer.state[p]
            state["exp_avg"].fill_(TINY / 8)
            state["step"].fill_(count)
            p.grad = torch.zeros_like(p)
    model_optimizer.step()
    return _subnormal_count(model_optimizer)


@pytest.mark.parametrize("policy_kwargs", [None, sb3_parity()], ids=["default", "sb3_parity"])
def test_a_models_fused_adam_flushes_after_learn(policy_kwargs: dict | None) -> None:
    """``learn`` gives the default (fused) optimizers the flush, on the step whose count is a multiple of
    SUBNORMAL_FLUSH_EVERY and not on others; sb3_parity's optimizer keeps SB3's arithmetic."""
    dqn = DQN("MlpPolicy", "CartPole-v1", learning_starts=10, train_freq=4, seed=0, policy_kwargs=policy_kwargs)
    sac = SAC("MlpPolicy", "Pendulum-v1", learning_starts=10, seed=0, policy_kwargs=policy_kwargs)
    for model, steps in ((dqn, 40), (sac, 20)):
        model.learn(steps)
        optimizers = [model.policy.optimizer] if model is dqn else [model.actor.optimizer, model.critic.optimizer]
        for optimizer in optimizers:
            assert _one_step_after(optimizer, 2 * SUBNORMAL_FLUSH_EVERY + 5) > 0
            left = _one_step_after(optimizer, 2 * SUBNORMAL_FLUSH_EVERY - 1)
            assert (left == 0) == (policy_kwargs is None)

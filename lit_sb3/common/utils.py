"""Small helpers shared by the algorithms."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.policies import BasePolicy
from torch.distributions import Distribution


@contextlib.contextmanager
def unchecked_distributions() -> Iterator[None]:
    """Skip torch.distributions' argument validation inside the hot loops.

    Validation re-checks every logit and sample on each construction and costs about a third of a small policy's
    forward pass. What it would catch (NaN parameters) is caught once per update instead, by
    :func:`check_finite` on the logged losses.
    """
    previous = Distribution._validate_args
    Distribution.set_default_validate_args(False)
    try:
        yield
    finally:
        Distribution.set_default_validate_args(previous)


def env_actions(actions: np.ndarray, action_space: spaces.Space, policy: BasePolicy) -> np.ndarray:
    """The actions to send to the env: Box actions leave a policy squashed to [-1, 1] (rescale them) or unbounded
    (clip them to the bounds); other spaces pass as they are."""
    if not isinstance(action_space, spaces.Box):
        return actions
    actions = actions.reshape((-1, *action_space.shape))
    if policy.squash_output:
        return policy.unscale_action(actions)
    return np.clip(actions, action_space.low, action_space.high)


def check_finite(values: dict[str, float], num_timesteps: int) -> None:
    """Fail loudly when an update produced NaN/inf (the run has diverged)."""
    bad = {k: v for k, v in values.items() if not math.isfinite(v)}
    if bad:
        raise FloatingPointError(
            f"training diverged at env step {num_timesteps}: {bad}; try a lower learning_rate or max_grad_norm"
        )


def outside_autocast(device: torch.device) -> contextlib.AbstractContextManager:
    """Env interaction runs in float32 even inside a mixed-precision training step (bf16 actions reach numpy as an
    unsupported dtype, and exploration should not depend on the update's precision)."""
    return torch.autocast(device.type, enabled=False)


def clip_grad_norm(module: Any, optimizer: Any, max_norm: float) -> None:
    """Clip the norm of ``optimizer``'s gradients to ``max_norm`` inside a Lightning fit, under any precision.

    Lightning's ``clip_gradients`` refuses optimizers that unscale fp16 gradients themselves (fused Adam); the norm
    is the same either way, so it is taken here directly: fp32 and bf16 gradients as they are, fp16-AMP gradients
    unscaled first. Without a fused optimizer, fp16-AMP keeps Lightning's path (its step unscales the gradients).
    """
    raw = getattr(optimizer, "optimizer", optimizer)
    scaler = getattr(module.trainer.precision_plugin, "scaler", None)
    if scaler is not None:
        if not getattr(raw, "_step_supports_amp_scaling", False):
            module.clip_gradients(optimizer, gradient_clip_val=max_norm, gradient_clip_algorithm="norm")
            return
        scaler.unscale_(raw)
    torch.nn.utils.clip_grad_norm_([p for group in raw.param_groups for p in group["params"]], max_norm)


class CheckFailed(ValueError, AssertionError):
    """An argument refused by a check SB3 makes with ``assert``: a ValueError, as lit_sb3 refuses bad input, and the
    AssertionError that code written against SB3 catches."""


def resolve_policy_class(
    policy: str | type[BasePolicy], aliases: Mapping[str, type[BasePolicy]], algorithm: str
) -> type[BasePolicy]:
    """The policy class named by ``policy`` (one of the algorithm's ``aliases``) or given as a class."""
    if isinstance(policy, str):
        if policy not in aliases:
            choices = ", ".join(sorted(aliases))
            raise ValueError(f"policy: unknown policy {policy!r} for {algorithm}; valid choices: {choices}")
        return aliases[policy]
    if isinstance(policy, type) and issubclass(policy, BasePolicy):
        return policy
    raise TypeError(f"policy: expected a policy name or a BasePolicy subclass, got {policy!r}")

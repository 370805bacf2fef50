"""Small helpers shared by the algorithms."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

import numpy as np
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

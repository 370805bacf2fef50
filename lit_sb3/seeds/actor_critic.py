"""SB3's actor-critic MLP policy (PPO's and A2C's ``MlpPolicy``) for N seeds at once: a batched forward on the
stacked parameters, and the action distributions' quantities over the seed axis."""

from __future__ import annotations

from typing import Any

import torch
from gymnasium import spaces
from stable_baselines3.common.distributions import CategoricalDistribution, DiagGaussianDistribution
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.preprocessing import preprocess_obs
from torch.distributions import Normal

from lit_sb3.seeds.stacked import Stacked, batched_forward, check_batchable, stack_parameters


class StackedActorCritic:
    """N ``ActorCriticPolicy`` copies (same spaces and arguments) as stacked parameters ``[N, ...]``.

    ``template`` is the first copy: its modules give the structure; the parameters that train are the stacked
    leaves in ``params`` (named as the policy's ``named_parameters``).
    """

    def __init__(self, policies: list[ActorCriticPolicy]) -> None:
        template = policies[0]
        if type(template) is not ActorCriticPolicy:
            raise ValueError(
                f"policy: seed groups batch SB3's MlpPolicy (ActorCriticPolicy), not {type(template).__name__}"
            )
        check_batchable(template.features_extractor, "policy")
        check_batchable(template.mlp_extractor.policy_net, "policy")
        check_batchable(template.mlp_extractor.value_net, "policy")
        if not isinstance(template.action_dist, (CategoricalDistribution, DiagGaussianDistribution)):
            raise ValueError(
                f"policy: seed groups batch Discrete and Box action spaces (without gSDE), "
                f"not {type(template.action_dist).__name__}"
            )
        self.template = template
        self.n_seeds = len(policies)
        self.observation_space = template.observation_space
        self.discrete = isinstance(template.action_dist, CategoricalDistribution)
        self.params: Stacked = stack_parameters(policies)

    def parameters(self) -> list[torch.Tensor]:
        return list(self.params.values())

    def _features(self, obs: torch.Tensor) -> torch.Tensor:
        """``[N, batch, *obs_shape]`` observations -> ``[N, batch, features]`` (SB3's preprocessing, flattened)."""
        n, batch = obs.shape[:2]
        flat = preprocess_obs(obs.reshape(n * batch, *obs.shape[2:]), self.observation_space)
        assert isinstance(flat, torch.Tensor)
        return flat.reshape(n, batch, -1)

    def heads(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The action distribution's parameter (logits or mean, ``[N, batch, A]``) and the values ``[N, batch]``."""
        features = self._features(obs)
        extractor, p = self.template.mlp_extractor, self.params
        latent_pi = batched_forward(extractor.policy_net, p, "mlp_extractor.policy_net.", features)
        latent_vf = batched_forward(extractor.value_net, p, "mlp_extractor.value_net.", features)
        action_param = batched_forward(self.template.action_net, p, "action_net.", latent_pi)
        values = batched_forward(self.template.value_net, p, "value_net.", latent_vf).squeeze(-1)
        return action_param, values

    def action_param(self, obs: torch.Tensor) -> torch.Tensor:
        """:meth:`heads`' first half alone (the policy's path: what acting deterministically needs)."""
        extractor = self.template.mlp_extractor
        latent_pi = batched_forward(extractor.policy_net, self.params, "mlp_extractor.policy_net.", self._features(obs))
        return batched_forward(self.template.action_net, self.params, "action_net.", latent_pi)

    def values(self, obs: torch.Tensor) -> torch.Tensor:
        features = self._features(obs)
        latent_vf = batched_forward(
            self.template.mlp_extractor.value_net, self.params, "mlp_extractor.value_net.", features
        )
        return batched_forward(self.template.value_net, self.params, "value_net.", latent_vf).squeeze(-1)

    def normal(self, action_param: torch.Tensor) -> Normal:
        """The Box policy's Gaussian over ``[N, batch, A]`` (per dimension: :meth:`log_prob_entropy` sums them)."""
        std = self.params["log_std"].exp().unsqueeze(1).expand_as(action_param)
        return Normal(action_param, std, validate_args=False)

    def log_prob_entropy(self, action_param: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-probabilities of ``actions`` and the entropies, ``[N, batch]`` each."""
        if self.discrete:
            log_p = log_probabilities(action_param)
            return categorical_log_prob(log_p, actions), categorical_entropy(log_p)
        dist = self.normal(action_param)
        return dist.log_prob(actions).sum(-1), dist.entropy().sum(-1)


# ``Categorical(logits=...)``'s quantities, the same torch operations without the distribution object: its
# construction, argument broadcasting and lazy properties were ~10% of a PPO CartPole group's update (5 seeds).


def log_probabilities(logits: torch.Tensor) -> torch.Tensor:
    """The normalized logits ``Categorical`` keeps: log-probabilities over the last axis."""
    return logits - logits.logsumexp(-1, keepdim=True)


def categorical_log_prob(log_p: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """``Categorical.log_prob(actions)``: ``actions`` ``[N, batch]`` indexes the last axis of ``log_p``."""
    return log_p.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)


def categorical_entropy(log_p: torch.Tensor) -> torch.Tensor:
    """``Categorical.entropy()``: minus the sum of ``p log p``, the log-probabilities clamped to a finite minimum."""
    return -(log_p.clamp(min=torch.finfo(log_p.dtype).min) * log_p.softmax(-1)).sum(-1)


def action_space_kind(space: spaces.Space[Any]) -> str:
    """'discrete' or 'box': the action spaces a seed group samples (else one line naming them)."""
    if isinstance(space, spaces.Discrete):
        return "discrete"
    if isinstance(space, spaces.Box):
        return "box"
    raise ValueError(f"env: seed groups support Discrete and Box action spaces, got {type(space).__name__}")

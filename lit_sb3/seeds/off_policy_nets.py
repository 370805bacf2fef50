"""SB3's off-policy MLP policies (DQN's, SAC's, TD3's and sb3-contrib's QR-DQN's and TQC's ``MlpPolicy``) for N
seeds at once: the networks and their targets as stacked parameters ``[N, ...]`` (named as the policy's
``named_parameters``), and their batched forwards.

Every forward takes ``[N, batch, ...]`` tensors and runs the policy's own template modules through
:func:`lit_sb3.seeds.stacked.batched_forward`; the SAC actor's squashed Gaussian is SB3's own
``SquashedDiagGaussianDistribution`` on the flattened ``[N * batch, A]`` parameters, reparameterized with each seed's
noise (drawn as ``Normal.rsample`` draws it in the seed's own run).
"""

from __future__ import annotations

from typing import cast

import torch
from sb3_contrib.qrdqn.policies import QRDQNPolicy
from sb3_contrib.tqc.policies import TQCPolicy
from stable_baselines3.common.distributions import SquashedDiagGaussianDistribution
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.preprocessing import preprocess_obs
from stable_baselines3.dqn.policies import DQNPolicy
from stable_baselines3.sac.policies import LOG_STD_MAX, LOG_STD_MIN, SACPolicy
from stable_baselines3.td3.policies import TD3Policy
from torch import nn

from lit_sb3.seeds.stacked import Stacked, batched_forward, check_batchable, stack_parameters

#: the policy classes whose MLP form is batched, and the online -> target network names of each
TARGET_NETWORKS: dict[type[BasePolicy], dict[str, str]] = {
    DQNPolicy: {"q_net": "q_net_target"},
    QRDQNPolicy: {"quantile_net": "quantile_net_target"},
    SACPolicy: {"critic": "critic_target"},
    TQCPolicy: {"critic": "critic_target"},  # SAC's actor; quantile critics laid out as SAC's critics
    TD3Policy: {"critic": "critic_target", "actor": "actor_target"},
}


class StackedOffPolicy:
    """N copies of one off-policy SB3 policy (same spaces and arguments) as stacked parameters.

    ``template`` is the first copy: its modules give the structure; ``params`` are the stacked leaves (the online
    networks' require grad, the targets' do not).
    """

    def __init__(self, policies: list[BasePolicy]) -> None:
        template = policies[0]
        kind = next((cls for cls in TARGET_NETWORKS if type(template) is cls), None)
        if kind is None or getattr(template, "use_sde", False):
            raise ValueError(
                f"policy: seed groups batch the MlpPolicy of DQN, QR-DQN, SAC, TQC and TD3 (no gSDE), not "
                f"{type(template).__name__}"
            )
        if getattr(template, "share_features_extractor", False):
            raise ValueError("policy_kwargs: seed groups batch share_features_extractor=False only")
        for name, module in template.named_children():
            for part_name, part in module.named_children():
                check_batchable(part, f"policy ({name}.{part_name})")
        self.template = template
        self.kind = kind
        self.n_seeds = len(policies)
        self.observation_space = template.observation_space
        self.params: Stacked = stack_parameters(policies)
        for target in TARGET_NETWORKS[kind].values():
            for tensor in self.network(target):
                tensor.requires_grad_(False)

    def network(self, name: str) -> list[torch.Tensor]:
        """The stacked parameters of one network (``"critic"``, ``"actor_target"``, ...), in the policy's order."""
        return [value for key, value in self.params.items() if key.startswith(name + ".")]

    def target_pairs(self) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """(online, target) parameters of every target network, aligned."""
        online: list[torch.Tensor] = []
        target: list[torch.Tensor] = []
        for source, copy in TARGET_NETWORKS[self.kind].items():
            online += self.network(source)
            target += self.network(copy)
        return online, target

    def forward(self, module: nn.Module, prefix: str, x: torch.Tensor, params: Stacked | None = None) -> torch.Tensor:
        """``module`` (a template network) on ``x`` ``[N, batch, ...]`` with the stacked parameters under ``prefix``
        (``params``: in place of the stacked ones)."""
        return batched_forward(module, self.params if params is None else params, prefix, x)

    def features(self, obs: torch.Tensor) -> torch.Tensor:
        """``[N, batch, *obs_shape]`` observations as the networks read them: SB3's preprocessing, flattened."""
        n, batch = obs.shape[:2]
        flat = preprocess_obs(obs.reshape(n * batch, *obs.shape[2:]), self.observation_space)
        assert isinstance(flat, torch.Tensor)
        return flat.reshape(n, batch, -1)

    def q_values(self, obs: torch.Tensor, network: str = "q_net") -> torch.Tensor:
        """DQN: every action's value ``[N, batch, n_actions]`` (``network``: ``"q_net"`` or ``"q_net_target"``)."""
        module = getattr(self.template, network).q_net
        return self.forward(module, f"{network}.q_net.", self.features(obs))

    def quantiles(self, obs: torch.Tensor, network: str = "quantile_net") -> torch.Tensor:
        """QR-DQN: every action's quantiles ``[N, batch, n_quantiles, n_actions]`` (``network``: ``"quantile_net"``
        or ``"quantile_net_target"``), laid out as the single network's ``view`` lays them out."""
        module = getattr(self.template, network)
        out = self.forward(module.quantile_net, f"{network}.quantile_net.", self.features(obs))
        return out.reshape(*out.shape[:2], module.n_quantiles, int(module.action_space.n))

    def critics(
        self, obs: torch.Tensor, actions: torch.Tensor, network: str = "critic", params: Stacked | None = None
    ) -> tuple[torch.Tensor, ...]:
        """SAC / TD3: each critic's ``Q(s, a)`` ``[N, batch, 1]`` (TQC: its quantiles, ``[N, batch, n_quantiles]``);
        ``params`` replaces the stacked ones (detached copies: the actor's loss reads the critics without writing
        gradients into them)."""
        critic = getattr(self.template, network)
        q_input = torch.cat([self.features(obs), actions], dim=-1)
        stacked = self.params if params is None else params
        return tuple(
            self.forward(q_net, f"{network}.qf{index}.", q_input, stacked)
            for index, q_net in enumerate(critic.q_networks)
        )

    def detached(self, network: str) -> Stacked:
        """The stacked parameters of ``network``, detached (no gradient reaches them)."""
        return {key: value.detach() for key, value in self.params.items() if key.startswith(network + ".")}

    def td3_actions(self, obs: torch.Tensor, network: str = "actor") -> torch.Tensor:
        """TD3: the deterministic actor's actions in [-1, 1], ``[N, batch, A]``."""
        module = getattr(self.template, network).mu
        return self.forward(module, f"{network}.mu.", self.features(obs))

    def sac_actions(self, obs: torch.Tensor, noise: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """SAC (and TQC, whose actor is SAC's): squashed Gaussian actions ``[N, batch, A]`` (reparameterized with the
        standard normal ``noise``; None: the mode) and their log-probabilities ``[N, batch, 1]``."""
        actor = cast(SACPolicy, self.template).actor
        latent = self.forward(actor.latent_pi, "actor.latent_pi.", self.features(obs))
        mean = self.forward(actor.mu, "actor.mu.", latent)
        log_std = self.forward(cast(nn.Module, actor.log_std), "actor.log_std.", latent)
        log_std = torch.clamp(log_std, LOG_STD_MIN, LOG_STD_MAX)
        n, batch, dim = mean.shape
        dist = SquashedDiagGaussianDistribution(dim).proba_distribution(mean.reshape(-1, dim), log_std.reshape(-1, dim))
        normal = dist.distribution
        # torch's Normal.rsample, with each seed's noise in place of the global generator's
        gaussian = normal.loc if noise is None else normal.loc + noise.reshape(-1, dim) * normal.scale
        actions = torch.tanh(gaussian)
        log_prob = dist.log_prob(actions, gaussian)
        return actions.reshape(n, batch, dim), log_prob.reshape(n, batch, 1)

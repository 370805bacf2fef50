"""The gradient steps of DQN, QR-DQN, SAC, TQC and TD3 (and DDPG, TD3's special case) for a seed group: SB3's
``train`` on every seed's own minibatch at once.

Each step is the single run's step (see :mod:`lit_sb3.algorithms.dqn`, ``sac``, ``td3``) with lit_sb3's pure loss
functions over the seed axis (:mod:`lit_sb3.seeds.off_policy_losses`); each seed's loss depends only on its own
parameters, so the gradient of their sum is each seed's own gradient.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from lit_sb3.algorithms.dqn import DQN
from lit_sb3.algorithms.qrdqn import QRDQN
from lit_sb3.algorithms.sac import SAC
from lit_sb3.algorithms.td3 import TD3
from lit_sb3.algorithms.tqc import TQC
from lit_sb3.common import losses, quantile
from lit_sb3.common.off_policy import OffPolicyAlgorithm
from lit_sb3.seeds import off_policy_losses as batched
from lit_sb3.seeds.off_policy import BatchedOffPolicy
from lit_sb3.seeds.optim import BatchedAdam, BatchedOptimizer, batched_optimizer, clip_grad_norm_per_seed
from lit_sb3.seeds.replay import SeedSamples
from lit_sb3.seeds.streams import SeedStreams
from lit_sb3.seeds.transfer import to_device

if TYPE_CHECKING:
    from lit_sb3.seeds.group import SeedGroup


def _optimizer(model: OffPolicyAlgorithm, params: list[torch.Tensor]) -> BatchedOptimizer:
    """The batched counterpart of the policy's optimizer (its class and keyword arguments) on ``params``."""
    policy = model.policy
    assert policy is not None  # built with the model
    return batched_optimizer(policy.optimizer_class, dict(policy.optimizer_kwargs), params, model.lr_schedule(1))


class _Means:
    """Per-seed means of the statistics of one ``train`` call (SB3 logs each one's mean over its latest call)."""

    def __init__(self) -> None:
        self.sums: dict[str, torch.Tensor] = {}
        self.counts: dict[str, int] = {}

    def add(self, **values: torch.Tensor) -> None:
        for name, value in values.items():
            value = value.detach().reshape(-1)
            self.sums[name] = self.sums[name] + value if name in self.sums else value.clone()
            self.counts[name] = self.counts.get(name, 0) + 1

    def means(self) -> dict[str, torch.Tensor]:
        return {name: total / self.counts[name] for name, total in self.sums.items()}


class BatchedDQN(BatchedOffPolicy):
    """DQN: epsilon-greedy actions (one uniform draw per seed and vector step), Huber loss, gradient norms clipped per
    seed, target networks refreshed every ``target_update_interval`` env steps (QR-DQN's too: its subclass changes
    the network's output and the loss)."""

    template: DQN | QRDQN
    network = "q_net"  # the online network's name in the policy (its target: ``network + "_target"``)

    def _build_optimizers(self) -> dict[str, BatchedOptimizer]:
        self.exploration_rate = 0.0
        return {"policy.optimizer": _optimizer(self.template, self.net.network(self.network))}

    def action_values(self, obs: torch.Tensor) -> torch.Tensor:
        """Every action's value ``[N, batch, n_actions]``, whose argmax is the greedy action (DQN's Q-values)."""
        return self.net.q_values(obs)

    def policy_actions(self, obs: torch.Tensor, draws: torch.Tensor | None) -> torch.Tensor:
        return self.action_values(obs).argmax(dim=-1)

    def greedy_scores(self, obs: np.ndarray) -> torch.Tensor | None:
        tensor = to_device([obs], self.device)[0].reshape(self.n_seeds, -1, *self.obs_shape)
        with torch.no_grad():
            return self.action_values(tensor)

    def explore(self, actions: np.ndarray, deterministic: bool, streams: SeedStreams) -> np.ndarray:
        if deterministic:
            return actions
        # one np.random.rand() per vector step, as the seed's own run draws it: all of a seed's envs explore together
        for seed_index, rng in enumerate(streams.numpy):
            if rng.rand() < self.exploration_rate:  # only an exploring seed draws from its action space
                space = self.action_spaces[seed_index]
                actions[seed_index] = [space.sample() for _ in range(actions.shape[1])]
        return actions

    def on_vector_step(self) -> None:
        model = self.template
        self.exploration_rate = model.exploration.exploration_schedule(self.group.progress_remaining)
        if self.n_calls % max(model.target_update_interval // self.n_envs, 1) == 0:
            self.soft_update_targets(model.tau)
        for seed_index in range(self.n_seeds):
            self.group.record(seed_index, "rollout/exploration_rate", self.exploration_rate)

    def extra_state(self) -> dict[str, Any]:
        return {"exploration_rate": self.exploration_rate}

    def load_extra_state(self, state: dict[str, Any]) -> None:
        self.exploration_rate = float(state["exploration_rate"])

    def gradient_steps(self, gradient_steps: int, batch_size: int) -> dict[str, torch.Tensor]:
        model = self.template
        (optimizer,) = self.optimizers.values()
        means = _Means()
        for indices in self.minibatch_indices(gradient_steps, batch_size):
            data, _ = self.sample(indices)
            loss = self.loss(data)
            optimizer.zero_grad()
            loss.sum().backward()
            if model.max_grad_norm is not None:
                clip_grad_norm_per_seed(optimizer.params, model.max_grad_norm)
            optimizer.step()
            means.add(loss=loss)
        self.n_updates += gradient_steps
        return means.means()

    def loss(self, data: SeedSamples) -> torch.Tensor:
        """Each seed's Huber loss on its minibatch, ``[N]``."""
        with torch.no_grad():
            next_q = self.net.q_values(data.next_observations, "q_net_target")
            target_q = batched.dqn_target(data.rewards, data.dones, self.template.gamma, next_q)
        return batched.q_huber_loss(self.net.q_values(data.observations), data.actions, target_q)

    def _export_parts(self, index: int, model: Any) -> None:
        model.exploration.exploration_rate = self.exploration_rate
        model.target_networks.n_calls = self.n_calls


class BatchedQRDQN(BatchedDQN):
    """QR-DQN: DQN's acting, exploration, target refresh and clipping; the greedy action has the largest mean
    quantile, and the loss is the quantile Huber loss towards the target network's quantiles of the greedy next
    action (sb3-contrib's ``train``)."""

    template: QRDQN
    network = "quantile_net"

    def __init__(self, group: SeedGroup) -> None:
        super().__init__(group)
        self.taus = quantile.quantile_midpoints(self.template.n_quantiles, self.device)

    def action_values(self, obs: torch.Tensor) -> torch.Tensor:
        """The mean of every action's quantiles (the single policy's ``_predict``), ``[N, batch, n_actions]``."""
        return self.net.quantiles(obs).mean(dim=2)

    def loss(self, data: SeedSamples) -> torch.Tensor:
        """Each seed's quantile Huber loss on its minibatch, ``[N]``."""
        model = self.template
        with torch.no_grad():
            next_quantiles = self.net.quantiles(data.next_observations, "quantile_net_target")
            target = batched.qrdqn_target(data.rewards, data.dones, model.gamma, next_quantiles)
        current = batched.taken_action_quantiles(self.net.quantiles(data.observations), data.actions)
        return batched.quantile_huber_loss(current, target, self.taus)


class BatchedSAC(BatchedOffPolicy):
    """SAC: squashed Gaussian actions from each seed's noise, twin critics, each seed's own temperature (TQC's too:
    its subclass changes the critics' target and the two losses)."""

    template: SAC | TQC

    def _build_optimizers(self) -> dict[str, BatchedOptimizer]:
        temperatures = [m.temperature for m in self.models]
        self.log_ent_coef: torch.Tensor | None = None
        optimizers = {
            "actor.optimizer": _optimizer(self.template, self.net.network("actor")),
            "critic.optimizer": _optimizer(self.template, self.net.network("critic")),
        }
        if temperatures[0].log_ent_coef is not None:
            stacked = torch.stack([t.log_ent_coef.detach() for t in temperatures if t.log_ent_coef is not None])
            self.log_ent_coef = stacked.requires_grad_(True)
            optimizers["ent_coef_optimizer"] = BatchedAdam([self.log_ent_coef], self.template.lr_schedule(1))
        else:
            self.fixed_ent_coef = torch.stack([t.ent_coef_tensor for t in temperatures])
        self.target_entropy = float(temperatures[0].target_entropy)
        return optimizers

    def extra_params(self) -> dict[str, torch.Tensor]:
        return {} if self.log_ent_coef is None else {"log_ent_coef": self.log_ent_coef}

    def action_draws(self, n_envs: int, deterministic: bool, streams: SeedStreams) -> torch.Tensor | None:
        return None if deterministic else streams.normal((n_envs, self.replay.action_dim))

    def policy_actions(self, obs: torch.Tensor, draws: torch.Tensor | None) -> torch.Tensor:
        actions, _ = self.net.sac_actions(obs, draws)
        return actions

    def ent_coef(self) -> torch.Tensor:
        """Each seed's temperature for this update, ``[N, 1]`` (detached)."""
        if self.log_ent_coef is None:
            return self.fixed_ent_coef.reshape(-1, 1)
        return self.log_ent_coef.detach().exp()

    def gradient_steps(self, gradient_steps: int, batch_size: int) -> dict[str, torch.Tensor]:
        model = self.template
        means = _Means()
        actor_opt, critic_opt = self.optimizers["actor.optimizer"], self.optimizers["critic.optimizer"]
        dim = self.replay.action_dim
        for step, indices in enumerate(self.minibatch_indices(gradient_steps, batch_size)):
            # the seed's two Gaussian draws of the step (the policy's action, then the next action), in that order
            noise = self.streams.normal((batch_size, dim))
            data, (noise, next_noise) = self.sample(indices, noise, self.streams.normal((batch_size, dim)))
            actions_pi, log_prob = self.net.sac_actions(data.observations, noise)
            ent_coef = self.ent_coef()
            if self.log_ent_coef is not None:
                ent_coef_loss = batched.entropy_coef_loss(self.log_ent_coef, log_prob, self.target_entropy)
                ent_opt = self.optimizers["ent_coef_optimizer"]
                ent_opt.zero_grad()
                ent_coef_loss.sum().backward()
                ent_opt.step()
                means.add(ent_coef_loss=ent_coef_loss)

            with torch.no_grad():
                next_actions, next_log_prob = self.net.sac_actions(data.next_observations, next_noise)
                target = self.critic_target(data, next_actions, next_log_prob, ent_coef)
            critic_loss = self.critic_loss(data, target)
            critic_opt.zero_grad()
            critic_loss.sum().backward()
            critic_opt.step()

            actor_loss = self.actor_loss(data, actions_pi, log_prob, ent_coef)
            actor_opt.zero_grad()
            actor_loss.sum().backward()
            actor_opt.step()

            if step % model.target_update_interval == 0:
                self.soft_update_targets(model.tau)
            means.add(actor_loss=actor_loss, critic_loss=critic_loss, ent_coef=ent_coef)
        self.n_updates += gradient_steps
        return means.means()

    def critic_target(
        self, data: SeedSamples, next_actions: torch.Tensor, next_log_prob: torch.Tensor, ent_coef: torch.Tensor
    ) -> torch.Tensor:
        """Each seed's soft clipped double-Q target, ``[N, batch, 1]``."""
        next_q = torch.cat(self.net.critics(data.next_observations, next_actions, "critic_target"), dim=-1)
        return batched.clipped_double_q_target(
            data.rewards, data.dones, self.template.gamma, next_q, next_log_prob, ent_coef
        )

    def critic_loss(self, data: SeedSamples, target: torch.Tensor) -> torch.Tensor:
        """Each seed's critic loss (half the summed MSE of its critics), ``[N]``."""
        return 0.5 * batched.critics_mse_loss(self.net.critics(data.observations, data.actions), target)

    def actor_loss(
        self, data: SeedSamples, actions_pi: torch.Tensor, log_prob: torch.Tensor, ent_coef: torch.Tensor
    ) -> torch.Tensor:
        """Each seed's actor loss through its critics' detached copies (SB3 freezes them), ``[N]``."""
        q_pi = torch.cat(self.net.critics(data.observations, actions_pi, params=self.net.detached("critic")), -1)
        return batched.sac_actor_loss(log_prob, q_pi, ent_coef)

    def _export_parts(self, index: int, model: Any) -> None:
        if self.log_ent_coef is not None:
            model.temperature.load_sb3_variables({"log_ent_coef": self.log_ent_coef[index].detach()})


class BatchedTQC(BatchedSAC):
    """TQC: SAC's actor, temperature and schedule; quantile critics, whose pooled target quantiles drop the largest
    ``top_quantiles_to_drop_per_net`` per critic (sb3-contrib's ``train``)."""

    template: TQC

    def __init__(self, group: SeedGroup) -> None:
        super().__init__(group)
        self.taus = quantile.quantile_midpoints(self.template.policy.critic.n_quantiles, self.device)

    def _quantiles(self, obs: torch.Tensor, actions: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        """Every critic's quantiles, ``[N, batch, n_critics, n_quantiles]`` (the single critic's ``stack``)."""
        return torch.stack(self.net.critics(obs, actions, **kwargs), dim=2)

    def critic_target(
        self, data: SeedSamples, next_actions: torch.Tensor, next_log_prob: torch.Tensor, ent_coef: torch.Tensor
    ) -> torch.Tensor:
        model = self.template
        next_quantiles = self._quantiles(data.next_observations, next_actions, network="critic_target")
        return batched.tqc_target(
            data.rewards,
            data.dones,
            model.gamma,
            next_quantiles,
            model.top_quantiles_to_drop_per_net,
            next_log_prob,
            ent_coef,
        )

    def critic_loss(self, data: SeedSamples, target: torch.Tensor) -> torch.Tensor:
        current = self._quantiles(data.observations, data.actions)
        # seed by seed: all seeds' pairwise tensor (batch x critics x quantiles x kept each) at once outgrows the
        # core's cache (5 seeds of the Zoo's Pendulum sizes, forward and backward: 31.9 ms at once, 25.2 in turn)
        return torch.cat(
            [
                batched.quantile_huber_loss(current[i : i + 1], target[i : i + 1], self.taus, sum_over_quantiles=False)
                for i in range(self.n_seeds)
            ]
        )

    def actor_loss(
        self, data: SeedSamples, actions_pi: torch.Tensor, log_prob: torch.Tensor, ent_coef: torch.Tensor
    ) -> torch.Tensor:
        quantiles_pi = self._quantiles(data.observations, actions_pi, params=self.net.detached("critic"))
        return batched.tqc_actor_loss(log_prob, quantiles_pi, ent_coef)


class BatchedTD3(BatchedOffPolicy):
    """TD3: deterministic actions plus each seed's action noise, target smoothing noise per seed, delayed actor and
    target updates."""

    template: TD3

    def _build_optimizers(self) -> dict[str, BatchedOptimizer]:
        return {
            "actor.optimizer": _optimizer(self.template, self.net.network("actor")),
            "critic.optimizer": _optimizer(self.template, self.net.network("critic")),
        }

    def policy_actions(self, obs: torch.Tensor, draws: torch.Tensor | None) -> torch.Tensor:
        return self.net.td3_actions(obs)  # TD3 explores through its action noise only

    def gradient_steps(self, gradient_steps: int, batch_size: int) -> dict[str, torch.Tensor]:
        model = self.template
        means = _Means()
        actor_opt, critic_opt = self.optimizers["actor.optimizer"], self.optimizers["critic.optimizer"]
        smoothing = model.target_policy_noise > 0 and model.target_noise_clip > 0
        for indices in self.minibatch_indices(gradient_steps, batch_size):
            self.n_updates += 1
            # the seed's own run draws the smoothing noise as torch.empty_like(actions).normal_(0, sigma)
            shape = (batch_size, self.replay.action_dim)
            draws = [self.streams.normal(shape, model.target_policy_noise)] if smoothing else []
            data, noise = self.sample(indices, *draws)
            with torch.no_grad():
                next_actions = self.net.td3_actions(data.next_observations, "actor_target")
                if smoothing:
                    next_actions = losses.smoothed_target_actions(next_actions, noise[0], model.target_noise_clip)
                next_q = torch.cat(self.net.critics(data.next_observations, next_actions, "critic_target"), dim=-1)
                target_q = batched.clipped_double_q_target(data.rewards, data.dones, model.gamma, next_q)
            critic_loss = batched.critics_mse_loss(self.net.critics(data.observations, data.actions), target_q)
            critic_opt.zero_grad()
            critic_loss.sum().backward()
            critic_opt.step()
            means.add(critic_loss=critic_loss)

            if self.n_updates % model.policy_delay == 0:
                critic = self.net.detached("critic")
                q1 = self.net.critics(data.observations, self.net.td3_actions(data.observations), params=critic)[0]
                actor_loss = -q1.mean(dim=(1, 2))
                actor_opt.zero_grad()
                actor_loss.sum().backward()
                actor_opt.step()
                self.soft_update_targets(model.tau)
                means.add(actor_loss=actor_loss)
        return means.means()

"""PPO and A2C for a seed group: one policy forward per env step for all N x n_envs envs, one rollout buffer with
the seeds side by side, and one batched update per minibatch (each seed its own minibatch order, advantage
normalization, gradient-norm clipping and ``target_kl`` early stop).

The losses are lit_sb3's own (:func:`lit_sb3.common.ppo_update.ppo_loss`, :func:`lit_sb3.algorithms.a2c.a2c.a2c_loss`),
written over the seed axis (:mod:`lit_sb3.seeds.on_policy_losses`, the vmapped losses bit for bit); the
hyperparameters and schedules are read from seed 0's ordinary model, so they are validated and defaulted as the
single run's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.preprocessing import get_action_dim
from stable_baselines3.common.type_aliases import RolloutBufferSamples
from stable_baselines3.common.utils import explained_variance

from lit_sb3.seeds import on_policy_losses
from lit_sb3.seeds.actor_critic import StackedActorCritic, categorical_log_prob, log_probabilities
from lit_sb3.seeds.group import BatchedAlgorithm
from lit_sb3.seeds.optim import batched_optimizer, clip_grad_norm_per_seed
from lit_sb3.seeds.stacked import load_slice, module_slice, set_slice
from lit_sb3.seeds.streams import SeedStreams, categorical_sample, gaussian
from lit_sb3.seeds.transfer import to_device, to_host

if TYPE_CHECKING:
    from lit_sb3.seeds.group import SeedGroup


class SeedMeans:
    """Per-seed running means of update statistics (``[N]`` sums and counts on the group's device; only the seeds in
    ``where`` count)."""

    def __init__(self, n_seeds: int, device: torch.device) -> None:
        self.n_seeds, self.device = n_seeds, device
        self.sums: dict[str, torch.Tensor] = {}
        self.counts: dict[str, torch.Tensor] = {}

    def add(self, values: dict[str, torch.Tensor], where: torch.Tensor) -> None:
        where = where.to(self.device)
        weight = where.to(torch.float32)
        for key, value in values.items():
            value = value.detach().float()
            if key not in self.sums:
                self.sums[key] = torch.zeros(self.n_seeds, device=self.device)
                self.counts[key] = torch.zeros(self.n_seeds, device=self.device)
            self.sums[key] = torch.where(where, self.sums[key] + value, self.sums[key])
            self.counts[key] = self.counts[key] + weight

    def start_over(self, key: str, where: torch.Tensor) -> None:
        if key in self.sums:
            where = where.to(self.device)
            self.sums[key] = torch.where(where, 0.0, self.sums[key])
            self.counts[key] = torch.where(where, 0.0, self.counts[key])

    def means(self) -> list[dict[str, float]]:
        """Each seed's means (one copy to the host for all seeds)."""
        keys = list(self.sums)
        host = to_host([*(self.sums[k] for k in keys), *(self.counts[k] for k in keys)])
        sums, counts = host[: len(keys)], host[len(keys) :]
        return [
            {
                key: float(np.float32(total[index]) / np.float32(count[index]))
                for key, total, count in zip(keys, sums, counts)
                if count[index] > 0
            }
            for index in range(self.n_seeds)
        ]


class BatchedOnPolicy(BatchedAlgorithm):
    """The rollout and update loop shared by PPO and A2C; subclasses give the loss and the early stop."""

    def __init__(self, group: SeedGroup) -> None:
        super().__init__(group)
        first = group.models[0]
        self.hp = first
        if first.use_sde:
            raise ValueError("use_sde: seed groups do not batch gSDE exploration yet; use_sde=False")
        if first.rollout_buffer_class is not None or first.rollout_buffer_kwargs:
            raise ValueError(
                "rollout_buffer_class: seed groups use SB3's RolloutBuffer (no custom buffer class/kwargs)"
            )
        self.net = StackedActorCritic([m.policy for m in group.models])
        self.device = group.device
        space = first.action_space
        # a draw per probability (torch.multinomial's) or per action dimension (Normal.rsample's)
        self.noise_width = int(space.n) if isinstance(space, spaces.Discrete) else get_action_dim(space)
        optimizer = first.policy.optimizer
        settings = {k: v for k, v in optimizer.defaults.items() if k != "lr"}
        self.optimizer = batched_optimizer(type(optimizer), settings, self.net.parameters(), first.lr_schedule(1.0))
        n_seeds, per_seed = group.n_seeds, group.env.envs_per_seed
        self.n_seeds, self.per_seed = n_seeds, per_seed
        self.buffer = RolloutBuffer(
            first.n_steps,
            first.observation_space,
            first.action_space,
            device="cpu",
            gamma=first.gamma,
            gae_lambda=first.gae_lambda,
            n_envs=n_seeds * per_seed,
        )
        self.n_updates = [0] * n_seeds

    # ------------------------------------------------------------------ acting

    def _obs(self, obs: np.ndarray | torch.Tensor) -> torch.Tensor:
        """``[N * n_envs, ...]`` or ``[N, n_envs, ...]`` observations as ``[N, n_envs, ...]`` on the device."""
        shape = self.hp.observation_space.shape
        return torch.as_tensor(obs, device=self.device).reshape(self.n_seeds, -1, *shape)

    def _draws(self, obs: np.ndarray, streams: SeedStreams) -> torch.Tensor:
        """Each seed's noise for one action per env of ``obs``, ``[N, n_envs, A]``, from its own host generator, as
        the policy's distribution draws it in the seed's own run (``Categorical.sample``, ``Normal.rsample``)."""
        n_envs = obs.size // (self.n_seeds * int(np.prod(self.hp.observation_space.shape)))
        shape = (n_envs, self.noise_width)
        return streams.exponential(shape) if self.net.discrete else streams.normal(shape)

    def _sample(self, action_param: torch.Tensor, draws: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Actions from the draws of :meth:`_draws` and their log-probabilities ``[N, n_envs]`` (on the device)."""
        if self.net.discrete:
            log_p = log_probabilities(action_param)
            actions = categorical_sample(log_p.softmax(-1), draws)
            return actions, categorical_log_prob(log_p, actions)
        actions = gaussian(action_param, self.net.params["log_std"], draws)
        return actions, self.net.normal(action_param).log_prob(actions).sum(-1)

    def _env_actions(self, actions: np.ndarray) -> np.ndarray:
        space = self.hp.action_space
        if self.net.discrete:
            return actions
        return np.clip(actions, space.low, space.high)

    def greedy_scores(self, obs: np.ndarray) -> torch.Tensor | None:
        if not self.net.discrete:
            return None
        with torch.no_grad():
            logits = self.net.action_param(self._obs(obs))
            return log_probabilities(logits).softmax(-1)  # Categorical(logits).probs

    def act(self, obs: np.ndarray, deterministic: bool, streams: SeedStreams) -> np.ndarray:
        with torch.no_grad():
            if deterministic:  # SB3's modes: the most probable action (argmax of the probabilities), the mean
                scores = self.greedy_scores(obs)
                actions = self.net.action_param(self._obs(obs)) if scores is None else scores.argmax(-1)
            else:
                obs_on_device, draws = to_device([obs, self._draws(obs, streams)], self.device)
                action_param, _ = self.net.heads(self._obs(obs_on_device))
                actions, _ = self._sample(action_param, draws)
        return self._env_actions(to_host([actions])[0])

    # ------------------------------------------------------------------ the rollout

    def collect(self) -> bool:
        group, buffer, hp = self.group, self.buffer, self.hp
        buffer.reset()
        new_obs, dones = group.last_obs, group.last_episode_starts
        for _ in range(hp.n_steps):
            obs = group.last_obs
            assert obs is not None  # the group reset its envs at train start
            obs_on_device, draws = to_device([obs, self._draws(obs, group.streams)], self.device)  # one copy in
            with torch.no_grad():
                action_param, values = self.net.heads(self._obs(obs_on_device))
                actions, log_prob = self._sample(action_param, draws)
            flat_actions, values_out, log_prob_out = to_host(  # one copy out (two for integer actions)
                [actions.reshape(self.n_seeds * self.per_seed, *hp.action_space.shape), values, log_prob]
            )
            stepped = group.step_envs(self._env_actions(flat_actions))
            if stepped is None:
                return False
            new_obs, rewards, dones, infos = stepped
            self._bootstrap_truncations(rewards, dones, infos)
            stored = flat_actions.reshape(-1, 1) if self.net.discrete else flat_actions
            buffer.add(
                obs,
                stored,
                rewards,
                group.last_episode_starts,
                torch.from_numpy(values_out).reshape(-1),
                torch.from_numpy(log_prob_out).reshape(-1),
            )
            group.last_obs, group.last_episode_starts = new_obs, dones
        assert new_obs is not None  # the group reset its envs at train start
        with torch.no_grad():
            last_values = self.net.values(self._obs(new_obs)).reshape(-1)
        buffer.compute_returns_and_advantage(last_values=last_values.cpu(), dones=dones)
        return True

    def _bootstrap_truncations(self, rewards: np.ndarray, dones: np.ndarray, infos: list[dict[str, Any]]) -> None:
        """Episodes cut by a time limit get gamma * V(their last observation) added to the final reward (the
        product in float32, as lit_sb3's PPO forms it)."""
        truncated = [
            k
            for k, done in enumerate(dones)
            if done and infos[k].get("TimeLimit.truncated", False) and infos[k].get("terminal_observation") is not None
        ]
        if not truncated:
            return
        terminal = np.zeros((self.n_seeds * self.per_seed, *self.hp.observation_space.shape), dtype=np.float32)
        for k in truncated:
            terminal[k] = infos[k]["terminal_observation"]
        with torch.no_grad():
            values = self.net.values(self._obs(terminal)).reshape(-1).cpu()
        for k in truncated:
            rewards[k] += (self.hp.gamma * values[k]).item()

    def _rollout(self) -> RolloutBufferSamples:
        """The rollout as ``[N, n_envs * n_steps, ...]`` tensors, each seed's envs one after another (SB3's order)."""
        steps, n, e = self.hp.n_steps, self.n_seeds, self.per_seed

        def per_seed(tensor: torch.Tensor) -> torch.Tensor:
            rest = tensor.shape[2:]
            return tensor.reshape(steps, n, e, *rest).movedim(0, 2).reshape(n, e * steps, *rest)

        buffer = self.buffer
        arrays = [buffer.observations, buffer.actions, buffer.values, buffer.log_probs, buffer.advantages]
        observations, actions, values, log_probs, advantages, returns = (
            per_seed(t) for t in to_device([*arrays, buffer.returns], self.device)
        )
        actions = actions.squeeze(-1).long() if self.net.discrete else actions
        return RolloutBufferSamples(observations, actions, values, log_probs, advantages, returns)

    # ------------------------------------------------------------------ the update

    def loss(self, batch: RolloutBufferSamples) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Each seed's loss ``[N]`` on its minibatch (``[N, batch, ...]`` fields) and the logged terms."""
        raise NotImplementedError

    def _stops(self, terms: dict[str, torch.Tensor]) -> torch.Tensor:
        """Seeds whose update stops at this minibatch, before its step (PPO's ``target_kl``)."""
        return torch.zeros(self.n_seeds, dtype=torch.bool)

    def _start_update(self, progress: float) -> None:
        """Hook: per-update settings from the progress remaining (PPO's clip ranges)."""

    def update(self) -> None:
        hp, progress = self.hp, self.group.progress_remaining
        self.optimizer.lr = hp.lr_schedule(progress)
        self._start_update(progress)
        data = self._rollout()
        size = data.advantages.shape[1]
        batch_size = hp.batch_size or size
        active = torch.ones(self.n_seeds, dtype=torch.bool)  # on the host: it steers the loop
        means = SeedMeans(self.n_seeds, self.device)
        last_loss = torch.full((self.n_seeds,), float("nan"), device=self.device)
        epochs = torch.zeros(self.n_seeds, dtype=torch.long)
        seed_rows = torch.arange(self.n_seeds, device=self.device).unsqueeze(1)
        for _ in range(hp.n_epochs):
            epochs += active.long()
            means.start_over("approx_kl", active)  # SB3 logs the last epoch's mean KL (the other terms: all epochs')
            # SB3's RolloutBuffer.get: a new order per epoch (A2C: the whole rollout in it), drawn by the seeds that
            # go on (a seed that stopped draws no further order, as its own run breaks out of its epochs)
            order = torch.as_tensor(self.group.streams.permutations(size, active.tolist()), device=self.device)
            for start in range(0, size, batch_size):
                index = order[:, start : start + batch_size]
                batch = RolloutBufferSamples(*(field[seed_rows, index] for field in data))
                loss, terms = self.loss(batch)
                means.add(terms, active)
                stepping = active & ~self._stops(terms)
                if stepping.any():
                    self.optimizer.zero_grad()
                    loss.sum().backward()
                    clip_grad_norm_per_seed(self.optimizer.params, hp.max_grad_norm)
                    self.optimizer.step(None if bool(stepping.all()) else stepping)
                    last_loss = torch.where(stepping.to(self.device), loss.detach(), last_loss)
                active = stepping
                if not active.any():
                    break
            if not active.any():
                break
        self._record(means, last_loss, epochs, progress)

    def _record(self, means: SeedMeans, last_loss: torch.Tensor, epochs: torch.Tensor, progress: float) -> None:
        group, buffer = self.group, self.buffer
        values = buffer.values.reshape(self.hp.n_steps, self.n_seeds, self.per_seed)
        returns = buffer.returns.reshape(self.hp.n_steps, self.n_seeds, self.per_seed)
        log_std = self.net.params.get("log_std")
        log_std_host = None if log_std is None else log_std.detach().cpu()
        seed_means, last_losses = means.means(), to_host([last_loss])[0]
        for i in range(self.n_seeds):
            self.n_updates[i] += int(epochs[i])
            for key, value in seed_means[i].items():
                group.record(i, f"train/{key}", value)
            self._record_extra(i, float(last_losses[i]), progress)
            group.record(
                i, "train/explained_variance", explained_variance(values[:, i].flatten(), returns[:, i].flatten())
            )
            if log_std_host is not None:
                group.record(i, "train/std", torch.exp(log_std_host[i]).mean().item())
            group.record(i, "train/n_updates", self.n_updates[i])
            group.record(i, "train/learning_rate", self.optimizer.lr)

    def _record_extra(self, index: int, last_loss: float, progress: float) -> None:
        """Hook: a variant's own ``train/*`` entries."""

    # ------------------------------------------------------------------ state

    def seed_state(self, index: int) -> dict[str, Any]:
        return {
            "policy": module_slice(self.net.params, index),
            "optimizer": self.optimizer.seed_state(index),
            "n_updates": self.n_updates[index],
        }

    def load_seed_state(self, index: int, state: dict[str, Any]) -> None:
        set_slice(self.net.params, index, state["policy"])
        self.optimizer.load_seed_state(index, state["optimizer"])
        self.n_updates[index] = int(state["n_updates"])

    def export(self, index: int, model: Any) -> None:
        load_slice(self.net.params, index, model.policy)
        optimizer = model.policy.optimizer
        groups = [
            {**g, "params": list(range(len(g["params"]))), "lr": self.optimizer.lr} for g in optimizer.param_groups
        ]
        optimizer.load_state_dict({"state": self.optimizer.torch_state(index), "param_groups": groups})
        model._n_updates = self.n_updates[index]


class BatchedPPO(BatchedOnPolicy):
    """PPO (clip) for a seed group: lit_sb3's ``ppo_loss`` per seed, ``target_kl`` per seed."""

    def _start_update(self, progress: float) -> None:
        hp = self.hp
        self.clip_range = hp.clip_range(progress)
        self.clip_range_vf = hp.clip_range_vf(progress) if hp.clip_range_vf is not None else None

    def loss(self, batch: RolloutBufferSamples) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        hp = self.hp
        action_param, values = self.net.heads(batch.observations)
        log_prob, entropy = self.net.log_prob_entropy(action_param, batch.actions)
        return on_policy_losses.ppo_loss(
            values,
            log_prob,
            entropy,
            batch,
            clip_range=self.clip_range,
            clip_range_vf=self.clip_range_vf,
            normalize_advantage=hp.normalize_advantage,
            ent_coef=hp.ent_coef,
            vf_coef=hp.vf_coef,
        )

    def _stops(self, terms: dict[str, torch.Tensor]) -> torch.Tensor:
        target_kl = self.hp.target_kl
        if target_kl is None:
            return super()._stops(terms)
        return terms["approx_kl"].cpu() > 1.5 * target_kl  # as SB3: the minibatch that crosses it is not applied

    def _record_extra(self, index: int, last_loss: float, progress: float) -> None:
        group = self.group
        if not np.isnan(last_loss):
            group.record(index, "train/loss", last_loss)
        group.record(index, "train/clip_range", self.clip_range)
        if self.clip_range_vf is not None:
            group.record(index, "train/clip_range_vf", self.clip_range_vf)


class BatchedA2C(BatchedOnPolicy):
    """A2C for a seed group: one step per rollout on the whole rollout (in SB3's shuffled order, whose sums round as
    the seed's own run's do), lit_sb3's ``a2c_loss`` per seed."""

    def loss(self, batch: RolloutBufferSamples) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        hp = self.hp
        action_param, values = self.net.heads(batch.observations)
        log_prob, entropy = self.net.log_prob_entropy(action_param, batch.actions)
        return on_policy_losses.a2c_loss(
            values,
            log_prob,
            entropy,
            batch,
            normalize_advantage=hp.normalize_advantage,
            ent_coef=hp.ent_coef,
            vf_coef=hp.vf_coef,
        )

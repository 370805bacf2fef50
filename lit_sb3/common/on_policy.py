"""``OnPolicyAlgorithm``: one Lightning epoch = collect one rollout, then train on it (its minibatches are the
training "dataloader", :class:`RolloutMinibatches`)."""

from __future__ import annotations

import warnings
from collections import deque
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np
import torch
from gymnasium import spaces
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.buffers import DictRolloutBuffer, RolloutBuffer
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.type_aliases import GymEnv
from stable_baselines3.common.utils import explained_variance, obs_as_tensor, update_learning_rate
from stable_baselines3.common.vec_env import VecEnv

from lit_sb3.common.base import BaseAlgorithm
from lit_sb3.common.optimizers import flush_subnormal_moments
from lit_sb3.common.rollout_loop import RolloutLoop
from lit_sb3.common.saved_state import CHECKPOINT, StateFormat
from lit_sb3.common.utils import CheckFailed, check_finite, env_actions, unchecked_distributions
from lit_sb3.lightning_compat import hook_calls


class RolloutMinibatches:
    """The training "dataloader" of an on-policy algorithm: ``n_epochs`` shuffled passes over the current rollout.

    Lightning iterates it once per epoch, after ``on_train_epoch_start`` has filled the rollout buffer. It stops
    early when the algorithm asks (``target_kl``) or when the rollout was cut short by a callback.

    It has a length on purpose: Lightning prefetches a batch from iterables of unknown length when it sets the
    data up, which would read the first epoch's rollout before it is collected.
    """

    def __init__(self, algorithm: OnPolicyAlgorithm) -> None:
        self.algorithm = algorithm

    def __len__(self) -> int:
        algo = self.algorithm
        env = algo.env
        rollout = algo.n_steps * (env.num_envs if env is not None else algo.n_envs or 1)
        batch = algo._minibatch_size() or rollout
        return algo.n_epochs * -(-rollout // batch)

    def __iter__(self) -> Iterator[Any]:
        algo, loop, buffer = self.algorithm, self.algorithm._loop, self.algorithm.rollout_buffer
        if not loop.collected or buffer is None:  # a collected rollout is in the buffer
            return
        for epoch in range(algo.n_epochs):
            if loop.stop_updates:  # before buffer.get draws the next epoch's order: SB3 breaks out without it
                return
            loop.epoch = epoch
            for batch in buffer.get(algo._minibatch_size()):
                if loop.stop_updates:
                    return
                yield batch


class OnPolicyAlgorithm(BaseAlgorithm):
    """Shared rollout collection (GAE, time-limit bootstrapping, SB3 callbacks) for A2C, PPO and their variants.

    Subclasses implement ``training_step`` on one minibatch and may override the small hooks
    ``_policy_step`` / ``_store_transition`` (MaskablePPO, RecurrentPPO) instead of the loop. The order in which
    Lightning calls the loop's hooks, and the state they share, are documented at
    :class:`~lit_sb3.common.rollout_loop.RolloutLoop`.
    """

    default_log_interval: ClassVar[int] = 1
    epoch_is_rollout: ClassVar[bool] = True
    multi_process_update: ClassVar[bool] = True  # TRPO's natural-gradient step is not
    policy: ActorCriticPolicy | MaskableActorCriticPolicy  # None until the networks are built (as SB3 declares it)

    def __init__(
        self,
        policy: Any,
        learning_rate: Any,
        n_steps: int,
        gamma: float,
        gae_lambda: float,
        ent_coef: float,
        vf_coef: float,
        max_grad_norm: float,
        use_sde: bool,
        sde_sample_freq: int,
        rollout_buffer_class: type[RolloutBuffer] | None,
        rollout_buffer_kwargs: dict[str, Any] | None,
        stats_window_size: int,
        policy_kwargs: dict[str, Any] | None,
        verbose: int,
        seed: int | None,
        device: torch.device | str,
        env: GymEnv | str | None,
        batch_size: int | None = None,
        n_epochs: int = 1,
        normalize_advantage: bool = False,
    ) -> None:
        super().__init__(policy, learning_rate, policy_kwargs, stats_window_size, verbose, seed, device, env)
        self.n_steps = n_steps
        self.gamma = gamma
        self.gae_lambda = gae_lambda
        self.ent_coef = ent_coef
        self.vf_coef = vf_coef
        self.max_grad_norm = max_grad_norm
        self.use_sde = use_sde
        self.sde_sample_freq = sde_sample_freq
        self.rollout_buffer_class = rollout_buffer_class
        self.rollout_buffer_kwargs = dict(rollout_buffer_kwargs or {})
        self.batch_size = batch_size
        self.n_epochs = n_epochs
        self.normalize_advantage = normalize_advantage
        self.rollout_buffer: RolloutBuffer | None = None
        self._loop = RolloutLoop()
        self._n_ranks = 1  # processes collecting rollouts in parallel (multi-process training)

    # ------------------------------------------------------------------ checks and construction

    def _validate_hyperparameters(self) -> None:
        super()._validate_hyperparameters()
        checks = [
            ("n_steps", self.n_steps >= 1, ">= 1"),
            ("gamma", 0.0 <= self.gamma <= 1.0, "in [0, 1]"),
            ("gae_lambda", 0.0 <= self.gae_lambda <= 1.0, "in [0, 1]"),
            ("n_epochs", self.n_epochs >= 1, ">= 1"),
            ("max_grad_norm", self.max_grad_norm > 0, "> 0"),
        ]
        for name, ok, rule in checks:
            if not ok:
                raise ValueError(f"{name}: must be {rule}, got {getattr(self, name)}")

    def _policy_kwargs(self) -> dict[str, Any]:
        kwargs = super()._policy_kwargs()
        if self.use_sde:  # only then: policies without gSDE (MaskablePPO's) take no use_sde argument
            kwargs.setdefault("use_sde", True)
        return kwargs

    def _check_spaces(self, env: VecEnv) -> None:
        super()._check_spaces(env)  # SB3 checks the rollout's size as it is built, as the spaces
        rollout = self.n_steps * env.num_envs
        if rollout <= 1 and self.normalize_advantage:
            raise CheckFailed(
                f"`n_steps * n_envs` must be greater than 1. Currently n_steps={self.n_steps} and "
                f"n_envs={env.num_envs}. n_steps: n_steps * n_envs must be > 1 (advantage normalization needs two "
                "samples)"
            )

    def on_train_start(self) -> None:
        self._n_ranks = self.trainer.world_size
        super().on_train_start()

    def _setup_buffers(self, env: VecEnv) -> None:
        rollout = self.n_steps * env.num_envs
        if self.batch_size is not None and rollout % self.batch_size > 0:
            warnings.warn(  # SB3's words, then ours
                f"You have specified a mini-batch size of {self.batch_size}, but because the `RolloutBuffer` is of "
                f"size `n_steps * n_envs = {rollout}`, after every {rollout // self.batch_size} untruncated "
                f"mini-batches, there will be a truncated mini-batch of size {rollout % self.batch_size}\n"
                "We recommend using a `batch_size` that is a factor of `n_steps * n_envs`.\n"
                f"Info: (n_steps={self.n_steps} and n_envs={env.num_envs})",
                stacklevel=2,
            )
        _, observation_space, action_space = self._built()
        self.rollout_buffer = self._rollout_buffer_class()(
            self.n_steps,
            observation_space,
            action_space,
            device=self.device,
            gamma=self.gamma,
            gae_lambda=self.gae_lambda,
            n_envs=env.num_envs,
            **self.rollout_buffer_kwargs,
        )

    def _rollout_buffer(self) -> RolloutBuffer:
        """The rollout buffer, which exists once a fit started."""
        if self.rollout_buffer is None:
            raise RuntimeError(f"{type(self).__name__}: no rollout buffer before training starts")
        return self.rollout_buffer

    def _rollout_buffer_class(self) -> type[RolloutBuffer]:
        """The user's ``rollout_buffer_class``, else the default for the observation space (hook for variants)."""
        if self.rollout_buffer_class is not None:
            return self.rollout_buffer_class
        return DictRolloutBuffer if isinstance(self.observation_space, spaces.Dict) else RolloutBuffer

    def _minibatch_size(self) -> int | None:
        """Hook: size of the minibatches ``training_step`` receives (None: the whole rollout at once)."""
        return self.batch_size

    def configure_optimizers(self) -> Any:
        """The policy's own optimizer (its class and kwargs come from ``policy_kwargs``, as in SB3)."""
        flush_subnormal_moments(self.policy.optimizer)
        return self.policy.optimizer

    def train_dataloader(self) -> RolloutMinibatches:
        return RolloutMinibatches(self)

    @hook_calls.batch_already_on_device
    def transfer_batch_to_device(self, batch: Any, device: torch.device, dataloader_idx: int) -> Any:
        """Minibatches are slices of the rollout buffer, already on the module's device: skip Lightning's walk
        over them (a noticeable share of a short rollout's cost, e.g. A2C's 5 steps)."""
        return batch

    # ------------------------------------------------------------------ rollout collection

    def on_train_epoch_start(self) -> None:
        """Collect ``n_steps`` x ``n_envs`` transitions, then switch the policy to training mode."""
        loop = self._loop
        loop.stop_updates = False
        self._metrics.clear()
        if self.num_timesteps >= self.total_timesteps:
            loop.collected = False
            self._stop_training()
            return
        env = self._training_env()
        with unchecked_distributions():
            loop.collected = self.collect_rollouts(
                env, self._callback, self._rollout_buffer(), self.n_steps, **self._collect_kwargs()
            )
        if self._n_ranks > 1:  # a callback that stops one rank stops all (their updates are collective)
            loop.collected = self.trainer.strategy.reduce_boolean_decision(loop.collected, all=True)
        if not loop.collected:
            self._stop_training()
            return
        loop.iteration += 1
        if self.log_interval and loop.iteration % self.log_interval == 0:
            # as SB3 does: the dump comes between the rollout and its update, so train/* are the previous update's
            self.sb3_logger.record("time/iterations", loop.iteration, exclude="tensorboard")
            self.dump_logs()
        update_learning_rate(self.policy.optimizer, self.lr_schedule(self._current_progress_remaining))
        self._set_training_mode(True)

    def _collect_kwargs(self) -> dict[str, Any]:
        """Hook: extra ``collect_rollouts`` arguments of a variant (MaskablePPO's ``use_masking``)."""
        return {}

    def collect_rollouts(
        self, env: VecEnv, callback: BaseCallback | None, rollout_buffer: RolloutBuffer, n_rollout_steps: int
    ) -> bool:
        """Fill ``rollout_buffer`` with ``n_rollout_steps`` steps of every env; False when a callback stops training."""
        action_space = self._built()[2]
        self._set_training_mode(False)
        rollout_buffer.reset()
        if self.use_sde:
            self._reset_noise(env.num_envs)
        if callback is not None:
            callback.on_rollout_start()
        self._on_rollout_start(env)
        for n_steps in range(n_rollout_steps):
            if self.use_sde and self.sde_sample_freq > 0 and n_steps > 0 and n_steps % self.sde_sample_freq == 0:
                self._reset_noise(env.num_envs)
            with torch.no_grad():
                policy_actions, values, log_probs = self._policy_step(obs_as_tensor(self._last_obs, self.device))
            actions = policy_actions.cpu().numpy()
            new_obs, rewards, dones, infos = self._step_env(env, env_actions(actions, action_space, self.policy))
            self.num_timesteps += env.num_envs * self._n_ranks  # every rank steps its envs at once: a global count
            if callback is not None:
                callback.update_locals(locals())
                if not callback.on_step():
                    return False
            self._update_info_buffer(infos, dones)
            if isinstance(self.action_space, spaces.Discrete):
                actions = actions.reshape(-1, 1)
            self._bootstrap_truncations(rewards, dones, infos)
            self._store_transition(rollout_buffer, actions, rewards, values, log_probs)
            self._last_obs = new_obs
            self._last_episode_starts = dones
        with torch.no_grad():
            last_values = self._last_values(obs_as_tensor(new_obs, self.device), dones)
        rollout_buffer.compute_returns_and_advantage(last_values=last_values, dones=dones)
        self._loop.untrained = True
        if callback is not None:
            callback.update_locals(locals())
            callback.on_rollout_end()
        return True

    def _on_rollout_start(self, env: VecEnv) -> None:
        """Hook: per-rollout state (e.g. action masks, recurrent states)."""

    def _policy_step(self, obs: Any) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Hook: actions, values and log-probabilities for the current observations."""
        step: tuple[torch.Tensor, torch.Tensor, torch.Tensor] = self.policy(obs)
        return step

    def _last_values(self, obs: Any, dones: np.ndarray) -> torch.Tensor:
        """Hook: value of the observation after the rollout (bootstrap for GAE)."""
        return self.policy.predict_values(obs)

    def _store_transition(
        self,
        buffer: RolloutBuffer,
        actions: np.ndarray,
        rewards: np.ndarray,
        values: torch.Tensor,
        log_probs: torch.Tensor,
    ) -> None:
        """Hook: add one vector step to the rollout buffer."""
        if self._last_episode_starts is None:
            raise RuntimeError(f"{type(self).__name__}: a transition was stored before the env was reset")
        buffer.add(self._last_obs, actions, rewards, self._last_episode_starts, values, log_probs)

    def _bootstrap_truncations(self, rewards: np.ndarray, dones: np.ndarray, infos: list[dict[str, Any]]) -> None:
        """An episode cut by a time limit did not end: add gamma * V(last observation) to its final reward."""
        truncated = [
            i
            for i, done in enumerate(dones)
            if done and infos[i].get("TimeLimit.truncated", False) and infos[i].get("terminal_observation") is not None
        ]
        if not truncated:
            return
        for i in truncated:
            terminal_obs = self.policy.obs_to_tensor(infos[i]["terminal_observation"])[0]
            with torch.no_grad():
                bootstrap = self.gamma * self._value_of_terminal(terminal_obs, i)
            # the product in the value's dtype (float32), as SB3 forms it: gamma * V.item() in float64 rounds
            # differently in about one truncation in ten, and the runs drift apart from there on
            rewards[i] += bootstrap.item()

    def _value_of_terminal(self, obs: Any, env_index: int) -> torch.Tensor:
        """Hook: value of a truncated episode's last observation."""
        return self.policy.predict_values(obs)[0]

    # ------------------------------------------------------------------ update bookkeeping

    def update_on_rollout(self) -> None:
        """Run this algorithm's update on the gathered rollout once, outside Lightning's loop (SB3's ``train()``).

        The same minibatches and ``training_step`` as inside ``fit``; metrics are recorded by the fit loop only.
        """
        if self.rollout_buffer is None or not self.rollout_buffer.full:
            raise RuntimeError("update_on_rollout: no gathered rollout; call collect_rollouts (or learn) first")
        self._loop.stop_updates, self._loop.collected, self._loop.untrained = False, True, False
        self._set_training_mode(True)
        for batch_idx, batch in enumerate(RolloutMinibatches(self)):
            self.training_step(batch, batch_idx)

    def _record_update_stats(self) -> None:
        """Record what every on-policy update reports: tracked means, explained variance, std, n_updates."""
        record = self.sb3_logger.record
        means = self._metrics.means()
        check_finite(means, self.num_timesteps)
        for key, value in means.items():
            record(f"train/{key}", value)
        buffer = self._rollout_buffer()
        record("train/explained_variance", explained_variance(buffer.values.flatten(), buffer.returns.flatten()))
        log_std = getattr(self.policy, "log_std", None)  # a Gaussian policy's
        if log_std is not None:
            record("train/std", torch.exp(log_std).mean().item())
        record("train/n_updates", self._n_updates, exclude="tensorboard")
        record("train/learning_rate", self.lr_schedule(self._current_progress_remaining))

    def on_train_epoch_end(self) -> None:
        loop = self._loop
        loop.untrained = False
        if loop.collected:
            self._record_update_stats()  # dumped after the next rollout, as SB3 dumps them
        self._stop_if_budget_reached()

    def _mean_over_ranks(self, value: torch.Tensor) -> torch.Tensor:
        """The mean of ``value`` over the processes of a multi-process run (``value`` itself in one process)."""
        return self.trainer.strategy.reduce(value, reduce_op="mean") if self._n_ranks > 1 else value

    def _record_rollout_stats(self) -> None:
        """Episode statistics of all ranks (each rank keeps its own recent episodes)."""
        if self._n_ranks == 1:
            return super()._record_rollout_stats()
        gathered: list[list[Any]] = [[] for _ in range(self._n_ranks)]
        torch.distributed.all_gather_object(gathered, [list(self.ep_info_buffer), list(self.ep_success_buffer)])
        local = self.ep_info_buffer, self.ep_success_buffer
        self.ep_info_buffer = deque(ep for episodes, _ in gathered for ep in episodes)
        self.ep_success_buffer = deque(s for _, successes in gathered for s in successes)
        try:
            super()._record_rollout_stats()
        finally:
            self.ep_info_buffer, self.ep_success_buffer = local

    # ------------------------------------------------------------------ a checkpoint's extra state (zips: none)

    def _extra_state(self, fmt: StateFormat = CHECKPOINT) -> dict[str, Any]:
        state = super()._extra_state(fmt)
        if fmt == CHECKPOINT:
            state["iteration"] = self._loop.iteration
            # the last update's train/* values, recorded but dumped only after the next rollout (as SB3 does)
            logger = self.sb3_logger
            state["pending_logs"] = {
                key: (float(value), _exclusion(logger.name_to_excluded.get(key)))
                for key, value in logger.name_to_value.items()
                if _is_number(value)
            }
        return state

    def _load_extra_state(self, state: dict[str, Any], fmt: StateFormat = CHECKPOINT) -> None:
        super()._load_extra_state(state, fmt)
        if fmt == CHECKPOINT:
            self._loop.iteration = int(state.get("iteration", 0))
            for key, (value, excluded) in state.get("pending_logs", {}).items():
                self.sb3_logger.record(key, value, exclude=excluded or None)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.floating, np.integer)) and not isinstance(value, bool)


def _exclusion(excluded: str | tuple[str, ...] | None) -> tuple[str, ...]:
    if excluded is None:
        return ()
    return (excluded,) if isinstance(excluded, str) else tuple(excluded)

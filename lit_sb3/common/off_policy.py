"""``OffPolicyAlgorithm``: each training step collects ``train_freq`` env steps into a replay buffer, then updates.

A checkpoint keeps besides the base's state the replay buffer's filled part (unless ``checkpoint_replay_buffer`` is
False), the unnormalized last observation, the action noise and the running sums of the update statistics."""

from __future__ import annotations

import io
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from gymnasium import spaces
from lightning.pytorch.utilities.types import OptimizerLRScheduler
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.noise import ActionNoise, VectorizedActionNoise
from stable_baselines3.common.policies import BaseModel
from stable_baselines3.common.type_aliases import (
    GymEnv,
    ReplayBufferSamples,
    RolloutReturn,
    TrainFreq,
    TrainFrequencyUnit,
)
from stable_baselines3.common.utils import should_collect_more_steps, update_learning_rate
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from lit_sb3.common import replay, resume
from lit_sb3.common.base import BaseAlgorithm
from lit_sb3.common.off_policy_args import as_train_freq, check_off_policy_args
from lit_sb3.common.optimizers import flush_subnormal_moments
from lit_sb3.common.saved_state import CHECKPOINT, StateFormat
from lit_sb3.common.utils import CheckFailed, outside_autocast


class EnvSteps:
    """The training "dataloader" of an off-policy algorithm: an endless stream of ticks.

    Each tick is one ``training_step`` (collect ``train_freq`` env steps, then update); the algorithm stops the
    trainer itself when the env-step budget is spent or a callback asks to stop.
    """

    def __init__(self, algorithm: OffPolicyAlgorithm) -> None:
        self.algorithm = algorithm

    def __iter__(self) -> Iterator[int]:
        while True:
            yield self.algorithm.num_timesteps


class OffPolicyAlgorithm(BaseAlgorithm):
    """Shared replay-buffer loop of SAC, TD3, DDPG and DQN (and the sb3-contrib off-policy algorithms).

    Subclasses implement :meth:`gradient_updates` (``gradient_steps`` updates on replay samples); collection, warm-up,
    action noise and logging live here, and the loop drives the algorithm's parts (:mod:`lit_sb3.common.parts`:
    the entropy temperature's optimizer, epsilon-greedy actions, target networks refreshed every n env steps).
    """

    default_log_interval: ClassVar[int] = 4
    #: ``target_update_interval`` counts env steps (DQN, QR-DQN), not gradient steps (SAC, TQC)
    target_update_in_env_steps: ClassVar[bool] = False
    #: keep the replay buffer's filled part in Lightning checkpoints (exact resume); False for small checkpoints
    checkpoint_replay_buffer: bool = True

    def __init__(
        self,
        policy: Any,
        learning_rate: Any,
        buffer_size: int,
        learning_starts: int,
        batch_size: int,
        tau: float,
        gamma: float,
        train_freq: int | tuple[int, str],
        gradient_steps: int,
        action_noise: ActionNoise | None,
        replay_buffer_class: type[ReplayBuffer] | None,
        replay_buffer_kwargs: dict[str, Any] | None,
        optimize_memory_usage: bool,
        n_steps: int,
        policy_kwargs: dict[str, Any] | None,
        stats_window_size: int,
        verbose: int,
        seed: int | None,
        device: torch.device | str,
        env: GymEnv | str | None,
        use_sde: bool = False,
        sde_sample_freq: int = -1,
        use_sde_at_warmup: bool = False,
    ) -> None:
        super().__init__(policy, learning_rate, policy_kwargs, stats_window_size, verbose, seed, device, env)
        self.buffer_size = buffer_size
        self.learning_starts = learning_starts
        self.batch_size = batch_size
        self.tau = tau
        self.gamma = gamma
        self._train_freq_raw = train_freq
        self.train_freq = as_train_freq(train_freq)
        self.gradient_steps = gradient_steps
        self.action_noise = action_noise
        self.replay_buffer_class = replay_buffer_class
        self.replay_buffer_kwargs = dict(replay_buffer_kwargs or {})
        self.optimize_memory_usage = optimize_memory_usage
        self.n_steps = n_steps
        self.use_sde = use_sde
        self.sde_sample_freq = sde_sample_freq
        self.use_sde_at_warmup = use_sde_at_warmup
        self._dumped_at = (0, 0)  # (env steps, updates) at the last dump
        self.replay_buffer: ReplayBuffer | None = None
        self._vec_normalize_env: VecNormalize | None = None
        self._last_original_obs: Any = None
        self._pending_buffer_state: dict[str, Any] | None = None

    # ------------------------------------------------------------------ checks and construction

    def _validate_hyperparameters(self) -> None:
        super()._validate_hyperparameters()
        check_off_policy_args(
            self.learning_starts,
            self.gradient_steps,
            self.buffer_size,
            self.batch_size,
            self.tau,
            self.gamma,
            self.n_steps,
        )
        replay.check_buffer_class(self.replay_buffer_class)

    def _policy_kwargs(self) -> dict[str, Any]:
        kwargs = super()._policy_kwargs()
        if self.use_sde:
            kwargs["use_sde"] = True
        return kwargs

    def _check_spaces(self, env: VecEnv) -> None:
        super()._check_spaces(env)
        replay.check_replay_args(  # the replay buffer is built with the networks
            self.replay_buffer_class, env.observation_space, self.n_steps, self.optimize_memory_usage
        )
        interval = getattr(self, "target_update_interval", None)
        if self.target_update_in_env_steps and interval is not None and env.num_envs > max(interval, 1):
            warnings.warn(  # SB3's words (DQN, QR-DQN warn as they are built), then ours
                "The number of environments used is greater than the target network update interval "
                f"({env.num_envs} > {interval}), therefore the target network will be updated after each call to "
                f"env.step() which corresponds to {env.num_envs} steps. target_update_interval: counted in env "
                "steps over all envs",
                stacklevel=2,
            )

    def check_env(self, env: VecEnv) -> None:
        super().check_env(env)
        if self.train_freq.unit == TrainFrequencyUnit.EPISODE and env.num_envs > 1:
            raise CheckFailed(
                "You must use only one env when doing episodic training. "  # SB3's words, then ours
                f"train_freq: with {env.num_envs} envs the unit must be 'step' (episodes end at different times), "
                f"got {self._train_freq_raw!r}"
            )

    def _setup_buffers(self, env: VecEnv) -> None:
        """Create the replay buffer once (it persists across ``learn`` calls); point HER at the current env."""
        _, observation_space, action_space = self._built()
        if self.replay_buffer is None or self.replay_buffer.n_envs != env.num_envs:
            self.replay_buffer = replay.make_replay_buffer(
                self.replay_buffer_class,
                self.replay_buffer_kwargs,
                self.buffer_size,
                observation_space,
                action_space,
                env,
                self.device,
                self.optimize_memory_usage,
                self.n_steps,
                self.gamma,
            )
        self.replay_buffer.device = self.device
        replay.attach_env(self.replay_buffer, env)
        if self._pending_buffer_state is not None:
            replay.restore_buffer_arrays(self.replay_buffer, self._pending_buffer_state)
            self._pending_buffer_state = None
        noise = self.action_noise
        if noise is not None and env.num_envs > 1 and not isinstance(noise, VectorizedActionNoise):
            self.action_noise = VectorizedActionNoise(noise, env.num_envs)
        self._vec_normalize_env = self.get_vec_normalize_env()

    def on_fit_start(self) -> None:
        # Target networks are in eval mode by design; Lightning warns about that at every fit, so the flags are
        # raised just for its check and lowered again in on_train_start (no forward pass runs in between).
        self._eval_modules = [m for m in self.modules() if not m.training]
        for module in self._eval_modules:
            module.training = True

    def on_train_start(self) -> None:
        for module in getattr(self, "_eval_modules", []):
            module.training = False
        self._eval_modules = []
        env = self._training_env()
        resets = self._pending_resume is None and (self._last_obs is None or self._seeded_env is not env)
        super().on_train_start()
        if resets:
            replay.truncate_last_trajectory(self.replay_buffer, self.optimize_memory_usage)
            vec_norm = self._vec_normalize_env
            self._last_original_obs = vec_norm.get_original_obs() if vec_norm is not None else self._last_obs

    def train_dataloader(self) -> EnvSteps:
        return EnvSteps(self)

    # ------------------------------------------------------------------ the training step

    def training_step(self, batch: Any, batch_idx: int) -> None:
        """Collect ``train_freq`` env steps (or episodes), then ``gradient_steps`` updates past ``learning_starts``.

        With a small step-based ``train_freq`` one Lightning step runs several collect/update rounds (at least
        ``min_env_steps_per_training_step`` env steps): the RL sequence is unchanged, Lightning's per-step cost is
        paid once per round group instead of once per env step.
        """
        env = self._training_env()
        for _ in range(self._rounds_per_training_step(env.num_envs)):
            if not self._collect_and_update(env):
                self._stop_training()
                return
            if self.num_timesteps >= self.total_timesteps:
                break
        self._stop_if_budget_reached()

    #: env steps one Lightning training step covers at least (step-based ``train_freq`` only)
    min_env_steps_per_training_step: int = 16

    def _rounds_per_training_step(self, n_envs: int) -> int:
        if self.train_freq.unit != TrainFrequencyUnit.STEP:
            return 1
        per_round = self.train_freq.frequency * n_envs
        return max(1, -(-self.min_env_steps_per_training_step // per_round))

    def _collect_and_update(self, env: VecEnv) -> bool:
        """One SB3 round: collect ``train_freq``, then update; False when a callback stopped training."""
        rollout = self.collect_rollouts(
            env,
            callback=self._callback,
            train_freq=self.train_freq,
            replay_buffer=self._replay_buffer(),
            action_noise=self.action_noise,
            learning_starts=self.learning_starts,
            log_interval=self.log_interval,
        )
        if not rollout.continue_training:
            return False
        if self.num_timesteps > 0 and self.num_timesteps > self.learning_starts:
            steps = self.gradient_steps if self.gradient_steps >= 0 else rollout.episode_timesteps
            if steps > 0:
                self.train(gradient_steps=steps, batch_size=self.batch_size)  # SB3's call (callbacks may replace it)
        return True

    def train(
        self, mode: bool | int = True, batch_size: int | None = None, *, gradient_steps: int | None = None
    ) -> Any:
        """Two methods under one name: torch's ``train(mode: bool)`` (what Lightning and ``eval()`` call), and SB3's
        ``train(gradient_steps, batch_size)``: that many updates on replay samples (``batch_size`` defaults to the
        algorithm's), inside a fit or outside one (the RL Zoo's ``ParallelTrainCallback`` trains a copy in a thread).
        """
        if gradient_steps is None and batch_size is None and isinstance(mode, bool):
            return super().train(mode)
        if not self._built()[0].training:
            self._set_training_mode(True)
        self._update_learning_rate()
        self._metrics.start_over()  # SB3 logs each statistic's mean over its latest train() call
        self.gradient_updates(
            int(mode) if gradient_steps is None else gradient_steps,
            self.batch_size if batch_size is None else batch_size,
        )
        return None

    def gradient_updates(self, gradient_steps: int, batch_size: int) -> None:
        """``gradient_steps`` updates on samples of ``batch_size`` transitions (SB3's ``train``)."""
        raise NotImplementedError

    def _replay_buffer(self) -> ReplayBuffer:
        """The replay buffer, which exists once a fit started (or ``load_replay_buffer`` gave one)."""
        if self.replay_buffer is None:
            raise RuntimeError(f"{type(self).__name__}: no replay buffer yet (train, or load_replay_buffer first)")
        return self.replay_buffer

    def _replay_batch(self, batch_size: int) -> tuple[ReplayBufferSamples, torch.Tensor | float]:
        """A replay sample and its discounts (an n-step buffer stores one per transition; otherwise ``gamma``)."""
        data = self._replay_buffer().sample(batch_size, env=self._vec_normalize_env)
        return data, data.discounts if data.discounts is not None else self.gamma

    def _update_learning_rate(self) -> None:
        lr = self.lr_schedule(self._current_progress_remaining)
        for optimizer in self._named_optimizers().values():
            update_learning_rate(optimizer, lr)
        self.sb3_logger.record("train/learning_rate", lr)

    def configure_optimizers(self) -> OptimizerLRScheduler:
        """The optimizers of :meth:`_named_optimizers`, in that order."""
        optimizers = list(self._named_optimizers().values())
        for optimizer in optimizers:
            flush_subnormal_moments(optimizer)
        return optimizers

    def _named_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        """Under SB3's save names: the actor's and the critic's (actor-critics) or the policy's (Q-learning), then
        the parts' (SAC's entropy temperature)."""
        actor, critic = getattr(self.policy, "actor", None), getattr(self.policy, "critic", None)
        named: dict[str, torch.optim.Optimizer]
        if isinstance(actor, BaseModel) and isinstance(critic, BaseModel):
            named = {"actor.optimizer": actor.optimizer, "critic.optimizer": critic.optimizer}
        else:
            named = super()._named_optimizers()
        for part in self._parts:
            named.update(part.optimizers())
        return named

    # ------------------------------------------------------------------ logging

    def _record_train_stats(self) -> None:
        """Record the means of the updates since the last dump (the tracker starts over) and ``train/n_updates``."""
        record = self.sb3_logger.record
        for key, value in self._metrics.means().items():
            record(f"train/{key}", value)
        # SB3 records n_updates in train(), so a second dump at the same step (two envs ending an episode together)
        # has none
        if self._n_updates and self._n_updates != self._dumped_at[1]:
            record("train/n_updates", self._n_updates, exclude="tensorboard")

    def on_train_end(self) -> None:
        # after learn, SB3's logger holds the last train() call's values and the per-step ones, until a dump
        self._record_train_stats()
        for part in self._parts:
            part.record(self.sb3_logger.record)
        super().on_train_end()

    def dump_logs(self) -> None:
        record = self.sb3_logger.record
        record("time/episodes", self._episode_num, exclude="tensorboard")
        self._record_train_stats()
        steps = self._dumped_at[0]  # the parts' values are recorded at each env step in SB3: once per step here
        actor = getattr(self.policy, "actor", None)
        if self.use_sde and actor is not None:  # gSDE's actors (SAC's, TQC's) have get_std
            record("train/std", actor.get_std().mean().item())
        if self.num_timesteps != steps:
            for part in self._parts:
                part.record(record)
        self._dumped_at = (self.num_timesteps, self._n_updates)
        super().dump_logs()

    # ------------------------------------------------------------------ replay buffer persistence

    def save_replay_buffer(self, path: str | Path) -> None:
        """Pickle the replay buffer (SB3's format; HER's env is left out)."""
        replay.save_replay_buffer(self.replay_buffer, path, self.verbose)

    def load_replay_buffer(
        self, path: str | Path | io.BufferedIOBase, truncate_last_traj: bool = True, *, trusted: bool | None = None
    ) -> None:
        """Load a buffer written by ``save_replay_buffer`` (or SB3's); HER buffers get the current env. The pickle is
        read through lit_sb3's allow-list (:mod:`lit_sb3.safe_load`); ``trusted=True`` (or, when not given,
        ``LIT_SB3_TRUST=1`` / ``lit_sb3.safe_load.trusted()``) unpickles everything."""
        env = self.get_env()
        self.replay_buffer = replay.load_replay_buffer(
            path, env, self.device, truncate_last_traj, self.verbose, trusted
        )

    # ------------------------------------------------------------------ collection (SB3's collect_rollouts)

    def collect_rollouts(
        self,
        env: VecEnv,
        callback: BaseCallback | None,
        train_freq: TrainFreq,
        replay_buffer: ReplayBuffer,
        action_noise: ActionNoise | None = None,
        learning_starts: int = 0,
        log_interval: int | None = None,
    ) -> RolloutReturn:
        """Step every env until ``train_freq`` is met, storing the transitions in ``replay_buffer``."""
        policy = self._built()[0]
        if policy.training:
            self._set_training_mode(False)
        n_steps = n_episodes = 0
        if self.use_sde:
            self._reset_noise(env.num_envs)
        if callback is not None:
            callback.on_rollout_start()
        while should_collect_more_steps(train_freq, n_steps, n_episodes):
            if self.use_sde and self.sde_sample_freq > 0 and n_steps % self.sde_sample_freq == 0:
                self._reset_noise(env.num_envs)
            actions, buffer_actions = self._sample_action(learning_starts, action_noise, env.num_envs)
            new_obs, rewards, dones, infos = self._step_env(env, actions)
            self.num_timesteps += env.num_envs
            n_steps += 1
            if callback is not None:
                callback.update_locals(locals())
                if not callback.on_step():
                    return RolloutReturn(n_steps * env.num_envs, n_episodes, continue_training=False)
            self._update_info_buffer(infos, dones)
            self._last_original_obs = replay.store_transition(
                replay_buffer,
                self._last_original_obs,
                new_obs,
                buffer_actions,
                rewards,
                dones,
                infos,
                self._vec_normalize_env,
            )
            self._last_obs = new_obs
            self._on_step()
            for idx in np.flatnonzero(dones):
                n_episodes += 1
                self._episode_num += 1
                if action_noise is not None:
                    action_noise.reset(**({"indices": [idx]} if env.num_envs > 1 else {}))
                if log_interval and self._episode_num % log_interval == 0:
                    self.dump_logs()
        if callback is not None:
            callback.on_rollout_end()
        return RolloutReturn(n_steps * env.num_envs, n_episodes, continue_training=True)

    def _sample_action(
        self, learning_starts: int, action_noise: ActionNoise | None, n_envs: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Env actions and the actions to store: uniformly random before ``learning_starts`` (unless gSDE acts at
        warm-up), the policy's after; Box actions are stored scaled to [-1, 1], with the action noise."""
        policy, _, action_space = self._built()
        warm_up = self.num_timesteps < learning_starts and not (self.use_sde and self.use_sde_at_warmup)
        actions = np.array([action_space.sample() for _ in range(n_envs)]) if warm_up else self._policy_actions(n_envs)
        if not isinstance(action_space, spaces.Box):
            return actions, actions
        return replay.box_actions(policy, actions, from_policy=not warm_up, noise=action_noise)

    def _policy_actions(self, n_envs: int) -> np.ndarray:
        """Exploration actions for ``_last_obs`` as the policy outputs them (uniformly random for every env when a
        part explores: epsilon-greedy).

        What ``predict`` does minus its per-call input checks and mode switch (the policy is already in eval mode
        while collecting): a few hundred microseconds per env step.
        """
        policy, _, action_space = self._built()
        if any(part.explores() for part in self._parts):
            return np.array([action_space.sample() for _ in range(n_envs)])
        obs, _ = policy.obs_to_tensor(self._last_obs)
        with torch.no_grad(), outside_autocast(self.device):
            actions = policy._predict(obs, deterministic=False)
        return actions.cpu().numpy().reshape((n_envs, *(action_space.shape or ())))

    def _on_step(self) -> None:
        """After every vector env step: the parts' step (DQN: exploration rate and target network)."""
        n_envs = self.n_envs
        if n_envs is None:
            raise RuntimeError(f"{type(self).__name__}: collecting before the training env is known")
        for part in self._parts:
            part.on_step(self._current_progress_remaining, n_envs)

    # ------------------------------------------------------------------ a checkpoint's extra state (zips: none)

    def _extra_state(self, fmt: StateFormat = CHECKPOINT) -> dict[str, Any]:
        state = super()._extra_state(fmt)
        if fmt != CHECKPOINT:
            return state
        if self.checkpoint_replay_buffer and self.replay_buffer is not None:
            state["replay_buffer"] = replay.buffer_arrays(self.replay_buffer)
        if "env" in state:
            state["env"]["last_original_obs"] = resume.to_tree(self._last_original_obs)
        state["action_noise"] = resume.noise_state(self.action_noise)
        state["stat_sums"] = self._metrics.state()
        state["dumped_at"] = list(self._dumped_at)
        return state

    def _resume_training_state(self, env: VecEnv, state: dict[str, Any]) -> None:
        super()._resume_training_state(env, state)
        self._last_original_obs = resume.from_tree(state["env"]["last_original_obs"])
        resume.set_noise_state(self.action_noise, state.get("action_noise"))
        self._metrics.load_state(state.get("stat_sums", {}))
        steps, updates = state.get("dumped_at", (0, 0))
        self._dumped_at = (int(steps), int(updates))

    def _load_extra_state(self, state: dict[str, Any], fmt: StateFormat = CHECKPOINT) -> None:
        super()._load_extra_state(state, fmt)
        buffer_state = state.get("replay_buffer") if fmt == CHECKPOINT else None
        if buffer_state is not None:
            if self.replay_buffer is not None:
                replay.restore_buffer_arrays(self.replay_buffer, buffer_state)
            else:
                self._pending_buffer_state = buffer_state  # applied when the buffer is created at train start

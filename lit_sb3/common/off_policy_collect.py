"""How an off-policy algorithm steps its envs: SB3's ``collect_rollouts`` into the replay buffer.

Warm-up actions (uniformly random before ``learning_starts``), the policy's exploration actions with action noise,
gSDE's noise resets, SB3 callbacks at every vector step and the algorithm's parts' per-step updates (DQN's
exploration rate and target network) all happen here; :class:`~lit_sb3.common.off_policy.OffPolicyAlgorithm` decides
when to collect and when to update.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.noise import ActionNoise
from stable_baselines3.common.type_aliases import RolloutReturn, TrainFreq
from stable_baselines3.common.utils import should_collect_more_steps
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from lit_sb3.common import replay
from lit_sb3.common.utils import outside_autocast

if TYPE_CHECKING:
    from lit_sb3.common.base import BaseAlgorithm

    _Base = BaseAlgorithm  # the class after the mixins in OffPolicyAlgorithm's bases
else:
    _Base = object


class OffPolicyCollection(_Base):
    """SB3's ``collect_rollouts`` of :class:`~lit_sb3.common.off_policy.OffPolicyAlgorithm` (a mixin placed before
    ``BaseAlgorithm``) and the actions it takes."""

    # what it uses of OffPolicyAlgorithm (set there)
    use_sde: bool
    sde_sample_freq: int
    use_sde_at_warmup: bool
    _last_original_obs: Any
    _vec_normalize_env: VecNormalize | None

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

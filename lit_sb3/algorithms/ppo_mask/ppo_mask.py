"""PPO with invalid-action masking (sb3-contrib's MaskablePPO) as a LightningModule.

The env tells which actions are valid through an ``action_masks()`` method (reached through wrappers and VecEnvs).
Masks are read before every policy step, stored with the transition, and applied again when the update
re-evaluates the actions, so a masked action has probability zero both when acting and when learning.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, TypeVar, cast

import numpy as np
import torch
from gymnasium import spaces
from sb3_contrib.common.maskable.buffers import MaskableDictRolloutBuffer, MaskableRolloutBuffer
from sb3_contrib.common.maskable.policies import (
    MaskableActorCriticPolicy,
)
from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
from sb3_contrib.ppo_mask.policies import CnnPolicy, MlpPolicy, MultiInputPolicy
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback, Schedule
from stable_baselines3.common.vec_env import VecEnv

from lit_sb3.common.episodes import StepCallback
from lit_sb3.common.ppo_update import ClippedSurrogateUpdate
from lit_sb3.common.saved_state import CHECKPOINT, StateFormat
from lit_sb3.common.sb3_calls import accepts_sb3_constructor_form, accepts_sb3_learn_form

SelfMaskablePPO = TypeVar("SelfMaskablePPO", bound="MaskablePPO")

_NO_MASKS = (
    "the env has no action_masks() method; give it one (e.g. sb3_contrib.common.wrappers.ActionMasker) "
    "or pass use_masking=False"
)

# the policies are sb3-contrib's; the names the constructor's ``policy`` accepts
POLICY_ALIASES = {"MlpPolicy": MlpPolicy, "CnnPolicy": CnnPolicy, "MultiInputPolicy": MultiInputPolicy}


class MaskablePPO(ClippedSurrogateUpdate):
    """Proximal Policy Optimization algorithm (PPO) (clip version) with Invalid Action Masking.

    Background on invalid action masking: https://arxiv.org/abs/2006.14171. Arguments and defaults are
    sb3-contrib's; the update is PPO's (:class:`~lit_sb3.common.ppo_update.ClippedSurrogateUpdate`).

    :param policy: MlpPolicy, CnnPolicy, MultiInputPolicy or a ``MaskableActorCriticPolicy`` subclass
    :param learning_rate: constant or schedule of the progress remaining (1 -> 0)
    :param n_steps: steps per env per rollout
    :param batch_size: minibatch size (None: the whole rollout)
    :param n_epochs: passes over each rollout
    :param gamma: discount factor
    :param gae_lambda: GAE bias/variance trade-off
    :param clip_range: clipping of the probability ratio (constant or schedule)
    :param clip_range_vf: clipping of the value update (None: no clipping)
    :param normalize_advantage: normalize advantages per minibatch
    :param ent_coef: entropy coefficient
    :param vf_coef: value-loss coefficient
    :param max_grad_norm: gradient-norm clipping
    :param rollout_buffer_class: rollout buffer class (None: sb3-contrib's maskable buffer for the observations)
    :param rollout_buffer_kwargs: extra rollout buffer arguments
    :param target_kl: stop the update early when the approximate KL exceeds 1.5 * target_kl
    :param stats_window_size: episodes averaged in the rollout statistics
    :param policy_kwargs: extra policy constructor arguments
    :param verbose: 0 silent, 1 SB3's metric table
    :param seed: random seed
    :param device: device outside a trainer
    :param _init_setup_model: build the networks at once when ``env`` is given
    :param env: SB3-style: train on this env in ``learn``
    """

    policy_aliases: ClassVar[dict[str, type[MaskableActorCriticPolicy]]] = POLICY_ALIASES
    policy: MaskableActorCriticPolicy  # None until the networks are built (as SB3 declares it)
    supported_action_spaces: ClassVar[tuple[type[spaces.Space[Any]], ...]] = (
        spaces.Discrete,
        spaces.MultiDiscrete,
        spaces.MultiBinary,
    )

    @accepts_sb3_constructor_form
    def __init__(
        self,
        policy: str | type[MaskableActorCriticPolicy],
        learning_rate: float | Schedule = 3e-4,
        n_steps: int = 2048,
        batch_size: int | None = 64,
        n_epochs: int = 10,
        gamma: float = 0.99,
        gae_lambda: float = 0.95,
        clip_range: float | Schedule = 0.2,
        clip_range_vf: float | Schedule | None = None,
        normalize_advantage: bool = True,
        ent_coef: float = 0.0,
        vf_coef: float = 0.5,
        max_grad_norm: float = 0.5,
        rollout_buffer_class: type[RolloutBuffer] | None = None,
        rollout_buffer_kwargs: dict[str, Any] | None = None,
        target_kl: float | None = None,
        stats_window_size: int = 100,
        policy_kwargs: dict[str, Any] | None = None,
        verbose: int = 0,
        seed: int | None = None,
        device: torch.device | str = "auto",
        _init_setup_model: bool = True,
        *,
        env: GymEnv | str | None = None,
        tensorboard_log: str | None = None,
    ) -> None:
        super().__init__(
            policy,
            learning_rate,
            n_steps=n_steps,
            gamma=gamma,
            gae_lambda=gae_lambda,
            ent_coef=ent_coef,
            vf_coef=vf_coef,
            max_grad_norm=max_grad_norm,
            use_sde=False,
            sde_sample_freq=-1,
            rollout_buffer_class=rollout_buffer_class,
            rollout_buffer_kwargs=rollout_buffer_kwargs,
            stats_window_size=stats_window_size,
            policy_kwargs=policy_kwargs,
            verbose=verbose,
            seed=seed,
            device=device,
            env=env,
            batch_size=batch_size,
            n_epochs=n_epochs,
            normalize_advantage=normalize_advantage,
        )
        self._init_clipping(clip_range, clip_range_vf, target_kl)
        self.use_masking = True  # set by learn(use_masking=...)
        self._masks_env: VecEnv | None = None
        self._action_masks: np.ndarray | None = None
        self._finish_init(_init_setup_model, tensorboard_log)

    def _validate_hyperparameters(self) -> None:
        super()._validate_hyperparameters()
        if not issubclass(self.policy_class, MaskableActorCriticPolicy):
            raise ValueError(  # sb3-contrib's words, then ours
                "Policy must subclass MaskableActorCriticPolicy. policy: MaskablePPO needs a maskable policy "
                f"('MlpPolicy', 'CnnPolicy', 'MultiInputPolicy' or a subclass), got {self.policy_class.__name__}"
            )

    def check_env(self, env: VecEnv) -> None:
        super().check_env(env)
        if self.use_masking and not is_masking_supported(env):
            raise ValueError(f"use_masking: {_NO_MASKS}")

    def _rollout_buffer_class(self) -> type[RolloutBuffer]:
        if self.rollout_buffer_class is not None:
            return self.rollout_buffer_class
        dict_obs = isinstance(self.observation_space, spaces.Dict)
        return MaskableDictRolloutBuffer if dict_obs else MaskableRolloutBuffer

    # ------------------------------------------------------------------ rollout hooks

    def _collect_kwargs(self) -> dict[str, Any]:
        return {"use_masking": self.use_masking}

    def collect_rollouts(
        self,
        env: VecEnv,
        callback: BaseCallback | None,
        rollout_buffer: RolloutBuffer,
        n_rollout_steps: int,
        use_masking: bool = True,
    ) -> bool:
        """Fill ``rollout_buffer`` with ``n_rollout_steps`` steps of every env, acting only on valid actions.

        :param use_masking: read the env's action masks before each step (False: act on all actions)
        :raises ValueError: ``use_masking`` on an env without ``action_masks()``
        """
        if use_masking and not is_masking_supported(env):
            raise ValueError(f"use_masking: {_NO_MASKS}")
        self._masks_env = env if use_masking else None
        return super().collect_rollouts(env, callback, rollout_buffer, n_rollout_steps)

    def _policy_step(self, obs: Any) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        self._action_masks = get_action_masks(self._masks_env) if self._masks_env is not None else None
        step: tuple[torch.Tensor, torch.Tensor, torch.Tensor] = self.policy(obs, action_masks=self._action_masks)
        return step  # actions, values, log-probabilities

    def _store_transition(
        self,
        buffer: RolloutBuffer,
        actions: np.ndarray,
        rewards: np.ndarray,
        values: torch.Tensor,
        log_probs: torch.Tensor,
    ) -> None:
        if self._last_episode_starts is None:
            raise RuntimeError("MaskablePPO: a transition was stored before the env was reset")
        buffer.add(  # type: ignore[call-arg]  # MaskablePPO's buffers (sb3-contrib's or the user's) take the masks
            self._last_obs,
            actions,
            rewards,
            self._last_episode_starts,
            values,
            log_probs,
            action_masks=self._action_masks,
        )

    # ------------------------------------------------------------------ update hooks

    def _evaluate_actions(self, batch: Any, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, Any]:
        return self.policy.evaluate_actions(batch.observations, actions, action_masks=batch.action_masks)

    def _extra_state(self, fmt: StateFormat = CHECKPOINT) -> dict[str, Any]:
        state = super()._extra_state(fmt)
        return {**state, "use_masking": self.use_masking} if fmt == CHECKPOINT else state

    def _load_extra_state(self, state: dict[str, Any], fmt: StateFormat = CHECKPOINT) -> None:
        super()._load_extra_state(state, fmt)
        if fmt == CHECKPOINT:
            self.use_masking = bool(state.get("use_masking", True))  # a resumed run keeps learn()'s choice

    # ------------------------------------------------------------------ acting

    def predict(
        self,
        observation: np.ndarray | dict[str, np.ndarray],
        state: tuple[np.ndarray, ...] | None = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = False,
        action_masks: np.ndarray | None = None,
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...] | None]:
        """The policy's action for ``observation``, restricted to the valid actions of ``action_masks``.

        :param action_masks: boolean masks of the valid actions (True = valid); None: every action is valid
        """
        if self.policy is None:
            raise RuntimeError("MaskablePPO.predict: the networks are not built yet (fit, or pass env=)")
        return self.policy.predict(observation, state, episode_start, deterministic, action_masks=action_masks)

    def evaluate_episodes(
        self, env: VecEnv, n_episodes: int, deterministic: bool, callback: StepCallback | None = None
    ) -> tuple[list[float], list[int]]:
        """Evaluation episodes that act on valid actions only (when masking is on and the env has masks)."""
        from sb3_contrib.common.maskable.evaluation import evaluate_policy

        use_masking = self.use_masking and is_masking_supported(env)
        episodes = evaluate_policy(
            self,  # type: ignore[arg-type]  # sb3-contrib names its MaskablePPO; it calls predict(action_masks=)
            env,
            n_eval_episodes=n_episodes,
            deterministic=deterministic,
            return_episode_rewards=True,
            use_masking=use_masking,
            callback=callback,
        )
        return cast("tuple[list[float], list[int]]", episodes)  # per-episode lists with return_episode_rewards

    @accepts_sb3_learn_form
    def learn(  # sb3-contrib's signature: use_masking before progress_bar
        self: SelfMaskablePPO,
        total_timesteps: int,
        env: GymEnv | str | None = None,
        callback: MaybeCallback = None,
        log_every_n_steps: int | None = 1,
        tb_log_name: str = "MaskablePPO",
        reset_num_timesteps: bool = True,
        use_masking: bool = True,
        progress_bar: bool = False,
        default_root_dir: str | Path | None = None,
    ) -> SelfMaskablePPO:
        """Train for ``total_timesteps`` env steps; ``use_masking=False`` ignores the env's action masks."""
        self.use_masking = use_masking
        return self._fit_env_steps(
            total_timesteps,
            env,
            callback,
            log_every_n_steps,
            tb_log_name,
            reset_num_timesteps,
            progress_bar,
            default_root_dir,
        )

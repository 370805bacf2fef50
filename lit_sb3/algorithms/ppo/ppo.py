"""Proximal Policy Optimization (clip version) as a LightningModule."""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.type_aliases import GymEnv, Schedule
from stable_baselines3.ppo.policies import CnnPolicy, MlpPolicy, MultiInputPolicy

from lit_sb3.common.learn import learn_method
from lit_sb3.common.ppo_update import ClippedSurrogateUpdate
from lit_sb3.common.sb3_calls import accepts_sb3_constructor_form

__all__ = ["PPO"]

# the policies are SB3's; the names the constructor's ``policy`` accepts
POLICY_ALIASES = {"MlpPolicy": MlpPolicy, "CnnPolicy": CnnPolicy, "MultiInputPolicy": MultiInputPolicy}


class PPO(ClippedSurrogateUpdate):
    """Proximal Policy Optimization algorithm (PPO) (clip version).

    Paper: https://arxiv.org/abs/1707.06347. Arguments and defaults are SB3's.

    :param policy: the policy model to use (MlpPolicy, CnnPolicy, MultiInputPolicy or a class)
    :param learning_rate: constant or schedule of the progress remaining (1 -> 0)
    :param n_steps: steps per env per rollout (the rollout holds n_steps * n_envs transitions)
    :param batch_size: minibatch size
    :param n_epochs: passes over each rollout
    :param gamma: discount factor
    :param gae_lambda: GAE bias/variance trade-off
    :param clip_range: clipping of the probability ratio (constant or schedule)
    :param clip_range_vf: clipping of the value update (None: no clipping; depends on the reward scale)
    :param normalize_advantage: normalize advantages per minibatch
    :param ent_coef: entropy coefficient
    :param vf_coef: value-loss coefficient
    :param max_grad_norm: gradient-norm clipping
    :param use_sde: generalized state-dependent exploration
    :param sde_sample_freq: resample the gSDE noise every n steps (-1: once per rollout)
    :param rollout_buffer_class: rollout buffer class (None: chosen from the observation space)
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

    policy_aliases: ClassVar[dict[str, type[ActorCriticPolicy]]] = POLICY_ALIASES
    policy: ActorCriticPolicy  # None until the networks are built (as SB3 declares it)

    @accepts_sb3_constructor_form
    def __init__(
        self,
        policy: str | type[ActorCriticPolicy],
        learning_rate: float | Schedule = 3e-4,
        n_steps: int = 2048,
        batch_size: int = 64,
        n_epochs: int = 10,
        gamma: float = 0.99,
        gae_lambda: float = 0.95,
        clip_range: float | Schedule = 0.2,
        clip_range_vf: float | Schedule | None = None,
        normalize_advantage: bool = True,
        ent_coef: float = 0.0,
        vf_coef: float = 0.5,
        max_grad_norm: float = 0.5,
        use_sde: bool = False,
        sde_sample_freq: int = -1,
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
            use_sde=use_sde,
            sde_sample_freq=sde_sample_freq,
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
        self._finish_init(_init_setup_model, tensorboard_log)

    def _evaluate_actions(self, batch: Any, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, Any]:
        return self.policy.evaluate_actions(batch.observations, actions)

    learn = learn_method("PPO", log_every_n_steps=1)

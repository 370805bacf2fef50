"""Proximal Policy Optimization (clip version) as a LightningModule."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, TypeVar

import torch
from gymnasium import spaces
from lightning.pytorch.utilities.types import OptimizerLRScheduler
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.type_aliases import GymEnv, Schedule
from stable_baselines3.common.utils import FloatSchedule

from lit_sb3.algorithms.ppo.policies import POLICY_ALIASES
from lit_sb3.common import losses
from lit_sb3.common.on_policy import OnPolicyAlgorithm
from lit_sb3.common.sb3_bridge import MaybeCallback
from lit_sb3.common.utils import unchecked_distributions

SelfPPO = TypeVar("SelfPPO", bound="PPO")


class PPO(OnPolicyAlgorithm):
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
        self.target_kl = target_kl
        self.clip_range = FloatSchedule(clip_range)
        self.clip_range_vf = FloatSchedule(clip_range_vf) if clip_range_vf is not None else None
        self._clip_range_raw, self._clip_range_vf_raw = clip_range, clip_range_vf
        self._clip = self.clip_range(1.0)
        self._clip_vf = self.clip_range_vf(1.0) if self.clip_range_vf is not None else None
        self._last_loss: torch.Tensor | None = None
        self._finish_init(_init_setup_model)

    def _validate_hyperparameters(self) -> None:
        super()._validate_hyperparameters()
        if self.batch_size is None or self.batch_size <= 1:
            raise ValueError(f"batch_size: must be > 1, got {self.batch_size}")
        for name, value in (("clip_range", self._clip_range_raw), ("clip_range_vf", self._clip_range_vf_raw)):
            if isinstance(value, (int, float)) and value <= 0:
                raise ValueError(f"{name}: must be > 0 (or None for clip_range_vf), got {value}")
        if self.target_kl is not None and self.target_kl <= 0:
            raise ValueError(f"target_kl: must be > 0 or None, got {self.target_kl}")

    def configure_optimizers(self) -> OptimizerLRScheduler:
        """Return the policy optimizer."""
        return super().configure_optimizers()

    def on_train_epoch_start(self) -> None:
        """Run base rollout collection hook then set policy to train mode."""
        super().on_train_epoch_start()
        progress = self._current_progress_remaining
        self._clip = self.clip_range(progress)
        self._clip_vf = self.clip_range_vf(progress) if self.clip_range_vf is not None else None

    def compute_loss(self, batch: Any) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """PPO's loss on one minibatch with the current policy, and its logged parts."""
        actions = batch.actions
        if isinstance(self.action_space, spaces.Discrete):
            actions = actions.long().flatten()
        with unchecked_distributions():
            values, log_prob, entropy = self.policy.evaluate_actions(batch.observations, actions)
        return ppo_loss(
            values.flatten(),
            log_prob,
            entropy,
            batch,
            clip_range=self._clip,
            clip_range_vf=self._clip_vf,
            normalize_advantage=self.normalize_advantage,
            ent_coef=self.ent_coef,
            vf_coef=self.vf_coef,
        )

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        """Compute PPO clipped-surrogate loss for one mini-batch of rollout data."""
        loss, terms = self.compute_loss(batch)
        self._track(**terms)
        if self.target_kl is not None and terms["approx_kl"].item() > 1.5 * self.target_kl:
            self._stop_updates = True  # as in SB3, the minibatch that crossed the limit is not applied
            if self.verbose >= 1:
                print(f"Early stopping at step {self._epoch} due to reaching max kl: {terms['approx_kl'].item():.2f}")
            return loss.detach()
        self._clip_and_step(loss)
        self._last_loss = loss.detach()
        return self._last_loss

    def on_train_epoch_end(self) -> None:
        """Log epoch-level PPO stats."""
        if self._rollout_complete:
            self._n_updates += self._epoch + 1
            record = self.sb3_logger.record
            if self._last_loss is not None:
                record("train/loss", self._last_loss.item())
            record("train/clip_range", self._clip)
            if self._clip_vf is not None:
                record("train/clip_range_vf", self._clip_vf)
        super().on_train_epoch_end()

    def learn(
        self: SelfPPO,
        total_timesteps: int,
        env: GymEnv | str | None = None,
        callback: MaybeCallback = None,
        log_every_n_steps: int | None = 1,
        tb_log_name: str = "PPO",
        reset_num_timesteps: bool = True,
        progress_bar: bool = False,
        default_root_dir: str | Path | None = None,
    ) -> SelfPPO:
        return super().learn(
            total_timesteps, env, callback, log_every_n_steps, tb_log_name, reset_num_timesteps, progress_bar,
            default_root_dir,
        )


def ppo_loss(
    values: torch.Tensor,
    log_prob: torch.Tensor,
    entropy: torch.Tensor | None,
    batch: Any,
    *,
    clip_range: float,
    clip_range_vf: float | None,
    normalize_advantage: bool,
    ent_coef: float,
    vf_coef: float,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """PPO's total loss on one minibatch and its parts, named as SB3 logs them (``train/<name>``)."""
    advantages = losses.normalize_advantages(batch.advantages) if normalize_advantage else batch.advantages
    pg_loss, clip_fraction = losses.clipped_surrogate_loss(advantages, log_prob, batch.old_log_prob, clip_range)
    v_loss = losses.value_loss(values, batch.returns, batch.old_values, clip_range_vf)
    ent_loss = losses.entropy_loss(entropy, log_prob)
    loss = pg_loss + ent_coef * ent_loss + vf_coef * v_loss
    with torch.no_grad():
        kl = losses.approx_kl(log_prob, batch.old_log_prob)
    terms = {
        "policy_gradient_loss": pg_loss,
        "value_loss": v_loss,
        "entropy_loss": ent_loss,
        "clip_fraction": clip_fraction,
        "approx_kl": kl,
    }
    return loss, terms

"""The clipped-surrogate update shared by PPO, MaskablePPO and RecurrentPPO.

``ClippedSurrogateUpdate`` is the :class:`~lit_sb3.common.on_policy.OnPolicyAlgorithm` the three subclass
(``class PPO(ClippedSurrogateUpdate)``): not an algorithm of its own, only the update half of PPO. The variants
differ in how the policy evaluates a minibatch (action masks, recurrent states) and in which entries count (padding
of recurrent sequences): the hooks ``_evaluate_actions`` and ``_loss_mask``. A research variant of the objective
overrides ``policy_loss`` (the clipped surrogate).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from gymnasium import spaces
from stable_baselines3.common.type_aliases import Schedule
from stable_baselines3.common.utils import FloatSchedule

from lit_sb3.common import losses
from lit_sb3.common.on_policy import OnPolicyAlgorithm
from lit_sb3.common.utils import CheckFailed, unchecked_distributions


class ClippedSurrogateUpdate(OnPolicyAlgorithm):
    """PPO's minibatch update: clip-range schedules, the loss, ``target_kl`` early stopping and its metrics."""

    def _init_clipping(
        self, clip_range: float | Schedule, clip_range_vf: float | Schedule | None, target_kl: float | None
    ) -> None:
        self.target_kl = target_kl
        self.clip_range = FloatSchedule(clip_range)
        self.clip_range_vf = FloatSchedule(clip_range_vf) if clip_range_vf is not None else None
        self._clip_range_raw, self._clip_range_vf_raw = clip_range, clip_range_vf
        self._clip = self.clip_range(1.0)
        self._clip_vf = self.clip_range_vf(1.0) if self.clip_range_vf is not None else None
        self._last_loss: torch.Tensor | None = None
        self._kl_epoch = -1  # the epoch whose approx_kl values the tracker holds

    def _validate_hyperparameters(self) -> None:
        super()._validate_hyperparameters()
        if self.normalize_advantage and self.batch_size is not None and self.batch_size <= 1:
            raise CheckFailed(
                "`batch_size` must be greater than 1. "  # SB3's words, then ours
                f"batch_size: must be > 1 to normalize advantages (or normalize_advantage=False), got {self.batch_size}"
            )
        clip, clip_vf = self._clip_range_raw, self._clip_range_vf_raw
        if isinstance(clip, (int, float)) and clip <= 0:
            raise ValueError(f"clip_range: must be > 0, got {clip}")
        if isinstance(clip_vf, (int, float)) and clip_vf <= 0:
            raise CheckFailed(  # SB3's words, then ours
                "`clip_range_vf` must be positive, pass `None` to deactivate vf clipping. "
                f"clip_range_vf: must be > 0 (or None), got {clip_vf}"
            )
        if self.target_kl is not None and self.target_kl <= 0:
            raise ValueError(f"target_kl: must be > 0 or None, got {self.target_kl}")

    def on_train_epoch_start(self) -> None:
        """Collect the rollout (base class), then set this rollout's clip ranges from the progress remaining."""
        super().on_train_epoch_start()
        progress = self._current_progress_remaining
        self._clip = self.clip_range(progress)
        self._clip_vf = self.clip_range_vf(progress) if self.clip_range_vf is not None else None

    # ------------------------------------------------------------------ hooks of the variants

    def _evaluate_actions(self, batch: Any, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, Any]:
        """Values, log-probabilities and entropy of the minibatch's actions under the current policy."""
        raise NotImplementedError(f"{type(self).__name__}._evaluate_actions: each PPO variant evaluates its policy")

    def _loss_mask(self, batch: Any) -> torch.Tensor | None:
        """Which minibatch entries count in the means (None: all of them)."""
        return None

    # ------------------------------------------------------------------ the update

    def compute_loss(self, batch: Any) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """PPO's loss on one minibatch with the current policy, and its logged parts."""
        actions = batch.actions
        if isinstance(self.action_space, spaces.Discrete):
            actions = actions.long().flatten()
        with unchecked_distributions():
            values, log_prob, entropy = self._evaluate_actions(batch, actions)
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
            mask=self._loss_mask(batch),
            policy_loss=self.policy_loss,
        )

    def policy_loss(
        self,
        advantages: torch.Tensor,
        log_prob: torch.Tensor,
        old_log_prob: torch.Tensor,
        clip_range: float,
        mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The policy-gradient part of the loss and the fraction of clipped ratios: PPO's clipped surrogate."""
        return losses.clipped_surrogate_loss(advantages, log_prob, old_log_prob, clip_range, mask)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        """Compute the clipped-surrogate loss for one mini-batch and take an optimizer step on it."""
        loss, terms = self.compute_loss(batch)
        if self._loop.epoch != self._kl_epoch:  # SB3 logs the last epoch's mean KL (the other terms: all epochs')
            self._metrics.start_over("approx_kl")
            self._kl_epoch = self._loop.epoch
        self._track(**terms)
        # every rank of a multi-process run stops at the same minibatch (its gradient steps are collective)
        if self.target_kl is not None and self._mean_over_ranks(terms["approx_kl"]).item() > 1.5 * self.target_kl:
            self._loop.stop_updates = True  # as in SB3, the minibatch that crossed the limit is not applied
            if self.verbose >= 1:
                kl = terms["approx_kl"].item()
                print(f"Early stopping at step {self._loop.epoch} due to reaching max kl: {kl:.2f}")
            return loss.detach()
        (optimizer,) = self._lightning_optimizers()
        self._optimizer_step(optimizer, loss, self.max_grad_norm)
        self._last_loss = loss.detach()
        return self._last_loss

    def on_train_epoch_end(self) -> None:
        """Log epoch-level stats (SB3's names)."""
        if self._loop.collected:
            self._n_updates += self._loop.epoch + 1
            record = self.sb3_logger.record
            if self._last_loss is not None:
                record("train/loss", self._last_loss.item())
            record("train/clip_range", self._clip)
            if self._clip_vf is not None:
                record("train/clip_range_vf", self._clip_vf)
        super().on_train_epoch_end()


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
    mask: torch.Tensor | None = None,
    policy_loss: Callable[..., tuple[torch.Tensor, torch.Tensor]] = losses.clipped_surrogate_loss,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """PPO's total loss on one minibatch and its parts, named as SB3 logs them (``train/<name>``).

    ``mask`` selects the entries that count (RecurrentPPO pads its sequences); None counts all of them.
    ``policy_loss(advantages, log_prob, old_log_prob, clip_range, mask)``: the policy-gradient part and the clip
    fraction.
    """
    advantages = batch.advantages
    if normalize_advantage:
        advantages = losses.normalize_advantages(advantages, mask=mask)
    pg_loss, clip_fraction = policy_loss(advantages, log_prob, batch.old_log_prob, clip_range, mask)
    v_loss = losses.value_loss(values, batch.returns, batch.old_values, clip_range_vf, mask)
    ent_loss = losses.entropy_loss(entropy, log_prob, mask)
    loss = pg_loss + ent_coef * ent_loss + vf_coef * v_loss
    with torch.no_grad():
        kl = losses.approx_kl(log_prob, batch.old_log_prob, mask)
    terms = {
        "policy_gradient_loss": pg_loss,
        "value_loss": v_loss,
        "entropy_loss": ent_loss,
        "clip_fraction": clip_fraction,
        "approx_kl": kl,
    }
    return loss, terms

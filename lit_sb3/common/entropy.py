"""The learned (or fixed) entropy temperature of the maximum-entropy actor-critics (SAC, TQC, CrossQ), and their
shared base class that owns it."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from lightning.pytorch.utilities.types import OptimizerLRScheduler
from torch import nn

from lit_sb3.common import losses
from lit_sb3.common.off_policy import OffPolicyAlgorithm
from lit_sb3.common.optim import optimized_params
from lit_sb3.common.persistence import CHECKPOINT, ZIP, StateFormat


def initial_ent_coef(ent_coef: str | float) -> tuple[float, bool]:
    """(initial value, learned?) of ``ent_coef``: a float >= 0, ``"auto"`` or ``"auto_<float>"``."""
    message = f"ent_coef: must be a float >= 0, 'auto' or 'auto_<initial value > 0>', got {ent_coef!r}"
    if isinstance(ent_coef, str):
        if ent_coef == "auto":
            return 1.0, True
        if ent_coef.startswith("auto_"):
            try:
                value = float(ent_coef.removeprefix("auto_"))
            except ValueError:
                value = -1.0
            if value > 0:
                return value, True
        raise ValueError(message)
    if isinstance(ent_coef, bool) or not isinstance(ent_coef, (int, float)) or ent_coef < 0:
        raise ValueError(message)
    return float(ent_coef), False


def validate_entropy_args(ent_coef: str | float, target_entropy: str | float) -> None:
    """Refuse a malformed ``ent_coef`` or ``target_entropy`` before anything is built."""
    initial_ent_coef(ent_coef)
    is_number = isinstance(target_entropy, (int, float)) and not isinstance(target_entropy, bool)
    if target_entropy != "auto" and not is_number:
        raise ValueError(f"target_entropy: must be 'auto' or a float, got {target_entropy!r}")


class EntropyTemperature(nn.Module):
    """The temperature ``alpha`` weighting the entropy bonus: learned towards ``target_entropy`` or fixed.

    Learned: a ``log_ent_coef`` parameter with its own Adam optimizer (SB3's names, so SB3's save format and the
    optimizer's place in ``configure_optimizers`` stay as they are); fixed: an ``ent_coef_tensor`` buffer. As a
    submodule of the algorithm it moves with it between devices and its value is in the algorithm's ``state_dict``.

    :param ent_coef: a float >= 0 (fixed), ``"auto"`` (learned from 1) or ``"auto_<float>"`` (learned from it)
    :param target_entropy: entropy the learned temperature aims at (``"auto"``: -dim(action space))
    :param action_space: the algorithm's (Box) action space
    :param learning_rate: learning rate of the temperature's optimizer
    """

    def __init__(
        self, ent_coef: str | float, target_entropy: str | float, action_space: spaces.Space, learning_rate: float
    ) -> None:
        super().__init__()
        validate_entropy_args(ent_coef, target_entropy)
        if target_entropy == "auto":
            self.target_entropy = -float(np.prod(action_space.shape))
        else:
            self.target_entropy = float(target_entropy)
        initial, learned = initial_ent_coef(ent_coef)
        self.log_ent_coef: nn.Parameter | None = None
        self.optimizer: torch.optim.Optimizer | None = None
        if learned:
            self.log_ent_coef = nn.Parameter(torch.log(torch.ones(1) * initial))
            self.optimizer = torch.optim.Adam([self.log_ent_coef], lr=learning_rate)
        else:
            self.register_buffer("ent_coef_tensor", torch.tensor(float(initial)))

    def value(self) -> torch.Tensor:
        """The temperature to use in this update (detached from the temperature's own graph)."""
        if self.log_ent_coef is not None:
            return self.log_ent_coef.detach().exp()
        return self.ent_coef_tensor

    def update(self, log_prob: torch.Tensor) -> torch.Tensor | None:
        """One optimizer step towards ``target_entropy`` given the policy's log-probs; the loss (None when fixed).

        A scalar fp32 parameter fed by detached log-probs: no precision plugin or strategy is involved, so the plain
        step saves Lightning's per-step hooks.
        """
        if self.log_ent_coef is None:
            return None
        loss = losses.entropy_coef_loss(self.log_ent_coef, log_prob, self.target_entropy)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        return loss

    def sb3_variables(self) -> dict[str, torch.Tensor]:
        """The tensors SB3's ``save`` keeps next to the policy (``log_ent_coef`` or ``ent_coef_tensor``)."""
        if self.log_ent_coef is not None:
            return {"log_ent_coef": self.log_ent_coef}
        return {"ent_coef_tensor": self.ent_coef_tensor}

    @torch.no_grad()
    def load_sb3_variables(self, variables: dict[str, torch.Tensor]) -> None:
        if self.log_ent_coef is not None and "log_ent_coef" in variables:
            self.log_ent_coef.copy_(variables["log_ent_coef"].reshape(self.log_ent_coef.shape))
        elif self.log_ent_coef is None and "ent_coef_tensor" in variables:
            self.ent_coef_tensor.copy_(variables["ent_coef_tensor"])


class MaxEntropyAlgorithm(OffPolicyAlgorithm):
    """SAC, TQC and CrossQ: off-policy actor-critics whose losses carry an entropy bonus weighted by an
    :class:`EntropyTemperature`, built with the networks.

    SB3's attribute names (``log_ent_coef``, ``ent_coef_optimizer``, ``target_entropy``) read the temperature; its
    optimizer comes after the actor's and the critic's, as SB3 orders and saves them.
    """

    def __init__(self, *args: Any, ent_coef: str | float, target_entropy: str | float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ent_coef = ent_coef
        self._target_entropy_raw = target_entropy
        self.temperature: EntropyTemperature | None = None

    def _validate_hyperparameters(self) -> None:
        super()._validate_hyperparameters()
        validate_entropy_args(self.ent_coef, self._target_entropy_raw)

    def _build_extra(self) -> None:
        self.temperature = EntropyTemperature(
            self.ent_coef, self._target_entropy_raw, self.action_space, self.lr_schedule(1)
        )
        # SB3 saves the resolved value: its ``load`` rebuilds the model without an env and cannot resolve "auto"
        self.hparams["target_entropy"] = self.temperature.target_entropy
        self._critic_weights = optimized_params(self.policy.critic)  # frozen while the actor loss reads the critics

    @property
    def log_ent_coef(self) -> nn.Parameter | None:
        """The learned log temperature (None when it is fixed or not built yet)."""
        return None if self.temperature is None else self.temperature.log_ent_coef

    @property
    def ent_coef_optimizer(self) -> torch.optim.Optimizer | None:
        return None if self.temperature is None else self.temperature.optimizer

    @property
    def target_entropy(self) -> float | None:
        """The resolved target entropy (None before the networks are built)."""
        return None if self.temperature is None else self.temperature.target_entropy

    def configure_optimizers(self) -> OptimizerLRScheduler:
        """Actor, critic and (when learned) entropy-coefficient optimizers, in that order."""
        return list(self._named_optimizers().values())

    def _named_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        named = super()._named_optimizers()
        if self.ent_coef_optimizer is not None:
            named["ent_coef_optimizer"] = self.ent_coef_optimizer
        return named

    def _policy_sample(self, observations: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """Reparameterized actions of the current policy and their log-probs ([batch, 1]); fresh gSDE noise first."""
        if self.use_sde:
            self.policy.actor.reset_noise()
        actions, log_prob = self.policy.actor.action_log_prob(observations)
        return actions, log_prob.reshape(-1, 1)

    def _temperature_step(self, log_prob: torch.Tensor) -> torch.Tensor:
        """One step of the learned temperature (tracked as ``ent_coef_loss``); returns the temperature as it was
        before the step, the one this update uses."""
        ent_coef = self.temperature.value()
        ent_coef_loss = self.temperature.update(log_prob)
        if ent_coef_loss is not None:
            self._track(ent_coef_loss=ent_coef_loss)
        return ent_coef

    def _extra_state(self, fmt: StateFormat = CHECKPOINT) -> dict[str, Any]:
        state = super()._extra_state(fmt)  # checkpoints keep the temperature in the state_dict, zips next to it
        return {**state, **self.temperature.sb3_variables()} if fmt == ZIP else state

    def _load_extra_state(self, state: dict[str, Any], fmt: StateFormat = CHECKPOINT) -> None:
        super()._load_extra_state(state, fmt)
        if fmt == ZIP:
            self.temperature.load_sb3_variables(state)

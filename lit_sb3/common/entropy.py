"""The learned (or fixed) entropy temperature of the maximum-entropy actor-critics (SAC, TQC, CrossQ)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from sb3_contrib.tqc.policies import Actor as TQCActor
from stable_baselines3.sac.policies import Actor as SACActor
from torch import nn

from lit_sb3.common import losses
from lit_sb3.common.optim import MetricTracker
from lit_sb3.common.parts import Part
from lit_sb3.common.saved_state import ZIP, StateFormat


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


class EntropyTemperature(Part, nn.Module):
    """The temperature ``alpha`` weighting the entropy bonus: learned towards ``target_entropy`` or fixed.

    Learned: a ``log_ent_coef`` parameter with its own Adam optimizer (SB3's names: SB3's save format and the
    optimizer's place after the actor's and the critic's stay as they are); fixed: an ``ent_coef_tensor`` buffer. As
    a submodule of the algorithm it moves with it between devices and its value is in the algorithm's ``state_dict``.

    :param ent_coef: a float >= 0 (fixed), ``"auto"`` (learned from 1) or ``"auto_<float>"`` (learned from it)
    :param target_entropy: entropy the learned temperature aims at (``"auto"``: -dim(action space), resolved when
        the algorithm is built)
    :param learning_rate: learning rate of the temperature's optimizer
    """

    sb3_names = ("ent_coef", "log_ent_coef", "ent_coef_optimizer", "target_entropy", "ent_coef_tensor")
    ent_coef_tensor: torch.Tensor  # the fixed temperature's buffer (registered when it is not learned)

    def __init__(self, ent_coef: str | float, target_entropy: str | float, learning_rate: float) -> None:
        super().__init__()
        validate_entropy_args(ent_coef, target_entropy)
        self.ent_coef = ent_coef
        self.target_entropy = target_entropy
        initial, learned = initial_ent_coef(ent_coef)
        self.log_ent_coef: nn.Parameter | None = None
        self.ent_coef_optimizer: torch.optim.Optimizer | None = None
        if learned:
            self.log_ent_coef = nn.Parameter(torch.log(torch.ones(1) * initial))
            self.ent_coef_optimizer = torch.optim.Adam([self.log_ent_coef], lr=learning_rate)
        else:
            self.register_buffer("ent_coef_tensor", torch.tensor(float(initial)))

    def build(self, action_space: spaces.Space[Any]) -> dict[str, Any]:
        if self.target_entropy == "auto":
            if action_space.shape is None:
                raise ValueError(f"target_entropy: 'auto' needs an action space with a shape, got {action_space}")
            self.target_entropy = -float(np.prod(action_space.shape))
        else:
            self.target_entropy = float(self.target_entropy)
        # SB3 saves the resolved value: its ``load`` rebuilds the model without an env and cannot resolve "auto"
        return {"target_entropy": self.target_entropy}

    def optimizers(self) -> dict[str, torch.optim.Optimizer]:
        return {} if self.ent_coef_optimizer is None else {"ent_coef_optimizer": self.ent_coef_optimizer}

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
        if self.log_ent_coef is None or self.ent_coef_optimizer is None:  # both or neither: fixed
            return None
        loss = losses.entropy_coef_loss(self.log_ent_coef, log_prob, float(self.target_entropy))
        self.ent_coef_optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.ent_coef_optimizer.step()
        return loss

    def step(self, log_prob: torch.Tensor, metrics: MetricTracker) -> torch.Tensor:
        """The temperature this update uses (read before the step), then one :meth:`update` (its loss tracked in
        ``metrics`` as ``ent_coef_loss``)."""
        value = self.value()
        loss = self.update(log_prob)
        if loss is not None:
            metrics.add(ent_coef_loss=loss)
        return value

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

    def state(self, fmt: StateFormat) -> dict[str, Any]:
        # checkpoints keep the temperature in the algorithm's state_dict; zips next to the policy, as SB3 does
        return self.sb3_variables() if fmt == ZIP else {}

    def load_state(self, state: dict[str, Any], fmt: StateFormat) -> None:
        if fmt == ZIP:
            self.load_sb3_variables(state)


def policy_sample(
    actor: SACActor | TQCActor, observations: Any, fresh_noise: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """Reparameterized actions of the current policy and their log-probs ([batch, 1]); new gSDE noise first when
    ``fresh_noise``."""
    if fresh_noise:
        actor.reset_noise()
    actions, log_prob = actor.action_log_prob(observations)
    return actions, log_prob.reshape(-1, 1)

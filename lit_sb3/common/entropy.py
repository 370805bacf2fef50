"""The learned (or fixed) entropy temperature of the maximum-entropy actor-critics (SAC, TQC, CrossQ).

Plain functions over the algorithm so that every such algorithm keeps the same attributes (``log_ent_coef`` or the
``ent_coef_tensor`` buffer, ``ent_coef_optimizer``, ``target_entropy``), checkpoint keys and SB3 save format.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from lit_sb3.common import losses
from lit_sb3.common.optim import optimizer_step


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


def setup_entropy_coef(algo: Any, ent_coef: str | float, target_entropy: str | float) -> None:
    """Give ``algo`` its ``target_entropy`` and either a learned ``log_ent_coef`` (+ optimizer) or a fixed buffer."""
    if target_entropy == "auto":
        algo.target_entropy = -float(np.prod(algo.action_space.shape))
    else:
        algo.target_entropy = float(target_entropy)
    # SB3 saves the resolved value: its ``load`` rebuilds the model without an env and cannot resolve "auto"
    algo.hparams["target_entropy"] = algo.target_entropy
    initial, learned = initial_ent_coef(ent_coef)
    if learned:
        # a module parameter, so checkpoints and ``state_dict`` carry it
        algo.log_ent_coef = nn.Parameter(torch.log(torch.ones(1) * initial))
        algo.ent_coef_optimizer = torch.optim.Adam([algo.log_ent_coef], lr=algo.lr_schedule(1))
    else:
        algo.register_buffer("ent_coef_tensor", torch.tensor(float(initial)))


def current_ent_coef(algo: Any) -> torch.Tensor:
    """The temperature to use in this update (detached from the temperature's own graph)."""
    if algo.log_ent_coef is not None:
        return algo.log_ent_coef.detach().exp()
    return algo.ent_coef_tensor


def entropy_coef_step(algo: Any, log_prob: torch.Tensor) -> torch.Tensor | None:
    """One step of the learned temperature towards ``target_entropy`` (None when it is fixed); returns the loss.

    A scalar fp32 parameter fed by detached log-probs: no precision plugin or strategy is involved, so the plain
    step saves Lightning's per-step hooks.
    """
    if algo.log_ent_coef is None:
        return None
    loss = losses.entropy_coef_loss(algo.log_ent_coef, log_prob, algo.target_entropy)
    optimizer_step(algo, algo.ent_coef_optimizer, loss, plain=True)
    return loss


def policy_actions_and_temperature(algo: Any, observations: Any) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """SAC/TQC's first move in an update: reparameterized actions with their log-probs ([batch, 1]) for
    ``observations``, the temperature to use in this update, then one step of the learned temperature (tracked as
    ``ent_coef_loss``)."""
    if algo.use_sde:
        algo.policy.actor.reset_noise()
    actions_pi, log_prob = algo.policy.actor.action_log_prob(observations)
    log_prob = log_prob.reshape(-1, 1)
    ent_coef = current_ent_coef(algo)
    ent_coef_loss = entropy_coef_step(algo, log_prob)
    if ent_coef_loss is not None:
        algo._track(ent_coef_loss=ent_coef_loss)
    return actions_pi, log_prob, ent_coef


def entropy_variables(algo: Any) -> dict[str, torch.Tensor]:
    """The tensors SB3's ``save`` keeps next to the policy (``log_ent_coef`` or ``ent_coef_tensor``)."""
    if algo.log_ent_coef is not None:
        return {"log_ent_coef": algo.log_ent_coef}
    return {"ent_coef_tensor": algo.ent_coef_tensor}


def load_entropy_variables(algo: Any, variables: dict[str, torch.Tensor]) -> None:
    with torch.no_grad():
        if algo.log_ent_coef is not None and "log_ent_coef" in variables:
            algo.log_ent_coef.copy_(variables["log_ent_coef"].reshape(algo.log_ent_coef.shape))
        elif algo.log_ent_coef is None and "ent_coef_tensor" in variables:
            algo.ent_coef_tensor.copy_(variables["ent_coef_tensor"])

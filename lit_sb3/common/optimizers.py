"""Optimizer settings: lit_sb3's fused-Adam default and the parity switch that gives SB3's exact optimizer instead.

lit_sb3 builds Adam fused (one kernel instead of a Python loop over parameters: the same update rule, about a third
cheaper on a small MLP), which rounds differently from torch's default Adam in the last bit. Training is then
equivalent to SB3's, not bit-identical. :func:`sb3_parity` asks for torch's default Adam; every other setting
stays SB3's default for the algorithm (Adam ``eps=1e-5`` of the actor-critic policies, CrossQ's ``betas``,
QR-DQN's ``eps``), so that a run with the same seed ends with SB3's parameters to the last bit.

The fused Adam on the CPU also sets its moments' subnormal elements to zero every :data:`SUBNORMAL_FLUSH_EVERY`
steps (:func:`flush_subnormal_moments`): the same parameters, without the x86 CPU's ~25x cost of subnormal arithmetic.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from typing import Any

import torch

#: optimizer_kwargs that choose how the update is computed, not what it is
IMPLEMENTATION_KEYS = frozenset({"fused", "foreach"})


def sb3_parity(policy_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """``policy_kwargs`` plus the parity switch: torch's default (non-fused) Adam, SB3's settings otherwise.

    ``SAC("MlpPolicy", policy_kwargs=sb3_parity({"net_arch": [64, 64]}))`` trains bit-identically to SB3's SAC with
    ``policy_kwargs={"net_arch": [64, 64]}`` and the same seed.
    """
    kwargs = dict(policy_kwargs or {})
    kwargs["optimizer_kwargs"] = {**(kwargs.get("optimizer_kwargs") or {}), "fused": False}
    return kwargs


def implementation_only(optimizer_kwargs: dict[str, Any] | None) -> bool:
    """True when ``optimizer_kwargs`` sets nothing but the implementation (e.g. what :func:`sb3_parity` adds)."""
    if not optimizer_kwargs:
        return False
    return set(optimizer_kwargs) <= IMPLEMENTATION_KEYS


def with_fused_default(
    optimizer_class: type[torch.optim.Optimizer], optimizer_kwargs: dict[str, Any]
) -> dict[str, Any]:
    """Adam and AdamW run fused, RMSprop multi-tensor (``foreach``), unless the caller chose an implementation.

    RMSprop's multi-tensor step applies the single-tensor step's kernels to each parameter in one call (bit-identical
    parameters, about a sixth cheaper for A2C's policy on CPU, where torch's default is a Python loop)."""
    if IMPLEMENTATION_KEYS & set(optimizer_kwargs):
        return optimizer_kwargs
    if optimizer_class in (torch.optim.Adam, torch.optim.AdamW):
        return {**optimizer_kwargs, "fused": True}
    if optimizer_class is torch.optim.RMSprop:
        return {**optimizer_kwargs, "foreach": True}
    return optimizer_kwargs


def with_optimizer_settings(
    policy_kwargs: dict[str, Any], defaults_for: Callable[[type[torch.optim.Optimizer]], dict[str, Any]]
) -> dict[str, Any]:
    """``policy_kwargs`` with its ``optimizer_kwargs`` completed: the algorithm's SB3 defaults (``defaults_for`` the
    optimizer class) when none are given, then the fused-Adam default."""
    kwargs = dict(policy_kwargs)
    optimizer_class = kwargs.get("optimizer_class", torch.optim.Adam)
    given = kwargs.get("optimizer_kwargs")
    if given is None or implementation_only(given):
        # SB3's settings for this algorithm apply when none are given; choosing only the implementation (the
        # parity switch's fused=False) keeps them, where SB3 drops them whenever optimizer_kwargs is given
        given = {**defaults_for(optimizer_class), **(given or {})}
    # Same update rule, one fused kernel instead of a Python loop over parameters: the step of a small MLP
    # costs about a third less on CPU. Pass optimizer_kwargs={"fused": False} (sb3_parity) for torch's default.
    optimizer_kwargs = with_fused_default(optimizer_class, given)
    if optimizer_kwargs or "optimizer_kwargs" in kwargs:
        kwargs["optimizer_kwargs"] = optimizer_kwargs
    return kwargs


#: lit_sb3's fused Adam on the CPU zeroes its moments' subnormal elements when its step count is a multiple of this
SUBNORMAL_FLUSH_EVERY = 64


def flush_subnormals(tensors: Iterable[torch.Tensor]) -> None:
    """Set the elements of ``tensors`` whose magnitude is below their dtype's smallest normal number to zero."""
    for tensor in tensors:
        tensor.masked_fill_(tensor.abs() < torch.finfo(tensor.dtype).tiny, 0.0)


def flush_subnormal_moments(optimizer: torch.optim.Optimizer) -> None:
    """Make a fused Adam / AdamW on the CPU zero its moments' subnormal elements every :data:`SUBNORMAL_FLUSH_EVERY`
    steps (counted by its first parameter's step; registered once; any other optimizer is left as it is).

    A moment whose gradient stays zero (a ReLU unit that no sample of the batch reaches) decays by ``beta`` every step
    into float32's subnormal range and stays there: the smallest subnormals are fixed points of its rounded decay.
    A step on subnormals costs ~25x a normal one on this CPU: DQN CartPole's [256, 256] Q-network ended 20k steps
    with 55% of its ``exp_avg`` subnormal, its optimizer step at 2.7 ms instead of 0.2 (5 seeds). A moment below
    1.2e-38 moves its parameter by less than ``lr * 1.2e-38 / eps`` (and ``sqrt`` of one adds nothing to ``eps``):
    zeroed, they change no parameter larger than ~1e-26 in magnitude (``tests/lit_sb3/common/test_optimizers.py``).
    SB3's optimizer (the :func:`sb3_parity` switch, not fused) is left as it is, and so is RMSprop; a GPU computes on
    subnormals at full speed."""
    fused_adam = isinstance(optimizer, torch.optim.Adam) and optimizer.defaults.get("fused") is True
    if not fused_adam or optimizer in _FLUSHING:
        return
    optimizer.register_step_post_hook(_flush_after_step)
    _FLUSHING.add(optimizer)


_FLUSHING: weakref.WeakSet[torch.optim.Optimizer] = weakref.WeakSet()  # the optimizers whose hook is registered


def _flush_after_step(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
    first = optimizer.state.get(optimizer.param_groups[0]["params"][0])
    if not first or first["step"].device.type != "cpu" or int(first["step"]) % SUBNORMAL_FLUSH_EVERY:
        return
    flush_subnormals(state[name] for state in optimizer.state.values() for name in ("exp_avg", "exp_avg_sq"))

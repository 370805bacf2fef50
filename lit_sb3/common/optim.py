"""Optimisation steps shared by every gradient-based algorithm: one optimizer step, one metric tracker, and the
torch helpers of the actor-critics (Polyak averaging, frozen critics, the parameters an optimizer owns)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import lightning as L
import numpy as np
import torch
from lightning.pytorch.trainer.states import TrainerStatus

from lit_sb3.common.utils import clip_grad_norm
from lit_sb3.lightning_compat import attached_trainer, hook_calls


def inside_fit(module: L.LightningModule) -> bool:
    """True while a trainer's ``fit`` drives ``module`` (Lightning's backward, precision and optimizer wrappers
    apply); False for SB3-style calls outside it (``train()``, per-update parity checks)."""
    trainer = attached_trainer(module)
    if trainer is None:
        return False
    status = trainer.state.status  # `is` first: the enum's own == compares lower-cased strings (once per update)
    return status is TrainerStatus.RUNNING or status == TrainerStatus.RUNNING


def optimizer_step(
    module: L.LightningModule,
    optimizer: Any,
    loss: torch.Tensor,
    max_grad_norm: float | None = None,
    drop_grads: Sequence[torch.Tensor] = (),
) -> None:
    """zero_grad, backward, optional gradient-norm clipping, step: through Lightning inside a running fit, plain
    torch outside.

    :param optimizer: a raw optimizer or the LightningOptimizer wrapping it
    :param max_grad_norm: clip the norm of the optimizer's gradients to this (None: no clipping)
    :param drop_grads: parameters this loss must not move (TRPO's critic step leaves the actor alone)
    """
    optimizer.zero_grad(set_to_none=True)
    lightning = inside_fit(module)
    if lightning:
        hook_calls.backward(module, loss)
    else:
        loss.backward()
    for param in drop_grads:
        param.grad = None
    if max_grad_norm is not None:
        if lightning:
            clip_grad_norm(module, optimizer, max_grad_norm)
        else:
            params = [p for group in optimizer.param_groups for p in group["params"]]
            torch.nn.utils.clip_grad_norm_(params, max_grad_norm)
    if lightning:
        hook_calls.step(module, optimizer)
    else:
        optimizer.step()


class MetricTracker:
    """Running sums of update statistics as tensors: no host sync per update; averaged (and reset) when logged.

    ``start_over`` makes a statistic's next value begin a new mean, which is how SB3's logger aggregates: each
    ``train()`` call records the means of its own updates and overwrites what an earlier call recorded, while a
    statistic a call does not record (TD3's actor loss between policy updates) keeps its earlier value.
    """

    def __init__(self) -> None:
        self.sums: dict[str, torch.Tensor] = {}
        self.counts: dict[str, int] = {}
        self._stale: set[str] = set()

    def start_over(self, *keys: str) -> None:
        """The next value of each of ``keys`` (of every statistic when none is named) replaces its running mean."""
        self._stale.update(keys or self.sums)

    def __bool__(self) -> bool:
        return bool(self.sums)

    def add(self, **values: torch.Tensor) -> None:
        for key, value in values.items():
            value = value.detach().float()  # bf16 running sums would lose the small terms
            if key in self.sums and key not in self._stale:
                self.sums[key] = self.sums[key] + value  # out of place: the first value is the caller's tensor
                self.counts[key] += 1
            else:
                self.sums[key] = value
                self.counts[key] = 1
                self._stale.discard(key)

    def means(self) -> dict[str, float]:
        """The mean of each statistic since the last call, in one host transfer; then starts over."""
        if not self.sums:
            return {}
        keys = list(self.sums)
        sums = torch.stack([self.sums[k].reshape(()) for k in keys]).tolist()
        # float32 division, as a division of the float32 tensors would do (numpy's scalars cost less per statistic)
        means = [float(np.float32(total) / np.float32(self.counts[k])) for k, total in zip(keys, sums)]
        self.clear()
        return dict(zip(keys, means))

    def clear(self) -> None:
        self.sums.clear()
        self.counts.clear()
        self._stale.clear()

    def state(self) -> dict[str, tuple[torch.Tensor, int]]:
        return {k: (v, self.counts[k]) for k, v in self.sums.items()}

    def load_state(self, state: dict[str, tuple[torch.Tensor, int]]) -> None:
        self.sums = {k: v for k, (v, _) in state.items()}
        self.counts = {k: n for k, (_, n) in state.items()}


@torch.no_grad()
def soft_update(params: Iterable[torch.Tensor], target_params: Iterable[torch.Tensor], tau: float) -> None:
    """Polyak averaging ``target <- (1 - tau) * target + tau * param`` in two foreach calls (no per-tensor loop).

    Scale then add, as SB3's ``polyak_update`` does: a lerp is the same average but rounds differently in the last
    bit, and that alone makes a whole run drift away from SB3's.
    """
    targets, sources = list(target_params), list(params)
    if len(targets) != len(sources):
        raise ValueError(f"soft_update: {len(sources)} parameters for {len(targets)} target parameters")
    if targets:
        torch._foreach_mul_(targets, 1.0 - tau)
        torch._foreach_add_(targets, sources, alpha=tau)


@contextlib.contextmanager
def frozen(params: list[torch.Tensor]) -> Iterator[None]:
    """No weight gradients for ``params`` inside the block (gradients still flow *through* them to the inputs)."""
    for p in params:
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p in params:
            p.requires_grad_(True)


def critic_only_params(policy: Any) -> list[torch.Tensor]:
    """The parameters the critic's optimizer updates and the actor does not use: frozen while the actor's loss reads
    the critic, so that it writes no gradients into them.

    A features extractor shared by actor and critic is the actor's: SB3 trains it through the actor's loss only (the
    critic reads its features without gradients). SAC, TQC and CrossQ leave it out of the critic's optimizer; TD3 and
    DDPG list it there too, and freezing it would keep it from ever training.
    """
    optimized = {id(p) for group in policy.critic.optimizer.param_groups for p in group["params"]}
    actor = {id(p) for p in policy.actor.parameters()}
    return [p for p in policy.critic.parameters() if id(p) in optimized and id(p) not in actor]

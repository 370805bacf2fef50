"""Optimizer steps on stacked parameters ``[N, ...]`` that are exact per seed.

Adam and RMSprop are elementwise, so one step on the stacked tensors is N independent steps; what is not
elementwise is made per seed here: the gradient-norm clipping (each seed's norm over its own parameters) and the
step itself, which takes a mask of the seeds that move (PPO's ``target_kl`` stops seeds one by one: a stopped seed's
parameters, moments and step count stay as they are). Adam with ``fused`` (lit_sb3's default, what the policies'
``optimizer_kwargs`` say) runs torch's fused kernel on each seed's slices, so a seed's step is its own run's to the
last bit; otherwise, and for RMSprop, each step follows the arithmetic of torch's single-tensor implementation (the
same operations in the same order), so one seed's slice matches ``torch.optim.Adam`` / ``RMSprop`` on that seed alone
to float32 rounding (tested to 1e-6).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from lit_sb3.common.optimizers import SUBNORMAL_FLUSH_EVERY, flush_subnormals

_CLIP_EPS = 1e-6  # torch.nn.utils.clip_grad_norm_'s


def _per_seed(values: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """An ``[N]`` tensor shaped to broadcast over ``like`` (``[N, ...]``)."""
    return values.reshape(-1, *([1] * (like.dim() - 1)))


def clip_grad_norm_per_seed(params: Sequence[torch.Tensor], max_norm: float) -> torch.Tensor:
    """Scale each seed's gradients so that their joint 2-norm is at most ``max_norm``; returns the norms ``[N]``.

    Seed i's norm is the norm of its per-parameter norms, as ``torch.nn.utils.clip_grad_norm_`` computes it.
    """
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return torch.zeros(params[0].shape[0], device=params[0].device)
    norms = torch.stack([torch.linalg.vector_norm(g.reshape(g.shape[0], -1), dim=1) for g in grads], dim=1)
    total = torch.linalg.vector_norm(norms, dim=1)
    coef = torch.clamp(max_norm / (total + _CLIP_EPS), max=1.0)
    for g in grads:
        g.mul_(_per_seed(coef, g))
    return total


def _gradients(params: list[torch.Tensor]) -> list[torch.Tensor]:
    """The gradients of ``params`` (each has one: the step passes only those)."""
    grads = [p.grad for p in params if p.grad is not None]
    assert len(grads) == len(params)
    return grads


class BatchedOptimizer:
    """Shared part of the batched optimizers: the stacked parameters, the learning rate and each seed's step count.

    ``step(active)`` applies the update to the seeds where ``active`` is True (all when None). ``seed_state(i)`` /
    ``load_seed_state(i, state)`` move one seed's state (on the host); ``torch_state(i)`` is that state as the
    ordinary optimizer's ``state_dict()["state"]`` holds it (to load into a single model's optimizer). The state and
    the step counts live on the parameters' device.
    """

    state_names: tuple[str, ...] = ()

    def __init__(self, params: Sequence[torch.Tensor], lr: float) -> None:
        self.params = list(params)
        self.lr = lr
        self.n_seeds = self.params[0].shape[0]
        self.steps = torch.zeros(self.n_seeds, dtype=torch.float64, device=self.params[0].device)
        self.state: dict[str, list[torch.Tensor]] = {
            name: [torch.zeros_like(p, memory_format=torch.preserve_format) for p in self.params]
            for name in self.state_names
        }

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self, active: torch.Tensor | None = None) -> None:
        moving = torch.ones(self.n_seeds, dtype=torch.bool) if active is None else active
        partial = not bool(moving.all())
        if not bool(moving.any()):
            return
        moving = moving.to(self.steps.device)
        self.steps += moving.to(self.steps.dtype)
        indices = [i for i, p in enumerate(self.params) if p.grad is not None]
        if partial:  # the stopped seeds' entries go back to what they were after the update
            before = [
                (self.params[i].detach().clone(), [self.state[n][i].clone() for n in self.state_names]) for i in indices
            ]
        self._update(indices)
        if partial:
            for i, (param, states) in zip(indices, before):
                keep = _per_seed(~moving, param)
                self.params[i].copy_(torch.where(keep, param, self.params[i]))
                for name, saved in zip(self.state_names, states):
                    state = self.state[name][i]
                    state.copy_(torch.where(keep, saved, state))

    def _update(self, indices: list[int]) -> None:
        """The update of the parameters at ``indices`` (those with gradients), every seed at once."""
        raise NotImplementedError

    def seed_state(self, seed_index: int) -> dict[str, Any]:
        return {
            "step": float(self.steps[seed_index]),
            **{name: [s[seed_index].to("cpu", copy=True) for s in self.state[name]] for name in self.state_names},
        }

    def load_seed_state(self, seed_index: int, state: dict[str, Any]) -> None:
        self.steps[seed_index] = state["step"]
        for name in self.state_names:
            for mine, saved in zip(self.state[name], state[name]):
                mine[seed_index].copy_(saved)

    def torch_state(self, seed_index: int) -> dict[int, dict[str, torch.Tensor]]:
        """Seed ``seed_index``'s state in ``torch.optim``'s layout (parameter index -> its state)."""
        if float(self.steps[seed_index]) == 0:
            return {}
        return {
            index: {
                "step": torch.tensor(float(self.steps[seed_index])),
                **{name: self.state[name][index][seed_index].clone() for name in self.state_names},
            }
            for index in range(len(self.params))
        }


class BatchedAdam(BatchedOptimizer):
    """``torch.optim.Adam`` (no amsgrad, no weight decay) on stacked parameters, per-seed steps and bias corrections.

    ``fused``: each seed's step is torch's fused Adam kernel (``torch._fused_adam_``, what lit_sb3's models run by
    default) on that seed's slices, each with its own step count, so a seed's parameters and moments move exactly as
    its own run's fused optimizer moves them on the same gradients (on the CPU zeroing the subnormal moments when that
    run's optimizer does); one call steps every seed (the kernel loops over the slices in C++). Otherwise torch's
    single-tensor arithmetic on the stacked tensors (its default on the CPU).
    """

    state_names = ("exp_avg", "exp_avg_sq")

    def __init__(
        self,
        params: Sequence[torch.Tensor],
        lr: float,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        fused: bool = False,
    ) -> None:
        super().__init__(params, lr)
        self.betas, self.eps, self.fused = betas, eps, fused
        self._slices: tuple[list[tuple[torch.Tensor, ...]], ...] | None = None

    @torch.no_grad()
    def step(self, active: torch.Tensor | None = None) -> None:
        if not self.fused:
            super().step(active)
            return
        seeds = list(range(self.n_seeds)) if active is None else active.cpu().nonzero().flatten().tolist()
        if not seeds:
            return
        if active is None:
            self.steps += 1
        else:
            self.steps[seeds] += 1
        indices = [i for i, p in enumerate(self.params) if p.grad is not None]
        # each seed's slices of every parameter, seed by seed: views, so the kernel updates the stacked tensors in
        # place (the parameters' and moments' views are made once; the gradients are new tensors every step)
        grads_per_param = [g.unbind(0) for g in _gradients([self.params[i] for i in indices])]
        grads = [per_param[k] for k in seeds for per_param in grads_per_param]
        params, exp_avgs, exp_avg_sqs = ([views[i][k] for k in seeds for i in indices] for views in self._views())
        # the kernel reads each tensor's step from a float32 scalar tensor, as torch's fused Adam keeps it
        counts = self.steps.to(torch.float32).unbind(0)
        beta1, beta2 = self.betas
        torch._fused_adam_(
            params,
            grads,
            exp_avgs,
            exp_avg_sqs,
            [],
            [counts[k] for k in seeds for _ in indices],
            lr=self.lr,
            beta1=beta1,
            beta2=beta2,
            weight_decay=0.0,
            eps=self.eps,
            amsgrad=False,
            maximize=False,
        )
        # what the seed's own fused Adam does after its step (lit_sb3.common.optimizers.flush_subnormal_moments)
        if params[0].device.type == "cpu":
            steps = self.steps.tolist()
            due = [k for k in seeds if steps[k] % SUBNORMAL_FLUSH_EVERY == 0]
            _, exp_avg_views, exp_avg_sq_views = self._views()
            flush_subnormals(views[i][k] for views in (exp_avg_views, exp_avg_sq_views) for k in due for i in indices)

    def _views(self) -> tuple[list[tuple[torch.Tensor, ...]], ...]:
        """Per parameter, its seeds' slices of the parameter, ``exp_avg`` and ``exp_avg_sq`` (made on first use)."""
        if self._slices is None:
            self._slices = tuple(
                [t.detach().unbind(0) for t in tensors]
                for tensors in (self.params, self.state["exp_avg"], self.state["exp_avg_sq"])
            )
        return self._slices

    def _update(self, indices: list[int]) -> None:
        beta1, beta2 = self.betas
        params = [self.params[i] for i in indices]
        grads = _gradients(params)
        exp_avgs = [self.state["exp_avg"][i] for i in indices]
        exp_avg_sqs = [self.state["exp_avg_sq"][i] for i in indices]
        # torch's single-tensor Adam, operation by operation (the foreach calls run the same kernels per tensor)
        torch._foreach_lerp_(exp_avgs, grads, 1 - beta1)
        torch._foreach_mul_(exp_avg_sqs, beta2)
        torch._foreach_addcmul_(exp_avg_sqs, grads, grads, value=1 - beta2)
        # the bias corrections in double precision, as torch computes them from a Python float step
        steps = self.steps.clamp(min=1.0)
        step_size = (self.lr / (1 - beta1**steps)).to(params[0].dtype)
        correction2_sqrt = ((1 - beta2**steps) ** 0.5).to(params[0].dtype)
        for param, exp_avg, denom in zip(params, exp_avgs, torch._foreach_sqrt(exp_avg_sqs)):
            denom.div_(_per_seed(correction2_sqrt, param)).add_(self.eps)
            param.add_(_per_seed(-step_size, param) * exp_avg / denom)


class BatchedRMSprop(BatchedOptimizer):
    """``torch.optim.RMSprop`` (not centered, no momentum, no weight decay) on stacked parameters."""

    state_names = ("square_avg",)

    def __init__(self, params: Sequence[torch.Tensor], lr: float, alpha: float = 0.99, eps: float = 1e-8) -> None:
        super().__init__(params, lr)
        self.alpha, self.eps = alpha, eps

    def _update(self, indices: list[int]) -> None:
        params = [self.params[i] for i in indices]
        grads = _gradients(params)
        square_avgs = [self.state["square_avg"][i] for i in indices]
        torch._foreach_mul_(square_avgs, self.alpha)
        torch._foreach_addcmul_(square_avgs, grads, grads, value=1 - self.alpha)
        averages = torch._foreach_sqrt(square_avgs)
        torch._foreach_add_(averages, self.eps)
        torch._foreach_addcdiv_(params, grads, averages, value=-self.lr)


_IMPLEMENTATION_KEYS = {"fused", "foreach", "capturable", "differentiable"}


def batched_optimizer(
    optimizer_class: type[torch.optim.Optimizer], kwargs: dict[str, Any], params: Sequence[torch.Tensor], lr: float
) -> BatchedOptimizer:
    """The batched counterpart of ``optimizer_class(params, lr=lr, **kwargs)`` (one line naming what it is not)."""
    settings = {k: v for k, v in kwargs.items() if k not in _IMPLEMENTATION_KEYS}
    if optimizer_class is torch.optim.Adam:
        unsupported = {k: v for k, v in settings.items() if k not in ("betas", "eps") and v not in (0, False, None)}
        if not unsupported:
            betas = tuple(settings.get("betas", (0.9, 0.999)))
            return BatchedAdam(params, lr, betas, settings.get("eps", 1e-8), fused=bool(kwargs.get("fused")))
    elif optimizer_class is torch.optim.RMSprop:
        unsupported = {k: v for k, v in settings.items() if k not in ("alpha", "eps") and v not in (0, False, None)}
        if not unsupported:
            return BatchedRMSprop(params, lr, settings.get("alpha", 0.99), settings.get("eps", 1e-8))
    else:
        unsupported = {"optimizer_class": optimizer_class.__name__}
    raise ValueError(
        f"policy_kwargs: seed groups batch Adam (betas, eps) and RMSprop (alpha, eps) optimizers; got "
        f"{optimizer_class.__name__} with {unsupported}"
    )

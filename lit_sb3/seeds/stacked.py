"""N copies of an SB3 network as one: parameters stacked on a leading seed axis, and a batched forward.

The forward runs each ``nn.Linear`` of the copies as one ``torch.baddbmm`` (weights ``[N, out, in]``, inputs
``[N, batch, in]``) and each parameter-free layer (activations) once on the whole ``[N, batch, ...]`` tensor.
``benchmarks/seeds_forward.py`` measured it against ``torch.func`` (``stack_module_state`` + ``functional_call`` +
``vmap``) on PPO's CartPole MlpPolicy (OMP_NUM_THREADS=1, CPU time per call, best of interleaved repeats; load
1.2 on 2 cores)::

    N=5,  8 envs: rollout forward  vmap 337 us  baddbmm 72 us  (5 ordinary forwards 318 us)
                  update fwd+bwd   vmap 1169 us baddbmm 596 us (minibatch 64 per seed)
    N=10, 8 envs: rollout forward  vmap 377 us  baddbmm 88 us  (10 ordinary forwards 615 us)
                  update fwd+bwd   vmap 1564 us baddbmm 970 us

so the layers are batched by hand: vmap's per-operator dispatch costs more than the small matrix products. The
template modules (the copies' common structure) stay SB3's: :func:`module_slice` gives seed i's entries of the
stacked tensors under the module's own ``state_dict`` names, to load into an ordinary policy.

For the off-policy algorithms: :func:`stack_parameters` stacks any list of identical modules (Q-networks, actors,
critics, their targets) and :func:`batched_forward` runs a template ``nn.Sequential`` / ``nn.Linear`` / SB3 flatten
extractor on them; :func:`check_batchable` refuses, in one line, a module it cannot batch.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from stable_baselines3.common.torch_layers import FlattenExtractor
from torch import nn

Stacked = dict[str, torch.Tensor]


def stack_parameters(modules: Sequence[nn.Module]) -> Stacked:
    """The modules' parameters stacked on a new leading axis (one leaf tensor per name, requiring grad)."""
    if not modules:
        raise ValueError("stack_parameters: no modules to stack")
    names = [name for name, _ in modules[0].named_parameters()]
    stacked: Stacked = {}
    for name in names:
        values = [dict(m.named_parameters())[name].detach() for m in modules]
        stacked[name] = torch.stack(values).requires_grad_(True)
    return stacked


def module_slice(stacked: Mapping[str, torch.Tensor], index: int, prefix: str = "") -> dict[str, torch.Tensor]:
    """Seed ``index``'s parameters (copies on the host), named as the template's ``state_dict`` names them
    (``prefix`` removed)."""
    return {
        name[len(prefix) :]: value[index].detach().to("cpu", copy=True)
        for name, value in stacked.items()
        if name.startswith(prefix)
    }


def load_slice(stacked: Mapping[str, torch.Tensor], index: int, module: nn.Module, prefix: str = "") -> None:
    """Copy seed ``index``'s parameters into ``module`` (an ordinary copy of the template)."""
    with torch.no_grad():
        for name, param in module.named_parameters():
            param.copy_(stacked[prefix + name][index])


def set_slice(stacked: Mapping[str, torch.Tensor], index: int, values: Mapping[str, torch.Tensor]) -> None:
    """Overwrite seed ``index``'s parameters with ``values`` (same names): the inverse of :func:`module_slice`."""
    with torch.no_grad():
        for name, value in values.items():
            stacked[name][index].copy_(value)


def _parameter_free(module: nn.Module) -> bool:
    return next(module.parameters(), None) is None and next(module.buffers(), None) is None


def check_batchable(module: nn.Module, what: str) -> None:
    """Fail in one line unless :func:`batched_forward` can run ``module`` (Linear layers, parameter-free layers,
    Sequentials of them, SB3's flatten extractor)."""
    if isinstance(module, (nn.Linear, FlattenExtractor, nn.Flatten)):
        return
    if isinstance(module, nn.Sequential):
        for child in module:
            check_batchable(child, what)
        return
    if _parameter_free(module) and not list(module.children()):
        return
    raise ValueError(
        f"{what}: seed groups batch MLP networks (Linear layers, activations, flatten extractors), "
        f"not {type(module).__name__}; train this configuration's seeds one process each"
    )


def batched_forward(
    template: nn.Module, stacked: Mapping[str, torch.Tensor], prefix: str, x: torch.Tensor
) -> torch.Tensor:
    """``template(x)`` for every seed at once: ``x`` is ``[N, batch, ...]``, the parameters are
    ``stacked[prefix + name]``."""
    for layer in _layers(template, prefix):
        if isinstance(layer, tuple):
            weight, bias = layer
            x = _linear(x, stacked[weight], stacked.get(bias))
        elif layer is None:
            x = x.flatten(start_dim=2)
        elif isinstance(layer, nn.Tanh) and x.device.type == "cpu" and x.dtype == torch.float32:
            x = _NumpyTanh.apply(x) if x.requires_grad else _numpy_tanh(x)
        else:
            x = layer(x)  # a parameter-free, elementwise layer (check_batchable admitted it)
    return x


def _numpy_tanh(x: torch.Tensor) -> torch.Tensor:
    return torch.from_numpy(np.tanh(x.detach().numpy()))


class _NumpyTanh(torch.autograd.Function):
    """``tanh`` of a float32 tensor on the CPU through numpy's. torch's is correctly rounded there (0.51 ulp at most,
    measured over 2M values) and scalar: 2.7 ns an element, more than half of a PPO group's forward ([5, 256, 64]:
    208 us). numpy's is vectorized, within 1.4 ulp, and 6x faster (34 us); like torch's it gives an element the same
    bits wherever it lies in the tensor (``tests/lit_sb3/seeds/test_core.py``), so a seed's numbers still do not
    depend on its group. Only the group's forward uses it: an ordinary model keeps SB3's ``nn.Tanh``. The backward
    is the one torch's ``tanh`` has (``tanh_backward`` of the output)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        y = _numpy_tanh(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (y,) = ctx.saved_tensors
        return torch.ops.aten.tanh_backward(grad, y)


_Layer = tuple[str, str] | nn.Module | None  # a Linear's (weight, bias) names, a parameter-free layer, a flatten
_LAYERS: weakref.WeakKeyDictionary[nn.Module, dict[str, list[_Layer]]] = weakref.WeakKeyDictionary()


def _layers(template: nn.Module, prefix: str) -> list[_Layer]:
    """``template``'s layers in order, flattened out of its Sequentials (made once per template and prefix: the
    forward runs for every env step and gradient step, and walking the modules cost more than a small product)."""
    if not isinstance(template, nn.Sequential):  # (a single layer: nothing to walk; not kept, so nothing holds it)
        return list(_walk(template, prefix))
    by_prefix = _LAYERS.setdefault(template, {})
    if prefix not in by_prefix:
        by_prefix[prefix] = list(_walk(template, prefix))
    return by_prefix[prefix]


def _walk(template: nn.Module, prefix: str) -> Iterator[_Layer]:
    if isinstance(template, nn.Linear):
        yield prefix + "weight", prefix + "bias"
    elif isinstance(template, (FlattenExtractor, nn.Flatten)):
        yield None
    elif isinstance(template, nn.Sequential):
        for index, child in enumerate(template):
            yield from _walk(child, f"{prefix}{index}.")
    else:
        yield template


def _product(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    transposed = weight.transpose(1, 2)
    return torch.bmm(x, transposed) if bias is None else torch.baddbmm(bias.unsqueeze(1), x, transposed)


class _StackedLinear(torch.autograd.Function):
    """``x @ weight.T + bias`` per seed (``torch.baddbmm``), with the backward written out so that the weights'
    gradient comes out in their own layout: autograd's backward of the product with ``weight.transpose(1, 2)`` makes
    the gradient of the transpose (``x.T @ grad``) and then copies it into a contiguous ``[N, out, in]`` gradient, a
    strided copy that cost ~0.3 ms of a 2.5 ms DQN CartPole gradient step (5 seeds, [256, 256]). Here it is
    ``grad.T @ x`` directly, the product an ordinary ``nn.Linear`` computes for its weights' gradient (per seed, the
    same bits as the single run's ``mm`` on the shapes measured)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        # (forward with ctx, not setup_context: apply then skips binding its arguments with inspect on every call)
        ctx.save_for_backward(x, weight)
        ctx.has_bias = bias is not None
        return _product(x, weight, bias)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        x, weight = ctx.saved_tensors
        grad_x = torch.bmm(grad, weight) if ctx.needs_input_grad[0] else None
        grad_weight = torch.bmm(grad.transpose(1, 2), x) if ctx.needs_input_grad[1] else None
        grad_bias = grad.sum(dim=1) if ctx.has_bias and ctx.needs_input_grad[2] else None
        return grad_x, grad_weight, grad_bias


def _linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """``x @ weight.T + bias`` per seed as one batched matrix product.

    torch computes a batched product of one matrix pair with another kernel than a batch of several (measured: up
    to 3e-5 apart on some shapes, bit-identical slices for any N >= 2), so a group of one seed pads its batch with a
    zero pair: a seed then gets the same bits alone as in any group. The padding carries no gradient back. The input
    is made contiguous first, as the padding makes it.
    """
    n = weight.shape[0]
    # in the layout the padding's cat makes: a product of a strided input (a group's observations can be a transpose)
    # runs another kernel than a contiguous one's, whose rounding differs on AVX-512 CPUs
    x = x.contiguous()
    if n == 1:
        x = torch.cat([x, torch.zeros_like(x)])
        weight = torch.cat([weight, torch.zeros_like(weight)])
        bias = None if bias is None else torch.cat([bias, torch.zeros_like(bias)])
    needs_grad = torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in (x, weight, bias))
    out: torch.Tensor = _StackedLinear.apply(x, weight, bias) if needs_grad else _product(x, weight, bias)
    return out if n > 1 else out[:1]  # (no slice otherwise: its backward would copy the whole gradient)

"""The seed groups' core: batched optimizer steps exact per seed, per-seed clipping and masks, stacked forward,
per-seed random streams that draw what the seed's own process draws."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from gymnasium import spaces
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.policies import ActorCriticPolicy

from lit_sb3.common.optimizers import SUBNORMAL_FLUSH_EVERY, flush_subnormal_moments
from lit_sb3.seeds.actor_critic import (
    StackedActorCritic,
    categorical_entropy,
    categorical_log_prob,
    log_probabilities,
)
from lit_sb3.seeds.optim import BatchedAdam, BatchedRMSprop, batched_optimizer, clip_grad_norm_per_seed
from lit_sb3.seeds.stacked import batched_forward, load_slice
from lit_sb3.seeds.streams import SeedStreams, categorical_sample, gaussian
from lit_sb3.seeds.transfer import to_device, to_host

N = 4
SHAPES = [(3, 5), (5,), (2,)]


def _stacked(seed: int = 0) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(N, *shape, generator=gen).requires_grad_(True) for shape in SHAPES]


def _grads(step: int) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(100 + step)
    return [torch.randn(N, *shape, generator=gen) for shape in SHAPES]


@pytest.mark.parametrize(
    ("batched_cls", "torch_cls", "kwargs"),
    [
        (BatchedAdam, torch.optim.Adam, {"betas": (0.9, 0.999), "eps": 1e-5}),
        (BatchedRMSprop, torch.optim.RMSprop, {"alpha": 0.99, "eps": 1e-5}),
    ],
)
def test_batched_step_matches_torch_on_each_seed(batched_cls: type, torch_cls: type, kwargs: dict) -> None:
    """Seed i's slice after masked, clipped steps equals torch's optimizer run on seed i alone (1e-6); a seed masked
    out of a step neither moves nor counts the step."""
    params = _stacked()
    batched = batched_cls(params, lr=3e-3, **kwargs)
    singles = [[p[i].detach().clone().requires_grad_(True) for p in params] for i in range(N)]
    optimizers = [torch_cls(single, lr=3e-3, foreach=False, **kwargs) for single in singles]
    masks = [None, torch.tensor([True, False, True, True]), torch.tensor([False, False, True, False]), None]
    for step, mask in enumerate(masks):
        grads = _grads(step)
        for p, g in zip(params, grads):
            p.grad = g.clone()
        norms = clip_grad_norm_per_seed(params, max_norm=0.5)
        batched.step(mask)
        for i in range(N):
            if mask is not None and not mask[i]:
                continue
            for p, g in zip(singles[i], grads):
                p.grad = g[i].clone()
            single_norm = torch.nn.utils.clip_grad_norm_(singles[i], 0.5)
            assert torch.allclose(norms[i], single_norm, atol=1e-6)
            optimizers[i].step()
    for i in range(N):
        for stacked, single in zip(params, singles[i]):
            torch.testing.assert_close(stacked[i], single, atol=1e-6, rtol=0)
        expected_steps = sum(1 for m in masks if m is None or m[i])
        assert batched.seed_state(i)["step"] == expected_steps
        torch_state = optimizers[i].state_dict()["state"]
        for index, state in batched.torch_state(i).items():
            for name, value in state.items():
                torch.testing.assert_close(value.float(), torch_state[index][name].float(), atol=1e-6, rtol=0)


def test_fused_adam_is_each_seeds_fused_adam_bit_for_bit() -> None:
    """With ``fused`` (lit_sb3's default Adam), seed i's parameters, moments and step count after masked steps are
    those of ``torch.optim.Adam(fused=True)`` on seed i alone, to the last bit (the same kernel on its slices)."""
    shapes = [(64, 4), (64,), (64, 64), (2, 64)]
    gen = torch.Generator().manual_seed(0)
    params = [torch.randn(N, *shape, generator=gen).requires_grad_(True) for shape in shapes]
    singles = [[p[i].detach().clone().requires_grad_(True) for p in params] for i in range(N)]
    batched = batched_optimizer(torch.optim.Adam, {"fused": True, "eps": 1e-5}, params, lr=3e-3)
    assert isinstance(batched, BatchedAdam) and batched.fused
    optimizers: list[torch.optim.Optimizer] = [
        torch.optim.Adam(single, lr=3e-3, eps=1e-5, fused=True) for single in singles
    ]
    masks = [None, torch.tensor([True, False, True, True]), None, torch.tensor([False, False, True, False]), None]
    for step, mask in enumerate(masks):
        grads = [torch.randn(N, *shape, generator=gen) * 10.0 ** -(step % 4) for shape in shapes]
        _step_each(batched, params, optimizers, singles, grads, mask)
    _assert_each_seed_is_its_own(batched, params, optimizers, singles)


def _step_each(
    batched: BatchedAdam,
    params: list[torch.Tensor],
    optimizers: list[torch.optim.Optimizer],
    singles: list[list[torch.Tensor]],
    grads: list[torch.Tensor],
    mask: torch.Tensor | None,
) -> None:
    """One batched step, and seed i's own optimizer's step on its slices where ``mask`` lets it move."""
    for p, g in zip(params, grads):
        p.grad = g.clone()
    batched.step(mask)
    for i in range(N):
        if mask is None or mask[i]:
            for p, g in zip(singles[i], grads):
                p.grad = g[i].clone()
            optimizers[i].step()


def _assert_each_seed_is_its_own(
    batched: BatchedAdam,
    params: list[torch.Tensor],
    optimizers: list[torch.optim.Optimizer],
    singles: list[list[torch.Tensor]],
) -> None:
    """Seed i's parameters, moments and step count are its own optimizer's, bit for bit."""
    for i in range(N):
        assert all(torch.equal(stacked[i], single) for stacked, single in zip(params, singles[i]))
        torch_state = optimizers[i].state_dict()["state"]
        for index, state in batched.torch_state(i).items():
            assert all(torch.equal(value.float(), torch_state[index][name].float()) for name, value in state.items())


def test_fused_adam_zeroes_subnormal_moments_when_each_seeds_own_optimizer_does() -> None:
    """Gradients that stop for half the entries leave first moments among the subnormals; each seed's slices are
    zeroed on the steps its own lit_sb3 fused Adam zeroes them (its count a multiple of SUBNORMAL_FLUSH_EVERY, seeds
    masked out of some steps counting fewer), so parameters and moments stay those of the seed's own optimizer."""
    shapes = [(16, 4), (16,)]
    gen = torch.Generator().manual_seed(3)
    params = [torch.randn(N, *shape, generator=gen).requires_grad_(True) for shape in shapes]
    singles = [[p[i].detach().clone().requires_grad_(True) for p in params] for i in range(N)]
    # beta1 0.5: a stopped gradient's moment reaches the subnormals in ~110 steps, before the second flush
    batched = batched_optimizer(torch.optim.Adam, {"fused": True, "betas": (0.5, 0.999)}, params, lr=1e-3)
    assert isinstance(batched, BatchedAdam)
    optimizers: list[torch.optim.Optimizer] = [
        torch.optim.Adam(single, lr=1e-3, betas=(0.5, 0.999), fused=True) for single in singles
    ]
    for optimizer in optimizers:
        flush_subnormal_moments(optimizer)
    seen_subnormal = False
    skips = torch.tensor([True, False, True, True])
    for step in range(2 * SUBNORMAL_FLUSH_EVERY + 40):
        grads = [torch.randn(N, *shape, generator=gen) * 1e-3 for shape in shapes]
        for g in grads:
            if step >= 10:
                g.view(N, -1)[:, ::2] = 0.0
        _step_each(batched, params, optimizers, singles, grads, skips if step % 7 == 3 else None)
        tiny = torch.finfo(torch.float32).tiny
        subnormal = any(bool(((m != 0) & (m.abs() < tiny)).any()) for m in batched.state["exp_avg"])
        seen_subnormal = seen_subnormal or subnormal
        _assert_each_seed_is_its_own(batched, params, optimizers, singles)
    assert seen_subnormal and not subnormal  # moments went subnormal, then every seed's were zeroed


@pytest.mark.parametrize("shape", [(5, 64, 4, 256), (5, 64, 256, 256), (5, 64, 256, 2), (1, 16, 3, 8)])
def test_stacked_linear_gradients_are_each_seeds_linear_layers(shape: tuple[int, int, int, int]) -> None:
    """The batched linear layer's output and its input's and bias's gradients are autograd's of the batched product
    (bit for bit); its weights' gradient is what seed i's own ``nn.Linear`` computes (bit for bit on the groups of 5,
    where autograd's gradient of the batched product differs in the last bit on the first, (5, 64, 4, 256); to
    float32 rounding for a group of one on an AVX-512 Xeon)."""
    n, batch, n_in, n_out = shape
    gen = torch.Generator().manual_seed(1)
    x, weight = torch.randn(n, batch, n_in, generator=gen), torch.randn(n, n_out, n_in, generator=gen)
    bias, grad = torch.randn(n, n_out, generator=gen), torch.randn(n, batch, n_out, generator=gen)
    leaves = [t.clone().requires_grad_(True) for t in (x, weight, bias)]
    out = batched_forward(torch.nn.Linear(n_in, n_out), {"weight": leaves[1], "bias": leaves[2]}, "", leaves[0])
    out.backward(grad)
    reference = [t.clone().requires_grad_(True) for t in (x, weight, bias)]
    expected = torch.baddbmm(reference[2].unsqueeze(1), reference[0], reference[1].transpose(1, 2))
    expected.backward(grad)
    assert torch.equal(out, expected)
    assert leaves[1].grad is not None and leaves[1].grad.is_contiguous()
    for mine, theirs in ((leaves[0], reference[0]), (leaves[2], reference[2])):
        assert mine.grad is not None and theirs.grad is not None and torch.equal(mine.grad, theirs.grad)
    for i in range(n):
        layer = torch.nn.Linear(n_in, n_out)
        with torch.no_grad():
            layer.weight.copy_(weight[i])
            layer.bias.copy_(bias[i])
        layer(x[i]).backward(grad[i])
        assert layer.weight.grad is not None
        if n > 1:
            assert torch.equal(leaves[1].grad[i], layer.weight.grad)
        else:  # a group of one pads its batch; the tiny product's kernel rounds differently from mm's on some CPUs
            torch.testing.assert_close(leaves[1].grad[i], layer.weight.grad, rtol=1e-6, atol=1e-6)


def test_a_seeds_linear_layer_does_not_depend_on_its_inputs_layout_or_group() -> None:
    """A group's observations may come as a transpose (strided): a seed's product is the same bits as from a
    contiguous input, alone (padded to a pair) or in a group of five."""
    gen = torch.Generator().manual_seed(4)
    x = torch.randn(5, 4, 4, generator=gen).transpose(1, 2)  # strided, as a transposed observation array
    weight, bias = torch.randn(5, 64, 4, generator=gen), torch.randn(5, 64, generator=gen)
    group = batched_forward(torch.nn.Linear(4, 64), {"weight": weight, "bias": bias}, "", x)
    for i in range(5):
        params = {"weight": weight[i : i + 1], "bias": bias[i : i + 1]}
        alone = batched_forward(torch.nn.Linear(4, 64), params, "", x[i : i + 1].contiguous())
        assert torch.equal(alone[0], group[i])


def test_a_fully_masked_step_changes_nothing() -> None:
    params = _stacked()
    optimizer = BatchedAdam(params, lr=1e-2)
    before = [p.detach().clone() for p in params]
    for p, g in zip(params, _grads(0)):
        p.grad = g
    optimizer.step(torch.zeros(N, dtype=torch.bool))
    assert all(torch.equal(a, b) for a, b in zip(before, params))
    assert optimizer.steps.sum() == 0


def test_seed_state_round_trip() -> None:
    params = _stacked()
    optimizer = BatchedAdam(params, lr=1e-2)
    for p, g in zip(params, _grads(0)):
        p.grad = g
    optimizer.step()
    other = BatchedAdam(_stacked(1), lr=1e-2)
    other.load_seed_state(2, optimizer.seed_state(2))
    assert other.seed_state(2)["step"] == 1
    assert all(torch.equal(a[2], b[2]) for a, b in zip(other.state["exp_avg"], optimizer.state["exp_avg"]))


def test_unbatched_optimizer_refused() -> None:
    with pytest.raises(ValueError, match="policy_kwargs: seed groups batch Adam"):
        batched_optimizer(torch.optim.SGD, {}, _stacked(), lr=1e-3)
    with pytest.raises(ValueError, match="amsgrad"):
        batched_optimizer(torch.optim.Adam, {"amsgrad": True}, _stacked(), lr=1e-3)


def test_a_groups_tanh_is_within_float32_rounding_and_independent_of_where_an_element_lies() -> None:
    """The group's forward computes ``nn.Tanh`` with numpy's tanh on the CPU: within 2 ulp of the exact value (torch's
    is within 1), an element's bits the same in any slice, batch or group of the tensor (so a seed's numbers do not
    depend on its group), and the backward torch's ``tanh`` has for that output."""
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(7, 129, 65, generator=gen) * 3
    tanh = torch.nn.Sequential(torch.nn.Tanh())
    y = batched_forward(tanh, {}, "", x)
    exact = torch.tanh(x.double())
    ulp = torch.from_numpy(np.spacing(exact.abs().float().numpy())).double()
    assert float(((y.double() - exact).abs() / ulp).max()) <= 2.0
    for seeds, rows in ((slice(3, 4), slice(None)), (slice(1, 6), slice(5, 6)), (slice(None), slice(17, 50))):
        assert torch.equal(batched_forward(tanh, {}, "", x[seeds, rows].contiguous()), y[seeds, rows])
    leaf, grad = x.clone().requires_grad_(True), torch.randn(x.shape, generator=gen)
    out = batched_forward(tanh, {}, "", leaf)
    out.backward(grad)
    assert torch.equal(out, y) and leaf.grad is not None
    assert torch.equal(leaf.grad, torch.ops.aten.tanh_backward(grad, y))


@pytest.mark.parametrize("action_space", [spaces.Discrete(3), spaces.Box(-1.0, 1.0, (2,))])
def test_stacked_forward_equals_each_policy(action_space: spaces.Space) -> None:
    """The batched forward gives each seed what its own SB3 policy gives (logits/mean, values, log-prob, entropy)."""
    obs_space = spaces.Box(-1.0, 1.0, (4,))
    torch.manual_seed(0)
    policies = [ActorCriticPolicy(obs_space, action_space, lambda _: 3e-4) for _ in range(3)]
    stacked = StackedActorCritic(policies)
    obs = torch.randn(3, 6, 4)
    action_param, values = stacked.heads(obs)
    actions = torch.stack([torch.as_tensor(action_space.sample()) for _ in range(18)]).reshape(3, 6, -1)
    actions = actions.squeeze(-1) if isinstance(action_space, spaces.Discrete) else actions.float()
    log_prob, entropy = stacked.log_prob_entropy(action_param, actions)
    for i, policy in enumerate(policies):
        v, lp, ent = policy.evaluate_actions(obs[i], actions[i])
        torch.testing.assert_close(values[i], v.flatten(), atol=1e-6, rtol=0)
        torch.testing.assert_close(log_prob[i], lp, atol=1e-6, rtol=0)
        torch.testing.assert_close(entropy[i], ent, atol=1e-6, rtol=0)
        copy = ActorCriticPolicy(obs_space, action_space, lambda _: 3e-4)
        load_slice(stacked.params, i, copy)
        assert all(torch.equal(a, b) for a, b in zip(copy.state_dict().values(), policy.state_dict().values()))


def test_categorical_quantities_are_torchs_categoricals_bit_for_bit() -> None:
    """The group's log-probabilities and entropies (with their gradients, as a loss uses them) and its probabilities
    (as sampling uses them) are those of ``torch.distributions.Categorical(logits=...)`` exactly, extreme logits
    included (a probability underflows)."""
    torch.manual_seed(0)
    logits = torch.randn(3, 7, 4) * 5
    logits[0, 0] = torch.tensor([300.0, -300.0, 0.0, 1.0])
    actions = torch.randint(0, 4, (3, 7))
    grads = torch.randn(3, 7), torch.randn(3, 7)
    leaves = [logits.clone().requires_grad_(), logits.clone().requires_grad_()]
    dist = torch.distributions.Categorical(logits=leaves[0], validate_args=False)
    theirs = dist.log_prob(actions), dist.entropy()
    log_p = log_probabilities(leaves[1])
    ours = categorical_log_prob(log_p, actions), categorical_entropy(log_p)
    assert all(torch.equal(mine, torchs) for mine, torchs in zip(ours, theirs))
    torch.autograd.backward(theirs, grads)
    torch.autograd.backward(ours, grads)
    assert leaves[0].grad is not None and torch.equal(leaves[0].grad, leaves[1].grad)
    assert torch.equal(log_probabilities(logits).softmax(-1), torch.distributions.Categorical(logits=logits).probs)


def test_a_seeds_draws_do_not_depend_on_its_group() -> None:
    alone, grouped = SeedStreams([3]), SeedStreams([0, 1, 2, 3, 4])
    for _ in range(3):
        assert torch.equal(alone.exponential((8, 2))[0], grouped.exponential((8, 2))[3])
        assert torch.equal(alone.normal((8, 2))[0], grouped.normal((8, 2))[3])
        drawing = [True, False, True, True, False]
        assert (alone.permutations(16, [True])[0] == grouped.permutations(16, drawing)[3]).all()
    assert (grouped.permutations(16, drawing)[1] == np.arange(16)).all()  # a seed not drawing gets no order...
    assert grouped.state(1)["numpy"]["pos"] == SeedStreams([1]).state(0)["numpy"]["pos"]  # ...and draws nothing


def test_take_global_gives_a_seed_its_processs_generators() -> None:
    """After ``take_global``, a seed's streams draw what the process's global torch and numpy generators draw (with
    the calls of an ordinary run: torch's distributions, SB3's buffers and noise), and their state round-trips."""
    streams = SeedStreams([0, 1])
    torch.manual_seed(11)
    np.random.seed(11)
    torch.randn(5)  # a model's initialisation moves the global generators
    np.random.normal()  # (and leaves numpy's Gaussian cache full: the state keeps it)
    probs = torch.softmax(torch.arange(18.0).reshape(6, 3) / 7, -1)
    streams.take_global(1)
    saved = streams.state(1)
    assert saved["numpy"]["has_gauss"] == 1

    def draw_both() -> None:
        assert torch.equal(streams.normal((4, 2))[1], torch.distributions.Normal(torch.zeros(4, 2), 1.0).rsample())
        expected = torch.distributions.Categorical(probs=probs).sample()
        assert torch.equal(categorical_sample(probs, streams.exponential((6, 3))[1]), expected)
        assert torch.equal(streams.normal((16, 1), 0.2)[1], torch.empty(16, 1).normal_(0.0, 0.2))  # TD3's smoothing
        assert (streams.permutations(10, [False, True])[1] == np.random.permutation(10)).all()
        assert streams.numpy[1].rand() == np.random.rand()
        assert (streams.numpy[1].randint(0, 7, size=5) == np.random.randint(0, 7, size=5)).all()
        assert streams.numpy[1].normal(0.0, 0.1) == np.random.normal(0.0, 0.1)

    draw_both()
    loaded = torch.load(_saved(saved), weights_only=True)  # (a seed state loads with weights_only)
    streams.load_state(1, loaded)  # back to where take_global found the generators: the same draws again
    torch.manual_seed(11)
    np.random.seed(11)
    torch.randn(5)
    np.random.normal()
    draw_both()


def _saved(state: object) -> io.BytesIO:
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return buffer


def test_categorical_sample_is_torch_multinomial() -> None:
    """``argmax(probs / Exp(1))`` is ``torch.multinomial(probs, 1, True)`` from the same generator state, draw for
    draw (the CPU kernel's one-sample path), and samples the categorical."""
    for trial in range(200):
        gen = torch.Generator().manual_seed(trial)
        probs = torch.softmax(3 * torch.randn(1 + trial % 9, 2 + trial % 5, generator=gen), -1)
        multinomial, ours = torch.Generator().manual_seed(trial), torch.Generator().manual_seed(trial)
        expected = torch.multinomial(probs, 1, True, generator=multinomial).flatten()
        draws = torch.empty(probs.shape).exponential_(1.0, generator=ours)
        assert torch.equal(categorical_sample(probs, draws), expected)
        assert torch.equal(ours.get_state(), multinomial.get_state())
    probs = torch.tensor([0.2, 0.5, 0.3]).expand(20000, 3)
    samples = categorical_sample(probs, torch.empty(20000, 3).exponential_(generator=torch.Generator().manual_seed(0)))
    frequencies = torch.bincount(samples, minlength=3).float() / 20000
    torch.testing.assert_close(frequencies, torch.tensor([0.2, 0.5, 0.3]), atol=0.015, rtol=0)


def test_gaussian_is_normal_rsample() -> None:
    mean, log_std = torch.randn(2, 5, 3), torch.randn(2, 3)
    noise = torch.randn(2, 5, 3)
    for i in range(2):
        normal = torch.distributions.Normal(mean[i], torch.ones_like(mean[i]) * log_std[i].exp())
        assert torch.equal(gaussian(mean, log_std, noise)[i], normal.loc + noise[i] * normal.scale)


def test_group_vec_env_steps_each_seed_as_its_own_vec_env() -> None:
    from lit_sb3.seeds.envs import GroupVecEnv, seed_envs

    group = GroupVecEnv(seed_envs("CartPole-v1", n_seeds=2, n_envs=3))
    alone = seed_envs("CartPole-v1", n_seeds=1, n_envs=3)[0]
    group.seed_each([0, 7])
    alone.seed(7)
    obs, obs_alone = group.reset(), alone.reset()
    assert group.num_envs == 6 and obs.shape == (6, 4)
    assert (group.per_seed(obs)[1] == obs_alone).all()
    for _ in range(30):
        actions = np.array([0, 1, 1, 0, 1, 0])
        obs, rewards, dones, _ = group.step(actions)
        obs_alone, rewards_alone, dones_alone, _ = alone.step(actions[3:])
        assert (rewards[3:] == rewards_alone).all()
        assert (group.per_seed(obs)[1] == obs_alone).all() and (dones[3:] == dones_alone).all()
    assert group.env_is_wrapped(Monitor) == [True] * 6
    assert len(group.get_attr("spec", indices=[0, 4])) == 2
    with pytest.raises(ValueError, match="env: one VecEnv per seed"):
        seed_envs([alone], n_seeds=2, n_envs=1)


def test_transfers_on_the_cpu_copy_nothing() -> None:
    """On the CPU the group's arrays pass through ``to_device`` / ``to_host`` as views of the same memory (so the CPU
    path computes what it computed without them)."""
    obs, noise = np.zeros((2, 3), dtype=np.float32), torch.ones(2, 1)
    on_device = to_device([obs, noise], torch.device("cpu"))
    on_device[0][0, 0] = 5.0
    assert obs[0, 0] == 5.0 and on_device[1] is noise
    actions = torch.arange(4).reshape(2, 2)
    (back,) = to_host([actions])
    back[0, 0] = 7
    assert actions[0, 0] == 7

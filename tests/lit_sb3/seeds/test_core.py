"""The seed groups' core: batched optimizer steps exact per seed, per-seed clipping and masks, stacked forward,
per-seed random streams."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.policies import ActorCriticPolicy

from lit_sb3.seeds.actor_critic import StackedActorCritic
from lit_sb3.seeds.optim import BatchedAdam, BatchedRMSprop, batched_optimizer, clip_grad_norm_per_seed
from lit_sb3.seeds.stacked import load_slice
from lit_sb3.seeds.streams import SeedStreams, gumbel_max
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


def test_a_seeds_draws_do_not_depend_on_its_group() -> None:
    alone, grouped = SeedStreams([3]), SeedStreams([0, 1, 2, 3, 4])
    for _ in range(3):
        assert torch.equal(alone.uniform((8, 2))[0], grouped.uniform((8, 2))[3])
        assert torch.equal(alone.normal((8, 2))[0], grouped.normal((8, 2))[3])
        assert (alone.permutations(16)[0] == grouped.permutations(16)[3]).all()


def test_gumbel_max_samples_the_categorical() -> None:
    logits = torch.log(torch.tensor([0.2, 0.5, 0.3]))
    draws = gumbel_max(logits.expand(20000, 3), torch.rand(20000, 3, generator=torch.Generator().manual_seed(0)))
    frequencies = torch.bincount(draws, minlength=3).float() / 20000
    torch.testing.assert_close(frequencies, torch.tensor([0.2, 0.5, 0.3]), atol=0.015, rtol=0)


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

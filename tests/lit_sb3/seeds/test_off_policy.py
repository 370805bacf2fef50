"""Seed groups of the off-policy algorithms (DQN, QR-DQN, SAC, TQC, TD3, DDPG): one seed's update is the single model's,
a group is reproducible, a seed does not depend on its group, each seed is an ordinary model, and a group resumes
exactly."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import lightning as L
import numpy as np
import pytest
import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.noise import NormalActionNoise
from stable_baselines3.common.type_aliases import ReplayBufferSamples

from lit_sb3 import DDPG, DQN, QRDQN, SAC, TD3, TQC, RLTrainer
from lit_sb3.common.off_policy import OffPolicyAlgorithm
from lit_sb3.seeds import SeedGroup
from lit_sb3.seeds.off_policy import BatchedOffPolicy

SMALL = {"policy_kwargs": {"net_arch": [32, 32]}, "learning_starts": 50, "batch_size": 16}
CONFIGS: dict[str, tuple[type[OffPolicyAlgorithm], str, dict[str, Any]]] = {
    # max_grad_norm small enough that the per-seed clipping acts
    "DQN": (DQN, "CartPole-v1", {**SMALL, "target_update_interval": 40, "max_grad_norm": 0.5}),
    "QRDQN": (
        QRDQN,
        "CartPole-v1",
        {
            **SMALL,
            "policy_kwargs": {"net_arch": [32, 32], "n_quantiles": 7},
            "target_update_interval": 40,
            "max_grad_norm": 0.5,
        },
    ),
    "SAC": (SAC, "Pendulum-v1", SMALL),
    "TQC": (TQC, "Pendulum-v1", {**SMALL, "policy_kwargs": {"net_arch": [32, 32], "n_quantiles": 5}}),
    "TD3": (TD3, "Pendulum-v1", {**SMALL, "action_noise": NormalActionNoise(np.zeros(1), 0.1 * np.ones(1))}),
    # TD3's special case: one critic, no delay, no target smoothing
    "DDPG": (DDPG, "Pendulum-v1", {**SMALL, "action_noise": NormalActionNoise(np.zeros(1), 0.1 * np.ones(1))}),
}
BUDGET = 200


def _group(name: str, seeds: list[int]) -> SeedGroup:
    cls, env_id, kwargs = CONFIGS[name]
    return SeedGroup(cls, seeds=seeds, env=env_id, n_envs=2, **kwargs)


def _runner(group: SeedGroup) -> BatchedOffPolicy:
    assert isinstance(group.algorithm, BatchedOffPolicy)
    return group.algorithm


def _trained(name: str, seeds: list[int], budget: int = BUDGET) -> SeedGroup:
    return _group(name, seeds).learn(budget)


def _state(seed_group: SeedGroup, seed_index: int) -> dict[str, torch.Tensor]:
    """Seed ``seed_index``'s parameters, optimizer moments and replay arrays."""
    group = _runner(seed_group)
    params = {**group.net.params, **group.extra_params()}
    state = {f"param/{k}": v[seed_index].detach() for k, v in params.items()}
    for name, optimizer in group.optimizers.items():
        for key, values in optimizer.state.items():
            state.update({f"{name}/{key}/{i}": v[seed_index] for i, v in enumerate(values)})
    state.update({f"replay/{k}": v for k, v in group.replay.seed_state(seed_index).items() if torch.is_tensor(v)})
    return state


def _assert_same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key


# ---------------------------------------------------------------------- one seed's update is the single model's


def _batch(model: OffPolicyAlgorithm, size: int = 16) -> ReplayBufferSamples:
    gen = np.random.default_rng(7)
    obs_space = model.observation_space
    assert obs_space is not None
    obs = torch.as_tensor(np.stack([obs_space.sample() for _ in range(2 * size)]), dtype=torch.float32)
    if isinstance(model, DQN | QRDQN):
        actions = torch.as_tensor(gen.integers(0, 2, size=(size, 1)))
    else:
        actions = torch.as_tensor(gen.uniform(-1, 1, size=(size, 1)), dtype=torch.float32)
    rewards = torch.as_tensor(gen.normal(size=(size, 1)), dtype=torch.float32)
    dones = torch.as_tensor(gen.integers(0, 2, size=(size, 1)), dtype=torch.float32)
    return ReplayBufferSamples(obs[:size], actions, obs[size:], dones, rewards, None)


def _grad(param: torch.Tensor) -> torch.Tensor:
    assert param.grad is not None
    return param.grad


def _record_steps(optimizers: dict[str, Any], grads: dict[str, list[list[torch.Tensor]]], batched: bool) -> None:
    """Replace each optimizer's step by a recorder of its gradients (no step: both sides keep the same weights)."""
    for name, optimizer in optimizers.items():
        params = optimizer.params if batched else [p for g in optimizer.param_groups for p in g["params"]]

        def record(*_: Any, name: str = name, params: list[torch.Tensor] = params) -> None:
            grads.setdefault(name, []).append([_grad(p)[0] if batched else _grad(p) for p in params])

        optimizer.step = record


@pytest.mark.parametrize("name", list(CONFIGS))
def test_group_of_one_has_the_single_models_losses_and_gradients(name: str) -> None:
    """For the same minibatch (and the same noise draws), a group of one seed computes the ordinary lit_sb3 model's
    losses and gradients (every optimizer, clipping included) to 1e-6."""
    cls, env_id, kwargs = CONFIGS[name]
    single = cls("MlpPolicy", make_vec_env(env_id, n_envs=2), seed=0, **kwargs)
    group = _runner(_group(name, [0]))
    assert single.policy is not None
    for key, stacked in group.net.params.items():
        assert torch.equal(stacked[0], dict(single.policy.named_parameters())[key]), key
    batch = _batch(single)

    single_grads: dict[str, list[list[torch.Tensor]]] = {}
    single_losses: dict[str, torch.Tensor] = {}
    _record_steps(single._named_optimizers(), single_grads, batched=False)
    single._replay_batch = lambda batch_size: (batch, single.gamma)  # type: ignore[method-assign]
    single._metrics.add = lambda **values: single_losses.update(values)  # type: ignore[method-assign]
    torch.manual_seed(123)
    single.train(gradient_steps=1, batch_size=16)

    group_grads: dict[str, list[list[torch.Tensor]]] = {}
    _record_steps(group.optimizers, group_grads, batched=True)
    one_seed = [t[None].numpy() for t in batch[:5]]
    group.replay.round_indices = lambda steps, batch_size, rngs: np.zeros((2, steps, 1, batch_size), dtype=np.int64)  # type: ignore[method-assign]
    group.replay.sample_arrays = lambda slots, envs: one_seed  # type: ignore[method-assign]
    group.streams.torch[0].manual_seed(123)
    group_losses = group.gradient_steps(1, 16)

    assert single_losses.keys() == group_losses.keys()
    for key, value in single_losses.items():
        assert torch.allclose(value.reshape(-1), group_losses[key], atol=1e-6), key
    assert single_grads.keys() == group_grads.keys()
    for key, steps in single_grads.items():
        for single_step, group_step in zip(steps, group_grads[key], strict=True):
            for a, b in zip(single_step, group_step, strict=True):
                assert torch.allclose(a, b, atol=1e-6), key


# ---------------------------------------------------------------------- reproducible, independent of the group


def _untimed(rows: list[tuple[int, dict[str, float]]]) -> list[tuple[int, dict[str, float]]]:
    return [
        (step, {k: v for k, v in row.items() if k.split("/")[1] not in ("fps", "time_elapsed")}) for step, row in rows
    ]


@pytest.mark.parametrize("name", list(CONFIGS))
def test_group_trained_twice_is_identical(name: str) -> None:
    first, second = _trained(name, [0, 1]), _trained(name, [0, 1])
    for seed_index in range(2):
        _assert_same(_state(first, seed_index), _state(second, seed_index))
        assert _untimed(first.metrics(seed_index)) == _untimed(second.metrics(seed_index))
    assert _runner(first).n_updates > 0


@pytest.mark.parametrize("name", list(CONFIGS))
def test_a_seed_alone_equals_the_seed_in_a_group_of_five(name: str) -> None:
    """Seed 3 trained alone and as the third of five seeds: bit for bit (its draws come from its own generators,
    and the batched matrix products compute each seed's slice as they compute it alone)."""
    alone = _trained(name, [3])
    grouped = _trained(name, [1, 2, 3, 4, 5])
    _assert_same(_state(alone, 0), _state(grouped, 2))


@pytest.mark.parametrize("name", list(CONFIGS))
def test_evaluate_runs_every_seeds_policy(name: str) -> None:
    """``group.evaluate`` on one eval env per seed (fewer envs than the training ones): each seed its episodes, as
    seed i's ordinary model scores them deterministically on the same env."""
    group = _trained(name, [0, 1], budget=60)
    env_id = CONFIGS[name][1]
    results = group.evaluate([make_vec_env(env_id, n_envs=1, seed=10 + i) for i in range(2)], n_eval_episodes=2)
    for seed_index, (returns, lengths) in enumerate(results):
        model = group.model(seed_index)
        expected: Any = evaluate_policy(
            model, make_vec_env(env_id, n_envs=1, seed=10 + seed_index), 2, return_episode_rewards=True
        )
        assert len(returns) == len(lengths) == 2
        assert lengths == list(expected[1])
        assert np.allclose(returns, expected[0], atol=1e-4)


def test_seeds_of_a_group_differ() -> None:
    group = _runner(_trained("SAC", [0, 1]))
    assert not torch.equal(group.net.params["actor.mu.weight"][0], group.net.params["actor.mu.weight"][1])
    assert not np.array_equal(group.replay.observations[:, 0], group.replay.observations[:, 1])


# ---------------------------------------------------------------------- each seed an ordinary model


@pytest.mark.parametrize("name", list(CONFIGS))
def test_a_seed_is_an_ordinary_model(name: str, tmp_path: Any) -> None:
    seed_group = _trained(name, [0, 1])
    group = _runner(seed_group)
    cls = CONFIGS[name][0]
    model = seed_group.model(1)
    assert model.policy is not None and model.observation_space is not None
    assert type(model) is cls and model.num_timesteps == seed_group.num_timesteps == BUDGET
    for key, value in model.policy.state_dict().items():
        assert torch.equal(value, group.net.params[key][1]), key
    buffer = model.replay_buffer
    assert buffer is not None and buffer.pos == group.replay.pos
    assert np.array_equal(buffer.observations[: group.replay.pos], group.replay.observations[: group.replay.pos, 1])
    assert model._n_updates == group.n_updates > 0
    obs = model.observation_space.sample()
    action, _ = model.predict(obs, deterministic=True)
    model.save(tmp_path / "seed1")
    loaded = cls.load(tmp_path / "seed1")
    assert np.array_equal(loaded.predict(obs, deterministic=True)[0], action)
    for key, value in loaded.policy.state_dict().items():
        assert torch.equal(value, group.net.params[key][1]), key


# ---------------------------------------------------------------------- exact resume


class _StopAt(L.Callback):
    """Stop a fit at the end of the first round that reaches ``steps`` env steps."""

    def __init__(self, steps: int) -> None:
        self.steps = steps

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        assert isinstance(pl_module, SeedGroup)
        if pl_module.num_timesteps >= self.steps:
            trainer.should_stop = True


@pytest.mark.parametrize("name", list(CONFIGS))
def test_resumed_group_equals_the_straight_run(name: str) -> None:
    """Trained to k, each seed's state saved and loaded with ``weights_only=True`` into a fresh group, trained on to
    2k: bit for bit the group trained to 2k straight (weights, optimizers, replay buffer)."""
    seeds = [0, 1]
    straight = _trained(name, seeds, 2 * BUDGET)

    interrupted = _group(name, seeds)
    RLTrainer(max_steps=2 * BUDGET, logger=False, callbacks=[_StopAt(BUDGET)]).fit(interrupted)
    assert BUDGET <= interrupted.num_timesteps < 2 * BUDGET
    files = []
    for seed_index in range(len(seeds)):
        buffer = io.BytesIO()
        torch.save(interrupted.seed_state(seed_index), buffer)
        files.append(buffer.getvalue())

    resumed = _group(name, seeds)
    resumed.load_seed_states([torch.load(io.BytesIO(data), weights_only=True) for data in files])
    RLTrainer(max_steps=2 * BUDGET, logger=False).fit(resumed)
    assert resumed.num_timesteps == straight.num_timesteps
    for seed_index in range(len(seeds)):
        _assert_same(_state(resumed, seed_index), _state(straight, seed_index))


# ---------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"train_freq": (1, "episode")}, "train_freq: seed groups batch step-based train_freq only"),
        ({"n_steps": 3}, "n_steps: seed groups batch 1-step returns only"),
        ({"use_sde": True}, "use_sde: seed groups batch False only"),
    ],
)
def test_unbatched_settings_are_refused_in_one_line(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SeedGroup(SAC, seeds=[0, 1], env="Pendulum-v1", **kwargs)


def test_off_policy_algorithms_are_batched() -> None:
    assert all(SeedGroup.batched(cls) for cls in (DQN, QRDQN, SAC, TQC, TD3, DDPG))


def test_metric_rows_follow_episodes() -> None:
    """Off-policy rows come every ``log_interval`` episodes of the seed, with SB3's names."""
    group = _group("DQN", [0, 1]).learn(300, log_interval=2)
    rows = group.metrics(0)
    assert rows and all("rollout/exploration_rate" in row for _, row in rows)
    assert [row["time/episodes"] for _, row in rows] == [2.0 * (k + 1) for k in range(len(rows))]
    assert any("train/loss" in row and "train/n_updates" in row for _, row in rows)


@pytest.mark.filterwarnings("ignore:Be aware that when using `ckpt_path`")  # Lightning's note on callbacks
@pytest.mark.parametrize("name", ["SAC", "TD3"])  # constant schedules: the first fit's budget does not matter
def test_a_lightning_checkpoint_of_an_off_policy_group_resumes_exactly(name: str, tmp_path: Path) -> None:
    """``ModelCheckpoint`` + ``ckpt_path``: the replay buffers, targets, temperatures and noise come back too."""
    quiet: dict[str, Any] = {"logger": False, "enable_progress_bar": False}
    # a round (Lightning epoch) is one vector step of 2 envs: the last of every 25th round's saves is the budget's end
    checkpoint = ModelCheckpoint(dirpath=tmp_path, save_last=True, every_n_epochs=25)
    RLTrainer(max_steps=BUDGET, callbacks=[checkpoint], **quiet).fit(_group(name, [0, 1]))
    straight, resumed = _group(name, [0, 1]), _group(name, [0, 1])
    RLTrainer(max_steps=2 * BUDGET, **quiet).fit(straight)
    RLTrainer(max_steps=2 * BUDGET, **quiet).fit(resumed, ckpt_path=tmp_path / "last.ckpt")
    assert resumed.num_timesteps == straight.num_timesteps == 2 * BUDGET
    for seed_index in range(2):
        _assert_same(_state(resumed, seed_index), _state(straight, seed_index))


# ---------------------------------------------------------------------- batched losses and replay draws


def test_batched_losses_are_the_vmapped_pure_losses_bit_for_bit() -> None:
    """Each loss of lit_sb3.seeds.off_policy_losses equals lit_sb3's pure loss mapped over the seed axis (vmap), with
    its gradients, to the last bit."""
    from torch.func import vmap

    from lit_sb3.common import losses, quantile
    from lit_sb3.seeds import off_policy_losses as batched

    gen = torch.Generator().manual_seed(0)
    n, batch = 5, 100

    def draw(*shape: int) -> torch.Tensor:
        return torch.randn(n, batch, *shape, generator=gen)

    rewards, dones, actions = draw(1), (draw(1) > 1.0).float(), (draw(1) > 0).float()
    q2, q_a, q_b, log_prob = draw(2).requires_grad_(True), draw(1), draw(1), draw(1).requires_grad_(True)
    ent_coef, log_ent_coef = torch.rand(n, 1, generator=gen), torch.randn(n, 1, generator=gen).requires_grad_(True)
    pairs = {
        "dqn_target": (
            vmap(losses.dqn_target, in_dims=(0, 0, None, 0))(rewards, dones, 0.99, q2),
            batched.dqn_target(rewards, dones, 0.99, q2),
        ),
        "q_huber_loss": (vmap(losses.q_huber_loss)(q2, actions, q_a), batched.q_huber_loss(q2, actions, q_a)),
        "double_q": (
            vmap(losses.clipped_double_q_target, in_dims=(0, 0, None, 0))(rewards, dones, 0.99, q2),
            batched.clipped_double_q_target(rewards, dones, 0.99, q2),
        ),
        "soft_double_q": (
            vmap(losses.clipped_double_q_target, in_dims=(0, 0, None, 0, 0, 0))(
                rewards, dones, 0.99, q2, log_prob, ent_coef
            ),
            batched.clipped_double_q_target(rewards, dones, 0.99, q2, log_prob, ent_coef),
        ),
        "critics_mse": (
            vmap(losses.critics_mse_loss)((q_a, q_b), q2[..., :1]),
            batched.critics_mse_loss((q_a, q_b), q2[..., :1]),
        ),
        "sac_actor": (
            vmap(losses.sac_actor_loss)(log_prob, q2, ent_coef),
            batched.sac_actor_loss(log_prob, q2, ent_coef),
        ),
        "entropy_coef": (
            vmap(losses.entropy_coef_loss, in_dims=(0, 0, None))(log_ent_coef, log_prob, -1.0),
            batched.entropy_coef_loss(log_ent_coef, log_prob, -1.0),
        ),
    }
    # QR-DQN's (7 quantiles of 2 actions)
    next_quantiles, quantiles = draw(7, 2), draw(7, 2).requires_grad_(True)
    target = vmap(quantile.qrdqn_target, in_dims=(0, 0, None, 0))(rewards, dones, 0.99, next_quantiles)
    taus = quantile.quantile_midpoints(7)
    pairs |= {
        "qrdqn_target": (target, batched.qrdqn_target(rewards, dones, 0.99, next_quantiles)),
        "taken_action_quantiles": (
            vmap(quantile.taken_action_quantiles)(quantiles, actions),
            batched.taken_action_quantiles(quantiles, actions),
        ),
        "quantile_huber_loss": (
            vmap(quantile.quantile_huber_loss, in_dims=(0, 0, None))(
                vmap(quantile.taken_action_quantiles)(quantiles, actions), target, taus
            ),
            batched.quantile_huber_loss(batched.taken_action_quantiles(quantiles, actions), target, taus),
        ),
    }
    # TQC's (2 critics of 5 quantiles, 1 dropped per critic)
    tqc_next, tqc_current = draw(2, 5), draw(2, 5).requires_grad_(True)
    tqc_target = vmap(quantile.tqc_target, in_dims=(0, 0, None, 0, None, 0, 0))(
        rewards, dones, 0.99, tqc_next, 1, log_prob.detach(), ent_coef
    )
    taus_5 = quantile.quantile_midpoints(5)
    pairs |= {
        "tqc_target": (tqc_target, batched.tqc_target(rewards, dones, 0.99, tqc_next, 1, log_prob.detach(), ent_coef)),
        "tqc_critic_loss": (
            vmap(quantile.quantile_huber_loss, in_dims=(0, 0, None, None))(tqc_current, tqc_target, taus_5, False),
            batched.quantile_huber_loss(tqc_current, tqc_target, taus_5, sum_over_quantiles=False),
        ),
        "tqc_actor": (
            vmap(quantile.tqc_actor_loss)(log_prob, tqc_current, ent_coef),
            batched.tqc_actor_loss(log_prob, tqc_current, ent_coef),
        ),
    }
    for name, (mapped, mine) in pairs.items():
        assert mapped.shape == mine.shape and torch.equal(mapped, mine), name
        if not mapped.requires_grad:  # (a target of inputs without gradients)
            continue
        inputs = [t for t in (q2, log_prob, log_ent_coef, quantiles, tqc_current) if t.requires_grad]
        expected = torch.autograd.grad(mapped.sum(), inputs, allow_unused=True)
        got = torch.autograd.grad(mine.sum(), inputs, allow_unused=True)
        for a, b in zip(expected, got, strict=True):
            assert (a is None and b is None) or (a is not None and b is not None and torch.equal(a, b)), name


@pytest.mark.parametrize(("n_envs", "optimize_memory_usage"), [(1, False), (1, True), (3, False), (2, True)])
def test_a_rounds_replay_indices_are_each_seeds_own_sample_calls(n_envs: int, optimize_memory_usage: bool) -> None:
    """A round's indices drawn at once are, seed by seed, the transitions SB3's ``ReplayBuffer.sample`` returns when
    called once per gradient step on that seed's generator, which ends where those calls leave it."""
    from gymnasium import spaces

    from lit_sb3.seeds.replay import SeedReplayBuffer

    obs_space, action_space = spaces.Box(0.0, 1e3, (2,)), spaces.Discrete(2)
    n_seeds, steps, batch, size = 3, 4, 8, 60
    replay = SeedReplayBuffer(
        n_seeds, size, obs_space, action_space, n_envs, optimize_memory_usage, handle_timeout_termination=False
    )
    env_index = np.broadcast_to(np.arange(n_envs, dtype=np.float32), (n_seeds, n_envs))
    zeros = np.zeros((n_seeds, n_envs), dtype=np.float32)
    for _ in range(replay.buffer_size + 2):  # past full (the memory-efficient layout skips the slot being written)
        slot, after = replay.pos, (replay.pos + 1) % replay.buffer_size
        obs = np.stack([np.full_like(env_index, slot), env_index], axis=-1)  # an observation names its slot and env
        next_obs = np.stack([np.full_like(env_index, after), env_index], axis=-1)
        replay.add(obs, next_obs, zeros[..., None], zeros, zeros, zeros)
    rngs = [np.random.RandomState(seed) for seed in range(n_seeds)]
    slots, envs = replay.round_indices(steps, batch, rngs)
    for seed in range(n_seeds):
        buffer = replay.seed_buffer(seed)  # the seed's transitions as SB3's own buffer
        np.random.seed(seed)
        for step in range(steps):
            observations = buffer.sample(batch).observations.numpy()
            assert np.array_equal(slots[step, seed], observations[:, 0]), (seed, step)
            assert np.array_equal(envs[step, seed], observations[:, 1]), (seed, step)
        assert np.random.randint(1 << 30) == rngs[seed].randint(1 << 30)  # the generator ends where SB3 left it

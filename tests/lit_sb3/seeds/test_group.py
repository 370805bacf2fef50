"""Seed groups of PPO and A2C: the same update as lit_sb3's on one minibatch, reproducible, each seed independent of
its group, each seed an ordinary model, exact resume, RLTrainer and its loggers, batched evaluation, refusals."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.loggers import CSVLogger
from stable_baselines3 import PPO as SB3PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.type_aliases import RolloutBufferSamples
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper, VecNormalize

from lit_sb3 import A2C, DQN, PPO, TRPO, RLTrainer
from lit_sb3.common.envs import to_vec_env
from lit_sb3.seeds import SeedGroup
from lit_sb3.seeds.classic_envs import classic_vec_envs, play_episodes_side_by_side
from lit_sb3.seeds.group import TIE_MARGIN, greedy_actions

SMALL = {"n_steps": 32, "batch_size": 64, "n_epochs": 3}
CONFIGS = [
    pytest.param(PPO, "CartPole-v1", {**SMALL, "target_kl": 0.005}, id="ppo-discrete"),
    pytest.param(PPO, "Pendulum-v1", {**SMALL, "clip_range_vf": 0.2}, id="ppo-box"),
    pytest.param(A2C, "CartPole-v1", {"normalize_advantage": True}, id="a2c-discrete"),
    pytest.param(A2C, "Pendulum-v1", {}, id="a2c-box"),
]


def _group(algo: type, env: str, seeds: list[int], **kwargs: Any) -> SeedGroup:
    return SeedGroup(algo, seeds=seeds, env=env, n_envs=4, **kwargs)


def _params(group: SeedGroup, index: int) -> list[torch.Tensor]:
    return [p[index] for p in group.algorithm.net.params.values()]  # type: ignore[attr-defined]


def _train_rows(group: SeedGroup, index: int) -> list[tuple[int, dict[str, float]]]:
    """The seed's metric rows without the wall-clock entries."""
    return [(step, {k: v for k, v in row.items() if not k.startswith("time/")}) for step, row in group.metrics(index)]


def _minibatch(model: Any, size: int) -> RolloutBufferSamples:
    """A minibatch shaped as lit_sb3's rollout buffer yields it, from random data."""
    gen = torch.Generator().manual_seed(5)
    obs = torch.randn(size, *model.observation_space.shape, generator=gen)
    if model.action_space.shape:
        actions = torch.randn(size, *model.action_space.shape, generator=gen)
    else:
        actions = torch.randint(0, model.action_space.n, (size, 1), generator=gen).float()
    old = [torch.randn(size, generator=gen) for _ in range(4)]
    old[1] = -old[1].abs()  # log-probabilities
    return RolloutBufferSamples(obs, actions, *old)


@pytest.mark.parametrize(("algo", "env", "kwargs"), CONFIGS)
def test_group_of_one_takes_lit_sb3s_update_on_the_same_minibatch(algo: type, env: str, kwargs: dict) -> None:
    """A group of one starts from the single run's weights (bit for bit) and, on the same minibatch, has lit_sb3's
    loss, logged terms and gradients, and after the clipped optimizer step its parameters (to 1e-6)."""
    group = _group(algo, env, [7], **kwargs)
    model = algo("MlpPolicy", env=to_vec_env(env, 4), seed=7, **kwargs)
    assert all(torch.equal(a, b) for a, b in zip(_params(group, 0), model.policy.parameters()))
    batch = _minibatch(model, 64)
    loss, terms = model.compute_loss(batch)
    model.policy.optimizer.zero_grad()
    loss.backward()
    runner = group.algorithm
    runner._start_update(1.0)  # type: ignore[attr-defined]
    actions = batch.actions.long().flatten() if not model.action_space.shape else batch.actions
    stacked = RolloutBufferSamples(*(t.unsqueeze(0) for t in (batch[0], actions, *batch[2:])))
    group_loss, group_terms = runner.loss(stacked)  # type: ignore[attr-defined]
    group_loss.sum().backward()
    torch.testing.assert_close(group_loss[0], loss, atol=1e-6, rtol=0)
    assert set(group_terms) == set(terms)
    for name, value in terms.items():
        torch.testing.assert_close(group_terms[name][0], value, atol=1e-6, rtol=0)
    for stacked_param, param in zip(runner.net.params.values(), model.policy.parameters()):  # type: ignore[attr-defined]
        assert stacked_param.grad is not None and param.grad is not None
        torch.testing.assert_close(stacked_param.grad[0], param.grad, atol=1e-6, rtol=0)
    torch.nn.utils.clip_grad_norm_(model.policy.parameters(), model.max_grad_norm)
    model.policy.optimizer.step()
    from lit_sb3.seeds.optim import clip_grad_norm_per_seed

    clip_grad_norm_per_seed(runner.optimizer.params, model.max_grad_norm)  # type: ignore[attr-defined]
    runner.optimizer.step()  # type: ignore[attr-defined]
    for a, b in zip(_params(group, 0), model.policy.parameters()):
        torch.testing.assert_close(a, b.detach(), atol=1e-6, rtol=0)


def test_a_group_trained_twice_is_identical() -> None:
    runs = []
    for _ in range(2):
        group = _group(PPO, "CartPole-v1", [0, 1, 2], **SMALL, target_kl=0.01)
        group.learn(384, log_interval=1)
        runs.append(group)
    for i in range(3):
        assert all(torch.equal(a, b) for a, b in zip(_params(runs[0], i), _params(runs[1], i)))
        assert _train_rows(runs[0], i) == _train_rows(runs[1], i)


@pytest.mark.parametrize(("algo", "env", "kwargs"), CONFIGS)
def test_a_seed_alone_equals_the_seed_in_a_group_of_five(algo: type, env: str, kwargs: dict) -> None:
    """Bit for bit: parameters, optimizer state and every logged train/rollout metric (target_kl stops the seeds
    at different minibatches in the PPO Discrete case)."""
    alone, grouped = _group(algo, env, [3], **kwargs), _group(algo, env, [0, 1, 2, 3, 4], **kwargs)
    for group in (alone, grouped):
        group.learn(384, log_interval=1)
    assert all(torch.equal(a, b) for a, b in zip(_params(alone, 0), _params(grouped, 3)))
    state_alone, state_grouped = alone.algorithm.seed_state(0), grouped.algorithm.seed_state(3)
    assert state_alone["n_updates"] == state_grouped["n_updates"]
    for name in state_alone["optimizer"]:
        if name != "step":
            assert all(
                torch.equal(a, b) for a, b in zip(state_alone["optimizer"][name], state_grouped["optimizer"][name])
            )
    rows = _train_rows(alone, 0)
    assert rows and rows == _train_rows(grouped, 3)


def test_target_kl_stops_each_seed_on_its_own() -> None:
    group = _group(PPO, "CartPole-v1", [0, 1, 2, 3], n_steps=64, batch_size=32, n_epochs=10, target_kl=0.002)
    group.learn(512, log_interval=1)
    n_updates = [group.algorithm.seed_state(i)["n_updates"] for i in range(4)]
    assert max(n_updates) < 2 * 10 and len(set(n_updates)) > 1, n_updates


def test_schedules_follow_the_progress_remaining() -> None:
    """Learning rate and clip range are the schedules' values at the progress after each rollout, as in SB3."""
    group = _group(PPO, "CartPole-v1", [0, 1], **SMALL, learning_rate=lambda p: 1e-3 * p, clip_range=lambda p: 0.2 * p)
    group.learn(512, log_interval=1)
    rows = [row for _, row in group.metrics(1) if "train/learning_rate" in row]
    progress = [1 - 128 * k / 512 for k in range(1, 4)]  # the updates after rollouts 1-3 (dumped after the next)
    assert [row["train/learning_rate"] for row in rows] == pytest.approx([1e-3 * p for p in progress])
    assert [row["train/clip_range"] for row in rows] == pytest.approx([0.2 * p for p in progress])


def test_each_seed_is_an_ordinary_model(tmp_path: Path) -> None:
    group = _group(PPO, "CartPole-v1", [0, 1], **SMALL)
    group.learn(256, log_interval=1)
    model = group.model(1)
    assert type(model) is PPO and model.num_timesteps == group.num_timesteps == 256
    assert all(torch.equal(a, b) for a, b in zip(_params(group, 1), model.policy.parameters()))
    assert model.policy.optimizer.state_dict()["state"][0]["step"] == group.algorithm.optimizer.steps[1]
    obs = group.envs[1].reset()
    actions, _ = model.predict(obs, deterministic=True)
    model.save(tmp_path / "seed1.zip")
    loaded = PPO.load(tmp_path / "seed1.zip")
    assert all(torch.equal(a, b) for a, b in zip(loaded.policy.parameters(), model.policy.parameters()))
    assert (loaded.predict(obs, deterministic=True)[0] == actions).all()
    sb3 = SB3PPO.load(tmp_path / "seed1.zip")  # an SB3-style zip: SB3 reads it too
    assert all(torch.equal(a, b) for a, b in zip(sb3.policy.parameters(), model.policy.parameters()))


@pytest.mark.parametrize(("algo", "env", "kwargs"), [CONFIGS[0], CONFIGS[3]])
def test_resume_from_seed_states_equals_training_straight(algo: type, env: str, kwargs: dict) -> None:
    straight = _group(algo, env, [0, 1], **kwargs)
    straight.learn(1280, log_interval=1)
    first = _group(algo, env, [0, 1], **kwargs)
    first.learn(640, log_interval=1)
    saved = []
    for i in range(2):
        buffer = io.BytesIO()
        torch.save(first.seed_state(i), buffer)
        buffer.seek(0)
        saved.append(torch.load(buffer, weights_only=True))
    resumed = _group(algo, env, [0, 1], **kwargs)
    resumed.load_seed_states(saved)
    straight_rows = [_train_rows(straight, i) for i in range(2)]
    resumed.learn(640, log_interval=1, reset_num_timesteps=False)
    assert resumed.num_timesteps == straight.num_timesteps == 1280
    for i in range(2):
        assert all(torch.equal(a, b) for a, b in zip(_params(straight, i), _params(resumed, i)))
        rows = _train_rows(resumed, i)
        assert rows == straight_rows[i][-len(rows) :]
        a, b = straight.seed_state(i), resumed.seed_state(i)
        assert torch.equal(a["last_obs"], b["last_obs"]) and torch.equal(a["streams"]["torch"], b["streams"]["torch"])
        assert torch.equal(a["streams"]["numpy"].pop("keys"), b["streams"]["numpy"].pop("keys"))
        assert a["streams"]["numpy"] == b["streams"]["numpy"]


def test_a_seed_state_of_the_earlier_streams_is_refused_in_one_line() -> None:
    """A seed state written before the groups drew each seed's own run's streams (no ``streams_format``; its numpy
    stream a PCG64 generator's state) cannot resume: refused, saying what to do."""
    group = _group(PPO, "CartPole-v1", [0], **SMALL)
    group.learn(128)
    state = group.seed_state(0)
    del state["streams_format"]
    state["streams"]["numpy"] = np.random.default_rng(0).bit_generator.state
    with pytest.raises(ValueError, match=r"^states: seed 0's state was written by an earlier lit_sb3") as refused:
        _group(PPO, "CartPole-v1", [0], **SMALL).load_seed_states([state])
    assert "force=true" in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.filterwarnings("ignore:Be aware that when using `ckpt_path`")  # Lightning's note on callbacks
def test_a_lightning_checkpoint_of_a_group_resumes_exactly(tmp_path: Path) -> None:
    checkpoint = ModelCheckpoint(dirpath=tmp_path, save_last=True)
    quiet = {"logger": False, "enable_progress_bar": False}
    RLTrainer(max_steps=512, callbacks=[checkpoint], **quiet).fit(_group(PPO, "CartPole-v1", [0, 1], **SMALL))
    straight, resumed = _group(PPO, "CartPole-v1", [0, 1], **SMALL), _group(PPO, "CartPole-v1", [0, 1], **SMALL)
    RLTrainer(max_steps=1024, **quiet).fit(straight)
    RLTrainer(max_steps=1024, **quiet).fit(resumed, ckpt_path=tmp_path / "last.ckpt")
    assert resumed.num_timesteps == straight.num_timesteps == 1024
    for i in range(2):
        assert all(torch.equal(a, b) for a, b in zip(_params(straight, i), _params(resumed, i)))


def test_rltrainer_fits_a_group_and_logs_each_seed(tmp_path: Path) -> None:
    class CountSteps(BaseCallback):
        calls = 0

        def _on_step(self) -> bool:
            CountSteps.calls += 1
            assert self.model is group and self.num_timesteps == group.num_timesteps
            return True

    group = _group(PPO, "CartPole-v1", [4, 9], **SMALL)
    logger = CSVLogger(tmp_path, name="group")
    RLTrainer(max_steps=256, rl_callback=CountSteps(), logger=logger, enable_progress_bar=False).fit(group)
    assert group.num_timesteps == 256 and CountSteps.calls == 256 // 4
    header = (Path(logger.log_dir) / "metrics.csv").read_text().splitlines()[0].split(",")
    for seed in (4, 9):
        assert f"seed_{seed}/rollout/ep_rew_mean" in header and f"seed_{seed}/train/value_loss" in header


def test_evaluate_counts_as_sb3_evaluate_policy() -> None:
    group = _group(PPO, "CartPole-v1", [0, 1], **SMALL)
    group.learn(128, log_interval=1)

    def eval_env(seed: int) -> Any:
        env = to_vec_env("CartPole-v1", 2)
        env.seed(seed)
        return env

    results = group.evaluate([eval_env(100), eval_env(200)], n_eval_episodes=5, deterministic=True)
    for i, seed in enumerate((100, 200)):
        returns, lengths = evaluate_policy(
            group.model(i), eval_env(seed), 5, deterministic=True, return_episode_rewards=True
        )
        assert results[i] == (list(map(float, returns)), list(lengths))


class _OneAfterAnother(VecEnvWrapper):
    """Changes nothing, but hides the classic env beneath: the group evaluates it one episode after another."""

    def reset(self) -> Any:
        return self.venv.reset()

    def step_wait(self) -> Any:
        return self.venv.step_wait()


@pytest.mark.parametrize(
    ("algo", "env_id", "kwargs", "normalize"),
    [
        pytest.param(PPO, "CartPole-v1", SMALL, False, id="ppo-cartpole"),
        pytest.param(A2C, "Acrobot-v1", {}, True, id="a2c-acrobot-vecnormalize"),
        pytest.param(DQN, "MountainCar-v0", {"learning_starts": 0, "buffer_size": 2000}, False, id="dqn-mountaincar"),
    ],
)
def test_evaluation_side_by_side_equals_one_after_another(
    algo: type, env_id: str, kwargs: dict[str, Any], normalize: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One-env classic array eval envs (VecNormalize allowed) are played side by side; the results, and the envs
    afterwards, are those of playing each seed's episodes one after another, evaluation after evaluation."""
    played: list[int] = []

    def counted(envs: Any, episodes: int, policy: Any) -> Any:
        played.append(len(envs))
        return play_episodes_side_by_side(envs, episodes, policy)

    monkeypatch.setattr("lit_sb3.seeds.group.play_episodes_side_by_side", counted)
    group = _group(algo, env_id, [0, 1, 2], **kwargs)
    group.learn(256)

    def eval_envs(hidden: bool) -> list[VecEnv]:
        envs: list[VecEnv] = list(classic_vec_envs(env_id, 1, 3, seeds=[10, 11, 12]))
        if normalize:
            for env in envs:
                env.reset()
            envs = [VecNormalize(env, training=False, norm_reward=False) for env in envs]
            for i, env in enumerate(envs):  # statistics far from the defaults, so that normalizing matters
                assert isinstance(env, VecNormalize)
                env.obs_rms.mean[:] = 0.1 * (i + 1)
                env.obs_rms.var[:] = 0.5 + i
        return [_OneAfterAnother(env) for env in envs] if hidden else envs

    side_by_side, one_after_another = eval_envs(False), eval_envs(True)
    steps = 0
    for evaluation in range(3):
        if evaluation == 1:
            for i, (a, b) in enumerate(zip(side_by_side, one_after_another)):
                a.seed(50 + i)
                b.seed(50 + i)
        found = group.evaluate(side_by_side, n_eval_episodes=4)
        expected = group.evaluate(one_after_another, n_eval_episodes=4)
        assert found == expected, f"evaluation {evaluation}"
        steps += sum(sum(lengths) for _, lengths in found)
    for a, b in zip(side_by_side, one_after_another):
        assert a.env_method("get_total_steps") == b.env_method("get_total_steps")
        assert np.array_equal(a.reset(), b.reset())  # the generators stand where one-by-one play leaves them
    assert steps > 3 * 3 * 4 * 10 and played == [3, 3, 3]  # side by side, then one after another, three times


class _KernelDifference:
    """Scores whose argmax differs between a product of several rows and of one row, within the tie margin."""

    def greedy_scores(self, obs: np.ndarray) -> torch.Tensor:
        n, rows = obs.shape[:2]
        scores = torch.zeros(n, rows, 2)
        scores[..., 0] = torch.as_tensor(obs[..., 0], dtype=torch.float32)
        scores[..., 1] = scores[..., 0] + (TIE_MARGIN / 4 if rows > 1 else -TIE_MARGIN / 4)
        return scores


def test_greedy_actions_recompute_near_ties_one_row_at_a_time() -> None:
    obs = np.array([[[0.3], [0.7]], [[0.2], [0.9]]], dtype=np.float32)
    assert _KernelDifference().greedy_scores(obs).argmax(-1).tolist() == [[1, 1], [1, 1]]  # the several rows' kernel
    assert greedy_actions(_KernelDifference(), obs).tolist() == [[0, 0], [0, 0]]  # type: ignore[arg-type]


def test_refusals_are_one_line() -> None:
    batched = "PPO, A2C, DQN, QRDQN, SAC, TQC, TD3, DDPG"
    with pytest.raises(ValueError, match=rf"^algo_cls: seed groups batch lit_sb3's {batched}, not TRPO"):
        SeedGroup(TRPO, seeds=[0, 1], env="CartPole-v1")
    with pytest.raises(ValueError, match="not PPO"):
        SeedGroup(SB3PPO, seeds=[0, 1], env="CartPole-v1")  # SB3's own class: not lit_sb3's
    assert SeedGroup.batched(PPO) and SeedGroup.batched(A2C) and not SeedGroup.batched(TRPO)
    with pytest.raises(ValueError, match=r"^seeds: a seed group needs at least one seed"):
        SeedGroup(PPO, seeds=[], env="CartPole-v1")
    with pytest.raises(ValueError, match=r"^seeds: must be distinct"):
        SeedGroup(PPO, seeds=[1, 2, 1], env="CartPole-v1")
    with pytest.raises(ValueError, match=r"^seed: a seed group sets it per seed"):
        SeedGroup(PPO, seeds=[1], env="CartPole-v1", seed=3)
    for device in ("mps", "gpu"):
        with pytest.raises(ValueError, match=r"^device: seed groups train on 'cpu', 'cuda' or 'cuda:N'"):
            SeedGroup(PPO, seeds=[1], env="CartPole-v1", device=device)
    with pytest.raises(ValueError, match=r"^policy: seed groups batch 'MlpPolicy'"):
        SeedGroup(PPO, seeds=[1], env="CartPole-v1", policy="CnnPolicy")
    group = _group(PPO, "CartPole-v1", [0, 1], **SMALL)
    with pytest.raises(RuntimeError, match="seed_state: the group has not started training"):
        group.seed_state(0)
    with pytest.raises(ValueError, match=r"^states: one per seed of the group"):
        group.load_seed_states([])
    assert np.all(group.last_episode_starts)


def test_device_auto_is_the_cpu_and_cuda_falls_back_to_it_without_cuda() -> None:
    """``"auto"`` trains where lit_sb3's ``learn`` does (the CPU); ``"cuda"`` without CUDA is the CPU, as in SB3."""
    assert SeedGroup(PPO, seeds=[1], env="CartPole-v1").device == torch.device("cpu")
    group = SeedGroup(PPO, seeds=[1], env="CartPole-v1", device="cuda")
    expected = torch.device("cuda", 0) if torch.cuda.is_available() else torch.device("cpu")
    assert group.device == group.model(0).device == expected


def test_one_vec_env_per_seed_trains_as_the_env_id_does() -> None:
    by_id = _group(PPO, "CartPole-v1", [0, 1], **SMALL)
    given = SeedGroup(PPO, seeds=[0, 1], env=[to_vec_env("CartPole-v1", 4) for _ in range(2)], **SMALL)
    for group in (by_id, given):
        group.learn(256, log_interval=1)
    for i in range(2):
        assert all(torch.equal(a, b) for a, b in zip(_params(by_id, i), _params(given, i)))


def test_a_callback_returning_false_stops_the_group() -> None:
    class StopAt(BaseCallback):
        def _on_step(self) -> bool:
            return self.num_timesteps < 100

    group = _group(PPO, "CartPole-v1", [0, 1], **SMALL)
    group.learn(1024, callback=StopAt())
    assert group.num_timesteps == 100


@pytest.mark.parametrize(("n", "batch"), [(5, 64), (3, 256), (10, 1), (2, 7)])
def test_on_policy_losses_are_the_vmapped_pure_losses_bit_for_bit(n: int, batch: int) -> None:
    """lit_sb3.seeds.on_policy_losses against lit_sb3's PPO and A2C losses mapped over the seed axis (vmap): the
    losses, every term and the gradients, to the last bit, with and without advantage normalization, value clipping
    and a closed-form entropy."""
    import functools

    from torch.func import vmap

    from lit_sb3.algorithms.a2c.a2c import a2c_loss
    from lit_sb3.common.ppo_update import ppo_loss
    from lit_sb3.seeds import on_policy_losses as batched

    gen = torch.Generator().manual_seed(n * 1000 + batch)

    def draw() -> torch.Tensor:
        return torch.randn(n, batch, generator=gen)

    fields = RolloutBufferSamples(draw(), draw(), draw(), draw(), draw(), draw())
    for normalize in (True, False):
        for clip_range_vf in (None, 0.2):
            for closed_form in (True, False):
                values, log_prob = draw().requires_grad_(True), draw().requires_grad_(True)
                entropy = draw().requires_grad_(True) if closed_form else None
                dims = (0, 0, 0 if closed_form else None, 0)
                ppo: dict[str, Any] = {"clip_range": 0.2, "clip_range_vf": clip_range_vf, "ent_coef": 0.01}
                ppo.update(normalize_advantage=normalize, vf_coef=0.5)
                pairs = [
                    (
                        vmap(functools.partial(ppo_loss, **ppo), in_dims=dims)(values, log_prob, entropy, fields),
                        batched.ppo_loss(values, log_prob, entropy, fields, **ppo),
                    )
                ]
                if clip_range_vf is None:
                    a2c: dict[str, Any] = {"normalize_advantage": normalize, "ent_coef": 0.01, "vf_coef": 0.5}
                    pairs.append(
                        (
                            vmap(functools.partial(a2c_loss, **a2c), in_dims=dims)(values, log_prob, entropy, fields),
                            batched.a2c_loss(values, log_prob, entropy, fields, **a2c),
                        )
                    )
                inputs = [t for t in (values, log_prob, entropy) if t is not None]
                for (mapped, mapped_terms), (mine, my_terms) in pairs:
                    assert torch.equal(mapped, mine) and mapped_terms.keys() == my_terms.keys()
                    assert all(torch.equal(mapped_terms[k], my_terms[k]) for k in my_terms)
                    expected = torch.autograd.grad(mapped.sum(), inputs)
                    got = torch.autograd.grad(mine.sum(), inputs)
                    assert all(torch.equal(a, b) for a, b in zip(expected, got, strict=True))

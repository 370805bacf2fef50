"""The batched classic-control envs against ``make_vec_env`` (DummyVecEnv of Monitor(gym.make(id))): the same
observations, rewards, dones, infos and reset infos, bit for bit, over many episode ends of both kinds."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gymnasium.wrappers import TimeLimit
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecNormalize

from lit_sb3.seeds.classic_envs import ClassicVecEnv, classic_vec_envs, is_classic, play_episodes_side_by_side
from lit_sb3.seeds.classic_physics import PHYSICS

IDS = sorted(PHYSICS)


def _policy(env_id: str, obs: np.ndarray, rng: np.random.Generator, n_actions: int) -> np.ndarray:
    """Half the envs follow a policy that reaches the episode's goal (or CartPole's time limit), half act at random,
    so that episodes end by termination and by truncation."""
    if env_id == "CartPole-v1":
        good = (obs[:, 2] + 0.5 * obs[:, 3] > 0).astype(np.int64)
    elif env_id == "Acrobot-v1":
        good = np.where(obs[:, 5] > 0, 2, 0)  # torque along the second joint's velocity
    else:  # MountainCar: push along the velocity
        good = np.where(obs[:, 1] > 0, 2, 0)
    random = rng.integers(0, n_actions, len(obs))
    mixed = np.where(np.arange(len(obs)) % 2 == 0, good, random)
    return np.where(rng.random(len(obs)) < 0.1, random, mixed)


def _same_step(ours: tuple[Any, ...], theirs: tuple[Any, ...], where: str) -> dict[str, int]:
    """Assert two VecEnv step results are identical; count the episode ends by kind."""
    for mine, ref, name in zip(ours[:3], theirs[:3], ("obs", "rewards", "dones")):
        assert mine.dtype == ref.dtype and mine.shape == ref.shape, f"{where}: {name} {mine.dtype} {ref.dtype}"
        assert np.array_equal(mine, ref), f"{where}: {name} differ\n{mine}\n{ref}"
    ends = {"terminated": 0, "truncated": 0}
    for mine_info, ref_info in zip(ours[3], theirs[3]):
        assert list(mine_info) == list(ref_info), where
        for key, ref_value in ref_info.items():
            value = mine_info[key]
            if key == "terminal_observation":
                assert value.dtype == ref_value.dtype and np.array_equal(value, ref_value), where
            elif key == "episode":
                assert (value["r"], value["l"]) == (ref_value["r"], ref_value["l"]), where
                assert type(value["r"]) is type(ref_value["r"]) and type(value["l"]) is type(ref_value["l"])
                assert set(value) == set(ref_value)
            else:
                assert value == ref_value and type(value) is type(ref_value), f"{where}: {key}"
        if "episode" in ref_info:
            ends["truncated" if ref_info["TimeLimit.truncated"] else "terminated"] += 1
    return ends


def _run_both(env_id: str, ours: VecEnv, theirs: VecEnv, steps: int, seed: int) -> dict[str, int]:
    rng = np.random.default_rng(seed)
    obs, ref_obs = ours.reset(), theirs.reset()
    assert obs.dtype == ref_obs.dtype and np.array_equal(obs, ref_obs)
    assert ours.reset_infos == theirs.reset_infos
    ends = {"terminated": 0, "truncated": 0}
    for t in range(steps):
        actions = _policy(env_id, ref_obs, rng, int(theirs.action_space.n))  # type: ignore[attr-defined]
        ref = theirs.step(actions)
        found = _same_step(ours.step(actions), ref, f"{env_id} step {t}")
        ref_obs = ref[0]
        assert ours.reset_infos == theirs.reset_infos
        for kind, count in found.items():
            ends[kind] += count
    return ends


@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("seed", [0, 123])
def test_same_as_make_vec_env(env_id: str, seed: int) -> None:
    ours = classic_vec_envs(env_id, 6, seeds=[seed])[0]
    theirs = make_vec_env(env_id, n_envs=6, seed=seed)
    ends = _run_both(env_id, ours, theirs, 2500, seed)
    assert ends["terminated"] >= 10 and ends["truncated"] >= 3, ends
    # Monitor's episode lists and step counts
    for method in ("get_episode_rewards", "get_episode_lengths", "get_total_steps"):
        assert ours.env_method(method) == theirs.env_method(method)


@pytest.mark.parametrize("env_id", IDS)
def test_seed_and_reset_semantics(env_id: str) -> None:
    """``seed(s)``: env j draws from ``s + j`` at the next reset only; later resets continue its generator; options
    bound the initial state; an explicit reset mid-episode starts new episodes (early resets allowed)."""
    ours, theirs = classic_vec_envs(env_id, 3)[0], make_vec_env(env_id, n_envs=3)
    for env in (ours, theirs):
        env.seed(41)
    _run_both(env_id, ours, theirs, 300, 1)
    assert np.array_equal(ours.reset(), theirs.reset())  # unseeded: the generators go on
    _run_both(env_id, ours, theirs, 50, 2)
    for env in (ours, theirs):
        env.seed(7)
        env.set_options({"low": -0.01, "high": 0.01} if env_id != "MountainCar-v0" else {"low": -0.5, "high": -0.45})
    _run_both(env_id, ours, theirs, 200, 3)
    assert ours.get_attr("np_random_seed") == [7, 8, 9] == theirs.get_attr("np_random_seed")


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Acrobot-v1"])
def test_bank_steps_several_vec_envs_together(env_id: str) -> None:
    """VecEnvs of one bank that send their actions first are stepped in one call; one stepped alone in between, and
    one under a VecNormalize, still give each its own make_vec_env's results."""
    ours = classic_vec_envs(env_id, 4, 3, seeds=[3, 10, 20])
    theirs = [make_vec_env(env_id, n_envs=4, seed=s) for s in (3, 10, 20)]
    ours[2], theirs[2] = VecNormalize(ours[2]), VecNormalize(theirs[2])  # type: ignore[call-overload]
    rng = np.random.default_rng(0)
    assert all(np.array_equal(a.reset(), b.reset()) for a, b in zip(ours, theirs))
    for t in range(600):
        actions = [rng.integers(0, 2, 4) for _ in ours]
        if t % 7 == 0:  # the middle one alone, before the others
            _same_step(ours[1].step(actions[1]), theirs[1].step(actions[1]), f"alone {t}")
            together = [0, 2]
        else:
            together = [0, 1, 2]
        for i in together:
            ours[i].step_async(actions[i])
        for i in reversed(together):
            _same_step(ours[i].step_wait(), theirs[i].step(actions[i]), f"together {t} env {i}")


def test_attributes_and_wrappers() -> None:
    ours, theirs = classic_vec_envs("CartPole-v1", 2, seeds=[5])[0], make_vec_env("CartPole-v1", n_envs=2, seed=5)
    assert ours.get_attr("spec")[0].id == theirs.get_attr("spec")[0].id == "CartPole-v1"
    assert ours.get_attr("metadata") == theirs.get_attr("metadata")
    assert ours.observation_space == theirs.observation_space and ours.action_space == theirs.action_space
    # each env's action space is seeded as make_vec_env seeds it
    assert [s.sample() for s in ours.get_attr("action_space")] == [s.sample() for s in theirs.get_attr("action_space")]
    for wrapper in (Monitor, TimeLimit):
        assert ours.env_is_wrapped(wrapper) == theirs.env_is_wrapped(wrapper) == [True, True]
    assert ours.env_is_wrapped(VecNormalize) == [False, False]  # type: ignore[arg-type]
    with pytest.raises(AttributeError, match="attr_name"):
        ours.get_attr("gravity")
    with pytest.raises(AttributeError, match="method_name"):
        ours.env_method("render")
    assert isinstance(theirs, DummyVecEnv) and isinstance(ours, ClassicVecEnv)


def test_refusals() -> None:
    assert not is_classic("Pendulum-v1") and not is_classic("NoSuchEnv-v0")
    with pytest.raises(ValueError, match="env_id"):
        classic_vec_envs("Pendulum-v1", 2)
    env = classic_vec_envs("CartPole-v1", 2)[0]
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.array([0, 1]))
    env.reset()
    with pytest.raises(ValueError, match=r"actions: CartPole-v1 takes the actions of Discrete\(2\)"):
        env.step(np.array([0, 2]))
    with pytest.raises(ValueError, match="actions: 2 integers"):
        env.step(np.array([0.0, 1.0]))


def _rows(path: Path) -> tuple[str, list[tuple[str, str]]]:
    lines = path.read_text().splitlines()
    return lines[1], [(row["r"], row["l"]) for row in csv.DictReader(lines[1:])]


def test_monitor_files(tmp_path: Path) -> None:
    ours = classic_vec_envs("CartPole-v1", 2, seeds=[1], monitor_dirs=[str(tmp_path / "ours")])[0]
    theirs = make_vec_env("CartPole-v1", n_envs=2, seed=1, monitor_dir=str(tmp_path / "theirs"))
    _run_both("CartPole-v1", ours, theirs, 400, 0)
    ours.close()
    theirs.close()
    rows = 0
    for j in range(2):
        mine, ref = tmp_path / "ours" / f"{j}.monitor.csv", tmp_path / "theirs" / f"{j}.monitor.csv"
        assert mine.read_text().splitlines()[0].startswith('#{"t_start": ')
        assert '"env_id": "CartPole-v1"' in mine.read_text().splitlines()[0]
        assert _rows(mine) == _rows(ref)
        rows += len(_rows(ref)[1])
    assert rows > 3


def _greedy(env_id: str, obs: np.ndarray) -> np.ndarray:
    """A policy of the observation alone that ends episodes both ways (CartPole: often by its time limit)."""
    if env_id == "CartPole-v1":
        return (obs[..., 2] + 0.5 * obs[..., 3] > 0).astype(np.int64)
    return np.where(obs[..., 5 if env_id == "Acrobot-v1" else 1] > 0, 2, 0)


def _one_after_another(env: VecEnv, episodes: int, env_id: str) -> list[tuple[float, int]]:
    """SB3's ``evaluate_policy`` loop on a one-env VecEnv: reset, then step until ``episodes`` episodes ended."""
    obs, found = env.reset(), []
    while len(found) < episodes:
        obs, _, dones, infos = env.step(_greedy(env_id, obs))
        if dones[0]:
            found.append((infos[0]["episode"]["r"], infos[0]["episode"]["l"]))
    return found


@pytest.mark.parametrize("env_id", IDS)
def test_episodes_side_by_side_are_the_episodes_one_after_another(env_id: str, tmp_path: Path) -> None:
    """Three one-env VecEnvs' next 6 episodes played side by side: the records, Monitor's lists and rows, step
    counts and generators (the next episode's start) of playing them one after another, evaluation after evaluation
    (re-seeded before the second, not before the third)."""
    ours = classic_vec_envs(env_id, 1, 3, seeds=[5, 6, 7], monitor_dirs=[str(tmp_path / f"ours{i}") for i in range(3)])
    theirs = [make_vec_env(env_id, 1, seed=5 + i, monitor_dir=str(tmp_path / f"theirs{i}")) for i in range(3)]
    for evaluation in range(3):
        if evaluation == 1:
            for i, (mine, ref) in enumerate(zip(ours, theirs)):
                mine.seed(40 + i)
                ref.seed(40 + i)
        for env in ours:
            env.reset()
        played = play_episodes_side_by_side(ours, 6, lambda obs, _: _greedy(env_id, obs))
        for mine, ref, records in zip(ours, theirs, played):
            expected = _one_after_another(ref, 6, env_id)
            assert [(r["r"], r["l"]) for r in records] == expected, f"evaluation {evaluation}"
            assert mine.env_method("get_episode_rewards") == ref.env_method("get_episode_rewards")
            assert mine.env_method("get_total_steps") == ref.env_method("get_total_steps")
            assert mine.bank.rng(mine.start).bit_generator.state == ref.get_attr("np_random")[0].bit_generator.state
    assert sum(r["l"] for records in played for r in records) > 6 * 3 * 20  # episodes of some length were played
    for i in range(3):
        for mine, ref in zip(ours, theirs):  # the envs go on as one-by-one play leaves them
            actions = _greedy(env_id, np.zeros((1, *ours[0].observation_space.shape)))
            _same_step(mine.step(actions), ref.step(actions), f"step after the evaluations {i}")
    for env in [*ours, *theirs]:
        env.close()
    for i in range(3):
        mine_rows = (tmp_path / f"ours{i}" / "0.monitor.csv").read_text().splitlines()[2:]
        their_rows = (tmp_path / f"theirs{i}" / "0.monitor.csv").read_text().splitlines()[2:]
        assert [row.split(",")[:2] for row in mine_rows] == [row.split(",")[:2] for row in their_rows]


def test_episodes_side_by_side_refusals() -> None:
    env = classic_vec_envs("CartPole-v1", 2)[0]
    with pytest.raises(ValueError, match=r"^envs: VecEnvs of one env each, got one of 2"):
        play_episodes_side_by_side([env], 3, lambda obs, _: np.zeros(obs.shape[:2], dtype=np.int64))
    one = classic_vec_envs("CartPole-v1", 1)[0]
    with pytest.raises(RuntimeError, match=r"^envs: reset\(\) each VecEnv first"):
        play_episodes_side_by_side([one], 3, lambda obs, _: np.zeros(obs.shape[:2], dtype=np.int64))
    one.reset()
    with pytest.raises(ValueError, match=r"^episodes: must be >= 1"):
        play_episodes_side_by_side([one], 0, lambda obs, _: np.zeros(obs.shape[:2], dtype=np.int64))
    with pytest.raises(ValueError, match=r"^policy: CartPole-v1 takes the actions of Discrete\(2\)"):
        play_episodes_side_by_side([one], 3, lambda obs, _: np.full(obs.shape[:2], 5))

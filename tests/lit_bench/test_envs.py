"""The env families of SB3's reference table (Atari, Box2D, MiniGrid, PyBullet, robotics): wrappers as the RL Zoo
applies them, the env-version map, the missing-extra error, coverage, and smoke runs through run.py.

Atari and Box2D run in the default test run (the `test` extra installs them); the other families' smoke runs are
slow and skip when their extra is not installed."""

from __future__ import annotations

import csv
import importlib.util
import json
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from gymnasium import spaces
from stable_baselines3.common.atari_wrappers import ClipRewardEnv, EpisodicLifeEnv
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import VecFrameStack, VecNormalize, VecTransposeImage, unwrap_vec_wrapper

from lit_bench.cli.coverage import coverage
from lit_bench.config.checks import ConfigError
from lit_bench.config.envs import make_envs
from tests.lit_bench.helpers import CONF, REPO, compose_run, read_csv, run_py

pytestmark = pytest.mark.harness

EXTRA_MODULES = {
    "atari": ("ale_py", "cv2"),
    "box2d": ("Box2D", "pygame"),
    "minigrid": ("minigrid",),
    "pybullet": ("pybullet_envs_gymnasium",),
    "robotics": ("panda_gym", "highway_env"),
}


def installed(extra: str) -> bool:
    return all(importlib.util.find_spec(module) is not None for module in EXTRA_MODULES[extra])


def needs(extra: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(
        not installed(extra), reason=f"the '{extra}' extra is not installed (pip install 'lit-sb3[{extra}]')"
    )


# (algo whose Zoo settings apply, env group, extra, observation space the agent sees: shape and dtype, or Dict keys)
WRAPPED = [
    ("ppo", "Breakout", "atari", ((4, 84, 84), np.uint8)),  # AtariWrapper 84x84 gray, 4 stacked, channel-first
    ("ppo", "CarRacing", "box2d", ((2, 64, 64), np.uint8)),  # skip 2, 64x64 gray, 2 stacked, channel-first
    ("ppo", "LunarLander", "box2d", ((8,), np.float32)),
    ("ppo", "MiniGrid-DoorKey-5x5", "minigrid", ((2835,), np.uint8)),  # FlatObsWrapper: image + encoded mission
    ("ppo", "HopperBulletEnv", "pybullet", ((15,), np.float32)),
    ("tqc", "PandaReach", "robotics", {"observation", "achieved_goal", "desired_goal"}),
    ("tqc", "parking", "robotics", {"observation", "achieved_goal", "desired_goal"}),
]


@pytest.mark.parametrize(
    ("algo", "env_name", "extra", "expected"), [pytest.param(*w, marks=needs(w[2]), id=w[1]) for w in WRAPPED]
)
def test_wrapped_observations(algo: str, env_name: str, extra: str, expected: object) -> None:
    """Training and evaluation envs give the agent the observations the RL Zoo trains on."""
    cfg = compose_run(f"algo={algo}", f"env={env_name}", "env.n_envs=2")
    train, evaluation = make_envs(cfg.env, env_name, 0, cfg.algo.get("gamma"))
    try:
        for env, n in ((train, 2), (evaluation, 1)):
            obs = env.reset()
            if isinstance(expected, set):
                assert isinstance(env.observation_space, spaces.Dict) and set(env.observation_space.spaces) == expected
                assert all(obs[key].shape[0] == n for key in expected)
                continue
            shape, dtype = expected
            assert env.observation_space.shape == shape and env.observation_space.dtype == dtype
            normalized = isinstance(env, VecNormalize) and env.norm_obs
            assert obs.shape == (n, *shape) and obs.dtype == (np.float32 if normalized else dtype)
            image = len(shape) == 3
            assert (unwrap_vec_wrapper(env, VecTransposeImage) is not None) == image
            assert (unwrap_vec_wrapper(env, VecFrameStack) is not None) == image
        assert isinstance(train, VecNormalize) == (cfg.env.normalize is not None)
    finally:
        train.close()
        evaluation.close()


def wrapper_chain(env: object) -> list[type]:
    chain = []
    while hasattr(env, "env"):
        chain.append(type(env))
        env = env.env
    return chain


@needs("atari")
def test_atari_trains_on_lives_and_clipped_rewards_but_scores_whole_games() -> None:
    """As the RL Zoo: a lost life ends a training episode and rewards are clipped, while Monitor (innermost) sees
    the whole game with raw rewards, and evaluation reads its episodes."""
    cfg = compose_run("algo=dqn", "env=Breakout")
    train, evaluation = make_envs(cfg.env, "Breakout", 0, None)
    try:
        for env in (train, evaluation):
            chain = wrapper_chain(env.unwrapped.envs[0])  # type: ignore[attr-defined]
            assert chain.index(EpisodicLifeEnv) < chain.index(Monitor) and chain.index(ClipRewardEnv) < chain.index(
                Monitor
            )
    finally:
        train.close()
        evaluation.close()


def test_env_version_map_covers_every_reference_env() -> None:
    with (REPO / "results" / "reference" / "sb3_reference_scores.csv").open(newline="") as file:
        reference_ids = {row["env_id"] for row in csv.DictReader(file)}
    rows = read_csv(REPO / "results" / "reference" / "env_version_map.csv")
    mapped = [row["reference_env_id"] for row in rows]
    assert len(mapped) == len(set(mapped)), "one row per reference env id"
    assert reference_ids <= set(mapped)
    pinned = {yaml.safe_load(p.read_text())["id"] for p in (CONF / "env").glob("*.yaml")}
    for row in rows:
        assert row["env_id"] in pinned, f"{row['env_id']} (for {row['reference_env_id']}) has no env group"
        assert row["same_version"] == str(row["reference_env_id"] == row["env_id"]).lower()
        if row["same_version"] == "false":
            assert row["note"], f"say how {row['reference_env_id']} and {row['env_id']} differ"


def test_coverage_lists_every_reference_row() -> None:
    rows = coverage(make=False)
    assert len(rows) == 199 and all(r.env is not None and r.tuned for r in rows)
    not_installed = [r for r in rows if not r.runnable]
    assert all("extra" in r.reason for r in not_installed)  # without building envs, only missing extras remain
    if all(installed(extra) for extra in EXTRA_MODULES):
        assert not not_installed


@pytest.mark.parametrize("package", ["ale_py", "cv2"])
def test_missing_extra_is_one_line_before_training(
    package: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lit_bench.run.train import run

    monkeypatch.setitem(sys.modules, package, None)  # `import <package>` now raises ImportError
    summary = run(compose_run("algo=ppo", "env=Breakout", f"out_dir={tmp_path}"))
    assert summary["error"] == (
        f"env=Breakout needs the 'atari' extra (missing module {package!r}): pip install 'lit-sb3[atari]'"
    )
    assert summary["status"] == "failed" and summary["traceback"] is None
    assert not list(tmp_path.rglob("eval.csv")) and not list(tmp_path.rglob("config.yaml"))
    with pytest.raises(ConfigError, match="needs the 'atari' extra"):
        from lit_bench.config.checks import require_package

        require_package(compose_run("env=Breakout").env, "Breakout")


def test_the_broken_mujoco_release_is_refused_for_mujoco_envs_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import lit_bench.config.checks as checks
    from lit_bench.run.train import run

    monkeypatch.setattr(checks, "version", lambda dist: "4.0.0" if dist == "mujoco" else "1.0")
    summary = run(compose_run("algo=sac", "env=HalfCheetah", f"out_dir={tmp_path}"))
    assert summary["status"] == "failed" and summary["traceback"] is None
    assert summary["error"].startswith("env=HalfCheetah: mujoco==4.0.0 has a solver bug")
    assert "\n" not in summary["error"]
    assert not list(tmp_path.rglob("eval.csv")) and not list(tmp_path.rglob("config.yaml"))
    checks.require_package(compose_run("env=CartPole").env, "CartPole")  # not a MuJoCo env: no refusal
    monkeypatch.setattr(checks, "version", lambda dist: "3.3.7")
    checks.require_package(compose_run("env=HalfCheetah").env, "HalfCheetah")
    assert checks.uses_mujoco(compose_run("env=InvertedPendulum").env)
    assert not checks.uses_mujoco(compose_run("env=Pendulum").env)


# ------------------------------------------------------------------------------------------- smoke runs (run.py)

SMALL = ("budget=256", "eval.every=256", "eval.episodes=1", "hydra/launcher=basic")
PPO_SMALL = ("algo=ppo", "env.n_envs=2", "algo.n_steps=64", "algo.batch_size=64", "algo.n_epochs=1", *SMALL)


def smoke(tmp_path: Path, sweep: str, *overrides: str) -> dict[str, dict]:
    """One run.py multirun; every run completes, evaluates, and records the Zoo's settings in its config."""
    started = time.perf_counter()
    result = run_py("-m", *overrides, f"out_dir={tmp_path}", f"sweep={sweep}", timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    print(f"{sweep}: {time.perf_counter() - started:.1f}s")
    runs = {}
    for summary_path in (tmp_path / sweep).rglob("seed_0/summary.json"):
        summary = json.loads(summary_path.read_text())
        assert summary["status"] == "completed" and summary["timesteps"] >= 256, summary
        assert np.isfinite(summary["final_mean_return"])
        assert len(read_csv(summary_path.parent / "eval.csv")) >= 1
        runs[summary["env"]] = yaml.safe_load((summary_path.parent / "config.yaml").read_text())
    return runs


@needs("atari")
@needs("box2d")
def test_smoke_atari_and_box2d(tmp_path: Path) -> None:
    runs = smoke(tmp_path, "atari_box2d", "env=Breakout,LunarLander", *PPO_SMALL)
    assert set(runs) == {"Breakout", "LunarLander"}
    assert runs["Breakout"]["algo"]["policy"] == "CnnPolicy" and runs["Breakout"]["algo"]["ent_coef"] == 0.01
    assert runs["LunarLander"]["algo"]["gae_lambda"] == 0.98  # the Zoo's ppo LunarLander-v3 entry


@pytest.mark.slow
@needs("minigrid")
@needs("pybullet")
@needs("box2d")
def test_smoke_minigrid_pybullet_carracing(tmp_path: Path) -> None:
    runs = smoke(tmp_path, "ppo_families", "env=MiniGrid-DoorKey-5x5,HopperBulletEnv,CarRacing", *PPO_SMALL)
    assert set(runs) == {"MiniGrid-DoorKey-5x5", "HopperBulletEnv", "CarRacing"}
    assert runs["CarRacing"]["algo"]["policy"] == "CnnPolicy" and runs["CarRacing"]["algo"]["use_sde"]


@pytest.mark.slow
@needs("robotics")
def test_smoke_robotics_her(tmp_path: Path) -> None:
    runs = smoke(
        tmp_path,
        "robotics",
        "algo=tqc",
        "env=PandaReach,parking",
        "algo.learning_starts=64",
        "algo.batch_size=32",
        "algo.buffer_size=1000",
        "++algo.policy_kwargs.net_arch=[32,32]",
        *SMALL,
    )
    assert set(runs) == {"PandaReach", "parking"}
    for config in runs.values():
        assert config["algo"]["policy"] == "MultiInputPolicy"
        assert config["algo"]["replay_buffer_class"]["path"] == "lit_sb3.HerReplayBuffer"


# ------------------------------------------------------------------------------------------------- zoo suites


def test_zoo_suites_hold_the_reference_table_at_its_budgets() -> None:
    with (REPO / "results" / "reference" / "sb3_reference_scores.csv").open(newline="") as file:
        budgets = {(r["algo"], r["env_id"]): int(r["n_timesteps"]) for r in csv.DictReader(file)}
    reference_of = {(r.algo, r.env): r.reference_env_id for r in coverage(make=False)}
    families = []
    for path in sorted((CONF / "suite").glob("zoo_*.yaml")):
        suite = yaml.safe_load(path.read_text())
        assert suite["name"] == path.stem and suite["reference"] and len(suite["seeds"]) >= 5
        if path.stem != "zoo_all":
            families += suite["entries"]
    every = yaml.safe_load((CONF / "suite" / "zoo_all.yaml").read_text())["entries"]
    assert sorted(map(str, families)) == sorted(map(str, every)) and len(every) == len(budgets)
    for entry in every:
        assert entry["budget"] == budgets[(entry["algo"], reference_of[(entry["algo"], entry["env"])])]


def test_suite_entries_share_multiruns_and_take_a_launcher(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lit_bench.cli import regress
    from lit_bench.cli.regression import suites

    commands: list[list[str]] = []
    monkeypatch.setattr(regress.subprocess, "run", lambda command, **_: commands.append(command))
    regress.run_suite(suites.load_suite("zoo_atari"), "lit", tmp_path, "slurm")

    def value(command: list[str], key: str) -> str:
        return next(word for word in command if word.startswith(f"{key}="))

    assert sorted(value(c, "algo") for c in commands) == ["algo=a2c", "algo=dqn", "algo=ppo", "algo=qrdqn"]
    for command in commands:
        assert len(value(command, "env").split(",")) == 10 and "budget=10000000" in command
        assert "hydra/launcher=slurm" in command and "seed=0,1,2,3,4" in command


def test_her_buffer_goes_into_weights_only_checkpoints(tmp_path: Path) -> None:
    """Robotics runs checkpoint their HerReplayBuffer: its object-array ``infos`` must not break the checkpoint."""
    import torch
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.envs import BitFlippingEnv

    from lit_sb3 import HerReplayBuffer
    from lit_sb3.common.replay import buffer_arrays, restore_buffer_arrays

    env = make_vec_env(lambda: BitFlippingEnv(n_bits=4, continuous=True), n_envs=1)
    buffer = HerReplayBuffer(20, env.observation_space, env.action_space, env=env)
    obs = env.reset()
    for _ in range(6):
        action = np.array([env.action_space.sample()])
        next_obs, reward, done, info = env.step(action)
        buffer.add(obs, next_obs, action, reward, done, info)
        obs = next_obs
    path = tmp_path / "buffer.pt"
    torch.save(buffer_arrays(buffer), path)
    restored = HerReplayBuffer(20, env.observation_space, env.action_space, env=env)
    restore_buffer_arrays(restored, torch.load(path, weights_only=True))
    assert restored.pos == 6 and np.array_equal(restored.actions, buffer.actions)
    assert np.array_equal(restored.observations["desired_goal"], buffer.observations["desired_goal"])
    assert restored.sample(4).rewards.shape == (4, 1)


@pytest.mark.parametrize(("env_name", "normalize"), [("CartPole", False), ("Acrobot", True)])
def test_seed_envs_of_a_plain_classic_env_are_make_envs_as_arrays(
    tmp_path: Path, env_name: str, normalize: bool
) -> None:
    """A seed group's envs of a plain classic-control env (``make_seed_envs``) step as ``make_envs``' do, seed by seed,
    VecNormalize on top included; each seed's monitor files in its own directory."""
    from lit_bench.config.envs import batched_classic_id, make_seed_envs
    from lit_sb3.seeds.classic_envs import ClassicVecEnv

    cfg = compose_run("algo=ppo", f"env={env_name}", "env.n_envs=3", f"env.normalize={str(normalize).lower()}")
    assert batched_classic_id(cfg.env) == cfg.env.id
    seeds = [4, 9]
    dirs = [str(tmp_path / "ours" / str(s)) for s in seeds]
    ours = make_seed_envs(cfg.env, env_name, seeds, 0.99, monitor_dirs=dirs)
    theirs = [make_envs(cfg.env, env_name, s, 0.99, monitor_dir=str(tmp_path / "theirs" / str(s))) for s in seeds]
    assert all(isinstance(t.unwrapped, ClassicVecEnv) and isinstance(e.unwrapped, ClassicVecEnv) for t, e in ours)
    rng = np.random.default_rng(0)
    for kind in (0, 1):  # training envs, then evaluation envs
        envs, refs = [pair[kind] for pair in ours], [pair[kind] for pair in theirs]
        for env, ref in zip(envs, refs):
            assert np.array_equal(env.reset(), ref.reset())
        for _ in range(300):
            actions = [rng.integers(0, ref.action_space.n, ref.num_envs) for ref in refs]  # type: ignore[attr-defined]
            for env, a in zip(envs, actions):
                env.step_async(a)
            for env, ref, a in zip(envs, refs, actions):
                mine, expected = env.step_wait(), ref.step(a)
                for x, y in zip(mine[:3], expected[:3]):
                    assert np.array_equal(x, y)
                assert [i.get("episode", {}).get("l") for i in mine[3]] == [
                    i.get("episode", {}).get("l") for i in expected[3]
                ]
    for (train, evaluation), (ref_train, ref_eval) in zip(ours, theirs):
        for env in (train, evaluation, ref_train, ref_eval):
            env.close()
    for s in seeds:
        assert len(list((tmp_path / "ours" / str(s)).glob("*.monitor.csv"))) == 3
        mine = (tmp_path / "ours" / str(s) / "0.monitor.csv").read_text().splitlines()[2:]
        ref = (tmp_path / "theirs" / str(s) / "0.monitor.csv").read_text().splitlines()[2:]
        assert [row.split(",")[:2] for row in mine] == [row.split(",")[:2] for row in ref]


def test_seed_envs_of_other_envs_are_make_envs(tmp_path: Path) -> None:
    from lit_bench.config.envs import batched_classic_id, make_seed_envs

    cfg = compose_run("algo=ppo", "env=CartPole", "+env.kwargs.sutton_barto_reward=true")
    assert batched_classic_id(cfg.env) is None
    pairs = make_seed_envs(cfg.env, "CartPole", [1], None, monitor_dirs=[str(tmp_path)])
    assert type(pairs[0][0]).__name__ == "DummyVecEnv"
    for train, evaluation in pairs:
        train.close()
        evaluation.close()

"""Normalized scores with known numbers: Atari human-normalized from the published table, other envs between the
measured random policy and the best RL Zoo agent; provenance in every row."""

from __future__ import annotations

import numpy as np
import pytest

from lit_bench.analysis.normalize import normalization_table, normalizer


def _tables(tmp_path):
    (tmp_path / "random_scores.csv").write_text(
        "env,env_id,group,episodes,mean_return,std_return,min_return,max_return,seed,command,versions\n"
        "CartPole,CartPole-v1,classic,100,20.0,1,9,63,0,python benchmarks/random_scores.py,gymnasium==1\n"
        "Hopper,Hopper-v5,mujoco,20,20.0,1,0,1,0,python benchmarks/random_scores.py,gymnasium==1\n"
    )
    (tmp_path / "sb3_reference_scores.csv").write_text(
        "algo,env_id,mean_reward,std_reward,n_timesteps,source\n"
        "ppo,CartPole-v1,500.0,0,100000,zoo\na2c,CartPole-v1,420.0,0,500000,zoo\n"
        "sac,Hopper-v3,2620.0,0,1000000,zoo\n"
    )
    (tmp_path / "env_version_map.csv").write_text(
        "reference_env_id,env_id,same_version,note\nCartPole-v1,CartPole-v1,true,\nHopper-v3,Hopper-v5,false,\n"
    )
    (tmp_path / "atari_human_random.csv").write_text(
        'env_id,random,human,source\nBreakoutNoFrameskip-v4,1.7,30.5,"Badia et al. 2020"\n'
    )
    return tmp_path


def test_known_normalized_scores(tmp_path):
    where = _tables(tmp_path)
    breakout = normalizer("BreakoutNoFrameskip-v4", where)
    assert breakout.kind == "human-normalized" and breakout(np.array([1.7, 30.5, 16.1])) == pytest.approx(
        [0.0, 1.0, 0.5]
    )
    cartpole = normalizer("CartPole-v1", where)  # random 20, best Zoo agent (ppo) 500
    assert cartpole.kind == "Zoo-normalized" and cartpole(260.0) == pytest.approx(0.5)
    assert "ppo, 500" in cartpole.high_source and "benchmarks/random_scores.py" in cartpole.low_source
    hopper = normalizer("Hopper-v5", where)  # the reference of an older version: said
    assert hopper(1320.0) == pytest.approx(0.5) and "trained on Hopper-v3" in hopper.high_source
    assert normalizer("NoSuchEnv-v0", where) is None
    table = normalization_table(["CartPole-v1", "NoSuchEnv-v0"], where).set_index("env_id")
    assert table.loc["NoSuchEnv-v0", "kind"] == "not normalized" and table.loc["CartPole-v1", "high"] == 500.0


def test_the_repository_tables_cover_every_env_group_installed():
    # measured here for classic, box2d, mujoco and atari (minigrid, pybullet, robotics: packages not installed)
    for env_id in ("CartPole-v1", "Pendulum-v1", "LunarLander-v3", "HalfCheetah-v5", "BreakoutNoFrameskip-v4"):
        assert normalizer(env_id) is not None, env_id
    assert normalizer("PongNoFrameskip-v4").low == -20.7  # Atari: the published random score, not ours

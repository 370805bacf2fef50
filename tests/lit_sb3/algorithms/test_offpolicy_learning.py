"""Off-policy algorithms learn: fast checks in the default run, RL Zoo settings and thresholds marked ``slow``.

Hyperparameters are the RL Zoo's (rl-baselines3-zoo hyperparams/*.yml) where a test says "Zoo".
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3.common.envs import BitFlippingEnv
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.noise import NormalActionNoise

from lit_sb3 import DDPG, DQN, SAC, TD3, HerReplayBuffer
from lit_sb3.common.seeding import EVAL_SEED_OFFSET
from tests.lit_sb3.helpers import best_eval_reward, zoo_settings

pytestmark = pytest.mark.learning


def _eval(model, env_id: str, seed: int, episodes: int = 10) -> float:
    env = Monitor(gym.make(env_id))
    env.reset(seed=seed + EVAL_SEED_OFFSET)
    mean, _ = evaluate_policy(model, env, n_eval_episodes=episodes, deterministic=True)
    env.close()
    return float(mean)


def _noise() -> NormalActionNoise:
    return NormalActionNoise(np.zeros(1), 0.1 * np.ones(1))


# the RL Zoo's settings as conf/algo_env/ ports them: {sac,td3,ddpg}.yml Pendulum-v1 (20k), dqn.yml CartPole-v1 (50k)
DQN_ZOO = zoo_settings("dqn", "CartPole")


# ---------------------------------------------------------------------- fast (default run, < ~2 min each)


def test_sac_fast_pendulum_beats_random():
    model = SAC(
        "MlpPolicy", env="Pendulum-v1", learning_rate=1e-3, policy_kwargs={"net_arch": [64, 64]}, batch_size=128, seed=0
    )
    model.learn(4_000)
    assert _eval(model, "Pendulum-v1", seed=0) >= -600  # a random policy scores about -1200


def test_td3_fast_pendulum_beats_random():
    # TD3's delayed actor needs more updates than DDPG here (SB3's TD3 scores about -900 after 4k steps too); at 6k
    # seed 0 sits on the steep part of the curve (SB3 -290, lit_sb3 with fused Adam -603), at 8k it is past it (-125)
    model = TD3(
        "MlpPolicy",
        env="Pendulum-v1",
        gamma=0.98,
        learning_starts=500,
        action_noise=_noise(),
        learning_rate=1e-3,
        batch_size=128,
        policy_kwargs={"net_arch": [64, 64]},
        seed=0,
    )
    model.learn(8_000)
    assert _eval(model, "Pendulum-v1", seed=0) >= -600


def test_ddpg_fast_pendulum_beats_random():
    model = DDPG(
        "MlpPolicy",
        env="Pendulum-v1",
        gamma=0.98,
        learning_starts=1000,
        action_noise=_noise(),
        learning_rate=1e-3,
        batch_size=128,
        policy_kwargs={"net_arch": [64, 64]},
        seed=0,
    )
    model.learn(4_000)
    assert _eval(model, "Pendulum-v1", seed=0) >= -600


def test_dqn_fast_cartpole_zoo_settings():
    model = DQN(
        "MlpPolicy", env="CartPole-v1", seed=0, **{**DQN_ZOO.hyperparameters, "policy_kwargs": {"net_arch": [64, 64]}}
    )
    model.learn(20_000)
    assert _eval(model, "CartPole-v1", seed=0) >= 100  # a random policy scores about 20


def test_dqn_her_fast_bit_flipping():
    n_bits = 6
    model = DQN(
        "MultiInputPolicy",
        env=BitFlippingEnv(n_bits=n_bits, max_steps=n_bits),
        replay_buffer_class=HerReplayBuffer,
        replay_buffer_kwargs={"n_sampled_goal": 4, "goal_selection_strategy": "future"},
        learning_rate=1e-3,
        batch_size=64,
        learning_starts=500,
        gamma=0.95,
        train_freq=1,
        target_update_interval=500,
        exploration_fraction=0.2,
        exploration_final_eps=0.02,
        policy_kwargs={"net_arch": [64, 64]},
        seed=0,
    )
    model.learn(5_000)
    rewards, _ = evaluate_policy(
        model, Monitor(BitFlippingEnv(n_bits=n_bits, max_steps=n_bits)), n_eval_episodes=50, return_episode_rewards=True
    )
    success = np.mean([r > -n_bits for r in rewards])  # reward -1 per step until the goal is reached
    assert success >= 0.8


# ---------------------------------------------------------------------- Zoo settings and thresholds (slow)


# "reaches X within N steps": evaluated every 2k steps (10 deterministic episodes), stopping once X is reached


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_sac_zoo_pendulum(seed):
    zoo = zoo_settings("sac", "Pendulum")
    best = best_eval_reward(
        SAC, "Pendulum-v1", budget=zoo.budget, threshold=-250, seed=seed, eval_every=2_000, **zoo.hyperparameters
    )
    assert best >= -250


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_td3_zoo_pendulum(seed):
    zoo = zoo_settings("td3", "Pendulum", n_actions=1)
    best = best_eval_reward(
        TD3, "Pendulum-v1", budget=zoo.budget, threshold=-250, seed=seed, eval_every=2_000, **zoo.hyperparameters
    )
    assert best >= -250


@pytest.mark.slow
def test_ddpg_zoo_pendulum():
    zoo = zoo_settings("ddpg", "Pendulum", n_actions=1)
    best = best_eval_reward(
        DDPG, "Pendulum-v1", budget=zoo.budget, threshold=-300, seed=0, eval_every=2_000, **zoo.hyperparameters
    )
    assert best >= -300


@pytest.mark.slow
def test_dqn_zoo_cartpole_two_of_three_seeds():
    scores = [
        best_eval_reward(
            DQN,
            "CartPole-v1",
            budget=DQN_ZOO.budget,
            threshold=400,
            seed=seed,
            eval_every=5_000,
            **DQN_ZOO.hyperparameters,
        )
        for seed in range(3)
    ]
    assert sum(s >= 400 for s in scores) >= 2, scores


@pytest.mark.slow
def test_dqn_her_bit_flipping_15_bits():
    n_bits = 15
    model = DQN(
        "MultiInputPolicy",
        env=BitFlippingEnv(n_bits=n_bits, max_steps=n_bits),
        replay_buffer_class=HerReplayBuffer,
        replay_buffer_kwargs={"n_sampled_goal": 4, "goal_selection_strategy": "future"},
        learning_rate=1e-3,
        batch_size=256,
        buffer_size=100_000,
        learning_starts=1000,
        gamma=0.95,
        train_freq=1,
        target_update_interval=1000,
        exploration_fraction=0.1,
        exploration_final_eps=0.02,
        policy_kwargs={"net_arch": [256, 256]},
        seed=0,
    )
    model.learn(60_000)
    rewards, _ = evaluate_policy(
        model,
        Monitor(BitFlippingEnv(n_bits=n_bits, max_steps=n_bits)),
        n_eval_episodes=100,
        return_episode_rewards=True,
    )
    assert np.mean([r > -n_bits for r in rewards]) >= 0.9

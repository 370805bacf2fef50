"""SB3's checks, words and exceptions on lit_sb3 (issue 37): code written against SB3 catches and filters what it did.

Where SB3 asserts, lit_sb3 raises one exception that is both a ValueError (how lit_sb3 refuses bad input) and the
AssertionError SB3 raises; messages start with SB3's words, then lit_sb3's own line where that says more.
"""

from __future__ import annotations

import warnings

import pytest
from sb3_contrib.common.envs import InvalidActionEnvDiscrete
from stable_baselines3.common.buffers import DictReplayBuffer
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.envs import BitFlippingEnv, IdentityEnvBox, SimpleMultiObsEnv
from stable_baselines3.common.policies import ActorCriticPolicy

from lit_sb3 import DQN, PPO, QRDQN, SAC, TD3, MaskablePPO

TINY = {"net_arch": [8]}


def _refused(make, match: str) -> str:
    """The one-line message of what ``make`` raises, checked to be both an AssertionError and a ValueError."""
    with pytest.raises(AssertionError, match=match) as info:
        make()
    assert isinstance(info.value, ValueError)
    message = str(info.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: MaskablePPO("MlpPolicy", IdentityEnvBox()), r"The algorithm only supports .* as action spaces"),
        (lambda: TD3("MlpPolicy", "CartPole-v1"), r"The algorithm only supports .*Box.* but Discrete\(2\) was"),
        (lambda: PPO("MlpPolicy", "Pendulum-v1", clip_range_vf=-0.2), r"`clip_range_vf` must be positive"),
        (lambda: PPO("MlpPolicy", "Pendulum-v1", n_steps=1), r"`n_steps \* n_envs` must be greater than 1"),
        (lambda: PPO("MlpPolicy", "Pendulum-v1", batch_size=1), r"`batch_size` must be greater than 1"),
        (
            lambda: SAC("MultiInputPolicy", BitFlippingEnv(n_bits=4, continuous=True), n_steps=3, buffer_size=200),
            r"N-step returns are not supported for Dict observation spaces",
        ),
    ],
)
def test_what_sb3_asserts_is_an_assertion_error_and_a_value_error(make, match):
    message = _refused(make, match)
    assert ": must be" in message or "env:" in message or "n_steps:" in message  # lit_sb3's line follows SB3's


def test_set_env_refuses_another_number_of_envs_as_sb3_does():
    model = PPO("MlpPolicy", "CartPole-v1", n_steps=32, batch_size=32, policy_kwargs=TINY)
    model.set_env(make_vec_env("CartPole-v1", n_envs=1))
    message = _refused(lambda: model.set_env(make_vec_env("CartPole-v1", n_envs=2)), r"\(2 != 1\)")
    assert "PPO.load(path, env)" in message and model.n_envs == 1
    unbuilt = PPO("MlpPolicy")  # the spec's form: no env yet, so any number of envs
    unbuilt.set_env(make_vec_env("CartPole-v1", n_envs=2))
    assert unbuilt.n_envs == 2


@pytest.mark.parametrize("policy", ["MlpPolicy", "CnnPolicy"])
@pytest.mark.parametrize("algorithm", [PPO, SAC])
def test_dict_observations_need_multi_input_policy(algorithm, policy):
    env = SimpleMultiObsEnv(random_start=False, discrete_actions=algorithm is PPO)
    with pytest.raises(ValueError, match=rf"You must use `MultiInputPolicy` when working with dict .*, not {policy}"):
        algorithm(policy, env)


def test_gsde_with_discrete_actions_is_refused_in_sb3s_words():
    with pytest.raises(ValueError, match=r"gSDE\) can only be used with continuous actions\. use_sde: must be False"):
        PPO("MlpPolicy", "CartPole-v1", use_sde=True)


def test_maskable_ppo_needs_a_policy_that_can_mask():
    with pytest.raises(ValueError, match=r"Policy must subclass MaskableActorCriticPolicy\. policy: MaskablePPO needs"):
        MaskablePPO(ActorCriticPolicy, InvalidActionEnvDiscrete(dim=4, n_invalid_actions=1))


@pytest.mark.parametrize("algorithm", [DQN, QRDQN])
def test_more_envs_than_the_target_update_interval_warns_as_sb3_does(algorithm):
    env = make_vec_env("CartPole-v1", n_envs=2)
    with pytest.warns(UserWarning, match=r"The number of environments used is greater than the target network"):
        algorithm("MlpPolicy", env, target_update_interval=1, buffer_size=100, policy_kwargs=TINY)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        algorithm("MlpPolicy", env, target_update_interval=2, buffer_size=100, policy_kwargs=TINY)


def test_warnings_use_sb3s_words():
    with pytest.warns(UserWarning, match=r"there will be a truncated mini-batch of size 1"):
        PPO("MlpPolicy", "Pendulum-v1", n_steps=64, batch_size=63, policy_kwargs=TINY).learn(64)
    env = BitFlippingEnv(n_bits=4, continuous=True)
    with pytest.warns(UserWarning, match=r"`n_steps=3` is ignored because a custom `replay_buffer_class`"):
        SAC("MultiInputPolicy", env, n_steps=3, buffer_size=200, replay_buffer_class=DictReplayBuffer)
    model = SAC(
        "MlpPolicy",
        "Pendulum-v1",
        buffer_size=100,
        learning_starts=50,
        optimize_memory_usage=True,
        replay_buffer_kwargs={"handle_timeout_termination": False},
        policy_kwargs=TINY,
    )
    model.learn(8)
    with pytest.warns(UserWarning, match=r"The last trajectory in the replay buffer will be truncated"):
        model.learn(8)  # a new run resets the env


def test_a_file_that_is_no_zip_is_refused_in_sb3s_words(tmp_path):
    bad = tmp_path / "not_a_zip.zip"
    bad.write_text("this is not a zip file")
    with pytest.raises(ValueError, match=r"wasn't a zip-file\. load: .* is not a readable save\(\) zip"):
        PPO.load(bad)

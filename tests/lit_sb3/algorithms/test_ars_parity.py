"""ARS equals sb3-contrib's: the update from identical weights, deltas and returns, the candidates' returns on
identically seeded envs, and a whole seeded training run."""

from __future__ import annotations

import pytest
import sb3_contrib
import torch
from stable_baselines3.common.callbacks import CallbackList
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.utils import LinearSchedule
from torch.nn.utils import parameters_to_vector

from lit_sb3 import ARS

pytestmark = pytest.mark.parity

TOL = 1e-6
MLP = dict(policy_kwargs=dict(net_arch=[8]), zero_policy=False)


def _twins(env_id: str = "CartPole-v1", **kwargs):
    theirs = sb3_contrib.ARS("MlpPolicy", make_vec_env(env_id, seed=5), seed=5, device="cpu", **kwargs)
    theirs.set_logger(Logger(folder=None, output_formats=[]))
    ours = ARS("MlpPolicy", env=make_vec_env(env_id, seed=5), seed=5, **kwargs)
    ours.policy.load_state_dict(theirs.policy.state_dict())
    return ours, theirs


def _weights(model) -> torch.Tensor:
    return parameters_to_vector(model.policy.parameters()).detach()


def test_update_equals_sb3_contrib_with_identical_deltas_and_returns(monkeypatch):
    """Both evaluate candidates with the same made-up objective; seed-identical deltas; n_top < n_delta."""
    ours, theirs = _twins(n_delta=6, n_top=3, learning_rate=0.03, delta_std=0.1, **MLP)
    target = torch.linspace(-1.0, 1.0, ours.n_params)

    def fake_returns(candidate_weights, callback, async_eval):
        return -((candidate_weights - target) ** 2).sum(dim=1)

    monkeypatch.setattr(ours, "evaluate_candidates", fake_returns)
    monkeypatch.setattr(theirs, "evaluate_candidates", fake_returns)
    logged = {}
    monkeypatch.setattr(ours.sb3_logger, "record", lambda key, value, exclude=None: logged.__setitem__(key, value))
    for _ in range(3):
        torch.manual_seed(11)
        theirs._do_one_update(CallbackList([]), None)
        torch.manual_seed(11)
        assert ours._do_one_update(None, None)
        torch.testing.assert_close(_weights(ours), theirs.weights, atol=TOL, rtol=0)
    expected = theirs.logger.name_to_value
    for key in ("train/step_size", "rollout/return_std", "train/delta_std", "train/learning_rate"):
        assert logged[key] == pytest.approx(expected[key], abs=TOL), key
    assert ours._n_updates == theirs._n_updates == 3


@pytest.mark.parametrize("alive_bonus_offset", [0.0, -1.0])
def test_candidate_returns_equal_sb3_contrib_on_seeded_envs(alive_bonus_offset):
    ours, theirs = _twins(n_delta=3, n_eval_episodes=2, alive_bonus_offset=alive_bonus_offset, **MLP)
    torch.manual_seed(0)
    candidates = torch.randn(6, ours.n_params) * 2.0
    _, callback = theirs._setup_learn(10_000, None)  # resets their env once after seeding: so does ours
    ours.get_env().reset()
    with torch.no_grad():
        expected = theirs.evaluate_candidates(candidates, callback, None)
        got = ours.evaluate_candidates(candidates, None, None)
    torch.testing.assert_close(got, expected, atol=TOL, rtol=0)
    assert ours.num_timesteps == theirs.num_timesteps > 0
    assert [ep["r"] for ep in ours.ep_info_buffer] == [ep["r"] for ep in theirs.ep_info_buffer]
    if alive_bonus_offset == -1.0:  # CartPole pays 1 per step: the offset cancels it in the candidates' returns only
        assert torch.all(got == 0) and all(ep["r"] > 0 for ep in ours.ep_info_buffer)
    else:
        assert len(set(got.tolist())) > 2  # candidates that behave differently


def test_seeded_training_run_equals_sb3_contrib():
    """Same seed, same schedules: the same env steps, iterations and final weights as sb3-contrib's learn()."""
    kwargs = dict(n_delta=4, n_top=2, delta_std=LinearSchedule(0.1, 0.02, 1.0), **MLP)
    theirs = sb3_contrib.ARS("MlpPolicy", "CartPole-v1", seed=3, device="cpu", **kwargs)
    theirs.learn(5000)
    ours = ARS("MlpPolicy", env="CartPole-v1", seed=3, **kwargs)
    ours.learn(5000)
    assert ours.num_timesteps == theirs.num_timesteps
    assert ours._n_updates == theirs._n_updates
    torch.testing.assert_close(_weights(ours), _weights(theirs), atol=TOL, rtol=0)

"""Loss functions on hand-computed values; the rollout loop's rewards and the GAE returns computed from them."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env

from lit_sb3 import PPO
from lit_sb3.algorithms.a2c.a2c import a2c_loss
from lit_sb3.common import losses
from lit_sb3.common.ppo_update import ppo_loss

t = torch.tensor


def test_normalize_advantages_uses_sample_std():
    out = losses.normalize_advantages(t([1.0, 2.0, 3.0]))
    # mean 2, sample std 1
    assert torch.allclose(out, t([-1.0, 0.0, 1.0]), atol=1e-6)
    assert torch.equal(losses.normalize_advantages(t([5.0])), t([5.0]))


def test_clipped_surrogate_loss_by_hand():
    adv = t([1.0, -1.0, 2.0])
    old = t([0.0, 0.0, 0.0])
    new = torch.log(t([1.5, 0.5, 1.1]))  # ratios 1.5, 0.5, 1.1 ; clip 0.2 -> 1.2, 0.8, 1.1
    loss, clip_fraction = losses.clipped_surrogate_loss(adv, new, old, 0.2)
    # min(r*A, clip(r)*A): 1.2, -0.8, 2.2  -> mean 0.8667 -> loss -0.8667
    assert loss.item() == pytest.approx(-(1.2 - 0.8 + 2.2) / 3, abs=1e-6)
    assert clip_fraction.item() == pytest.approx(2 / 3)


def test_value_loss_with_and_without_clipping():
    values, returns, old = t([1.0, 3.0]), t([2.0, 2.0]), t([0.0, 2.5])
    assert losses.value_loss(values, returns).item() == pytest.approx((1 + 1) / 2)
    # clip 0.5 around old: 0.5, 3.0 -> errors 1.5, 1.0
    assert losses.value_loss(values, returns, old, 0.5).item() == pytest.approx((1.5**2 + 1.0) / 2)


def test_entropy_loss_and_kl():
    assert losses.entropy_loss(t([0.5, 1.5]), t([0.0])).item() == pytest.approx(-1.0)
    assert losses.entropy_loss(None, t([-1.0, -3.0])).item() == pytest.approx(-2.0)
    log_new, log_old = torch.log(t([2.0])), t([0.0])
    assert losses.approx_kl(log_new, log_old).item() == pytest.approx((2 - 1) - math.log(2))
    assert losses.policy_gradient_loss(t([1.0, -2.0]), t([-1.0, -0.5])).item() == pytest.approx(-(-1.0 + 1.0) / 2)


def _batch(**kw):
    return SimpleNamespace(**{k: t(v) for k, v in kw.items()})


def test_ppo_total_loss_combines_terms():
    batch = _batch(advantages=[1.0, -1.0], old_log_prob=[0.0, 0.0], returns=[1.0, 0.0], old_values=[0.0, 0.0])
    log_prob = t([0.0, 0.0])
    loss, terms = ppo_loss(
        t([0.0, 0.0]),
        log_prob,
        t([1.0, 1.0]),
        batch,
        clip_range=0.2,
        clip_range_vf=None,
        normalize_advantage=False,
        ent_coef=0.1,
        vf_coef=0.5,
    )
    # pg: -(1 - 1)/2 = 0 ; value: (1 + 0)/2 = 0.5 ; entropy loss -1
    assert terms["policy_gradient_loss"].item() == pytest.approx(0.0)
    assert terms["value_loss"].item() == pytest.approx(0.5)
    assert loss.item() == pytest.approx(0.0 + 0.1 * -1.0 + 0.5 * 0.5)
    assert terms["approx_kl"].item() == pytest.approx(0.0)


def test_a2c_total_loss_combines_terms():
    batch = _batch(advantages=[2.0, 0.0], returns=[1.0, 1.0])
    loss, terms = a2c_loss(
        t([0.0, 2.0]), t([-1.0, -2.0]), None, batch, normalize_advantage=False, ent_coef=0.5, vf_coef=0.25
    )
    assert terms["policy_loss"].item() == pytest.approx(1.0)  # -(2 * -1 + 0)/2
    assert terms["entropy_loss"].item() == pytest.approx(-1.5)  # mean log prob
    assert loss.item() == pytest.approx(1.0 + 0.5 * -1.5 + 0.25 * 1.0)


class RolloutRecorder(BaseCallback):
    """Records, while our loop collects, the raw rewards and V(terminal observation) of time-limit truncations, and
    at the rollout's end V(last observation) and a copy of the buffer the update will read."""

    def __init__(self) -> None:
        super().__init__()
        self.raw_rewards: list[float] = []
        self.truncation_values: list[float] = []

    def _on_step(self) -> bool:
        info = self.locals["infos"][0]
        self.raw_rewards.append(float(self.locals["rewards"][0]))
        value = 0.0
        if info.get("TimeLimit.truncated") and info.get("terminal_observation") is not None:
            with torch.no_grad():
                value = self.model.policy.predict_values(t(info["terminal_observation"][None])).item()
        self.truncation_values.append(value)
        return True

    def _on_rollout_end(self) -> None:
        buffer = self.locals["rollout_buffer"]
        self.buffer = {
            k: getattr(buffer, k)[:, 0].copy() for k in ("rewards", "values", "episode_starts", "advantages", "returns")
        }
        with torch.no_grad():  # computed here, not read from the loop: the value it should bootstrap from
            self.last_value = self.model.policy.predict_values(t(self.locals["new_obs"])).item()
        self.last_done = float(self.locals["dones"][0])


def test_rollout_bootstraps_time_limit_truncations_and_gae_reads_them():
    """Our rollout loop adds gamma * V(terminal observation) to the reward where a time limit cut the episode, and the
    advantages the update reads are the GAE(lambda) recursion over exactly those rewards, values and episode starts."""
    gamma, lam, n_steps = 0.9, 0.8, 8
    env = make_vec_env("CartPole-v1", n_envs=1, seed=0, env_kwargs={"max_episode_steps": 3})  # truncated every 3
    model = PPO(
        "MlpPolicy",
        env=env,
        n_steps=n_steps,
        batch_size=n_steps,
        n_epochs=1,
        gamma=gamma,
        gae_lambda=lam,
        policy_kwargs={"net_arch": [8]},
        seed=0,
    )
    recorder = RolloutRecorder()
    model.learn(n_steps, callback=recorder)
    rollout = recorder.buffer
    bootstrap = gamma * np.array(recorder.truncation_values)
    assert np.count_nonzero(bootstrap) == 2  # steps 3 and 6
    np.testing.assert_allclose(rollout["rewards"], np.array(recorder.raw_rewards) + bootstrap, rtol=1e-6)
    advantages, next_advantage = np.zeros(n_steps), 0.0
    for step in reversed(range(n_steps)):
        if step == n_steps - 1:
            not_done, next_value = 1.0 - recorder.last_done, recorder.last_value
        else:
            not_done, next_value = 1.0 - rollout["episode_starts"][step + 1], rollout["values"][step + 1]
        delta = rollout["rewards"][step] + gamma * next_value * not_done - rollout["values"][step]
        next_advantage = advantages[step] = delta + gamma * lam * not_done * next_advantage
    np.testing.assert_allclose(rollout["advantages"], advantages, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rollout["returns"], advantages + rollout["values"], rtol=1e-5, atol=1e-6)


def test_truncation_bootstrap_rounds_like_sb3():
    """gamma * V(terminal observation) is formed in the value's float32, as SB3 forms it, before it joins the float32
    reward: the product taken in float64 (gamma * V.item()) rounds to another reward in about one truncation in ten,
    which is enough for a long whole run to leave SB3's (MaskablePPO's env truncates every 100 steps)."""
    n = 64  # one truncated episode per env: distinct terminal observations, distinct values
    env = make_vec_env("CartPole-v1", n_envs=1, seed=0)
    model = PPO("MlpPolicy", env=env, n_steps=8, batch_size=8, gamma=0.99, policy_kwargs={"net_arch": [8]}, seed=0)
    terminal_obs = np.random.default_rng(0).normal(size=(n, 4)).astype(np.float32)
    raw = np.random.default_rng(1).choice([0.0, 1.0], size=n).astype(np.float32)
    infos = [{"TimeLimit.truncated": True, "terminal_observation": obs} for obs in terminal_obs]
    rewards = raw.copy()
    model._bootstrap_truncations(rewards, np.ones(n, dtype=bool), infos)
    with torch.no_grad():  # one observation at a time, as the loop values them (a batched matmul rounds otherwise)
        values = torch.cat([model.policy.predict_values(t(obs[None]))[0] for obs in terminal_obs])
    expected = raw + (0.99 * values).numpy()  # float32 product, float32 sum
    assert rewards.dtype == np.float32
    assert np.array_equal(rewards, expected), np.flatnonzero(rewards != expected)

"""Same weights, same replay batch, same RNG: our updates equal SB3's (losses, gradients, new weights) within 1e-6."""

from __future__ import annotations

import pytest
import torch

import lit_sb3
from tests.lit_sb3.helpers import (
    TOL,
    assert_logged_means,
    assert_same,
    offpolicy_pair,
    our_mean,
    run_both,
    shared_extractor_kwargs,
)

pytestmark = pytest.mark.parity


def test_sac_update_matches_sb3():
    ref, ours = offpolicy_pair("SAC", "Pendulum-v1", policy_kwargs={"net_arch": [32, 32]})
    ours.log_ent_coef.data.copy_(ref.log_ent_coef.data)
    ref_opts = {"actor": ref.actor.optimizer, "critic": ref.critic.optimizer, "ent": ref.ent_coef_optimizer}
    our_opts = {
        "actor": ours.policy.actor.optimizer,
        "critic": ours.policy.critic.optimizer,
        "ent": ours.ent_coef_optimizer,
    }
    ref_grads, our_grads = run_both(ref, ours, ref_opts, our_opts, gradient_steps=2)
    assert_same(ref_grads, our_grads, ref, ours)
    torch.testing.assert_close(ours.log_ent_coef.data, ref.log_ent_coef.data, atol=TOL, rtol=0)
    assert_logged_means(ref, ours, ("actor_loss", "critic_loss", "ent_coef", "ent_coef_loss"))


def test_sac_fixed_ent_coef_matches_sb3():
    ref, ours = offpolicy_pair("SAC", "Pendulum-v1", ent_coef=0.1, policy_kwargs={"net_arch": [16]})
    ref_opts = {"actor": ref.actor.optimizer, "critic": ref.critic.optimizer}
    our_opts = {"actor": ours.policy.actor.optimizer, "critic": ours.policy.critic.optimizer}
    ref_grads, our_grads = run_both(ref, ours, ref_opts, our_opts, gradient_steps=1)
    assert_same(ref_grads, our_grads, ref, ours)


@pytest.mark.parametrize("name", ["TD3", "DDPG"])
def test_td3_and_ddpg_updates_match_sb3(name):
    ref, ours = offpolicy_pair(name, "Pendulum-v1", policy_kwargs={"net_arch": [32, 32]})
    ref_opts = {"actor": ref.actor.optimizer, "critic": ref.critic.optimizer}
    our_opts = {"actor": ours.policy.actor.optimizer, "critic": ours.policy.critic.optimizer}
    # two steps: with TD3's policy_delay=2 the second one also updates the actor and the targets
    ref_grads, our_grads = run_both(ref, ours, ref_opts, our_opts, gradient_steps=2)
    assert_same(ref_grads, our_grads, ref, ours)
    assert ours._n_updates == ref._n_updates == 2
    logged = ref.logger.name_to_value
    # SB3 logs the last train() call's means; ours accumulate over the same two steps here
    assert our_mean(ours, "critic_loss") == pytest.approx(logged["train/critic_loss"], abs=TOL)
    assert our_mean(ours, "actor_loss") == pytest.approx(logged["train/actor_loss"], abs=TOL)


@pytest.mark.parametrize("name", ["TD3", "DDPG", "SAC"])
def test_updates_with_a_shared_features_extractor_match_sb3(name):
    # SB3 trains a features extractor shared by actor and critic through the actor's loss only (the critic reads its
    # features without gradients); TD3 and DDPG also list it in the critic's optimizer, which must not freeze it
    ref, ours = offpolicy_pair(name, "Pendulum-v1", policy_kwargs=shared_extractor_kwargs(net_arch=[16]))
    extractor = ours.policy.actor.features_extractor
    assert extractor is ours.policy.critic.features_extractor
    before = [p.detach().clone() for p in extractor.parameters()]
    ref_opts = {"actor": ref.actor.optimizer, "critic": ref.critic.optimizer}
    our_opts = {"actor": ours.policy.actor.optimizer, "critic": ours.policy.critic.optimizer}
    if name == "SAC":
        ours.log_ent_coef.data.copy_(ref.log_ent_coef.data)
        ref_opts["ent"], our_opts["ent"] = ref.ent_coef_optimizer, ours.ent_coef_optimizer
    ref_grads, our_grads = run_both(ref, ours, ref_opts, our_opts, gradient_steps=2)
    assert_same(ref_grads, our_grads, ref, ours)  # the extractor's weights are in the compared state_dict
    assert all(not torch.equal(b, p) for b, p in zip(before, extractor.parameters()))


def test_dqn_update_matches_sb3():
    ref, ours = offpolicy_pair("DQN", "CartPole-v1", policy_kwargs={"net_arch": [32, 32]}, max_grad_norm=0.05)
    ref_opts = {"q": ref.policy.optimizer}
    our_opts = {"q": ours.policy.optimizer}
    ref_grads, our_grads = run_both(ref, ours, ref_opts, our_opts, gradient_steps=3)
    assert_same(ref_grads, our_grads, ref, ours)  # max_grad_norm=0.05 makes the clipping bite
    assert our_mean(ours, "loss") == pytest.approx(ref.logger.name_to_value["train/loss"], abs=TOL)
    assert ours._n_updates == ref._n_updates == 3


def test_dqn_target_update_and_epsilon_follow_env_steps_like_sb3():
    ours = lit_sb3.DQN(
        "MlpPolicy",
        env="CartPole-v1",
        target_update_interval=10,
        tau=1.0,
        learning_starts=1000,
        exploration_fraction=0.5,
        train_freq=1,
        seed=0,
        device="cpu",
    )
    with torch.no_grad():
        ours.policy.q_net_target.q_net[0].weight.add_(1.0)  # make online and target nets differ
    ours.learn(9)
    online, target = ours.policy.q_net.state_dict(), ours.policy.q_net_target.state_dict()
    assert not torch.equal(online["q_net.0.weight"], target["q_net.0.weight"])
    ours.learn(1, reset_num_timesteps=False)  # the 10th env step refreshes the target
    online, target = ours.policy.q_net.state_dict(), ours.policy.q_net_target.state_dict()
    assert all(torch.equal(online[k], target[k]) for k in online)
    # epsilon: linear from 1.0 over half of the budget of the last learn() call (10 steps) -> final value
    assert ours.exploration_rate == pytest.approx(0.05)

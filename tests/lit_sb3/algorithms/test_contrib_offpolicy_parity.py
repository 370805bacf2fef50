"""Same weights, same replay batch, same RNG: our TQC, CrossQ and QR-DQN updates equal sb3-contrib's within 1e-6."""

from __future__ import annotations

import pytest
import sb3_contrib
import torch

import lit_sb3
from tests.lit_sb3.helpers import (
    TOL,
    assert_logged_means,
    assert_same,
    offpolicy_pair,
    run_both,
    shared_extractor_kwargs,
)

pytestmark = pytest.mark.parity


def _pair(name: str, env_id: str, **kwargs):
    return offpolicy_pair(name, env_id, reference=sb3_contrib, **kwargs)


def _actor_critic_optimizers(ref, ours, learned_ent_coef: bool = True):
    ref_opts = {"actor": ref.actor.optimizer, "critic": ref.critic.optimizer}
    our_opts = {"actor": ours.policy.actor.optimizer, "critic": ours.policy.critic.optimizer}
    if learned_ent_coef:
        ours.log_ent_coef.data.copy_(ref.log_ent_coef.data)
        ref_opts["ent"], our_opts["ent"] = ref.ent_coef_optimizer, ours.ent_coef_optimizer
    return ref_opts, our_opts


@pytest.mark.parametrize("drop", [0, 2])
def test_tqc_update_matches_sb3_contrib(drop):
    ref, ours = _pair(
        "TQC",
        "Pendulum-v1",
        top_quantiles_to_drop_per_net=drop,
        policy_kwargs={"net_arch": [32, 32], "n_quantiles": 5, "n_critics": 3},
    )
    ref_opts, our_opts = _actor_critic_optimizers(ref, ours)
    ref_grads, our_grads = run_both(ref, ours, ref_opts, our_opts, gradient_steps=2)
    assert_same(ref_grads, our_grads, ref, ours)
    torch.testing.assert_close(ours.log_ent_coef.data, ref.log_ent_coef.data, atol=TOL, rtol=0)
    assert_logged_means(ref, ours, ("actor_loss", "critic_loss", "ent_coef", "ent_coef_loss"))
    assert ours._n_updates == ref._n_updates == 2


def test_tqc_fixed_ent_coef_and_target_interval_match_sb3_contrib():
    ref, ours = _pair(
        "TQC", "Pendulum-v1", ent_coef=0.2, target_update_interval=2, policy_kwargs={"net_arch": [16], "n_quantiles": 4}
    )
    ref_opts, our_opts = _actor_critic_optimizers(ref, ours, learned_ent_coef=False)
    ref_grads, our_grads = run_both(ref, ours, ref_opts, our_opts, gradient_steps=3)
    assert_same(ref_grads, our_grads, ref, ours)  # the target critics are in the policy's state_dict too


@pytest.mark.parametrize("policy_delay", [1, 3])
def test_crossq_update_matches_sb3_contrib(policy_delay):
    # Batch-renormalization statistics (running means, variances, step counters) are in the compared state_dict.
    # Small nets and few steps on purpose: the bias of a Linear right before a normalization layer has a true gradient
    # of 0, so its fp-noise gradient (~1e-9, ordering-dependent) is scaled up to +-lr by Adam after a few steps.
    ref, ours = _pair(
        "CrossQ", "Pendulum-v1", policy_delay=policy_delay, policy_kwargs={"net_arch": {"pi": [32, 32], "qf": [64, 64]}}
    )
    ref_opts, our_opts = _actor_critic_optimizers(ref, ours)
    ref_grads, our_grads = run_both(ref, ours, ref_opts, our_opts, gradient_steps=4)
    assert_same(ref_grads, our_grads, ref, ours)
    assert len(our_grads["actor"]) == 4 // policy_delay  # delayed actor and temperature updates
    torch.testing.assert_close(ours.log_ent_coef.data, ref.log_ent_coef.data, atol=TOL, rtol=0)
    assert_logged_means(ref, ours, ("actor_loss", "critic_loss", "ent_coef", "ent_coef_loss"))
    assert ours._n_updates == ref._n_updates == 4


@pytest.mark.parametrize(
    ("name", "kwargs", "policy_kwargs"),
    [("TQC", {}, {"net_arch": [16], "n_quantiles": 5}), ("CrossQ", {"policy_delay": 1}, {"net_arch": [16]})],
)
def test_updates_with_a_shared_features_extractor_match_sb3_contrib(name, kwargs, policy_kwargs):
    # the critic reads the shared extractor's features without gradients; the actor's loss trains it
    ref, ours = _pair(name, "Pendulum-v1", **kwargs, policy_kwargs=shared_extractor_kwargs(**policy_kwargs))
    assert ours.policy.actor.features_extractor is ours.policy.critic.features_extractor
    ref_opts, our_opts = _actor_critic_optimizers(ref, ours)
    ref_grads, our_grads = run_both(ref, ours, ref_opts, our_opts, gradient_steps=2)
    assert_same(ref_grads, our_grads, ref, ours)


def test_crossq_keeps_sb3_contrib_adam_betas_and_fused():
    ours = lit_sb3.CrossQ("MlpPolicy", env="Pendulum-v1", policy_kwargs={"net_arch": [8]})
    group = ours.policy.critic.optimizer.param_groups[0]
    assert group["betas"] == (0.5, 0.999) and group["fused"]
    custom = lit_sb3.CrossQ("MlpPolicy", env="Pendulum-v1", policy_kwargs={"net_arch": [8], "optimizer_kwargs": {}})
    assert custom.policy.critic.optimizer.param_groups[0]["betas"] == (0.9, 0.999)  # as sb3-contrib: {} means none


def test_qrdqn_update_matches_sb3_contrib():
    ref, ours = _pair(
        "QRDQN", "CartPole-v1", max_grad_norm=0.05, policy_kwargs={"net_arch": [32, 32], "n_quantiles": 10}
    )
    ref_grads, our_grads = run_both(
        ref, ours, {"q": ref.policy.optimizer}, {"q": ours.policy.optimizer}, gradient_steps=3
    )
    assert_same(ref_grads, our_grads, ref, ours)  # max_grad_norm=0.05 makes the clipping bite
    assert_logged_means(ref, ours, ("loss",))
    assert ours._n_updates == ref._n_updates == 3


def test_qrdqn_without_clipping_matches_sb3_contrib():
    ref, ours = _pair("QRDQN", "CartPole-v1", policy_kwargs={"net_arch": [16], "n_quantiles": 7})
    ref_grads, our_grads = run_both(
        ref, ours, {"q": ref.policy.optimizer}, {"q": ours.policy.optimizer}, gradient_steps=2
    )
    assert_same(ref_grads, our_grads, ref, ours)

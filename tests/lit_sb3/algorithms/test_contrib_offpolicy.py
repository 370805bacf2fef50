"""TQC, CrossQ, QRDQN API: exports, bad input, metrics, persistence (ours and sb3-contrib's), resume."""

from __future__ import annotations

import copy
import inspect

import numpy as np
import pytest
import sb3_contrib
import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from stable_baselines3.common.callbacks import BaseCallback

import lit_sb3
from lit_sb3 import QRDQN, TQC, CrossQ, RLEnvDataModule, RLTrainer
from lit_sb3.common.off_policy import OffPolicyAlgorithm

TINY = {"net_arch": [8]}


@pytest.mark.parametrize("cls", [TQC, CrossQ, QRDQN], ids=lambda c: c.__name__)
def test_exported_one_level_below_off_policy(cls):
    assert getattr(lit_sb3, cls.__name__) is cls and cls.__name__ in lit_sb3.__all__
    assert cls.__bases__ == (OffPolicyAlgorithm,)  # the spec's base, no family base in between
    assert "default_root_dir" in inspect.signature(cls.learn).parameters  # issue #16: every learn() takes it


def test_policy_modules_re_export_sb3_contrib():
    from lit_sb3.algorithms.crossq import MlpPolicy as CrossQMlp
    from lit_sb3.algorithms.qrdqn import CnnPolicy as QRCnn
    from lit_sb3.algorithms.tqc import MultiInputPolicy as TQCMulti

    assert CrossQMlp is sb3_contrib.crossq.MlpPolicy
    assert QRCnn is sb3_contrib.qrdqn.CnnPolicy and TQCMulti is sb3_contrib.tqc.MultiInputPolicy


# ---------------------------------------------------------------------- bad input, refused before training


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: QRDQN("MlpPolicy", env="Pendulum-v1"), r"env: QRDQN does not support the action space.*Discrete"),
        (lambda: TQC("MlpPolicy", env="CartPole-v1"), r"env: TQC does not support the action space.*supported: Box"),
        (lambda: CrossQ("MlpPolicy", env="CartPole-v1"), r"env: CrossQ does not support the action space.*Box"),
        (
            lambda: TQC("MlpPolicy", top_quantiles_to_drop_per_net=25),
            r"top_quantiles_to_drop_per_net: must be an int in \[0, 24\] \(n_quantiles=25 per critic\), got 25",
        ),
        (lambda: TQC("MlpPolicy", top_quantiles_to_drop_per_net=-1), r"top_quantiles_to_drop_per_net: .*got -1"),
        (
            lambda: TQC("MlpPolicy", top_quantiles_to_drop_per_net=5, policy_kwargs={"n_quantiles": 5}),
            r"top_quantiles_to_drop_per_net: must be an int in \[0, 4\]",
        ),
        (lambda: TQC("MlpPolicy", ent_coef="auto_0"), r"ent_coef: must be a float >= 0, 'auto'"),
        (lambda: TQC("MlpPolicy", target_update_interval=0), r"target_update_interval: must be >= 1"),
        (lambda: CrossQ("MlpPolicy", policy_delay=0), r"policy_delay: must be an int >= 1, got 0"),
        (lambda: CrossQ("MlpPolicy", target_entropy="low"), r"target_entropy: must be 'auto' or a float"),
        (lambda: CrossQ("CnnPolicy"), r"policy: unknown policy 'CnnPolicy' for CrossQ; valid choices: MlpPolicy"),
        (lambda: CrossQ("MlpPolicy", gradient_steps="2"), r"gradient_steps: must be an int"),
        (lambda: QRDQN("MlpPolicy", max_grad_norm=0), r"max_grad_norm: must be None or > 0, got 0"),
        (lambda: QRDQN("MlpPolicy", exploration_fraction=0), r"exploration_fraction: must be in \(0, 1\]"),
        (lambda: QRDQN("MlpPolicy", target_update_interval=0), r"target_update_interval: must be >= 1"),
    ],
)
def test_bad_input_fails_fast_with_one_line(make, match):
    with pytest.raises(ValueError, match=match) as info:
        make()
    assert "\n" not in str(info.value)


# ---------------------------------------------------------------------- training, metrics


@pytest.mark.parametrize(
    ("cls", "env_id", "kwargs", "keys"),
    [
        (
            TQC,
            "Pendulum-v1",
            {"policy_kwargs": {"net_arch": [8], "n_quantiles": 5}},
            ("actor_loss", "critic_loss", "ent_coef", "ent_coef_loss", "n_updates"),
        ),
        (
            CrossQ,
            "Pendulum-v1",
            {"policy_kwargs": TINY, "policy_delay": 2},
            ("actor_loss", "critic_loss", "ent_coef", "ent_coef_loss", "n_updates"),
        ),
        (
            QRDQN,
            "CartPole-v1",
            {"policy_kwargs": {"net_arch": [8], "n_quantiles": 5}},
            ("loss", "n_updates", "exploration_rate"),
        ),
    ],
    ids=["TQC", "CrossQ", "QRDQN"],
)
def test_learn_logs_sb3_contrib_metric_names(cls, env_id, kwargs, keys, capsys):
    model = cls("MlpPolicy", env=env_id, learning_starts=20, batch_size=8, seed=0, verbose=1, **kwargs)
    model.learn(400, log_every_n_steps=1)
    assert model.num_timesteps == 400 and model._n_updates > 0
    out = capsys.readouterr().out.replace("|    ", "| ")
    for key in (*keys, "train/", "rollout/", "ep_rew_mean", "time/", "episodes"):
        assert f"| {key}" in out, key


def test_crossq_counts_updates_and_delays_the_actor():
    model = CrossQ(
        "MlpPolicy",
        env="Pendulum-v1",
        learning_starts=10,
        batch_size=8,
        policy_delay=3,
        gradient_steps=2,
        train_freq=10,
        policy_kwargs=TINY,
        seed=0,
    )
    steps = {}
    original = model.policy.actor.optimizer.step

    def step(*args, **kwargs):
        steps["actor"] = steps.get("actor", 0) + 1
        return original(*args, **kwargs)

    model.policy.actor.optimizer.step = step
    model.learn(40)
    assert model._n_updates == 6 and steps["actor"] == 2  # 3 rounds of 2 critic updates; actor at updates 3 and 6


def test_qrdqn_predict_is_epsilon_greedy():
    model = QRDQN("MlpPolicy", env="CartPole-v1", policy_kwargs={"net_arch": [8], "n_quantiles": 5}, seed=0)
    obs = np.zeros((64, 4), dtype=np.float32)
    greedy = model.predict(obs, deterministic=True)[0]
    assert len(set(greedy.tolist())) == 1  # same observation, same greedy action
    model.exploration_rate = 1.0
    assert np.array_equal(model.predict(obs, deterministic=True)[0], greedy)  # deterministic ignores epsilon
    random_actions = np.concatenate([model.predict(obs)[0] for _ in range(4)])
    assert set(random_actions.tolist()) == {0, 1}
    assert model.predict(obs[0])[0].shape == ()


# ---------------------------------------------------------------------- persistence


@pytest.mark.parametrize(
    ("cls", "env_id", "kwargs"),
    [
        (TQC, "Pendulum-v1", {"policy_kwargs": {"net_arch": [8], "n_quantiles": 5}}),
        (CrossQ, "Pendulum-v1", {"policy_kwargs": TINY}),
        (QRDQN, "CartPole-v1", {"policy_kwargs": {"net_arch": [8], "n_quantiles": 5}}),
    ],
    ids=["TQC", "CrossQ", "QRDQN"],
)
def test_save_load_round_trip_and_sb3_contrib_interop(cls, env_id, kwargs, tmp_path):
    model = cls("MlpPolicy", env=env_id, learning_starts=10, batch_size=8, seed=0, **kwargs)
    model.learn(60)
    model.save(tmp_path / "ours.zip")
    obs = np.stack([model.observation_space.sample() for _ in range(5)])
    expected = model.predict(obs, deterministic=True)[0]
    loaded = cls.load(tmp_path / "ours.zip", device="cpu")
    assert np.allclose(loaded.predict(obs, deterministic=True)[0], expected)
    assert loaded.num_timesteps == 60
    for key, value in model.policy.state_dict().items():  # incl. CrossQ's batch-renorm statistics
        assert torch.equal(loaded.policy.state_dict()[key], value), key
    if cls is not QRDQN:
        assert torch.equal(loaded.log_ent_coef.data, model.log_ent_coef.data)
    # sb3-contrib loads our zip (no env needed) and we load its own
    ref = getattr(sb3_contrib, cls.__name__).load(tmp_path / "ours.zip", device="cpu")
    assert np.allclose(ref.predict(obs, deterministic=True)[0], expected)
    ref.save(tmp_path / "ref.zip")
    again = cls.load(tmp_path / "ref.zip", device="cpu", trusted=True)  # SB3 pickles its spaces
    assert np.allclose(again.predict(obs, deterministic=True)[0], expected)


@pytest.mark.filterwarnings(
    "ignore:.*no pre-optimization state was saved.*", "ignore:.*callbacks used to create the checkpoint.*"
)
@pytest.mark.parametrize(
    ("cls", "env_id", "kwargs"),
    [
        (CrossQ, "Pendulum-v1", {"policy_kwargs": TINY}),
        (
            QRDQN,
            "CartPole-v1",
            {
                "policy_kwargs": {"net_arch": [8], "n_quantiles": 5},
                "exploration_fraction": 0.5,
                "target_update_interval": 7,
            },
        ),
    ],
    ids=["CrossQ", "QRDQN"],
)
def test_checkpoint_resume(cls, env_id, kwargs, tmp_path):
    def make():
        return cls("MlpPolicy", learning_starts=10, batch_size=8, seed=0, **kwargs)

    model = make()
    ckpt = ModelCheckpoint(dirpath=tmp_path, save_last=True, every_n_train_steps=1)
    trainer = RLTrainer(
        max_steps=48, logger=False, enable_progress_bar=False, enable_checkpointing=True, callbacks=[ckpt]
    )
    trainer.fit(model, datamodule=RLEnvDataModule(train_env=env_id))
    path = tmp_path / "last.ckpt"
    captured = {}

    class Peek(BaseCallback):
        def _on_training_start(self):
            algo = self.model
            captured["steps"] = algo.num_timesteps
            captured["updates"] = algo._n_updates
            captured["state"] = {k: v.clone() for k, v in algo.policy.state_dict().items()}
            captured["optim"] = copy.deepcopy({n: o.state_dict() for n, o in algo._named_optimizers().items()})
            captured["extra"] = algo._extra_state()

        def _on_step(self):
            return True

    resumed = make()
    trainer = RLTrainer(max_steps=64, logger=False, enable_progress_bar=False, rl_callback=Peek())
    trainer.fit(resumed, datamodule=RLEnvDataModule(train_env=env_id), ckpt_path=str(path))
    assert captured["steps"] == 48 and captured["updates"] == model._n_updates > 0
    for key, value in model.policy.state_dict().items():  # BN statistics and the target network too
        assert torch.equal(captured["state"][key], value), key
    for name, optimizer in model._named_optimizers().items():
        saved = optimizer.state_dict()["state"][0]["step"]
        assert captured["optim"][name]["state"][0]["step"] == saved, name
    counters = [
        {k: v for k, v in state.items() if isinstance(v, (int, float))}  # QRDQN: n_calls, exploration rate
        for state in (captured["extra"], model._extra_state())
    ]
    assert counters[0] == counters[1]
    assert resumed.num_timesteps == 64

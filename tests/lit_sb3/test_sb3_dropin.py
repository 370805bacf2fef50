"""SB3 users' lines run unchanged on lit_sb3 (issue 26): call forms, SB3's keywords, object model, callbacks, checks.

SB3's behaviour is the expected value; where it helps, SB3 runs the same line side by side.
"""

from __future__ import annotations

import inspect
import warnings

import gymnasium as gym
import numpy as np
import pytest
import sb3_contrib
import stable_baselines3 as sb3
import torch
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.callbacks import BaseCallback, EvalCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.envs import SimpleMultiObsEnv
from stable_baselines3.common.logger import HumanOutputFormat, Logger, make_output_format
from stable_baselines3.common.save_util import load_from_zip_file, save_to_zip_file
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

import lit_sb3
from lit_sb3 import A2C, ARS, DQN, PPO, QRDQN, SAC, TD3, TQC, TRPO, MaskablePPO
from tests.lit_sb3.helpers import shared_extractor_kwargs

TINY = {"net_arch": [8]}  # never handed to SB3 itself, which writes into its policy_kwargs


# ---------------------------------------------------------------------- both call forms, one class


def test_sb3_positional_form_names_arguments_as_sb3_does():
    ours = PPO("MlpPolicy", "CartPole-v1", 1e-3, 64, 16, 2)
    theirs = sb3.PPO("MlpPolicy", "CartPole-v1", 1e-3, 64, 16, 2)
    for name in ("learning_rate", "n_steps", "batch_size", "n_epochs", "n_envs"):
        assert getattr(ours, name) == getattr(theirs, name), name
    assert ours.env is not None and ours.policy is not None


@pytest.mark.parametrize("package", [sb3, sb3_contrib])
def test_sb3_form_holds_with_sb3s_names_pointed_at_lit_sb3(package, monkeypatch):
    # running SB3's own tests or scripts on lit_sb3 replaces stable_baselines3.A2C (sb3_contrib.TRPO) by ours
    name = "A2C" if package is sb3 else "TRPO"
    ours = getattr(lit_sb3, name)
    monkeypatch.setattr(package, name, ours)
    model = ours("MlpPolicy", "CartPole-v1", 1e-3, 32, gamma=0.9, policy_kwargs=TINY)
    assert (model.learning_rate, model.n_steps, model.gamma) == (1e-3, 32, 0.9)


def test_sb3_positional_form_places_tensorboard_log_as_sb3_does(tmp_path):
    # SB3's ARS: (policy, env, n_delta, n_top, learning_rate, delta_std, zero_policy, alive_bonus_offset,
    # n_eval_episodes, policy_kwargs, stats_window_size, tensorboard_log, ...)
    args = ("LinearPolicy", "Pendulum-v1", 4, 2, 0.01, 0.05, True, 0.0, 1, None, 100, str(tmp_path))
    ours, theirs = ARS(*args), sb3_contrib.ARS(*args)
    for name in ("n_delta", "n_top", "learning_rate", "tensorboard_log"):
        assert getattr(ours, name) == getattr(theirs, name), name


def test_spec_form_keeps_its_meaning():
    model = PPO("MlpPolicy", 1e-3, 64, env="CartPole-v1")
    assert (model.learning_rate, model.n_steps) == (1e-3, 64) and model.env is not None
    schedule = PPO("MlpPolicy", lambda progress: 1e-3 * progress)  # a callable second is a schedule, as in the spec
    assert schedule.lr_schedule(0.5) == pytest.approx(5e-4) and schedule.env is None


def test_sb3_form_with_keywords():
    model = SAC("MlpPolicy", "Pendulum-v1", learning_rate=1e-3, policy_kwargs=TINY)
    assert model.learning_rate == 1e-3 and model.env.num_envs == 1


@pytest.mark.parametrize(
    "make",
    [
        lambda: PPO("MlpPolicy", "CartPole-v1", env="CartPole-v1"),
        lambda: PPO("MlpPolicy", "CartPole-v1", 1e-3, learning_rate=1e-4),
    ],
)
def test_a_call_mixing_both_forms_is_refused_in_one_line(make):
    with pytest.raises(TypeError) as info:
        make()
    message = str(info.value)
    assert "\n" not in message and "PPO(policy, env, learning_rate, ...)" in message and "spec's" in message


def test_signature_is_the_spec_one_plus_sb3s_keyword():
    params = inspect.signature(PPO).parameters
    assert list(params)[:3] == ["policy", "learning_rate", "n_steps"]
    assert params["tensorboard_log"].kind is inspect.Parameter.KEYWORD_ONLY


# ---------------------------------------------------------------------- learn: SB3's form and keywords


class _Count(BaseCallback):
    def __init__(self) -> None:
        super().__init__()
        self.steps = 0
        self.seen: tuple = ()

    def _on_step(self) -> bool:
        self.steps += 1
        self.seen = (type(self.model), self.model.logger, self.model.env)
        return True


def _dumps(model) -> list[int]:
    steps: list[int] = []
    dump = model.sb3_logger.dump
    model.sb3_logger.dump = lambda step=0: (steps.append(step), dump(step))
    return steps


def test_learn_takes_a_callback_second_and_log_interval_third():
    model = A2C("MlpPolicy", "CartPole-v1", n_steps=4, policy_kwargs=TINY)
    callback, dumps = _Count(), _dumps(model)
    model.learn(40, callback, 5)
    assert callback.steps == 40
    assert dumps == [20, 40]  # every 5 rollouts of 4 steps


def test_learn_log_interval_keyword_and_none():
    model = PPO("MlpPolicy", "CartPole-v1", n_steps=16, batch_size=16, n_epochs=1, policy_kwargs=TINY)
    dumps = _dumps(model)
    model.learn(64, log_interval=2)
    assert dumps == [32, 64]
    dumps.clear()
    model.learn(32, log_interval=None)  # SB3: no dumps at all
    assert dumps == []
    with pytest.raises(TypeError, match=r"log_interval .* log_every_n_steps"):
        model.learn(32, log_interval=1, log_every_n_steps=1)


def test_callbacks_see_the_model_itself():
    model = SAC("MlpPolicy", "Pendulum-v1", learning_starts=10, buffer_size=100, policy_kwargs=TINY)
    callback = _Count()
    model.learn(20, callback=callback)
    cls, logger, env = callback.seen
    assert cls is SAC and logger is model.logger and env is model.env
    assert callback.model is model


# ---------------------------------------------------------------------- tensorboard_log (SB3's run names)


def _scalar_tags(run_dir) -> set[str]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(str(run_dir))
    accumulator.Reload()
    return set(accumulator.Tags()["scalars"])


def test_tensorboard_log_writes_sb3s_runs(tmp_path):
    pytest.importorskip("tensorboard")
    kwargs = dict(n_steps=32, batch_size=32, n_epochs=1, seed=0)
    runs = {}
    for name, cls in (("lit", PPO), ("sb3", sb3.PPO)):
        root = tmp_path / name
        model = cls("MlpPolicy", "CartPole-v1", tensorboard_log=str(root), policy_kwargs=dict(TINY), **kwargs)
        model.learn(64)
        model.learn(32, reset_num_timesteps=False)  # continues PPO_1
        model.learn(32, tb_log_name="mine")
        model.learn(32)
        runs[name] = sorted(p.name for p in root.iterdir())
        assert all(f.name.startswith("events.out.tfevents.") for f in root.rglob("*") if f.is_file())
        assert _scalar_tags(root / "PPO_1") >= {"rollout/ep_rew_mean", "train/loss", "time/fps"}
    assert runs["lit"] == runs["sb3"] == ["PPO_1", "PPO_2", "mine_1"]
    tags = {name: _scalar_tags(tmp_path / name / "PPO_1") for name in runs}
    assert tags["lit"] == tags["sb3"]


def test_load_takes_tensorboard_log(tmp_path):
    pytest.importorskip("tensorboard")
    PPO("MlpPolicy", "CartPole-v1", policy_kwargs=TINY).save(tmp_path / "m")
    model = PPO.load(
        tmp_path / "m", env="CartPole-v1", tensorboard_log=str(tmp_path / "tb"), n_steps=32, batch_size=32, n_epochs=1
    )
    model.learn(32)
    assert (tmp_path / "tb" / "PPO_1").is_dir()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the fallback on a machine without CUDA")
def test_device_cuda_falls_back_to_the_cpu_as_in_sb3():
    model = PPO("MlpPolicy", "CartPole-v1", n_steps=32, batch_size=32, n_epochs=1, device="cuda", policy_kwargs=TINY)
    model.learn(32)
    assert model.device.type == sb3.PPO("MlpPolicy", "CartPole-v1", device="cuda").device.type == "cpu"


# ---------------------------------------------------------------------- SB3's object model


def test_env_is_sb3s_plain_attribute(tmp_path):
    model = PPO("MlpPolicy", "CartPole-v1", n_steps=32, batch_size=32, n_epochs=1, policy_kwargs=TINY)
    env = model.env
    assert model.get_env() is env and model.n_envs == 1
    model.learn(32)
    assert model.env is env  # still there after learn (the Zoo closes it)
    del model.env
    assert model.env is None
    other = make_vec_env("CartPole-v1", n_envs=1)
    model.set_env(other)
    assert model.env is other and model.n_envs == 1
    model.env = env
    assert model.get_env() is env
    model.save(tmp_path / "m")
    two = make_vec_env("CartPole-v1", n_envs=2)
    assert PPO.load(tmp_path / "m", env=two).env is two  # load takes another number of envs; set_env does not


def test_buffers_exist_once_there_is_an_env_as_in_sb3():
    for cls, lit in ((sb3.SAC, SAC), (sb3.PPO, PPO)):
        theirs, ours = cls("MlpPolicy", "Pendulum-v1"), lit("MlpPolicy", "Pendulum-v1", policy_kwargs=TINY)
        for name in ("replay_buffer", "rollout_buffer"):
            if hasattr(theirs, name):
                assert type(getattr(ours, name)) is type(getattr(theirs, name))


def test_set_logger_receives_the_dumps(tmp_path):
    model = PPO("MlpPolicy", "CartPole-v1", n_steps=32, batch_size=32, n_epochs=1, policy_kwargs=TINY)
    logger = Logger(folder=str(tmp_path), output_formats=[make_output_format("csv", str(tmp_path))])
    model.set_logger(logger)
    model.learn(64, log_interval=1)
    assert model.logger is logger
    assert "train/value_loss" in (tmp_path / "progress.csv").read_text().splitlines()[0]


# ---------------------------------------------------------------------- checks never stricter than SB3


def test_values_sb3_accepts_for_training_train():
    SAC("MlpPolicy", "Pendulum-v1", buffer_size=50, batch_size=64, learning_starts=10, policy_kwargs=TINY).learn(40)
    model = SAC("MlpPolicy", "Pendulum-v1", gradient_steps=0, learning_starts=10, policy_kwargs=TINY)
    model.learn(40)
    theirs = sb3.SAC("MlpPolicy", "Pendulum-v1", gradient_steps=0, learning_starts=10, policy_kwargs=dict(TINY))
    theirs.learn(40)
    assert model._n_updates == theirs._n_updates == 0
    A2C("MlpPolicy", "CartPole-v1", n_steps=1, normalize_advantage=False, policy_kwargs=TINY).learn(4)


def test_ars_n_top_above_n_delta_warns_and_clips_as_sb3():
    with pytest.warns(UserWarning):
        theirs = sb3_contrib.ARS("LinearPolicy", "Pendulum-v1", n_delta=2, n_top=5)
    with pytest.warns(UserWarning, match="n_top"):
        ours = ARS("LinearPolicy", "Pendulum-v1", n_delta=2, n_top=5)
    assert ours.n_top == theirs.n_top == 2


def test_maskable_ppo_needs_masks_only_when_masking_is_used():
    model = MaskablePPO("MlpPolicy", "CartPole-v1", n_steps=32, batch_size=32, n_epochs=1, policy_kwargs=TINY)
    with pytest.raises(ValueError, match="use_masking"):
        model.learn(32)
    model.learn(32, use_masking=False)


def test_loading_for_acting_accepts_what_sb3_accepts(tmp_path):
    env = gym.make("Pendulum-v1")
    SAC("MlpPolicy", env, policy_kwargs=TINY).save(tmp_path / "sac")
    loaded = SAC.load(tmp_path / "sac", env=env, buffer_size=1)
    action, _ = loaded.predict(env.observation_space.sample(), deterministic=True)
    assert env.action_space.contains(action)
    ARS("LinearPolicy", env).save(tmp_path / "ars")
    ars = ARS.load(tmp_path / "ars", env=env, custom_objects={"learning_rate": 0.0})
    assert np.asarray(ars.predict(env.observation_space.sample())[0]).shape == env.action_space.shape
    with pytest.raises(ValueError, match="learning_rate: must be > 0 to train"):
        ars.learn(10)


def test_dqn_with_sb3s_keywords():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = DQN("MlpPolicy", "CartPole-v1", learning_starts=10, buffer_size=100, policy_kwargs=TINY)
    model.learn(20, log_interval=1, tb_log_name="dqn", progress_bar=False, reset_num_timesteps=True)
    assert model.num_timesteps == 20


# ---------------------------------------------------------------------- networks, train(), save, warnings


@pytest.mark.parametrize(("name", "env_id"), [("SAC", "Pendulum-v1"), ("TD3", "Pendulum-v1"), ("QRDQN", "CartPole-v1")])
def test_logger_holds_the_last_train_calls_values_after_learn_as_sb3s(name, env_id):
    kwargs = dict(learning_starts=0, buffer_size=100, batch_size=8, train_freq=4, gradient_steps=-1, seed=0)
    theirs = (getattr(sb3, name, None) or getattr(sb3_contrib, name))("MlpPolicy", env_id, **kwargs).learn(4)
    ours = getattr(lit_sb3, name)("MlpPolicy", env_id, **kwargs).learn(4)
    expected = {k: v for k, v in theirs.logger.name_to_value.items() if k.startswith("train/")}
    assert expected and ours.logger.name_to_value.keys() == theirs.logger.name_to_value.keys()
    for key, value in expected.items():  # fused Adam rounds differently from SB3's (see sb3_parity)
        assert ours.logger.name_to_value[key] == pytest.approx(value, rel=1e-3, abs=1e-4), key


@pytest.mark.parametrize(
    ("lit", "env_id", "names"),
    [
        (DQN, "CartPole-v1", ("q_net", "q_net_target")),
        (QRDQN, "CartPole-v1", ("quantile_net", "quantile_net_target")),
        (SAC, "Pendulum-v1", ("actor", "critic", "critic_target")),
        (TD3, "Pendulum-v1", ("actor", "actor_target", "critic", "critic_target")),
        (TQC, "Pendulum-v1", ("actor", "critic", "critic_target")),
    ],
)
def test_sb3s_names_of_the_networks(lit, env_id, names):
    model = lit("MlpPolicy", env_id, buffer_size=100)
    theirs = (getattr(sb3, lit.__name__, None) or getattr(sb3_contrib, lit.__name__))(
        "MlpPolicy", env_id, buffer_size=100
    )
    for name in names:
        assert getattr(model, name) is getattr(model.policy, name)
        assert type(getattr(model, name)) is type(getattr(theirs, name))
    assert getattr(lit("MlpPolicy"), names[0]) is None  # no networks before there is an env


def test_off_policy_train_is_sb3s_and_torchs():
    model = SAC("MlpPolicy", "Pendulum-v1", learning_starts=10, buffer_size=100, policy_kwargs=TINY)
    model.learn(20)
    updates = model._n_updates
    model.train(gradient_steps=3, batch_size=8)  # outside a fit, as the Zoo's ParallelTrainCallback calls it
    assert model._n_updates == updates + 3
    model.train(False)
    assert not model.training and not model.policy.training
    model.train()
    assert model.training


def test_off_policy_loop_updates_through_train_as_sb3():
    model = SAC("MlpPolicy", "Pendulum-v1", learning_starts=10, buffer_size=100, policy_kwargs=TINY)
    model.train = lambda *args, **kwargs: None  # what the Zoo's ParallelTrainCallback does to the collecting model
    model.learn(30)
    assert model._n_updates == 0


def test_save_include_overrides_exclude_as_sb3(tmp_path):
    model = PPO("MlpPolicy", "CartPole-v1", n_steps=32, batch_size=32, n_epochs=1, policy_kwargs=TINY)
    model.learn(32)
    model.save(tmp_path / "m", exclude=["_last_obs", "gamma"], include=["_last_obs"])
    data = load_from_zip_file(tmp_path / "m.zip", load_data=True)[0]
    assert "_last_obs" in data and "gamma" not in data


def test_dqn_warns_when_envs_outnumber_target_update_interval_as_sb3():
    env = make_vec_env("CartPole-v1", n_envs=4)
    with pytest.warns(UserWarning, match="greater than the target network"):
        sb3.DQN("MlpPolicy", env, target_update_interval=2)
    with pytest.warns(UserWarning, match=r"greater than the target network update interval \(4 > 2\)"):
        DQN("MlpPolicy", env, target_update_interval=2, learning_starts=10, policy_kwargs=TINY).learn(8)


def test_n_steps_with_a_custom_replay_buffer_warns_as_sb3():
    with pytest.warns(UserWarning, match="n_steps"):
        SAC("MlpPolicy", "Pendulum-v1", n_steps=3, replay_buffer_class=ReplayBuffer, policy_kwargs=TINY)


def test_optimize_memory_usage_truncation_warns_as_sb3():
    model = DQN(
        "MlpPolicy",
        "CartPole-v1",
        optimize_memory_usage=True,
        learning_starts=10,
        buffer_size=100,
        replay_buffer_kwargs={"handle_timeout_termination": False},
        policy_kwargs=TINY,
    )
    model.learn(20)
    with pytest.warns(UserWarning, match="optimize_memory_usage"):
        model.learn(20)


def test_logger_output_formats_and_dir_are_sb3s(tmp_path, monkeypatch):
    pytest.importorskip("tensorboard")
    monkeypatch.delenv("SB3_LOGDIR", raising=False)
    assert A2C("MlpPolicy", "CartPole-v1", policy_kwargs=TINY).learn(4).logger.output_formats == []
    model = A2C("MlpPolicy", "CartPole-v1", verbose=1, tensorboard_log=str(tmp_path), policy_kwargs=TINY).learn(4)
    formats = model.logger.output_formats  # TensorBoard is written through Lightning's logger, not listed
    assert [type(f) for f in formats] == [HumanOutputFormat] and str(tmp_path) in model.logger.dir
    assert list(tmp_path.glob("A2C_1/events.out.tfevents.*"))  # the dumps still reach the Lightning logger
    monkeypatch.setenv("SB3_LOGDIR", str(tmp_path / "new"))
    assert A2C("MlpPolicy", "CartPole-v1", policy_kwargs=TINY).learn(4).logger.dir == str(tmp_path / "new")


def test_device_is_settable_and_a_fixed_ent_coef_is_a_tensor_as_in_sb3():
    for lit in (SAC, TQC):
        model = lit("MlpPolicy", "Pendulum-v1", ent_coef=0.01, buffer_size=100, policy_kwargs=TINY)
        theirs = getattr(sb3, lit.__name__, None) or getattr(sb3_contrib, lit.__name__)
        expected = theirs("MlpPolicy", "Pendulum-v1", ent_coef=0.01, buffer_size=100).ent_coef_tensor
        assert torch.equal(model.ent_coef_tensor.cpu(), expected.cpu())
    model.device = "cuda"  # as SB3's get_device: the CPU when CUDA is not available
    expected_type = "cuda" if torch.cuda.is_available() else "cpu"
    assert model.device.type == next(model.policy.parameters()).device.type == expected_type
    model.device = torch.device("cpu")
    assert model.device == torch.device("cpu") and model.replay_buffer is not None


def test_setup_learn_prepares_a_loop_driven_by_hand_as_sb3s():
    ppo = PPO("MlpPolicy", "CartPole-v1", n_steps=16, batch_size=16, policy_kwargs=TINY)
    total, callback = ppo._setup_learn(total_timesteps=64)
    assert total == 64 and isinstance(callback, BaseCallback) and callback.model is ppo
    assert ppo.collect_rollouts(ppo.get_env(), callback, ppo.rollout_buffer, n_rollout_steps=ppo.n_steps)
    assert ppo.num_timesteps == 16 and ppo.rollout_buffer.full
    sac = SAC("MlpPolicy", "Pendulum-v1", buffer_size=100, policy_kwargs=TINY)
    total, callback = sac._setup_learn(total_timesteps=10)
    sac.collect_rollouts(sac.get_env(), callback, sac.train_freq, sac.replay_buffer, learning_starts=100)
    assert total == 10 and sac.num_timesteps == 1 and sac.replay_buffer.pos == 1
    assert sac._setup_learn(5, reset_num_timesteps=False)[0] == 6  # counting on, as SB3's


def _rewrite_zip(path, change) -> None:
    """Rewrite a save() zip's parameters with ``change(params)``, as an older SB3 version would have written them."""
    data, params, variables = load_from_zip_file(path)
    change(params)
    save_to_zip_file(path, data=data, params=params, pytorch_variables=variables)


def test_zips_of_sb3_before_1_7_and_2_4_load_with_sb3s_warnings(tmp_path):
    kwargs = shared_extractor_kwargs(net_arch=[8])
    PPO("MlpPolicy", "CartPole-v1", n_steps=32, batch_size=32, policy_kwargs=kwargs).save(tmp_path / "ppo.zip")

    def before_1_7(params):  # one features extractor, no pi_ / vf_ copies
        for key in [k for k in params["policy"] if k.startswith(("pi_features", "vf_features"))]:
            del params["policy"][key]

    _rewrite_zip(tmp_path / "ppo.zip", before_1_7)
    with pytest.warns(UserWarning, match=r"A2C/PPO model saved with SB3 < 1\.7\.0"):
        PPO.load(tmp_path / "ppo.zip", trusted=True)  # its policy_kwargs name a class of these tests
    DQN("MlpPolicy", "CartPole-v1", buffer_size=100, policy_kwargs=TINY).save(tmp_path / "dqn.zip")

    def before_2_4(params):  # the target network's parameters in the optimizer too
        group = params["policy.optimizer"]["param_groups"][0]
        group["params"] = group["params"] + [p + len(group["params"]) for p in group["params"]]

    _rewrite_zip(tmp_path / "dqn.zip", before_2_4)
    with pytest.warns(UserWarning, match=r"DQN model saved with SB3 < 2\.4\.0, we truncated the optimizer state"):
        loaded = DQN.load(tmp_path / "dqn.zip")
    assert len(loaded.policy.optimizer.state_dict()["param_groups"][0]["params"]) == 4
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded.save(tmp_path / "again.zip")
        DQN.load(tmp_path / "again.zip")  # saved again: loads without a warning


class _ZooLikeSchedule:
    """A schedule class outside lit_sb3's allow-list, as the RL Zoo's SimpleLinearSchedule is without lit_sb3.zoo."""

    def __init__(self, value: float) -> None:
        self.value = value

    def __call__(self, progress_remaining: float) -> float:
        return self.value * progress_remaining


def test_an_entry_the_caller_passes_to_load_is_not_read_from_the_zip(tmp_path):
    # the Zoo's `train -i` with its ALGOS pointed at lit_sb3: ALGOS["ppo"].load(path, env=..., **hyperparams)
    schedule = _ZooLikeSchedule(1e-3)
    model = PPO("MlpPolicy", "CartPole-v1", n_steps=32, batch_size=32, learning_rate=schedule, clip_range=schedule)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a class's instance is no code: no warning at every save
        model.save(tmp_path / "zoo")
    with pytest.raises(ValueError, match="learning_rate names"):
        PPO.load(tmp_path / "zoo")  # not given: refused in one line, as before
    loaded = PPO.load(tmp_path / "zoo", learning_rate=_ZooLikeSchedule(2e-3), clip_range=_ZooLikeSchedule(0.2))
    assert loaded.learning_rate(1.0) == 2e-3 and loaded.clip_range(1.0) == 0.2


# ---------------------------------------------------------------------- bugs


def test_trpo_trains_on_dict_observations():
    model = TRPO(
        "MultiInputPolicy", SimpleMultiObsEnv(random_start=False), n_steps=64, batch_size=32, policy_kwargs=TINY
    )
    model.learn(64)
    assert model._n_updates == 1
    TRPO(
        "MultiInputPolicy", SimpleMultiObsEnv(), n_steps=64, batch_size=32, sub_sampling_factor=2, policy_kwargs=TINY
    ).learn(64)


def _normalized(env_id: str, training: bool = True) -> VecNormalize:
    return VecNormalize(DummyVecEnv([lambda: gym.make(env_id)]), training=training)


@pytest.mark.parametrize("lit", [True, False], ids=["lit_sb3", "sb3"])
def test_eval_callback_syncs_vecnormalize_statistics(lit):
    train_env, eval_env = _normalized("Pendulum-v1"), _normalized("Pendulum-v1", training=False)
    callback = EvalCallback(eval_env, eval_freq=64, n_eval_episodes=1, verbose=0)
    cls = PPO if lit else sb3.PPO
    cls("MlpPolicy", train_env, n_steps=64, batch_size=64, n_epochs=1, policy_kwargs=dict(TINY)).learn(128, callback)
    assert callback.n_calls == 128
    np.testing.assert_array_equal(eval_env.obs_rms.mean, train_env.obs_rms.mean)
    assert train_env.obs_rms.count > 1


@pytest.mark.parametrize("name", sorted(lit_sb3._ALGORITHMS))
def test_sb3_positional_order_is_sb3s(name):
    # the rule in lit_sb3.common.sb3_calls (no SB3 signature is read at run time) against SB3's own signatures
    from lit_sb3.common.sb3_calls import sb3_constructor_order

    def positional(init) -> list[str]:
        return [p.name for p in inspect.signature(init).parameters.values() if p.kind == p.POSITIONAL_OR_KEYWORD][1:]

    package = lit_sb3._ALGORITHMS[name]
    root = sb3 if hasattr(sb3, name) else sb3_contrib
    theirs = getattr(__import__(f"{root.__name__}.{package}", fromlist=[name]), name)
    assert sb3_constructor_order(positional(getattr(lit_sb3, name).__init__)) == positional(theirs.__init__)


def test_hyperparameters_are_the_built_classs_arguments():
    # DDPG's __init__ calls TD3's (both take SB3's form); a subclass's own arguments are kept too
    from lit_sb3 import DDPG

    model = DDPG("MlpPolicy", "Pendulum-v1", 1e-3, 100, policy_kwargs=TINY)
    assert model.hparams["buffer_size"] == 100 and model.hparams["learning_rate"] == 1e-3

    class Variant(PPO):
        def __init__(self, policy: str, extra: int = 1, **kwargs) -> None:
            super().__init__(policy, **kwargs)
            self.extra = extra

    assert Variant("MlpPolicy", extra=3, n_steps=64).hparams["extra"] == 3
    assert "metaclass" not in repr(type(PPO)) and type(PPO) is type(torch.nn.Module)

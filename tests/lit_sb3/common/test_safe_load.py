"""One allow-list for everything lit_sb3 reads back (checkpoints, save() zips: their JSON mirror and pickled entries,
pickles): crafted files name code in every way pickle and the mirror allow, and nothing runs (a marker file is
never written); refusals are one line naming the entry and the setting that allows it; the user's allow() and the
process-wide trust switch (``LIT_SB3_TRUST=1`` / ``trusted()``) open exactly what they say; a value ``save`` cannot
keep safely (a lambda schedule) is warned about at save and never replaced by a default at load."""

from __future__ import annotations

import base64
import json
import pickle
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import stable_baselines3 as sb3

from lit_sb3 import PPO, RLEnvDataModule, RLTrainer, safe_load
from lit_sb3.common import allow_list
from lit_sb3.common.safe_load import CheckpointError

NET = {"net_arch": [8]}
OBS = np.zeros((1, 4), dtype=np.float32)


class HalfSchedule:
    """A user's own schedule class (as the RL Zoo's SimpleLinearSchedule): data plus a ``__call__``."""

    def __init__(self, start: float) -> None:
        self.start = start

    def __call__(self, progress_remaining: float) -> float:
        return self.start * (0.5 + 0.5 * progress_remaining)


@pytest.fixture(autouse=True)
def _fresh_allow_list(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts from the built-in allow-list, with the trust switch off."""
    monkeypatch.delenv(safe_load.TRUST_ENV, raising=False)
    monkeypatch.delenv(safe_load.ALLOW_ENV, raising=False)
    monkeypatch.setattr(allow_list._REGISTRY, "user", {})


def one_line(error: pytest.ExceptionInfo) -> str:
    message = str(error.value)
    assert "\n" not in message, message
    return message


# ------------------------------------------------------------------ crafted pickles


def _binunicode(value: str) -> bytes:
    raw = value.encode()
    return b"X" + len(raw).to_bytes(4, "little") + raw


def binary_global(module: str, name: str, arg: str) -> bytes:
    """Protocol 2 (what torch's checkpoint reader parses): GLOBAL then REDUCE."""
    return b"\x80\x02" + f"c{module}\n{name}\n".encode() + _binunicode(arg) + b"\x85R."


def _text(value: str) -> bytes:
    raw = value.encode()
    return b"\x8c" + bytes([len(raw)]) + raw  # SHORT_BINUNICODE


def touch(marker: Path) -> str:
    return f"touch {marker}"


def stack_global(module: str, name: str, arg: str) -> bytes:
    """Protocol 4: ``module``/``name`` by STACK_GLOBAL (pickle resolves a dotted ``name`` attribute by attribute)."""
    return b"\x80\x04" + _text(module) + _text(name) + b"\x93" + _text(arg) + b"\x85R."


def text_global(module: str, name: str, arg: str) -> bytes:
    """Protocol 0: GLOBAL then REDUCE."""
    return f"c{module}\n{name}\n(V{arg}\ntR.".encode()


def inst(module: str, name: str, arg: str) -> bytes:
    """Protocol 0: INST builds ``module.name(arg)`` in one opcode."""
    return f"(V{arg}\ni{module}\n{name}\n.".encode()


class Planted:
    """Pickling this writes what ``pickle.dumps`` makes of any object: a callable and its arguments (REDUCE)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple:
        return (open, (str(self.marker), "w"))


def obj(module: str, name: str, arg: str) -> bytes:
    """Protocol 1: OBJ calls the class found on the stack."""
    return b"(" + f"c{module}\n{name}\n".encode() + _text(arg) + b"o."


CRAFTED = {
    "STACK_GLOBAL dotted": lambda m: stack_global("gymnasium.spaces.box", "gym.os.system", touch(m)),
    "STACK_GLOBAL": lambda m: stack_global("os", "system", touch(m)),
    "GLOBAL": lambda m: text_global("os", "system", touch(m)),
    "GLOBAL re-export": lambda m: text_global("lit_sb3.common.sb3_bridge", "HumanOutputFormat", str(m)),
    "INST": lambda m: inst("os", "system", touch(m)),
    "OBJ": lambda m: obj("builtins", "open", str(m)),
    "REDUCE": lambda m: pickle.dumps(Planted(m), protocol=2),
}


@pytest.mark.parametrize("route", sorted(CRAFTED))
def test_crafted_pickles_run_nothing(route: str, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    with pytest.raises(safe_load.Refused) as error:
        safe_load.loads(CRAFTED[route](marker), "statistics")
    assert not marker.exists()
    message = one_line(error)
    assert message.startswith("statistics ") and "not on lit_sb3's allow-list" in message
    assert "LIT_SB3_TRUST=1" in message
    assert ("lit_sb3.safe_load.allow(" in message) == (route in ("GLOBAL re-export", "STACK_GLOBAL dotted"))


def test_allowed_data_unpickles() -> None:
    from gymnasium import spaces
    from stable_baselines3.common.utils import FloatSchedule

    box = spaces.Box(-1.0, 1.0, (3,), np.float32, seed=1)
    box.sample()  # pickles its generator too
    back = safe_load.loads(pickle.dumps({"space": box, "lr": FloatSchedule(1e-3), "a": np.arange(3)}), "x")
    assert back["space"] == box and back["lr"](0.5) == 1e-3 and np.array_equal(back["a"], np.arange(3))


# ------------------------------------------------------------------ allow() and the trust switch


def test_allow_takes_where_an_object_is_defined_never_a_re_export() -> None:
    with pytest.raises(safe_load.Refused) as error:
        safe_load.allow("lit_sb3.common.sb3_bridge:HumanOutputFormat")  # SB3's class, imported there
    assert "stable_baselines3.common.logger:HumanOutputFormat" in one_line(error)
    with pytest.raises(
        safe_load.Refused,
        match=r"^allow: 'lit_sb3.common.sb3_bridge.HumanOutputFormat': name it "
        r"as 'module:qualname'",
    ):
        safe_load.allow("lit_sb3.common.sb3_bridge.HumanOutputFormat")
    with pytest.raises(safe_load.Refused, match=r"^allow: .*<lambda>.* has no importable name"):
        safe_load.allow(lambda _: 1.0)
    safe_load.allow(HalfSchedule)
    assert safe_load.allowed_name(f"{__name__}:HalfSchedule") is HalfSchedule
    assert safe_load.allowed_name(f"{__name__}.HalfSchedule") is HalfSchedule
    assert safe_load.allowed_name("lit_sb3.common.sb3_bridge:HumanOutputFormat") is None
    assert safe_load.allowed_name("stable_baselines3.common:utils") is None  # never a prefix


def test_trust_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not safe_load.is_trusted()
    with safe_load.trusted():
        assert safe_load.is_trusted()
    assert not safe_load.is_trusted()
    monkeypatch.setenv(safe_load.TRUST_ENV, "1")
    assert safe_load.is_trusted()
    monkeypatch.setenv(safe_load.TRUST_ENV, "yes")
    with pytest.raises(safe_load.Refused, match=r"^LIT_SB3_TRUST=yes: use 1 \(trust every file read back\) or 0$"):
        safe_load.is_trusted()


# ------------------------------------------------------------------ zips


def rewrite_data(src: Path, dst: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    with zipfile.ZipFile(src) as archive, zipfile.ZipFile(dst, "w") as out:
        for item in archive.infolist():
            content = archive.read(item)
            if item.filename == "data":
                data = json.loads(content)
                edit(data)
                content = json.dumps(data).encode()
            out.writestr(item, content)
    return dst


@pytest.fixture
def ours(tmp_path: Path) -> Path:
    PPO("MlpPolicy", env="CartPole-v1", n_steps=32, batch_size=32, policy_kwargs=NET, seed=0).save(tmp_path / "o.zip")
    return tmp_path / "o.zip"


@pytest.mark.parametrize(
    "entry",
    [
        {"__enum__": "lit_sb3.common.sb3_bridge.HumanOutputFormat", "value": "VICTIM"},  # re-exported by lit_sb3
        {"__enum__": "stable_baselines3.common.logger.HumanOutputFormat", "value": "VICTIM"},
        {"__enum__": "stable_baselines3.common.utils.FloatSchedule", "value": "VICTIM"},  # allowed, not an enum
        {"__class__": "lit_sb3.common.sb3_bridge.HumanOutputFormat"},
        {"__object__": "lit_sb3.trainer.RLTrainer", "state": {"__dict__": {}}},  # lit_sb3's, but not data
        {"__class__": "numpy._core.multiarray._reconstruct"},  # allowed to unpickle arrays, not a class
    ],
)
def test_mirror_names_outside_the_allow_list_are_refused(entry: dict, ours: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    entry = json.loads(json.dumps(entry).replace("VICTIM", str(victim)))

    def plant(data: dict[str, Any]) -> None:
        data["lit_sb3_safe"]["policy_kwargs"] = entry

    with pytest.raises(ValueError) as error:
        PPO.load(rewrite_data(ours, tmp_path / "planted.zip", plant))
    assert victim.read_text() == "keep me"
    message = one_line(error)
    assert message.startswith("load: ") and "policy_kwargs" in message and "lit_sb3.safe_load.allow(" in message


@pytest.mark.parametrize("route", sorted(CRAFTED))
def test_pickled_zip_entries_run_nothing(route: str, ours: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"

    def plant(data: dict[str, Any]) -> None:
        del data["lit_sb3_safe"]["observation_space"]
        data["observation_space"] = {":type:": "x", ":serialized:": base64.b64encode(CRAFTED[route](marker)).decode()}

    with pytest.raises(ValueError) as error:
        PPO.load(rewrite_data(ours, tmp_path / "planted.zip", plant))
    assert not marker.exists()
    message = one_line(error)
    assert message.startswith(f"load: {tmp_path / 'planted.zip'}: observation_space ")
    assert "LIT_SB3_TRUST=1" in message and "trusted=True" in message


def test_sb3_written_zip_loads_through_the_allow_list(tmp_path: Path) -> None:
    """SB3 2.x pickles spaces, its policy class and FloatSchedules: all allow-listed data, no trust needed."""
    theirs = sb3.PPO("MlpPolicy", "CartPole-v1", n_steps=64, policy_kwargs=NET, seed=0)
    theirs.save(tmp_path / "sb3.zip")
    loaded = PPO.load(tmp_path / "sb3.zip")
    assert loaded.n_steps == 64 and loaded.clip_range(0.5) == 0.2
    assert np.array_equal(loaded.predict(OBS, deterministic=True)[0], theirs.predict(OBS, deterministic=True)[0])


def test_user_schedule_class_loads_once_allowed(tmp_path: Path) -> None:
    model = PPO(
        "MlpPolicy",
        env="CartPole-v1",
        n_steps=32,
        batch_size=32,
        learning_rate=HalfSchedule(1e-3),
        policy_kwargs=NET,
        seed=0,
    )
    model.save(tmp_path / "mine.zip")
    with pytest.raises(ValueError) as error:
        PPO.load(tmp_path / "mine.zip")
    message = one_line(error)
    assert f"learning_rate names {__name__}:HalfSchedule" in message
    assert f"lit_sb3.safe_load.allow('{__name__}:HalfSchedule')" in message and "LIT_SB3_TRUST=1" in message
    safe_load.allow(f"{__name__}:HalfSchedule")
    back = PPO.load(tmp_path / "mine.zip")
    assert isinstance(back.learning_rate, HalfSchedule) and back.learning_rate(0.0) == 5e-4


def test_allow_list_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """For tools a user cannot add a line to (the RL Zoo's scripts): LIT_SB3_ALLOW=module:qualname,..."""
    PPO(
        "MlpPolicy",
        env="CartPole-v1",
        n_steps=32,
        batch_size=32,
        learning_rate=HalfSchedule(1e-3),
        policy_kwargs=NET,
        seed=0,
    ).save(tmp_path / "mine.zip")
    monkeypatch.setenv(safe_load.ALLOW_ENV, f"{__name__}:HalfSchedule, gymnasium")
    assert PPO.load(tmp_path / "mine.zip").learning_rate(1.0) == 1e-3
    assert allow_list.allowed_module("gymnasium")
    monkeypatch.setenv(safe_load.ALLOW_ENV, "lit_sb3.common.sb3_bridge:HumanOutputFormat")
    with pytest.raises(
        safe_load.Refused,
        match=r"^LIT_SB3_ALLOW: allow: 'lit_sb3.common.sb3_bridge:"
        r"HumanOutputFormat' is not defined where it is named",
    ):
        PPO.load(tmp_path / "mine.zip")


def test_trust_switch_loads_pickled_code_where_trusted_cannot_be_passed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An SB3 zip with a lambda schedule (as the rl-trained-agents are): code, so only on the user's word."""
    sb3.PPO("MlpPolicy", "CartPole-v1", n_steps=64, learning_rate=lambda _: 1e-3, seed=0).save(tmp_path / "old.zip")
    with pytest.raises(ValueError) as error:
        PPO.load(tmp_path / "old.zip")
    message = one_line(error)
    assert "learning_rate" in message and "LIT_SB3_TRUST=1" in message and "trusted=True" in message
    with safe_load.trusted():
        assert PPO.load(tmp_path / "old.zip").learning_rate(0.3) == 1e-3
    monkeypatch.setenv(safe_load.TRUST_ENV, "1")
    assert PPO.load(tmp_path / "old.zip").learning_rate(0.3) == 1e-3


def test_the_zoos_enjoy_call_loads_an_sb3_zip_with_lambda_schedules(tmp_path: Path) -> None:
    """The RL Zoo's enjoy replaces the schedules by custom_objects: the rest of an SB3 zip is allow-listed data."""
    sb3.PPO(
        "MlpPolicy", "CartPole-v1", n_steps=64, learning_rate=lambda _: 1e-3, clip_range=lambda _: 0.1, seed=0
    ).save(tmp_path / "zoo.zip")
    zoo_objects = {"learning_rate": 0.0, "lr_schedule": lambda _: 0.0, "clip_range": lambda _: 0.0}
    loaded = PPO.load(tmp_path / "zoo.zip", custom_objects=zoo_objects, device="cpu")
    assert loaded.learning_rate == 0.0 and loaded.n_steps == 64


def test_lambda_schedules_are_warned_at_save_and_never_defaulted_at_load(tmp_path: Path) -> None:
    model = PPO(
        "MlpPolicy",
        env="CartPole-v1",
        n_steps=32,
        batch_size=32,
        policy_kwargs=NET,
        seed=0,
        learning_rate=lambda _: 1e-3,
        clip_range=lambda _: 0.3,
    )
    with pytest.warns(
        UserWarning,
        match=r"^save: clip_range, learning_rate hold code \(a function\), which a file "
        r"keeps only as a pickle",
    ) as record:
        model.save(tmp_path / "lambdas.zip")
    assert all("\n" not in str(w.message) for w in record)
    with pytest.raises(ValueError) as error:
        PPO.load(tmp_path / "lambdas.zip")
    message = one_line(error)
    assert "clip_range" in message and "learning_rate" in message and "trusted=True" in message
    back = PPO.load(tmp_path / "lambdas.zip", trusted=True)
    assert back.learning_rate(0.5) == 1e-3 and back.clip_range(0.5) == 0.3
    given = PPO.load(tmp_path / "lambdas.zip", custom_objects={"learning_rate": 2e-3, "clip_range": 0.1})
    assert given.learning_rate == 2e-3 and given.clip_range(1.0) == 0.1


# ------------------------------------------------------------------ checkpoints


def checkpoint_of(model: PPO, tmp_path: Path) -> Path:
    trainer = RLTrainer(max_steps=32, logger=False, enable_progress_bar=False, enable_checkpointing=False)
    trainer.fit(model, datamodule=RLEnvDataModule(train_env="CartPole-v1"))
    trainer.save_checkpoint(str(tmp_path / "m.ckpt"))
    return tmp_path / "m.ckpt"


def with_pickle(checkpoint: Path, payload: bytes, dst: Path) -> Path:
    """``checkpoint`` with its pickle (``data.pkl``) replaced by ``payload``."""
    with zipfile.ZipFile(checkpoint) as archive, zipfile.ZipFile(dst, "w") as out:
        for item in archive.infolist():
            out.writestr(item, payload if item.filename.endswith("/data.pkl") else archive.read(item))
    return dst


@pytest.mark.parametrize(
    "module,name",
    [
        ("lit_sb3.trainer", "RLTrainer"),  # lit_sb3's own, but not data
        ("lit_sb3.common.sb3_bridge", "HumanOutputFormat"),
        ("stable_baselines3.common.logger", "HumanOutputFormat"),
        ("gymnasium.spaces.box", "gym.os.system"),
    ],
)
def test_checkpoint_globals_outside_the_allow_list_are_refused(module: str, name: str, tmp_path: Path) -> None:
    path = checkpoint_of(PPO("MlpPolicy", n_steps=32, batch_size=32, policy_kwargs=NET, seed=0), tmp_path)
    marker = tmp_path / "ran"
    planted = with_pickle(path, binary_global(module, name, str(marker)), tmp_path / "planted.ckpt")
    with pytest.raises(CheckpointError) as error:
        PPO.load_from_checkpoint(planted)
    assert not marker.exists()
    message = one_line(error)
    assert f"{module}.{name}" in message and "weights_only=False" in message and "LIT_SB3_TRUST=1" in message


def test_datamodule_checkpoint_is_read_through_the_allow_list(tmp_path: Path) -> None:
    path = checkpoint_of(PPO("MlpPolicy", n_steps=32, batch_size=32, policy_kwargs=NET, seed=0), tmp_path)
    assert RLEnvDataModule.load_from_checkpoint(path).get_env("fit") is not None
    marker = tmp_path / "ran"
    planted = with_pickle(path, binary_global("builtins", "open", str(marker)), tmp_path / "planted.ckpt")
    with pytest.raises(CheckpointError) as error:
        RLEnvDataModule.load_from_checkpoint(planted)
    assert not marker.exists() and "builtins.open" in one_line(error)


def test_checkpoint_of_lambda_schedules_is_never_defaulted(tmp_path: Path) -> None:
    path = checkpoint_of(
        PPO("MlpPolicy", n_steps=32, batch_size=32, policy_kwargs=NET, seed=0, learning_rate=lambda _: 1e-3), tmp_path
    )
    with pytest.raises(CheckpointError) as error:
        PPO.load_from_checkpoint(path)
    assert one_line(error).startswith("load_from_checkpoint: the checkpoint has no learning_rate")
    assert PPO.load_from_checkpoint(path, learning_rate=1e-3).learning_rate == 1e-3


def test_vecnormalize_pickle_round_trip_is_allow_listed(tmp_path: Path) -> None:
    import gymnasium as gym
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    env = VecNormalize(DummyVecEnv([lambda: gym.make("Pendulum-v1")]))
    env.reset()
    env.step(np.zeros((1, 1), dtype=np.float32))
    saved = safe_load.loads(pickle.dumps(env), "vecnormalize")
    assert np.array_equal(saved.obs_rms.mean, env.obs_rms.mean)


# ------------------------------------------------------------------ replay buffers (issue #36)


@pytest.mark.parametrize("route", sorted(CRAFTED))
def test_replay_buffer_pickles_run_nothing(route: str, tmp_path: Path) -> None:
    """``load_replay_buffer`` read SB3's plain pickle: a crafted buffer ran ``os.system``."""
    from lit_sb3 import DQN

    marker, path = tmp_path / "ran", tmp_path / "evil.pkl"
    path.write_bytes(CRAFTED[route](marker))
    model = DQN("MlpPolicy", "CartPole-v1", policy_kwargs=NET)
    with pytest.raises(safe_load.Refused) as error:
        model.load_replay_buffer(path)
    assert not marker.exists()
    message = one_line(error)
    assert message.startswith(f"load_replay_buffer: {path}") and "not on lit_sb3's allow-list" in message
    assert "load_replay_buffer(..., trusted=True)" in message


@pytest.mark.parametrize(("algo", "env"), [("DQN", "CartPole-v1"), ("SAC", "Pendulum-v1")])
def test_replay_buffers_round_trip_through_the_allow_list(algo: str, env: str, tmp_path: Path) -> None:
    import lit_sb3

    cls = getattr(lit_sb3, algo)
    model = cls("MlpPolicy", env, learning_starts=1000, policy_kwargs=NET, seed=0)
    model.learn(40)
    model.save_replay_buffer(tmp_path / "buffer")
    other = cls("MlpPolicy", env, policy_kwargs=NET)
    other.load_replay_buffer(tmp_path / "buffer")  # (SB3's name: the .pkl suffix added)
    assert other.replay_buffer.pos == 40
    assert np.array_equal(other.replay_buffer.observations, model.replay_buffer.observations)


def test_a_replay_buffer_loads_from_an_open_file_through_the_allow_list(tmp_path: Path) -> None:
    """SB3 takes an open binary file as well as a path (its own test_no_resource_warning does)."""
    from lit_sb3 import DQN

    model = DQN("MlpPolicy", "CartPole-v1", learning_starts=1000, policy_kwargs=NET, seed=0)
    model.learn(40)
    model.save_replay_buffer(tmp_path / "buffer.pkl")
    other = DQN("MlpPolicy", "CartPole-v1", policy_kwargs=NET)
    with open(tmp_path / "buffer.pkl", "rb") as file:
        other.load_replay_buffer(file)
    assert other.replay_buffer.pos == 40
    marker, evil = tmp_path / "ran", tmp_path / "evil.pkl"
    evil.write_bytes(pickle.dumps(Planted(marker), protocol=2))
    with open(evil, "rb") as file, pytest.raises(safe_load.Refused, match=r"^load_replay_buffer: .*evil\.pkl"):
        other.load_replay_buffer(file)
    assert not marker.exists()


def test_a_trusted_replay_buffer_unpickles_anything(tmp_path: Path) -> None:
    from lit_sb3 import DQN

    marker, path = tmp_path / "ran", tmp_path / "evil.pkl"
    path.write_bytes(pickle.dumps(Planted(marker), protocol=2))
    with pytest.raises(ValueError, match=r"holds a TextIOWrapper, not a ReplayBuffer"):
        DQN("MlpPolicy", "CartPole-v1", policy_kwargs=NET).load_replay_buffer(path, trusted=True)
    assert marker.exists()  # trusted: the file's code ran, as the user asked

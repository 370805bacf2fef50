"""Loading faults: one clear line for a missing, truncated or foreign file; nothing pickled in a file runs by
default; a resume into a model with other hyperparameters says so; checkpoints keep only the filled buffer."""

from __future__ import annotations

import base64
import json
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest
import stable_baselines3 as sb3
import torch
from stable_baselines3.common.utils import LinearSchedule

from lit_bench.noise import normal
from lit_sb3 import PPO, SAC, TD3, RLEnvDataModule, RLTrainer
from lit_sb3.common.safe_load import CheckpointError

NET = {"net_arch": [16]}


def fit(model, env_id: str, steps: int, ckpt_path=None):
    trainer = RLTrainer(max_steps=steps, logger=False, enable_progress_bar=False)
    trainer.fit(model, datamodule=RLEnvDataModule(train_env=env_id), ckpt_path=ckpt_path)
    return trainer


def ppo_checkpoint(tmp_path: Path) -> Path:
    trainer = fit(PPO("MlpPolicy", n_steps=32, batch_size=32, policy_kwargs=NET, seed=0), "CartPole-v1", 64)
    path = tmp_path / "ppo.ckpt"
    trainer.save_checkpoint(str(path))
    return path


class Planted:
    """Unpickling this creates ``marker``: proof that code from a file ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_load_of_a_missing_zip_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as error:
        PPO.load(tmp_path / "missing.zip")
    assert str(error.value) == f"load: no such file: {tmp_path / 'missing.zip'}"


@pytest.mark.parametrize("damage", ["text", "truncated"])
def test_load_from_checkpoint_of_a_damaged_file_is_one_line(damage: str, tmp_path: Path) -> None:
    path = ppo_checkpoint(tmp_path)
    if damage == "text":
        path.write_text("not a checkpoint\n")
    else:
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(CheckpointError, match=r"^checkpoint: .* is not a readable checkpoint") as error:
        PPO.load_from_checkpoint(path)
    assert "\n" not in str(error.value)


def test_load_from_checkpoint_runs_no_planted_code(tmp_path: Path) -> None:
    checkpoint = torch.load(ppo_checkpoint(tmp_path), weights_only=True)
    marker = tmp_path / "ran"
    checkpoint["hyper_parameters"]["policy_kwargs"] = Planted(marker)
    torch.save(checkpoint, tmp_path / "planted.ckpt")
    with pytest.raises(CheckpointError, match=r"holds code \(\S*open\): not on lit_sb3's allow-list"):
        PPO.load_from_checkpoint(tmp_path / "planted.ckpt")
    with pytest.raises(CheckpointError):
        fit(PPO("MlpPolicy", n_steps=32, policy_kwargs=NET), "CartPole-v1", 128, ckpt_path=tmp_path / "planted.ckpt")
    assert not marker.exists()


def test_checkpoint_with_noise_schedule_and_classes_loads_weights_only(tmp_path: Path) -> None:
    """What the harness's TD3 presets hold: action noise, a schedule, an activation class."""
    model = TD3(
        "MlpPolicy",
        action_noise=normal(1, 0.1),
        learning_rate=LinearSchedule(1e-3, 1e-4, 1.0),
        policy_kwargs={"net_arch": [16], "activation_fn": torch.nn.ReLU},
        learning_starts=32,
        seed=0,
    )
    trainer = fit(model, "Pendulum-v1", 48)
    trainer.save_checkpoint(str(tmp_path / "td3.ckpt"), weights_only=False)
    loaded = TD3.load_from_checkpoint(tmp_path / "td3.ckpt")  # weights_only=True by default
    assert np.array_equal(loaded.action_noise._sigma, model.action_noise._sigma)
    assert loaded.learning_rate(0.5) == model.learning_rate(0.5)
    for key, value in model.state_dict().items():
        assert torch.equal(loaded.state_dict()[key], value), key


def test_resume_with_other_hyperparameters_warns_naming_them(tmp_path: Path) -> None:
    path = ppo_checkpoint(tmp_path)
    other = PPO("MlpPolicy", n_steps=32, batch_size=16, n_epochs=3, policy_kwargs=NET, seed=0)
    with pytest.warns(
        UserWarning,
        match=r"^ckpt_path: PPO differs from the checkpoint's hyperparameters: "
        r"batch_size=16 \(checkpoint: 32\); n_epochs=3 \(checkpoint: 10\); "
        r"training continues with the model's values",
    ) as record:
        fit(other, "CartPole-v1", 128, ckpt_path=path)
    assert all("\n" not in str(w.message) for w in record)
    assert other.batch_size == 16 and other.num_timesteps == 128


def test_zip_load_never_unpickles_serialized_entries(tmp_path: Path) -> None:
    model = PPO(
        "MlpPolicy",
        env="CartPole-v1",
        learning_rate=LinearSchedule(1e-3, 1e-4, 1.0),
        policy_kwargs={"net_arch": [16], "activation_fn": torch.nn.ReLU},
        seed=0,
    )
    model.save(tmp_path / "ours.zip")
    marker = tmp_path / "ran"
    planted = {":type:": "x", ":serialized:": base64.b64encode(pickle.dumps(Planted(marker))).decode()}
    with zipfile.ZipFile(tmp_path / "ours.zip") as src, zipfile.ZipFile(tmp_path / "planted.zip", "w") as dst:
        for item in src.infolist():
            content = src.read(item)
            if item.filename == "data":
                data = json.loads(content)
                data = {k: planted if isinstance(v, dict) and ":serialized:" in v else v for k, v in data.items()}
                content = json.dumps(data).encode()
            dst.writestr(item, content)
    loaded = PPO.load(tmp_path / "planted.zip")  # every pickle is planted; load reads the plain-JSON mirror
    assert not marker.exists()
    assert loaded.learning_rate(0.5) == model.learning_rate(0.5)
    assert loaded.policy_kwargs["activation_fn"] is torch.nn.ReLU
    obs = np.zeros((1, 4), dtype=np.float32)
    assert np.array_equal(loaded.predict(obs, deterministic=True)[0], model.predict(obs, deterministic=True)[0])

    sb3.PPO("MlpPolicy", "CartPole-v1", n_steps=64, seed=0).save(tmp_path / "sb3.zip")
    assert PPO.load(tmp_path / "sb3.zip").n_steps == 64  # SB3's pickles hold allow-listed data only
    planted_sb3 = tmp_path / "planted_sb3.zip"
    with zipfile.ZipFile(tmp_path / "sb3.zip") as src, zipfile.ZipFile(planted_sb3, "w") as dst:
        for item in src.infolist():
            content = src.read(item)
            if item.filename == "data":
                content = json.dumps({**json.loads(content), "action_space": planted}).encode()
            dst.writestr(item, content)
    with pytest.raises(
        ValueError,
        match=r"^load: .*planted_sb3.zip: action_space holds code \(\S*open\): not on "
        r"lit_sb3's allow-list .*trusted=True",
    ) as error:
        PPO.load(planted_sb3)
    assert "\n" not in str(error.value) and not marker.exists()


def test_checkpoint_keeps_only_the_filled_replay_buffer(tmp_path: Path) -> None:
    """SAC's default 1e6-slot buffer after 300 env steps: was ~43 MB (the whole preallocated buffer)."""
    model = SAC("MlpPolicy", learning_starts=300, policy_kwargs=NET, seed=0)
    trainer = fit(model, "Pendulum-v1", 300)
    trainer.save_checkpoint(str(tmp_path / "sac.ckpt"), weights_only=False)
    assert (tmp_path / "sac.ckpt").stat().st_size < 500_000


def test_replay_buffer_round_trip_after_wrapping(tmp_path: Path) -> None:
    model = SAC("MlpPolicy", learning_starts=80, buffer_size=50, batch_size=8, policy_kwargs=NET, seed=0)
    trainer = fit(model, "Pendulum-v1", 80)
    assert model.replay_buffer.full and model.replay_buffer.pos == 30
    trainer.save_checkpoint(str(tmp_path / "sac.ckpt"), weights_only=False)
    loaded = SAC.load_from_checkpoint(tmp_path / "sac.ckpt")
    loaded._setup_buffers(model.get_env() or RLEnvDataModule(train_env="Pendulum-v1").get_env("fit"))
    ours, theirs = model.replay_buffer, loaded.replay_buffer
    assert (theirs.pos, theirs.full) == (ours.pos, ours.full)
    for key in ("observations", "next_observations", "actions", "rewards", "dones", "timeouts"):
        assert np.array_equal(getattr(theirs, key), getattr(ours, key)), key

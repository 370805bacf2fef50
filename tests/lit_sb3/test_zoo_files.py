"""Issue #36: the RL Zoo reads a log folder's ``config.yml`` / ``args.yml`` with ``yaml.UnsafeLoader``;
``lit_sb3.zoo`` reads them with :class:`lit_sb3.zoo.ZooLoader` in its place: what the Zoo writes loads, any other
``!!python/`` tag is refused (one line) unless the files are trusted. No RL Zoo needed: the Zoo writes these files with
``yaml.dump`` of an ``OrderedDict`` (tuples inside), which is what the tests write too."""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import pytest
import torch
import yaml

from lit_sb3 import safe_load
from lit_sb3.zoo import ZooLoader


def _payloads(marker: Path) -> list[str]:
    command = f"touch {marker}"
    return [
        f'!!python/object/apply:os.system ["{command}"]',
        f'!!python/object/apply:subprocess.call [["touch", "{marker}"]]',
        f'!!python/object/new:os.system ["{command}"]',
        f"!!python/object:builtins.open {{file: {marker}}}",
        "!!python/name:os.system",
        "!!python/module:os",
        f'normalize: !!python/object/apply:os.system ["{command}"]',
        f'- [policy_kwargs, !!python/object/apply:os.system ["{command}"]]',
    ]


def test_what_the_zoo_writes_loads() -> None:
    written = OrderedDict(
        [("n_envs", 8), ("normalize", "{'norm_obs': True}"), ("frame_stack", (4, 2)), ("learning_rate", "lin_1e-3")]
    )
    text = yaml.dump(OrderedDict([("algo", "ppo"), ("hyperparams", written), ("env", "CartPole-v1")]))
    assert "!!python/object/apply:collections.OrderedDict" in text and "!!python/tuple" in text
    loaded = yaml.load(text, Loader=ZooLoader)
    assert loaded == OrderedDict([("algo", "ppo"), ("hyperparams", written), ("env", "CartPole-v1")])
    assert loaded["hyperparams"]["frame_stack"] == (4, 2)
    # an allow-listed class given with --hyperparams (the Zoo evaluates it) is taken from lit_sb3's list
    assert yaml.load("!!python/name:torch.nn.modules.activation.ReLU", Loader=ZooLoader) is torch.nn.ReLU


@pytest.mark.parametrize("index", range(8))
def test_any_other_python_tag_is_refused(index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(safe_load.TRUST_ENV, raising=False)
    marker = tmp_path / "ran"
    path = tmp_path / "config.yml"
    path.write_text(_payloads(marker)[index] + "\n")
    with path.open() as f, pytest.raises(yaml.constructor.ConstructorError) as error:
        yaml.load(f, Loader=ZooLoader)
    assert not marker.exists()
    assert "is not a tag the RL Zoo writes" in str(error.value.problem) and "LIT_SB3_TRUST=1" in error.value.problem
    assert error.value.problem_mark.name == str(path)


def test_trusted_files_load_as_the_zoo_loads_them(monkeypatch: pytest.MonkeyPatch) -> None:
    import os.path

    monkeypatch.setenv(safe_load.TRUST_ENV, "1")
    assert yaml.load("!!python/name:os.path.join", Loader=ZooLoader) is os.path.join


def test_the_zoos_vecnormalize_statistics_load_through_the_allow_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Zoo's create_test_env (enjoy, record_video) loaded a log folder's vecnormalize.pkl with plain pickle."""
    import pickle

    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    from lit_sb3.zoo import ZooVecNormalize

    monkeypatch.delenv(safe_load.TRUST_ENV, raising=False)
    env = make_vec_env("CartPole-v1", n_envs=1)
    VecNormalize(env).save(tmp_path / "vecnormalize.pkl")
    loaded = ZooVecNormalize.load(str(tmp_path / "vecnormalize.pkl"), env)
    assert type(loaded) is VecNormalize and loaded.venv is env
    marker, evil = tmp_path / "ran", tmp_path / "evil.pkl"
    evil.write_bytes(pickle.dumps(_Planted(marker), protocol=2))
    with pytest.raises(safe_load.Refused, match=rf"^vecnormalize: {evil} holds code \(posix:system\): not on"):
        ZooVecNormalize.load(str(evil), env)
    assert not marker.exists()


class _Planted:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple:
        import os

        return (os.system, (f"touch {self.marker}",))

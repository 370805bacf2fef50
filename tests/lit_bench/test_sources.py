"""A user's own algorithm: user config directories over the built-in ones, variants (``base:``), hyperparameters
from the MRO's signatures, and the resource locator the harness finds its files with."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

from lit_bench.config import sources as config_sources
from lit_bench.config.checks import (
    ConfigError,
    check_hyperparameter_values,
    check_hyperparameters,
    constructor_parameters,
)
from lit_bench.config.hydra_versions import VERSION_BASE
from lit_bench.config.resources import conf_dir, reference_dir, source_checkout
from lit_sb3 import PPO

from .helpers import CHILD_ENV, CONF, REPO, TINY, run_py

pytestmark = pytest.mark.harness


class MyPPO(PPO):
    def __init__(self, *args: Any, vf_coef: float = 1.0, **kwargs: Any) -> None:
        super().__init__(*args, vf_coef=vf_coef, **kwargs)


class Closed(PPO):
    def __init__(self, policy: str, a: float = 1.0) -> None:  # no **kwargs: only its own arguments
        super().__init__(policy)


def _user_dir(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _compose(user: Path | None, *overrides: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv(config_sources.ENV_VAR, str(user) if user else "")
    config_sources.install()
    with initialize_config_dir(config_dir=str(conf_dir()), **VERSION_BASE):
        return compose("config", overrides=list(overrides))


VARIANT = {"algo/my_ppo.yaml": "_target_: mypkg.MyPPO\nbase: ppo\nvf_coef: 1.0\nn_epochs: 3\n"}


def test_resources_from_a_clone_are_the_repository_folders():
    assert conf_dir() == CONF and reference_dir() == REPO / "results" / "reference" and source_checkout() == REPO


def test_hyperparameters_of_a_kwargs_subclass_come_from_its_mro():
    params = constructor_parameters(MyPPO)
    assert {"policy", "n_steps", "clip_range", "vf_coef"} <= set(params) and params["vf_coef"].default == 1.0
    node = OmegaConf.create({"_target_": "x.MyPPO", "base": "ppo", "policy": "MlpPolicy", "n_steps": 64})
    check_hyperparameters(MyPPO, node, "my_ppo")  # the old check: "has no hyperparameter 'policy'; valid: vf_coef"
    with pytest.raises(
        ConfigError,
        match=r"^algo.n_stepz: MyPPO \(algo=my_ppo\) has no hyperparameter 'n_stepz'; "
        r"did you mean n_steps\?$",
    ):
        check_hyperparameters(MyPPO, OmegaConf.create({"n_stepz": 3}), "my_ppo")
    with pytest.raises(ConfigError, match=r"algo.n_epochs=ten: must be a number"):  # PPO's default says int
        check_hyperparameter_values(MyPPO, OmegaConf.create({"n_epochs": "ten"}))
    assert set(constructor_parameters(Closed)) == {"policy", "a"}  # no **kwargs: PPO's arguments are not its own
    with pytest.raises(ConfigError, match=r"has no hyperparameter 'n_steps'; valid: policy, a$"):
        check_hyperparameters(Closed, OmegaConf.create({"n_steps": 3}), "closed")


def test_a_variant_composes_its_base_and_the_bases_tuned_values(tmp_path, monkeypatch):
    user = _user_dir(tmp_path / "conf", VARIANT)
    tuned = OmegaConf.load(CONF / "algo_env" / "ppo_CartPole.yaml")
    cfg = _compose(user, "algo=my_ppo", "env=CartPole", monkeypatch=monkeypatch)
    assert cfg.algo._target_ == "mypkg.MyPPO" and cfg.algo.base == "ppo" and cfg.algo.vf_coef == 1.0
    assert cfg.algo.policy == "MlpPolicy" and cfg.algo.max_grad_norm == 0.5  # ppo.yaml's defaults
    assert cfg.algo.n_steps == tuned.algo.n_steps == 32 and cfg.budget == tuned.budget and cfg.env.n_envs == 8
    assert cfg.algo.n_epochs == 3 != tuned.algo.n_epochs  # the variant's own file wins over the base's tuned values
    cfg = _compose(user, "algo=my_ppo", "env=CartPole", "algo.n_epochs=7", "budget=500", monkeypatch=monkeypatch)
    assert cfg.algo.n_epochs == 7 and cfg.budget == 500  # ... and the command line over both
    cfg = _compose(user, "algo=my_ppo", "env=CartPoleNoVel", monkeypatch=monkeypatch)  # no tuned ppo_ file
    assert cfg.algo.n_steps == 2048 and cfg.algo.n_epochs == 3
    assert _compose(user, "algo=ppo", "env=CartPole", monkeypatch=monkeypatch).algo.vf_coef == 0.5  # ppo untouched


def test_a_variants_own_tuned_file_is_used_as_it_is(tmp_path, monkeypatch):
    user = _user_dir(
        tmp_path / "conf", {**VARIANT, "algo_env/my_ppo_CartPole.yaml": "# @package _global_\nalgo: {n_steps: 16}\n"}
    )
    cfg = _compose(user, "algo=my_ppo", "env=CartPole", monkeypatch=monkeypatch)
    assert cfg.algo.n_steps == 16 and cfg.algo.batch_size == 64  # not the base's tuned batch_size 256


def test_a_user_entry_replaces_the_builtin_with_one_line(tmp_path, monkeypatch, capfd):
    user = _user_dir(
        tmp_path / "conf",
        {
            "algo/ppo.yaml": "_target_: lit_sb3.PPO\npolicy: MlpPolicy\nn_steps: 99\n",
            "env/Mine.yaml": "id: CartPole-v1\nbudget: 100\n",
        },
    )
    cfg = _compose(user, "algo=ppo", "env=CartPoleNoVel", monkeypatch=monkeypatch)
    assert cfg.algo.n_steps == 99 and "gamma" not in cfg.algo  # the user's file, not merged with the built-in
    assert capfd.readouterr().err.splitlines() == [
        f"lit-bench: algo/ppo.yaml from {user} replaces the built-in algo/ppo.yaml"
    ]
    assert _compose(user, "env=Mine", monkeypatch=monkeypatch).env.budget == 100  # a new option beside the others


def test_bad_bases_and_directories_fail_in_one_line(tmp_path, monkeypatch):
    user = _user_dir(
        tmp_path / "conf",
        {"algo/a.yaml": "_target_: x.A\nbase: nope\n", "algo/b.yaml": "_target_: x.B\nbase: my_ppo\n", **VARIANT},
    )
    with pytest.raises(
        ConfigCompositionException,
        match=r"algo/a.yaml: base: nope: not an algo config; choose "
        r"one of a2c, ars, crossq, ddpg, dqn, ppo, ppo_lstm",
    ):
        _compose(user, "algo=a", monkeypatch=monkeypatch)
    with pytest.raises(ConfigCompositionException, match=r"base: my_ppo is itself a variant \(of ppo\)"):
        _compose(user, "algo=b", monkeypatch=monkeypatch)
    with pytest.raises(config_sources.UserConfigError, match=f"^{config_sources.ENV_VAR}: /no/such is not a dir"):
        config_sources.user_config_dirs("/no/such")


def test_command_line_directories_come_first(tmp_path, monkeypatch):
    dirs = [tmp_path / n for n in ("a", "b", "c", "d")]
    for d in dirs:
        d.mkdir()
    monkeypatch.setenv(config_sources.ENV_VAR, str(dirs[3]))
    config_sources.fold_command_line(
        ["-m", "algo=x", f"hydra.searchpath=[file://{dirs[1]},{dirs[2]}]", "--config-dir", str(dirs[0])]
    )
    assert os.environ[config_sources.ENV_VAR].split(os.pathsep) == [
        str(d) for d in (dirs[0], dirs[1], dirs[2], dirs[3])
    ]
    assert config_sources.user_config_dirs() == dirs


def test_a_config_directory_others_can_write_is_refused(tmp_path):
    """Issue #36: the code a config directory names is trusted (enjoy, resume): one line, before Hydra starts."""
    conf = tmp_path / "conf"
    conf.mkdir()
    conf.chmod(0o777)
    with pytest.raises(config_sources.UserConfigError, match=rf"^{config_sources.ENV_VAR}: {conf}: {conf} is world-"):
        config_sources.user_config_dirs(str(conf))
    result = run_py(*TINY, f"out_dir={tmp_path / 'out'}", env={**CHILD_ENV, config_sources.ENV_VAR: str(conf)})
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.strip().startswith(f"lit-bench: {config_sources.ENV_VAR}: {conf}: {conf} is world-writable")
    assert not (tmp_path / "out").exists()

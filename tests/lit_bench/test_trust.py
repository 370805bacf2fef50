"""A genuine run directory with one crafted file runs no code: ``enjoy`` checks every name its ``config.yaml`` gives
(``_target_`` nodes, ``_args_`` chains, getters' paths, ``env.package``, ``algo._target_``) against the harness's
config groups and lit_sb3's allow-list, and reads the VecNormalize pickle and the checkpoint through that list;
resuming reads checkpoints through it too. Each crafted file is refused in one line naming the node and
``--trust`` (or LIT_SB3_TRUST=1), and its marker file is never written."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from lit_bench.cli import enjoy
from lit_bench.config.trust import UntrustedConfig, check_run_config, harness_names
from lit_sb3 import safe_load
from lit_sb3.common import allow_list
from tests.lit_bench.helpers import compose_run

pytestmark = pytest.mark.harness

TINY = (
    "algo=ppo",
    "env=CartPole",
    "env.n_envs=1",
    "algo.n_steps=64",
    "algo.batch_size=64",
    "budget=64",
    "eval.every=1000",
    "eval.episodes=1",
    "env.normalize={norm_obs:true,norm_reward:false}",
)


@pytest.fixture(scope="module")
def genuine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from lit_bench.run.train import run

    out = tmp_path_factory.mktemp("trust_runs")
    summary = run(compose_run(*TINY, "backend=lit", f"out_dir={out}", "sweep=trust"))
    assert summary["status"] == "completed", summary.get("traceback")
    return Path(summary["run_dir"])


@pytest.fixture(autouse=True)
def _fresh_allow_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(safe_load.TRUST_ENV, raising=False)
    monkeypatch.setattr(allow_list._REGISTRY, "user", {})


@pytest.fixture
def planted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A module ``planted_code`` on sys.path whose import (or its ``Planted`` class) writes the marker."""
    home = tmp_path / "site"
    home.mkdir()
    marker = tmp_path / "ran"
    (home / "planted_code.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n"
        f"class Planted:\n    def __init__(self, *args, **kwargs):\n        Path({str(marker)!r}).write_text('ran')\n"
    )
    monkeypatch.syspath_prepend(str(home))
    yield marker
    sys.modules.pop("planted_code", None)


def crafted_copy(genuine: Path, tmp_path: Path, edit: Any) -> Path:
    """A copy of the genuine run with its config.yaml edited by ``edit(config)``."""
    copy = tmp_path / "run"
    shutil.copytree(genuine, copy)
    config = yaml.safe_load((copy / "config.yaml").read_text())
    edit(config)
    (copy / "config.yaml").write_text(yaml.safe_dump(config))
    return copy


def refused(argv: list[str], capsys: pytest.CaptureFixture) -> str:
    assert enjoy.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("enjoy: "), err
    return err


def write_text_node(marker: Path) -> dict:
    """pathlib.Path(marker).write_text(...) as an ``_args_`` chain (how a config writes a module to import)."""
    return {
        "_target_": "pathlib.Path.write_text",
        "_args_": [{"_target_": "pathlib.Path", "_args_": [str(marker)]}, "import os"],
    }


CRAFTED = {
    "env.wrappers[0]._target_": lambda c, m: c["env"].__setitem__("wrappers", [write_text_node(m)]),
    "env.wrappers[0].skip._target_": lambda c, m: c["env"].__setitem__(
        "wrappers", [{"_target_": "lit_bench.wrappers.FrameSkip", "_partial_": True, "skip": write_text_node(m)}]
    ),
    "env.make._args_[0]._target_": lambda c, m: c["env"].__setitem__(
        "make", {"_target_": "stable_baselines3.common.envs.BitFlippingEnv", "_args_": [write_text_node(m)]}
    ),
    "env.vec_wrappers[0]._target_": lambda c, m: c["env"].__setitem__(
        "vec_wrappers", [{"_target_": "sys.path.insert", "_args_": [0, str(m.parent / "site")]}]
    ),
    "env.package": lambda c, m: c["env"].__setitem__("package", "planted_code"),
    "env.package[1]": lambda c, m: c["env"].__setitem__("package", ["Box2D", "planted_code"]),
    "algo._target_": lambda c, m: c["algo"].__setitem__("_target_", "planted_code.Planted"),
    "algo.policy_kwargs.activation_fn.path": lambda c, m: c["algo"].__setitem__(
        "policy_kwargs", {"activation_fn": {"_target_": "hydra.utils.get_class", "path": "planted_code.Planted"}}
    ),
    "env.wrappers[0]._args_[0]": lambda c, m: c["env"].__setitem__(
        "wrappers", [{"_target_": "hydra.utils.get_class", "_args_": ["planted_code.Planted"]}]
    ),  # a getter's path given positionally (importing it writes the marker)
    "algo.action_noise._target_": lambda c, m: c["algo"].__setitem__(
        "action_noise", {"_target_": "lit_sb3.common.sb3_bridge.HumanOutputFormat", "_args_": [str(m)]}
    ),  # a re-export
}


@pytest.mark.parametrize("node", sorted(CRAFTED))
def test_crafted_config_runs_nothing(
    node: str, genuine: Path, planted: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    run_dir = crafted_copy(genuine, tmp_path, lambda c: CRAFTED[node](c, planted))
    err = refused([str(run_dir)], capsys)
    assert not planted.exists()
    assert f"config.yaml: {node}=" in err and "--trust" in err, err


def test_interpolations_in_a_recorded_config_are_refused(
    genuine: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    run_dir = crafted_copy(genuine, tmp_path, lambda c: c["env"].__setitem__("id", "${oc.env:HOME}"))
    err = refused([str(run_dir)], capsys)
    assert "env.id is an interpolation" in err and "--trust" in err


def test_trust_and_allow_open_exactly_what_they_say(
    genuine: Path, planted: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = crafted_copy(genuine, tmp_path, lambda c: c["env"].__setitem__("package", "planted_code"))
    safe_load.allow("planted_code")  # the user's own env package, registered once
    assert enjoy.main([str(run_dir), "--episodes", "1"]) == 0
    assert planted.exists()
    planted.unlink()
    sys.modules.pop("planted_code")
    allow_list._REGISTRY.user.clear()
    assert enjoy.main([str(run_dir), "--episodes", "1", "--trust"]) == 0
    assert planted.exists()
    planted.unlink()
    sys.modules.pop("planted_code")
    monkeypatch.setenv(safe_load.TRUST_ENV, "1")  # the process-wide switch means --trust too
    assert enjoy.main([str(run_dir), "--episodes", "1"]) == 0
    assert planted.exists()


def test_the_harness_config_groups_are_what_a_genuine_run_names(genuine: Path, capsys: pytest.CaptureFixture) -> None:
    names = harness_names()
    assert "lit_sb3.PPO" in names["target"] and "minigrid" in names["package"]
    assert "lit_bench.noise.normal" in names["target"] and "torch.nn.ReLU" in names["target"]
    assert enjoy.main([str(genuine), "--episodes", "1"]) == 0


def test_old_run_directories_name_the_old_module_paths() -> None:
    """Runs recorded before lit_bench's modules moved name lit_bench.noise.* / lit_bench.wrappers.*: exactly those
    names load (old module + the same qualified name), nothing else under the old module."""
    old = {
        "algo": {"_target_": "lit_sb3.TD3", "action_noise": {"_target_": "lit_bench.noise.normal", "std": 0.1}},
        "env": {
            "package": "lit_bench.wrappers",
            "wrappers": [{"_target_": "lit_bench.wrappers.FrameSkip", "_partial_": True, "skip": 2}],
        },
    }
    check_run_config(old, "config.yaml")
    old["env"]["wrappers"].append({"_target_": "lit_bench.wrappers.gym.make", "_args_": ["x"]})
    with pytest.raises(UntrustedConfig, match=r"^config.yaml: env.wrappers\[1\]._target_=lit_bench.wrappers.gym.make "):
        check_run_config(old, "config.yaml")


# ------------------------------------------------------------------ the pickles and checkpoints of a run


def _text(value: str) -> bytes:
    raw = value.encode()
    return b"\x8c" + bytes([len(raw)]) + raw


@pytest.mark.parametrize(
    "payload",
    [
        lambda m: (
            b"\x80\x04"
            + _text("gymnasium.spaces.box")
            + _text("gym.os.system")
            + b"\x93"
            + _text(f"touch {m}")
            + b"\x85R."
        ),  # protocol 4: a dotted name through a module that is allow-listed for its spaces
        lambda m: f"(Vtouch {m}\nios\nsystem\n.".encode(),  # INST
        lambda m: f"cos\nsystem\n(Vtouch {m}\ntR.".encode(),  # GLOBAL + REDUCE
    ],
)
def test_crafted_vecnormalize_pickle_runs_nothing(
    payload: Any, genuine: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    run_dir = crafted_copy(genuine, tmp_path, lambda c: None)
    marker = tmp_path / "ran"
    (run_dir / "vecnormalize.pkl").write_bytes(payload(marker))
    err = refused([str(run_dir)], capsys)
    assert not marker.exists()
    assert "vecnormalize: " in err and "not on lit_sb3's allow-list" in err and "--trust" in err


def _planted_checkpoint(path: Path, marker: Path) -> None:
    """``path`` (a genuine .ckpt) with its pickle replaced by one calling lit_sb3's RLTrainer (allowed by the old
    ``lit_sb3.*`` prefix) with a path: code from the file would create ``marker``."""
    import zipfile

    arg = str(marker).encode()
    payload = b"\x80\x02clit_sb3.trainer\nRLTrainer\nX" + len(arg).to_bytes(4, "little") + arg + b"\x85R."
    original = path.read_bytes()
    copy = path.with_suffix(".orig")
    copy.write_bytes(original)
    with zipfile.ZipFile(copy) as archive, zipfile.ZipFile(path, "w") as out:
        for item in archive.infolist():
            out.writestr(item, payload if item.filename.endswith("/data.pkl") else archive.read(item))
    copy.unlink()


def test_crafted_checkpoint_runs_nothing_in_enjoy_or_resume(
    genuine: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    from lit_bench.run.checkpointing import resume_point
    from lit_bench.store.rundir import RunDir

    run_dir = crafted_copy(genuine, tmp_path, lambda c: None)
    marker = tmp_path / "ran"
    _planted_checkpoint(run_dir / "checkpoints" / "last.ckpt", marker)
    err = refused([str(run_dir)], capsys)
    assert "lit_sb3.trainer.RLTrainer" in err and "--trust" in err
    for earlier in (run_dir / "checkpoints").glob("previous*"):
        earlier.unlink()
    assert resume_point(RunDir(run_dir), "lit") is None  # refused: the run would start afresh, saying why
    warning = capsys.readouterr().err
    assert not marker.exists()
    assert "lit_sb3.trainer.RLTrainer" in warning and "LIT_SB3_TRUST=1" in warning


def test_the_users_own_config_directories_are_trusted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """LIT_BENCH_CONFIG_PATH names the user's config groups: what they name loads back without --trust."""
    mine = tmp_path / "my_conf" / "algo"
    mine.mkdir(parents=True)
    (mine / "myppo.yaml").write_text("_target_: planted_code.MyPPO\nbase: ppo\n")
    recorded = {"algo": {"_target_": "planted_code.MyPPO"}}
    with pytest.raises(UntrustedConfig, match=r"algo._target_=planted_code.MyPPO names code"):
        check_run_config(recorded, "config.yaml")
    monkeypatch.setenv("LIT_BENCH_CONFIG_PATH", str(tmp_path / "my_conf"))
    check_run_config(recorded, "config.yaml")


def test_sb3_run_zip_pickles_are_never_unpickled(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """backend=sb3 runs load from SB3's zip: every pickled entry is rebuilt from the (checked) config instead."""
    import base64
    import json
    import zipfile

    from lit_bench.run.train import run

    summary = run(compose_run(*TINY, "backend=sb3", f"out_dir={tmp_path_factory.mktemp('sb3')}", "sweep=trust"))
    run_dir = Path(summary["run_dir"])
    marker = tmp_path / "ran"
    code = base64.b64encode(f"cos\nsystem\n(Vtouch {marker}\ntR.".encode()).decode()
    last = run_dir / "checkpoints" / "last.zip"
    planted = tmp_path / "planted.zip"
    with zipfile.ZipFile(last) as archive, zipfile.ZipFile(planted, "w") as out:
        for item in archive.infolist():
            content = archive.read(item)
            if item.filename == "data":
                data = json.loads(content)
                data = {
                    k: {":type:": "x", ":serialized:": code} if isinstance(v, dict) and ":serialized:" in v else v
                    for k, v in data.items()
                }
                content = json.dumps({**data, "extra": {":type:": "x", ":serialized:": code}}).encode()
            out.writestr(item, content)
    planted.replace(last)
    assert enjoy.main([str(run_dir), "--episodes", "1"]) == 0
    assert not marker.exists()


def test_every_class_the_config_groups_hand_an_algorithm_loads_back() -> None:
    """A preset's ``hydra.utils.get_class`` paths (activations, optimizers, buffers) end up in checkpoints and zips:
    each must be on lit_sb3's allow-list where it is defined, or resuming that preset would be refused."""
    from hydra.utils import get_class

    from lit_bench.config.resources import conf_dir
    from lit_bench.config.trust import GETTERS, code_names

    paths = set()
    for path in conf_dir().rglob("*.yaml"):
        tree = yaml.safe_load(path.read_text())
        paths |= {name for where, _, name in code_names(tree) if where.endswith(".path")}
    assert paths and not paths & set(GETTERS)
    for name in sorted(paths):
        cls = get_class(name)
        assert safe_load.allowed_name(f"{cls.__module__}:{cls.__qualname__}") is cls, name


# ------------------------------------------------------------------ config paths from the environment (issue #36)


def _copyfile_node(victim: Path, dst: Path) -> dict:
    return {"_target_": "shutil.copyfile", "src": str(victim), "dst": str(dst)}


def _nested_in_a_wrapper(genuine: Path, tmp_path: Path, victim: Path, dst: Path) -> Path:
    """A copy of the genuine run whose wrapper's argument is a shutil.copyfile node."""
    skip = _copyfile_node(victim, dst)
    wrapper = {"_target_": "lit_bench.wrappers.FrameSkip", "_partial_": True, "skip": skip}
    return crafted_copy(genuine, tmp_path, lambda c: c["env"].__setitem__("wrappers", [wrapper]))


@pytest.mark.parametrize("writable", ["directory 777", "directory 775", "file 666", "subdirectory 757", "other owner"])
def test_a_config_path_others_can_write_is_refused(
    writable: str, genuine: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """A world-writable LIT_BENCH_CONFIG_PATH directory holding a yaml that mentions shutil.copyfile made that target
    trusted for enjoy: a run's config.yaml nesting it wrote a file outside the run (and ended in a traceback)."""
    import os

    if writable == "other owner" and os.geteuid() != 0:
        pytest.skip("giving a directory to another user needs root")
    conf = tmp_path / "shared_conf"
    (conf / "env").mkdir(parents=True)
    evil = conf / "env" / "Evil.yaml"
    evil.write_text("make: {_target_: shutil.copyfile}\n")
    what, _, mode = writable.partition(" ")
    path = {"directory": conf, "file": evil, "subdirectory": conf / "env", "other": conf}[what]
    if what == "other":
        os.chown(conf, 65534, 65534)
    else:
        path.chmod(int(mode, 8))
    victim, dst = tmp_path / "victim.txt", tmp_path / "copied.txt"
    victim.write_text("secret")
    run_dir = _nested_in_a_wrapper(genuine, tmp_path, victim, dst)
    monkeypatch.setenv("LIT_BENCH_CONFIG_PATH", str(conf))
    err = refused([str(run_dir), "--episodes", "1"], capsys)
    assert err.startswith(f"enjoy: LIT_BENCH_CONFIG_PATH: {conf}: {path} is "), err
    assert ("owned by another user" if what == "other" else "-writable") in err
    assert victim.read_text() == "secret" and not dst.exists()


def test_a_config_files_targets_are_trusted_only_at_the_node_it_defines(
    genuine: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """A target the user's env file gives env.make is trusted at env.make, not nested in a wrapper's argument."""
    conf = tmp_path / "my_conf"
    (conf / "env").mkdir(parents=True)
    (conf / "env" / "Mine.yaml").write_text("make: {_target_: shutil.copyfile}\n")
    (conf / "algo_env").mkdir()
    (conf / "algo_env" / "ppo_Mine.yaml").write_text(
        "# @package _global_\nalgo:\n  policy_kwargs: {activation_fn: {_target_: hydra.utils.get_class, "
        "path: planted_code.Planted}}\n"
    )
    monkeypatch.setenv("LIT_BENCH_CONFIG_PATH", str(conf))
    victim, dst = tmp_path / "victim.txt", tmp_path / "copied.txt"
    victim.write_text("secret")
    check_run_config({"env": {"make": _copyfile_node(victim, dst)}}, "config.yaml")
    check_run_config(
        {
            "algo": {
                "policy_kwargs": {
                    "activation_fn": {"_target_": "hydra.utils.get_class", "path": "planted_code.Planted"}
                }
            }
        },
        "config.yaml",
    )
    with pytest.raises(UntrustedConfig, match=r"^config.yaml: algo.action_noise.path=planted_code.Planted names code"):
        check_run_config(
            {"algo": {"action_noise": {"_target_": "hydra.utils.get_class", "path": "planted_code.Planted"}}},
            "config.yaml",
        )
    run_dir = _nested_in_a_wrapper(genuine, tmp_path, victim, dst)
    err = refused([str(run_dir), "--episodes", "1"], capsys)
    assert "env.wrappers[0].skip._target_=shutil.copyfile names code" in err, err
    assert victim.read_text() == "secret" and not dst.exists()

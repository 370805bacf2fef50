"""No shims: config ids hash the modules' real paths (unchanged for every current config), old run directories are
migrated once by ``lit-bench migrate``, and the tools are real modules behind one command."""

from __future__ import annotations

import fcntl
import importlib.util
import json
import runpy
import sys
from pathlib import Path

import pytest
import yaml
from hydra.utils import instantiate
from stable_baselines3.common.noise import NormalActionNoise

from lit_bench.cli import bench, migrate
from lit_bench.config.identity import config_hash, config_id, identify, resolved
from lit_bench.store import format as fmt
from tests.lit_bench.helpers import compose_run

# (overrides, config_id, config_hash, subdir) computed before the shims went (ids hashed old module spellings then):
# a config that names lit_bench.noise / lit_bench.wrappers keeps its directory.
PINNED = [
    (("algo=td3", "env=Pendulum"), "3089fe9931", "a534f8d177b98f02", "td3/Pendulum/seed_0"),
    (("algo=ddpg", "env=MountainCarContinuous"), "ba6be3d78c", "8cedae6730927006", "ddpg/MountainCarContinuous/seed_0"),
    (("algo=ppo", "env=CarRacing"), "d959aec80f", "3b7c01fc6a10b807", "ppo/CarRacing/seed_0"),
    (("algo=ppo_lstm", "env=CartPoleNoVel"), "15e0b68ebf", "c58f37dea7f0859f", "ppo_lstm/CartPoleNoVel/seed_0"),
    (("algo=ppo", "env=CartPole"), "e6f28b18ef", "a151555176371310", "ppo/CartPole/seed_0"),
    (
        ("algo=td3", "env=Pendulum", "algo.learning_rate=0.0005"),
        "c460350272",
        "e763312a96fb8236",
        "td3/Pendulum/algo.learning_rate=0.0005-c460350272/seed_0",
    ),
]


@pytest.mark.parametrize(("overrides", "cid", "chash", "subdir"), PINNED, ids=[" ".join(p[0]) for p in PINNED])
def test_a_current_config_keeps_its_ids_and_directory(overrides, cid, chash, subdir):
    identity = identify(compose_run(*overrides))
    assert (identity.config_id, identity.config_hash, str(identity.subdir)) == (cid, chash, subdir)


def _flat_layout_config(noise: str, wrappers: str) -> dict:
    return {
        "algo": {
            "_target_": "lit_sb3.TD3",
            "action_noise": {"_target_": f"{noise}.normal", "_partial_": True, "std": 0.1},
        },
        "env": {"package": wrappers, "wrappers": [{"_target_": f"{wrappers}.FrameSkip", "skip": 2}]},
        "seed": 3,
        "sweep": "x",
    }


def test_ids_hash_the_names_as_written():
    # the ids of the flat layout's runs (pinned on its last commit) are those of the same names now, which are real
    assert config_id(_flat_layout_config("lit_bench.noise", "lit_bench.wrappers")) == "2721ec3704"
    assert config_hash(_flat_layout_config("lit_bench.noise", "lit_bench.wrappers")) == "65cbd9aa43bfbf33"
    # no spelling is translated any more: another module path is another config
    assert config_id(_flat_layout_config("lit_bench.config.noise", "lit_bench.config.wrappers")) != "2721ec3704"
    made = instantiate({"_target_": "lit_bench.noise.normal", "_partial_": True, "std": 0.1})(n_actions=2)
    assert isinstance(made, NormalActionNoise)


def test_no_old_module_name_imports():
    for old in ("lit_bench.report", "lit_bench.regress", "lit_bench.config.noise", "lit_bench.sweep"):
        assert importlib.util.find_spec(old) is None, old


def _old_run(root: Path) -> Path:
    """A run directory as the layered layout wrote it: its config.yaml names lit_bench.config.noise, its summary's
    hash was computed over lit_bench.noise (the spelling ids were hashed over then)."""
    cfg = compose_run("algo=td3", "env=Pendulum")
    config, identity = resolved(cfg), identify(cfg)
    run = root / "s" / identity.subdir
    run.mkdir(parents=True)
    text = yaml.safe_dump(config, sort_keys=False)
    assert "lit_bench.noise.normal" in text
    (run / fmt.CONFIG).write_text(text.replace("lit_bench.noise.", "lit_bench.config.noise."))
    summary = {"format": fmt.FORMAT, "status": "completed", "config_hash": identity.config_hash}
    (run / fmt.SUMMARY).write_text(json.dumps(summary))
    return run


def test_migrate_rewrites_old_names_once_and_says_each_change(tmp_path, capsys):
    run = _old_run(tmp_path)
    original = (run / fmt.CONFIG).read_text()
    assert migrate.main([str(tmp_path), "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (
        f"{run / fmt.CONFIG}: algo.action_noise._target_: would change lit_bench.config.noise.normal -> "
        f"lit_bench.noise.normal"
    )
    assert out[1:] == ["1 run directories: 1 to migrate, 0 up to date, 0 not"]
    assert (run / fmt.CONFIG).read_text() == original  # a dry run changes nothing

    assert migrate.main([str(tmp_path)]) == 0
    assert "changed lit_bench.config.noise.normal -> lit_bench.noise.normal" in capsys.readouterr().out
    config = yaml.safe_load((run / fmt.CONFIG).read_text())
    assert config["algo"]["action_noise"]["_target_"] == "lit_bench.noise.normal"
    assert config_hash(config) == json.loads((run / fmt.SUMMARY).read_text())["config_hash"]
    assert sorted(p.name for p in run.iterdir()) == [fmt.CONFIG, fmt.SUMMARY]  # no temporary file left

    assert migrate.main([str(run)]) == 0  # a run directory itself: nothing left to do
    assert capsys.readouterr().out == "1 run directories: 0 migrated, 1 up to date, 0 not\n"


def test_migrate_leaves_a_config_that_would_not_hash_as_recorded(tmp_path, capsys):
    run = _old_run(tmp_path)
    summary = json.loads((run / fmt.SUMMARY).read_text())
    (run / fmt.SUMMARY).write_text(json.dumps({**summary, "config_hash": "0" * 16}))
    original = (run / fmt.CONFIG).read_text()
    assert migrate.main([str(tmp_path)]) == 1
    line, last = capsys.readouterr().out.splitlines()
    assert line.endswith("not the config_hash 0000000000000000 of summary.json; left unchanged")
    assert last == "1 run directories: 0 migrated, 0 up to date, 1 not"
    assert (run / fmt.CONFIG).read_text() == original


def test_migrate_leaves_a_run_being_written(tmp_path, capsys):
    run = _old_run(tmp_path)
    original = (run / fmt.CONFIG).read_text()
    with open(run / fmt.LOCK, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert migrate.main([str(tmp_path)]) == 1
    assert "being written by a running run; left unchanged" in capsys.readouterr().out
    assert (run / fmt.CONFIG).read_text() == original


@pytest.mark.parametrize("where", ["missing", "file", "empty"])
def test_migrate_refuses_bad_input_in_one_line(tmp_path, where):
    target = tmp_path / where
    if where == "file":
        target.write_text("")
    elif where == "empty":
        target.mkdir()
    with pytest.raises(SystemExit) as refused:
        migrate.main([str(target)])
    message = str(refused.value.code)
    assert message.startswith("lit-bench migrate: ") and "\n" not in message
    assert ("holds no run directory" if where == "empty" else "is not a directory") in message


@pytest.mark.parametrize("tool", bench.TOOLS)
@pytest.mark.filterwarnings("ignore:'lit_bench.cli.:RuntimeWarning")  # runpy, in a process that imported it already
def test_each_tool_runs_as_lit_bench_tool_and_as_its_module(tool, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["lit-bench", tool, "--help"])
    with pytest.raises(SystemExit) as exited:
        bench.main()
    assert exited.value.code == 0 and capsys.readouterr().out.startswith(f"usage: lit-bench {tool}")
    monkeypatch.setattr(sys, "argv", [f"lit_bench.cli.{tool}", "--help"])
    with pytest.raises(SystemExit) as exited:
        runpy.run_module(f"lit_bench.cli.{tool}", run_name="__main__", alter_sys=True)
    assert exited.value.code == 0 and capsys.readouterr().out.startswith(f"usage: lit-bench {tool}")

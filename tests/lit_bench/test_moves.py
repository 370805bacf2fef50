"""The layered layout keeps what the flat one promised: old config names resolve, ids and commands are unchanged."""

import runpy
import sys

import pytest
from hydra.utils import instantiate
from stable_baselines3.common.noise import NormalActionNoise

from lit_bench.config import noise
from lit_bench.config.identity import config_hash, config_id
from lit_bench.store.format import MOVED


def _config(noise: str, wrappers: str) -> dict:
    return {
        "algo": {
            "_target_": "lit_sb3.TD3",
            "action_noise": {"_target_": f"{noise}.normal", "_partial_": True, "std": 0.1},
        },
        "env": {"package": wrappers, "wrappers": [{"_target_": f"{wrappers}.FrameSkip", "skip": 2}]},
        "seed": 3,
        "sweep": "x",
    }


def test_an_old_run_directory_names_resolve_to_the_moved_modules():
    import lit_bench.noise

    assert lit_bench.noise is noise  # one module object, not a second copy
    made = instantiate({"_target_": "lit_bench.noise.normal", "_partial_": True, "std": 0.1})(n_actions=2)
    assert isinstance(made, NormalActionNoise)
    for old, new in MOVED.items():
        assert __import__(old, fromlist=["_"]) is sys.modules[new]


def test_config_ids_are_those_of_the_flat_layout():
    # Pinned on the last commit before the move (c0ad0f1): a config keeps its id, hash and directory across it.
    for names in (("lit_bench.noise", "lit_bench.wrappers"), ("lit_bench.config.noise", "lit_bench.config.wrappers")):
        assert config_id(_config(*names)) == "2721ec3704"
        assert config_hash(_config(*names)) == "65cbd9aa43bfbf33"


@pytest.mark.parametrize("tool", ["report", "regress", "enjoy", "coverage", "quickstart"])
def test_the_documented_commands_run_the_cli_modules(tool, monkeypatch, capsys):
    # What ``python -m lit_bench.<tool> --help`` does (runpy), in this process.
    monkeypatch.setattr(sys, "argv", [f"lit_bench.{tool}", "--help"])
    with pytest.raises(SystemExit) as exited:
        runpy.run_module(f"lit_bench.{tool}", run_name="__main__", alter_sys=True)
    assert exited.value.code == 0 and capsys.readouterr().out.startswith("usage:")

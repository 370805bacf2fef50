"""benchmarks/random_scores.py: envs made by a ``make:`` factory, masked envs played with valid actions, ``--envs``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("random_scores", ROOT / "benchmarks" / "random_scores.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_masked_factory_env_is_played_with_its_valid_actions():
    script = _script()
    groups = script.env_groups()
    assert groups["CartPole"][1:] == ("CartPole-v1", {}, [], False)
    group, target, kwargs, packages, factory = groups["InvalidActionDiscrete"]
    assert group == "classic"
    assert factory and target == "sb3_contrib.common.envs.InvalidActionEnvDiscrete"
    assert kwargs == {"dim": 20, "n_invalid_actions": 10}
    returns = script.random_returns(target, kwargs, 30, 0, packages, factory)
    # 100 steps, reward 1 when the action repeats the state: 10 valid actions give ~10 an episode, all 20 ~5; and no
    # episode near 50, as when the policy's draws repeated the action space's (seeded the same way) state draws
    assert len(returns) == 30 and 8 < returns.mean() < 12 and returns.max() < 30
    assert (script.random_returns(target, kwargs, 30, 0, packages, factory) == returns).all()  # seeded


def test_an_unknown_env_is_refused_in_one_line(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(sys, "argv", ["random_scores.py", "--envs", "Nope", "--out", str(tmp_path / "r.csv")])
    with pytest.raises(SystemExit):
        _script().main()
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--envs: unknown Nope; valid: " in error and "InvalidActionDiscrete" in error
    assert not (tmp_path / "r.csv").exists()

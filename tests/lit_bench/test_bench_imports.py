"""A run's start-up pays only for what it uses: a joblib sweep's parent process (which only launches and reports)
imports no ML stack, a run imports the algorithm it trains and not the other thirteen, and ``lit_sb3``'s lazy
exports still give every public name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import lit_sb3

pytestmark = pytest.mark.harness

REPO = Path(__file__).resolve().parents[2]

# One fresh interpreter, three stages: what each has imported, as JSON.
PROBE = """
import json, sys
def loaded(names):
    return sorted(n for n in names if n in sys.modules)
def algorithms():
    return sorted({m.split(".")[2] for m in sys.modules if m.startswith("lit_sb3.algorithms.") and m.count(".") >= 2})
HEAVY = ["torch", "lightning", "stable_baselines3", "sb3_contrib", "gymnasium", "pandas", "matplotlib", "optuna",
         "lit_sb3", "lit_bench.run.train"]
UNUSED = ["optuna", "lit_bench.control.hpo_results", "lit_bench.cli.report",
          "lit_bench.analysis.plot", "pandas", "lit_bench.cli.regress", "imageio", "moviepy", "wandb", "mujoco",
          "ale_py"]
import run, lit_bench.control.sweep  # the sweep's parent: run.py's module level and conf/config.yaml's Hydra callbacks
parent = loaded(HEAVY)
from lit_bench.config.trust import live_run_targets
live_run_targets(["algo=ppo", "env=CartPole"])  # the parent's trust check reads lit_sb3's allow-list, not its ML stack
trusting = loaded([name for name in HEAVY if name != "lit_sb3"])
import lit_bench.run.train
train = {"unused": loaded(UNUSED), "algorithms": algorithms()}
from lit_sb3 import PPO
print(json.dumps({"parent": parent, "trusting": trusting, "train": train, "ppo": algorithms()}))
"""


def test_sweep_parent_and_run_import_only_what_they_use() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found["parent"] == [], f"a sweep's parent process imports {found['parent']}"
    assert found["trusting"] == [], f"a sweep's parent process's trust check imports {found['trusting']}"
    assert found["train"] == {"unused": [], "algorithms": []}
    assert found["ppo"] == ["ppo"]


def test_every_public_name_imports_from_the_package() -> None:
    namespace: dict[str, object] = {}
    exec("from lit_sb3 import *", namespace)
    for name in lit_sb3.__all__:
        value = getattr(lit_sb3, name)
        assert namespace[name] is value
        if isinstance(value, type) or callable(value):
            module = __import__(value.__module__, fromlist=["_"])
            assert getattr(module, name) is value  # the object of its home module, not a copy
    assert set(lit_sb3.__all__) <= set(dir(lit_sb3))
    with pytest.raises(AttributeError, match="no attribute 'PPO2'"):
        _ = lit_sb3.PPO2

"""``algo.<key>=<value>`` in a sweep over algorithms: applied to every swept algorithm that has the key, refused in
one line naming the one that has not (lit_bench.config.algo_overrides)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from lit_bench.config.algo_overrides import OverrideError, rewrite
from tests.lit_bench.helpers import run_py

pytestmark = pytest.mark.harness


def test_a_key_every_swept_algorithm_has_is_set_in_each_job():
    args = ["-m", "algo=sac,td3", "env=HalfCheetah", "seed=0,1,2", "budget=2000", "algo.learning_starts=500"]
    assert rewrite(args) == [*args[:-1], "++algo.learning_starts=500"]


def test_a_key_one_swept_algorithm_lacks_is_refused_naming_it():
    with pytest.raises(
        OverrideError,
        match=r"^algo.learning_starts=500: algo=ppo has no hyperparameter "
        r"learning_starts \(only sac of the sweep has it\)",
    ):
        rewrite(["-m", "algo=sac,ppo", "algo.learning_starts=500"])
    with pytest.raises(
        OverrideError,
        match=r"algo=a2c, algo=ars, .*algo=trpo have no hyperparameter buffer_size "
        r"\(only crossq, .*, tqc of",
    ):
        rewrite(["--multirun", "algo=glob(*)", "algo.buffer_size=100"])


@pytest.mark.parametrize(
    "args",
    [
        ["algo=sac", "algo.learning_starts=500"],  # a single run: Hydra's own composition
        ["-m", "algo=sac", "algo.learning_starts=500"],  # one algorithm: the base config is its own
        ["-m", "algo=sac,td3", "++algo.learning_starts=500"],  # the user's own prefix is kept
        ["-m", "algo=sac,td3", "seed=0,1"],  # nothing per algorithm
        ["-m", "algo=sac,nosuchalgo", "algo.learning_starts=500"],  # Hydra names the unknown option itself
    ],
)
def test_other_command_lines_are_left_alone(args):
    assert rewrite(args) == args


def test_run_py_sweep_sets_the_key_for_each_algorithm(tmp_path: Path):
    done = run_py(
        "-m",
        "algo=dqn,qrdqn",
        "env=CartPole",
        "budget=200",
        "algo.learning_starts=50",
        "hydra/launcher=basic",
        f"out_dir={tmp_path}",
        "eval.episodes=1",
    )
    assert done.returncode == 0, done.stderr[-2000:]
    configs = sorted(tmp_path.rglob("config.yaml"))
    assert {c.relative_to(tmp_path).parts[1] for c in configs} == {"dqn", "qrdqn"}
    assert all(yaml.safe_load(c.read_text())["algo"]["learning_starts"] == 50 for c in configs)


def test_run_py_refuses_in_one_line(tmp_path: Path):
    done = run_py(
        "-m",
        "algo=dqn,ppo",
        "env=CartPole",
        "budget=200",
        "algo.learning_starts=50",
        "hydra/launcher=basic",
        f"out_dir={tmp_path}",
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "algo.learning_starts=50: algo=ppo has no hyperparameter learning_starts (only dqn of the sweep has it); "
        "sweep the algorithms that have it separately"
    ]
    assert not any(tmp_path.iterdir())

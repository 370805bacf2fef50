"""The harness on Hydra 1.3 and 1.4 (``lit_bench.config.hydra_versions``): none of Hydra's or OmegaConf's
deprecation warnings about the harness's own calls. On Hydra 1.3 they cannot appear; ``make test-compat``'s hydra14
environment runs this file on Hydra 1.4, where each would (version_base given, targets instantiated without an
execution whitelist, plugins found only by the namespace scan, the old resolver API)."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from lit_bench.config.trust import GETTERS, live_run_targets
from tests.lit_bench.helpers import CHILD_ENV, patience

HYDRA_DEPRECATIONS = (
    "execution_whitelist",
    "version_base",
    "could not discover plugins",
    "register_new_resolver",
    "Error loading Hydra plugin",
)
# the installed console script: its sys.path does not hold the clone, so Hydra finds the harness's plugins only as
# installed (on Hydra 1.4: through their entry points)
LIT_BENCH = Path(sys.executable).parent / "lit-bench"


def _lit_bench(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    if not LIT_BENCH.is_file():
        pytest.skip("lit-bench is not installed in this environment")
    return subprocess.run(
        [str(LIT_BENCH), *args, f"out_dir={tmp_path / 'runs'}"],
        cwd=tmp_path,
        env={**CHILD_ENV, "PYTHONWARNINGS": "default"},
        capture_output=True,
        text=True,
        timeout=patience(300),
    )


def _deprecations(done: subprocess.CompletedProcess) -> list[str]:
    return [line for line in (done.stdout + done.stderr).splitlines() if any(w in line for w in HYDRA_DEPRECATIONS)]


@pytest.mark.harness
def test_a_joblib_sweep_warns_of_no_hydra_deprecation(tmp_path: Path) -> None:
    done = _lit_bench(tmp_path, "-m", "algo=ppo", "env=CartPole", "budget=256", "seed=0,1")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "2 completed" in done.stdout
    assert _deprecations(done) == []


@pytest.mark.harness
def test_an_optuna_study_warns_of_no_hydra_deprecation(tmp_path: Path) -> None:
    pytest.importorskip("optuna")
    done = _lit_bench(
        tmp_path, "-m", "hydra/sweeper=tpe_ppo", "algo=ppo", "env=CartPole", "budget=256", "hydra.sweeper.n_trials=1"
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "1 completed" in done.stdout
    assert _deprecations(done) == []


def test_the_whitelist_holds_the_config_groups_targets_and_the_command_lines() -> None:
    names = live_run_targets(["algo=ppo", "+algo.policy_kwargs.activation_fn.path=torch.nn.ELU", "x._target_=a.B"])
    assert "lit_bench.control.sweep.SweepReport" in names  # a Hydra callback of conf/
    assert "stable_baselines3.common.utils.LinearSchedule" in names  # an algo config's schedule
    assert {"torch.nn.ELU", "a.B", *GETTERS} <= set(names)  # the command line's targets: the user's own word


@pytest.mark.harness
def test_enjoy_builds_a_made_env_without_hydra_deprecations(tmp_path: Path) -> None:
    from lit_bench.cli.enjoy import enjoy

    done = _lit_bench(tmp_path, "algo=dqn", "env=InvalidActionDiscrete", "budget=300", "algo.learning_starts=100")
    assert done.returncode == 0, done.stderr[-2000:]
    (run_dir,) = (tmp_path / "runs").rglob("seed_0")
    with warnings.catch_warnings(record=True) as caught:  # (env.make is a _target_ Hydra instantiates)
        warnings.simplefilter("always")
        (episode,) = enjoy(run_dir, episodes=1)
    assert episode.length > 0
    assert [str(w.message) for w in caught if any(d in str(w.message) for d in HYDRA_DEPRECATIONS)] == []

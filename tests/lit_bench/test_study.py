"""Issue #36: an Optuna study's storage is input, not a command line. A trial read from it (a journal in the sweep
directory, or a shared database others can write) runs only with params of the study's own search space: never an
interpolation, never a key that places runs (out_dir, sweep, force, backend, hydra.*); anything else is refused in one
line naming the trial and the param, before any run starts. Also: n_trials below 1 is refused."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from lit_bench.config.checks import ConfigError
from tests.lit_bench.helpers import TINY, run_py

optuna = pytest.importorskip("optuna", minversion="4.0", reason="needs `pip install -e .[hpo]` (current Optuna)")
from optuna.distributions import CategoricalDistribution, FloatDistribution  # noqa: E402
from optuna.storages.journal import JournalFileBackend  # noqa: E402
from optuna.trial import TrialState, create_trial  # noqa: E402

from lit_bench.control import study as studies  # noqa: E402

pytestmark = pytest.mark.harness
LR = "algo.learning_rate=tag(log, interval(1e-4, 1e-2))"


def _study_with_running_trial(out: Path, params: dict[str, Any], seeds: Any = (0,)) -> None:
    """A killed sweep's journal, edited by someone else: one RUNNING trial holding ``params``."""
    (out / "hpo").mkdir(parents=True)
    storage = optuna.storages.JournalStorage(JournalFileBackend(str(out / "hpo" / "optuna.journal")))
    study = optuna.create_study(study_name="s", storage=storage, direction="maximize")
    distributions = {k: CategoricalDistribution([v]) for k, v in params.items()}
    study.add_trial(
        create_trial(
            state=TrialState.RUNNING, params=params, distributions=distributions, user_attrs={"seeds": list(seeds)}
        )
    )


def _sweep(out: Path, *args: str) -> subprocess.CompletedProcess:
    return run_py(
        "-m",
        *TINY,
        "budget=256",
        f"out_dir={out}",
        "sweep=hpo",
        "hydra/launcher=basic",
        "hydra/sweeper=tpe",
        "hydra.sweeper.study_name=s",
        LR,
        "hydra.sweeper.n_trials=1",
        *args,
        timeout=600,
    )


def _refused(result: subprocess.CompletedProcess, *said: str) -> str:
    output = result.stdout + result.stderr
    assert result.returncode == 1 and "Traceback" not in output, output
    [line] = [line for line in output.splitlines() if line.startswith("Error:")]
    assert all(part in line for part in said), line
    return line


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        (
            "algo.learning_rate",
            '${oc.decode:"{_target_: shutil.copyfile, src: <victim>, dst: <dst>}"}',
            "is an interpolation",
        ),
        ("out_dir", "<elsewhere>", "is not a hyperparameter"),
        ("force", True, "is not a hyperparameter"),
        ("hydra.run.dir", "<elsewhere>", "is not a hyperparameter"),
        ("algo.gamma", 0.5, "is not in the search space"),
        ("algo.learning_rate", 0.5, "is not a value of the search space's"),
        ("algo.learning_rate", "0.001", "is not a value of the search space's"),
    ],
)
def test_a_trial_from_the_study_storage_is_checked_before_it_runs(
    tmp_path: Path, key: str, value: Any, said: str
) -> None:
    victim, dst, elsewhere = tmp_path / "victim.txt", tmp_path / "copied.txt", tmp_path / "elsewhere"
    victim.write_text("secret")
    if isinstance(value, str):
        value = value.replace("<victim>", str(victim)).replace("<dst>", str(dst)).replace("<elsewhere>", str(elsewhere))
    out = tmp_path / "out"
    _study_with_running_trial(out, {key: value})
    line = _refused(_sweep(out), "study trial 0: param", key, said)
    assert "\n" not in line
    assert victim.read_text() == "secret" and not dst.exists() and not elsewhere.exists()
    assert not list(out.rglob("summary.json")), "no run may start"


def test_a_trial_whose_seeds_are_not_integers_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _study_with_running_trial(out, {"algo.learning_rate": 0.001}, seeds=["0,1", 1])
    _refused(_sweep(out), "study trial 0: user attr seeds=")
    assert not list(out.rglob("summary.json"))


def test_a_placement_key_cannot_be_searched() -> None:
    for key in ("out_dir", "sweep", "force", "backend", "hydra.job.chdir"):
        with pytest.raises(ConfigError, match=rf"{key} is not a hyperparameter"):
            studies.search_space({key: "choice(a, b)"}, [])
        with pytest.raises(ConfigError, match=rf"{key} is not a hyperparameter"):
            studies.search_space(None, [f"{key}=choice(a,b)"])


def test_trial_values_are_checked_against_their_distribution() -> None:
    space = {
        "a": FloatDistribution(0.1, 1.0, step=0.1),
        "b": CategoricalDistribution([1, "x", None]),
    }
    ok = create_trial(state=TrialState.RUNNING, params={"a": 0.3, "b": "x"}, distributions=space)
    assert studies.checked_trial(ok, space, [0]) == [0]
    for params in ({"a": 0.35}, {"a": True}, {"b": 1.0}, {"b": "y"}, {"a": 2.0}):
        distributions = {k: CategoricalDistribution([v]) for k, v in params.items()}
        trial = create_trial(state=TrialState.RUNNING, params=params, distributions=distributions)
        with pytest.raises(ConfigError, match=r"study trial -?\d+: param"):
            studies.checked_trial(trial, space, [0])


@pytest.mark.parametrize("n_trials", [0, -3])
def test_n_trials_below_one_is_refused(tmp_path: Path, n_trials: int) -> None:
    result = run_py(
        "-m", *TINY, f"out_dir={tmp_path}", "sweep=hpo", "hydra/sweeper=tpe", LR, f"hydra.sweeper.n_trials={n_trials}"
    )
    _refused(result, f"hydra.sweeper.n_trials={n_trials}")
    assert not list(tmp_path.rglob("summary.json"))

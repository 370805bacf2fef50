"""Logged metrics mean what SB3's mean: with SB3's optimizer (``sb3_parity``), the same seed and the same
hyperparameters, every ``train/*``, ``rollout/*`` and ``time/*`` value that lit_sb3 dumps equals SB3's /
sb3-contrib's at the same env step (to float rounding), with the same names at the same dumps.

The runs are the whole-run parity cases, long enough for several dumps; off-policy ones dump after every episode
(``log_interval=1``) and A2C every 5 updates, so that a value averaged over the wrong span (several updates where
SB3 logs the last one, all epochs where SB3 logs the last one) shows. Wall-clock entries (``time/fps``,
``time/time_elapsed``) are compared by name only.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from typing import Any

import pytest
import sb3_contrib
import stable_baselines3 as sb3
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.logger import KVWriter, Logger

import lit_sb3
from tests.lit_sb3.algorithms.test_whole_run_parity import CASES, SEED, Case, _per_parameter_kl_grad

pytestmark = pytest.mark.parity

WALL_CLOCK = {"time/fps", "time/time_elapsed"}
# off-policy: at least a few 200-step Pendulum episodes per env; A2C: a dump every 5 of its 5-step updates
LONGER = {"SAC": 500, "TD3": 450, "DDPG": 450, "TQC": 450, "CrossQ": 450, "A2C": 500}
LOG_INTERVAL = {"A2C": 5, "DQN": 1, "QRDQN": 1, "SAC": 1, "TD3": 1, "DDPG": 1, "TQC": 1, "CrossQ": 1}


class Dumps(KVWriter):
    """Every dump as (env step, {name: value})."""

    def __init__(self) -> None:
        self.rows: list[tuple[int, dict[str, Any]]] = []

    def write(self, key_values: dict[str, Any], key_excluded: dict[str, tuple[str, ...]], step: int = 0) -> None:
        self.rows.append((int(step), {k: float(v) for k, v in key_values.items()}))

    def close(self) -> None:
        pass


def _dumps(lib: str, algo: str, case: Case) -> list[tuple[int, dict[str, Any]]]:
    env = make_vec_env(case.env, n_envs=case.n_envs, seed=SEED)
    kwargs = {**copy.deepcopy(case.kwargs), **case.fresh(lib)}
    dumps = Dumps()
    interval = LOG_INTERVAL.get(algo)
    if lib == "lit":
        kwargs["policy_kwargs"] = lit_sb3.sb3_parity(kwargs.get("policy_kwargs"))
        model = getattr(lit_sb3, algo)(case.policy, seed=SEED, **kwargs)
        model.sb3_logger.output_formats.append(dumps)
        model.learn(case.steps, env=env, **({"log_every_n_steps": interval} if interval else {}))
    else:
        reference = getattr(sb3, algo, None) or getattr(sb3_contrib, algo)
        model = reference(case.policy, env, seed=SEED, **kwargs)
        model.set_logger(Logger(folder=None, output_formats=[dumps]))
        model.learn(case.steps, **({"log_interval": interval} if interval else {}))
    return dumps.rows


def _differences(ours: list[tuple[int, dict[str, Any]]], theirs: list[tuple[int, dict[str, Any]]]) -> list[str]:
    found = []
    if [step for step, _ in ours] != [step for step, _ in theirs]:
        return [f"dump steps: ours {[s for s, _ in ours]}, SB3's {[s for s, _ in theirs]}"]
    for (step, mine), (_, reference) in zip(ours, theirs):
        if mine.keys() != reference.keys():
            found.append(
                f"step {step}: only ours {sorted(mine.keys() - reference.keys())}, "
                f"only SB3's {sorted(reference.keys() - mine.keys())}"
            )
        for key in sorted((mine.keys() & reference.keys()) - WALL_CLOCK):
            if not math.isclose(mine[key], reference[key], rel_tol=1e-5, abs_tol=1e-7):
                found.append(f"step {step}: {key} ours {mine[key]!r}, SB3's {reference[key]!r}")
    return found


@pytest.mark.parametrize("algo", sorted(CASES))
def test_logged_metrics_are_sb3s(algo, monkeypatch):
    case = CASES[algo]
    if algo in LONGER:
        case = dataclasses.replace(case, steps=LONGER[algo])
    if algo == "TRPO":  # sb3-contrib's KL gradient, as in the whole-run parity test: bit-identical runs
        monkeypatch.setattr(lit_sb3.TRPO, "_actor_params_and_kl_grad", _per_parameter_kl_grad)
    ours, theirs = _dumps("lit", algo, case), _dumps("sb3", algo, case)
    assert theirs, "SB3 dumped nothing: the case is too short to compare"
    differences = _differences(ours, theirs)
    assert not differences, "\n".join(differences)

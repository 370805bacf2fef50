"""The number a run gives back to a Hydra sweeper (e.g. Optuna): its score, from ``eval.csv``."""

from __future__ import annotations

from typing import Any

from lit_bench.config.checks import ConfigError
from lit_bench.store.scores import iqm

METRICS = ("final", "iqm_last")


def check_objective(objective: Any) -> None:
    if objective.metric not in METRICS:
        raise ConfigError(f"objective.metric={objective.metric}: choose one of {', '.join(METRICS)}")
    if objective.metric == "iqm_last" and int(objective.last) < 1:
        raise ConfigError(f"objective.last={objective.last}: must be >= 1 evaluations")


def score(rows: list[dict[str, Any]], objective: Any) -> float:
    """``final``: the last evaluation's mean return (taken at the end of the budget); ``iqm_last``: the IQM of the
    last ``objective.last`` evaluations' mean returns. NaN when the run has no evaluation."""
    returns = [float(row["mean_return"]) for row in rows]
    if not returns:
        return float("nan")
    if objective.metric == "final":
        return returns[-1]
    return iqm(returns[-int(objective.last) :])

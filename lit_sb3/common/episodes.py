"""Whole episodes of an algorithm's policy, for the predict stage (``BaseAlgorithm.predict_step``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
from stable_baselines3.common.vec_env import VecEnv

#: what ``evaluate_policy`` calls at each step: ``callback(locals(), globals())``
StepCallback = Callable[[dict[str, Any], dict[str, Any]], None]


class EpisodeEvaluator(Protocol):
    """What :func:`run_episodes` needs of an algorithm: SB3's ``evaluate_policy`` over its policy."""

    def evaluate_episodes(
        self, env: VecEnv, n_episodes: int, deterministic: bool, callback: StepCallback | None = None
    ) -> tuple[list[float], list[int]]: ...


class TrajectoryRecorder:
    """An ``evaluate_policy`` callback that keeps each env's observations and actions until its episode ends.

    Episodes end where ``evaluate_policy`` counts them (``Monitor``'s episode info when the env is monitored), so the
    recorded trajectories line up, in order, with the returns and lengths it reports.
    """

    def __init__(self) -> None:
        self.current: dict[int, tuple[list[Any], list[Any]]] = {}
        self.finished: list[tuple[Any, np.ndarray]] = []

    def __call__(self, locals_: dict[str, Any], globals_: dict[str, Any]) -> None:
        i, observations = locals_["i"], locals_["observations"]
        obs_list, action_list = self.current.setdefault(i, ([], []))
        is_dict = isinstance(observations, dict)
        obs_list.append({k: v[i] for k, v in observations.items()} if is_dict else observations[i])
        action_list.append(locals_["actions"][i])
        if locals_["done"] and ("episode" in locals_["info"] or not locals_["is_monitor_wrapped"]):
            self.finished.append((_stack(obs_list), np.stack(action_list)))
            del self.current[i]


def _stack(observations: list[Any]) -> Any:
    if isinstance(observations[0], dict):
        return {k: np.stack([o[k] for o in observations]) for k in observations[0]}
    return np.stack(observations)


def run_episodes(
    algorithm: EpisodeEvaluator, env: VecEnv, n_episodes: int, deterministic: bool, trajectories: bool
) -> list[dict[str, Any]]:
    """``n_episodes`` episodes of ``algorithm``'s policy on ``env``: one dict per episode with its ``return`` and
    ``length``, plus its ``observations`` and ``actions`` (stacked, one row per step) when ``trajectories``."""
    recorder = TrajectoryRecorder() if trajectories else None
    returns, lengths = algorithm.evaluate_episodes(env, n_episodes, deterministic, callback=recorder)
    episodes: list[dict[str, Any]] = [{"return": float(r), "length": int(n)} for r, n in zip(returns, lengths)]
    if recorder is not None:
        for episode, (observations, actions) in zip(episodes, recorder.finished):
            episode.update(observations=observations, actions=actions)
    return episodes

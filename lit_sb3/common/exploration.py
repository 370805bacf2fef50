"""Epsilon-greedy exploration and the periodic target-network refresh of the Q-learning algorithms (DQN, QR-DQN).

Plain functions over the algorithm, which keeps ``exploration_rate``, ``exploration_schedule``, ``_n_calls``,
``target_update_interval`` and ``tau`` as SB3 names them, and updates its target network with
``OffPolicyAlgorithm._update_target_networks``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def validate_q_learning_args(algo: Any) -> None:
    """Refuse a bad target-update interval or exploration schedule before anything is built."""
    checks = [
        ("target_update_interval", algo.target_update_interval >= 1, ">= 1"),
        ("exploration_fraction", 0.0 < algo.exploration_fraction <= 1.0, "in (0, 1]"),
        ("exploration_initial_eps", 0.0 <= algo.exploration_initial_eps <= 1.0, "in [0, 1]"),
        ("exploration_final_eps", 0.0 <= algo.exploration_final_eps <= 1.0, "in [0, 1]"),
    ]
    for name, ok, rule in checks:
        if not ok:
            raise ValueError(f"{name}: must be {rule}, got {getattr(algo, name)}")


def after_env_step(algo: Any) -> None:
    """After every vector env step: refresh the target network (every ``target_update_interval`` env steps, counted
    over all envs) and move epsilon along its schedule."""
    algo._n_calls += 1
    if algo._n_calls % max(algo.target_update_interval // algo.n_envs, 1) == 0:
        algo._update_target_networks()
    algo.exploration_rate = algo.exploration_schedule(algo._current_progress_remaining)


def epsilon_greedy_predict(
    algo: Any,
    observation: np.ndarray | dict[str, np.ndarray],
    deterministic: bool,
    greedy: Callable[[], tuple[np.ndarray, Any]],
    state: Any,
) -> tuple[np.ndarray, Any]:
    """``greedy()``'s answer, or uniformly random actions with probability ``exploration_rate`` (never when
    deterministic); one draw for the whole batch, as SB3 does."""
    if deterministic or np.random.rand() >= algo.exploration_rate:
        return greedy()
    if algo.policy.is_vectorized_observation(observation):
        first = next(iter(observation.values())) if isinstance(observation, dict) else observation
        return np.array([algo.action_space.sample() for _ in range(len(first))]), state
    return np.array(algo.action_space.sample()), state


def epsilon_greedy_actions(algo: Any, n_envs: int, greedy: Callable[[int], np.ndarray]) -> np.ndarray:
    """Collection actions for one vector step: random for every env with probability ``exploration_rate``."""
    if np.random.rand() < algo.exploration_rate:
        return np.array([algo.action_space.sample() for _ in range(n_envs)])
    return greedy(n_envs)


def exploration_state(algo: Any) -> dict[str, Any]:
    """What a checkpoint must keep to resume the schedule and the target refresh where they were."""
    return {"n_calls": algo._n_calls, "exploration_rate": algo.exploration_rate}


def load_exploration_state(algo: Any, state: dict[str, Any]) -> None:
    algo._n_calls = int(state.get("n_calls", 0))
    algo.exploration_rate = float(state.get("exploration_rate", 0.0))

"""Epsilon-greedy exploration and the shared base of the Q-learning algorithms (DQN, QR-DQN)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from lightning.pytorch.utilities.types import OptimizerLRScheduler
from stable_baselines3.common.type_aliases import ReplayBufferSamples
from stable_baselines3.common.utils import LinearSchedule

from lit_sb3.common.off_policy import OffPolicyAlgorithm
from lit_sb3.common.persistence import CHECKPOINT, StateFormat
from lit_sb3.common.targets import TargetNetworks


class EpsilonGreedy:
    """The probability ``rate`` of a uniformly random action, moved along SB3's linear schedule of the progress
    remaining (from ``initial_eps`` to ``final_eps`` over the first ``fraction`` of the budget).

    :param initial_eps: probability at the start of training
    :param final_eps: probability once ``fraction`` of the budget is spent
    :param fraction: fraction of the training budget over which the probability decays
    """

    def __init__(self, initial_eps: float, final_eps: float, fraction: float) -> None:
        self.schedule = LinearSchedule(initial_eps, final_eps, fraction)
        self.rate = 0.0

    def update(self, progress_remaining: float) -> None:
        self.rate = self.schedule(progress_remaining)

    def explores(self) -> bool:
        """Act randomly this time? One draw from NumPy's global generator, as SB3 draws it."""
        return np.random.rand() < self.rate


class QLearningAlgorithm(OffPolicyAlgorithm):
    """DQN and QR-DQN: a Q-network fitted to bootstrapped targets of its target network, acting epsilon-greedily.

    The target network is refreshed every ``target_update_interval`` env steps (counted over all envs, SB3's
    ``_n_calls``); epsilon follows its schedule after every vector env step. Subclasses name their networks
    (:meth:`_q_networks`) and write the loss (:meth:`_loss`).
    """

    def __init__(
        self,
        *args: Any,
        target_update_interval: int,
        exploration_fraction: float,
        exploration_initial_eps: float,
        exploration_final_eps: float,
        max_grad_norm: float | None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, action_noise=None, **kwargs)
        self.target_update_interval = target_update_interval
        self.exploration_fraction = exploration_fraction
        self.exploration_initial_eps = exploration_initial_eps
        self.exploration_final_eps = exploration_final_eps
        self.max_grad_norm = max_grad_norm
        self.exploration = EpsilonGreedy(exploration_initial_eps, exploration_final_eps, exploration_fraction)
        self._n_calls = 0

    def _validate_hyperparameters(self) -> None:
        super()._validate_hyperparameters()
        checks = [
            ("target_update_interval", self.target_update_interval >= 1, ">= 1"),
            ("exploration_fraction", 0.0 < self.exploration_fraction <= 1.0, "in (0, 1]"),
            ("exploration_initial_eps", 0.0 <= self.exploration_initial_eps <= 1.0, "in [0, 1]"),
            ("exploration_final_eps", 0.0 <= self.exploration_final_eps <= 1.0, "in [0, 1]"),
            ("max_grad_norm", self.max_grad_norm is None or self.max_grad_norm > 0, "None or > 0"),
        ]
        for name, ok, rule in checks:
            if not ok:
                raise ValueError(f"{name}: must be {rule}, got {getattr(self, name)}")

    def _q_networks(self) -> tuple[torch.nn.Module, torch.nn.Module]:
        """(online, target) network."""
        raise NotImplementedError

    def _loss(self, data: ReplayBufferSamples, discounts: torch.Tensor | float) -> torch.Tensor:
        """The loss of one update on ``data`` (targets computed without gradients)."""
        raise NotImplementedError

    def _build_extra(self) -> None:
        self.target_networks = TargetNetworks(self._q_networks())

    @property
    def exploration_rate(self) -> float:
        """SB3's name of the current probability of a random action."""
        return self.exploration.rate

    @exploration_rate.setter
    def exploration_rate(self, rate: float) -> None:
        self.exploration.rate = rate

    @property
    def exploration_schedule(self) -> LinearSchedule:
        return self.exploration.schedule

    def configure_optimizers(self) -> OptimizerLRScheduler:
        """The Q-network optimizer."""
        return self.policy.optimizer

    def _on_step(self) -> None:
        """After every vector step: target network refresh (counted in env steps) and epsilon decay."""
        self._n_calls += 1
        if self._n_calls % max(self.target_update_interval // self.n_envs, 1) == 0:
            self.target_networks.update(self.tau)
        self.exploration.update(self._current_progress_remaining)

    def gradient_updates(self, gradient_steps: int, batch_size: int) -> None:
        """``gradient_steps`` updates of the loss on replay samples, gradients clipped to ``max_grad_norm``."""
        (optimizer,) = self._lightning_optimizers()
        for _ in range(gradient_steps):
            data = self.replay_buffer.sample(batch_size, env=self._vec_normalize_env)
            discounts = data.discounts if data.discounts is not None else self.gamma
            loss = self._loss(data, discounts)
            self._optimizer_step(optimizer, loss, max_grad_norm=self.max_grad_norm)
            self._track(loss=loss)
        self._n_updates += gradient_steps

    def predict(
        self,
        observation: np.ndarray | dict[str, np.ndarray],
        state: tuple[np.ndarray, ...] | None = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = False,
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...] | None]:
        """Epsilon-greedy: uniformly random actions with probability ``exploration_rate`` unless deterministic (one
        draw for the whole batch, as SB3 does)."""
        if deterministic or not self.exploration.explores():
            return super().predict(observation, state, episode_start, deterministic)
        if self.policy.is_vectorized_observation(observation):
            first = next(iter(observation.values())) if isinstance(observation, dict) else observation
            return self._random_actions(len(first)), state
        return np.array(self.action_space.sample()), state

    def _policy_actions(self, n_envs: int) -> np.ndarray:
        """Collection actions for one vector step: random for every env with probability ``exploration_rate``."""
        if self.exploration.explores():
            return self._random_actions(n_envs)
        return super()._policy_actions(n_envs)

    def _random_actions(self, n: int) -> np.ndarray:
        return np.array([self.action_space.sample() for _ in range(n)])

    def dump_logs(self) -> None:
        self.sb3_logger.record("rollout/exploration_rate", self.exploration_rate)
        super().dump_logs()

    def _extra_state(self, fmt: StateFormat = CHECKPOINT) -> dict[str, Any]:
        state = super()._extra_state(fmt)
        if fmt != CHECKPOINT:
            return state
        return {**state, "n_calls": self._n_calls, "exploration_rate": self.exploration_rate}

    def _load_extra_state(self, state: dict[str, Any], fmt: StateFormat = CHECKPOINT) -> None:
        super()._load_extra_state(state, fmt)
        if fmt != CHECKPOINT:
            return
        self._n_calls = int(state.get("n_calls", 0))
        self.exploration_rate = float(state.get("exploration_rate", 0.0))

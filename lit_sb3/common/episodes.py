"""Acting outside training: SB3's ``predict``, and whole episodes for the validate / test / predict stages."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.vec_env import VecEnv

from lit_sb3.common.utils import outside_autocast

if TYPE_CHECKING:
    import lightning as L

    from lit_sb3.common.parts import Part

    _Module = L.LightningModule  # the class after this mixin in BaseAlgorithm's bases
else:
    _Module = object

#: what ``evaluate_policy`` calls at each step: ``callback(locals(), globals())``
StepCallback = Callable[[dict[str, Any], dict[str, Any]], None]


class Acting(_Module):
    """``predict`` and the evaluation-stage hooks of :class:`BaseAlgorithm` (a mixin)."""

    # what it reads of the algorithm (set by BaseAlgorithm)
    policy: BasePolicy | None
    action_space: spaces.Space[Any] | None
    num_timesteps: int
    _parts: list[Part]

    def predict(
        self,
        observation: np.ndarray | dict[str, np.ndarray],
        state: tuple[np.ndarray, ...] | None = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = False,
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...] | None]:
        """SB3 semantics: single or batched observations; Box actions clipped (or unscaled when squashed).

        Unless ``deterministic``, uniformly random actions when a part explores (epsilon-greedy: one draw for the
        whole batch, as SB3's DQN draws it)."""
        if self.policy is None or self.action_space is None:  # both are set when the networks are built
            raise RuntimeError(f"{type(self).__name__}.predict: the networks are not built yet (fit, or pass env=)")
        if not deterministic and any(part.explores() for part in self._parts):
            if not self.policy.is_vectorized_observation(observation):
                return np.array(self.action_space.sample()), state
            first = next(iter(observation.values())) if isinstance(observation, dict) else observation
            return np.array([self.action_space.sample() for _ in range(len(first))]), state
        with outside_autocast(self.device):  # also called inside mixed-precision steps (evaluation, SB3 callbacks)
            return self.policy.predict(observation, state, episode_start, deterministic)

    def validation_step(self, batch: Any, batch_idx: int) -> dict[str, float]:
        """Evaluate the policy for ``batch`` episodes on the stage's env; logs ``eval/*`` at the env step."""
        stage = "test" if self.trainer.testing else "validate"
        datamodule = self.trainer.datamodule  # type: ignore[attr-defined]  # set by Lightning's data connector
        env = datamodule.get_env(stage) or datamodule.get_env("fit")
        n_episodes, deterministic = batch
        rewards, lengths = self.evaluate_episodes(env, n_episodes, deterministic)
        metrics = {
            "eval/mean_reward": float(np.mean(rewards)),
            "eval/std_reward": float(np.std(rewards)),
            "eval/mean_ep_length": float(np.mean(lengths)),
            "step": float(self.num_timesteps),  # Lightning uses a logged "step" as the loggers' x-axis
        }
        self.log_dict(metrics, batch_size=1)
        return metrics

    def evaluate_episodes(
        self, env: VecEnv, n_episodes: int, deterministic: bool, callback: StepCallback | None = None
    ) -> tuple[list[float], list[int]]:
        """Returns and lengths of ``n_episodes`` episodes of this policy on ``env`` (SB3's ``evaluate_policy``,
        which calls ``callback(locals(), globals())`` at each step)."""
        episodes = evaluate_policy(
            self,
            env,
            n_eval_episodes=n_episodes,
            deterministic=deterministic,
            return_episode_rewards=True,
            callback=callback,
        )
        return cast("tuple[list[float], list[int]]", episodes)  # per-episode lists with return_episode_rewards

    def test_step(self, batch: Any, batch_idx: int) -> dict[str, float]:
        return self.validation_step(batch, batch_idx)

    def predict_step(self, batch: Any, batch_idx: int) -> list[dict[str, Any]]:
        """``trainer.predict``: episodes on the predict env, one dict each (see :meth:`RLTrainer.predict`)."""
        n_episodes, deterministic, trajectories = batch
        datamodule = self.trainer.datamodule  # type: ignore[attr-defined]  # set by Lightning's data connector
        return run_episodes(self, datamodule.get_env("predict"), n_episodes, deterministic, trajectories)


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
    algorithm: Acting, env: VecEnv, n_episodes: int, deterministic: bool, trajectories: bool
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

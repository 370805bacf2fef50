"""``OffPolicyAlgorithm``: each training step collects ``train_freq`` env steps into a replay buffer, then updates."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.buffers import DictReplayBuffer, NStepReplayBuffer, ReplayBuffer
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.noise import ActionNoise, VectorizedActionNoise
from stable_baselines3.common.save_util import load_from_pkl, save_to_pkl
from stable_baselines3.common.type_aliases import GymEnv, RolloutReturn, TrainFreq, TrainFrequencyUnit
from stable_baselines3.common.utils import get_parameters_by_name, should_collect_more_steps, update_learning_rate
from stable_baselines3.common.vec_env import VecEnv, VecNormalize
from stable_baselines3.her.her_replay_buffer import HerReplayBuffer

from lit_sb3.common import resume
from lit_sb3.common.base import BaseAlgorithm
from lit_sb3.common.optim import soft_update
from lit_sb3.common.persistence import CHECKPOINT, StateFormat
from lit_sb3.common.utils import outside_autocast

_GOAL_KEYS = ("observation", "achieved_goal", "desired_goal")


class EnvSteps:
    """The training "dataloader" of an off-policy algorithm: an endless stream of ticks.

    Each tick is one ``training_step`` (collect ``train_freq`` env steps, then update); the algorithm stops the
    trainer itself when the env-step budget is spent or a callback asks to stop.
    """

    def __init__(self, algorithm: OffPolicyAlgorithm) -> None:
        self.algorithm = algorithm

    def __iter__(self) -> Iterator[int]:
        while True:
            yield self.algorithm.num_timesteps


def as_train_freq(train_freq: int | tuple[int, str] | list | TrainFreq) -> TrainFreq:
    """``4`` -> every 4 steps; ``(2, "episode")`` (a YAML list works too) -> every 2 episodes."""
    if isinstance(train_freq, (int, np.integer)) and not isinstance(train_freq, bool):
        frequency, unit = int(train_freq), "step"
    elif isinstance(train_freq, (tuple, list)) and len(train_freq) == 2:
        frequency, unit = train_freq
    else:
        raise ValueError(f"train_freq: expected an int or a (frequency, unit) pair, got {train_freq!r}")
    if isinstance(unit, TrainFrequencyUnit):
        unit = unit.value
    if unit not in ("step", "episode"):
        raise ValueError(f"train_freq: unit must be one of 'step', 'episode', got {unit!r}")
    if not isinstance(frequency, (int, np.integer)) or isinstance(frequency, bool) or frequency < 1:
        raise ValueError(f"train_freq: frequency must be an int >= 1, got {frequency!r}")
    return TrainFreq(int(frequency), TrainFrequencyUnit(unit))


class OffPolicyAlgorithm(BaseAlgorithm):
    """Shared replay-buffer loop of SAC, TD3, DDPG and DQN (and the sb3-contrib off-policy algorithms).

    Subclasses implement :meth:`gradient_updates` (``gradient_steps`` updates on replay samples) and configure their
    optimizers; collection, warm-up, action noise, logging and persistence of the replay buffer live here.
    """

    default_log_interval: ClassVar[int] = 4
    #: keep the replay buffer's filled part in Lightning checkpoints (exact resume); False for small checkpoints
    checkpoint_replay_buffer: bool = True

    def __init__(
        self,
        policy: Any,
        learning_rate: Any,
        buffer_size: int,
        learning_starts: int,
        batch_size: int,
        tau: float,
        gamma: float,
        train_freq: int | tuple[int, str],
        gradient_steps: int,
        action_noise: ActionNoise | None,
        replay_buffer_class: type[ReplayBuffer] | None,
        replay_buffer_kwargs: dict[str, Any] | None,
        optimize_memory_usage: bool,
        n_steps: int,
        policy_kwargs: dict[str, Any] | None,
        stats_window_size: int,
        verbose: int,
        seed: int | None,
        device: torch.device | str,
        env: GymEnv | str | None,
        use_sde: bool = False,
        sde_sample_freq: int = -1,
        use_sde_at_warmup: bool = False,
    ) -> None:
        super().__init__(policy, learning_rate, policy_kwargs, stats_window_size, verbose, seed, device, env)
        self.buffer_size = buffer_size
        self.learning_starts = learning_starts
        self.batch_size = batch_size
        self.tau = tau
        self.gamma = gamma
        self._train_freq_raw = train_freq
        self.train_freq = as_train_freq(train_freq)
        self.gradient_steps = gradient_steps
        self.action_noise = action_noise
        self.replay_buffer_class = replay_buffer_class
        self.replay_buffer_kwargs = dict(replay_buffer_kwargs or {})
        self.optimize_memory_usage = optimize_memory_usage
        self.n_steps = n_steps
        self.use_sde = use_sde
        self.sde_sample_freq = sde_sample_freq
        self.use_sde_at_warmup = use_sde_at_warmup
        self.replay_buffer: ReplayBuffer | None = None
        self._vec_normalize_env: VecNormalize | None = None
        self._last_original_obs: Any = None
        self._pending_buffer_state: dict[str, Any] | None = None

    # ------------------------------------------------------------------ checks and construction

    def _validate_hyperparameters(self) -> None:
        super()._validate_hyperparameters()
        ls = self.learning_starts
        if not isinstance(ls, (int, np.integer)) or isinstance(ls, bool) or ls < 0:
            raise ValueError(f"learning_starts: must be an int >= 0, got {ls!r}")
        if self.gradient_steps == 0 or self.gradient_steps < -1:
            raise ValueError(
                "gradient_steps: must be >= 1, or -1 (as many updates as env steps collected), "
                f"got {self.gradient_steps}"
            )
        checks = [
            ("buffer_size", self.buffer_size >= 1, ">= 1"),
            ("batch_size", self.batch_size >= 1, ">= 1"),
            ("tau", 0.0 <= self.tau <= 1.0, "in [0, 1]"),
            ("gamma", 0.0 <= self.gamma <= 1.0, "in [0, 1]"),
            ("n_steps", self.n_steps >= 1, ">= 1"),
        ]
        for name, ok, rule in checks:
            if not ok:
                raise ValueError(f"{name}: must be {rule}, got {getattr(self, name)}")
        if self.batch_size > self.buffer_size:
            raise ValueError(f"batch_size: must be <= buffer_size ({self.buffer_size}), got {self.batch_size}")
        if self.replay_buffer_class is not None and not (
            isinstance(self.replay_buffer_class, type) and issubclass(self.replay_buffer_class, ReplayBuffer)
        ):
            raise ValueError(
                f"replay_buffer_class: expected None or a ReplayBuffer subclass (ReplayBuffer, DictReplayBuffer, "
                f"NStepReplayBuffer, HerReplayBuffer), got {self.replay_buffer_class!r}"
            )

    def _policy_kwargs(self) -> dict[str, Any]:
        kwargs = super()._policy_kwargs()
        if self.use_sde:
            kwargs["use_sde"] = True
        return kwargs

    def _uses_her(self) -> bool:
        return self.replay_buffer_class is not None and issubclass(self.replay_buffer_class, HerReplayBuffer)

    def check_env(self, env: VecEnv) -> None:
        super().check_env(env)
        if self.train_freq.unit == TrainFrequencyUnit.EPISODE and env.num_envs > 1:
            raise ValueError(
                f"train_freq: with {env.num_envs} envs the unit must be 'step' (episodes end at different times), "
                f"got {self._train_freq_raw!r}"
            )
        obs_space = env.observation_space
        if self._uses_her():
            keys = set(obs_space.spaces) if isinstance(obs_space, spaces.Dict) else set()
            if not set(_GOAL_KEYS) <= keys:
                raise ValueError(
                    f"replay_buffer_class: HerReplayBuffer needs a goal-conditioned env (Dict observation with keys "
                    f"{', '.join(_GOAL_KEYS)} and compute_reward), got observation space {obs_space}"
                )
            if self.optimize_memory_usage:
                raise ValueError("optimize_memory_usage: must be False with HerReplayBuffer")
        if isinstance(obs_space, spaces.Dict) and self.n_steps > 1 and self.replay_buffer_class is None:
            raise ValueError(f"n_steps: n-step returns need a non-Dict observation space; use 1, got {self.n_steps}")
        if self.n_steps > 1 and self.optimize_memory_usage:
            raise ValueError("optimize_memory_usage: must be False when n_steps > 1 (NStepReplayBuffer)")

    def _make_replay_buffer(self, env: VecEnv) -> ReplayBuffer:
        buffer_class = self.replay_buffer_class
        kwargs = dict(self.replay_buffer_kwargs)
        if buffer_class is None:
            if isinstance(self.observation_space, spaces.Dict):
                buffer_class = DictReplayBuffer
            elif self.n_steps > 1:
                buffer_class, kwargs = NStepReplayBuffer, {**kwargs, "n_steps": self.n_steps, "gamma": self.gamma}
            else:
                buffer_class = ReplayBuffer
        elif self.n_steps > 1:
            warnings.warn(
                f"n_steps: {self.n_steps} is ignored with a custom replay_buffer_class; pass n_steps/gamma in "
                f"replay_buffer_kwargs to that buffer instead",
                stacklevel=2,
            )
        if issubclass(buffer_class, HerReplayBuffer):
            kwargs["env"] = env
        return buffer_class(
            self.buffer_size,
            self.observation_space,
            self.action_space,
            device=self.device,
            n_envs=env.num_envs,
            optimize_memory_usage=self.optimize_memory_usage,
            **kwargs,
        )

    def _setup_buffers(self, env: VecEnv) -> None:
        """Create the replay buffer once (it persists across ``learn`` calls); point HER at the current env."""
        if self.replay_buffer is None or self.replay_buffer.n_envs != env.num_envs:
            self.replay_buffer = self._make_replay_buffer(env)
        self.replay_buffer.device = self.device
        if isinstance(self.replay_buffer, HerReplayBuffer) and self.replay_buffer.env is not env:
            self.replay_buffer.env = None
            self.replay_buffer.set_env(env)
        if self._pending_buffer_state is not None:
            _restore_buffer_arrays(self.replay_buffer, self._pending_buffer_state)
            self._pending_buffer_state = None
        noise = self.action_noise
        if noise is not None and env.num_envs > 1 and not isinstance(noise, VectorizedActionNoise):
            self.action_noise = VectorizedActionNoise(self.action_noise, env.num_envs)
        self._vec_normalize_env = self.get_vec_normalize_env()

    def on_fit_start(self) -> None:
        # Target networks are in eval mode by design; Lightning warns about that at every fit, so the flags are
        # raised just for its check and lowered again in on_train_start (no forward pass runs in between).
        self._eval_modules = [m for m in self.modules() if not m.training]
        for module in self._eval_modules:
            module.training = True

    def on_train_start(self) -> None:
        for module in getattr(self, "_eval_modules", []):
            module.training = False
        self._eval_modules = []
        env = self._training_env()
        resets = self._pending_resume is None and (self._last_obs is None or self._seeded_env is not env)
        super().on_train_start()
        if resets:
            self._truncate_last_trajectory()
            vec_norm = self._vec_normalize_env
            self._last_original_obs = vec_norm.get_original_obs() if vec_norm is not None else self._last_obs

    def _truncate_last_trajectory(self) -> None:
        """The env was reset: the buffer's last transition must not be chained to the next one."""
        buffer = self.replay_buffer
        if buffer is None or not (buffer.full or buffer.pos > 0):
            return
        if isinstance(buffer, HerReplayBuffer):
            if np.any(buffer._current_ep_start != buffer.pos):
                buffer.truncate_last_trajectory()
        elif self.optimize_memory_usage:
            buffer.dones[(buffer.pos - 1) % buffer.buffer_size] = True

    def train_dataloader(self) -> EnvSteps:
        return EnvSteps(self)

    # ------------------------------------------------------------------ the training step

    def training_step(self, batch: Any, batch_idx: int) -> None:
        """Collect ``train_freq`` env steps (or episodes), then ``gradient_steps`` updates past ``learning_starts``.

        With a small step-based ``train_freq`` one Lightning step runs several collect/update rounds (at least
        ``min_env_steps_per_training_step`` env steps): the RL sequence is unchanged, Lightning's per-step cost is
        paid once per round group instead of once per env step.
        """
        env = self._training_env()
        for _ in range(self._rounds_per_training_step(env.num_envs)):
            if not self._collect_and_update(env):
                self._stop_training()
                return
            if self.num_timesteps >= self.total_timesteps:
                break
        self._stop_if_budget_reached()

    #: env steps one Lightning training step covers at least (step-based ``train_freq`` only)
    min_env_steps_per_training_step: int = 16

    def _rounds_per_training_step(self, n_envs: int) -> int:
        if self.train_freq.unit != TrainFrequencyUnit.STEP:
            return 1
        per_round = self.train_freq.frequency * n_envs
        return max(1, -(-self.min_env_steps_per_training_step // per_round))

    def _collect_and_update(self, env: VecEnv) -> bool:
        """One SB3 round: collect ``train_freq``, then update; False when a callback stopped training."""
        rollout = self.collect_rollouts(
            env,
            callback=self._callback,
            train_freq=self.train_freq,
            replay_buffer=self.replay_buffer,
            action_noise=self.action_noise,
            learning_starts=self.learning_starts,
            log_interval=self.log_interval,
        )
        if not rollout.continue_training:
            return False
        if self.num_timesteps > 0 and self.num_timesteps > self.learning_starts:
            steps = self.gradient_steps if self.gradient_steps >= 0 else rollout.episode_timesteps
            if steps > 0:
                if not self.policy.training:  # a recursive mode switch costs ~0.3 ms; skip it when nothing changes
                    self.policy.set_training_mode(True)
                self._update_learning_rate()
                self.gradient_updates(steps, self.batch_size)
        return True

    def gradient_updates(self, gradient_steps: int, batch_size: int) -> None:
        """``gradient_steps`` updates on samples of ``batch_size`` transitions (SB3's ``train``)."""
        raise NotImplementedError

    def _update_learning_rate(self) -> None:
        lr = self.lr_schedule(self._current_progress_remaining)
        for optimizer in self._named_optimizers().values():
            update_learning_rate(optimizer, lr)
        self.sb3_logger.record("train/learning_rate", lr)

    def _named_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        """Actor-critics: actor, critic and (when learned) temperature optimizers, under SB3's save names, in that
        order; Q-learning: the policy's optimizer."""
        policy = self.policy
        if not (hasattr(policy, "actor") and hasattr(policy, "critic")):
            return super()._named_optimizers()
        named = {"actor.optimizer": policy.actor.optimizer, "critic.optimizer": policy.critic.optimizer}
        if getattr(self, "ent_coef_optimizer", None) is not None:
            named["ent_coef_optimizer"] = self.ent_coef_optimizer
        return named

    def _pair_target_networks(self, *pairs: tuple[torch.nn.Module, torch.nn.Module]) -> None:
        """Remember each (online, target) pair's parameters (Polyak-averaged) and normalization statistics (copied)."""
        self._online_params = [p for online, _ in pairs for p in online.parameters()]
        self._target_params = [p for _, target in pairs for p in target.parameters()]
        self._bn_stats = [s for online, _ in pairs for s in get_parameters_by_name(online, ["running_"])]
        self._bn_stats_target = [s for _, target in pairs for s in get_parameters_by_name(target, ["running_"])]

    def _update_target_networks(self) -> None:
        """``target <- (1 - tau) * target + tau * online``; running statistics are copied as they are."""
        soft_update(self._online_params, self._target_params, self.tau)
        soft_update(self._bn_stats, self._bn_stats_target, 1.0)

    # ------------------------------------------------------------------ collection

    def collect_rollouts(
        self,
        env: VecEnv,
        callback: BaseCallback | None,
        train_freq: TrainFreq,
        replay_buffer: ReplayBuffer,
        action_noise: ActionNoise | None = None,
        learning_starts: int = 0,
        log_interval: int | None = None,
    ) -> RolloutReturn:
        """Step every env until ``train_freq`` is met, storing the transitions in ``replay_buffer``."""
        if self.policy.training:
            self.policy.set_training_mode(False)
        n_steps = n_episodes = 0
        if self.use_sde:
            self.policy.reset_noise(env.num_envs)
        if callback is not None:
            callback.on_rollout_start()
        while should_collect_more_steps(train_freq, n_steps, n_episodes):
            if self.use_sde and self.sde_sample_freq > 0 and n_steps % self.sde_sample_freq == 0:
                self.policy.reset_noise(env.num_envs)
            actions, buffer_actions = self._sample_action(learning_starts, action_noise, env.num_envs)
            new_obs, rewards, dones, infos = self._step_env(env, actions)
            self.num_timesteps += env.num_envs
            n_steps += 1
            if callback is not None:
                callback.update_locals(locals())
                if not callback.on_step():
                    return RolloutReturn(n_steps * env.num_envs, n_episodes, continue_training=False)
            self._update_info_buffer(infos, dones)
            self._store_transition(replay_buffer, buffer_actions, new_obs, rewards, dones, infos)
            self._on_step()
            for idx in np.flatnonzero(dones):
                n_episodes += 1
                self._episode_num += 1
                if action_noise is not None:
                    action_noise.reset(**({"indices": [idx]} if env.num_envs > 1 else {}))
                if log_interval and self._episode_num % log_interval == 0:
                    self.dump_logs()
        if callback is not None:
            callback.on_rollout_end()
        return RolloutReturn(n_steps * env.num_envs, n_episodes, continue_training=True)

    def _sample_action(
        self, learning_starts: int, action_noise: ActionNoise | None, n_envs: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Env actions and the actions to store (Box actions are stored scaled to [-1, 1])."""
        box = isinstance(self.action_space, spaces.Box)
        if self.num_timesteps < learning_starts and not (self.use_sde and self.use_sde_at_warmup):
            unscaled = np.array([self.action_space.sample() for _ in range(n_envs)])
            scaled = self.policy.scale_action(unscaled) if box else unscaled
        elif box:
            # SB3's predict -> scale_action round trip, even for squashed actions already in [-1, 1]: skipping it
            # changes the stored actions in the last bit, and a whole run then drifts away from SB3's
            actions = self._policy_actions(n_envs)
            if self.policy.squash_output:
                unscaled = self.policy.unscale_action(actions)
            else:
                unscaled = np.clip(actions, self.action_space.low, self.action_space.high)
            scaled = self.policy.scale_action(unscaled)
        else:
            scaled = self._policy_actions(n_envs)
        if not box:
            return scaled, scaled
        if action_noise is not None:
            scaled = np.clip(scaled + action_noise(), -1.0, 1.0)
        return self.policy.unscale_action(scaled), scaled

    def _policy_actions(self, n_envs: int) -> np.ndarray:
        """Exploration actions for ``_last_obs`` as the policy outputs them.

        What ``predict`` does minus its per-call input checks and mode switch (the policy is already in eval mode
        while collecting): a few hundred microseconds per env step.
        """
        obs, _ = self.policy.obs_to_tensor(self._last_obs)
        with torch.no_grad(), outside_autocast(self.device):
            actions = self.policy._predict(obs, deterministic=False)
        return actions.cpu().numpy().reshape((n_envs, *self.action_space.shape))

    def _store_transition(
        self,
        replay_buffer: ReplayBuffer,
        buffer_action: np.ndarray,
        new_obs: np.ndarray | dict[str, np.ndarray],
        reward: np.ndarray,
        dones: np.ndarray,
        infos: list[dict[str, Any]],
    ) -> None:
        """Store one vector step; the buffer keeps unnormalized data and the true last observation of an episode."""
        vec_norm = self._vec_normalize_env
        if vec_norm is not None:
            new_obs_, reward_ = vec_norm.get_original_obs(), vec_norm.get_original_reward()
        else:
            new_obs_, reward_ = new_obs, reward
        next_obs = _copy_obs(new_obs_)
        for i in np.flatnonzero(dones):
            terminal = infos[i].get("terminal_observation")
            if terminal is None:
                continue
            if vec_norm is not None:
                terminal = vec_norm.unnormalize_obs(terminal)
            if isinstance(next_obs, dict):
                for key in next_obs:
                    next_obs[key][i] = terminal[key]
            else:
                next_obs[i] = terminal
        replay_buffer.add(self._last_original_obs, next_obs, buffer_action, reward_, dones, infos)
        self._last_obs = new_obs
        self._last_original_obs = new_obs_

    def _on_step(self) -> None:
        """Hook: after every vector env step (DQN: exploration rate and target network)."""

    # ------------------------------------------------------------------ logging

    def dump_logs(self) -> None:
        record = self.sb3_logger.record
        record("time/episodes", self._episode_num, exclude="tensorboard")
        for key, value in self._metrics.means().items():
            record(f"train/{key}", value)
        if self._n_updates:
            record("train/n_updates", self._n_updates, exclude="tensorboard")
        if self.use_sde and hasattr(self.policy, "actor"):
            record("train/std", self.policy.actor.get_std().mean().item())
        super().dump_logs()

    # ------------------------------------------------------------------ replay buffer persistence

    def save_replay_buffer(self, path: str | Path) -> None:
        """Pickle the replay buffer (SB3's format; HER's env is left out)."""
        if self.replay_buffer is None:
            raise RuntimeError("save_replay_buffer: there is no replay buffer yet (train first)")
        save_to_pkl(path, self.replay_buffer, self.verbose)

    def load_replay_buffer(self, path: str | Path, truncate_last_traj: bool = True) -> None:
        """Load a buffer written by ``save_replay_buffer`` (or SB3's); HER buffers get the current env."""
        buffer = load_from_pkl(path, self.verbose)
        if not isinstance(buffer, ReplayBuffer):
            raise ValueError(f"load_replay_buffer: {path} holds a {type(buffer).__name__}, not a ReplayBuffer")
        if not hasattr(buffer, "handle_timeout_termination"):  # written by an old SB3
            buffer.handle_timeout_termination = False
            buffer.timeouts = np.zeros_like(buffer.dones)
        if isinstance(buffer, HerReplayBuffer):
            env = self.get_env()
            if env is None:
                raise ValueError("load_replay_buffer: a HerReplayBuffer needs an env; pass env= to the model first")
            buffer.env = None
            buffer.set_env(env)
            if truncate_last_traj:
                buffer.truncate_last_trajectory()
        buffer.device = self.device
        self.replay_buffer = buffer

    # ------------------------------------------------------------------ checkpoints

    def _extra_state(self, fmt: StateFormat = CHECKPOINT) -> dict[str, Any]:
        state = super()._extra_state(fmt)
        if fmt != CHECKPOINT:
            return state
        if self.checkpoint_replay_buffer and self.replay_buffer is not None:
            state["replay_buffer"] = _buffer_arrays(self.replay_buffer)
        if "env" in state:
            state["env"]["last_original_obs"] = resume.to_tree(self._last_original_obs)
        state["action_noise"] = resume.noise_state(self.action_noise)
        state["stat_sums"] = self._metrics.state()
        return state

    def _resume_training_state(self, env: VecEnv, state: dict[str, Any]) -> None:
        super()._resume_training_state(env, state)
        self._last_original_obs = resume.from_tree(state["env"]["last_original_obs"])
        resume.set_noise_state(self.action_noise, state.get("action_noise"))
        self._metrics.load_state(state.get("stat_sums", {}))

    def _load_extra_state(self, state: dict[str, Any], fmt: StateFormat = CHECKPOINT) -> None:
        super()._load_extra_state(state, fmt)
        buffer_state = state.get("replay_buffer") if fmt == CHECKPOINT else None
        if buffer_state is not None:
            if self.replay_buffer is not None:
                _restore_buffer_arrays(self.replay_buffer, buffer_state)
            else:
                self._pending_buffer_state = buffer_state  # applied when the buffer is created at train start


def _copy_obs(obs: np.ndarray | dict[str, np.ndarray]) -> np.ndarray | dict[str, np.ndarray]:
    if isinstance(obs, dict):
        return {k: np.array(v, copy=True) for k, v in obs.items()}
    return np.array(obs, copy=True)


def _buffer_arrays(buffer: ReplayBuffer) -> dict[str, Any]:
    """The buffer's filled part as tensors and plain numbers (safe for ``weights_only`` checkpoint loading).

    Arrays over the buffer's slots keep only the slots written so far (one more with ``optimize_memory_usage``, where
    the next observation of the last transition sits in the next slot); HER's per-transition info dicts are kept
    only when it copies them (``copy_info_dict``), otherwise they are all empty.
    """
    filled = buffer.buffer_size if buffer.full else min(buffer.pos + 1, buffer.buffer_size)
    state: dict[str, Any] = {"filled": filled}

    def part(array: np.ndarray) -> Any:
        return resume.to_tree(array[:filled] if array.shape[:1] == (buffer.buffer_size,) else array)

    for key, value in vars(buffer).items():
        if key == "infos" and not getattr(buffer, "copy_info_dict", True):
            continue
        if isinstance(value, np.ndarray):
            state[key] = part(value)
        elif isinstance(value, dict) and value and all(isinstance(v, np.ndarray) for v in value.values()):
            state[key] = {k: part(v) for k, v in value.items()}
        elif isinstance(value, (bool, int, float)) and key not in ("buffer_size", "n_envs"):
            state[key] = value
    return state


def _restore_buffer_arrays(buffer: ReplayBuffer, state: dict[str, Any]) -> None:
    """Write a :func:`_buffer_arrays` state into a freshly built buffer of the same size."""

    def put(target: np.ndarray | None, saved: Any) -> np.ndarray:
        saved = resume.from_tree(saved)
        if target is None or target.shape[1:] != saved.shape[1:] or len(saved) > len(target):
            return saved
        target[: len(saved)] = saved
        return target

    for key, value in state.items():
        if key == "filled":
            continue
        if isinstance(value, dict) and "__object_array__" not in value:
            current = getattr(buffer, key)
            setattr(buffer, key, {k: put(current.get(k), v) for k, v in value.items()})
        elif isinstance(value, (torch.Tensor, dict)):
            setattr(buffer, key, put(getattr(buffer, key, None), value))
        else:
            setattr(buffer, key, value)

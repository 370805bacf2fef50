"""``BaseAlgorithm``: what every lit_sb3 algorithm shares (spaces, policy, env-step accounting, persistence)."""

from __future__ import annotations

import inspect
import time
import warnings
import zipfile
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import lightning as L
import numpy as np
import torch
from gymnasium import spaces
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.policies import ActorCriticPolicy, BasePolicy
from stable_baselines3.common.save_util import load_from_zip_file, save_to_zip_file
from stable_baselines3.common.type_aliases import GymEnv
from stable_baselines3.common.utils import FloatSchedule, check_for_correct_spaces, get_device, safe_mean
from stable_baselines3.common.utils import set_random_seed as _seed_everything
from stable_baselines3.common.vec_env import VecEnv, VecNormalize, unwrap_vec_normalize

from lit_sb3.common import resume, safe_zip
from lit_sb3.common.envs import space_from_dict, space_to_dict, to_vec_env
from lit_sb3.common.optimizers import implementation_only, with_fused_default
from lit_sb3.common.safe_load import trusted_checkpoint
from lit_sb3.common.sb3_bridge import MaybeCallback, SB3AlgorithmView, as_callback, make_sb3_logger
from lit_sb3.common.utils import outside_autocast

# Policies whose Adam defaults to eps=1e-5 (instead of torch's 1e-8) when they receive no optimizer_kwargs.
_ADAM_EPS_POLICIES = (ActorCriticPolicy, MaskableActorCriticPolicy)

SelfBaseAlgorithm = TypeVar("SelfBaseAlgorithm", bound="BaseAlgorithm")

ALL_OBSERVATION_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary, spaces.Dict)
ALL_ACTION_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)

_CKPT_KEY = "lit_sb3"
#: seed offset of each process (rank) of a multi-process run: rank r uses seed + r * RANK_SEED_STRIDE
RANK_SEED_STRIDE = 10_000


class BaseAlgorithm(L.LightningModule):
    """An SB3 algorithm as a LightningModule.

    Constructed without an env (hyperparameters only); the networks are built from the env's spaces when an
    :class:`~lit_sb3.trainer.RLTrainer` sets the module up, or at once when the SB3-style ``env=`` keyword is given.
    ``num_timesteps`` counts env steps and is what the trainer's budget, the schedules and every logger's x-axis use.

    :param policy: policy class or one of the algorithm's aliases (``"MlpPolicy"``, ...)
    :param learning_rate: constant or schedule of the progress remaining (1 -> 0)
    :param policy_kwargs: extra arguments for the policy constructor
    :param stats_window_size: episodes averaged in ``rollout/ep_rew_mean`` and friends
    :param verbose: 0 silent, 1 SB3's metric table on stdout, 2 debug
    :param seed: seed for torch, numpy, the action space and the training env
    :param device: where the networks live when used outside a trainer ("auto", "cpu", "cuda", ...)
    :param env: SB3-style migration convenience: build the networks now and train on this env in ``learn``
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {}
    supported_action_spaces: ClassVar[tuple[type[spaces.Space], ...]] = ALL_ACTION_SPACES
    supported_observation_spaces: ClassVar[tuple[type[spaces.Space], ...]] = ALL_OBSERVATION_SPACES
    default_log_interval: ClassVar[int] = 1

    def __init__(
        self,
        policy: str | type[BasePolicy],
        learning_rate: float | Any,
        policy_kwargs: dict[str, Any] | None = None,
        stats_window_size: int = 100,
        verbose: int = 0,
        seed: int | None = None,
        device: torch.device | str = "auto",
        env: GymEnv | str | None = None,
    ) -> None:
        super().__init__()
        self.save_hyperparameters(ignore=["env", "_init_setup_model"])
        self.policy_class = self._resolve_policy_class(policy)
        self.learning_rate = learning_rate
        self.lr_schedule = FloatSchedule(learning_rate)
        self.policy_kwargs: dict[str, Any] = dict(policy_kwargs or {})
        self.stats_window_size = stats_window_size
        self.verbose = verbose
        self.seed = seed
        self.requested_device = device
        self.automatic_optimization = False

        self.policy: BasePolicy | None = None
        self.observation_space: spaces.Space | None = None
        self.action_space: spaces.Space | None = None
        self.n_envs: int | None = None
        self.num_timesteps = 0
        self._n_updates = 0
        self._episode_num = 0
        self._last_obs: Any = None
        self._last_episode_starts: np.ndarray | None = None
        self._env: VecEnv | None = None  # the SB3-style env given to the constructor or learn()
        self._seeded_env: VecEnv | None = None
        self._action_log: resume.ActionLog | None = None  # seeds + actions since the training env's reset (resume)
        self._pending_resume: dict[str, Any] | None = None  # checkpointed training state, applied at train start
        self._callback: BaseCallback | None = None
        self._learn_logger: Any = None
        self._start_time = 0.0
        self._num_timesteps_at_start = 0
        self.ep_info_buffer: deque = deque(maxlen=stats_window_size)
        self.ep_success_buffer: deque = deque(maxlen=stats_window_size)
        self.log_interval = self.default_log_interval
        self.sb3_logger = make_sb3_logger(self, verbose)
        if env is not None:
            self._env = to_vec_env(env)

    # ------------------------------------------------------------------ construction

    @classmethod
    def _resolve_policy_class(cls, policy: str | type[BasePolicy]) -> type[BasePolicy]:
        if isinstance(policy, str):
            if policy not in cls.policy_aliases:
                choices = ", ".join(sorted(cls.policy_aliases))
                raise ValueError(f"policy: unknown policy {policy!r} for {cls.__name__}; valid choices: {choices}")
            return cls.policy_aliases[policy]
        if isinstance(policy, type) and issubclass(policy, BasePolicy):
            return policy
        raise TypeError(f"policy: expected a policy name or a BasePolicy subclass, got {policy!r}")

    def _finish_init(self, init_setup_model: bool) -> None:
        """End of every subclass constructor: with an SB3-style env, build the networks at once."""
        self._validate_hyperparameters()
        if self._env is not None and init_setup_model:
            self.check_env(self._env)
            self.build(self._env.observation_space, self._env.action_space)

    def _validate_hyperparameters(self) -> None:
        """Reject invalid hyperparameters before any env or network exists (subclasses extend)."""
        if self.stats_window_size < 1:
            raise ValueError(f"stats_window_size: must be >= 1, got {self.stats_window_size}")

    def check_env(self, env: VecEnv) -> None:
        """Fail before training when ``env`` cannot be used by this algorithm (spaces, sizes)."""
        for name, space, supported in (
            ("observation space", env.observation_space, self.supported_observation_spaces),
            ("action space", env.action_space, self.supported_action_spaces),
        ):
            if not isinstance(space, supported):
                valid = ", ".join(s.__name__ for s in supported)
                raise ValueError(
                    f"env: {type(self).__name__} does not support the {name} {space}; supported: {valid}"
                )
        if self.observation_space is not None:
            check_for_correct_spaces(env, self.observation_space, self.action_space)

    def build(self, observation_space: spaces.Space, action_space: spaces.Space) -> None:
        """Create the networks for these spaces (idempotent)."""
        if self.policy is not None:
            return
        self.observation_space, self.action_space = observation_space, action_space
        if self.seed is not None:
            _seed_everything(self.seed)
            self.action_space.seed(self.seed)
        self.policy = self._make_policy(observation_space, action_space)
        self._build_extra()
        if self._trainer is None:
            self.to(get_device(self.requested_device))

    def _make_policy(self, observation_space: spaces.Space, action_space: spaces.Space) -> BasePolicy:
        """Hook: the policy for these spaces (ARS's policies take no learning-rate schedule)."""
        return self.policy_class(observation_space, action_space, self.lr_schedule, **self._policy_kwargs())

    def _policy_kwargs(self) -> dict[str, Any]:
        kwargs = dict(self.policy_kwargs)
        optimizer_class = kwargs.get("optimizer_class", torch.optim.Adam)
        given = kwargs.get("optimizer_kwargs")
        if given is None or implementation_only(given):
            # SB3's settings for this algorithm apply when none are given; choosing only the implementation (the
            # parity switch's fused=False) keeps them, where SB3 drops them whenever optimizer_kwargs is given
            given = {**self._default_optimizer_kwargs(optimizer_class), **(given or {})}
        # Same update rule, one fused kernel instead of a Python loop over parameters: the step of a small MLP
        # costs about a third less on CPU. Pass optimizer_kwargs={"fused": False} (sb3_parity) for torch's default.
        optimizer_kwargs = with_fused_default(optimizer_class, given)
        if optimizer_kwargs or "optimizer_kwargs" in kwargs:
            kwargs["optimizer_kwargs"] = optimizer_kwargs
        return kwargs

    def _default_optimizer_kwargs(self, optimizer_class: type[torch.optim.Optimizer]) -> dict[str, Any]:
        """SB3's optimizer settings for this algorithm when the user gives none (hook)."""
        if optimizer_class is torch.optim.Adam and issubclass(self.policy_class, _ADAM_EPS_POLICIES):
            return {"eps": 1e-5}
        return {}

    def _build_extra(self) -> None:
        """Hook: algorithm-specific modules created after the policy (target networks, entropy coefficient)."""

    # ------------------------------------------------------------------ env access

    @property
    def env(self) -> VecEnv | None:
        """Return the active training env from the trainer, or None."""
        trainer = self._trainer
        datamodule = getattr(trainer, "datamodule", None) if trainer is not None else None
        if datamodule is None or not hasattr(datamodule, "get_env"):
            return None
        return datamodule.get_env("fit", resolve=False)

    def get_env(self) -> VecEnv | None:
        """SB3-style: the env being trained on, else the one given to the constructor or ``learn``."""
        return self.env or self._env

    def get_vec_normalize_env(self) -> VecNormalize | None:
        env = self.get_env()
        return unwrap_vec_normalize(env) if env is not None else None

    def _training_env(self) -> VecEnv:
        env = self.env
        if env is None:
            raise RuntimeError(f"{type(self).__name__} is not attached to an RLTrainer with a training env")
        return env

    # ------------------------------------------------------------------ Lightning hooks

    def setup(self, stage: str) -> None:
        if self.policy is not None:
            return
        datamodule = self.trainer.datamodule
        env = datamodule.get_env(stage) if datamodule is not None else None
        env = env or (datamodule.get_env("fit") if datamodule is not None else None)
        if env is None:
            raise ValueError(f"{type(self).__name__}: no env to build the networks from; give the datamodule one")
        self.check_env(env)
        self.build(env.observation_space, env.action_space)

    def on_train_start(self) -> None:
        env = self._training_env()
        self.n_envs = env.num_envs
        self._setup_buffers(env)
        pending, self._pending_resume = self._pending_resume, None
        if pending is not None and self.global_rank:  # the checkpoint holds rank 0's envs: other ranks start afresh
            resume.set_vecnormalize_state(env, pending.get("env", {}).get("vecnormalize"))  # rank 0's statistics
            pending = None
        if pending is not None and "env" in pending:
            self._resume_training_state(env, pending)
        elif self._last_obs is None or self._seeded_env is not env:
            if self.seed is not None:
                seed = self.seed + RANK_SEED_STRIDE * self.global_rank  # each process of a multi-process run its own
                env.seed(seed)
                if self.global_rank:
                    _seed_everything(seed)
            self._action_log = resume.ActionLog.before_reset(env)
            self._last_obs = env.reset()
            self._last_episode_starts = np.ones((env.num_envs,), dtype=bool)
            self._seeded_env = env
        self._start_time = time.time_ns()
        self._num_timesteps_at_start = self.num_timesteps
        self._callback = as_callback(getattr(self.trainer, "rl_callback", None))
        if self._callback is not None:
            self._callback.init_callback(SB3AlgorithmView(self))  # type: ignore[arg-type]
            self._callback.on_training_start(
                {"total_timesteps": self.total_timesteps, "self": self}, {}
            )
        if pending is not None and "rng" in pending:
            # last, so that nothing between here and the first training step draws from the restored generators
            resume.set_rng_state(pending["rng"])
            resume.set_space_rng_state(self.action_space, pending["action_space_rng"])

    def _resume_training_state(self, env: VecEnv, state: dict[str, Any]) -> None:
        """Put ``env`` and the collection state where the checkpoint left them (subclasses extend)."""
        log = resume.ActionLog.from_state(state["env"]["log"])
        log.replay(env)
        resume.set_vecnormalize_state(env, state["env"]["vecnormalize"])
        self._action_log, self._seeded_env = log, env
        self._last_obs = resume.from_tree(state["env"]["last_obs"])
        self._last_episode_starts = resume.from_tree(state["env"]["last_episode_starts"])

    def _step_env(self, env: VecEnv, actions: np.ndarray) -> Any:
        """``env.step(actions)``, recorded for an exact resume by replay."""
        if self._action_log is not None and self._seeded_env is env:
            self._action_log.append(actions)
        return env.step(actions)

    def _reset_env(self, env: VecEnv) -> Any:
        """``env.reset()`` during training (ARS's episodes), recorded for an exact resume by replay."""
        if self._action_log is not None and self._seeded_env is env:
            self._action_log.resets.append(self._action_log.size)
        return env.reset()

    def on_train_end(self) -> None:
        if self._callback is not None:
            self._callback.on_training_end()

    def _setup_buffers(self, env: VecEnv) -> None:
        """Hook: create rollout / replay buffers for this env (called at the start of each fit)."""

    @property
    def total_timesteps(self) -> int:
        return int(getattr(self._trainer, "rl_total_timesteps", 0) or 0)

    @property
    def _current_progress_remaining(self) -> float:
        total = self.total_timesteps
        return 1.0 - float(self.num_timesteps) / float(total) if total > 0 else 1.0

    def _stop_if_budget_reached(self) -> None:
        if self.num_timesteps >= self.total_timesteps:
            self.trainer.should_stop = True

    # ------------------------------------------------------------------ episode statistics and logging

    def _update_info_buffer(self, infos: list[dict[str, Any]], dones: np.ndarray | None = None) -> None:
        for idx, info in enumerate(infos):
            episode = info.get("episode")
            if episode is not None:
                self.ep_info_buffer.append(episode)
            success = info.get("is_success")
            if success is not None and (dones is None or dones[idx]):
                self.ep_success_buffer.append(success)

    def _record_rollout_stats(self) -> None:
        elapsed = max((time.time_ns() - self._start_time) / 1e9, 1e-9)
        fps = int((self.num_timesteps - self._num_timesteps_at_start) / elapsed)
        record = self.sb3_logger.record
        if self.ep_info_buffer:
            record("rollout/ep_rew_mean", safe_mean([ep["r"] for ep in self.ep_info_buffer]))
            record("rollout/ep_len_mean", safe_mean([ep["l"] for ep in self.ep_info_buffer]))
        if self.ep_success_buffer:
            record("rollout/success_rate", safe_mean(self.ep_success_buffer))
        record("time/fps", fps)
        record("time/time_elapsed", int(elapsed), exclude="tensorboard")
        record("time/total_timesteps", self.num_timesteps, exclude="tensorboard")

    def dump_logs(self) -> None:
        """Write everything recorded since the last dump, at the current env step."""
        self._record_rollout_stats()
        self.sb3_logger.dump(step=self.num_timesteps)

    # ------------------------------------------------------------------ acting

    def predict(
        self,
        observation: np.ndarray | dict[str, np.ndarray],
        state: tuple[np.ndarray, ...] | None = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = False,
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...] | None]:
        """SB3 semantics: single or batched observations; Box actions clipped (or unscaled when squashed)."""
        if self.policy is None:
            raise RuntimeError(f"{type(self).__name__}.predict: the networks are not built yet (fit, or pass env=)")
        with outside_autocast(self.device):  # also called inside mixed-precision steps (evaluation, SB3 callbacks)
            return self.policy.predict(observation, state, episode_start, deterministic)

    def validation_step(self, batch: Any, batch_idx: int) -> dict[str, float]:
        """Evaluate the policy for ``batch`` episodes on the stage's env; logs ``eval/*`` at the env step."""
        stage = "test" if self.trainer.testing else "validate"
        env = self.trainer.datamodule.get_env(stage) or self.trainer.datamodule.get_env("fit")
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
        self, env: VecEnv, n_episodes: int, deterministic: bool, callback: Callable | None = None
    ) -> tuple[list[float], list[int]]:
        """Returns and lengths of ``n_episodes`` episodes of this policy on ``env`` (SB3's ``evaluate_policy``,
        which calls ``callback(locals(), globals())`` at each step)."""
        from stable_baselines3.common.evaluation import evaluate_policy

        return evaluate_policy(
            self, env, n_eval_episodes=n_episodes, deterministic=deterministic, return_episode_rewards=True,
            callback=callback,
        )

    def test_step(self, batch: Any, batch_idx: int) -> dict[str, float]:
        return self.validation_step(batch, batch_idx)

    def predict_step(self, batch: Any, batch_idx: int) -> list[dict[str, Any]]:
        """``trainer.predict``: episodes on the predict env, one dict each (see :meth:`RLTrainer.predict`)."""
        from lit_sb3.common.episodes import run_episodes

        n_episodes, deterministic, trajectories = batch
        return run_episodes(self, self.trainer.datamodule.get_env("predict"), n_episodes, deterministic, trajectories)

    # ------------------------------------------------------------------ training entry point

    def learn(
        self: SelfBaseAlgorithm,
        total_timesteps: int,
        env: GymEnv | str | None = None,
        callback: MaybeCallback = None,
        log_every_n_steps: int | None = None,
        tb_log_name: str | None = None,
        reset_num_timesteps: bool = True,
        progress_bar: bool = False,
        default_root_dir: str | Path | None = None,
    ) -> SelfBaseAlgorithm:
        """Train for ``total_timesteps`` env steps (SB3's ``learn``), on an :class:`RLTrainer`.

        :param total_timesteps: env steps to collect in this call
        :param env: env id, gymnasium env, factory or VecEnv; defaults to the one given to the constructor
        :param callback: SB3 callback(s), called at every env step
        :param log_every_n_steps: dump metrics every this many rollouts (on-policy) or episodes (off-policy)
        :param tb_log_name: run name of the loggers
        :param reset_num_timesteps: start counting env steps (and logged curves) from zero
        :param progress_bar: show a progress bar counting env steps
        :param default_root_dir: where CSV logs go; nothing is written when None
        """
        from lightning.pytorch.loggers import CSVLogger

        from lit_sb3.datamodule import RLEnvDataModule
        from lit_sb3.trainer import RLTrainer

        if total_timesteps <= 0:
            raise ValueError(f"total_timesteps: must be > 0, got {total_timesteps}")
        if env is not None:
            vec_env = to_vec_env(env)
            if vec_env is not self._env:
                self._last_obs = None
            self._env = vec_env
        if self._env is None:
            name = type(self).__name__
            raise ValueError(f"env: {name}.learn needs an env (learn(env=...) or the constructor's env=)")
        if reset_num_timesteps:
            self.num_timesteps = 0
            self._episode_num = 0
            self._last_obs = None
            self._pending_resume = None  # a fresh start: no env replay or RNG restore from a loaded checkpoint
            self._learn_logger = None
        if log_every_n_steps is not None:
            self.log_interval = log_every_n_steps
        name = tb_log_name or type(self).__name__
        if default_root_dir is not None and self._learn_logger is None:
            self._learn_logger = CSVLogger(save_dir=str(default_root_dir), name=name)
        trainer = RLTrainer(
            max_steps=self.num_timesteps + total_timesteps,
            rl_callback=callback,
            run_name=name,
            logger=self._learn_logger if default_root_dir is not None else False,
            default_root_dir=default_root_dir,
            enable_progress_bar=progress_bar,
            **_accelerator_for(self.requested_device),
        )
        trainer.fit(self, datamodule=RLEnvDataModule(train_env=self._env))
        return self

    # ------------------------------------------------------------------ persistence

    def _extra_state(self) -> dict[str, Any]:
        """Non-parameter training state kept in checkpoints (subclasses add theirs): counters, RNGs, episode
        statistics and, once training started, what an exact resume needs to bring the env back."""
        state: dict[str, Any] = {
            "num_timesteps": self.num_timesteps, "n_updates": self._n_updates, "episode_num": self._episode_num,
            "rng": resume.rng_state(), "action_space_rng": resume.space_rng_state(self.action_space),
            "ep_info_buffer": resume.to_tree(list(self.ep_info_buffer)),
            "ep_success_buffer": resume.to_tree(list(self.ep_success_buffer)),
        }
        env = self._seeded_env
        if self._action_log is not None and env is not None and self._last_obs is not None:
            state["env"] = {
                "log": self._action_log.state(), "vecnormalize": resume.vecnormalize_state(env),
                "last_obs": resume.to_tree(self._last_obs),
                "last_episode_starts": resume.to_tree(self._last_episode_starts),
            }
        return state

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        self.num_timesteps = int(state["num_timesteps"])
        self._n_updates = int(state.get("n_updates", 0))
        self._episode_num = int(state.get("episode_num", 0))
        self.ep_info_buffer.extend(resume.from_tree(state.get("ep_info_buffer", [])))
        self.ep_success_buffer.extend(resume.from_tree(state.get("ep_success_buffer", [])))
        self._pending_resume = state if "rng" in state else None

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        if self.observation_space is None:
            return
        checkpoint[_CKPT_KEY] = {
            "observation_space": space_to_dict(self.observation_space),
            "action_space": space_to_dict(self.action_space),
            **self._extra_state(),
        }

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        if self._trainer is not None:  # resuming into a model the caller built (load_from_checkpoint builds its own)
            _warn_about_changed_hyperparameters(self, checkpoint.get("hyper_parameters") or {})
        state = checkpoint.get(_CKPT_KEY)
        if state is None:
            return
        self.build(space_from_dict(state["observation_space"]), space_from_dict(state["action_space"]))
        self._load_extra_state(state)

    @classmethod
    def load_from_checkpoint(
        cls,
        checkpoint_path: str | Path | Any,
        map_location: Any = None,
        hparams_file: str | Path | None = None,
        strict: bool | None = None,
        weights_only: bool | None = None,
        **kwargs: Any,
    ) -> Any:
        """Lightning's ``load_from_checkpoint``, safe by default: ``weights_only=True`` with the objects lit_sb3
        checkpoints hold allow-listed (action noise, schedules, policy/buffer classes); one clear line for a
        missing, truncated or foreign file. ``weights_only=False`` unpickles anything (trusted files only)."""
        local = isinstance(checkpoint_path, (str, Path)) and "://" not in str(checkpoint_path)
        with trusted_checkpoint(checkpoint_path if local and weights_only is not False else None):
            return super().load_from_checkpoint(
                checkpoint_path, map_location=map_location, hparams_file=hparams_file, strict=strict,
                weights_only=True if weights_only is None else weights_only, **kwargs,
            )

    def _pytorch_variables(self) -> dict[str, torch.Tensor]:
        """Tensors outside ``policy`` that ``save`` must keep (e.g. SAC's log entropy coefficient)."""
        return {}

    def get_parameters(self) -> dict[str, dict]:
        """``{"policy": state_dict, "policy.optimizer": state_dict, ...}`` as SB3 returns it."""
        if self.policy is None:
            raise RuntimeError("get_parameters: the networks are not built yet")
        params = {"policy": self.policy.state_dict()}
        for name, optimizer in self._named_optimizers().items():
            params[name] = optimizer.state_dict()
        return params

    def _named_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        optimizer = getattr(self.policy, "optimizer", None)
        return {"policy.optimizer": optimizer} if optimizer is not None else {}

    def set_parameters(
        self,
        load_path_or_dict: str | dict[str, dict],
        exact_match: bool = True,
        device: torch.device | str = "auto",
    ) -> None:
        """Load parameters from a ``save`` zip or a ``get_parameters`` dict."""
        if isinstance(load_path_or_dict, dict):
            params = load_path_or_dict
        else:
            _, params, _ = load_from_zip_file(load_path_or_dict, device=device, load_data=False)
        targets: dict[str, Any] = {"policy": self.policy, **self._named_optimizers()}
        missing = set(targets) - set(params)
        if exact_match and missing:
            raise ValueError(f"set_parameters: missing {sorted(missing)} in the loaded parameters")
        for name, state in params.items():
            if name not in targets:
                raise ValueError(f"set_parameters: unknown parameter group {name!r}; expected {sorted(targets)}")
            if isinstance(targets[name], torch.optim.Optimizer):
                targets[name].load_state_dict(state)
            else:
                targets[name].load_state_dict(state, strict=exact_match)

    def save(self, path: str | Path, exclude: list[str] | None = None, include: list[str] | None = None) -> None:
        """SB3-style zip: hyperparameters, spaces and counters (``data``) plus parameters (``params``)."""
        if self.policy is None:
            raise RuntimeError("save: the networks are not built yet")
        # "device" is where this process ran, not part of the model: SB3's load would take it over its own argument
        skip = {"device", *(exclude or [])}
        data: dict[str, Any] = {k: v for k, v in self.hparams.items() if k not in skip}
        # SB3's load copies data over its attributes, where "*_kwargs" are dicts, never None
        data.update({k: {} for k, v in data.items() if k.endswith("_kwargs") and v is None})
        data.update(
            policy_class=self.policy_class,
            policy_kwargs=dict(self.policy_kwargs),
            observation_space=self.observation_space,
            action_space=self.action_space,
            n_envs=self.n_envs or (self._env.num_envs if self._env is not None else 1),
            num_timesteps=self.num_timesteps,
            _n_updates=self._n_updates,
        )
        data.update(self._sb3_data())
        data[safe_zip.SAFE_KEY] = safe_zip.safe_mirror(data)  # what load reads instead of the pickled entries
        save_to_zip_file(path, data=data, params=self.get_parameters(), pytorch_variables=self._pytorch_variables())

    @classmethod
    def load(
        cls: type[SelfBaseAlgorithm],
        path: str | Path,
        env: GymEnv | str | None = None,
        device: torch.device | str = "auto",
        custom_objects: dict[str, Any] | None = None,
        print_system_info: bool = False,
        force_reset: bool = True,
        *,
        trusted: bool = False,
        **kwargs: Any,
    ) -> SelfBaseAlgorithm:
        """Load a zip written by ``save`` (or by SB3's own ``save`` of the same algorithm).

        Safe by default: the zip's ``:serialized:`` (cloudpickle) entries are never unpickled; their values come
        from the plain-JSON mirror ``save`` writes, or from ``custom_objects``. A zip that holds a needed value only
        as a pickle (one written by SB3 itself) is refused with one line, unless ``trusted=True`` (runs its code).
        """
        if isinstance(path, (str, Path)) and not Path(path).is_file() and not Path(f"{path}.zip").is_file():
            raise FileNotFoundError(f"load: no such file: {path}")
        accepted = set(inspect.signature(cls.__init__).parameters) - {"self", "env", "_init_setup_model"}
        try:
            if trusted:
                data, params, pytorch_variables = load_from_zip_file(
                    path, device=device, custom_objects=custom_objects, print_system_info=print_system_info
                )
            else:
                needed = accepted | {"observation_space", "action_space", "policy", "policy_class"}
                data = safe_zip.read_data(path, custom_objects, needed)
                _, params, pytorch_variables = load_from_zip_file(path, device=device, load_data=False)
        except zipfile.BadZipFile as error:
            raise ValueError(f"load: {path} is not a readable save() zip ({error})") from None
        if data is None or "observation_space" not in data:
            raise ValueError(f"load: {path} holds no observation/action spaces; was it written by save()?")
        init_kwargs = {k: v for k, v in data.items() if k in accepted}
        init_kwargs.update(cls._init_kwargs_from_sb3_data(data))
        init_kwargs["policy"] = data.get("policy", data.get("policy_class"))
        init_kwargs.update(kwargs, device=device)
        model = cls(**init_kwargs)
        if env is not None:
            model._env = to_vec_env(env)
            check_for_correct_spaces(model._env, data["observation_space"], data["action_space"])
        model.build(data["observation_space"], data["action_space"])
        model.set_parameters(params, exact_match=False, device=device)
        model._load_pytorch_variables(pytorch_variables or {})
        model.num_timesteps = int(data.get("num_timesteps", 0))
        model._n_updates = int(data.get("_n_updates", 0))
        model.n_envs = data.get("n_envs")
        return model

    def _sb3_data(self) -> dict[str, Any]:
        """Hook: attributes SB3's own ``load`` of this algorithm reads from the zip besides the hyperparameters."""
        return {}

    @classmethod
    def _init_kwargs_from_sb3_data(cls, data: dict[str, Any]) -> dict[str, Any]:
        """Hook: constructor arguments that SB3's zips store under another name (e.g. as a schedule)."""
        return {}

    def _load_pytorch_variables(self, variables: dict[str, torch.Tensor]) -> None:
        """Hook: restore what ``_pytorch_variables`` saved."""


_VOLATILE_HPARAMS = ("verbose", "device")  # where and how loudly a run trains, not what it trains


def _same(a: Any, b: Any) -> bool:
    """Equal values, comparing objects without ``__eq__`` (action noise, schedules) by their attributes."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.array_equal(a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if type(a) is type(b) and hasattr(a, "__dict__") and not isinstance(a, type) and type(a).__eq__ is object.__eq__:
        if type(a).__repr__ is not object.__repr__:  # action noise: its repr names the settings, not the noise state
            return repr(a) == repr(b)
        return _same(vars(a), vars(b))
    return bool(a == b)


def _warn_about_changed_hyperparameters(model: BaseAlgorithm, saved: dict[str, Any]) -> None:
    """Resuming a checkpoint into a model built with other hyperparameters trains with the model's: say which."""
    changed = [
        f"{key}={model.hparams[key]!r} (checkpoint: {saved[key]!r})"
        for key in saved
        if key in model.hparams and key not in _VOLATILE_HPARAMS and not _same(model.hparams[key], saved[key])
    ]
    if changed:
        warnings.warn(
            f"ckpt_path: {type(model).__name__} differs from the checkpoint's hyperparameters: {'; '.join(changed)}; "
            f"training continues with the model's values (build the model with the checkpoint's to resume it exactly)",
            stacklevel=2,
        )


def _accelerator_for(device: torch.device | str) -> dict[str, Any]:
    """Trainer placement for an SB3 ``device`` argument ("auto" keeps the RL default, the CPU)."""
    device = torch.device(device) if not isinstance(device, str) or device != "auto" else None
    if device is None or device.type == "cpu":
        return {"accelerator": "cpu"}
    return {"accelerator": "gpu" if device.type == "cuda" else device.type, "devices": [device.index or 0]}


"""``BaseAlgorithm``: what every lit_sb3 algorithm shares as a LightningModule, in one class read top-down:
construction (spaces, policy, optimizers), the Lightning hooks (the training env's seeding and resume, env-step
accounting), SB3's surface (``env``, ``logger``, episode statistics), acting (``predict``, the evaluation steps),
and saving and loading (one hook pair, ``_extra_state`` / ``_load_extra_state``; the formats' code is
:mod:`lit_sb3.common.zips` and :mod:`lit_sb3.common.saved_state`)."""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar, cast

import lightning as L
import numpy as np
import torch
from gymnasium import spaces
from lightning.pytorch.loggers import CSVLogger, Logger
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.callbacks import BaseCallback, CallbackList
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.policies import ActorCriticPolicy, BasePolicy
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback
from stable_baselines3.common.utils import (
    ConstantSchedule,
    FloatSchedule,
    LinearSchedule,
    check_for_correct_spaces,
    get_device,
)
from stable_baselines3.common.utils import set_random_seed as _seed_everything
from stable_baselines3.common.vec_env import VecEnv, VecNormalize, unwrap_vec_normalize

from lit_sb3.common import resume, zips
from lit_sb3.common.allow_list import is_trusted
from lit_sb3.common.envs import space_from_dict, space_to_dict, to_vec_env
from lit_sb3.common.episodes import StepCallback, run_episodes
from lit_sb3.common.learn import accelerator_for, learn_method, tensorboard_logger
from lit_sb3.common.optim import MetricTracker, inside_fit, optimizer_step
from lit_sb3.common.optimizers import with_optimizer_settings
from lit_sb3.common.parts import Part, parts_of
from lit_sb3.common.safe_load import CheckpointError, trusted_checkpoint
from lit_sb3.common.saved_state import (
    CHECKPOINT,
    CKPT_KEY,
    INCLUDED_KEY,
    NOT_HPARAMS,
    UNSAVED_KEY,
    ZIP,
    StateFormat,
    unsaved_hyperparameters,
    warn_about_changed_hyperparameters,
)
from lit_sb3.common.sb3_bridge import as_callback, make_sb3_logger, record_rollout_stats
from lit_sb3.common.seeding import RANK_SEED_STRIDE
from lit_sb3.common.training_mode import TrainingModeSwitch
from lit_sb3.common.utils import CheckFailed, outside_autocast, resolve_policy_class
from lit_sb3.datamodule import RLEnvDataModule
from lit_sb3.lightning_compat import attached_trainer
from lit_sb3.trainer import RLTrainer

# Policies whose Adam defaults to eps=1e-5 (instead of torch's 1e-8) when they receive no optimizer_kwargs.
_ADAM_EPS_POLICIES = (ActorCriticPolicy, MaskableActorCriticPolicy)

# SB3's schedules are plain data: checkpoints holding them load with torch.load(weights_only=True). Registered here,
# with the class every lit_sb3 model (and so every load of its checkpoints) imports, not by ``import lit_sb3``,
# which stays free of torch for processes that only read configs (a sweep's parent process).
torch.serialization.add_safe_globals([ConstantSchedule, FloatSchedule, LinearSchedule])

SelfBaseAlgorithm = TypeVar("SelfBaseAlgorithm", bound="BaseAlgorithm")


ALL_OBSERVATION_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary, spaces.Dict)
ALL_ACTION_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)


class NoisyPolicy(Protocol):
    """A policy with gSDE exploration (``use_sde``): its noise matrices are resampled."""

    def reset_noise(self, n_envs: int = 1) -> None: ...


class BaseAlgorithm(L.LightningModule):
    """An SB3 algorithm as a LightningModule.

    Constructed without an env (hyperparameters only); the networks are built from the env's spaces when an
    :class:`~lit_sb3.trainer.RLTrainer` sets the module up, or at once when the SB3-style ``env=`` keyword is given.
    ``num_timesteps`` counts env steps and is what the trainer's budget, the schedules and every logger's x-axis use.
    SB3's call form ``PPO(policy, env, learning_rate, ...)`` works too (see :mod:`lit_sb3.common.sb3_calls`), with
    SB3's ``tensorboard_log`` keyword: ``learn`` then writes TensorBoard events to
    ``<tensorboard_log>/<tb_log_name>_<n>``.

    :param policy: policy class or one of the algorithm's aliases (``"MlpPolicy"``, ...)
    :param learning_rate: constant or schedule of the progress remaining (1 -> 0)
    :param policy_kwargs: extra arguments for the policy constructor
    :param stats_window_size: episodes averaged in ``rollout/ep_rew_mean`` and friends
    :param verbose: 0 silent, 1 SB3's metric table on stdout, 2 debug
    :param seed: seed for torch, numpy, the action space and the training env
    :param device: where the networks live when used outside a trainer ("auto", "cpu", "cuda", ...)
    :param env: SB3-style migration convenience: build the networks now and train on this env in ``learn``
    """

    policy_aliases: ClassVar[Mapping[str, type[BasePolicy]]] = {}
    supported_action_spaces: ClassVar[tuple[type[spaces.Space[Any]], ...]] = ALL_ACTION_SPACES
    supported_observation_spaces: ClassVar[tuple[type[spaces.Space[Any]], ...]] = ALL_OBSERVATION_SPACES
    default_log_interval: ClassVar[int] = 1
    #: each update is gradient steps that DDP averages over processes (the on-policy algorithms but TRPO)
    multi_process_update: ClassVar[bool] = False
    epoch_is_rollout: ClassVar[bool] = False  # a Lightning epoch is one rollout (on-policy), not a collect/update round

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
        self.save_hyperparameters(ignore=list(NOT_HPARAMS))
        self.policy_class = resolve_policy_class(policy, self.policy_aliases, type(self).__name__)
        self.learning_rate = learning_rate
        self.lr_schedule = FloatSchedule(learning_rate)
        self.policy_kwargs: dict[str, Any] = dict(policy_kwargs or {})
        self.stats_window_size = stats_window_size
        self.verbose = verbose
        self.seed = seed
        self.requested_device = device
        self.automatic_optimization = False

        self.policy: BasePolicy | None = None
        self.observation_space: spaces.Space[Any] | None = None
        self.action_space: spaces.Space[Any] | None = None
        self.n_envs: int | None = None
        self.num_timesteps = 0
        self._n_updates = 0
        self._episode_num = 0
        self._last_obs: Any = None
        self._last_episode_starts: np.ndarray | None = None
        self._env: VecEnv | None = None  # SB3's ``env``: given to the constructor, load, set_env or learn()
        self.tensorboard_log: str | None = None  # SB3's keyword (set by _finish_init)
        self._custom_logger = False  # set_logger was called: learn keeps that logger (SB3's rule)
        self._seeded_env: VecEnv | None = None
        self._action_log: resume.ActionLog | None = None  # seeds + actions since the training env's reset (resume)
        self._pending_resume: dict[str, Any] | None = None  # checkpointed training state, applied at train start
        self._callback: BaseCallback | None = None
        self._total_timesteps = 0  # the run's env-step budget and SB3 callback(s), given by RLTrainer.fit
        self._rl_callback: MaybeCallback = None
        self._learn_logger: Any = None
        self._start_time = 0  # time.time_ns() at train start
        self._num_timesteps_at_start = 0
        self.ep_info_buffer: deque[dict[str, Any]] = deque(maxlen=stats_window_size)
        self.ep_success_buffer: deque[bool] = deque(maxlen=stats_window_size)
        self.log_interval: int | None = self.default_log_interval  # learn(log_every_n_steps=None): never
        self._metrics = MetricTracker()
        self._parts: list[Part] = []  # the algorithm's parts (lit_sb3.common.parts), found when it is built
        self._mode_switch: TrainingModeSwitch | None = None  # the policy's train/eval switch, made at first use
        self.sb3_logger = make_sb3_logger(self, verbose)
        if env is not None:
            self._env = to_vec_env(env)
            self.n_envs = self._env.num_envs

    # ------------------------------------------------------------------ construction

    #: SB3's ``learn`` (each algorithm declares its own defaults the same way)
    learn = learn_method(tb_log_name="", log_every_n_steps=None)

    def _setup_learn(
        self,
        total_timesteps: int,
        callback: MaybeCallback = None,
        reset_num_timesteps: bool = True,
        tb_log_name: str = "run",
        progress_bar: bool = False,
    ) -> tuple[int, BaseCallback]:
        """SB3's set-up of a training loop driven by hand (see :func:`lit_sb3.common.learn.setup_learn`);
        ``tb_log_name`` and ``progress_bar`` belong to ``learn``'s trainer and are accepted, unused, for SB3's
        signature."""
        return self._setup_learn_state(total_timesteps, callback, reset_num_timesteps)

    def _fit_env_steps(
        self: SelfBaseAlgorithm,
        total_timesteps: int,
        env: GymEnv | str | None,
        callback: MaybeCallback,
        log_every_n_steps: int | None,
        tb_log_name: str,
        reset_num_timesteps: bool,
        progress_bar: bool,
        default_root_dir: str | Path | None,
    ) -> SelfBaseAlgorithm:
        """What every algorithm's ``learn`` does: one :class:`RLTrainer` fit of ``total_timesteps`` env steps."""
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
        self.log_interval = log_every_n_steps
        name = tb_log_name or type(self).__name__
        if default_root_dir is not None and self._learn_logger is None:
            self._learn_logger = CSVLogger(save_dir=str(default_root_dir), name=name)
        loggers: list[Logger] = [self._learn_logger] if default_root_dir is not None else []
        if self.tensorboard_log is not None and not self._custom_logger:
            loggers.append(tensorboard_logger(self.tensorboard_log, name, reset_num_timesteps))
        if not self._custom_logger:  # SB3's logger.dir: this run's log folder (SB3_LOGDIR when it writes none)
            self.sb3_logger.dir = loggers[-1].log_dir if loggers else os.environ.get("SB3_LOGDIR")
        trainer = RLTrainer(
            max_steps=self.num_timesteps + total_timesteps,
            rl_callback=callback,
            run_name=name,
            logger=loggers or False,
            default_root_dir=default_root_dir,
            enable_progress_bar=progress_bar,
            **accelerator_for(self.requested_device),
        )
        trainer.fit(self, datamodule=RLEnvDataModule(train_env=self._env))
        return self

    def _setup_learn_state(
        self, total_timesteps: int, callback: MaybeCallback, reset_num_timesteps: bool
    ) -> tuple[int, BaseCallback]:
        """SB3's ``_setup_learn``, for a training loop driven by hand (``collect_rollouts`` / ``train`` outside
        ``learn``): the counters, the env's first observation, the buffers and the callback; returns the run's total
        env steps and the callback."""
        env = self.get_env()
        if env is None:
            raise ValueError(f"env: {type(self).__name__}._setup_learn needs an env (the constructor's, set_env, load)")
        if reset_num_timesteps:
            self.num_timesteps, self._episode_num = 0, 0
        if reset_num_timesteps or self._last_obs is None:
            self._last_obs = env.reset()
            self._last_episode_starts = np.ones((env.num_envs,), dtype=bool)
        self._total_timesteps = total_timesteps + (0 if reset_num_timesteps else self.num_timesteps)
        self._start_time, self._num_timesteps_at_start = time.time_ns(), self.num_timesteps
        self.n_envs = env.num_envs
        self._setup_buffers(env)
        run_callback = as_callback(callback) or CallbackList([])
        run_callback.init_callback(self)  # type: ignore[arg-type]
        return self._total_timesteps, run_callback

    def _finish_init(self, init_setup_model: bool, tensorboard_log: str | None = None) -> None:
        """End of every subclass constructor: with an SB3-style env, build the networks at once."""
        self.tensorboard_log = tensorboard_log
        self._validate_hyperparameters()
        if self._env is not None and init_setup_model:
            self._check_spaces(self._env)  # what training alone needs (check_env) is checked when it starts
            self.build(self._env.observation_space, self._env.action_space)
            self._setup_buffers(self._env)  # as SB3: replay_buffer / rollout_buffer exist once the model has an env

    def _validate_hyperparameters(self) -> None:
        """Reject invalid hyperparameters before any env or network exists (subclasses extend)."""
        if self.stats_window_size < 1:
            raise ValueError(f"stats_window_size: must be >= 1, got {self.stats_window_size}")

    def check_env(self, env: VecEnv) -> None:
        """Fail before training when ``env`` cannot be used by this algorithm (spaces, sizes; subclasses extend with
        what only training needs: constructing, loading and acting accept what SB3 accepts)."""
        self._check_spaces(env)

    def _check_spaces(self, env: VecEnv) -> None:
        """Fail when this algorithm cannot act in ``env`` (unsupported or mismatched spaces)."""
        name = type(self).__name__
        for kind, space, supported in (
            ("observation space", env.observation_space, self.supported_observation_spaces),
            ("action space", env.action_space, self.supported_action_spaces),
        ):
            if not isinstance(space, supported):
                valid = ", ".join(s.__name__ for s in supported)
                ours = f"env: {name} does not support the {kind} {space}; supported: {valid}"
                sb3 = f"The algorithm only supports {supported} as {kind}s but {space} was provided. "  # SB3's words
                raise CheckFailed(sb3 + ours if kind == "action space" else ours)
        policy = self.hparams.get("policy")
        if policy in ("MlpPolicy", "CnnPolicy") and isinstance(env.observation_space, spaces.Dict):
            raise ValueError(
                f"You must use `MultiInputPolicy` when working with dict observation space, not {policy}. "
                f"policy: {name} with the Dict observation space {env.observation_space} needs 'MultiInputPolicy'"
            )
        if getattr(self, "use_sde", False) and not isinstance(env.action_space, spaces.Box):
            raise ValueError(
                "generalized State-Dependent Exploration (gSDE) can only be used with continuous actions. "
                f"use_sde: must be False with the action space {env.action_space}"
            )
        if self.observation_space is not None and self.action_space is not None:
            check_for_correct_spaces(env, self.observation_space, self.action_space)

    def build(self, observation_space: spaces.Space[Any], action_space: spaces.Space[Any]) -> None:
        """Create the networks for these spaces (idempotent)."""
        if self.policy is not None:
            return
        self.observation_space, self.action_space = observation_space, action_space
        if self.seed is not None:
            _seed_everything(self.seed)
            self.action_space.seed(self.seed)
        self.policy = self._make_policy(observation_space, action_space)
        self._build_extra()
        self._parts = parts_of(self)
        for part in self._parts:
            self.hparams.update(part.build(action_space))
        if attached_trainer(self) is None:
            self.to(get_device(self.requested_device))

    def _built(self) -> tuple[BasePolicy, spaces.Space[Any], spaces.Space[Any]]:
        """The policy and the spaces, which exist once :meth:`build` ran."""
        if self.policy is None or self.observation_space is None or self.action_space is None:
            raise RuntimeError(f"{type(self).__name__}: the networks are not built yet (give it an env, train or load)")
        return self.policy, self.observation_space, self.action_space

    def _reset_noise(self, n_envs: int) -> None:
        """gSDE: sample new exploration noise matrices (every policy that takes ``use_sde`` has ``reset_noise``)."""
        cast(NoisyPolicy, self._built()[0]).reset_noise(n_envs)

    def _set_training_mode(self, mode: bool) -> None:
        """``self.policy.set_training_mode(mode)``, as flag writes (see :class:`TrainingModeSwitch`)."""
        switch = self._mode_switch
        if switch is None or switch.policy is not self.policy:
            switch = self._mode_switch = TrainingModeSwitch(self._built()[0])
        switch(mode)

    def _make_policy(self, observation_space: spaces.Space[Any], action_space: spaces.Space[Any]) -> BasePolicy:
        """Hook: the policy for these spaces (ARS's policies take no learning-rate schedule)."""
        return self.policy_class(observation_space, action_space, self.lr_schedule, **self._policy_kwargs())

    def _policy_kwargs(self) -> dict[str, Any]:
        """The policy's constructor arguments: ``policy_kwargs`` with the optimizer settings filled in (hook)."""
        return with_optimizer_settings(self.policy_kwargs, self._default_optimizer_kwargs)

    def _default_optimizer_kwargs(self, optimizer_class: type[torch.optim.Optimizer]) -> dict[str, Any]:
        """SB3's optimizer settings for this algorithm when the user gives none (hook)."""
        if optimizer_class is torch.optim.Adam and issubclass(self.policy_class, _ADAM_EPS_POLICIES):
            return {"eps": 1e-5}
        return {}

    def _build_extra(self) -> None:
        """Hook: algorithm-specific modules and parts created after the policy (target networks)."""

    # ------------------------------------------------------------------ optimisation

    def _named_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        """The optimizers under SB3's save names, in ``configure_optimizers`` order (hook)."""
        optimizer = getattr(self.policy, "optimizer", None)
        return {"policy.optimizer": optimizer} if optimizer is not None else {}

    def _lightning_optimizers(self) -> list[Any]:
        """The optimizers in ``configure_optimizers`` order, Lightning-wrapped inside a running fit, raw outside."""
        if inside_fit(self):
            optimizers = self.optimizers()
            return list(optimizers) if isinstance(optimizers, (list, tuple)) else [optimizers]
        return list(self._named_optimizers().values())

    def _optimizer_step(
        self,
        optimizer: Any,
        loss: torch.Tensor,
        max_grad_norm: float | None = None,
        drop_grads: Sequence[torch.Tensor] = (),
    ) -> None:
        """One step of ``optimizer`` on ``loss`` (see :func:`lit_sb3.common.optim.optimizer_step`)."""
        optimizer_step(self, optimizer, loss, max_grad_norm, drop_grads)

    def _track(self, **values: torch.Tensor) -> None:
        """Accumulate update statistics (tensors, no host sync); logged as ``train/<name>`` means."""
        self._metrics.add(**values)

    def _training_env(self) -> VecEnv:
        env = self._fit_env()
        if env is None:
            raise RuntimeError(f"{type(self).__name__} is not attached to an RLTrainer with a training env")
        return env

    # ------------------------------------------------------------------ Lightning hooks

    def setup(self, stage: str) -> None:
        if self.policy is not None:
            return
        datamodule = getattr(self.trainer, "datamodule", None)
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
        self._callback = as_callback(self._rl_callback)
        if self._callback is not None:
            self._callback.init_callback(self)  # type: ignore[arg-type]
            self._callback.on_training_start({"total_timesteps": self.total_timesteps, "self": self}, {})
        if pending is not None and "rng" in pending:
            # last, so that nothing between here and the first training step draws from the restored generators
            resume.set_rng_state(pending["rng"])
            resume.set_space_rng_state(self._built()[2], pending["action_space_rng"])

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

    # ------------------------------------------------------------------ the run's budget (RLModule protocol)

    def prepare_run(self, total_timesteps: int, callback: MaybeCallback) -> None:
        """What :meth:`RLTrainer.fit` hands over before Lightning starts: the env-step budget and SB3 callback(s)."""
        self._total_timesteps = total_timesteps
        self._rl_callback = callback

    @property
    def total_timesteps(self) -> int:
        """The env-step budget of the current (or last) fit."""
        return self._total_timesteps

    @property
    def _current_progress_remaining(self) -> float:
        total = self.total_timesteps
        return 1.0 - float(self.num_timesteps) / float(total) if total > 0 else 1.0

    def _stop_if_budget_reached(self) -> None:
        if self.num_timesteps >= self.total_timesteps:
            self._stop_training()

    def _stop_training(self) -> None:
        """End the fit after this step (the budget is spent, or an SB3 callback returned False)."""
        self.trainer.should_stop = True

    # ------------------------------------------------------------------ SB3's surface: device

    @property
    def device(self) -> torch.device:
        """Where the model's tensors are (Lightning's ``device``)."""
        return super().device

    @device.setter
    def device(self, device: torch.device | str) -> None:
        """SB3 lets users set ``model.device``; here that moves the model there (to the CPU when that device is
        unavailable, as SB3's ``get_device`` does): a Lightning module's device is where its tensors are."""
        self.to(get_device(device))

    # ------------------------------------------------------------------ env access

    def _fit_env(self) -> VecEnv | None:
        """The training env of the trainer's datamodule while a fit runs, else None."""
        trainer = attached_trainer(self)
        datamodule = getattr(trainer, "datamodule", None) if trainer is not None else None
        if datamodule is None or not hasattr(datamodule, "get_env"):
            return None
        env: VecEnv | None = datamodule.get_env("fit", resolve=False)
        return env

    @property
    def env(self) -> VecEnv | None:
        """SB3's ``env``: the env being trained on during a fit, else the one given to the constructor, ``load``,
        ``set_env`` or ``learn`` (None when there is none). Settable and deletable (``del model.env`` forgets it)."""
        return self._fit_env() or self._env

    @env.setter
    def env(self, env: VecEnv | None) -> None:
        self._env = env

    @env.deleter
    def env(self) -> None:
        self._env = None

    def get_env(self) -> VecEnv | None:
        """SB3-style: the env being trained on, else the one given to the constructor or ``learn``."""
        return self.env

    def set_env(self, env: GymEnv | str, force_reset: bool = True) -> None:
        """SB3's ``set_env``: train on ``env`` from now on (its spaces must match the model's).

        :param force_reset: reset ``env`` at the next ``learn`` (SB3's default); False continues from the last
            observation when the next ``learn`` keeps counting (``reset_num_timesteps=False``)
        """
        vec_env = to_vec_env(env)
        if self.observation_space is not None and self.action_space is not None:
            check_for_correct_spaces(vec_env, self.observation_space, self.action_space)
        if self.n_envs is not None and vec_env.num_envs != self.n_envs:  # a model that never had an env takes any
            name = type(self).__name__
            raise CheckFailed(  # SB3's words, then ours
                "The number of environments to be set is different from the number of environments in the model: "
                f"({vec_env.num_envs} != {self.n_envs}), whereas `set_env` requires them to be the same. To load a "
                f"model with a different number of environments, you must use `{name}.load(path, env)` instead. "
                f"env: learn(env=...) also trains on another number of envs"
            )
        self.n_envs = vec_env.num_envs
        self._env = vec_env
        if force_reset:
            self._last_obs = None
        else:
            self._seeded_env = vec_env

    def get_vec_normalize_env(self) -> VecNormalize | None:
        env = self.get_env()
        return unwrap_vec_normalize(env) if env is not None else None

    # ------------------------------------------------------------------ SB3's logger

    @property
    def logger(self) -> Any:
        """SB3's ``logger`` (``model.logger.record(...)``, what SB3 callbacks use); inside a fit, the attributes of a
        Lightning logger (``self.logger.experiment``, ``log_metrics``, ...) reach the trainer's logger."""
        return self.sb3_logger

    def set_logger(self, logger: Any) -> None:
        """SB3's ``set_logger``: record into this SB3 ``Logger`` from now on (``learn`` no longer replaces it)."""
        self.sb3_logger = logger
        self._custom_logger = True

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
        record_rollout_stats(
            self.sb3_logger,
            self.ep_info_buffer,
            self.ep_success_buffer,
            self.num_timesteps,
            self.num_timesteps - self._num_timesteps_at_start,
            self._start_time,
        )

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

    # ------------------------------------------------------------------ saving and loading: the one hook pair

    def _extra_state(self, fmt: StateFormat = CHECKPOINT) -> dict[str, Any]:
        """What this algorithm keeps besides its parameters and optimizer states, in format ``fmt`` (see the module
        docstring); subclasses extend the dict (and check ``fmt`` when an entry belongs to one format only)."""
        state = self._base_state(fmt)
        for part in self._parts:
            state.update(part.state(fmt))
        return state

    def _load_extra_state(self, state: dict[str, Any], fmt: StateFormat = CHECKPOINT) -> None:
        """Restore what :meth:`_extra_state` returned (the networks are built already); a checkpoint's env state
        waits for the training env (:meth:`_resume_training_state` at train start)."""
        for part in self._parts:
            part.load_state(state, fmt)
        self._load_base_state(state, fmt)

    def _resume_training_state(self, env: VecEnv, state: dict[str, Any]) -> None:
        """Put ``env`` and the collection state where the checkpoint left them: the env's resets and actions
        replayed, VecNormalize's statistics, the last observation (subclasses extend)."""
        log = resume.ActionLog.from_state(state["env"]["log"])
        log.replay(env)
        resume.set_vecnormalize_state(env, state["env"]["vecnormalize"])
        self._action_log, self._seeded_env = log, env
        self._last_obs = resume.from_tree(state["env"]["last_obs"])
        self._last_episode_starts = resume.from_tree(state["env"]["last_episode_starts"])

    def _base_state(self, fmt: StateFormat) -> dict[str, Any]:
        """The entries every algorithm keeps in format ``fmt`` (see :mod:`lit_sb3.common.saved_state`)."""
        observation_space, action_space = self.observation_space, self.action_space
        if observation_space is None or action_space is None:
            raise RuntimeError(f"{type(self).__name__}: the networks are not built yet, so there is no state to save")
        if fmt == ZIP:
            # "device" is where this process ran, not part of the model: SB3's load would take it over its argument
            data: dict[str, Any] = {k: v for k, v in self.hparams.items() if k != "device"}
            # what Lightning could not keep (lambdas): saved as SB3 saves it, so that it is never lost silently
            data.update(unsaved_hyperparameters(self))
            # SB3's load copies data over its attributes, where "*_kwargs" are dicts, never None
            data.update({k: {} for k, v in data.items() if k.endswith("_kwargs") and v is None})
            data.update(
                policy_class=self.policy_class,
                policy_kwargs=dict(self.policy_kwargs),
                observation_space=observation_space,
                action_space=action_space,
                n_envs=self.n_envs or (self._env.num_envs if self._env is not None else 1),
                num_timesteps=self.num_timesteps,
                _n_updates=self._n_updates,
            )
            return data
        state: dict[str, Any] = {
            "observation_space": space_to_dict(observation_space),
            "action_space": space_to_dict(action_space),
            "num_timesteps": self.num_timesteps,
            "n_updates": self._n_updates,
            "episode_num": self._episode_num,
            "rng": resume.rng_state(),
            "action_space_rng": resume.space_rng_state(action_space),
            "ep_info_buffer": resume.to_tree(list(self.ep_info_buffer)),
            "ep_success_buffer": resume.to_tree(list(self.ep_success_buffer)),
        }
        env = self._seeded_env
        if self._action_log is not None and env is not None and self._last_obs is not None:
            state["env"] = {
                "log": self._action_log.state(),
                "vecnormalize": resume.vecnormalize_state(env),
                "last_obs": resume.to_tree(self._last_obs),
                "last_episode_starts": resume.to_tree(self._last_episode_starts),
            }
        return state

    def _load_base_state(self, state: dict[str, Any], fmt: StateFormat) -> None:
        """Restore what :meth:`_base_state` wrote; a checkpoint's training state waits in ``_pending_resume`` for
        the training env (applied at train start)."""
        if fmt == ZIP:
            self.num_timesteps = int(state.get("num_timesteps", 0))
            self._n_updates = int(state.get("_n_updates", 0))
            self.n_envs = state.get("n_envs")
            for name in state.get(INCLUDED_KEY) or []:
                if name in state:
                    setattr(self, name, state[name])
            return
        self.num_timesteps = int(state["num_timesteps"])
        self._n_updates = int(state.get("n_updates", 0))
        self._episode_num = int(state.get("episode_num", 0))
        self.ep_info_buffer.extend(resume.from_tree(state.get("ep_info_buffer", [])))
        self.ep_success_buffer.extend(resume.from_tree(state.get("ep_success_buffer", [])))
        self._pending_resume = state if "rng" in state else None

    # ------------------------------------------------------------------ Lightning checkpoints

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        if self.observation_space is not None:
            checkpoint[CKPT_KEY] = self._extra_state(CHECKPOINT)
            checkpoint[CKPT_KEY][UNSAVED_KEY] = sorted(unsaved_hyperparameters(self))

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        if attached_trainer(self) is not None:  # resuming into a model the caller built (load_from_checkpoint: its own)
            warn_about_changed_hyperparameters(self, checkpoint.get("hyper_parameters") or {})
        state = checkpoint.get(CKPT_KEY)
        if state is None:
            return
        self.build(space_from_dict(state["observation_space"]), space_from_dict(state["action_space"]))
        self._load_extra_state(state, CHECKPOINT)
        self._unsaved_in_checkpoint = list(state.get(UNSAVED_KEY) or [])

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
        if weights_only is None and is_trusted():  # LIT_SB3_TRUST=1 / lit_sb3.safe_load.trusted()
            weights_only = False
        local = isinstance(checkpoint_path, (str, Path)) and "://" not in str(checkpoint_path)
        with trusted_checkpoint(checkpoint_path if local and weights_only is not False else None):
            model = super().load_from_checkpoint(
                checkpoint_path,
                map_location=map_location,
                hparams_file=hparams_file,
                strict=strict,
                weights_only=True if weights_only is None else weights_only,
                **kwargs,
            )
        missing = [name for name in getattr(model, "_unsaved_in_checkpoint", []) if name not in kwargs]
        if missing:  # the model was built with the defaults instead: never hand it back as the saved one
            raise CheckpointError(
                f"load_from_checkpoint: the checkpoint has no {', '.join(missing)} (code, e.g. a lambda, which "
                f"Lightning does not keep in a checkpoint); give it again: load_from_checkpoint(path, "
                f"{', '.join(f'{name}=...' for name in missing)})"
            )
        return model

    # ------------------------------------------------------------------ SB3 parameters and zips

    def get_parameters(self) -> dict[str, dict[str, Any]]:
        """``{"policy": state_dict, "policy.optimizer": state_dict, ...}`` as SB3 returns it."""
        if self.policy is None:
            raise RuntimeError("get_parameters: the networks are not built yet")
        params = {"policy": self.policy.state_dict()}
        for name, optimizer in self._named_optimizers().items():
            params[name] = optimizer.state_dict()
        return params

    def set_parameters(
        self,
        load_path_or_dict: str | dict[str, dict[str, Any]],
        exact_match: bool = True,
        device: torch.device | str = "auto",
    ) -> None:
        """Load parameters from a ``save`` zip or a ``get_parameters`` dict."""
        if isinstance(load_path_or_dict, dict):
            params = load_path_or_dict
        else:
            params = zips.read_parameters(load_path_or_dict, device)
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
        """SB3-style zip: hyperparameters, spaces and counters (``data``) plus parameters (``params``).

        :param exclude: ``data`` entries to leave out (except those also in ``include``, as in SB3)
        :param include: attributes ``save`` leaves out by default to keep as well (e.g. ``["_last_obs",
            "_last_episode_starts"]``, which ``load(env=..., force_reset=False)`` continues from); ``load`` puts
            them back
        """
        zips.save_zip(self, path, exclude, include)

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
        trusted: bool | None = None,
        **kwargs: Any,
    ) -> SelfBaseAlgorithm:
        """Load a zip written by ``save`` (or by SB3's own ``save`` of the same algorithm).

        Safe by default: values come from ``custom_objects``, the plain-JSON mirror ``save`` writes, or the zip's
        ``:serialized:`` (cloudpickle) entries read through lit_sb3's allow-list (:mod:`lit_sb3.safe_load`: how an
        SB3-written zip loads); a needed value naming anything else is refused in one line. ``trusted=True`` (or,
        when ``trusted`` is not given, ``LIT_SB3_TRUST=1`` / ``lit_sb3.safe_load.trusted()``) unpickles everything.

        :param force_reset: as in SB3: reset ``env`` before training. ``False`` continues ``env`` from the
            observation the zip holds (SB3's zips, or ``save(include=["_last_obs", "_last_episode_starts"])``)
            when the next ``learn`` keeps counting (``reset_num_timesteps=False``)
        """
        return zips.load_zip(cls, path, env, device, custom_objects, print_system_info, force_reset, trusted, kwargs)

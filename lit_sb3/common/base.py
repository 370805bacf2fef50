"""``BaseAlgorithm``: what every lit_sb3 algorithm shares as a LightningModule (spaces, policy, optimizers, the
training env's seeding and resume, env-step accounting); SB3's attribute surface is :mod:`lit_sb3.common.sb3_surface`,
saving and loading :mod:`lit_sb3.common.persistence`."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Protocol, TypeVar, cast

import lightning as L
import numpy as np
import torch
from gymnasium import spaces
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.policies import ActorCriticPolicy, BasePolicy
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback
from stable_baselines3.common.utils import FloatSchedule, check_for_correct_spaces, get_device
from stable_baselines3.common.utils import set_random_seed as _seed_everything
from stable_baselines3.common.vec_env import VecEnv

from lit_sb3.common import resume
from lit_sb3.common.envs import to_vec_env
from lit_sb3.common.episodes import Acting
from lit_sb3.common.learn import learn_method, setup_learn
from lit_sb3.common.optim import MetricTracker, inside_fit, optimizer_step
from lit_sb3.common.optimizers import with_optimizer_settings
from lit_sb3.common.parts import Part, parts_of
from lit_sb3.common.persistence import Persistence
from lit_sb3.common.saved_state import NOT_HPARAMS
from lit_sb3.common.sb3_bridge import as_callback, make_sb3_logger
from lit_sb3.common.sb3_surface import SB3Surface
from lit_sb3.common.seeding import RANK_SEED_STRIDE
from lit_sb3.common.training_mode import TrainingModeSwitch
from lit_sb3.common.utils import CheckFailed, resolve_policy_class
from lit_sb3.lightning_compat import attached_trainer

# Policies whose Adam defaults to eps=1e-5 (instead of torch's 1e-8) when they receive no optimizer_kwargs.
_ADAM_EPS_POLICIES = (ActorCriticPolicy, MaskableActorCriticPolicy)

SelfBaseAlgorithm = TypeVar("SelfBaseAlgorithm", bound="BaseAlgorithm")


ALL_OBSERVATION_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary, spaces.Dict)
ALL_ACTION_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)


class NoisyPolicy(Protocol):
    """A policy with gSDE exploration (``use_sde``): its noise matrices are resampled."""

    def reset_noise(self, n_envs: int = 1) -> None: ...


class BaseAlgorithm(Persistence, Acting, SB3Surface, L.LightningModule):
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
        return setup_learn(self, total_timesteps, callback, reset_num_timesteps)

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

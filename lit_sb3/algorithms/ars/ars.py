"""Augmented Random Search (ARS) as a LightningModule: gradient-free, one training step = one ARS iteration."""

from __future__ import annotations

import copy
import warnings
from collections import deque
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import numpy as np
import torch
from gymnasium import spaces
from sb3_contrib.ars.policies import ARSPolicy, LinearPolicy, MlpPolicy
from sb3_contrib.common.vec_env import AsyncEval
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.running_mean_std import RunningMeanStd
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback, Schedule
from stable_baselines3.common.utils import FloatSchedule, obs_as_tensor
from stable_baselines3.common.vec_env import VecEnv, VecNormalize
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from lit_sb3.algorithms.ars.episodes import EpisodeTally, Iterations
from lit_sb3.algorithms.ars.update import ars_update, perturbed_candidates
from lit_sb3.common import zips
from lit_sb3.common.base import BaseAlgorithm
from lit_sb3.common.envs import is_monitored
from lit_sb3.common.optimizers import implementation_only
from lit_sb3.common.saved_state import CHECKPOINT, ZIP, StateFormat
from lit_sb3.common.sb3_calls import accepts_sb3_constructor_form, accepts_sb3_learn_form
from lit_sb3.common.utils import env_actions, outside_autocast

SelfARS = TypeVar("SelfARS", bound="ARS")

# the policies are sb3-contrib's; the names the constructor's ``policy`` accepts
POLICY_ALIASES: dict[str, type[ARSPolicy]] = {"LinearPolicy": LinearPolicy, "MlpPolicy": MlpPolicy}


class ARS(BaseAlgorithm):
    """Augmented Random Search: https://arxiv.org/abs/1803.07055.

    Original implementation: https://github.com/modestyachts/ARS
    C++/Cuda Implementation: https://github.com/google-research/tiny-differentiable-simulator/
    150 LOC Numpy Implementation: https://github.com/alexis-jacq/numpy_ARS/blob/master/asr.py

    Each iteration samples ``n_delta`` Gaussian directions, evaluates the ``2 * n_delta`` perturbed policies for
    ``n_eval_episodes`` episodes each (on the training env, or in worker processes with ``learn(async_eval=...)``)
    and moves the weights along the best directions. Every env step of every candidate counts in ``num_timesteps``.
    Arguments and defaults are sb3-contrib's.

    :param policy: the policy to train, an ``ARSPolicy`` subclass or one of "LinearPolicy", "MlpPolicy"
    :param n_delta: random perturbations of the policy tried at each update step
    :param n_top: best perturbations used in each update step (None: ``n_delta``)
    :param learning_rate: step size, constant or schedule of the progress remaining (1 -> 0)
    :param delta_std: exploration noise (std of the perturbations), constant or schedule
    :param zero_policy: zero the policy weights before training
    :param alive_bonus_offset: added to the reward at every step of a candidate's evaluation (cancels alive bonuses)
    :param n_eval_episodes: episodes evaluated per candidate
    :param policy_kwargs: extra policy constructor arguments
    :param stats_window_size: kept for SB3 compatibility; as in sb3-contrib the rollout statistics cover the last
        iteration's episodes
    :param seed: random seed
    :param verbose: 0 silent, 1 SB3's metric table
    :param device: device outside a trainer
    :param _init_setup_model: build the networks at once when ``env`` is given
    :param env: SB3-style: train on this env in ``learn``
    """

    policy_aliases: ClassVar[dict[str, type[ARSPolicy]]] = POLICY_ALIASES
    policy_class: type[ARSPolicy]
    policy: ARSPolicy  # None until the networks are built (as SB3 declares it)
    supported_action_spaces: ClassVar[tuple[type[spaces.Space[Any]], ...]] = (spaces.Box, spaces.Discrete)
    # ARSPolicy flattens its input: every space but Dict (no multi-input extractor) works
    supported_observation_spaces: ClassVar[tuple[type[spaces.Space[Any]], ...]] = (
        spaces.Box,
        spaces.Discrete,
        spaces.MultiDiscrete,
        spaces.MultiBinary,
    )
    default_log_interval: ClassVar[int] = 1

    @accepts_sb3_constructor_form
    def __init__(
        self,
        policy: str | type[ARSPolicy],
        n_delta: int = 8,
        n_top: int | None = None,
        learning_rate: float | Schedule = 0.02,
        delta_std: float | Schedule = 0.05,
        zero_policy: bool = True,
        alive_bonus_offset: float = 0,
        n_eval_episodes: int = 1,
        policy_kwargs: dict[str, Any] | None = None,
        stats_window_size: int = 100,
        seed: int | None = None,
        verbose: int = 0,
        device: torch.device | str = "cpu",
        _init_setup_model: bool = True,
        *,
        env: GymEnv | str | None = None,
        tensorboard_log: str | None = None,
    ) -> None:
        super().__init__(policy, learning_rate, policy_kwargs, stats_window_size, verbose, seed, device, env)
        self.n_delta = n_delta
        if n_top is not None and n_top > n_delta:  # as sb3-contrib: keep at most all the directions
            warnings.warn(f"n_top: {n_top} > n_delta = {n_delta}; using n_top = n_delta", stacklevel=3)
            n_top = n_delta
        self.n_top = n_delta if n_top is None else n_top
        self.pop_size = 2 * n_delta
        self._delta_std_raw = delta_std
        self.delta_std_schedule = FloatSchedule(delta_std)
        self.zero_policy = zero_policy
        self.alive_bonus_offset = alive_bonus_offset
        self.n_eval_episodes = n_eval_episodes
        self._candidate_policies: list[ARSPolicy] = []  # a plain list: the copy is no submodule, so not saved
        self._async_eval: AsyncEval | None = None
        self._continue_training = True
        self._vec_normalize_env: VecNormalize | None = None
        self._old_count = 0.0  # observation count already shared with the workers (async_eval with VecNormalize)
        self._finish_init(_init_setup_model, tensorboard_log)

    # ------------------------------------------------------------------ checks and construction

    def _validate_hyperparameters(self) -> None:
        super()._validate_hyperparameters()
        checks = [
            ("n_delta", self.n_delta >= 1, ">= 1"),
            ("n_top", self.n_top >= 1, ">= 1"),
            ("n_eval_episodes", self.n_eval_episodes >= 1, ">= 1"),
        ]
        for name, ok, rule in checks:
            if not ok:
                raise ValueError(f"{name}: must be {rule}, got {getattr(self, name)}")

    def check_env(self, env: VecEnv) -> None:
        """Training needs steps of some size; acting does not (the Zoo loads agents with ``learning_rate=0.0``)."""
        super().check_env(env)
        for name, value in (("learning_rate", self.learning_rate), ("delta_std", self._delta_std_raw)):
            if isinstance(value, (int, float)) and value <= 0:
                raise ValueError(f"{name}: must be > 0 to train (a float or a schedule), got {value}")

    def _make_policy(self, observation_space: spaces.Space[Any], action_space: spaces.Space[Any]) -> ARSPolicy:
        return self.policy_class(observation_space, action_space, **self._policy_kwargs())

    def _policy_kwargs(self) -> dict[str, Any]:
        """The policy's own arguments only: an ARS policy has no optimizer (sb3_parity's choice does not apply)."""
        kwargs = dict(self.policy_kwargs)
        if implementation_only(kwargs.get("optimizer_kwargs")):
            del kwargs["optimizer_kwargs"]
        return kwargs

    def _build_extra(self) -> None:
        if self.zero_policy:
            with torch.no_grad():
                for param in self.policy.parameters():
                    param.zero_()

    @property
    def n_params(self) -> int:
        """Length of the flat weight vector that ARS perturbs."""
        return sum(p.numel() for p in self.policy.parameters())

    def configure_optimizers(self) -> None:
        """ARS has no gradient and no optimizer."""
        return None

    def train_dataloader(self) -> Iterations:
        return Iterations()

    # ------------------------------------------------------------------ training loop

    def on_train_start(self) -> None:
        super().on_train_start()
        self._candidate_policies = []  # rebuilt from the policy as it is now (device, architecture)
        self._vec_normalize_env = self.get_vec_normalize_env()
        self._continue_training = True

    def training_step(self, batch: Any, batch_idx: int) -> None:
        """One ARS iteration: sample directions, evaluate the candidates, step along the best directions."""
        if self.num_timesteps >= self.total_timesteps or not self._do_one_update(self._callback, self._async_eval):
            self._stop_training()
            return
        if self.log_interval and self._n_updates % self.log_interval == 0:
            self.dump_logs()
        self._stop_if_budget_reached()

    def _do_one_update(self, callback: BaseCallback | None, async_eval: AsyncEval | None) -> bool:
        """Sample, evaluate and update once; False (and no update) when a callback stopped training."""
        progress = self._current_progress_remaining
        delta_std = self.delta_std_schedule(progress)
        learning_rate = self.lr_schedule(progress)
        weights = parameters_to_vector(self.policy.parameters()).detach()
        deltas = torch.normal(mean=0.0, std=1.0, size=(self.n_delta, weights.numel()), device=weights.device)
        with torch.no_grad(), outside_autocast(weights.device):
            returns = self.evaluate_candidates(perturbed_candidates(weights, deltas, delta_std), callback, async_eval)
        if not self._continue_training:
            return False
        update = ars_update(weights, deltas, returns, self.n_top, learning_rate)
        vector_to_parameters(update.weights, self.policy.parameters())
        record = self.sb3_logger.record
        record("train/iterations", self._n_updates, exclude="tensorboard")
        record("train/delta_std", delta_std)
        record("train/learning_rate", learning_rate)
        record("train/step_size", update.step_size.item())
        record("rollout/return_std", update.return_std.item())
        self._n_updates += 1
        return True

    # ------------------------------------------------------------------ entry point

    @accepts_sb3_learn_form
    # ---- the candidates' scores: each perturbed policy's episodes, on the training env or in AsyncEval workers.
    # A candidate's score is its summed episode returns plus ``alive_bonus_offset`` per step; every env step a
    # candidate takes counts in ``num_timesteps`` (SB3 callbacks see it at each step, or once per round of worker
    # steps); with VecNormalize and workers, the observation statistics are merged across workers after each iteration.

    def _candidate_policy(self) -> ARSPolicy:
        """A copy of the policy that loads one candidate's weights after the other (the policy keeps its own)."""
        if not self._candidate_policies:
            policy = copy.deepcopy(self.policy).requires_grad_(False)
            policy.set_training_mode(False)
            self._candidate_policies.append(policy)
        return self._candidate_policies[0]

    def evaluate_candidates(
        self, candidate_weights: torch.Tensor, callback: BaseCallback | None, async_eval: AsyncEval | None
    ) -> torch.Tensor:
        """Evaluate each candidate.

        :param candidate_weights: The candidate weights to be evaluated.
        :param callback: Callback that will be called at each step (or after evaluation in the multiprocess version)
        :param async_eval: The object for asynchronous evaluation of candidates.
        :return: The episodic return for each candidate.
        """
        self.ep_info_buffer = deque()  # as in sb3-contrib, the rollout statistics cover this iteration only
        if callback is not None:
            callback.on_rollout_start()
        if async_eval is not None:
            returns = self._evaluate_in_workers(candidate_weights, callback, async_eval)
        else:
            returns = self._evaluate_here(candidate_weights, callback)
        if callback is not None:
            callback.on_rollout_end()
        return returns

    def _candidate_return(self, episode_rewards: list[float], episode_lengths: list[int]) -> float:
        """A candidate's score: its summed episode returns plus the alive-bonus offset for every step taken."""
        for reward, length in zip(episode_rewards, episode_lengths):
            self.ep_info_buffer.append({"r": reward, "l": length})
        self._episode_num += len(episode_rewards)
        return float(sum(episode_rewards)) + self.alive_bonus_offset * float(sum(episode_lengths))

    def _evaluate_here(self, candidate_weights: torch.Tensor, callback: BaseCallback | None) -> torch.Tensor:
        """Candidates one after the other on the training env (or, outside a trainer, the env given to ARS)."""
        env = self.get_env()
        if env is None:
            raise RuntimeError("evaluate_candidates: no env to evaluate on (train with learn/RLTrainer, or pass env=)")
        policy = self._candidate_policy()
        monitored = is_monitored(env)
        returns = torch.zeros(len(candidate_weights), device=candidate_weights.device)
        for idx, weights in enumerate(candidate_weights):
            vector_to_parameters(weights, policy.parameters())
            episodes = self._run_episodes(policy, env, monitored, callback)
            if episodes is None:
                self._continue_training = False
                break
            returns[idx] = self._candidate_return(*episodes)
        return returns

    def _run_episodes(
        self, policy: ARSPolicy, env: VecEnv, monitored: bool, callback: BaseCallback | None
    ) -> tuple[list[float], list[int]] | None:
        """``n_eval_episodes`` episodes of ``policy``, spread over the envs as SB3's ``evaluate_policy`` spreads
        them; None when a callback stops training."""
        n_envs, device, action_space = env.num_envs, self.device, self._built()[2]
        tally = EpisodeTally([(self.n_eval_episodes + i) // n_envs for i in range(n_envs)], monitored)
        uncounted = 0
        obs = self._reset_env(env)
        while tally.open:
            actions = policy(obs_as_tensor(obs, device)).cpu().numpy()
            obs, rewards, dones, infos = self._step_env(env, env_actions(actions, action_space, policy))
            if callback is not None:
                self.num_timesteps += n_envs  # a callback reads the count at every step
                callback.update_locals(locals())  # SB3 callbacks may read dones/infos (sb3-contrib gives them none)
                if not callback.on_step():
                    return None
            else:
                uncounted += n_envs  # a module attribute write per step costs more than the policy's argmax
            tally.add(rewards, dones, infos)
        self.num_timesteps += uncounted
        return tally.rewards, tally.lengths

    def _evaluate_in_workers(
        self, candidate_weights: torch.Tensor, callback: BaseCallback | None, async_eval: AsyncEval
    ) -> torch.Tensor:
        """Candidates spread over the AsyncEval workers; the env steps they took are counted (and the callback
        called once per round of worker steps) afterwards."""
        returns = torch.zeros(len(candidate_weights), device=candidate_weights.device)
        async_eval.send_jobs(candidate_weights, len(candidate_weights))
        n_steps = 0
        for idx, (episode_rewards, episode_lengths) in async_eval.get_results():
            returns[idx] = self._candidate_return(list(episode_rewards), list(episode_lengths))
            n_steps += int(np.sum(episode_lengths))
        self._share_observation_stats(async_eval)
        n_workers = len(async_eval.remotes)
        for _ in range(n_steps // n_workers):
            self.num_timesteps += n_workers
            if callback is not None and not callback.on_step():
                self._continue_training = False
                return returns
        self.num_timesteps += n_steps % n_workers
        return returns

    def _share_observation_stats(self, async_eval: AsyncEval) -> None:
        """With VecNormalize: merge the workers' observation statistics into ours, then send the merge back."""
        vec_normalize = self._vec_normalize_env
        if vec_normalize is None:
            return
        obs_rms = vec_normalize.obs_rms
        if not isinstance(obs_rms, RunningMeanStd):  # one per Dict key: ARS refuses Dict observations
            raise TypeError(
                f"async_eval: expected one RunningMeanStd of the observations, got {type(obs_rms).__name__}"
            )
        for worker_obs_rms in async_eval.get_obs_rms():
            obs_rms.combine(worker_obs_rms)
            # every worker started from the statistics we sent last time: count those observations only once
            obs_rms.count -= self._old_count
        async_eval.sync_obs_rms(obs_rms.copy())
        self._old_count = obs_rms.count

    def learn(  # sb3-contrib's signature: async_eval before progress_bar
        self: SelfARS,
        total_timesteps: int,
        env: GymEnv | str | None = None,
        callback: MaybeCallback = None,
        log_every_n_steps: int | None = 1,
        tb_log_name: str = "ARS",
        reset_num_timesteps: bool = True,
        async_eval: AsyncEval | None = None,
        progress_bar: bool = False,
        default_root_dir: str | Path | None = None,
    ) -> SelfARS:
        """Return a trained model.

        :param total_timesteps: The total number of samples (env steps) to train on
        :param env: Training environment (gym env, env-id string, or VecEnv)
        :param callback: callback(s) called at every step with state of the algorithm
        :param log_every_n_steps: dump the metrics every this many iterations
        :param tb_log_name: the name of the run for the loggers
        :param reset_num_timesteps: whether or not to reset the current timestep number (used in logging)
        :param async_eval: evaluate the candidates in worker processes; closed when training ends (as in sb3-contrib)
        :param progress_bar: show a progress bar counting env steps
        :param default_root_dir: where CSV logs go; nothing is written when None
        :raises TypeError: when ``async_eval`` is not an ``AsyncEval``
        """
        if async_eval is not None and not isinstance(async_eval, AsyncEval):
            raise TypeError(f"async_eval: expected an sb3_contrib AsyncEval or None, got {type(async_eval).__name__}")
        self._async_eval = async_eval
        try:
            return self._fit_env_steps(
                total_timesteps,
                env,
                callback,
                log_every_n_steps,
                tb_log_name,
                reset_num_timesteps,
                progress_bar,
                default_root_dir,
            )
        finally:
            self._async_eval = None
            if async_eval is not None:
                async_eval.close()

    # ------------------------------------------------------------------ persistence

    def set_parameters(
        self,
        load_path_or_dict: str | dict[str, dict[str, Any]],
        exact_match: bool = True,
        device: torch.device | str = "auto",
    ) -> None:
        """Load parameters from a ``save`` zip or a ``get_parameters`` dict (also sb3-contrib < 1.7 linear policies,
        whose single layer was named ``action_net`` instead of ``action_net.0``)."""
        if isinstance(load_path_or_dict, dict):
            params = dict(load_path_or_dict)
        else:
            params = zips.read_parameters(load_path_or_dict, device)
        if "policy" in params:
            params["policy"] = {_renamed_linear_key(k): v for k, v in params["policy"].items()}
        super().set_parameters(params, exact_match=exact_match, device=device)

    def _extra_state(self, fmt: StateFormat = CHECKPOINT) -> dict[str, Any]:
        state = super()._extra_state(fmt)
        if fmt == ZIP:  # sb3-contrib's load builds ARS with its defaults, then copies these attributes over them
            return {
                **state,
                "n_top": self.n_top,
                "pop_size": self.pop_size,
                "delta_std_schedule": self.delta_std_schedule,
            }
        return {**state, "old_count": float(self._old_count)}

    def _load_extra_state(self, state: dict[str, Any], fmt: StateFormat = CHECKPOINT) -> None:
        super()._load_extra_state(state, fmt)
        if fmt == CHECKPOINT:
            self._old_count = float(state.get("old_count", 0.0))


def _renamed_linear_key(key: str) -> str:
    """``action_net.weight`` (sb3-contrib < 1.7) -> ``action_net.0.weight``."""
    if key in ("action_net.weight", "action_net.bias"):
        return key.replace("action_net.", "action_net.0.")
    return key

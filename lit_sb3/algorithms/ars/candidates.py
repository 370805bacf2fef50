"""How ARS scores its candidates: each perturbed policy's episodes, on the training env or in AsyncEval workers.

A candidate's score is its summed episode returns plus ``alive_bonus_offset`` per step; every env step a candidate
takes counts in ``num_timesteps`` (SB3 callbacks see it at each step, or once per round of worker steps); with
VecNormalize and workers, the observation statistics are merged across workers after each iteration.
"""

from __future__ import annotations

import copy
from collections import deque
from typing import TYPE_CHECKING

import numpy as np
import torch
from sb3_contrib.ars.policies import ARSPolicy
from sb3_contrib.common.vec_env import AsyncEval
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.running_mean_std import RunningMeanStd
from stable_baselines3.common.utils import obs_as_tensor
from stable_baselines3.common.vec_env import VecEnv, VecNormalize
from torch.nn.utils import vector_to_parameters

from lit_sb3.algorithms.ars.episodes import EpisodeTally
from lit_sb3.common.envs import is_monitored
from lit_sb3.common.utils import env_actions

if TYPE_CHECKING:
    from lit_sb3.common.base import BaseAlgorithm

    _Base = BaseAlgorithm  # the class after this mixin in ARS's bases
else:
    _Base = object


class CandidateEvaluation(_Base):
    """``evaluate_candidates`` of :class:`~lit_sb3.algorithms.ars.ARS` (a mixin placed before ``BaseAlgorithm``)."""

    # what it uses of ARS (set there)
    policy: ARSPolicy  # None until the networks are built (as SB3 declares it)
    n_eval_episodes: int
    alive_bonus_offset: float
    _candidate_policies: list[ARSPolicy]
    _continue_training: bool
    _vec_normalize_env: VecNormalize | None
    _old_count: float

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

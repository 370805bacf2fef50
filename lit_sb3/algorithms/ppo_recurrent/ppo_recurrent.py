"""PPO with LSTM policies (sb3-contrib's RecurrentPPO) as a LightningModule.

The LSTM states travel with the rollout: each step feeds the previous step's states (zeroed by the policy where
an episode starts), the buffer stores the states each step started from, and the update replays whole sequences
(sb3-contrib's ``RecurrentRolloutBuffer`` cuts them at episode starts and pads them; the padding is masked out of
every mean of the loss).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import torch
from gymnasium import spaces
from sb3_contrib.common.recurrent.buffers import RecurrentDictRolloutBuffer, RecurrentRolloutBuffer
from sb3_contrib.common.recurrent.policies import (
    RecurrentActorCriticPolicy,
)
from sb3_contrib.common.recurrent.type_aliases import RNNStates
from sb3_contrib.ppo_recurrent.policies import CnnLstmPolicy, MlpLstmPolicy, MultiInputLstmPolicy
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.type_aliases import GymEnv, Schedule
from stable_baselines3.common.vec_env import VecEnv

from lit_sb3.common.learn import learn_method
from lit_sb3.common.ppo_update import ClippedSurrogateUpdate
from lit_sb3.common.saved_state import CHECKPOINT, StateFormat
from lit_sb3.common.sb3_calls import accepts_sb3_constructor_form

# the policies are sb3-contrib's; the names the constructor's ``policy`` accepts
POLICY_ALIASES = {
    "MlpLstmPolicy": MlpLstmPolicy,
    "CnnLstmPolicy": CnnLstmPolicy,
    "MultiInputLstmPolicy": MultiInputLstmPolicy,
}


class RecurrentPPO(ClippedSurrogateUpdate):
    """Proximal Policy Optimization algorithm (PPO) (clip version) with support for recurrent policies (LSTM).

    Arguments and defaults are sb3-contrib's. ``policy_kwargs`` choose the LSTM: ``lstm_hidden_size``,
    ``n_lstm_layers``, ``shared_lstm`` (one LSTM for actor and critic) or ``enable_critic_lstm`` (a second one).

    ``model.train()`` without an argument is SB3's ``train()``: one update on the gathered rollout (and the module
    is left in training mode); ``model.train(mode)`` with a mode is ``nn.Module.train``.

    :param policy: MlpLstmPolicy, CnnLstmPolicy, MultiInputLstmPolicy or a ``RecurrentActorCriticPolicy`` subclass
    :param learning_rate: constant or schedule of the progress remaining (1 -> 0)
    :param n_steps: steps per env per rollout
    :param batch_size: minibatch size in transitions (None: the whole rollout)
    :param n_epochs: passes over each rollout
    :param gamma: discount factor
    :param gae_lambda: GAE bias/variance trade-off
    :param clip_range: clipping of the probability ratio (constant or schedule)
    :param clip_range_vf: clipping of the value update (None: no clipping)
    :param normalize_advantage: normalize advantages per minibatch
    :param ent_coef: entropy coefficient
    :param vf_coef: value-loss coefficient
    :param max_grad_norm: gradient-norm clipping
    :param use_sde: generalized state-dependent exploration
    :param sde_sample_freq: resample the gSDE noise every n steps (-1: once per rollout)
    :param target_kl: stop the update early when the approximate KL exceeds 1.5 * target_kl
    :param stats_window_size: episodes averaged in the rollout statistics
    :param policy_kwargs: extra policy constructor arguments
    :param verbose: 0 silent, 1 SB3's metric table
    :param seed: random seed
    :param device: device outside a trainer
    :param _init_setup_model: build the networks at once when ``env`` is given
    :param env: SB3-style: train on this env in ``learn``
    """

    policy_aliases: ClassVar[dict[str, type[RecurrentActorCriticPolicy]]] = POLICY_ALIASES
    policy: RecurrentActorCriticPolicy  # None until the networks are built (as SB3 declares it)

    @accepts_sb3_constructor_form
    def __init__(
        self,
        policy: str | type[RecurrentActorCriticPolicy],
        learning_rate: float | Schedule = 3e-4,
        n_steps: int = 128,
        batch_size: int | None = 128,
        n_epochs: int = 10,
        gamma: float = 0.99,
        gae_lambda: float = 0.95,
        clip_range: float | Schedule = 0.2,
        clip_range_vf: float | Schedule | None = None,
        normalize_advantage: bool = True,
        ent_coef: float = 0.0,
        vf_coef: float = 0.5,
        max_grad_norm: float = 0.5,
        use_sde: bool = False,
        sde_sample_freq: int = -1,
        target_kl: float | None = None,
        stats_window_size: int = 100,
        policy_kwargs: dict[str, Any] | None = None,
        verbose: int = 0,
        seed: int | None = None,
        device: torch.device | str = "auto",
        _init_setup_model: bool = True,
        *,
        env: GymEnv | str | None = None,
        tensorboard_log: str | None = None,
    ) -> None:
        super().__init__(
            policy,
            learning_rate,
            n_steps=n_steps,
            gamma=gamma,
            gae_lambda=gae_lambda,
            ent_coef=ent_coef,
            vf_coef=vf_coef,
            max_grad_norm=max_grad_norm,
            use_sde=use_sde,
            sde_sample_freq=sde_sample_freq,
            rollout_buffer_class=None,
            rollout_buffer_kwargs=None,
            stats_window_size=stats_window_size,
            policy_kwargs=policy_kwargs,
            verbose=verbose,
            seed=seed,
            device=device,
            env=env,
            batch_size=batch_size,
            n_epochs=n_epochs,
            normalize_advantage=normalize_advantage,
        )
        self._init_clipping(clip_range, clip_range_vf, target_kl)
        self._last_lstm_states: RNNStates | None = None
        self._next_lstm_states: RNNStates | None = None
        self._finish_init(_init_setup_model, tensorboard_log)

    def _validate_hyperparameters(self) -> None:
        super()._validate_hyperparameters()
        if not issubclass(self.policy_class, RecurrentActorCriticPolicy):
            valid = ", ".join(self.policy_aliases)
            raise ValueError(
                f"policy: RecurrentPPO needs a RecurrentActorCriticPolicy ({valid}), got {self.policy_class.__name__}"
            )

    def _extra_state(self, fmt: StateFormat = CHECKPOINT) -> dict[str, Any]:
        state = super()._extra_state(fmt)
        if "env" in state and self._last_lstm_states is not None:  # the LSTM states carry across rollouts
            state["env"]["lstm_states"] = [list(self._last_lstm_states.pi), list(self._last_lstm_states.vf)]
        return state

    def _resume_training_state(self, env: VecEnv, state: dict[str, Any]) -> None:
        super()._resume_training_state(env, state)
        saved = state["env"].get("lstm_states")
        if saved is not None:
            pi, vf = ([t.to(self.device) for t in pair] for pair in saved)
            self._last_lstm_states = RNNStates(tuple(pi), tuple(vf))

    def _setup_buffers(self, env: VecEnv) -> None:
        if self.observation_space is None or self.action_space is None:
            raise RuntimeError("RecurrentPPO: the rollout buffer is made after the networks are built")
        layers, _, hidden = self.policy.lstm_hidden_state_shape
        state_shape = (layers, env.num_envs, hidden)
        if self._last_lstm_states is None or tuple(self._last_lstm_states.pi[0].shape) != state_shape:
            zeros = torch.zeros(state_shape, device=self.device)  # (hidden, cell) of the actor's and critic's LSTM
            self._last_lstm_states = RNNStates((zeros, zeros.clone()), (zeros.clone(), zeros.clone()))
        buffer_class = (
            RecurrentDictRolloutBuffer if isinstance(self.observation_space, spaces.Dict) else RecurrentRolloutBuffer
        )
        self.rollout_buffer = buffer_class(
            self.n_steps,
            self.observation_space,
            self.action_space,
            (self.n_steps, *state_shape),
            self.device,
            gamma=self.gamma,
            gae_lambda=self.gae_lambda,
            n_envs=env.num_envs,
        )

    # ------------------------------------------------------------------ rollout hooks: carry the LSTM states

    def collect_rollouts(
        self, env: VecEnv, callback: BaseCallback | None, rollout_buffer: RolloutBuffer, n_rollout_steps: int
    ) -> bool:
        """Fill ``rollout_buffer`` with ``n_rollout_steps`` steps of every env, carrying the LSTM states."""
        if not isinstance(rollout_buffer, (RecurrentRolloutBuffer, RecurrentDictRolloutBuffer)):
            raise TypeError(f"rollout_buffer: RecurrentPPO needs a recurrent rollout buffer, got {rollout_buffer}")
        return super().collect_rollouts(env, callback, rollout_buffer, n_rollout_steps)

    def _episode_starts(self, starts: np.ndarray | None) -> torch.Tensor:
        if starts is None:
            raise RuntimeError("RecurrentPPO: a rollout step before the env was reset")
        return torch.as_tensor(starts, dtype=torch.float32, device=self.device)

    @staticmethod
    def _carried(states: RNNStates | None) -> RNNStates:
        """``states`` (made with the rollout buffer, before the first rollout step)."""
        if states is None:
            raise RuntimeError("RecurrentPPO: the LSTM states are made when training starts")
        return states

    def _policy_step(self, obs: Any) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        starts = self._episode_starts(self._last_episode_starts)
        actions, values, log_probs, self._next_lstm_states = self.policy(obs, self._last_lstm_states, starts)
        return actions, values, log_probs

    def _value_of_terminal(self, obs: Any, env_index: int) -> torch.Tensor:
        """A truncated episode's last observation, valued with that env's critic state after the final step."""
        hidden, cell = self._carried(self._next_lstm_states).vf
        state = (hidden[:, env_index : env_index + 1].contiguous(), cell[:, env_index : env_index + 1].contiguous())
        return self.policy.predict_values(obs, state, self._episode_starts(np.zeros(1)))[0]

    def _store_transition(
        self,
        buffer: RolloutBuffer,
        actions: np.ndarray,
        rewards: np.ndarray,
        values: torch.Tensor,
        log_probs: torch.Tensor,
    ) -> None:
        """Store the step with the states it started from, then move on to the states after it."""
        if self._last_episode_starts is None:
            raise RuntimeError("RecurrentPPO: a transition was stored before the env was reset")
        buffer.add(  # type: ignore[call-arg]  # collect_rollouts checked that it is a recurrent buffer
            self._last_obs,
            actions,
            rewards,
            self._last_episode_starts,
            values,
            log_probs,
            lstm_states=self._last_lstm_states,
        )
        self._last_lstm_states = self._next_lstm_states

    def _last_values(self, obs: Any, dones: np.ndarray) -> torch.Tensor:
        vf_states = self._carried(self._last_lstm_states).vf  # (hidden, cell), typed tuple[Tensor, ...] by sb3-contrib
        return self.policy.predict_values(obs, vf_states, self._episode_starts(dones))  # type: ignore[arg-type]

    # ------------------------------------------------------------------ update hooks: whole padded sequences

    def _evaluate_actions(self, batch: Any, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, Any]:
        return self.policy.evaluate_actions(batch.observations, actions, batch.lstm_states, batch.episode_starts)

    def _loss_mask(self, batch: Any) -> torch.Tensor:
        mask: torch.Tensor = batch.mask  # 1 for the steps of a sequence, 0 for its padding
        return mask > 1e-8

    def train(self, mode: bool | None = None) -> RecurrentPPO:
        """Update policy using the currently gathered rollout buffer.

        ``train()`` (SB3's call) runs ``n_epochs`` of minibatch updates on a gathered rollout that no update has
        used yet (after ``collect_rollouts``); ``train(mode)`` is ``nn.Module.train`` and only switches training
        mode, as does ``train()`` when there is nothing to train on (so Lightning's ``unfreeze()`` after ``learn``
        does not train again). Both leave the module (and its policy) in training mode and return it.
        """
        if mode is not None:
            return super().train(mode)
        super().train(True)
        if self._loop.untrained:
            self.update_on_rollout()
        return self

    learn = learn_method("RecurrentPPO", log_every_n_steps=1)

"""Deep Q-Network as a LightningModule."""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from gymnasium import spaces
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.type_aliases import GymEnv, Schedule
from stable_baselines3.dqn.policies import CnnPolicy, DQNPolicy, MlpPolicy, MultiInputPolicy

from lit_sb3.common import losses
from lit_sb3.common.epsilon_greedy import EpsilonGreedy
from lit_sb3.common.learn import learn_method
from lit_sb3.common.off_policy import OffPolicyAlgorithm
from lit_sb3.common.off_policy_args import check_max_grad_norm, check_target_update_interval
from lit_sb3.common.sb3_bridge import PolicyNetwork
from lit_sb3.common.sb3_calls import accepts_sb3_constructor_form
from lit_sb3.common.targets import TargetNetworks

# the policies are SB3's; the names the constructor's ``policy`` accepts
POLICY_ALIASES = {"MlpPolicy": MlpPolicy, "CnnPolicy": CnnPolicy, "MultiInputPolicy": MultiInputPolicy}


class DQN(OffPolicyAlgorithm):
    """Deep Q-Network (DQN).

    Papers: https://arxiv.org/abs/1312.5602, https://www.nature.com/articles/nature14236. Epsilon-greedy exploration
    with a linearly decaying epsilon, Huber loss, a target network refreshed every ``target_update_interval`` env
    steps. Arguments and defaults are SB3's.

    :param policy: the policy model to use (MlpPolicy, CnnPolicy, MultiInputPolicy or a class)
    :param learning_rate: learning rate (constant or schedule of the progress remaining)
    :param buffer_size: replay buffer capacity (transitions per env)
    :param learning_starts: env steps of uniformly random actions before the first update
    :param batch_size: minibatch size of each update
    :param tau: Polyak coefficient of the target network (1: hard copy)
    :param gamma: discount factor
    :param train_freq: update every n env steps, or ``(n, "step" | "episode")``
    :param gradient_steps: updates after each collection (-1: as many as env steps collected)
    :param replay_buffer_class: replay buffer class (None: chosen from the observation space and ``n_steps``)
    :param replay_buffer_kwargs: extra replay buffer arguments
    :param optimize_memory_usage: memory-efficient replay buffer
    :param n_steps: n-step returns (NStepReplayBuffer) when > 1
    :param target_update_interval: env steps between target network updates
    :param exploration_fraction: fraction of the training budget over which epsilon decays
    :param exploration_initial_eps: initial probability of a random action
    :param exploration_final_eps: final probability of a random action
    :param max_grad_norm: gradient-norm clipping
    :param stats_window_size: episodes averaged in the rollout statistics
    :param policy_kwargs: extra policy constructor arguments
    :param verbose: 0 silent, 1 SB3's metric table
    :param seed: random seed
    :param device: device outside a trainer
    :param _init_setup_model: build the networks at once when ``env`` is given
    :param env: SB3-style: train on this env in ``learn``
    """

    policy_aliases: ClassVar[dict[str, type[DQNPolicy]]] = POLICY_ALIASES
    policy: DQNPolicy  # None until the networks are built (as SB3 declares it)
    target_update_in_env_steps: ClassVar[bool] = True
    q_net, q_net_target = PolicyNetwork(), PolicyNetwork()  # SB3's names of the policy's networks
    supported_action_spaces: ClassVar[tuple[type[spaces.Space[Any]], ...]] = (spaces.Discrete,)
    (exploration_rate, exploration_schedule, exploration_initial_eps, exploration_final_eps, exploration_fraction) = (
        EpsilonGreedy.sb3_attributes("exploration")
    )

    @accepts_sb3_constructor_form
    def __init__(
        self,
        policy: str | type[DQNPolicy],
        learning_rate: float | Schedule = 1e-4,
        buffer_size: int = 1_000_000,
        learning_starts: int = 100,
        batch_size: int = 32,
        tau: float = 1.0,
        gamma: float = 0.99,
        train_freq: int | tuple[int, str] = 4,
        gradient_steps: int = 1,
        replay_buffer_class: type[ReplayBuffer] | None = None,
        replay_buffer_kwargs: dict[str, Any] | None = None,
        optimize_memory_usage: bool = False,
        n_steps: int = 1,
        target_update_interval: int = 10000,
        exploration_fraction: float = 0.1,
        exploration_initial_eps: float = 1.0,
        exploration_final_eps: float = 0.05,
        max_grad_norm: float = 10,
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
            buffer_size=buffer_size,
            learning_starts=learning_starts,
            batch_size=batch_size,
            tau=tau,
            gamma=gamma,
            train_freq=train_freq,
            gradient_steps=gradient_steps,
            replay_buffer_class=replay_buffer_class,
            replay_buffer_kwargs=replay_buffer_kwargs,
            optimize_memory_usage=optimize_memory_usage,
            action_noise=None,
            n_steps=n_steps,
            policy_kwargs=policy_kwargs,
            stats_window_size=stats_window_size,
            verbose=verbose,
            seed=seed,
            device=device,
            env=env,
        )
        self.target_update_interval = check_target_update_interval(target_update_interval)
        self.max_grad_norm = check_max_grad_norm(max_grad_norm)
        self.exploration = EpsilonGreedy(exploration_initial_eps, exploration_final_eps, exploration_fraction)
        self._finish_init(_init_setup_model, tensorboard_log)

    def _build_extra(self) -> None:
        pair = self.policy.q_net, self.policy.q_net_target
        self.target_networks = TargetNetworks(pair, settings_of=self)

    def gradient_updates(self, gradient_steps: int, batch_size: int) -> None:
        """Huber loss of the taken actions' Q-values towards the target network's one-step targets, gradients
        clipped to ``max_grad_norm``, on ``gradient_steps`` replay samples."""
        (optimizer,) = self._lightning_optimizers()
        q_net, q_net_target = self.policy.q_net, self.policy.q_net_target
        for _ in range(gradient_steps):
            data, discounts = self._replay_batch(batch_size)
            with torch.no_grad():
                target_q = losses.dqn_target(data.rewards, data.dones, discounts, q_net_target(data.next_observations))
            loss = losses.q_huber_loss(q_net(data.observations), data.actions, target_q)
            self._optimizer_step(optimizer, loss, max_grad_norm=self.max_grad_norm)
            self._track(loss=loss)
        self._n_updates += gradient_steps

    learn = learn_method("DQN", log_every_n_steps=4)

"""Quantile Regression DQN as a LightningModule."""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from gymnasium import spaces
from sb3_contrib.qrdqn.policies import CnnPolicy, MlpPolicy, MultiInputPolicy, QRDQNPolicy
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.type_aliases import GymEnv, Schedule

from lit_sb3.common import quantile
from lit_sb3.common.epsilon_greedy import EpsilonGreedy
from lit_sb3.common.learn import learn_method
from lit_sb3.common.off_policy import OffPolicyAlgorithm
from lit_sb3.common.off_policy_args import check_max_grad_norm, check_target_update_interval
from lit_sb3.common.sb3_bridge import PolicyNetwork
from lit_sb3.common.sb3_calls import accepts_sb3_constructor_form
from lit_sb3.common.targets import TargetNetworks

# the policies are sb3-contrib's; the names the constructor's ``policy`` accepts
POLICY_ALIASES = {"MlpPolicy": MlpPolicy, "CnnPolicy": CnnPolicy, "MultiInputPolicy": MultiInputPolicy}


class QRDQN(OffPolicyAlgorithm):
    """Quantile Regression Deep Q-Network (QR-DQN).

    DQN with a distributional Q-network: for every action it predicts ``n_quantiles`` quantiles of the return,
    fitted with the quantile Huber loss to the greedy next action's quantiles. Paper: https://arxiv.org/abs/1710.10044.
    Epsilon-greedy exploration and a target network refreshed every ``target_update_interval`` env steps, as in
    DQN. Arguments and defaults are sb3-contrib's.

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
    :param max_grad_norm: gradient-norm clipping (None: no clipping)
    :param stats_window_size: episodes averaged in the rollout statistics
    :param policy_kwargs: extra policy constructor arguments (``n_quantiles``, ``net_arch``, ...)
    :param verbose: 0 silent, 1 SB3's metric table
    :param seed: random seed
    :param device: device outside a trainer
    :param _init_setup_model: build the networks at once when ``env`` is given
    :param env: SB3-style: train on this env in ``learn``
    """

    policy_aliases: ClassVar[dict[str, type[QRDQNPolicy]]] = POLICY_ALIASES
    policy: QRDQNPolicy  # None until the networks are built (as SB3 declares it)
    _taus: torch.Tensor  # the quantile midpoints (a buffer registered when the networks are built)
    target_update_in_env_steps: ClassVar[bool] = True
    quantile_net, quantile_net_target = PolicyNetwork(), PolicyNetwork()  # SB3's names of the policy's networks
    supported_action_spaces: ClassVar[tuple[type[spaces.Space[Any]], ...]] = (spaces.Discrete,)
    (exploration_rate, exploration_schedule, exploration_initial_eps, exploration_final_eps, exploration_fraction) = (
        EpsilonGreedy.sb3_attributes("exploration")
    )

    @accepts_sb3_constructor_form
    def __init__(
        self,
        policy: str | type[QRDQNPolicy],
        learning_rate: float | Schedule = 5e-5,
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
        exploration_fraction: float = 0.005,
        exploration_initial_eps: float = 1.0,
        exploration_final_eps: float = 0.01,
        max_grad_norm: float | None = None,
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

    def _default_optimizer_kwargs(self, optimizer_class: type[torch.optim.Optimizer]) -> dict[str, Any]:
        if "optimizer_class" not in self.policy_kwargs:
            # sb3-contrib's QR-DQN default: the paper's Adam eps = 0.01 / batch size (sb3-contrib also sets it over
            # optimizer_kwargs given without an optimizer_class; lit_sb3 keeps those)
            return {"eps": 0.01 / self.batch_size}
        return super()._default_optimizer_kwargs(optimizer_class)

    def _build_extra(self) -> None:
        pair = self.policy.quantile_net, self.policy.quantile_net_target
        self.target_networks = TargetNetworks(pair, settings_of=self)
        # the quantile fractions of the loss, built once (a buffer: they move with the module between devices)
        self.register_buffer("_taus", quantile.quantile_midpoints(self.n_quantiles, self.device), persistent=False)

    @property
    def n_quantiles(self) -> int:
        return self.policy.n_quantiles

    def gradient_updates(self, gradient_steps: int, batch_size: int) -> None:
        """Quantile Huber loss of the taken actions' quantiles towards the target network's greedy quantiles,
        gradients clipped to ``max_grad_norm``, on ``gradient_steps`` replay samples."""
        (optimizer,) = self._lightning_optimizers()
        quantile_net, quantile_net_target = self.policy.quantile_net, self.policy.quantile_net_target
        for _ in range(gradient_steps):
            data, discounts = self._replay_batch(batch_size)
            with torch.no_grad():
                next_quantiles = quantile_net_target(data.next_observations)
                target = quantile.qrdqn_target(data.rewards, data.dones, discounts, next_quantiles)
            current = quantile.taken_action_quantiles(quantile_net(data.observations), data.actions)
            loss = quantile.quantile_huber_loss(current, target, self._taus, sum_over_quantiles=True)
            self._optimizer_step(optimizer, loss, max_grad_norm=self.max_grad_norm)
            self._track(loss=loss)
        self._n_updates += gradient_steps

    learn = learn_method("QRDQN", log_every_n_steps=4)

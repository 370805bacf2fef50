"""Trust Region Policy Optimization (sb3-contrib's TRPO) as a LightningModule.

One Lightning epoch = one rollout and one ``training_step`` on the whole of it: a natural-gradient step of the
actor (conjugate gradient on Fisher-vector products, then a backtracking line search that keeps the KL to the
rollout's policy below ``target_kl``), followed by ``n_critic_updates`` passes of minibatch regression of the value
function.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from typing import Any, ClassVar, cast

import torch
from gymnasium import spaces
from sb3_contrib.common.utils import conjugate_gradient_solver
from sb3_contrib.trpo.policies import CnnPolicy, MlpPolicy, MultiInputPolicy
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.distributions import kl_divergence
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.type_aliases import GymEnv, Schedule
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from lit_sb3.common import losses
from lit_sb3.common.learn import learn_method
from lit_sb3.common.on_policy import OnPolicyAlgorithm
from lit_sb3.common.sb3_calls import accepts_sb3_constructor_form
from lit_sb3.common.trust_region import backtracking_line_search, flat_grad, max_step_size
from lit_sb3.common.utils import unchecked_distributions

# the policies are sb3-contrib's; the names the constructor's ``policy`` accepts
POLICY_ALIASES = {"MlpPolicy": MlpPolicy, "CnnPolicy": CnnPolicy, "MultiInputPolicy": MultiInputPolicy}


class TRPO(OnPolicyAlgorithm):
    """Trust Region Policy Optimization (TRPO).

    Paper: https://arxiv.org/abs/1502.05477. Arguments and defaults are sb3-contrib's.

    :param policy: the policy model to use (MlpPolicy, CnnPolicy, MultiInputPolicy or a class)
    :param learning_rate: learning rate of the value function's optimizer (constant or schedule)
    :param n_steps: steps per env per rollout
    :param batch_size: minibatch size of the value-function regression
    :param gamma: discount factor
    :param cg_max_steps: conjugate-gradient iterations for the step direction
    :param cg_damping: damping added to the Fisher matrix (its diagonal) for numerical stability
    :param line_search_shrinking_factor: step shrink factor of the backtracking line search, in (0, 1)
    :param line_search_max_iter: step sizes tried by the line search
    :param n_critic_updates: passes of value-function regression over each rollout
    :param gae_lambda: GAE bias/variance trade-off
    :param use_sde: generalized state-dependent exploration
    :param sde_sample_freq: resample the gSDE noise every n steps (-1: once per rollout)
    :param rollout_buffer_class: rollout buffer class (None: chosen from the observation space)
    :param rollout_buffer_kwargs: extra rollout buffer arguments
    :param normalize_advantage: normalize the advantages of each rollout
    :param target_kl: the trust region: largest KL divergence between the rollout's policy and the updated one
    :param sub_sampling_factor: use every k-th transition of the rollout for the actor step (cheaper Fisher products)
    :param stats_window_size: episodes averaged in the rollout statistics
    :param policy_kwargs: extra policy constructor arguments
    :param verbose: 0 silent, 1 SB3's metric table
    :param seed: random seed
    :param device: device outside a trainer
    :param _init_setup_model: build the networks at once when ``env`` is given
    :param env: SB3-style: train on this env in ``learn``
    """

    policy_aliases: ClassVar[dict[str, type[ActorCriticPolicy]]] = POLICY_ALIASES
    policy: ActorCriticPolicy  # None until the networks are built (as SB3 declares it)

    @accepts_sb3_constructor_form
    def __init__(
        self,
        policy: str | type[ActorCriticPolicy],
        learning_rate: float | Schedule = 1e-3,
        n_steps: int = 2048,
        batch_size: int = 128,
        gamma: float = 0.99,
        cg_max_steps: int = 15,
        cg_damping: float = 0.1,
        line_search_shrinking_factor: float = 0.8,
        line_search_max_iter: int = 10,
        n_critic_updates: int = 10,
        gae_lambda: float = 0.95,
        use_sde: bool = False,
        sde_sample_freq: int = -1,
        rollout_buffer_class: type[RolloutBuffer] | None = None,
        rollout_buffer_kwargs: dict[str, Any] | None = None,
        normalize_advantage: bool = True,
        target_kl: float = 0.01,
        sub_sampling_factor: int = 1,
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
            ent_coef=0.0,
            vf_coef=0.0,
            max_grad_norm=float("inf"),  # unused: the critic is not clipped, the actor's step is bounded by the KL
            use_sde=use_sde,
            sde_sample_freq=sde_sample_freq,
            rollout_buffer_class=rollout_buffer_class,
            rollout_buffer_kwargs=rollout_buffer_kwargs,
            stats_window_size=stats_window_size,
            policy_kwargs=policy_kwargs,
            verbose=verbose,
            seed=seed,
            device=device,
            env=env,
            batch_size=batch_size,
            normalize_advantage=normalize_advantage,
        )
        self.cg_max_steps = cg_max_steps
        self.cg_damping = cg_damping
        self.line_search_shrinking_factor = line_search_shrinking_factor
        self.line_search_max_iter = line_search_max_iter
        self.n_critic_updates = n_critic_updates
        self.target_kl = target_kl
        self.sub_sampling_factor = sub_sampling_factor
        self._finish_init(_init_setup_model, tensorboard_log)

    def _validate_hyperparameters(self) -> None:
        super()._validate_hyperparameters()
        checks = [
            ("batch_size", self.batch_size is not None and self.batch_size >= 1, ">= 1"),
            ("cg_max_steps", self.cg_max_steps >= 1, ">= 1"),
            ("cg_damping", self.cg_damping >= 0, ">= 0"),
            ("line_search_shrinking_factor", 0 < self.line_search_shrinking_factor < 1, "in (0, 1)"),
            ("line_search_max_iter", self.line_search_max_iter >= 1, ">= 1"),
            ("n_critic_updates", self.n_critic_updates >= 1, ">= 1"),
            ("target_kl", self.target_kl > 0, "> 0"),
            ("sub_sampling_factor", self.sub_sampling_factor >= 1, ">= 1"),
        ]
        for name, ok, rule in checks:
            if not ok:
                raise ValueError(f"{name}: must be {rule}, got {getattr(self, name)}")

    def _minibatch_size(self) -> int | None:
        return None  # one training_step per rollout, on all of it; the critic makes its own minibatches

    # ------------------------------------------------------------------ the update

    def training_step(self, batch: Any, batch_idx: int) -> None:
        """TRPO update: CG actor update + critic gradient descent."""
        buffer = self.rollout_buffer
        if buffer is None:  # the batch is the buffer's rollout
            raise RuntimeError("TRPO: an update without a rollout buffer")
        with unchecked_distributions():
            actor_params = self._actor_step(batch)
            (optimizer,) = self._lightning_optimizers()
            for _ in range(self.n_critic_updates):
                for minibatch in buffer.get(self.batch_size):
                    values = self.policy.predict_values(minibatch.observations).flatten()
                    loss = losses.value_loss(values, minibatch.returns)
                    self._track(value_loss=loss)
                    self._optimizer_step(optimizer, loss, drop_grads=actor_params)
        self._n_updates += 1

    def _actor_step(self, batch: Any) -> list[nn.Parameter]:
        """One natural-gradient step of the actor inside the KL trust region; returns the actor's parameters."""
        k = self.sub_sampling_factor
        observations, actions = _every(batch.observations, k), _every(batch.actions, k)
        old_log_prob, advantages = _every(batch.old_log_prob, k), _every(batch.advantages, k)
        if isinstance(self.action_space, spaces.Discrete):
            actions = actions.long().flatten()
        if self.normalize_advantage:
            advantages = losses.normalize_advantages(advantages)

        with torch.no_grad():
            old_distribution = copy.copy(self.policy.get_distribution(observations))

        def objective_and_kl() -> tuple[torch.Tensor, torch.Tensor]:
            distribution = self.policy.get_distribution(observations)
            objective = losses.surrogate_objective(advantages, distribution.log_prob(actions), old_log_prob)
            return objective, kl_divergence(distribution, old_distribution).mean()

        # In a multi-process run every rank's step sees the same averaged gradient, Fisher-vector products, objective
        # and KL (each rank's rollout is its share of the data), so all ranks take the same step and stay in sync.
        objective, kl = objective_and_kl()
        actor_params, grad_kl = self._actor_params_and_kl_grad(kl)
        grad_objective = self._mean_over_ranks(flat_grad(objective, actor_params, retain_graph=True))

        def fisher_product(vector: torch.Tensor, retain_graph: bool = True) -> torch.Tensor:
            return self._mean_over_ranks(self.hessian_vector_product(actor_params, grad_kl, vector, retain_graph))

        # sb3-contrib's solver: it starts from 1e-4 Gaussian noise (a torch draw, as in sb3-contrib), not from zero
        with self._same_draws_on_all_ranks():
            direction = conjugate_gradient_solver(fisher_product, grad_objective, max_iter=self.cg_max_steps)
        step = max_step_size(direction, fisher_product(direction, retain_graph=False), self.target_kl)

        def evaluate(flat_params: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            vector_to_parameters(flat_params, actor_params)
            new_objective, new_kl = self._mean_over_ranks(torch.stack(objective_and_kl()))
            return new_objective, new_kl

        with torch.no_grad():
            start = parameters_to_vector(actor_params)
            accepted, success, new_objective, new_kl = backtracking_line_search(
                evaluate,
                start,
                direction,
                self._mean_over_ranks(objective.detach()),
                self.target_kl,
                self.line_search_shrinking_factor,
                self.line_search_max_iter,
                step_size=step,
            )
            vector_to_parameters(accepted, actor_params)
        self._track(
            policy_objective=new_objective,
            kl_divergence_loss=new_kl,
            is_line_search_success=torch.tensor(float(success)),
        )
        return actor_params

    @contextlib.contextmanager
    def _same_draws_on_all_ranks(self) -> Iterator[None]:
        """In a multi-process run: torch draws inside come from one generator state shared by all ranks (rank 0's
        seed), and each rank's own generator is left as it was; in one process, nothing changes."""
        if self._n_ranks == 1:
            yield
            return
        seed = self.trainer.strategy.broadcast(int(torch.randint(2**31 - 1, ())), src=0)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            yield

    def manual_backward(self, loss: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        """In a multi-process run: the critic's gradients averaged over ranks here, not by DDP's reducer (which expects
        a gradient for every parameter in each backward; the critic's loss leaves the actor out)."""
        if self._n_ranks == 1:
            return super().manual_backward(loss, *args, **kwargs)
        ddp = cast(DistributedDataParallel, self.trainer.strategy.model)  # a multi-process run wraps it in DDP
        with ddp.no_sync():
            super().manual_backward(loss, *args, **kwargs)
        grads = [p.grad for p in self.parameters() if p.grad is not None]
        for grad, mean in zip(
            grads,
            torch.split(self._mean_over_ranks(torch.cat([g.reshape(-1) for g in grads])), [g.numel() for g in grads]),
        ):
            grad.copy_(mean.view_as(grad))
        return None

    def _actor_params_and_kl_grad(self, kl: torch.Tensor) -> tuple[list[nn.Parameter], torch.Tensor]:
        """The parameters the policy's distribution depends on (not the value head's), and d KL / d them.

        One joint gradient call (sb3-contrib makes one per parameter: Fisher-vector products through those graphs
        cost 2-3x more, and round differently in the last bit).
        """
        candidates = [p for name, p in self.policy.named_parameters() if "value" not in name]
        grads = torch.autograd.grad(kl, candidates, create_graph=True, allow_unused=True)
        used = [(p, g) for p, g in zip(candidates, grads) if g is not None]
        return [p for p, _ in used], torch.cat([g.reshape(-1) for _, g in used])

    def hessian_vector_product(
        self, params: list[nn.Parameter], grad_kl: torch.Tensor, vector: torch.Tensor, retain_graph: bool = True
    ) -> torch.Tensor:
        """Compute the matrix-vector product with the Fisher information matrix.

        The Fisher matrix is the Hessian of the KL at the rollout's policy: ``F v = d (grad_kl . v) / d params``,
        plus ``cg_damping * v``.

        :param params: the parameters ``grad_kl`` was taken with respect to
        :param grad_kl: flat gradient of the KL, with its graph (``create_graph=True``)
        :param vector: the flat vector to multiply
        :param retain_graph: keep the graph for further products
        """
        return flat_grad((grad_kl * vector).sum(), params, retain_graph=retain_graph) + self.cg_damping * vector

    learn = learn_method("TRPO", log_every_n_steps=1)


def _every(values: Any, k: int) -> Any:
    """Every ``k``-th sample of a tensor, or of each entry of a Dict observation."""
    if k == 1:
        return values
    if isinstance(values, dict):
        return {key: value[::k] for key, value in values.items()}
    return values[::k]

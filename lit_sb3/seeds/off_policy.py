"""The replay-buffer loop of a seed group's off-policy seeds (DQN, QR-DQN, SAC, TQC, TD3, DDPG): SB3's
``collect_rollouts`` and ``train`` schedule for N seeds in lockstep.

Design (what is batched, and why each seed stays exact):

- **Lockstep.** All seeds step their envs together, so ``num_timesteps``, ``learning_starts``, ``train_freq`` (step
  units only: episodes end at different times in different seeds), ``gradient_steps``, the update count, TD3's
  ``policy_delay``, DQN's ``target_update_interval`` (counted in vector steps, as SB3's ``_n_calls``), SAC's
  ``target_update_interval``, the learning-rate schedule and DQN's exploration schedule are one value for the group:
  every decision a single run takes from them is taken at the same step in every seed.
- **Networks.** Each seed's ordinary model is built first (its own seed, so its initial weights are the single run's);
  their policies' parameters, targets included, are stacked ``[N, ...]`` (:mod:`lit_sb3.seeds.off_policy_nets`) and
  every forward is one batched matrix product per layer for all seeds.
- **Replay.** One buffer with a seed axis ``[slots, N, n_envs, ...]`` (:mod:`lit_sb3.seeds.replay`); each seed
  samples its slot and env indices from its own numpy generator, a round's gradient steps at once (one call per
  seed with one env each: the same numbers as its run's call per step).
- **Losses.** lit_sb3's pure loss functions (:mod:`lit_sb3.common.losses`) over the seed axis
  (:mod:`lit_sb3.seeds.off_policy_losses`, bit-identical to them under ``torch.vmap``): each seed's loss is
  the single run's loss of its own minibatch; the group minimizes their sum, whose gradient in seed i's parameters is
  seed i's own gradient. The actor losses read the critics through detached copies (SB3 freezes them).
- **Optimizers.** :class:`lit_sb3.seeds.optim.BatchedAdam` on the stacked tensors (fused, as the policies' Adam:
  torch's fused kernel on each seed's slices, in one call), DQN's gradient-norm clipping per seed
  (:func:`~lit_sb3.seeds.optim.clip_grad_norm_per_seed`); SAC's learned temperature is ``log_ent_coef`` ``[N, 1]``
  with its own batched Adam (single-tensor, as the single run's), each seed's target entropy the single run's.
- **Targets.** Polyak averaging is elementwise: :func:`lit_sb3.common.optim.soft_update` on the stacked tensors (SB3's
  scale-then-add order) is the single run's update per seed.
- **Randomness.** Per seed, the generators its own run draws from (:class:`lit_sb3.seeds.streams.SeedStreams`),
  with that run's calls: the torch generator gives SAC's reparameterization noise (the action's, then the next
  action's, per gradient step) and TD3's target smoothing noise; the numpy ``RandomState`` gives the minibatch
  indices (SB3's ``ReplayBuffer.sample``: slots, then envs), DQN's epsilon test (one ``np.random.rand()`` per vector
  step, as the single run draws one per ``predict``) and the action noise (:mod:`lit_sb3.seeds.noise`); warm-up and
  epsilon-random actions come from the seed's own action space, seeded as the single run seeds it.
- **Actions.** Box actions go through SB3's scale / unscale round trip (and TD3's noise is added in the scaled space,
  clipped to [-1, 1]), as :func:`lit_sb3.common.replay.box_actions` does for a single run.
- **Seeds as ordinary models.** :meth:`BatchedOffPolicy.export` copies seed i's parameters, optimizer states,
  temperature, counters, exploration rate and replay buffer (as an SB3 ``ReplayBuffer``) into its ordinary model.

Exactness (``tests/lit_sb3/seeds/test_off_policy.py``, ``test_own_run.py``): a group of one has the ordinary model's
losses and gradients on the same minibatch and noise (1e-6); a group trained twice, and seed 3 alone vs seed 3 of
five, are bit for bit the same (weights, optimizer moments, replay buffer); a seed of a group takes the actions of the
single run of the same seed (to float32 rounding) and ends a short run with its weights to float32 rounding.

Not batched (refused in one line): episode-based ``train_freq``, n-step returns, custom / Dict / HER replay buffers,
``VecNormalize``, gSDE, CNN policies, action noise other than SB3's Normal and Ornstein-Uhlenbeck.

Speed (``benchmarks/seeds.py``, 10 seeds, 2 processes at a time, this repository's 2-core machine under a load of
9-13 from other work, so wall times are inflated and CPU times are the steadier measure): SAC Pendulum [64, 64], 2,000
steps per seed, whole processes: 2.94x less CPU than one SB3 process per seed (3.17x wall), 2.61x less than one lit_sb3
process per seed; TD3 Pendulum [64, 64]: 2.39x less CPU than SB3 (2.77x wall), 2.24x less than lit_sb3. With the
Zoo's [400, 300] networks the products are compute-bound: the training alone (no imports),
10 seeds grouped vs 10 x one SB3 run, 160 steps, CPU time: SAC 1.25x, TD3 1.20x. DQN CartPole with the Zoo's settings
([256, 256], 128 gradient steps per 256 env steps), 10,000 steps: 1.27x less CPU than SB3 (0.81x wall in that run):
compute-bound too. Since its Adam step became torch's fused kernel on each seed's slices (it was a third of the
group's CPU in torch's single-tensor arithmetic), the harness's whole 10-seed sweep in 2 groups of 5 takes 1.72x less
CPU than one process per seed (1.38x before; docs/guides/lit_sb3.md), and 70% of a gradient step of 5 seeds is the
batched products, which cost per seed what a single run's do.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.type_aliases import TrainFrequencyUnit
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from lit_sb3.common import resume
from lit_sb3.common.off_policy import OffPolicyAlgorithm
from lit_sb3.common.optim import soft_update
from lit_sb3.seeds.group import BatchedAlgorithm
from lit_sb3.seeds.noise import SeedActionNoise
from lit_sb3.seeds.off_policy_nets import StackedOffPolicy
from lit_sb3.seeds.optim import BatchedOptimizer
from lit_sb3.seeds.replay import SeedReplayBuffer, SeedSamples
from lit_sb3.seeds.stacked import load_slice, module_slice, set_slice
from lit_sb3.seeds.streams import SeedStreams
from lit_sb3.seeds.transfer import to_device, to_host

if TYPE_CHECKING:
    from lit_sb3.seeds.group import SeedGroup


def check_off_policy_group(model: OffPolicyAlgorithm, env: VecEnv) -> None:
    """Refuse, in one line naming the argument, a configuration whose seeds the group cannot batch."""
    refusals = [
        ("train_freq", model.train_freq.unit != TrainFrequencyUnit.STEP, "step-based train_freq only"),
        ("n_steps", model.n_steps != 1, "1-step returns only"),
        (
            "replay_buffer_class",
            model.replay_buffer_class not in (None, ReplayBuffer),
            "the plain ReplayBuffer only (None or ReplayBuffer)",
        ),
        (
            "replay_buffer_kwargs",
            bool(set(model.replay_buffer_kwargs) - {"handle_timeout_termination"}),
            "handle_timeout_termination only",
        ),
        ("env", isinstance(env, VecNormalize) or model.get_vec_normalize_env() is not None, "no VecNormalize"),
        ("use_sde", model.use_sde, "False only"),
        ("observation_space", isinstance(env.observation_space, spaces.Dict), "Box or Discrete observations"),
    ]
    for name, refused, rule in refusals:
        if refused:
            raise ValueError(f"{name}: seed groups batch {rule} for {type(model).__name__}")


class BatchedOffPolicy(BatchedAlgorithm):
    """N seeds of one off-policy configuration, trained in lockstep in a :class:`~lit_sb3.seeds.group.SeedGroup`
    (see the module docstring): a round is SB3's ``train_freq`` collection, its update ``gradient_steps`` updates.

    Subclasses (:mod:`lit_sb3.seeds.off_policy_updates`) give the policy's actions and the gradient steps. Metric
    rows follow SB3's off-policy rhythm: a seed's row is written when its episode count reaches a multiple of
    ``log_interval`` (episodes, not rounds).
    """

    dumps_per_round = False

    def __init__(self, group: SeedGroup) -> None:
        super().__init__(group)
        models = group.models
        template = models[0]
        for model, env in zip(models, group.envs):
            check_off_policy_group(model, env)
        self.models, self.template, self.streams = models, template, group.streams
        self.n_seeds, self.n_envs = group.n_seeds, group.env.envs_per_seed
        self.device = group.device
        self.net = StackedOffPolicy([m.policy for m in models])
        self.replay = SeedReplayBuffer(
            self.n_seeds,
            template.buffer_size,
            group.env.observation_space,
            group.env.action_space,
            self.n_envs,
            template.optimize_memory_usage,
            bool(template.replay_buffer_kwargs.get("handle_timeout_termination", True)),
            self.device,
        )
        noise = template.action_noise
        self.noise = None if noise is None else SeedActionNoise(noise, self.n_seeds, self.n_envs)
        self.action_spaces = [m.action_space for m in models]  # each seeded with its seed, as the single run's
        self.box = isinstance(template.action_space, spaces.Box)
        self.obs_shape = template.observation_space.shape or ()
        self.action_shape = template.action_space.shape or ()
        self.n_updates = 0
        self.n_calls = 0  # vector env steps (DQN's target refresh)
        self.episodes = np.zeros(self.n_seeds, dtype=np.int64)
        self.optimizers = self._build_optimizers()

    # ------------------------------------------------------------------ subclass hooks

    def _build_optimizers(self) -> dict[str, BatchedOptimizer]:
        """The batched optimizers under the ordinary model's ``_named_optimizers`` names."""
        raise NotImplementedError

    def action_draws(self, n_envs: int, deterministic: bool, streams: SeedStreams) -> torch.Tensor | None:
        """Each seed's host noise for :meth:`policy_actions` (SAC's Gaussian draws), ``[N, n_envs, ...]``."""
        return None

    def policy_actions(self, obs: torch.Tensor, draws: torch.Tensor | None) -> torch.Tensor:
        """Actions ``[N, n_envs, ...]`` as the policy outputs them (Box: in [-1, 1], squashed), on the device, from
        :meth:`action_draws`' noise (there)."""
        raise NotImplementedError

    def explore(self, actions: np.ndarray, deterministic: bool, streams: SeedStreams) -> np.ndarray:
        """Hook: the policy's host actions after exploration (DQN's epsilon-greedy)."""
        return actions

    def gradient_steps(self, gradient_steps: int, batch_size: int) -> dict[str, torch.Tensor]:
        """``gradient_steps`` updates; each statistic's per-seed mean over them, ``[N]`` (SB3's names)."""
        raise NotImplementedError

    def on_vector_step(self) -> None:
        """After every vector env step of the group (DQN: exploration rate and target refresh)."""

    # ------------------------------------------------------------------ acting

    def _policy_actions(self, obs: np.ndarray, deterministic: bool, streams: SeedStreams) -> np.ndarray:
        """The policy's actions ``[N, n_envs, ...]`` for host observations ``[N * n_envs, ...]`` (or ``[N, n_envs,
        ...]``: evaluation envs may be more or fewer than the training envs): observations and noise go to the
        device in one copy, the actions come back in one."""
        n_envs = obs.size // (self.n_seeds * int(np.prod(self.obs_shape)))
        draws = self.action_draws(n_envs, deterministic, streams)
        on_device = to_device([obs] if draws is None else [obs, draws], self.device)
        with torch.no_grad():
            obs_tensor = on_device[0].reshape(self.n_seeds, n_envs, *self.obs_shape)
            actions = self.policy_actions(obs_tensor, on_device[1] if draws is not None else None)
        return self.explore(to_host([actions])[0], deterministic, streams)

    def minibatch_indices(self, gradient_steps: int, batch_size: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Each gradient step's slot and env indices of every seed (``[N, batch_size]`` each), the round's drawn at
        once from each seed's numpy generator (:meth:`SeedReplayBuffer.round_indices`: its run's numbers)."""
        slots, envs = self.replay.round_indices(gradient_steps, batch_size, self.streams.numpy)
        return zip(slots, envs, strict=True)

    def sample(
        self, indices: tuple[np.ndarray, np.ndarray], *draws: torch.Tensor
    ) -> tuple[SeedSamples, list[torch.Tensor]]:
        """Each seed's minibatch at ``indices`` (a step of :meth:`minibatch_indices`) and the given host ``draws``,
        on the device (one copy per dtype)."""
        arrays = self.replay.sample_arrays(*indices)
        tensors = to_device([*arrays, *draws], self.device)
        return SeedSamples(*tensors[: len(arrays)]), tensors[len(arrays) :]

    def _random_actions(self) -> np.ndarray:
        return np.stack([np.array([space.sample() for _ in range(self.n_envs)]) for space in self.action_spaces])

    def _to_env(self, actions: np.ndarray) -> np.ndarray:
        """Policy actions -> env actions (SB3's ``predict``: unscaled from [-1, 1] when squashed, else clipped)."""
        if not self.box:
            return actions
        policy, space = self.template.policy, self.template.action_space
        assert isinstance(space, spaces.Box)
        return policy.unscale_action(actions) if policy.squash_output else np.clip(actions, space.low, space.high)

    def act(self, obs: np.ndarray, deterministic: bool, streams: SeedStreams) -> np.ndarray:
        return self._to_env(self._policy_actions(obs, deterministic, streams))

    def actions(self, warm_up: bool) -> tuple[np.ndarray, np.ndarray]:
        """(env actions, actions to store) ``[N, n_envs, ...]``: uniformly random while ``warm_up``, the policy's
        after; Box actions stored scaled to [-1, 1], the action noise added there (SB3's ``_sample_action``)."""
        obs = self.group.last_obs
        assert obs is not None  # the group reset its envs at train start
        unscaled = self._random_actions() if warm_up else self._to_env(self._policy_actions(obs, False, self.streams))
        if not self.box:
            return unscaled, unscaled
        policy = self.template.policy
        scaled = policy.scale_action(unscaled)
        if self.noise is not None:
            scaled = np.clip(scaled + self.noise.draw(self.streams.numpy), -1.0, 1.0)
        return policy.unscale_action(scaled), scaled

    # ------------------------------------------------------------------ a round

    def collect(self) -> bool:
        return all(self.collect_step() for _ in range(self.template.train_freq.frequency))

    def collect_step(self) -> bool:
        """One vector step of every seed's envs, stored in the replay buffer; False when a callback stopped."""
        group = self.group
        obs = group.last_obs
        assert obs is not None
        env_actions, buffer_actions = self.actions(group.num_timesteps < self.template.learning_starts)
        stepped = group.step_envs(env_actions.reshape(self.n_seeds * self.n_envs, *env_actions.shape[2:]))
        if stepped is None:
            return False
        new_obs, rewards, dones, infos = stepped
        next_obs = np.array(new_obs, copy=True)  # an episode's true last observation, not the reset one
        timeouts = np.zeros(len(dones), dtype=np.float32)
        for k in np.flatnonzero(dones):
            if infos[k].get("terminal_observation") is not None:
                next_obs[k] = infos[k]["terminal_observation"]
            timeouts[k] = float(infos[k].get("TimeLimit.truncated", False))
        lead = (self.n_seeds, self.n_envs)
        self.replay.add(
            obs.reshape(*lead, *self.obs_shape),
            next_obs.reshape(*lead, *self.obs_shape),
            buffer_actions,
            rewards.reshape(lead),
            dones.reshape(lead),
            timeouts.reshape(lead),
        )
        group.last_obs, group.last_episode_starts = new_obs, dones
        self.n_calls += 1
        self.on_vector_step()
        seed_dones = dones.reshape(lead)
        if self.noise is not None:
            self.noise.reset(seed_dones.astype(bool))
        self._count_episodes(seed_dones)
        return True

    def _count_episodes(self, dones: np.ndarray) -> None:
        """Each seed's episode count; its metric row every ``log_interval`` episodes (SB3's ``dump_logs``)."""
        interval = self.group.log_interval
        for seed_index in range(self.n_seeds):
            for _ in range(int(dones[seed_index].sum())):
                self.episodes[seed_index] += 1
                if interval and self.episodes[seed_index] % interval == 0:
                    self.group.record(seed_index, "time/episodes", int(self.episodes[seed_index]))
                    self.group._dump([seed_index])

    def update(self) -> None:
        """``gradient_steps`` updates once past ``learning_starts`` (SB3's condition after a collection)."""
        model, group = self.template, self.group
        if not (group.num_timesteps > 0 and group.num_timesteps > model.learning_starts):
            return
        steps = model.gradient_steps if model.gradient_steps >= 0 else model.train_freq.frequency * self.n_envs
        if steps <= 0:
            return
        lr = model.lr_schedule(group.progress_remaining)
        for optimizer in self.optimizers.values():
            optimizer.lr = lr
        means = self.gradient_steps(steps, model.batch_size)
        host_means = dict(zip(means, to_host(list(means.values()))))  # one copy for every seed's statistics
        for seed_index in range(self.n_seeds):
            group.record(seed_index, "train/learning_rate", lr)
            for name, values in host_means.items():
                group.record(seed_index, f"train/{name}", float(values[seed_index]))
            group.record(seed_index, "train/n_updates", self.n_updates)

    def soft_update_targets(self, tau: float) -> None:
        """Polyak-average every target network of every seed (elementwise: each seed's own update)."""
        online, target = self.net.target_pairs()
        soft_update(online, target, tau)

    # ------------------------------------------------------------------ seeds as ordinary models

    def export(self, index: int, model: Any) -> None:
        """Seed ``index``'s weights, optimizer states, counters and replay buffer (an SB3 ``ReplayBuffer``) into its
        ordinary model."""
        load_slice(self.net.params, index, model.policy)
        named = model._named_optimizers()
        for name, batched in self.optimizers.items():
            optimizer = named[name]
            groups = [{**g, "params": list(range(len(g["params"]))), "lr": batched.lr} for g in optimizer.param_groups]
            optimizer.load_state_dict({"state": batched.torch_state(index), "param_groups": groups})
        model._n_updates = self.n_updates
        model._episode_num = int(self.episodes[index])
        model._total_timesteps = self.group.total_timesteps
        model.replay_buffer = self.replay.seed_buffer(index)
        self._export_parts(index, model)

    def _export_parts(self, index: int, model: Any) -> None:
        """Hook: the algorithm's own state into its ordinary model (SAC's temperature, DQN's exploration)."""

    def extra_params(self) -> dict[str, torch.Tensor]:
        """Stacked tensors besides the policy's (SAC's ``log_ent_coef``), kept in seed states."""
        return {}

    def extra_state(self) -> dict[str, Any]:
        """Hook: the algorithm's own counters (DQN's exploration rate), the same for every seed."""
        return {}

    def load_extra_state(self, state: dict[str, Any]) -> None:
        """Hook: the inverse of :meth:`extra_state`."""

    def seed_state(self, index: int) -> dict[str, Any]:
        params = {**self.net.params, **self.extra_params()}
        return {
            "params": module_slice(params, index),
            "optimizers": {name: opt.seed_state(index) for name, opt in self.optimizers.items()},
            "replay": self.replay.seed_state(index),
            "action_space_rng": resume.space_rng_state(self.action_spaces[index]),
            "noise": None if self.noise is None else self.noise.seed_state(index),
            "n_updates": self.n_updates,
            "n_calls": self.n_calls,
            "episodes": int(self.episodes[index]),
            **self.extra_state(),
        }

    def load_seed_state(self, index: int, state: dict[str, Any]) -> None:
        set_slice({**self.net.params, **self.extra_params()}, index, state["params"])
        for name, optimizer in self.optimizers.items():
            optimizer.load_seed_state(index, state["optimizers"][name])
        self.replay.load_seed_state(index, state["replay"])
        resume.set_space_rng_state(self.action_spaces[index], state["action_space_rng"])
        if self.noise is not None and state["noise"] is not None:
            self.noise.load_seed_state(index, state["noise"])
        self.episodes[index] = int(state["episodes"])
        self.n_updates, self.n_calls = int(state["n_updates"]), int(state["n_calls"])
        self.load_extra_state(state)

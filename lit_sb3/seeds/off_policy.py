"""The replay-buffer loop of a seed group's off-policy seeds (DQN, SAC, TD3): SB3's ``collect_rollouts`` and
``train`` schedule for N seeds in lockstep.

Design (what is batched, and why each seed stays exact):

- **Lockstep.** All seeds step their envs together, so ``num_timesteps``, ``learning_starts``, ``train_freq`` (step
  units only: episodes end at different times in different seeds), ``gradient_steps``, the update count, TD3's
  ``policy_delay``, DQN's ``target_update_interval`` (counted in vector steps, as SB3's ``_n_calls``), SAC's
  ``target_update_interval``, the learning-rate schedule and DQN's exploration schedule are one value for the group:
  every decision a single run takes from them is taken at the same step in every seed.
- **Networks.** Each seed's ordinary model is built first (its own seed, so its initial weights are the single run's);
  their policies' parameters, targets included, are stacked ``[N, ...]`` (:mod:`lit_sb3.seeds.off_policy_nets`) and
  every forward is one batched matrix product per layer for all seeds.
- **Replay.** One buffer with a seed axis ``[N, slots, n_envs, ...]`` (:mod:`lit_sb3.seeds.replay`); each seed
  samples its slot and env indices from its own numpy generator.
- **Losses.** lit_sb3's pure loss functions (:mod:`lit_sb3.common.losses`) under ``torch.vmap``: each seed's loss is
  the single run's loss of its own minibatch; the group minimizes their sum, whose gradient in seed i's parameters is
  seed i's own gradient. The actor losses read the critics through detached copies (SB3 freezes them).
- **Optimizers.** :class:`lit_sb3.seeds.optim.BatchedAdam` on the stacked tensors (Adam is elementwise), DQN's
  gradient-norm clipping per seed (:func:`~lit_sb3.seeds.optim.clip_grad_norm_per_seed`); SAC's learned temperature
  is ``log_ent_coef`` ``[N, 1]`` with its own batched Adam, each seed's target entropy the single run's.
- **Targets.** Polyak averaging is elementwise: :func:`lit_sb3.common.optim.soft_update` on the stacked tensors (SB3's
  scale-then-add order) is the single run's update per seed.
- **Randomness.** Per seed (:class:`lit_sb3.seeds.streams.SeedStreams`): the torch generator gives SAC's
  reparameterization noise and TD3's target smoothing noise; the numpy generator gives minibatch indices, DQN's
  epsilon draw (one per vector step, as SB3 draws one per ``predict``) and the action noise
  (:mod:`lit_sb3.seeds.noise`); warm-up and epsilon-random actions come from the seed's own action space, seeded as
  the single run seeds it.
- **Actions.** Box actions go through SB3's scale / unscale round trip (and TD3's noise is added in the scaled space,
  clipped to [-1, 1]), as :func:`lit_sb3.common.replay.box_actions` does for a single run.
- **Seeds as ordinary models.** :meth:`BatchedOffPolicy.write_model` copies seed i's parameters, optimizer states,
  temperature, counters, exploration rate and replay buffer (as an SB3 ``ReplayBuffer``) into its ordinary model.

Not batched (refused in one line): episode-based ``train_freq``, n-step returns, custom / Dict / HER replay buffers,
``VecNormalize``, gSDE, CNN policies, action noise other than SB3's Normal and Ornstein-Uhlenbeck.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.type_aliases import TrainFrequencyUnit
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from lit_sb3.common import resume
from lit_sb3.common.off_policy import OffPolicyAlgorithm
from lit_sb3.common.optim import soft_update
from lit_sb3.seeds.noise import SeedActionNoise
from lit_sb3.seeds.off_policy_nets import StackedOffPolicy
from lit_sb3.seeds.optim import BatchedOptimizer
from lit_sb3.seeds.replay import SeedReplayBuffer
from lit_sb3.seeds.stacked import load_slice, module_slice, set_slice
from lit_sb3.seeds.streams import SeedStreams

#: called after every vector step of the group; False stops training (SB3's ``on_step``)
StepCallback = Callable[[], bool]


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


class BatchedOffPolicy:
    """N seeds of one off-policy configuration, trained in lockstep (see the module docstring).

    Subclasses (:mod:`lit_sb3.seeds.off_policy_updates`) give the policy actions and the gradient steps.

    :param models: each seed's ordinary model, built with its seed and its own training VecEnv
    :param streams: the seeds' random streams
    """

    def __init__(self, models: list[OffPolicyAlgorithm], streams: SeedStreams) -> None:
        template = models[0]
        envs = [m.get_env() for m in models]
        if any(env is None for env in envs):
            raise ValueError("env: each seed's model needs its training env")
        self.envs: list[VecEnv] = [env for env in envs if env is not None]
        for model, env in zip(models, self.envs):
            check_off_policy_group(model, env)
        self.models, self.template, self.streams = models, template, streams
        self.n_seeds, self.n_envs = len(models), self.envs[0].num_envs
        self.net = StackedOffPolicy([m.policy for m in models])
        self.replay = SeedReplayBuffer(
            self.n_seeds,
            template.buffer_size,
            self.envs[0].observation_space,
            self.envs[0].action_space,
            self.n_envs,
            template.optimize_memory_usage,
            bool(template.replay_buffer_kwargs.get("handle_timeout_termination", True)),
        )
        noise = template.action_noise
        self.noise = None if noise is None else SeedActionNoise(noise, self.n_seeds, self.n_envs)
        self.action_spaces = [m.action_space for m in models]  # each seeded with its seed, as the single run's
        self.box = isinstance(template.action_space, spaces.Box)
        self.num_timesteps = 0
        self.n_updates = 0
        self.n_calls = 0  # vector env steps (DQN's target refresh)
        self.progress_remaining = 1.0
        self.total_timesteps = 1  # set by learn
        self.last_obs: np.ndarray | None = None
        self.action_logs: list[resume.ActionLog] = []
        self.episodes = np.zeros(self.n_seeds, dtype=np.int64)
        self.train_means: list[dict[str, float]] = [{} for _ in models]
        self.optimizers = self._build_optimizers()

    # ------------------------------------------------------------------ subclass hooks

    def _build_optimizers(self) -> dict[str, BatchedOptimizer]:
        """The batched optimizers under the ordinary model's ``_named_optimizers`` names."""
        raise NotImplementedError

    def policy_actions(self, obs: torch.Tensor) -> np.ndarray:
        """Exploration actions ``[N, n_envs, ...]`` as the policy outputs them (Box: in [-1, 1] when squashed)."""
        raise NotImplementedError

    def gradient_steps(self, gradient_steps: int, batch_size: int) -> dict[str, torch.Tensor]:
        """``gradient_steps`` updates; each statistic's per-seed mean over them, ``[N]`` (SB3's names)."""
        raise NotImplementedError

    def on_vector_step(self) -> None:
        """After every vector env step of the group (DQN: exploration rate and target refresh)."""

    # ------------------------------------------------------------------ collection

    def reset(self) -> None:
        """Seed and reset every seed's env as its single run would at the start of training."""
        observations = []
        self.action_logs = []
        for model, env in zip(self.models, self.envs):
            if model.seed is not None:
                env.seed(model.seed)
            self.action_logs.append(resume.ActionLog.before_reset(env))  # the env's exact resume, by replay
            observations.append(env.reset())
        self.last_obs = np.stack(observations)

    def _random_actions(self) -> np.ndarray:
        return np.stack([np.array([space.sample() for _ in range(self.n_envs)]) for space in self.action_spaces])

    def actions(self, warm_up: bool) -> tuple[np.ndarray, np.ndarray]:
        """(env actions, actions to store) ``[N, n_envs, ...]``: uniformly random while ``warm_up``, the policy's
        after; Box actions stored scaled to [-1, 1], the action noise added there."""
        assert self.last_obs is not None
        if warm_up:
            actions = self._random_actions()
        else:
            with torch.no_grad():
                actions = self.policy_actions(torch.as_tensor(self.last_obs))
        if not self.box:
            return actions, actions
        policy = self.template.policy
        space = self.template.action_space
        assert isinstance(space, spaces.Box)
        unscaled = actions
        if not warm_up:
            squashed = policy.squash_output
            unscaled = policy.unscale_action(actions) if squashed else np.clip(actions, space.low, space.high)
        scaled = policy.scale_action(unscaled)
        if self.noise is not None:
            scaled = np.clip(scaled + self.noise.draw(self.streams.numpy), -1.0, 1.0)
        return policy.unscale_action(scaled), scaled

    def collect_step(self, learning_starts: int) -> list[tuple[np.ndarray, np.ndarray, list[dict[str, Any]]]]:
        """One vector step of every seed's env, stored in the replay buffer; each seed's (rewards, dones, infos)."""
        assert self.last_obs is not None
        env_actions, buffer_actions = self.actions(self.num_timesteps < learning_starts)
        for log, actions in zip(self.action_logs, env_actions):
            log.append(actions)
        results = [env.step(actions) for env, actions in zip(self.envs, env_actions)]
        self.num_timesteps += self.n_envs
        self.progress_remaining = 1.0 - self.num_timesteps / self.total_timesteps
        new_obs = np.stack([r[0] for r in results])
        rewards = np.stack([r[1] for r in results])
        dones = np.stack([r[2] for r in results])
        next_obs = new_obs.copy()  # an episode's true last observation, not the reset one
        timeouts = np.zeros_like(dones, dtype=np.float32)
        for seed_index, (_, _, _, infos) in enumerate(results):
            for env_index in np.flatnonzero(dones[seed_index]):
                info = infos[env_index]
                if info.get("terminal_observation") is not None:
                    next_obs[seed_index, env_index] = info["terminal_observation"]
                timeouts[seed_index, env_index] = float(info.get("TimeLimit.truncated", False))
            self.models[seed_index]._update_info_buffer(infos, dones[seed_index])
        self.replay.add(self.last_obs, next_obs, buffer_actions, rewards, dones, timeouts)
        self.last_obs = new_obs
        self.n_calls += 1
        self.on_vector_step()
        self.episodes += dones.sum(axis=1)
        if self.noise is not None:
            self.noise.reset(dones.astype(bool))
        return [(rewards[i], dones[i], results[i][3]) for i in range(self.n_seeds)]

    def train_round(self) -> None:
        """After a ``train_freq`` collection: ``gradient_steps`` updates once past ``learning_starts``."""
        model = self.template
        if not (self.num_timesteps > 0 and self.num_timesteps > model.learning_starts):
            return
        steps = model.gradient_steps if model.gradient_steps >= 0 else model.train_freq.frequency * self.n_envs
        if steps <= 0:
            return
        lr = model.lr_schedule(self.progress_remaining)
        for optimizer in self.optimizers.values():
            optimizer.lr = lr
        means = self.gradient_steps(steps, model.batch_size)
        for seed_index in range(self.n_seeds):
            self.train_means[seed_index] = {
                "learning_rate": float(lr),
                **{name: float(values[seed_index]) for name, values in means.items()},
                "n_updates": float(self.n_updates),
            }

    def start(self, total_timesteps: int) -> None:
        """Set the budget of a ``learn``: ``total_timesteps`` more env steps per seed (the envs are reset first)."""
        if self.last_obs is None:
            self.reset()
        self.total_timesteps = self.num_timesteps + total_timesteps  # SB3's count when learn continues a run

    def round(self, callback: StepCallback | None = None) -> bool:
        """One SB3 round (collect ``train_freq`` vector steps, then train); False once the budget is spent or
        ``callback`` (called after every vector step, as SB3's ``on_step``) returned False."""
        model = self.template
        for _ in range(model.train_freq.frequency):
            self.collect_step(model.learning_starts)
            if callback is not None and not callback():
                return False
        self.train_round()
        return self.num_timesteps < self.total_timesteps

    def learn(self, total_timesteps: int, callback: StepCallback | None = None) -> None:
        """Train every seed ``total_timesteps`` env steps (SB3's meaning: whole ``train_freq`` rounds)."""
        self.start(total_timesteps)
        while self.num_timesteps < self.total_timesteps and self.round(callback):
            pass

    def soft_update_targets(self, tau: float) -> None:
        """Polyak-average every target network of every seed (elementwise: each seed's own update)."""
        online, target = self.net.target_pairs()
        soft_update(online, target, tau)

    # ------------------------------------------------------------------ seeds as ordinary models

    def write_model(self, seed_index: int) -> OffPolicyAlgorithm:
        """Seed ``seed_index``'s ordinary model, brought up to its current state (weights, optimizers, counters,
        replay buffer)."""
        model = self.models[seed_index]
        load_slice(self.net.params, seed_index, model.policy)
        named = model._named_optimizers()
        for name, batched in self.optimizers.items():
            optimizer = named[name]
            optimizer.load_state_dict(
                {"state": batched.torch_state(seed_index), "param_groups": optimizer.state_dict()["param_groups"]}
            )
            for group in optimizer.param_groups:
                group["lr"] = batched.lr
        model.num_timesteps = self.num_timesteps
        model._n_updates = self.n_updates
        model._episode_num = int(self.episodes[seed_index])
        model._total_timesteps = self.total_timesteps
        model.replay_buffer = self.replay.seed_buffer(seed_index)
        self._write_parts(seed_index, model)
        return model

    def _write_parts(self, seed_index: int, model: OffPolicyAlgorithm) -> None:
        """Hook: the algorithm's own state into its ordinary model (SAC's temperature, DQN's exploration)."""

    def extra_params(self) -> dict[str, torch.Tensor]:
        """Stacked tensors besides the policy's (SAC's ``log_ent_coef``), kept in seed states."""
        return {}

    def seed_state(self, seed_index: int) -> dict[str, Any]:
        """Everything seed ``seed_index`` needs to resume exactly, but its env (tensors and plain data)."""
        assert self.last_obs is not None, "seed_state: the group has not started training"
        params = {**self.net.params, **self.extra_params()}
        return {
            "params": module_slice(params, seed_index),
            "optimizers": {name: opt.seed_state(seed_index) for name, opt in self.optimizers.items()},
            "replay": self.replay.seed_state(seed_index),
            "streams": self.streams.state(seed_index),
            "action_space_rng": resume.space_rng_state(self.action_spaces[seed_index]),
            "noise": None if self.noise is None else self.noise.seed_state(seed_index),
            "last_obs": torch.from_numpy(self.last_obs[seed_index].copy()),
            "env": self.action_logs[seed_index].state(),
            "episode_infos": [dict(info) for info in self.models[seed_index].ep_info_buffer],
            "counters": {
                "num_timesteps": self.num_timesteps,
                "n_updates": self.n_updates,
                "n_calls": self.n_calls,
                "episodes": int(self.episodes[seed_index]),
                "progress_remaining": self.progress_remaining,
                "total_timesteps": self.total_timesteps,
            },
        }

    def load_seed_states(self, states: list[dict[str, Any]]) -> None:
        """Every seed's :meth:`seed_state` (same seeds, same configuration); each seed's env is brought back by
        replaying its actions since its seeded reset."""
        if len(states) != self.n_seeds:
            raise ValueError(f"load_seed_states: expected {self.n_seeds} seed states, got {len(states)}")
        counters = {tuple(sorted((k, v) for k, v in s["counters"].items() if k != "episodes")) for s in states}
        if len(counters) != 1:
            raise ValueError("load_seed_states: the states come from different steps of training")
        params = {**self.net.params, **self.extra_params()}
        self.action_logs = []
        for seed_index, state in enumerate(states):
            set_slice(params, seed_index, state["params"])
            for name, optimizer in self.optimizers.items():
                optimizer.load_seed_state(seed_index, state["optimizers"][name])
            self.streams.load_state(seed_index, state["streams"])
            resume.set_space_rng_state(self.action_spaces[seed_index], state["action_space_rng"])
            if self.noise is not None and state["noise"] is not None:
                self.noise.load_seed_state(seed_index, state["noise"])
            self.episodes[seed_index] = state["counters"]["episodes"]
            log = resume.ActionLog.from_state(state["env"])
            log.replay(self.envs[seed_index])
            self.action_logs.append(log)
            infos = self.models[seed_index].ep_info_buffer
            infos.clear()
            infos.extend(state["episode_infos"])
        self.replay.load_seed_states([s["replay"] for s in states])
        self.last_obs = np.stack([s["last_obs"].numpy() for s in states])
        first = states[0]["counters"]
        self.num_timesteps, self.n_updates, self.n_calls = first["num_timesteps"], first["n_updates"], first["n_calls"]
        self.progress_remaining = float(first["progress_remaining"])
        self.total_timesteps = int(first["total_timesteps"])
        self.on_vector_step_restored()

    def on_vector_step_restored(self) -> None:
        """Hook: recompute what follows from the restored counters (DQN's exploration rate)."""

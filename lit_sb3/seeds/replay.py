"""The replay buffers of a seed group's off-policy seeds: one set of arrays with a seed axis.

Seed ``i``'s transitions are ``observations[:, i]`` etc., laid out as SB3's ``ReplayBuffer`` lays out its own
(``[slots, n_envs, ...]``, ``buffer_size // n_envs`` slots), so a seed's buffer converts to an ordinary SB3 buffer
and back without reordering. All seeds step together, so they share the write position and the "full" flag: one
numpy assignment stores a vector step of every seed. Each seed samples its slot and env indices from its own
``RandomState`` (its process's ``np.random``) with SB3's calls, so its minibatches are those of its own run and do not
depend on its group.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.preprocessing import get_action_dim, get_obs_shape

from lit_sb3.seeds.transfer import to_device


class SeedSamples(NamedTuple):
    """A minibatch of every seed, seed axis first: observations ``[N, B, *obs_shape]``, actions ``[N, B, dim]``,
    rewards and dones ``[N, B, 1]`` (dones already cleared where an episode only hit its time limit)."""

    observations: torch.Tensor
    actions: torch.Tensor
    next_observations: torch.Tensor
    dones: torch.Tensor
    rewards: torch.Tensor


#: the arrays over (seed, slot, env) a buffer keeps (``next_observations`` unless ``optimize_memory_usage``)
_ARRAYS = ("observations", "next_observations", "actions", "rewards", "dones", "timeouts")


class SeedReplayBuffer:
    """N replay buffers of one configuration, stored as arrays ``[slots, N, n_envs, ...]``.

    :param n_seeds: seeds of the group
    :param buffer_size: transitions per seed (over all its envs, as SB3 counts ``buffer_size``)
    :param observation_space: the envs' observation space (Box or Discrete; Dict spaces are not batched)
    :param action_space: the envs' action space
    :param n_envs: envs per seed
    :param optimize_memory_usage: SB3's memory-efficient layout (the next observation is the next slot's)
    :param handle_timeout_termination: as SB3: a time-limit end is not a terminal state for the Bellman target
    :param device: where sampled minibatches go (the arrays stay on the host, as in SB3's buffer)
    """

    def __init__(
        self,
        n_seeds: int,
        buffer_size: int,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        n_envs: int,
        optimize_memory_usage: bool = False,
        handle_timeout_termination: bool = True,
        device: torch.device | str = "cpu",
    ) -> None:
        if isinstance(observation_space, spaces.Dict):
            raise ValueError("observation_space: Dict observations are not batched over seeds (Box or Discrete)")
        self.n_seeds, self.n_envs = n_seeds, n_envs
        self.total_size = buffer_size
        self.buffer_size = max(buffer_size // n_envs, 1)  # slots, as SB3 divides the capacity over the envs
        self.observation_space, self.action_space = observation_space, action_space
        self.optimize_memory_usage = optimize_memory_usage
        self.handle_timeout_termination = handle_timeout_termination
        self.device = torch.device(device)
        self.obs_shape = get_obs_shape(observation_space)
        self.action_dim = get_action_dim(action_space)
        # slots first: a vector step of every seed is one contiguous write (a seed axis first spreads it over N
        # distant pages, and first touches of fresh pages made an add 70x slower, measured on a 1M-slot buffer)
        lead = (self.buffer_size, n_seeds, n_envs)
        action_dtype = np.float32 if action_space.dtype == np.float64 else action_space.dtype  # as SB3 casts
        # np.zeros reserves the memory lazily: untouched slots of a large buffer cost nothing
        self.observations = np.zeros((*lead, *self.obs_shape), dtype=observation_space.dtype)
        self.next_observations: np.ndarray | None = (
            None if optimize_memory_usage else np.zeros((*lead, *self.obs_shape), dtype=observation_space.dtype)
        )
        self.actions = np.zeros((*lead, self.action_dim), dtype=action_dtype)
        self.rewards = np.zeros(lead, dtype=np.float32)
        self.dones = np.zeros(lead, dtype=np.float32)
        self.timeouts = np.zeros(lead, dtype=np.float32)
        self.pos = 0
        self.full = False

    def size(self) -> int:
        """Slots filled (per env, per seed)."""
        return self.buffer_size if self.full else self.pos

    def add(
        self,
        obs: np.ndarray,
        next_obs: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        dones: np.ndarray,
        timeouts: np.ndarray,
    ) -> None:
        """One vector step of every seed: ``obs`` / ``next_obs`` ``[N, n_envs, ...]``, ``actions`` ``[N, n_envs,
        dim]`` (Box: scaled to [-1, 1]), ``rewards`` / ``dones`` / ``timeouts`` (time-limit ends) ``[N, n_envs]``."""
        lead = (self.n_seeds, self.n_envs)
        pos = self.pos
        self.observations[pos] = np.reshape(obs, (*lead, *self.obs_shape))
        if self.next_observations is None:
            self.observations[(pos + 1) % self.buffer_size] = np.reshape(next_obs, (*lead, *self.obs_shape))
        else:
            self.next_observations[pos] = np.reshape(next_obs, (*lead, *self.obs_shape))
        self.actions[pos] = np.reshape(actions, (*lead, self.action_dim))
        self.rewards[pos] = rewards
        self.dones[pos] = dones
        if self.handle_timeout_termination:
            self.timeouts[pos] = timeouts
        self.pos = pos + 1
        if self.pos == self.buffer_size:
            self.full, self.pos = True, 0

    def sample_indices(self, batch_size: int, rngs: list[np.random.RandomState]) -> tuple[np.ndarray, np.ndarray]:
        """Each seed's slot and env indices ``[N, batch_size]``, drawn from ``rngs[i]`` with the calls of SB3's
        ``ReplayBuffer.sample`` (the memory-efficient layout never samples the slot about to be overwritten)."""
        slots, envs = self.round_indices(1, batch_size, rngs)
        return slots[0], envs[0]

    def round_indices(
        self, gradient_steps: int, batch_size: int, rngs: list[np.random.RandomState]
    ) -> tuple[np.ndarray, np.ndarray]:
        """The slot and env indices of ``gradient_steps`` minibatches of every seed, ``[steps, N, batch_size]``:
        seed i's are the numbers of its own run's ``sample`` calls, one per step, in their order (nothing is added
        to the buffer between the gradient steps of a round).

        With one env per seed a seed's whole round is one draw from its generator: SB3's env draw of a single env
        (``randint(0, 1)``) takes no number from the generator, and numpy's bounded integers of one call are the
        same numbers as those of consecutive calls (each element is drawn in turn, nothing is buffered between
        elements of 32 bits or more), so the steps' slot draws are one call of ``steps * batch_size``. Otherwise
        each step draws its slots, then its envs, as SB3 does."""
        if self.size() == 0:
            raise RuntimeError("SeedReplayBuffer: sampling an empty buffer (learning_starts must be reached first)")
        slots, envs = np.empty((2, gradient_steps, self.n_seeds, batch_size), dtype=np.int64)
        wraps = self.optimize_memory_usage and self.full  # (the slot about to be overwritten is never sampled)
        low, high = (1, self.buffer_size) if wraps else (0, self.size())
        for seed_index, rng in enumerate(rngs):
            if self.n_envs == 1:
                slots[:, seed_index] = rng.randint(low, high, size=(gradient_steps, batch_size))
                envs[:, seed_index] = 0
                continue
            for step in range(gradient_steps):
                slots[step, seed_index] = rng.randint(low, high, size=batch_size)
                envs[step, seed_index] = rng.randint(0, high=self.n_envs, size=(batch_size,))
        if wraps:
            slots = (slots + self.pos) % self.buffer_size
        return slots, envs

    def sample(self, batch_size: int, rngs: list[np.random.RandomState]) -> SeedSamples:
        """A minibatch of ``batch_size`` transitions per seed, seed ``i``'s drawn with ``rngs[i]``, on ``device``."""
        return SeedSamples(*to_device(self.sample_arrays(*self.sample_indices(batch_size, rngs)), self.device))

    def sample_arrays(self, slots: np.ndarray, envs: np.ndarray) -> list[np.ndarray]:
        """The minibatch of every seed at ``slots`` / ``envs`` (``[N, batch]``, :meth:`round_indices`' steps) as host
        arrays, in :class:`SeedSamples`' order (to travel to the device with other arrays in one copy)."""
        seed = np.arange(self.n_seeds)[:, None]
        if self.next_observations is None:
            next_obs = self.observations[(slots + 1) % self.buffer_size, seed, envs]
        else:
            next_obs = self.next_observations[slots, seed, envs]
        dones = self.dones[slots, seed, envs] * (1.0 - self.timeouts[slots, seed, envs])
        return [
            self.observations[slots, seed, envs],
            self.actions[slots, seed, envs],
            next_obs,
            dones[..., None],
            self.rewards[slots, seed, envs][..., None],
        ]

    # ------------------------------------------------------------------ one seed's buffer

    def _filled(self) -> int:
        """Slots holding data (one more with the memory-efficient layout: the last next observation)."""
        return self.buffer_size if self.full else min(self.pos + 1, self.buffer_size)

    def seed_buffer(self, seed_index: int) -> ReplayBuffer:
        """Seed ``seed_index``'s transitions as an ordinary SB3 ``ReplayBuffer`` (a copy)."""
        buffer = ReplayBuffer(
            self.total_size,
            self.observation_space,
            self.action_space,
            device=self.device,
            n_envs=self.n_envs,
            optimize_memory_usage=self.optimize_memory_usage,
            handle_timeout_termination=self.handle_timeout_termination,
        )
        filled = self._filled()
        for name in _ARRAYS:
            array = getattr(self, name)
            if array is not None:
                getattr(buffer, name)[:filled] = array[:filled, seed_index]
        buffer.pos, buffer.full = self.pos, self.full
        return buffer

    def seed_state(self, seed_index: int) -> dict[str, Any]:
        """Seed ``seed_index``'s filled slots as tensors and plain numbers (``torch.load(weights_only=True)``)."""
        filled = self._filled()
        state: dict[str, Any] = {"pos": self.pos, "full": self.full}
        for name in _ARRAYS:
            array = getattr(self, name)
            if array is not None:
                state[name] = torch.from_numpy(array[:filled, seed_index].copy())
        return state

    def load_seed_state(self, seed_index: int, state: dict[str, Any]) -> None:
        """Seed ``seed_index``'s :meth:`seed_state` (the seeds of a group share the write position)."""
        self.pos, self.full = int(state["pos"]), bool(state["full"])
        for name in _ARRAYS:
            array = getattr(self, name)
            if array is not None and name in state:
                saved = state[name].numpy()
                if saved.shape[1:] != array.shape[2:] or len(saved) > self.buffer_size:
                    raise ValueError(
                        f"load_seed_states: replay array {name} of shape {tuple(saved.shape)} does not fit "
                        f"a buffer of {self.buffer_size} slots x {array.shape[2:]}"
                    )
                array[: len(saved), seed_index] = saved

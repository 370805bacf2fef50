"""Classic-control envs stepped as numpy arrays: what ``make_vec_env(env_id, n_envs)`` gives, at a fraction of its cost.

``make_vec_env`` builds a ``DummyVecEnv`` of ``Monitor(gym.make(env_id))``: per env and per step, gymnasium's
Python dynamics, its ``TimeLimit``, ``OrderEnforcing`` and ``PassiveEnvChecker`` wrappers and SB3's ``Monitor``.
:class:`ClassicVecEnv` returns the same observations, rewards, dones and infos (``terminal_observation``,
``TimeLimit.truncated``, Monitor's ``episode`` with its ``r`` and ``l``; ``t`` is this process's clock), the same
``reset_infos``, for the same seeds and actions: each env keeps its own ``np_random`` (seeded as gymnasium seeds an
env at ``reset(seed=...)``; ``VecEnv.seed(s)`` seeds env j with ``s + j`` at the next reset), resets itself after
its episode ends as ``DummyVecEnv`` does, and its dynamics are gymnasium's, float for float
(:mod:`lit_sb3.seeds.classic_physics`). Monitor files (``<monitor_dir>/<j>.monitor.csv``) are written by SB3's own
``ResultsWriter``.

The envs of several VecEnvs can live in one :class:`EnvBank` (:func:`classic_vec_envs` with ``count``): each
VecEnv is a slice of the bank's arrays, steppable alone, and the VecEnvs that have sent their actions
(``step_async``) are stepped in one vectorized call when the first of them waits (``step_wait``), whatever wrappers
(``VecNormalize``, a seed group's ``SeedEnv``) sit on top of each. A seed group steps every seed's ``step_async``
before any ``step_wait``, so its N x n_envs envs take one call per step.

These envs draw random numbers only when they reset, so an evaluation's episodes, which SB3 plays one after another
on one env, can be played side by side (:func:`play_episodes_side_by_side`): every episode's start drawn first, in
order, from the env's own generator, then all episodes stepped together, one policy call per step for all of them.

Not supported (ask for ``make_vec_env`` instead): rendering (``render_mode`` is None), env kwargs other than the
defaults, gymnasium wrappers inside, attributes other than those :meth:`ClassicVecEnv.get_attr` lists. Invalid
Discrete actions raise ``ValueError`` (gymnasium's CartPole and MountainCar assert; its Acrobot takes any index).
"""

from __future__ import annotations

import copy
import functools
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from gymnasium.wrappers import OrderEnforcing, PassiveEnvChecker, TimeLimit
from stable_baselines3.common.monitor import Monitor, ResultsWriter
from stable_baselines3.common.vec_env import VecEnv
from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices, VecEnvObs, VecEnvStepReturn

from lit_sb3.seeds.classic_physics import PHYSICS, Physics

#: the wrappers ``make_vec_env`` puts around each env (``env_is_wrapped`` answers for them)
WRAPPERS: tuple[type, ...] = (Monitor, TimeLimit, OrderEnforcing, PassiveEnvChecker)

StepResult = tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]


def is_classic(env_id: str) -> bool:
    """Whether ``env_id`` is a registered id whose env :class:`ClassicVecEnv` reproduces (its registered entry point
    and default arguments)."""
    physics = PHYSICS.get(env_id)
    if physics is None or env_id not in gym.envs.registry:
        return False
    spec = gym.spec(env_id)
    return spec.entry_point == physics.entry_point and not spec.kwargs and spec.max_episode_steps is not None


@functools.cache
def _registered(env_id: str) -> tuple[spaces.Space, spaces.Space, Any, dict[str, Any]]:
    """The spaces, spec and metadata of ``gym.make(env_id)``."""
    env = gym.make(env_id)
    try:
        return env.observation_space, env.action_space, env.spec, dict(env.metadata)
    finally:
        env.close()


class EnvBank:
    """The state of ``num_envs`` envs of one id: what each env, its ``TimeLimit`` and its ``Monitor`` hold, as arrays
    (column / row k: env k), and the actions of the VecEnvs waiting to be stepped."""

    def __init__(self, env_id: str, num_envs: int) -> None:
        if not is_classic(env_id):
            raise ValueError(f"env_id: batched classic-control envs are {', '.join(PHYSICS)}, got {env_id!r}")
        self.env_id = env_id
        self.physics: Physics = PHYSICS[env_id]()
        self.observation_space, self.action_space, self.spec, self.metadata = _registered(env_id)
        self.max_steps = int(self.spec.max_episode_steps)
        self.num_envs = num_envs
        self.state = np.zeros((self.physics.state_size, num_envs))
        self.rngs: list[np.random.Generator | None] = [None] * num_envs
        self.rng_seeds: list[int | None] = [None] * num_envs
        self.ready = np.zeros(num_envs, dtype=bool)  # reset since the last episode end
        self.lengths = np.zeros(num_envs, dtype=np.int64)  # steps of the current episode (TimeLimit's and Monitor's)
        self.episode_rewards = np.zeros((num_envs, self.max_steps))  # Monitor's rewards of the current episode
        self.total_steps = np.zeros(num_envs, dtype=np.int64)
        self.returns: list[list[float]] = [[] for _ in range(num_envs)]
        self.episode_lengths: list[list[int]] = [[] for _ in range(num_envs)]
        self.times: list[list[float]] = [[] for _ in range(num_envs)]
        self.t_start = np.full(num_envs, time.time())
        self.writers: list[ResultsWriter | None] = [None] * num_envs
        self.reset_infos: list[dict[str, Any]] = [{} for _ in range(num_envs)]
        obs_shape = tuple(self.observation_space.shape or ())
        self.first_obs = np.zeros((num_envs, *obs_shape), dtype=np.float32)  # each env's last reset's observation
        self.pending: dict[ClassicVecEnv, np.ndarray] = {}
        self.results: dict[ClassicVecEnv, StepResult | Exception] = {}

    def reset_env(self, k: int, seed: int | None, options: dict[str, Any] | None) -> np.ndarray:
        """Env k's ``reset(seed=..., options=...)``: its new episode's first observation."""
        if seed is not None:
            self.rngs[k], self.rng_seeds[k] = seeding.np_random(seed)
        rng = self.rng(k)
        state, obs = self.physics.reset(rng, options or None)
        self.state[:, k] = state
        self.first_obs[k] = obs
        self.lengths[k] = 0
        self.ready[k] = True
        self.reset_infos[k] = {}
        return obs

    def rng(self, k: int) -> np.random.Generator:
        """Env k's ``np_random`` (one from fresh entropy when it was never seeded, as gymnasium's)."""
        rng = self.rngs[k]
        if rng is None:
            rng, self.rng_seeds[k] = seeding.np_random()
            self.rngs[k] = rng
        return rng

    def step(self, where: slice | np.ndarray, actions: np.ndarray, autoreset: bool = True) -> StepResult:
        """One step of the envs ``where`` (a slice, or indices in increasing order), with autoreset (else an env whose
        episode ended waits for its ``reset_env``)."""
        rows = np.arange(self.num_envs)[where]
        if not self.ready[rows].all():
            raise RuntimeError("step: an env was stepped before its first reset; call reset() first")
        new, obs, rewards, terminated = self.physics.step(self.state[:, where], actions)
        self.state[:, where] = new
        lengths = self.lengths[rows]
        self.episode_rewards[rows, lengths] = rewards
        lengths += 1
        self.lengths[rows] = lengths
        self.total_steps[rows] += 1
        truncated = lengths >= self.max_steps
        dones = terminated | truncated
        infos: list[dict[str, Any]] = [{"TimeLimit.truncated": t} for t in (truncated & ~terminated).tolist()]
        for j in np.flatnonzero(dones).tolist():
            k = int(rows[j])
            infos[j] = {
                "episode": self._episode_end(k),
                "TimeLimit.truncated": infos[j]["TimeLimit.truncated"],
                "terminal_observation": obs[j].copy(),
            }
            if autoreset:
                obs[j] = self.reset_env(k, None, None)
        return obs, rewards.astype(np.float32), dones, infos

    def _episode_end(self, k: int) -> dict[str, Any]:
        """Monitor's record of env k's episode that just ended."""
        self.ready[k] = False
        return self.record_episode(k, self.episode_rewards[k, : int(self.lengths[k])])

    def record_episode(self, k: int, rewards: np.ndarray) -> dict[str, Any]:
        """Monitor's record of an episode of env k with these rewards (and its row in the monitor file)."""
        length = len(rewards)
        total = sum(rewards.tolist())  # Monitor sums a list of Python floats
        now = time.time()
        episode = {"r": round(total, 6), "l": length, "t": round(now - self.t_start[k], 6)}
        self.returns[k].append(total)
        self.episode_lengths[k].append(length)
        self.times[k].append(now - self.t_start[k])
        writer = self.writers[k]
        if writer is not None:
            writer.write_row(episode)
        return dict(episode)

    def step_pending(self) -> None:
        """Step every VecEnv that sent its actions, in one call; each one's result waits for its ``step_wait``."""
        waiting = sorted(self.pending.items(), key=lambda item: item[0].start)
        self.pending.clear()
        ready = []
        for env, actions in waiting:
            try:
                ready.append((env, env.checked(actions)))
            except ValueError as error:
                self.results[env] = error
        if not ready:
            return
        actions = np.concatenate([a for _, a in ready]) if len(ready) > 1 else ready[0][1]
        if not self.physics.valid(actions, self.action_space).all():  # find whose (rare), step the others
            refused = [(env, a) for env, a in ready if not self.physics.valid(a, self.action_space).all()]
            for env, seed_actions in refused:
                self.results[env] = ValueError(
                    f"actions: {self.env_id} takes the actions of {self.action_space}, got {seed_actions.tolist()}"
                )
            ready = [(env, a) for env, a in ready if env not in self.results]
            if not ready:
                return
            actions = np.concatenate([a for _, a in ready])
        starts = [env.start for env, _ in ready]
        stops = [env.stop for env, _ in ready]
        if all(stops[i] == starts[i + 1] for i in range(len(ready) - 1)):
            where: slice | np.ndarray = slice(starts[0], stops[-1])
        else:
            where = np.concatenate([np.arange(a, b) for a, b in zip(starts, stops)])
        obs, rewards, dones, infos = self.step(where, actions)
        offset = 0
        for env, _ in ready:
            end = offset + env.num_envs
            self.results[env] = (obs[offset:end], rewards[offset:end], dones[offset:end], infos[offset:end])
            offset = end


class ClassicVecEnv(VecEnv):
    """``make_vec_env(env_id, n_envs)`` as arrays: envs ``start .. stop - 1`` of an :class:`EnvBank`."""

    def __init__(
        self,
        bank: EnvBank,
        start: int,
        stop: int,
        seed: int | None = None,
        monitor_dir: str | None = None,
        override_existing: bool = True,
    ) -> None:
        self.bank, self.start, self.stop = bank, start, stop
        n = stop - start
        # each env's action space, seeded as make_vec_env seeds it (the VecEnv's is env 0's, as DummyVecEnv's)
        self.action_spaces = [copy.deepcopy(bank.action_space) for _ in range(n)]
        self.observation_spaces = [copy.deepcopy(bank.observation_space) for _ in range(n)]
        if seed is not None:
            for j, space in enumerate(self.action_spaces):
                space.seed(seed + j)
        for j in range(n):
            k = start + j
            bank.t_start[k] = time.time()
            if monitor_dir is not None:
                os.makedirs(monitor_dir, exist_ok=True)
                bank.writers[k] = ResultsWriter(
                    os.path.join(monitor_dir, str(j)),
                    header={"t_start": float(bank.t_start[k]), "env_id": str(bank.spec.id)},
                    override_existing=override_existing,
                )
        super().__init__(n, self.observation_spaces[0], self.action_spaces[0])
        self.metadata = bank.metadata
        self.seed(seed)

    @property
    def reset_infos(self) -> list[dict[str, Any]]:
        return self.bank.reset_infos[self.start : self.stop]

    @reset_infos.setter
    def reset_infos(self, infos: list[dict[str, Any]]) -> None:
        self.bank.reset_infos[self.start : self.stop] = infos

    def reset(self) -> VecEnvObs:
        self._drop_pending()
        obs = np.stack(
            [
                self.bank.reset_env(self.start + j, self._seeds[j], self._options[j] or None)
                for j in range(self.num_envs)
            ]
        )
        self._reset_seeds()
        self._reset_options()
        return obs

    def checked(self, actions: np.ndarray) -> np.ndarray:
        """``actions`` as the bank steps them; ValueError (one line) for an array of the wrong shape or kind (the
        bank checks the values, all VecEnvs' at once)."""
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs,) or actions.dtype.kind not in "iu":
            raise ValueError(
                f"actions: {self.num_envs} integers (one per env) for {self.bank.env_id}, got an array of shape "
                f"{actions.shape} and dtype {actions.dtype}"
            )
        return actions

    def step_async(self, actions: np.ndarray) -> None:
        if self in self.bank.results:
            raise RuntimeError("step_async: this VecEnv's last step was not collected (call step_wait first)")
        self.bank.pending[self] = actions

    def step_wait(self) -> VecEnvStepReturn:
        if self not in self.bank.results:
            if self not in self.bank.pending:
                raise RuntimeError("step_wait: no actions were sent (call step_async first)")
            self.bank.step_pending()
        result = self.bank.results.pop(self)
        if isinstance(result, Exception):
            raise result
        return result

    def _drop_pending(self) -> None:
        self.bank.pending.pop(self, None)
        self.bank.results.pop(self, None)

    def close(self) -> None:
        self._drop_pending()
        for k in range(self.start, self.stop):
            writer = self.bank.writers[k]
            if writer is not None:
                writer.close()
                self.bank.writers[k] = None

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        return [self._attr(attr_name, j) for j in self._get_indices(indices)]

    def _attr(self, name: str, j: int) -> Any:
        k = self.start + j
        values = {
            "spec": lambda: self.bank.spec,
            "metadata": lambda: self.bank.metadata,
            "render_mode": lambda: None,
            "observation_space": lambda: self.observation_spaces[j],
            "action_space": lambda: self.action_spaces[j],
            "np_random": lambda: self.bank.rng(k),
            "np_random_seed": lambda: (self.bank.rng(k), self.bank.rng_seeds[k])[1],
        }
        if name not in values:
            raise AttributeError(
                f"attr_name: the batched {self.bank.env_id} envs have {', '.join(values)}, not {name!r} "
                "(build the env with make_vec_env for others)"
            )
        return values[name]()

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        raise AttributeError(
            f"attr_name: the batched {self.bank.env_id} envs take no attributes (got {attr_name!r}); build the env "
            "with make_vec_env to set them"
        )

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> list[Any]:
        """Monitor's ``get_episode_rewards``, ``get_episode_lengths``, ``get_episode_times``, ``get_total_steps``."""
        bank = self.bank
        methods = {
            "get_episode_rewards": lambda k: bank.returns[k],
            "get_episode_lengths": lambda k: bank.episode_lengths[k],
            "get_episode_times": lambda k: bank.times[k],
            "get_total_steps": lambda k: int(bank.total_steps[k]),
        }
        if method_name not in methods or method_args or method_kwargs:
            raise AttributeError(
                f"method_name: the batched {self.bank.env_id} envs have {', '.join(methods)} (no arguments), not "
                f"{method_name!r}"
            )
        return [methods[method_name](self.start + j) for j in self._get_indices(indices)]

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        wrapped = any(issubclass(wrapper, wrapper_class) for wrapper in WRAPPERS)
        return [wrapped for _ in self._get_indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None for _ in range(self.num_envs)]


def classic_vec_envs(
    env_id: str,
    n_envs: int,
    count: int = 1,
    *,
    seeds: Sequence[int | None] | None = None,
    monitor_dirs: Sequence[str | None] | None = None,
    override_existing: bool = True,
) -> list[ClassicVecEnv]:
    """``count`` VecEnvs of ``n_envs`` envs each, as ``make_vec_env(env_id, n_envs, seed=seeds[i],
    monitor_dir=monitor_dirs[i], monitor_kwargs={"override_existing": ...})`` builds them, sharing one bank (stepped
    together when they step together)."""
    if n_envs < 1 or count < 1:
        raise ValueError(f"n_envs, count: must be >= 1, got {n_envs} and {count}")
    for name, values in (("seeds", seeds), ("monitor_dirs", monitor_dirs)):
        if values is not None and len(values) != count:
            raise ValueError(f"{name}: one per VecEnv ({count}), got {len(values)}")
    bank = EnvBank(env_id, n_envs * count)
    return [
        ClassicVecEnv(
            bank,
            i * n_envs,
            (i + 1) * n_envs,
            seed=seeds[i] if seeds is not None else None,
            monitor_dir=monitor_dirs[i] if monitor_dirs is not None else None,
            override_existing=override_existing,
        )
        for i in range(count)
    ]


def play_episodes_side_by_side(
    envs: Sequence[ClassicVecEnv], episodes: int, policy: Callable[[np.ndarray, np.ndarray], np.ndarray]
) -> list[list[dict[str, Any]]]:
    """The next ``episodes`` episodes of each one-env VecEnv (just reset), played side by side: each VecEnv's
    Monitor records (``r``, ``l``, ``t``), in order, as playing them one after another gives them for a policy of the
    observation alone, with one ``policy`` call per step for all of them.

    The classic envs draw randomness only when they reset, so every episode's start is drawn first, in order, from
    the env's own ``np_random`` (the current episode's, one per later episode, then the start that follows the last
    episode, where the env is left): each env ends as the one-by-one play leaves it (its generator, Monitor's
    records and file rows, step count). ``policy(obs, playing)`` maps observations ``[len(envs), episodes,
    *obs_shape]`` to actions ``[len(envs), episodes]``; ``playing`` says which episodes go on (an ended one shows
    its terminal observation until all end, and its action is not used).
    """
    if episodes < 1:
        raise ValueError(f"episodes: must be >= 1, got {episodes}")
    if len({env.bank.env_id for env in envs}) != 1:
        raise ValueError("envs: the envs played side by side need one env id")
    for env in envs:
        if env.num_envs != 1:
            raise ValueError(f"envs: VecEnvs of one env each, got one of {env.num_envs}")
        if env.bank.lengths[env.start] != 0 or not env.bank.ready[env.start] or env in env.bank.pending:
            raise RuntimeError("envs: reset() each VecEnv first (its episode must not have started)")
    n = len(envs)
    lanes = EnvBank(envs[0].bank.env_id, n * episodes)  # lane i * episodes + e: env i's episode e
    for i, env in enumerate(envs):
        bank, k, first = env.bank, env.start, i * episodes
        lanes.state[:, first], lanes.first_obs[first] = bank.state[:, k], bank.first_obs[k]
        rng = bank.rng(k)
        for lane in range(first + 1, first + episodes):
            lanes.state[:, lane], lanes.first_obs[lane] = lanes.physics.reset(rng, None)
        bank.reset_env(k, None, None)  # the start after the last episode: where the one-by-one play leaves it
    lanes.ready[:] = True
    obs = lanes.first_obs.copy()
    playing = np.ones(n * episodes, dtype=bool)
    while playing.any():
        shaped = obs.reshape(n, episodes, *obs.shape[1:])
        actions = np.asarray(policy(shaped, playing.reshape(n, episodes))).reshape(n * episodes)
        rows = np.flatnonzero(playing)
        if not lanes.physics.valid(actions[rows], lanes.action_space).all():
            raise ValueError(f"policy: {lanes.env_id} takes the actions of {lanes.action_space}")
        obs[rows], _, dones, _ = lanes.step(rows, actions[rows], autoreset=False)
        playing[rows[dones]] = False
    played = []
    for i, env in enumerate(envs):
        bank, k, first = env.bank, env.start, i * episodes
        records = []
        for lane in range(first, first + episodes):
            length = int(lanes.lengths[lane])
            records.append(bank.record_episode(k, lanes.episode_rewards[lane, :length]))
            bank.total_steps[k] += length
        played.append(records)
    return played

"""``SeedGroup``: N seeds of one configuration trained as one batched model, as a LightningModule.

The group holds one ordinary model per seed (built as the single run would build it, so seed i starts from the
single run's initial weights), stacks their networks for the batched algorithm (:class:`BatchedAlgorithm`), and
owns what every batched algorithm shares: the seeds' envs stepped as one VecEnv, the env-step count, SB3
callbacks, episode statistics, per-seed metric rows, evaluation, and each seed's state for an exact resume.
"""

from __future__ import annotations

import importlib
import time
import warnings
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, ClassVar

import lightning as L
import numpy as np
import torch
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.type_aliases import MaybeCallback
from stable_baselines3.common.utils import get_device
from stable_baselines3.common.vec_env import VecEnv, VecMonitor, VecNormalize, is_vecenv_wrapped

from lit_sb3.common import resume
from lit_sb3.common.envs import EnvSource
from lit_sb3.common.sb3_bridge import as_callback, record_rollout_stats
from lit_sb3.common.seeding import EVAL_SEED_OFFSET
from lit_sb3.datamodule import RLEnvDataModule
from lit_sb3.lightning_compat import attached_trainer
from lit_sb3.seeds.classic_envs import ClassicVecEnv, play_episodes_side_by_side
from lit_sb3.seeds.envs import GroupVecEnv, seed_envs
from lit_sb3.seeds.streams import STREAMS_FORMAT, SeedStreams
from lit_sb3.seeds.transfer import to_host

#: the batched algorithms: lit_sb3 class name -> (its module, the batched implementation "module:Class")
BATCHED: dict[str, tuple[str, str]] = {
    "PPO": ("lit_sb3.algorithms.ppo", "lit_sb3.seeds.on_policy:BatchedPPO"),
    "A2C": ("lit_sb3.algorithms.a2c", "lit_sb3.seeds.on_policy:BatchedA2C"),
    "DQN": ("lit_sb3.algorithms.dqn", "lit_sb3.seeds.off_policy_updates:BatchedDQN"),
    "QRDQN": ("lit_sb3.algorithms.qrdqn", "lit_sb3.seeds.off_policy_updates:BatchedQRDQN"),
    "SAC": ("lit_sb3.algorithms.sac", "lit_sb3.seeds.off_policy_updates:BatchedSAC"),
    "TQC": ("lit_sb3.algorithms.tqc", "lit_sb3.seeds.off_policy_updates:BatchedTQC"),
    "TD3": ("lit_sb3.algorithms.td3", "lit_sb3.seeds.off_policy_updates:BatchedTD3"),
    "DDPG": ("lit_sb3.algorithms.ddpg", "lit_sb3.seeds.off_policy_updates:BatchedTD3"),  # TD3's special case
}


def _batched_class(algo_cls: type) -> type[BatchedAlgorithm] | None:
    entry = BATCHED.get(getattr(algo_cls, "__name__", ""))
    if entry is None or getattr(importlib.import_module(entry[0]), algo_cls.__name__, None) is not algo_cls:
        return None
    module, name = entry[1].split(":")
    batched: type[BatchedAlgorithm] = getattr(importlib.import_module(module), name)
    return batched


#: two scores of an argmax closer than this (relative to the best, at least 1) are compared again with the forward
#: of one observation per seed: a product of several observations' rows runs another kernel than one row's, whose
#: results differ in the last bits (measured: up to ~3e-5 on [400, 300] layers of Gaussian inputs, ~1e-7 relative)
TIE_MARGIN = 1e-4


def greedy_actions(algorithm: BatchedAlgorithm, obs: np.ndarray, wanted: np.ndarray | None = None) -> np.ndarray:
    """Each seed's deterministic discrete actions ``[N, n]`` for observations ``[N, n, ...]``, each the action the
    seed's forward of that observation alone (``[N, 1, ...]``, as one-env evaluation computes it) gives: where the
    best two scores of a row are within :data:`TIE_MARGIN`, that row's column is computed again alone (only the
    rows ``wanted`` says are used, ``[N, n]`` booleans; None: all)."""
    scores = algorithm.greedy_scores(obs)
    if scores is None:
        raise ValueError("algorithm: its deterministic actions are not an argmax (Box actions)")
    # on the host, in numpy: an evaluation step's few small operations cost less there than as torch calls
    host = to_host([scores])[0]
    actions = host.argmax(-1)
    if host.shape[-1] > 1 and obs.shape[1] > 1:
        second, best = np.moveaxis(np.partition(host, -2, axis=-1)[..., -2:], -1, 0)
        close = (best - second) <= TIE_MARGIN * np.maximum(np.abs(best), 1.0)
        if wanted is not None:
            close &= wanted
        for column in np.flatnonzero(close.any(0)).tolist():
            alone = algorithm.greedy_scores(obs[:, column : column + 1])
            assert alone is not None
            actions[:, column] = to_host([alone])[0].argmax(-1)[:, 0]
    return actions


def _classic_beneath(env: VecEnv) -> tuple[ClassicVecEnv, list[VecNormalize]] | None:
    """The one-env classic array env under ``env`` and the evaluation ``VecNormalize`` wrappers above it (outermost
    first), or None when another wrapper (or env) is there: what :meth:`SeedGroup.evaluate` plays side by side."""
    normalizers = []
    while isinstance(env, VecNormalize) and not env.training:
        normalizers.append(env)
        env = env.venv
    return (env, normalizers) if isinstance(env, ClassicVecEnv) and env.num_envs == 1 else None


def _normalized(obs: np.ndarray, normalizers: Sequence[VecNormalize]) -> np.ndarray:
    """``obs`` as the wrappers (outermost first) hand it on; their normalization is elementwise."""
    for normalizer in reversed(normalizers):
        obs = normalizer.normalize_obs(obs)  # type: ignore[assignment]
    return obs


def _check_seeds(seeds: Iterable[int]) -> list[int]:
    values = list(seeds)
    if not values:
        raise ValueError("seeds: a seed group needs at least one seed, got none")
    if not all(isinstance(s, (int, np.integer)) and not isinstance(s, bool) and s >= 0 for s in values):
        raise ValueError(f"seeds: must be non-negative integers, got {values}")
    if len(set(values)) != len(values):
        raise ValueError(f"seeds: must be distinct (a repeated seed would train the same run twice), got {values}")
    return [int(s) for s in values]


def seed_state_refusal(state: dict[str, Any]) -> str | None:
    """Why a :meth:`SeedGroup.seed_state` cannot resume a seed of this lit_sb3's groups, in words (None: it can)."""
    if state.get("streams_format") != STREAMS_FORMAT:
        return (
            "was written by an earlier lit_sb3, whose seed groups drew from random streams of their own (not the "
            "seed's own run's), so it cannot resume exactly"
        )
    return None


def _group_device(device: torch.device | str) -> torch.device:
    """Where a group trains, for an SB3 ``device`` argument: ``"auto"`` is lit_sb3's (the CPU, where
    ``PPO(..., device="auto").learn()`` trains; SB3's would pick CUDA), ``"cuda"`` / ``"cuda:N"`` a CUDA device, or the
    CPU when CUDA is not available (as SB3 and lit_sb3 fall back)."""
    try:
        resolved = torch.device("cpu") if isinstance(device, str) and device == "auto" else get_device(device)
    except (RuntimeError, TypeError):
        resolved = None
    if resolved is None or resolved.type not in ("cpu", "cuda"):
        raise ValueError(f"device: seed groups train on 'cpu', 'cuda' or 'cuda:N' ('auto': the CPU), got {device!r}")
    if resolved.type == "cuda" and resolved.index is None:
        resolved = torch.device("cuda", torch.cuda.current_device())
    return resolved


class BatchedAlgorithm:
    """The algorithm-specific half of a group: its stacked networks, batched optimizers and update.

    A Lightning epoch of the group is one round: :meth:`collect` (env steps through ``group.step_envs``), then
    :meth:`update`. Subclasses implement the methods below; the group calls nothing else.
    """

    #: metric rows every ``log_interval`` rounds (on-policy); False: the algorithm writes them (off-policy: episodes)
    dumps_per_round: ClassVar[bool] = True

    def __init__(self, group: SeedGroup) -> None:
        self.group = group

    def collect(self) -> bool:
        """One round's env steps for every seed; False when a callback stopped training."""
        raise NotImplementedError

    def update(self) -> None:
        """The round's batched update; records each seed's ``train/*`` metrics with ``group.record``."""
        raise NotImplementedError

    def act(self, obs: np.ndarray, deterministic: bool, streams: SeedStreams) -> np.ndarray:
        """Env actions ``[N, n_envs, ...]`` for observations ``[N, n_envs, ...]`` (noise from ``streams``)."""
        raise NotImplementedError

    def greedy_scores(self, obs: np.ndarray) -> torch.Tensor | None:
        """For observations ``[N, n_envs, ...]``: the scores ``[N, n_envs, A]`` whose argmax is each seed's
        deterministic action (SB3's: the action probabilities, Q-values), computed as :meth:`act` computes them;
        None where the deterministic action is not an argmax (Box actions)."""
        return None

    def seed_state(self, index: int) -> dict[str, Any]:
        """Seed ``index``'s networks, optimizer states and counters (tensors and plain data)."""
        raise NotImplementedError

    def load_seed_state(self, index: int, state: dict[str, Any]) -> None:
        raise NotImplementedError

    def export(self, index: int, model: Any) -> None:
        """Put seed ``index``'s current networks and optimizer states into its ordinary model."""
        raise NotImplementedError


class _Rounds:
    """The group's training "dataloader": one item per Lightning epoch when the round collected its env steps."""

    def __init__(self, group: SeedGroup) -> None:
        self.group = group

    def __len__(self) -> int:
        return 1

    def __iter__(self) -> Iterator[int]:
        if self.group._collected:
            yield self.group.iteration


class SeedGroup(L.LightningModule):
    """N seeds of one configuration, trained together as one batched model.

    :param algo_cls: a batched lit_sb3 algorithm class (``SeedGroup.batched(cls)``)
    :param seeds: the seeds, distinct; seed i's model is the one ``algo_cls(..., seed=seeds[i])`` would start from
    :param env: an env id or factory (``n_envs`` copies per seed), or a list of one VecEnv per seed
    :param n_envs: envs per seed for an env id or factory
    :param policy: the policy (``"MlpPolicy"``)
    :param algo_kwargs: the algorithm's arguments, the same for every seed; ``device``: where the group trains
        (``"cpu"``, ``"cuda"``, ``"cuda:N"``; ``"auto"``, the default, is the CPU, as lit_sb3's ``learn``)
    """

    multi_process_update: ClassVar[bool] = False
    epoch_is_rollout: ClassVar[bool] = True

    def __init__(
        self,
        algo_cls: type,
        seeds: Iterable[int],
        env: EnvSource | Sequence[VecEnv],
        n_envs: int = 1,
        policy: str | type = "MlpPolicy",
        **algo_kwargs: Any,
    ) -> None:
        super().__init__()
        batched_cls = _batched_class(algo_cls)
        if batched_cls is None:
            name = getattr(algo_cls, "__name__", repr(algo_cls))
            raise ValueError(
                f"algo_cls: seed groups batch lit_sb3's {', '.join(BATCHED)}, not {name}; train its seeds one "
                "process each"
            )
        for key in ("seed", "env", "_init_setup_model"):
            if key in algo_kwargs:
                raise ValueError(f"{key}: a seed group sets it per seed (give seeds= and env= to the group)")
        if policy not in ("MlpPolicy",) and not isinstance(policy, type):
            raise ValueError(
                f"policy: seed groups batch 'MlpPolicy' (CNN and multi-input policies: not yet), got {policy!r}"
            )
        self._train_device = _group_device(algo_kwargs.pop("device", "auto"))
        self.seeds = _check_seeds(seeds)
        self.automatic_optimization = False
        self.algo_cls = algo_cls
        self.envs = seed_envs(env, len(self.seeds), n_envs)
        self.env = GroupVecEnv(self.envs)
        self.streams = SeedStreams(self.seeds)
        self.models = []
        for index, (seed_env, seed) in enumerate(zip(self.envs, self.seeds)):
            self.models.append(algo_cls(policy, env=seed_env, seed=seed, device=str(self._train_device), **algo_kwargs))
            self.streams.take_global(index)  # what the seed's own run draws from after building its model
        first = self.models[0]
        self.eval_streams = SeedStreams([s + EVAL_SEED_OFFSET for s in self.seeds])
        self.num_timesteps = 0
        self.iteration = 0
        self.log_interval: int | None = first.default_log_interval
        self.last_obs: np.ndarray | None = None
        self.last_episode_starts = np.ones(self.env.num_envs, dtype=bool)
        window = first.stats_window_size
        self.ep_info_buffers: list[deque[dict[str, Any]]] = [deque(maxlen=window) for _ in self.seeds]
        self.ep_success_buffers: list[deque[bool]] = [deque(maxlen=window) for _ in self.seeds]
        self._loggers = [Logger(folder=None, output_formats=[]) for _ in self.seeds]
        self._callback_logger = Logger(folder=None, output_formats=[])
        self._rows: list[list[tuple[int, dict[str, float]]]] = [[] for _ in self.seeds]
        self._action_logs: list[resume.ActionLog] = []
        self._total_timesteps = 0
        self._rl_callback: MaybeCallback = None
        self._callback: BaseCallback | None = None
        self._collected = False
        self._start_time = 0
        self._timesteps_at_start = 0
        self.algorithm = batched_cls(self)

    # ------------------------------------------------------------------ the contract's surface

    @staticmethod
    def batched(algo_cls: type) -> bool:
        """Whether seed groups batch ``algo_cls``."""
        return _batched_class(algo_cls) is not None

    @property
    def n_seeds(self) -> int:
        return len(self.seeds)

    @property
    def device(self) -> torch.device:
        """Where the group's networks, optimizer states and updates are (SB3's ``model.device``), whatever the
        trainer's accelerator: envs, replay and rollout buffers and the seeds' random generators stay on the host."""
        return self._train_device

    def learn(
        self,
        total_timesteps: int,
        callback: MaybeCallback = None,
        log_interval: int | None = -1,
        reset_num_timesteps: bool = True,
        progress_bar: bool = False,
    ) -> SeedGroup:
        """Train every seed for ``total_timesteps`` env steps (per seed) on an :class:`RLTrainer`.

        :param log_interval: metric rows every this many rounds (None: never; -1: the algorithm's default)
        :param reset_num_timesteps: start counting from zero and reset the envs (False continues, e.g. after
            :meth:`load_seed_states`)
        """
        from lit_sb3.trainer import RLTrainer

        if total_timesteps <= 0:
            raise ValueError(f"total_timesteps: must be > 0, got {total_timesteps}")
        if reset_num_timesteps:
            self.num_timesteps, self.iteration, self.last_obs = 0, 0, None
        if log_interval != -1:
            self.log_interval = log_interval
        with warnings.catch_warnings():  # the group's device= places it, not the trainer's accelerator
            warnings.filterwarnings("ignore", message="GPU available but not used")
            trainer = RLTrainer(
                max_steps=self.num_timesteps + total_timesteps,
                rl_callback=callback,
                logger=False,
                enable_progress_bar=progress_bar,
            )
        trainer.fit(self)
        return self

    def model(self, index: int) -> Any:
        """Seed ``index``'s ordinary model (of the group's algorithm class), holding that seed's current state."""
        model = self.models[self._index(index)]
        self.algorithm.export(index, model)
        model.num_timesteps = self.num_timesteps
        model.ep_info_buffer = deque(self.ep_info_buffers[index], maxlen=model.ep_info_buffer.maxlen)
        model.ep_success_buffer = deque(self.ep_success_buffers[index], maxlen=model.ep_success_buffer.maxlen)
        return model

    def metrics(self, index: int) -> list[tuple[int, dict[str, float]]]:
        """Seed ``index``'s metric rows (SB3's names, with their env step) since the last call."""
        index = self._index(index)
        rows, self._rows[index] = self._rows[index], []
        return rows

    def evaluate(
        self, eval_envs: Sequence[VecEnv], n_eval_episodes: int = 10, deterministic: bool = True
    ) -> list[tuple[list[float], list[int]]]:
        """Each seed's (episode returns, lengths) on ``eval_envs[i]``, counted as SB3's ``evaluate_policy`` counts
        them (each env's share of ``n_eval_episodes``; Monitor's episode records where the env has a Monitor), with
        one policy forward per step for all seeds' eval envs.

        Deterministic evaluation on one-env classic array envs (``lit_sb3.seeds.classic_envs``, under evaluation
        ``VecNormalize`` wrappers or none) plays each seed's episodes side by side instead of one after another:
        the same episode starts, drawn in order from the env's generator, the same actions (each an argmax of the
        seed's forward, recomputed one observation per seed where two scores are within :data:`TIE_MARGIN`), so
        the same results and the envs left as one-by-one play leaves them, at ~1/n_eval_episodes of the steps."""
        if len(eval_envs) != self.n_seeds or len({e.num_envs for e in eval_envs}) != 1:
            raise ValueError(f"eval_envs: one VecEnv per seed ({self.n_seeds}), all with the same number of envs")
        if n_eval_episodes < 1:
            raise ValueError(f"n_eval_episodes: must be >= 1, got {n_eval_episodes}")
        n_envs = eval_envs[0].num_envs
        classic = [_classic_beneath(env) for env in eval_envs] if deterministic and n_envs == 1 else []
        if classic and all(c is not None for c in classic):
            return self._evaluate_side_by_side(eval_envs, classic, n_eval_episodes)  # type: ignore[arg-type]
        targets = np.array([(n_eval_episodes + j) // n_envs for j in range(n_envs)])
        counts = np.zeros((self.n_seeds, n_envs), dtype=int)
        current_rewards = np.zeros((self.n_seeds, n_envs))
        current_lengths = np.zeros((self.n_seeds, n_envs), dtype=int)
        monitored = [is_vecenv_wrapped(e, VecMonitor) or e.env_is_wrapped(Monitor)[0] for e in eval_envs]
        results: list[tuple[list[float], list[int]]] = [([], []) for _ in self.seeds]
        obs = np.stack([e.reset() for e in eval_envs])  # type: ignore[misc]
        while (counts < targets).any():
            actions = self.algorithm.act(obs, deterministic, self.eval_streams)
            stepping = [i for i in range(self.n_seeds) if (counts[i] < targets).any()]
            for i in stepping:  # every env its actions first: batched envs of one bank step in one call
                eval_envs[i].step_async(actions[i])
            for i in stepping:
                env = eval_envs[i]
                new_obs, rewards, dones, infos = env.step_wait()
                current_rewards[i] += rewards
                current_lengths[i] += 1
                for j in range(n_envs):
                    if counts[i, j] >= targets[j] or not dones[j]:
                        continue
                    episode = infos[j].get("episode") if monitored[i] else None
                    if episode is not None:
                        finished: tuple[float, int] | None = (float(episode["r"]), int(episode["l"]))
                    elif not monitored[i]:
                        finished = (float(current_rewards[i, j]), int(current_lengths[i, j]))
                    else:
                        finished = None  # a life lost, not the episode's end (Atari's EpisodicLifeEnv)
                    if finished is not None:
                        results[i][0].append(finished[0])
                        results[i][1].append(finished[1])
                        counts[i, j] += 1
                    current_rewards[i, j], current_lengths[i, j] = 0.0, 0
                obs[i] = new_obs
        return results

    def _evaluate_side_by_side(
        self,
        eval_envs: Sequence[VecEnv],
        classic: Sequence[tuple[ClassicVecEnv, list[VecNormalize]]],
        n_eval_episodes: int,
    ) -> list[tuple[list[float], list[int]]]:
        """:meth:`evaluate` of one-env classic array envs: each seed's episodes played side by side
        (:func:`play_episodes_side_by_side`), the same episodes and results as one after another."""
        for env in eval_envs:
            env.reset()  # through the wrappers, with the seed and options set for this reset

        def policy(raw: np.ndarray, playing: np.ndarray) -> np.ndarray:
            obs = np.stack([_normalized(raw[i], normalizers) for i, (_, normalizers) in enumerate(classic)])
            return greedy_actions(self.algorithm, obs, playing)

        played = play_episodes_side_by_side([env for env, _ in classic], n_eval_episodes, policy)
        return [([float(e["r"]) for e in episodes], [int(e["l"]) for e in episodes]) for episodes in played]

    def seed_state(self, index: int) -> dict[str, Any]:
        """Everything seed ``index`` needs to resume exactly (loads with ``torch.load(weights_only=True)``)."""
        index = self._index(index)
        obs = self.last_obs
        if obs is None or not self._action_logs:
            raise RuntimeError("seed_state: the group has not started training (nothing to resume)")
        return {
            "seed": self.seeds[index],
            "algorithm": self.algo_cls.__name__,
            "num_timesteps": self.num_timesteps,
            "iteration": self.iteration,
            "streams_format": STREAMS_FORMAT,
            "streams": self.streams.state(index),
            "eval_streams": self.eval_streams.state(index),
            "episodes": resume.to_tree(list(self.ep_info_buffers[index])),
            "successes": [bool(s) for s in self.ep_success_buffers[index]],
            "env": self._action_logs[index].state(),
            "last_obs": torch.from_numpy(np.array(self.env.per_seed(obs)[index])),
            "last_episode_starts": torch.from_numpy(self.env.per_seed(self.last_episode_starts)[index].copy()),
            "pending_metrics": {k: float(v) for k, v in self._loggers[index].name_to_value.items()},
            "algorithm_state": self.algorithm.seed_state(index),
        }

    def load_seed_states(self, states: Sequence[dict[str, Any]]) -> None:
        """Resume every seed from :meth:`seed_state` dicts (same seeds, in order; same configuration); the envs are
        brought back by replaying their recorded actions. Continue with ``learn(..., reset_num_timesteps=False)`` or
        ``RLTrainer(max_steps=<total>).fit(group)``."""
        found = [s.get("seed") for s in states]
        if found != self.seeds:
            raise ValueError(f"states: one per seed of the group, in order {self.seeds}; got seeds {found}")
        for state in states:
            why = seed_state_refusal(state)
            if why is not None:
                raise ValueError(
                    f"states: seed {state['seed']}'s state {why}; train the seed again from the start (lit_bench: "
                    "force=true)"
                )
        if {(s["num_timesteps"], s["iteration"], s["algorithm"]) for s in states} != {
            (states[0]["num_timesteps"], states[0]["iteration"], self.algo_cls.__name__)
        }:
            raise ValueError(
                f"states: the seeds of a group advance together; these differ in env steps or algorithm "
                f"({[(s['num_timesteps'], s['algorithm']) for s in states]}), group algorithm {self.algo_cls.__name__}"
            )
        self.num_timesteps, self.iteration = int(states[0]["num_timesteps"]), int(states[0]["iteration"])
        self._action_logs = []
        for i, (env, state) in enumerate(zip(self.envs, states)):
            self.streams.load_state(i, state["streams"])
            self.eval_streams.load_state(i, state["eval_streams"])
            self.ep_info_buffers[i].clear()
            self.ep_info_buffers[i].extend(resume.from_tree(state["episodes"]))
            self.ep_success_buffers[i].clear()
            self.ep_success_buffers[i].extend(state["successes"])
            log = resume.ActionLog.from_state(state["env"])
            log.replay(env)
            self._action_logs.append(log)
            self.algorithm.load_seed_state(i, state["algorithm_state"])
            for key, value in state["pending_metrics"].items():  # the last update's, dumped after the next round
                self.record(i, key, value)
        self.last_obs = np.concatenate([s["last_obs"].numpy() for s in states])
        self.last_episode_starts = np.concatenate([s["last_episode_starts"].numpy() for s in states])

    # ------------------------------------------------------------------ what the batched algorithms use

    @property
    def total_timesteps(self) -> int:
        return self._total_timesteps

    @property
    def progress_remaining(self) -> float:
        """SB3's ``_current_progress_remaining`` (1 -> 0 over the fit's budget)."""
        total = self._total_timesteps
        return 1.0 - float(self.num_timesteps) / float(total) if total > 0 else 1.0

    def step_envs(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]] | None:
        """One vector step of every seed's envs (actions ``[N * n_envs, ...]``): counts the env steps, calls the
        callback's ``on_step`` once, gathers each seed's episode statistics; None when the callback stops training."""
        for log, seed_actions in zip(self._action_logs, self.env.per_seed(actions)):
            log.append(seed_actions)
        new_obs, rewards, dones, infos = self.env.step(actions)
        self.num_timesteps += self.env.envs_per_seed
        callback = self._callback
        if callback is not None:
            callback.update_locals(locals())
            if not callback.on_step():
                return None
        per_seed = self.env.envs_per_seed
        for k, info in enumerate(infos):
            episode, success = info.get("episode"), info.get("is_success")
            if episode is not None:
                self.ep_info_buffers[k // per_seed].append(episode)
            if success is not None and dones[k]:
                self.ep_success_buffers[k // per_seed].append(success)
        return new_obs, rewards, dones, infos  # type: ignore[return-value]

    def record(self, index: int, key: str, value: float | int) -> None:
        """Record a metric of seed ``index`` for its next row (SB3's ``logger.record``)."""
        self._loggers[index].record(key, value)

    @property
    def callback(self) -> BaseCallback | None:
        return self._callback

    # ------------------------------------------------------------------ SB3 callbacks' view of the group

    def get_env(self) -> VecEnv:
        """The group's VecEnv (every seed's envs), as SB3's ``model.get_env()``."""
        return self.env

    @property
    def logger(self) -> Any:
        """The SB3 logger an SB3 callback writes to (``self.logger.record``): the group's own, written nowhere (the
        seeds' metrics are in :meth:`metrics`)."""
        return self._callback_logger

    # ------------------------------------------------------------------ RLTrainer / Lightning

    def fit_datamodule(self) -> RLEnvDataModule:
        """The datamodule ``RLTrainer.fit(group)`` trains with when given none: the group's own envs."""
        return RLEnvDataModule(train_env=self.env)

    def check_env(self, env: VecEnv) -> None:
        """Refuse any env but the group's own."""
        if env is not self.env:
            raise ValueError(
                "env: a seed group trains on its own envs (SeedGroup(..., env=...)); fit it without a datamodule"
            )

    def prepare_run(self, total_timesteps: int, callback: MaybeCallback) -> None:
        """Take the fit's env-step budget (per seed) and SB3 callback(s) (RLTrainer's protocol)."""
        self._total_timesteps = total_timesteps
        self._rl_callback = callback

    def train_dataloader(self) -> _Rounds:
        """One item per round (Lightning epoch) that collected its env steps."""
        return _Rounds(self)

    def configure_optimizers(self) -> Any:
        """None: the batched algorithm steps its own (batched) optimizers."""
        return None

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """A Lightning checkpoint of a group holds every seed's :meth:`seed_state` (a ``ModelCheckpoint`` resumes)."""
        if self.last_obs is not None:
            checkpoint["seed_states"] = [self.seed_state(i) for i in range(self.n_seeds)]

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Resume every seed from a checkpoint :meth:`on_save_checkpoint` wrote."""
        if "seed_states" in checkpoint:
            self.load_seed_states(checkpoint["seed_states"])

    def on_train_start(self) -> None:
        """Seed and reset the envs (unless resuming), start the clock, start the SB3 callback."""
        if self.last_obs is None:
            self.env.seed_each(self.seeds)
            self._action_logs = [resume.ActionLog.before_reset(e) for e in self.envs]
            self.last_obs = np.asarray(self.env.reset())
            self.last_episode_starts = np.ones(self.env.num_envs, dtype=bool)
        self._start_time, self._timesteps_at_start = time.time_ns(), self.num_timesteps
        self._callback = as_callback(self._rl_callback)
        if self._callback is not None:
            self._callback.init_callback(self)  # type: ignore[arg-type]  # the group stands in for a model
            self._callback.on_training_start({"total_timesteps": self._total_timesteps, "self": self}, {})

    def on_train_epoch_start(self) -> None:
        """The round's env steps (stop at the budget or when the callback says so), then the metric rows."""
        self._collected = False
        if self.num_timesteps >= self._total_timesteps:
            self.trainer.should_stop = True
            return
        if self._callback is not None:
            self._callback.on_rollout_start()
        if not self.algorithm.collect():
            self.trainer.should_stop = True
            return
        if self._callback is not None:
            self._callback.update_locals(locals())
            self._callback.on_rollout_end()
        self._collected = True
        self.iteration += 1
        if self.log_interval and self.algorithm.dumps_per_round and self.iteration % self.log_interval == 0:
            self._dump()  # as SB3: between the round's env steps and its update (train/* are the last update's)

    def training_step(self, batch: Any, batch_idx: int) -> None:
        """The round's batched update."""
        self.algorithm.update()

    def on_train_epoch_end(self) -> None:
        """Stop at the budget."""
        if self.num_timesteps >= self._total_timesteps:
            self.trainer.should_stop = True

    def on_train_end(self) -> None:
        """End the SB3 callback."""
        if self._callback is not None:
            self._callback.on_training_end()

    # ------------------------------------------------------------------ internals

    def _index(self, index: int) -> int:
        if not 0 <= index < self.n_seeds:
            raise IndexError(f"index: the group has seeds 0..{self.n_seeds - 1} (by position), got {index}")
        return index

    def _dump(self, indices: Sequence[int] | None = None) -> None:
        """Each seed's row of metrics at the current env step (only ``indices``' when given: the off-policy
        algorithms write a seed's row at its episode ends), also to the trainer's Lightning loggers."""
        trainer = attached_trainer(self)
        loggers = trainer.loggers if trainer is not None else []
        for i, (seed, logger) in enumerate(zip(self.seeds, self._loggers)):
            if indices is not None and i not in indices:
                continue
            logger.record("time/iterations", self.iteration)
            steps = self.num_timesteps - self._timesteps_at_start
            record_rollout_stats(
                logger, self.ep_info_buffers[i], self.ep_success_buffers[i], self.num_timesteps, steps, self._start_time
            )
            row = {k: float(v) for k, v in logger.name_to_value.items()}
            logger.dump(self.num_timesteps)
            self._rows[i].append((self.num_timesteps, row))
            for lg in loggers:
                lg.log_metrics({f"seed_{seed}/{k}": v for k, v in row.items()}, step=self.num_timesteps)
        for lg in loggers:
            lg.save()

"""A wrapper that makes one seed's training env raise mid-run, for the sweep-failure test.

The crash is switched on by an environment variable (not part of the run's config), so re-running the same sweep
command without it resumes the failed run instead of starting it afresh.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import gymnasium as gym

CRASH_SEED_ENV = "LIT_BENCH_TEST_CRASH_SEED"
CRASH_AFTER = 300  # env steps


class CrashOnSeed(gym.Wrapper):
    """Raise RuntimeError after ``CRASH_AFTER`` steps in the env first reset with the seed named by the env var."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.armed = False
        self.steps = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        crash_seed = os.environ.get(CRASH_SEED_ENV)
        if seed is not None and crash_seed is not None and seed == int(crash_seed):
            self.armed = True
        return super().reset(seed=seed, options=options)

    def step(self, action: Any) -> Any:
        self.steps += 1
        if self.armed and self.steps > CRASH_AFTER:
            raise RuntimeError("injected failure (test)")
        return super().step(action)


CRASH_RANK_ENV = "LIT_BENCH_TEST_CRASH_RANK"


class CrashOnRank(gym.Wrapper):
    """Raise RuntimeError when built in the process of the rank named by the env var (before that rank's fit)."""

    def __init__(self, env: gym.Env) -> None:
        if os.environ.get(CRASH_RANK_ENV) == os.environ.get("LOCAL_RANK", "0"):
            raise RuntimeError("injected failure before fit (test)")
        super().__init__(env)


class NanReward(gym.Wrapper):
    """Every reward is NaN (an env that diverged, or a reward function with a bug)."""

    def step(self, action: Any) -> Any:
        obs, _, terminated, truncated, info = super().step(action)
        return obs, float("nan"), terminated, truncated, info


def nan_reward_env(**kwargs: Any) -> gym.Env:
    """CartPole whose rewards are NaN, as an ``env.make`` factory (inside SB3's Monitor: the scores see them)."""
    return NanReward(gym.make("CartPole-v1", **kwargs))


HANG_AFTER_ENV = "LIT_BENCH_TEST_HANG_AFTER"  # env steps (per env copy) before step() hangs
HANG_MARKER_ENV = "LIT_BENCH_TEST_HANG_MARKER"  # file created when it starts hanging


class HangAfter(gym.Wrapper):
    """``step`` never returns once this env copy has taken the number of steps the env var names."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.steps = 0

    def step(self, action: Any) -> Any:
        self.steps += 1
        after = os.environ.get(HANG_AFTER_ENV)
        if after is not None and self.steps > int(after):
            marker = os.environ.get(HANG_MARKER_ENV)
            if marker:
                open(marker, "a").close()
            while True:
                time.sleep(3600)
        return super().step(action)


def hanging_env(**kwargs: Any) -> gym.Env:
    """CartPole that hangs in ``step`` (see ``HangAfter``), as an ``env.make`` factory."""
    return HangAfter(gym.make("CartPole-v1", **kwargs))


KILL_SEED_ENV = "LIT_BENCH_TEST_KILL_SEED"  # the seed whose process SIGKILLs itself at its first step


class KillOnSeed(CrashOnSeed):
    """SIGKILL this process at the first step of the env first reset with the seed named by the env var (as the
    OOM killer ends a joblib worker)."""

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        if seed is not None and os.environ.get(KILL_SEED_ENV) == str(seed):
            self.armed = True
        return gym.Wrapper.reset(self, seed=seed, options=options)

    def step(self, action: Any) -> Any:
        if self.armed:
            os.kill(os.getpid(), signal.SIGKILL)
        return gym.Wrapper.step(self, action)


NAN_SEED_ENV = "LIT_BENCH_TEST_NAN_SEED"  # the seed whose training env's rewards turn NaN after CRASH_AFTER steps
SUCCESS_LENGTH = 30  # an episode at least this long reports is_success


class Succeeds(gym.Wrapper):
    """Reports ``is_success`` at each episode's end (long enough: ``SUCCESS_LENGTH`` steps), as goal envs do; and,
    in the env first reset with the seed named by ``NAN_SEED_ENV``, NaN rewards after ``CRASH_AFTER`` steps (a seed
    whose training diverges)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.armed = False
        self.steps = 0
        self.length = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        nan_seed = os.environ.get(NAN_SEED_ENV)
        if seed is not None and nan_seed is not None and seed == int(nan_seed):
            self.armed = True
        self.length = 0
        return super().reset(seed=seed, options=options)

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = super().step(action)
        self.steps += 1
        self.length += 1
        if terminated or truncated:
            info = {**info, "is_success": self.length >= SUCCESS_LENGTH}
        return obs, float("nan") if self.armed and self.steps > CRASH_AFTER else reward, terminated, truncated, info


def success_env(**kwargs: Any) -> gym.Env:
    """CartPole reporting ``is_success`` (see ``Succeeds``), crashing as ``CrashOnSeed`` says, as an ``env.make``
    factory."""
    return CrashOnSeed(Succeeds(gym.make("CartPole-v1", **kwargs)))

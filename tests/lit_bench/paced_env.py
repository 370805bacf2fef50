"""A wrapper that makes each env step take at least a set wall time, for the SLURM time-limit test.

The pace comes from an environment variable (not part of the run's config), so the same config trained without it
runs at full speed and is the same run (a sleep changes no number): the uninterrupted reference of the test.
"""

from __future__ import annotations

import os
import time
from typing import Any

import gymnasium as gym

STEP_SECONDS_ENV = "LIT_BENCH_TEST_STEP_SECONDS"


class Paced(gym.Wrapper):
    """Sleep the seconds the env var names (when set) in every ``step``."""

    def step(self, action: Any) -> Any:
        pause = os.environ.get(STEP_SECONDS_ENV)
        if pause:
            time.sleep(float(pause))
        return super().step(action)

"""The off-policy constructor arguments SB3 accepts, checked and normalized before anything is built."""

from __future__ import annotations

import numpy as np
from stable_baselines3.common.type_aliases import TrainFreq, TrainFrequencyUnit


def as_train_freq(train_freq: int | tuple[int, str] | list | TrainFreq) -> TrainFreq:
    """``4`` -> every 4 steps; ``(2, "episode")`` (a YAML list works too) -> every 2 episodes."""
    unit: str | TrainFrequencyUnit
    if isinstance(train_freq, (int, np.integer)) and not isinstance(train_freq, bool):
        frequency, unit = int(train_freq), "step"
    elif isinstance(train_freq, (tuple, list)) and len(train_freq) == 2:
        frequency, unit = train_freq
    else:
        raise ValueError(f"train_freq: expected an int or a (frequency, unit) pair, got {train_freq!r}")
    if isinstance(unit, TrainFrequencyUnit):
        unit = unit.value
    if unit not in ("step", "episode"):
        raise ValueError(f"train_freq: unit must be one of 'step', 'episode', got {unit!r}")
    if not isinstance(frequency, (int, np.integer)) or isinstance(frequency, bool) or frequency < 1:
        raise ValueError(f"train_freq: frequency must be an int >= 1, got {frequency!r}")
    return TrainFreq(int(frequency), TrainFrequencyUnit(unit))


def check_off_policy_args(
    learning_starts: int, gradient_steps: int, buffer_size: int, batch_size: int, tau: float, gamma: float, n_steps: int
) -> None:
    """Refuse, in one line naming the argument and its valid range, what the replay loop cannot run with (as SB3, a
    ``batch_size`` above ``buffer_size`` samples with repeats: the Zoo loads agents for acting with buffer_size=1)."""
    if not isinstance(learning_starts, (int, np.integer)) or isinstance(learning_starts, bool) or learning_starts < 0:
        raise ValueError(f"learning_starts: must be an int >= 0, got {learning_starts!r}")
    if not isinstance(gradient_steps, (int, np.integer)) or isinstance(gradient_steps, bool):
        raise ValueError(
            f"gradient_steps: must be an int (>= 1, 0: no updates, -1: as many as env steps collected), "
            f"got {gradient_steps!r}"
        )
    checks = [
        ("buffer_size", buffer_size, buffer_size >= 1, ">= 1"),
        ("batch_size", batch_size, batch_size >= 1, ">= 1"),
        ("tau", tau, 0.0 <= tau <= 1.0, "in [0, 1]"),
        ("gamma", gamma, 0.0 <= gamma <= 1.0, "in [0, 1]"),
        ("n_steps", n_steps, n_steps >= 1, ">= 1"),
    ]
    for name, value, ok, rule in checks:
        if not ok:
            raise ValueError(f"{name}: must be {rule}, got {value}")


def check_target_update_interval(target_update_interval: int) -> int:
    """``target_update_interval`` when it is >= 1 (gradient steps of SAC / TQC, env steps of DQN / QR-DQN)."""
    if target_update_interval < 1:
        raise ValueError(f"target_update_interval: must be >= 1, got {target_update_interval}")
    return target_update_interval


def check_max_grad_norm(max_grad_norm: float | None) -> float | None:
    """``max_grad_norm`` when it is None (no clipping) or > 0."""
    if max_grad_norm is not None and max_grad_norm <= 0:
        raise ValueError(f"max_grad_norm: must be None or > 0, got {max_grad_norm}")
    return max_grad_norm

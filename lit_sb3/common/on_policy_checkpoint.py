"""What an on-policy checkpoint keeps besides the base's training state, for an exact resume: the rollout count
(``time/iterations``) and the last update's ``train/*`` values, which SB3 records after an update but dumps only after
the next rollout."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from lit_sb3.common.rollout_loop import RolloutLoop
from lit_sb3.common.saved_state import CHECKPOINT, StateFormat

if TYPE_CHECKING:
    from lit_sb3.common.base import BaseAlgorithm

    _Base = BaseAlgorithm  # the class after this mixin in OnPolicyAlgorithm's bases
else:
    _Base = object


class OnPolicyCheckpoint(_Base):
    """The checkpoint hooks of :class:`~lit_sb3.common.on_policy.OnPolicyAlgorithm` (a mixin placed before
    ``BaseAlgorithm``). Zips keep none of this, as SB3's don't."""

    _loop: RolloutLoop  # set by OnPolicyAlgorithm

    def _extra_state(self, fmt: StateFormat = CHECKPOINT) -> dict[str, Any]:
        state = super()._extra_state(fmt)
        if fmt == CHECKPOINT:
            state["iteration"] = self._loop.iteration
            # the last update's train/* values, recorded but dumped only after the next rollout (as SB3 does)
            logger = self.sb3_logger
            state["pending_logs"] = {
                key: (float(value), _exclusion(logger.name_to_excluded.get(key)))
                for key, value in logger.name_to_value.items()
                if _is_number(value)
            }
        return state

    def _load_extra_state(self, state: dict[str, Any], fmt: StateFormat = CHECKPOINT) -> None:
        super()._load_extra_state(state, fmt)
        if fmt == CHECKPOINT:
            self._loop.iteration = int(state.get("iteration", 0))
            for key, (value, excluded) in state.get("pending_logs", {}).items():
                self.sb3_logger.record(key, value, exclude=excluded or None)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.floating, np.integer)) and not isinstance(value, bool)


def _exclusion(excluded: str | tuple[str, ...] | None) -> tuple[str, ...]:
    if excluded is None:
        return ()
    return (excluded,) if isinstance(excluded, str) else tuple(excluded)

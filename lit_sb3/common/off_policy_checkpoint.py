"""What an off-policy checkpoint keeps besides the base's training state, for an exact resume."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.noise import ActionNoise
from stable_baselines3.common.vec_env import VecEnv

from lit_sb3.common import replay, resume
from lit_sb3.common.persistence import CHECKPOINT, StateFormat

if TYPE_CHECKING:
    from lit_sb3.common.base import BaseAlgorithm

    _Base = BaseAlgorithm  # the class after this mixin in OffPolicyAlgorithm's bases
else:
    _Base = object


class OffPolicyCheckpoint(_Base):
    """The checkpoint hooks of :class:`OffPolicyAlgorithm` (a mixin placed before ``BaseAlgorithm``): the replay
    buffer's filled part (unless ``checkpoint_replay_buffer`` is False), the unnormalized last observation, the
    action noise and the running sums of the update statistics. Zips keep none of these, as SB3's don't."""

    #: keep the replay buffer's filled part in Lightning checkpoints (exact resume); False for small checkpoints
    checkpoint_replay_buffer: bool = True
    # what it keeps of OffPolicyAlgorithm (set there)
    replay_buffer: ReplayBuffer | None
    action_noise: ActionNoise | None
    _last_original_obs: Any
    _dumped_at: tuple[int, int]
    _pending_buffer_state: dict[str, Any] | None

    def _extra_state(self, fmt: StateFormat = CHECKPOINT) -> dict[str, Any]:
        state = super()._extra_state(fmt)
        if fmt != CHECKPOINT:
            return state
        if self.checkpoint_replay_buffer and self.replay_buffer is not None:
            state["replay_buffer"] = replay.buffer_arrays(self.replay_buffer)
        if "env" in state:
            state["env"]["last_original_obs"] = resume.to_tree(self._last_original_obs)
        state["action_noise"] = resume.noise_state(self.action_noise)
        state["stat_sums"] = self._metrics.state()
        state["dumped_at"] = list(self._dumped_at)
        return state

    def _resume_training_state(self, env: VecEnv, state: dict[str, Any]) -> None:
        super()._resume_training_state(env, state)
        self._last_original_obs = resume.from_tree(state["env"]["last_original_obs"])
        resume.set_noise_state(self.action_noise, state.get("action_noise"))
        self._metrics.load_state(state.get("stat_sums", {}))
        steps, updates = state.get("dumped_at", (0, 0))
        self._dumped_at = (int(steps), int(updates))

    def _load_extra_state(self, state: dict[str, Any], fmt: StateFormat = CHECKPOINT) -> None:
        super()._load_extra_state(state, fmt)
        buffer_state = state.get("replay_buffer") if fmt == CHECKPOINT else None
        if buffer_state is not None:
            if self.replay_buffer is not None:
                replay.restore_buffer_arrays(self.replay_buffer, buffer_state)
            else:
                self._pending_buffer_state = buffer_state  # applied when the buffer is created at train start

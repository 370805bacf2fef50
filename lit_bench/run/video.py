"""Frames of evaluation episodes, written as mp4 (or GIF): ``enjoy --video`` and the harness's ``eval.video=true``.

Frames come from the env's own ``render()`` (``render_mode="rgb_array"``); MuJoCo renders headless with
``MUJOCO_GL=egl``, classic control needs pygame. Writing needs the ``video`` extra (imageio + imageio-ffmpeg). What a
video needs is checked before training, with the run's other checks (``lit_bench.config.checks.check_eval_video``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper
from stable_baselines3.common.vec_env.base_vec_env import VecEnvObs, VecEnvStepReturn

from lit_bench.config.checks import ConfigError, check_video_deps
from lit_bench.store.format import FINAL_VIDEO
from lit_bench.store.rundir import fresh_tmp

DEFAULT_FPS = 30


class FrameRecorder(VecEnvWrapper):
    """Hands ``on_frame`` the frames of env 0's first ``episodes`` episodes (after reset and after each step)."""

    def __init__(self, venv: VecEnv, episodes: int, on_frame: Callable[[np.ndarray], None]) -> None:
        super().__init__(venv)
        self.on_frame = on_frame
        self.frames = 0
        self.episodes_left = episodes

    def _grab(self) -> None:
        frame = self.venv.render()
        if frame is None:
            raise ConfigError("video: the env returned no frame; was it built with render_mode='rgb_array'?")
        self.on_frame(np.asarray(frame))
        self.frames += 1

    def reset(self) -> VecEnvObs:
        obs = self.venv.reset()
        if self.episodes_left > 0:
            self._grab()
        return obs

    def step_wait(self) -> VecEnvStepReturn:
        obs, rewards, dones, infos = self.venv.step_wait()
        if self.episodes_left > 0:
            # on done the env has auto-reset already: the frame now shows the next episode's start
            self.episodes_left -= int(dones[0])
            if self.episodes_left > 0:
                self._grab()
        return obs, rewards, dones, infos


def frames_per_second(env: VecEnv) -> int:
    fps = env.get_attr("metadata")[0].get("render_fps")
    return int(fps) if fps else DEFAULT_FPS


@contextmanager
def recording(path: str | Path, venv: VecEnv, episodes: int = 1) -> Iterator[VecEnv]:
    """Yield ``venv`` wrapped so that env 0's first ``episodes`` episodes stream into ``path`` (mp4: H.264 via
    imageio-ffmpeg; .gif); the file appears, complete, only when the block ends without an error."""
    import imageio.v2 as imageio

    path = Path(path)
    check_video_deps(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = fresh_tmp(path, path.suffix)  # imageio picks the format by suffix
    fps = frames_per_second(venv)
    if path.suffix.lower() == ".gif":
        writer = imageio.get_writer(tmp, mode="I", duration=1000 / fps, loop=0)
    else:  # yuv420p (what every player takes) wants even frame sizes: odd ones are padded by a pixel
        writer = imageio.get_writer(tmp, fps=fps, codec="libx264", pixelformat="yuv420p", macro_block_size=1)
    recorder = FrameRecorder(venv, episodes, lambda frame: writer.append_data(_pad_even(frame)))
    try:
        yield recorder
        writer.close()
        if recorder.frames == 0:
            raise ValueError(f"video: no frames were rendered for {path}")
        os.replace(tmp, path)
    finally:
        writer.close()
        tmp.unlink(missing_ok=True)


def _pad_even(frame: np.ndarray) -> np.ndarray:
    height, width = frame.shape[:2]
    return np.pad(frame, ((0, height % 2), (0, width % 2), (0, 0)), mode="edge")


def eval_video(eval_cfg: Any, root: Path, budget: int, eval_every: int) -> EvalVideo | None:
    """The harness's ``eval.video`` / ``eval.video_every`` settings (None when videos are off)."""
    if not eval_cfg.get("video"):
        return None
    every = eval_cfg.get("video_every")
    return EvalVideo(root, budget, eval_every, int(every) if every else None)


class EvalVideo:
    """Which harness evaluations get a video: the final one (``video/final.mp4``), and every ``every``-th one.

    :param root: the run's ``video/`` folder
    :param budget: env steps of the run; an evaluation at or past it is the final one
    :param eval_every: env steps between evaluations (the grid every-k counts on)
    :param every: also record every k-th evaluation of the grid as ``video/eval_<timesteps>.mp4`` (None: final only)
    """

    def __init__(self, root: Path, budget: int, eval_every: int, every: int | None = None) -> None:
        self.root = root
        self.budget = budget
        self.eval_every = eval_every
        self.every = every

    def path_for(self, timesteps: int) -> Path | None:
        if timesteps >= self.budget:
            return self.root / FINAL_VIDEO
        if self.every and (timesteps // self.eval_every) % self.every == 0:
            return self.root / f"eval_{timesteps}.mp4"
        return None

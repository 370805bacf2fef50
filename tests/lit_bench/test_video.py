"""``lit_bench.run.video``: off-screen rendering on a machine without a display."""

from __future__ import annotations

import sys

import pytest

from lit_bench.run import video


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the choice is made on Linux only")
def test_without_a_display_pygame_and_mujoco_render_off_screen(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "SDL_VIDEODRIVER", "MUJOCO_GL"):
        monkeypatch.delenv(name, raising=False)
    video.headless_rendering()
    assert video.os.environ["SDL_VIDEODRIVER"] == "dummy"  # no "XDG_RUNTIME_DIR is invalid" from SDL's probing
    assert video.os.environ["MUJOCO_GL"] == "egl"


def test_a_display_or_the_users_choice_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MUJOCO_GL", raising=False)
    monkeypatch.setenv("SDL_VIDEODRIVER", "x11")
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    video.headless_rendering()
    assert video.os.environ["SDL_VIDEODRIVER"] == "x11"
    monkeypatch.delenv("SDL_VIDEODRIVER")
    monkeypatch.delenv("MUJOCO_GL")
    monkeypatch.setenv("DISPLAY", ":0")
    video.headless_rendering()
    assert "SDL_VIDEODRIVER" not in video.os.environ and "MUJOCO_GL" not in video.os.environ

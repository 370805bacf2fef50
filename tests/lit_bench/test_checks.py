"""One line and an honest exit code instead of a traceback: the report where it cannot write, a full disk while
summary.json is written, a sweep name that is not a relative path below out_dir (or too long, or not printable), a
budget no run could finish, enjoy on a malformed config.yaml, a truncated or tampered checkpoint or a config whose
allowed targets get wrong values, ``load`` of a zip whose tensor file holds code."""

from __future__ import annotations

import errno
import io
import json
import os
import shutil
import sys
import zipfile
from pathlib import Path

import pytest

from lit_bench.cli import enjoy, report
from lit_bench.config.checks import headless_rendering
from lit_bench.run import train
from lit_bench.store.rundir import RunDir
from tests.lit_bench.helpers import TINY, compose_run, run_py, write_run

pytestmark = pytest.mark.harness


def _sweep(root: Path) -> Path:
    for seed in range(3):
        write_run(root, "ppo", "CartPole", seed, "lit", [100.0, 200.0 + seed])
    return root


def _one_line(exit_info: pytest.ExceptionInfo) -> str:
    message = str(exit_info.value.code)
    assert message.startswith("report: ") and "\n" not in message, message
    return message


def test_report_on_a_read_only_sweep_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sweep = _sweep(tmp_path / "S")
    real_open, real_mkdir = os.open, os.mkdir

    def read_only(path: object) -> None:  # (a read-only mount: chmod does not stop root)
        if str(path).startswith(str(sweep)):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))

    def open_(path: object, flags: int, *args: object, **kwargs: object) -> int:
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            read_only(path)
        return real_open(path, flags, *args, **kwargs)

    def mkdir(path: object, *args: object, **kwargs: object) -> None:
        read_only(path)
        real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_)
    monkeypatch.setattr(os, "mkdir", mkdir)
    with pytest.raises(SystemExit) as exit_info:
        report.main([str(sweep), "--formats", "png"])
    message = _one_line(exit_info)
    assert f"{sweep / 'report'}" in message and "Read-only file system" in message and "--out" in message


def test_report_out_naming_a_file_is_one_line(tmp_path: Path) -> None:
    sweep = _sweep(tmp_path / "S")
    (tmp_path / "taken").write_text("a file\n")
    with pytest.raises(SystemExit) as exit_info:
        report.main([str(sweep), "--out", str(tmp_path / "taken")])
    assert "is a file" in _one_line(exit_info)
    assert (tmp_path / "taken").read_text() == "a file\n"


def test_a_disk_that_fills_while_summary_json_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The run fails on the full disk (an evaluation row cannot be written); the first try to record that fails too:
    the original error is the one reported, and summary.json does not stay ``running``."""
    full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def append_eval(self: RunDir, row: dict) -> None:
        raise full

    real_write = RunDir.write_summary
    tries = []

    def write_summary(self: RunDir, summary: dict) -> None:
        if summary.get("status") != "running":
            tries.append(summary["status"])
            if len(tries) == 1:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_write(self, summary)

    monkeypatch.setattr(RunDir, "append_eval", append_eval)
    monkeypatch.setattr(RunDir, "write_summary", write_summary)
    summary = train.run(compose_run(*TINY, f"out_dir={tmp_path}"))
    assert summary["status"] == "failed" and summary["error"].startswith("OSError: [Errno 28] No space left")
    assert "summary.json" in summary["error"] and "\n" not in summary["error"]
    on_disk = json.loads(Path(summary["run_dir"], "summary.json").read_text())
    assert on_disk["status"] == "failed" and on_disk["error"].startswith("OSError: [Errno 28]")


@pytest.mark.parametrize(
    ("sweep", "why"),
    [
        ("../../x", "a relative path below out_dir"),
        ("<tmp>/abs", "a relative path below out_dir"),
        ("a/../../b", "a relative path below out_dir"),
        ("x" * 300, "longer than"),
    ],
)
def test_a_sweep_name_outside_out_dir_or_too_long_is_refused(tmp_path: Path, sweep: str, why: str) -> None:
    out = tmp_path / "out" / "runs"
    result = run_py(*TINY, f"out_dir={out}", f"sweep={sweep.replace('<tmp>', str(tmp_path))}")
    output = result.stdout + result.stderr
    assert result.returncode == 1 and "Traceback" not in output, output
    [line] = [line for line in output.splitlines() if "sweep=" in line]
    assert why in line
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == [Path("out"), Path("out/runs")]


@pytest.mark.parametrize("swept", ["sweep=ok,../x", "sweep=ok,<tmp>/abs", "out_dir=<tmp>/o1,<tmp>/o2 sweep=ok,a/../.."])
def test_a_swept_sweep_name_outside_out_dir_is_refused_before_any_directory(tmp_path: Path, swept: str) -> None:
    """Each value of a swept sweep= is checked when the multirun starts: no job runs, Hydra makes no directory."""
    out = tmp_path / "out"
    out.mkdir()
    swept_args = swept.replace("<tmp>", str(tmp_path)).split()
    result = run_py("-m", *TINY, f"out_dir={out}", *swept_args, "hydra/launcher=basic")
    output = result.stdout + result.stderr
    assert result.returncode == 1 and "Traceback" not in output, output
    [line] = [line for line in output.splitlines() if "sweep=" in line]
    assert "a relative path below out_dir" in line, line
    made = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert made in ([Path("out")], [Path("o1"), Path("out")]), made  # at most the out_dir it checked


def test_a_multirun_over_sweep_names_reports_every_job(tmp_path: Path) -> None:
    """The table lists the jobs of every swept sweep directory, and a failed one makes the exit code 1."""
    result = run_py("-m", *TINY, f"out_dir={tmp_path}", "sweep=a,b", "algo.n_epochs=zero", "hydra/launcher=basic")
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert f"sweep {tmp_path / 'a'}, {tmp_path / 'b'}:" in output and "2 failed (2 runs)" in output, output


@pytest.mark.parametrize("backend", ["lit", "sb3"])
def test_enjoy_on_a_malformed_config_or_a_truncated_checkpoint(
    tmp_path: Path, backend: str, capsys: pytest.CaptureFixture
) -> None:
    summary = train.run(compose_run(*TINY, f"backend={backend}", f"out_dir={tmp_path}"))
    run = RunDir(summary["run_dir"])
    checkpoint = run.checkpoints / ("last.ckpt" if backend == "lit" else "last.zip")
    checkpoint.write_bytes(checkpoint.read_bytes()[:1000])
    capsys.readouterr()
    assert enjoy.main([str(run.root), "--episodes", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"enjoy: checkpoint: {checkpoint}") and "\n" not in err, err

    run.config.write_text("algo: {unclosed\n")
    assert enjoy.main([str(run.root), "--episodes", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"enjoy: config.yaml: {run.config}") and "\n" not in err, err


@pytest.mark.parametrize("budget", ["99999999999999999999999", "100000000001"])
def test_a_budget_no_run_could_finish_is_refused(tmp_path: Path, budget: str) -> None:
    """Issue #36: such a budget was accepted and trained until killed."""
    result = run_py(*TINY, f"out_dir={tmp_path}", f"budget={budget}")
    output = result.stdout + result.stderr
    assert result.returncode == 1 and "Traceback" not in output, output
    [line] = [line for line in output.splitlines() if f"budget={budget}" in line]
    assert "more env steps than any run could finish (at most 1e+11" in line, line
    assert not list(tmp_path.rglob("checkpoints/*")), "nothing was trained"


@pytest.mark.parametrize("sweep", ["a\nb", "a\tb", "a\x1b[31mb"])
def test_a_sweep_name_with_control_characters_is_refused(tmp_path: Path, sweep: str) -> None:
    """Issue #36: a quoted newline made a directory with a newline in its name and split the results line."""
    result = run_py(*TINY, f"out_dir={tmp_path}", f"sweep='{sweep}'")
    output = result.stdout + result.stderr
    assert result.returncode == 1 and "Traceback" not in output, output
    [line] = [line for line in output.splitlines() if line.startswith("Error: sweep=")]
    assert "printable text, without control characters" in line, line
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ tensor files holding code (issue #36)


class _Planted:
    """What ``torch.save`` writes for this object calls ``os.system`` when unpickled without weights_only."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple:
        return (os.system, (f"touch {self.marker}",))


def _plant_in_zip(path: Path, member: str, marker: Path) -> None:
    """Replace ``member`` (a tensor file) of the zip at ``path`` with a torch file holding :class:`_Planted`."""
    import torch

    planted = io.BytesIO()
    torch.save({"weights": _Planted(marker)}, planted)
    with zipfile.ZipFile(io.BytesIO(path.read_bytes())) as archive, zipfile.ZipFile(path, "w") as out:
        for item in archive.infolist():
            out.writestr(item, planted.getvalue() if item.filename == member else archive.read(item))


@pytest.mark.parametrize("member", ["policy.pth", "pytorch_variables.pth"])
def test_load_of_a_zip_whose_tensor_file_holds_code_is_one_line(tmp_path: Path, member: str) -> None:
    """PPO.load ended in torch's multi-line "Weights only load failed"."""
    from lit_sb3 import PPO, safe_load

    path, marker = tmp_path / "model.zip", tmp_path / "ran"
    PPO("MlpPolicy", "CartPole-v1", n_steps=32, policy_kwargs={"net_arch": [8]}).save(path)
    _plant_in_zip(path, member, marker)
    for trusted in (False, True):  # SB3's tensor files are read weights_only, trusted or not
        with pytest.raises(safe_load.Refused) as error:
            PPO.load(path, trusted=trusted)
        message = str(error.value)
        assert "\n" not in message and message.startswith(f"load: {path}: {member} names posix.system"), message
    assert not marker.exists()


@pytest.fixture(scope="module")
def sb3_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    summary = train.run(compose_run(*TINY, "backend=sb3", f"out_dir={tmp_path_factory.mktemp('sb3')}"))
    assert summary["status"] == "completed", summary.get("traceback")
    return Path(summary["run_dir"])


@pytest.mark.parametrize(("checkpoint", "member"), [("last", "policy.pth"), ("best", "pytorch_variables.pth")])
def test_enjoy_on_a_tampered_sb3_zip_is_one_line(
    sb3_run: Path, tmp_path: Path, checkpoint: str, member: str, capsys: pytest.CaptureFixture
) -> None:
    """enjoy on a backend=sb3 run with a tampered last.zip / best.zip ended in a 32-line UnpicklingError."""
    run_dir, marker = tmp_path / "run", tmp_path / "ran"
    shutil.copytree(sb3_run, run_dir)
    zip_path = run_dir / "checkpoints" / f"{checkpoint}.zip"
    _plant_in_zip(zip_path, member, marker)
    capsys.readouterr()
    assert enjoy.main([str(run_dir), "--episodes", "1", "--checkpoint", checkpoint]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"enjoy: checkpoint: {zip_path}: {member} names posix.system") and "\n" not in err, err
    assert not marker.exists()


WRONG_VALUES = [
    ("env.wrappers", [{"_target_": "lit_bench.wrappers.FrameSkip", "_partial_": True, "skip": "abc"}]),
    ("env.wrappers", [{"_target_": "lit_bench.wrappers.FrameSkip", "_partial_": True, "nope": 1}]),
    ("env.kwargs", {"max_episode_steps": "abc"}),
]


@pytest.mark.parametrize(
    ("backend", "node", "value"),
    [
        *(("lit", *case) for case in WRONG_VALUES),
        *(("sb3", *case) for case in WRONG_VALUES),
        ("sb3", "algo.policy", [1]),  # (the lit backend's checkpoint holds its policy; sb3's zip is rebuilt from it)
    ],
)
def test_enjoy_on_a_config_whose_allowed_targets_get_wrong_values_is_one_line(
    tmp_path: Path, backend: str, node: str, value: object, capsys: pytest.CaptureFixture
) -> None:
    """Such a config.yaml ended in a 40-51-line traceback."""
    import yaml

    summary = train.run(compose_run(*TINY, f"backend={backend}", f"out_dir={tmp_path}"))
    run = RunDir(summary["run_dir"])
    config = yaml.safe_load(run.config.read_text())
    group, key = node.split(".")
    config[group][key] = value
    run.config.write_text(yaml.safe_dump(config))
    capsys.readouterr()
    code = enjoy.main([str(run.root), "--episodes", "1"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("enjoy: ") and "\n" not in err and "Traceback" not in err, err


# ---- off-screen rendering (for the renderable check and videos) on a machine without a display


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the choice is made on Linux only")
def test_without_a_display_pygame_and_mujoco_render_off_screen(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "SDL_VIDEODRIVER", "MUJOCO_GL"):
        monkeypatch.delenv(name, raising=False)
    headless_rendering()
    assert os.environ["SDL_VIDEODRIVER"] == "dummy"  # no "XDG_RUNTIME_DIR is invalid" from SDL's probing
    assert os.environ["MUJOCO_GL"] == "egl"


def test_a_display_or_the_users_choice_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MUJOCO_GL", raising=False)
    monkeypatch.setenv("SDL_VIDEODRIVER", "x11")
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    headless_rendering()
    assert os.environ["SDL_VIDEODRIVER"] == "x11"
    monkeypatch.delenv("SDL_VIDEODRIVER")
    monkeypatch.delenv("MUJOCO_GL")
    monkeypatch.setenv("DISPLAY", ":0")
    headless_rendering()
    assert "SDL_VIDEODRIVER" not in os.environ and "MUJOCO_GL" not in os.environ

"""#11: bad input is one line before training; damaged result files are rerun, not skipped; SIGINT / SIGTERM stop a
run or a sweep at a checkpoint with exit code 130 / 143 (real subprocesses, real signals)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lit_bench.run import train
from tests.lit_bench.helpers import CHILD_ENV, REPO, compose_run, patience, read_csv, run_py

pytestmark = pytest.mark.harness

TINY = ("algo=ppo", "env=CartPole", "env.n_envs=1", "algo.n_steps=64", "algo.batch_size=64", "eval.episodes=1")


# ------------------------------------------------------------------------------------------ bad input, one line


def _not_writable_dir(tmp_path: Path) -> str:
    if os.geteuid() != 0:
        read_only = tmp_path / "read_only"
        read_only.mkdir()
        read_only.chmod(0o555)
        return str(read_only / "runs")
    return "/sys/lit_bench_runs"  # root may write anywhere but to a read-only file system


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("seed=abc", "seed=abc: must be a non-negative integer"),
        ("seed=1.5", "seed=1.5: must be a non-negative integer"),
        ("env.n_envs=0", "env.n_envs=0: must be a positive integer"),
        ("threads=0", "threads=0: must be a positive integer"),
        ("log_interval=0", "log_interval=0: must be a positive integer or null"),
        ("eval.deterministic=maybe", "eval.deterministic=maybe: must be true or false"),
        ("checkpoint.every=0", "checkpoint.every=0: must be a positive integer or null"),
        ("eval.episodes=abc", "eval.episodes=abc: must be a positive integer"),
        ("algo.learning_rate=abc", "algo.learning_rate=abc: must be a number or a schedule node"),
        ("algo.normalize_advantage=maybe", "algo.normalize_advantage=maybe: must be true or false"),
        (
            "algo.policy_kwargs={activation_fn:torch.nn.ReLU}",
            "algo.policy_kwargs.activation_fn=torch.nn.ReLU: a class is a config node, not a string: "
            "{_target_: hydra.utils.get_class, path: torch.nn.ReLU}",
        ),
        ("out_dir=/proc/lit_bench_nope", "out_dir=/proc/lit_bench_nope: cannot write results there"),
        ("out_dir=<file>", "is a file, not a directory"),
        ("out_dir=<not writable>", "cannot write results there"),
    ],
)
def test_bad_input_fails_before_any_env(
    override: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_envs(*args: object, **kwargs: object) -> None:
        raise AssertionError("envs were built for a config that should have been refused")

    monkeypatch.setattr(train, "make_envs", no_envs)
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    override = override.replace("<file>", str(a_file)).replace("<not writable>", _not_writable_dir(tmp_path))
    out_dir = [] if override.startswith("out_dir=") else [f"out_dir={tmp_path}"]
    summary = train.run(compose_run(*TINY, "budget=64", *out_dir, override))
    assert summary["status"] == "failed" and message in summary["error"], summary["error"]
    assert "\n" not in summary["error"] and summary["traceback"] is None
    assert not list(tmp_path.glob("**/eval.csv"))


def test_cli_bad_input_one_line_and_multirun_carries_on(tmp_path: Path) -> None:
    """Through run.py: out_dir (checked before Hydra makes directories) and a sweep with two bad seeds."""
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    result = run_py(f"out_dir={a_file}")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.strip() == f"Error: out_dir={a_file}: is a file, not a directory"

    result = run_py(
        "-m", *TINY, "seed=abc,1.5", "budget=64", f"out_dir={tmp_path}", "sweep=bad", "hydra/launcher=basic"
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert "2 failed (2 runs)" in result.stdout  # the sweep went on after the first bad job
    assert "FAILED: seed=1.5: must be a non-negative integer" in result.stdout
    assert not (tmp_path / "bad" / "ppo" / "CartPole" / "seed_1.5" / "eval.csv").exists()


# ------------------------------------------------------------------------------------------ damaged result files


def _damage(run_dir: Path, how: str) -> None:
    eval_csv, summary = run_dir / "eval.csv", run_dir / "summary.json"
    if how == "eval.csv truncated":
        eval_csv.write_text(eval_csv.read_text()[:-9])
    elif how == "eval.csv rows lost":
        eval_csv.write_text("".join(eval_csv.read_text().splitlines(keepends=True)[:-1]))
    elif how == "eval.csv empty":
        eval_csv.write_text("")
    elif how == "eval.csv missing":
        eval_csv.unlink()
    elif how == "summary.json unreadable":
        summary.write_text(summary.read_text()[:40])


def test_damaged_completed_run_is_left_alone_not_skipped(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """#36: a completed run whose files do not check out is neither skipped nor trained over (finished work is the
    user's): damaged, in one line; force=true trains it again."""
    cfg = compose_run(*TINY, "budget=128", "eval.every=64", f"out_dir={tmp_path}")
    first = train.run(cfg)
    assert first["status"] == "completed"
    run_dir = Path(first["run_dir"])
    assert train.run(cfg)["status"] == "skipped"  # intact: skipped
    forced = compose_run(*TINY, "budget=128", "eval.every=64", f"out_dir={tmp_path}", "force=true")
    for how in (
        "eval.csv truncated",
        "eval.csv rows lost",
        "eval.csv empty",
        "eval.csv missing",
        "summary.json unreadable",
    ):
        _damage(run_dir, how)
        files = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}
        again = train.run(cfg)
        assert again["status"] == "damaged", how  # neither skipped nor rerun
        assert again["error"].startswith(f"{run_dir}: damaged: {how.split()[0]}") and "\n" not in again["error"]
        assert {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()} == files, how  # nothing changed
        capsys.readouterr()
        assert train.run(forced)["status"] == "completed", how
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{run_dir}: {how.split()[0]}" in err and "running it again" in err, err
        assert [int(r["timesteps"]) for r in read_csv(run_dir / "eval.csv")] == [64, 128], how
    assert train.run(cfg)["status"] == "skipped" and capsys.readouterr().err == ""  # repaired: skipped again


# ------------------------------------------------------------------------------------------ signals


LONG = (
    "algo=ppo",
    "env=CartPole",
    "env.n_envs=1",
    "algo.n_steps=64",
    "algo.batch_size=64",
    "eval.every=320",
    "eval.episodes=2",
)


def _start(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "run.py", *args],
        cwd=REPO,
        env=CHILD_ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def _located(run_dir: Path) -> Path:
    """``<algo>/<env>/seed_<n>`` as given, or under the variant directory the overrides put it in."""
    found = sorted(run_dir.parent.glob(f"*/{run_dir.name}"))
    return found[0] if not run_dir.exists() and len(found) == 1 else run_dir


def _wait_for_checkpoint(process: subprocess.Popen, *run_dirs: Path, step: int = 320) -> list[Path]:
    """The run directories once each holds a checkpoint at ``step`` or later."""
    deadline = time.monotonic() + patience(180)
    while time.monotonic() < deadline:
        located = [_located(d) for d in run_dirs]
        states = [d / "checkpoints" / "state.json" for d in located]
        if all(s.is_file() and json.loads(s.read_text())["timesteps"] >= step for s in states):
            return located
        assert process.poll() is None, "the run ended before the signal: " + process.stdout.read()
        time.sleep(0.1)
    raise AssertionError("no checkpoint in time")


def _interrupted(run_dir: Path, name: str) -> int:
    summary = json.loads((run_dir / "summary.json").read_text())
    step = json.loads((run_dir / "checkpoints" / "state.json").read_text())["timesteps"]
    assert summary["status"] == "interrupted" and summary["signal"] == name and summary["timesteps"] == step
    assert step % 64 == 0, step  # at an update boundary
    return step


def test_sigint_run_checkpoints_exits_130_and_resumes(tmp_path: Path) -> None:
    args = [*LONG, "budget=640", f"out_dir={tmp_path}", "sweep=sig"]
    process = _start(args)
    [run_dir] = _wait_for_checkpoint(process, tmp_path / "sig" / "ppo" / "CartPole" / "seed_0")
    os.kill(process.pid, signal.SIGINT)
    output, _ = process.communicate(timeout=patience(120))
    assert process.returncode == 130, output
    assert "Traceback" not in output and "stopped by SIGINT at" in output
    step = _interrupted(run_dir, "SIGINT")
    assert step < 640

    result = run_py(*args)
    assert result.returncode == 0, result.stdout + result.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["resumed_from"] == step and summary["timesteps"] >= 640


def test_sigterm_sequential_sweep_sb3_table_and_143(tmp_path: Path) -> None:
    process = _start(
        [
            "-m",
            *LONG,
            "seed=0,1",
            "backend=sb3",
            "budget=20000",
            f"out_dir={tmp_path}",
            "sweep=sig",
            "hydra/launcher=basic",
        ]
    )
    [seed_0] = _wait_for_checkpoint(process, tmp_path / "sig" / "ppo@sb3" / "CartPole" / "seed_0")
    root = seed_0.parent
    os.kill(process.pid, signal.SIGTERM)
    output, _ = process.communicate(timeout=patience(120))
    assert process.returncode == 143, output
    assert "Traceback" not in output and "1 interrupted (1 runs)" in output and "sweep stopped by SIGTERM" in output
    _interrupted(root / "seed_0", "SIGTERM")
    assert not (root / "seed_1").exists()  # the rest of the sweep did not start


def joblib_sweep(tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    """A 2-worker joblib sweep of 3 long runs, once the first two have a checkpoint: the process, the runs' parent."""
    process = _start(
        [
            "-m",
            *LONG,
            "seed=0,1,2",
            "budget=20000",
            f"out_dir={tmp_path}",
            "sweep=sig",
            "hydra.launcher.n_jobs=2",
            "seeds_per_process=1",  # (a process per run: two running, one waiting)
        ]
    )
    parent = tmp_path / "sig" / "ppo" / "CartPole"
    return process, _wait_for_checkpoint(process, parent / "seed_0", parent / "seed_1")[0].parent


@pytest.mark.parametrize("how", ["ctrl-c", pytest.param("sigterm-parent", marks=pytest.mark.slow)])
def test_joblib_sweep_stops_with_table(how: str, tmp_path: Path) -> None:
    """Ctrl-C reaches the whole process group; SIGTERM (kill, timeout) only the parent, which forwards it."""
    process, root = joblib_sweep(tmp_path)
    if how == "ctrl-c":
        os.killpg(process.pid, signal.SIGINT)
    else:
        os.kill(process.pid, signal.SIGTERM)
    name, code = ("SIGINT", 130) if how == "ctrl-c" else ("SIGTERM", 143)
    output, _ = process.communicate(timeout=patience(180))
    assert process.returncode == code, output
    assert "Traceback" not in output and "2 interrupted (2 runs)" in output and f"sweep stopped by {name}" in output
    assert output.count(f"{name}: stopping at the next checkpoint") == 1
    for seed in (0, 1):
        _interrupted(root / f"seed_{seed}", name)
    assert not (root / "seed_2" / "summary.json").exists()  # not started


# ------------------------------------------------------------------------------------------ SLURM (submitit)


def test_slurm_launchers_follow_threads_and_requeue() -> None:
    for launcher in ("slurm", "slurm_local"):
        cfg = compose_run(f"hydra/launcher={launcher}", "threads=3")
        assert cfg.hydra.launcher.cpus_per_task == 3
    assert compose_run("hydra/launcher=slurm").hydra.launcher.max_num_timeout > 0


def _descendants(pid: int) -> list[int]:
    parents = {}
    for entry in os.listdir("/proc"):
        try:
            parents[int(entry)] = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (ValueError, OSError, IndexError):
            continue
    found, frontier = [], [pid]
    while frontier:
        children = [child for child, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


@pytest.mark.slow
def test_submitit_preempted_job_checkpoints_requeues_and_resumes(tmp_path: Path) -> None:
    """submitit's local executor: SIGUSR2 (its preemption / time-out signal) -> checkpoint, requeue, resume."""
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    process = _start(["-m", *LONG, "hydra/launcher=slurm_local", "budget=1600", f"out_dir={tmp_path}", "sweep=sub"])
    [run_dir] = _wait_for_checkpoint(process, tmp_path / "sub" / "ppo" / "CartPole" / "seed_0")
    tasks = [
        pid for pid in _descendants(process.pid) if "submitit.core._submit" in Path(f"/proc/{pid}/cmdline").read_text()
    ]
    assert len(tasks) == 1, tasks
    os.kill(tasks[0], signal.SIGUSR2)
    output, _ = process.communicate(timeout=patience(300))
    assert process.returncode == 0, output
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["timesteps"] >= 1600
    assert summary["resumed_from"] is not None and summary["resumed_from"] % 64 == 0
    logs = "".join(p.read_text() for p in (tmp_path / "sub" / ".submitit").rglob("*_log.*"))
    assert "stopping at the next checkpoint" in logs and "Requeued job" in logs

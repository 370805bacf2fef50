"""Nothing wedges: a signal stops a run within ``stop_timeout_s`` whatever it is doing (an env that hangs, a long
evaluation, a wait for another process's run lock), with an honest status and exit code; the ``step_timeout_s``
watchdog fails a run whose env stops responding, in one line."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lit_bench.config.identity import identify, resolved
from tests.lit_bench.crash_env import HANG_AFTER_ENV, HANG_MARKER_ENV
from tests.lit_bench.helpers import CHILD_ENV, REPO, compose_run, find_run

pytestmark = pytest.mark.harness

PPO = (
    "algo=ppo",
    "env=CartPole",
    "env.n_envs=1",
    "algo.n_steps=64",
    "algo.batch_size=64",
    "eval.episodes=2",
    "checkpoint.every=64",
)
HANGING = "env.make={_target_:tests.lit_bench.crash_env.hanging_env,_partial_:true}"


def _start(args: list[str], log: Path, **env: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "run.py", *args],
        cwd=REPO,
        env={**CHILD_ENV, **env},
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _wait_for(condition: object, process: subprocess.Popen, log: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert process.poll() is None, "ended too early: " + log.read_text()
        assert time.monotonic() < deadline, "never happened: " + log.read_text()
        time.sleep(0.05)


def _stopped(process: subprocess.Popen, log: Path, within: float) -> tuple[int, str, float]:
    """Send SIGTERM once; the exit code, the output and how long it took (killed after ``within`` s)."""
    sent = time.monotonic()
    os.kill(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=within)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        raise AssertionError(f"still running {within} s after SIGTERM: " + log.read_text()) from None
    return process.returncode, log.read_text(), time.monotonic() - sent


def _summary(root: Path) -> dict:
    [path] = root.rglob("summary.json")
    return json.loads(path.read_text())


def test_sigterm_stops_a_run_whose_env_hangs_within_stop_timeout(tmp_path: Path) -> None:
    marker, log = tmp_path / "hanging", tmp_path / "log"
    process = _start(
        [*PPO, HANGING, "budget=20000", "eval.every=10000", "stop_timeout_s=3", f"out_dir={tmp_path}"],
        log,
        **{HANG_AFTER_ENV: "300", HANG_MARKER_ENV: str(marker)},
    )
    _wait_for(marker.exists, process, log)
    code, output, took = _stopped(process, log, within=30)
    assert code == 143 and took < 3 + 10, (code, took, output)
    assert "Traceback" not in output and "not stopped within stop_timeout_s=3 s" in output
    summary = _summary(tmp_path)
    assert summary["status"] == "interrupted" and summary["signal"] == "SIGTERM" and summary["timesteps"] == 256
    assert "rerun the same command to resume" in summary["error"]


def test_step_timeout_fails_a_run_whose_env_stops_responding(tmp_path: Path) -> None:
    marker, log = tmp_path / "hanging", tmp_path / "log"
    process = _start(
        [*PPO, HANGING, "budget=20000", "eval.every=10000", "step_timeout_s=2", f"out_dir={tmp_path}"],
        log,
        **{HANG_AFTER_ENV: "300", HANG_MARKER_ENV: str(marker)},
    )
    try:
        process.wait(timeout=90)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    output = log.read_text()
    assert process.returncode == 1 and "Traceback" not in output, output
    assert "FAILED: step_timeout_s=2: the env's step did not return within 2 s" in output
    summary = _summary(tmp_path)
    assert summary["status"] == "failed" and summary["error"].startswith("step_timeout_s=2: ")
    assert "\n" not in summary["error"]


def test_sigterm_during_a_long_evaluation_stops_it(tmp_path: Path) -> None:
    log = tmp_path / "log"
    process = _start([*PPO, "budget=512", "eval.every=256", "eval.episodes=20000", f"out_dir={tmp_path}"], log)
    states = tmp_path / "default"

    def evaluating() -> bool:  # the checkpoint before the evaluation at 256, then a moment into it
        found = list(states.rglob("state.json"))
        return bool(found) and json.loads(found[0].read_text())["timesteps"] >= 192

    _wait_for(evaluating, process, log)
    time.sleep(2)
    code, output, took = _stopped(process, log, within=30)
    assert code == 143 and took < 10, (code, took, output)
    assert "Traceback" not in output
    summary = _summary(tmp_path)
    assert summary["status"] == "interrupted" and summary["timesteps"] == 192


def test_sigterm_while_waiting_for_another_process_run_lock(tmp_path: Path) -> None:
    args = [*PPO, "budget=512", f"out_dir={tmp_path}"]
    config = resolved(compose_run(*args))
    root = identify(config).root
    root.mkdir(parents=True)
    log = tmp_path / "log"
    with (root / ".lock").open("a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        process = _start(args, log)
        _wait_for(lambda: "waiting for it to finish" in log.read_text(), process, log)
        code, output, took = _stopped(process, log, within=30)
    assert code == 143 and took < 15, (code, took, output)  # (the poll is 0.2 s; the rest is exiting)
    assert "Traceback" not in output and "while waiting for the run's lock; nothing was changed" in output
    assert sorted(p.name for p in root.iterdir()) == [".lock"]


def _sweep_with_a_dying_worker(tmp_path: Path, seeds: str, sweeps: str) -> str:
    """Output of a 2-worker joblib sweep of tiny PPO runs in which seed 10's worker SIGKILLs itself (return code 1)."""
    kill = "env.wrappers=[{_target_:tests.lit_bench.crash_env.KillOnSeed,_partial_:true}]"
    command = [sys.executable, "run.py", "-m", "algo=ppo", "env=CartPole", "env.n_envs=8", "algo.n_steps=32"]
    command += ["budget=256", "eval.episodes=2", kill, f"seed={seeds}", f"out_dir={tmp_path}", f"sweep={sweeps}"]
    result = subprocess.run(
        [*command, "hydra.launcher.n_jobs=2", "seeds_per_process=1"],  # a worker per run: one run dies with it
        cwd=REPO,
        env={**CHILD_ENV, "LIT_BENCH_TEST_KILL_SEED": "10"},
        capture_output=True,
        text=True,
        timeout=400,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 1 and "Traceback" not in output, output
    return output


def _table_agrees_with_the_run_directories(sweep_dir: Path) -> None:
    """Every job of the sweep table names its run directory, whose summary.json says the same status; every run
    directory with a summary is in the table."""
    from lit_bench.control.sweep import read_records

    records = read_records(sweep_dir)
    in_table = set()
    for record in records:
        assert record["run_dir"] is not None, record
        status = _summary(Path(record["run_dir"]))["status"]
        assert status == {"skipped": "completed"}.get(record["status"], record["status"]), (record, status)
        in_table.add(Path(record["run_dir"]))
    assert {p.parent for p in sweep_dir.rglob("summary.json")} == in_table


@pytest.mark.slow  # ~2 min: three sweeps' worth of joblib pools on 2 cores
def test_a_joblib_worker_that_dies_fails_its_job_and_the_sweep_runs_the_rest(tmp_path: Path) -> None:
    output = _sweep_with_a_dying_worker(tmp_path, "0,10,20", "died")
    assert "2 completed, 1 failed (3 runs)" in output
    [died] = [line for line in output.splitlines() if " failed " in line and "its joblib worker died" in line]
    assert died.split()[:2] == ["ppo", "CartPole"] and died.split()[3] == "10", died  # (8 envs: seeds 10-17)
    for seed in (0, 20):
        assert _summary(find_run(tmp_path / "died", seed))["status"] == "completed"
    _table_agrees_with_the_run_directories(tmp_path / "died")  # (the dead job's run: failed in both, resumable)


@pytest.mark.slow  # ~40 s: two joblib pools broken in turn
def test_after_a_dead_worker_jobs_finished_in_any_swept_sweep_are_not_run_again(tmp_path: Path) -> None:
    # `-m sweep=a,b`: each job records under its own sweep directory; the reruns after the dead worker read them all
    output = _sweep_with_a_dying_worker(tmp_path, "0,10", "da,db")
    assert "2 completed, 2 failed (4 runs)" in output
    assert "already completed" not in output  # (before: each seed-0 run was started again, then skipped)
    for sweep_name in ("da", "db"):
        assert _summary(find_run(tmp_path / sweep_name, 0))["status"] == "completed"


_PRELOADED = """
import gc, json, os, sys
from joblib import Parallel, cpu_count, delayed
from hydra_plugins.lit_bench_launchers import joblib_launcher

def job():
    # what the worker held before its job imported anything; its parent; the thread limit it was given; whether its
    # collector runs and skips the preloaded objects
    preloaded = "lit_bench.run.train" in sys.modules
    return preloaded, os.getppid(), os.environ.get("OMP_NUM_THREADS"), gc.isenabled(), gc.get_freeze_count() > 0

if sys.argv[1] == "2":
    joblib_launcher.start_preloaded_workers(2)
print(json.dumps([Parallel(n_jobs=2)(delayed(job)() for _ in range(2)), os.getpid(), cpu_count()]))
"""


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_joblib_workers_are_forked_from_a_process_that_imported_what_a_job_needs(n_jobs: int) -> None:
    """The launcher's setup starts the forkserver that forks its workers (n_jobs > 1): a job finds the harness
    imported and frozen out of the garbage collector's passes (which run), the worker's parent is the forkserver (not
    the launching process) and it has joblib's thread limits; without it (loky's own workers) none of that holds."""
    env = {key: value for key, value in CHILD_ENV.items() if key != "OMP_NUM_THREADS"}
    done = subprocess.run(
        [sys.executable, "-c", _PRELOADED, str(n_jobs)], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    jobs, launcher_pid, cores = json.loads(done.stdout)
    for preloaded, parent, threads, collecting, frozen in jobs:
        assert threads == str(max(cores // 2, 1))  # joblib's limit either way
        assert preloaded is (n_jobs == 2) and frozen is (n_jobs == 2) and collecting
        assert (parent != launcher_pid) is (n_jobs == 2)


def test_a_sweep_run_as_a_module_forks_its_workers_without_warnings(tmp_path: Path) -> None:
    """``python -m lit_bench.cli.bench -m ...`` (as ``regress`` runs it): each forked worker runs the main module
    again as ``__mp_main__``, so the forkserver must not have imported it (runpy's RuntimeWarning, once a worker)."""
    command = [sys.executable, "-m", "lit_bench.cli.bench", "-m", "algo=ppo", "env=CartPole", "seed=0,1"]
    command += ["budget=256", "algo.n_steps=128", "algo.batch_size=64", "env.n_envs=1", "eval.episodes=1"]
    command += ["seeds_per_process=1", "hydra.launcher.n_jobs=2", f"out_dir={tmp_path}", "sweep=t"]
    command += ["--allow-no-learning"]
    done = subprocess.run(command, cwd=REPO, env=CHILD_ENV, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 completed (2 runs)" in done.stdout
    assert "Warning" not in done.stdout + done.stderr

"""#31: the harness on real clusters — a one-node SLURM cluster (slurmctld, slurmd, slurmdbd; real ``sbatch``) and a
real Ray cluster (``ray start --head``, joined by address). ``make test-cluster`` runs these (marker ``cluster``,
out of the default run): they start both clusters, run small sweeps on them and stop them again."""

from __future__ import annotations

import json
import math
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.lit_bench.helpers import CHILD_ENV, REPO, read_csv
from tests.lit_bench.paced_env import STEP_SECONDS_ENV

pytestmark = [pytest.mark.cluster, pytest.mark.harness]

CLUSTER_SCRIPT = REPO / "tools" / "slurm_test_cluster.sh"
TINY = ("algo=ppo", "env=CartPole", "env.n_envs=1", "algo.n_steps=64", "algo.batch_size=64", "eval.episodes=1")
PACED = "env.wrappers=[{_target_:paced_env.Paced,_partial_:true}]"  # found through CHILD_ENV's PYTHONPATH
SCORES = ("timesteps", "mean_return", "std_return", "median_return", "mean_ep_length")  # eval.csv less wall time


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A running one-node SLURM cluster: the environment that reaches it (SLURM_CONF); stopped afterwards."""
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    state = tmp_path_factory.mktemp("slurm")
    env = {**CHILD_ENV, "LIT_SLURM_DIR": str(state)}
    started = subprocess.run(
        ["bash", str(CLUSTER_SCRIPT), "start"], env=env, capture_output=True, text=True, timeout=600
    )
    assert started.returncode == 0, started.stdout + started.stderr
    env["SLURM_CONF"] = str(state / "slurm.conf")
    try:
        yield env
    finally:
        subprocess.run(["bash", str(CLUSTER_SCRIPT), "stop"], env=env, capture_output=True, timeout=120)


@dataclass(frozen=True)
class RayHead:
    """A Ray cluster of the test's own: the environment that joins it (RAY_ADDRESS, its token) and the session id
    that every one of its processes (``ray start``, GCS, raylet, workers) carries."""

    env: dict[str, str]
    session: int


def _session_members(session: int) -> set[int]:
    """The live (not zombie) processes of a session (``/proc/<pid>/stat``: state, ppid, pgrp, session)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                state, _, _, sid = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:4]
            except (OSError, ValueError):
                continue  # ended meanwhile
            if int(sid) == session and state != "Z":
                found.add(int(entry.name))
    return found


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


@contextmanager
def _own_ray_head() -> Iterator[RayHead]:
    """``ray start --head --block`` in a session of its own, with its own ports, temp dir and token; afterwards every
    process of that session is killed. Not ``ray stop``, which stops every Ray process on the machine (another
    user's cluster too): Ray's workers set their own process groups but stay in the head's session."""
    ray = shutil.which("ray", path=str(Path(sys.executable).parent)) or shutil.which("ray")
    assert ray is not None, "the ray extra installs the `ray` command"
    port = _free_port()
    # a short temp dir (Ray's socket paths must stay under 108 characters), the cluster's own token (not
    # ~/.ray/auth_token, which any other local Ray instance may rewrite), and free ports for what Ray would put on
    # fixed ones (client server 10001, dashboard 8265, agent 52365): another instance may hold those
    temp = Path(tempfile.mkdtemp(prefix="lit_ray_", dir="/tmp"))
    env = {**CHILD_ENV, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    command = [
        ray,
        "start",
        "--head",
        "--block",
        f"--port={port}",
        f"--ray-client-server-port={_free_port()}",
        f"--dashboard-port={_free_port()}",
        f"--dashboard-agent-listen-port={_free_port()}",
        f"--temp-dir={temp}",
        "--num-cpus=2",
        "--include-dashboard=false",
        "--disable-usage-stats",
    ]
    log = temp / "ray_start.log"
    with log.open("w") as out:
        head = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_for(lambda: head.poll() is not None or "Ray runtime started" in log.read_text(), 300, "ray start")
        assert head.poll() is None, log.read_text()
        yield RayHead({**env, "RAY_ADDRESS": f"127.0.0.1:{port}"}, head.pid)
    finally:
        for _ in range(20):
            members = _session_members(head.pid)
            if not members:
                break
            for pid in members:
                with suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.5)
        head.wait()
        shutil.rmtree(temp, ignore_errors=True)


@pytest.fixture(scope="module")
def ray_head() -> Iterator[RayHead]:
    """A running Ray cluster of the tests' own; stopped afterwards (its processes only)."""
    pytest.importorskip("hydra_plugins.hydra_ray_launcher")
    with _own_ray_head() as head:
        yield head


def _sweep(env: dict[str, str], *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "run.py", "-m", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout
    )


def _summaries(sweep_dir: Path) -> dict[int, dict]:
    return {s["seed"]: s for s in (json.loads(p.read_text()) for p in sweep_dir.rglob("seed_*/summary.json"))}


def _scores(run_dir: Path) -> list[tuple[str, ...]]:
    return [tuple(row[k] for k in SCORES) for row in read_csv(run_dir / "eval.csv")]


@contextmanager
def _started(env: dict[str, str], *args: str) -> Iterator[subprocess.Popen]:
    """A sweep running in the background; killed with its process group if the test ends before it does."""
    sweep = subprocess.Popen(
        [sys.executable, "run.py", "-m", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        yield sweep
    finally:
        if sweep.poll() is None:
            os.killpg(sweep.pid, signal.SIGKILL)
            sweep.wait()


def _wait_for(predicate, timeout: float, what: str):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(1)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def _checkpointed(sweep_dir: Path, seed: int) -> Path | None:
    found = sorted(sweep_dir.glob(f"ppo/CartPole/*/seed_{seed}/checkpoints/state.json"))
    return found[0].parents[1] if found else None


# ------------------------------------------------------------------------------------------------------- SLURM


def test_slurm_sweep_completes_and_points_at_its_job_logs(slurm: dict[str, str], tmp_path: Path) -> None:
    done = _sweep(slurm, "hydra/launcher=slurm", *TINY, "budget=256", "seed=0,1,2,3", f"out_dir={tmp_path}", "sweep=s")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 completed (4 runs)" in done.stdout
    summaries = _summaries(tmp_path / "s")
    assert sorted(summaries) == [0, 1, 2, 3]
    for summary in summaries.values():
        job = summary["cluster"]
        assert summary["status"] == "completed" and job["scheduler"] == "slurm" and job["restarts"] == 0
        assert Path(job["stdout"]).is_file() and Path(job["stderr"]).is_file()  # submitit's log files, findable


def test_slurm_jobs_ask_for_the_memory_their_runs_need(slurm: dict[str, str], tmp_path: Path) -> None:
    """One multirun, two replay-buffer sizes: two job arrays, each job asking (``--mem``) for what its run needs
    (``hydra.launcher.mem_gb=1`` the least: 2 GB for the process, twice the buffer as checkpoints keep it)."""
    dqn = ("algo=dqn", "env=CartPole", "budget=256", "algo.learning_starts=100", "eval.episodes=1")
    args = ("hydra/launcher=slurm", "hydra.launcher.mem_gb=1", *dqn, "algo.buffer_size=1000,30000000")
    done = _sweep(slurm, *args, f"out_dir={tmp_path}", "sweep=m")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "mem_gb: 1 job(s) ask for 3 GB" in done.stderr and "mem_gb: 1 job(s) ask for 5 GB" in done.stderr
    asked = {}
    for path in (tmp_path / "m").rglob("seed_*/summary.json"):
        job = json.loads(path.read_text())["cluster"]["job_id"]
        shown = subprocess.run(
            ["sacct", "-n", "-X", "-j", job, "-o", "ReqMem"], env=slurm, capture_output=True, text=True, timeout=30
        )
        asked[yaml.safe_load((path.parent / "config.yaml").read_text())["algo"]["buffer_size"]] = shown.stdout.strip()
    assert asked == {1000: "3G", 30000000: "5G"}, asked


def _run_seconds(slurm: dict[str, str], job: str) -> int:
    """How long a running SLURM job has run (``scontrol``'s RunTime, ``[days-]HH:MM:SS``)."""
    shown = subprocess.run(
        ["scontrol", "-o", "show", "job", job], env=slurm, capture_output=True, text=True, timeout=30
    )
    run_time = next(word for word in shown.stdout.split() if word.startswith("RunTime=")).removeprefix("RunTime=")
    days, _, clock = run_time.rpartition("-")
    hours, minutes, seconds = (int(part) for part in clock.split(":"))
    return ((int(days or 0) * 24 + hours) * 60 + minutes) * 60 + seconds


def _set_time_limit(slurm: dict[str, str], job: str, minutes: int) -> None:
    subprocess.run(["scontrol", "update", f"JobId={job}", f"TimeLimit={minutes}"], env=slurm, check=True, timeout=30)


def test_slurm_time_limit_requeues_and_resumes_bit_identical(slurm: dict[str, str], tmp_path: Path) -> None:
    """SLURM's own time limit: SIGUSR2 (``signal_delay_s`` before the limit), the run checkpoints, submitit requeues
    the job, the requeued job resumes; the scores equal those of a run never stopped.

    SLURM checks time limits every 30 s and may send the warning signal up to a minute early, so a 1-minute limit
    can signal a job while Python still imports (before any handler: the job dies, FAILED). The job is therefore
    submitted with 10 minutes; once the run has checkpointed, its limit is cut to end within 1-2 minutes (inside
    the 120-s signal delay: SLURM signals at its next check), and raised again once the job was requeued, so the
    requeued attempt starts with 10 minutes. Each env step of the SLURM run takes >= 10 ms (``paced_env``), so the
    run outlasts SLURM's 30-s check on any machine; the reference run, same config, trains at full speed."""
    config = (*TINY, PACED, "budget=6000", "seed=0")
    sweep_dir = tmp_path / "slurm" / "t"
    logs = sweep_dir / ".submitit"
    limits = ("hydra.launcher.timeout_min=10", "hydra.launcher.signal_delay_s=120", "hydra.launcher.max_num_timeout=3")
    paced = {**slurm, STEP_SECONDS_ENV: "0.01"}
    with _started(paced, "hydra/launcher=slurm", *limits, *config, f"out_dir={tmp_path / 'slurm'}", "sweep=t") as sweep:
        run_dir = _wait_for(lambda: _checkpointed(sweep_dir, 0), 300, "the run's first checkpoint")
        job = json.loads((run_dir / "summary.json").read_text())["cluster"]["job_id"]
        _set_time_limit(slurm, job, math.ceil((_run_seconds(slurm, job) + 60) / 60))
        _wait_for(lambda: "Requeued job" in "".join(p.read_text() for p in logs.rglob("*_log.out")), 180, "the requeue")
        _set_time_limit(slurm, job, 10)
        output, _ = sweep.communicate(timeout=600)
    assert sweep.returncode == 0, output
    assert "1 completed (1 runs)" in output  # the requeued attempts are one job
    [summary] = _summaries(sweep_dir).values()
    assert summary["status"] == "completed" and summary["cluster"]["restarts"] >= 1, summary
    assert summary["resumed_from"] is not None
    assert "SIGUSR2" in "".join(p.read_text() for p in logs.rglob("*_log.err"))  # the time limit's signal
    local = subprocess.run(
        [sys.executable, "run.py", *config, f"out_dir={tmp_path / 'local'}", "sweep=t"],
        cwd=REPO,
        env=CHILD_ENV,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert local.returncode == 0, local.stdout + local.stderr
    [uninterrupted] = _summaries(tmp_path / "local" / "t").values()
    assert _scores(Path(summary["run_dir"])) == _scores(Path(uninterrupted["run_dir"]))


def test_scancel_marks_one_job_interrupted_and_the_rest_complete(slurm: dict[str, str], tmp_path: Path) -> None:
    args = (
        "hydra/launcher=slurm",
        *TINY,
        "budget=3000",
        "seed=0,1",
        "seeds_per_process=1",
        f"out_dir={tmp_path}",
        "sweep=c",
    )
    with _started(slurm, *args) as sweep:
        run_dir = _wait_for(lambda: _checkpointed(tmp_path / "c", 0), 300, "seed 0's first checkpoint")
        job = json.loads((run_dir / "summary.json").read_text())["cluster"]["job_id"]
        subprocess.run(["scancel", job], env=slurm, check=True, timeout=30)
        output, _ = sweep.communicate(timeout=600)
    assert sweep.returncode == 1, output  # not every job completed
    assert "1 completed, 1 interrupted (2 runs)" in output and "Traceback" not in output
    summaries = _summaries(tmp_path / "c")
    assert summaries[0]["status"] == "interrupted" and summaries[0]["signal"] == "SIGTERM"
    assert summaries[1]["status"] == "completed"
    resumed = _sweep(slurm, *args)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    again = _summaries(tmp_path / "c")
    assert again[0]["status"] == "completed" and again[0]["resumed_from"] is not None


# --------------------------------------------------------------------------------------------------------- Ray


def test_stopping_a_test_ray_head_leaves_other_ray_clusters_alone(ray_head: RayHead) -> None:
    """A second head started and stopped as the fixture does; the first (a bystander: any other Ray user of the
    machine) keeps its daemons (``ray start``, GCS, raylet, monitors; workers come and go), and the tests after this
    one still run on it. ``ray stop --force`` there killed them all."""

    def daemons(session: int) -> set[int]:
        return {pid for pid in _session_members(session) if not _cmdline(pid).startswith(b"ray::")}

    bystander = daemons(ray_head.session)
    assert any(b"gcs_server" in _cmdline(pid) for pid in bystander) and ray_head.session in bystander
    with _own_ray_head() as other:
        assert any(b"raylet" in _cmdline(pid) for pid in _session_members(other.session))
    assert not _session_members(other.session)
    assert bystander <= daemons(ray_head.session)


def test_ray_sweep_on_a_running_cluster(ray_head: RayHead, tmp_path: Path) -> None:
    done = _sweep(
        ray_head.env, "hydra/launcher=ray", *TINY, "budget=256", "seed=0,1,2,3", f"out_dir={tmp_path}", "sweep=r"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 completed (4 runs)" in done.stdout  # the workers (other processes of the cluster) recorded their jobs
    for summary in _summaries(tmp_path / "r").values():
        assert summary["status"] == "completed" and summary["cluster"]["scheduler"] == "ray"


def test_killed_ray_worker_fails_its_job_and_a_rerun_resumes_it(ray_head: RayHead, tmp_path: Path) -> None:
    args = (
        "hydra/launcher=ray",
        *TINY,
        "budget=4000",
        "seed=0,1",
        "seeds_per_process=1",
        f"out_dir={tmp_path}",
        "sweep=k",
    )
    with _started(ray_head.env, *args) as sweep:
        run_dir = _wait_for(lambda: _checkpointed(tmp_path / "k", 0), 300, "seed 0's first checkpoint")
        worker = json.loads((run_dir / "summary.json").read_text())["cluster"]["pid"]
        assert Path(f"/proc/{worker}/cmdline").read_bytes().startswith(b"ray::")  # a worker of the cluster
        os.kill(worker, signal.SIGKILL)
        output, _ = sweep.communicate(timeout=600)
    assert sweep.returncode == 1, output
    assert "Traceback" not in output and "Ray worker died" in output
    assert "1 completed, 1 failed (2 runs)" in output
    resumed = _sweep(ray_head.env, *args)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    summaries = _summaries(tmp_path / "k")
    assert all(s["status"] == "completed" for s in summaries.values())
    assert [s["resumed_from"] is not None for s in sorted(summaries.values(), key=lambda s: s["seed"])].count(True) == 1


def test_a_reference_suite_end_to_end_on_slurm_scaled_down(slurm: dict[str, str], tmp_path: Path) -> None:
    """``regress --suite zoo_classic --launcher slurm --scale``: the suite's multiruns go through sbatch, the report
    against SB3's reference scores is written; budgets scaled to 0.2% (a2c 500k -> 1000, ppo 100k -> 256)."""
    command = [
        sys.executable,
        "-m",
        "lit_bench.cli.regress",
        "--suite",
        "zoo_classic",
        "--launcher",
        "slurm",
        "--scale",
        "0.002",
        "--only",
        "a2c:CartPole",
        "ppo:CartPole",
        "--out-dir",
        str(tmp_path),
    ]
    done = subprocess.run(command, cwd=REPO, env=slurm, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "hydra/launcher=slurm" in done.stdout and "budget=1000" in done.stdout
    assert "0 failed or missing" in done.stdout
    summaries = [json.loads(p.read_text()) for p in tmp_path.rglob("seed_*/summary.json")]
    assert len(summaries) == 10 and {s["cluster"]["scheduler"] for s in summaries} == {"slurm"}
    assert (tmp_path / "regress_zoo_classic_lit" / "report" / "summary.md").is_file()

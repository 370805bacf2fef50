"""#31: the harness on real clusters — a one-node SLURM cluster (slurmctld, slurmd, slurmdbd; real ``sbatch``) and a
real Ray cluster (``ray start --head``, joined by address). ``make test-cluster`` runs these (marker ``cluster``,
out of the default run): they start both clusters, run small sweeps on them and stop them again."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lit_bench.helpers import CHILD_ENV, REPO, read_csv

pytestmark = [pytest.mark.cluster, pytest.mark.harness]

CLUSTER_SCRIPT = REPO / "tools" / "slurm_test_cluster.sh"
TINY = ("algo=ppo", "env=CartPole", "env.n_envs=1", "algo.n_steps=64", "algo.batch_size=64", "eval.episodes=1")
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


@pytest.fixture(scope="module")
def ray_head() -> Iterator[dict[str, str]]:
    """A running Ray cluster (``ray start --head``): the environment whose RAY_ADDRESS joins it; stopped afterwards."""
    pytest.importorskip("hydra_plugins.hydra_ray_launcher")
    ray = shutil.which("ray", path=str(Path(sys.executable).parent)) or shutil.which("ray")
    assert ray is not None, "the ray extra installs the `ray` command"
    port = _free_port()
    # the cluster's own token (Ray's token authentication): not ~/.ray/auth_token, which any other local Ray
    # instance on this machine may rewrite
    env = {**CHILD_ENV, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    started = subprocess.run(
        [
            ray,
            "start",
            "--head",
            f"--port={port}",
            "--num-cpus=2",
            "--include-dashboard=false",
            "--disable-usage-stats",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        yield {**env, "RAY_ADDRESS": f"127.0.0.1:{port}"}
    finally:
        subprocess.run([ray, "stop", "--force"], env=env, capture_output=True, timeout=120)


def _sweep(env: dict[str, str], *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "run.py", "-m", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout
    )


def _summaries(sweep_dir: Path) -> dict[int, dict]:
    return {s["seed"]: s for s in (json.loads(p.read_text()) for p in sweep_dir.rglob("seed_*/summary.json"))}


def _scores(run_dir: Path) -> list[tuple[str, ...]]:
    return [tuple(row[k] for k in SCORES) for row in read_csv(run_dir / "eval.csv")]


def _start(env: dict[str, str], *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "run.py", "-m", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


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


def test_slurm_time_limit_requeues_and_resumes_bit_identical(slurm: dict[str, str], tmp_path: Path) -> None:
    """A 1-minute time limit: SLURM sends SIGUSR2 (signal_delay_s before the limit), the run checkpoints, submitit
    requeues the job, the requeued job resumes; the scores equal those of a run never stopped."""
    config = (*TINY, "budget=6000", "seed=0")
    limited = _sweep(
        slurm,
        "hydra/launcher=slurm",
        "hydra.launcher.timeout_min=1",
        "hydra.launcher.signal_delay_s=30",
        "hydra.launcher.max_num_timeout=10",
        *config,
        f"out_dir={tmp_path / 'slurm'}",
        "sweep=t",
    )
    assert limited.returncode == 0, limited.stdout + limited.stderr
    assert "1 completed (1 runs)" in limited.stdout  # the requeued attempts are one job
    [summary] = _summaries(tmp_path / "slurm" / "t").values()
    assert summary["status"] == "completed" and summary["cluster"]["restarts"] >= 1, summary
    assert summary["resumed_from"] is not None
    log = Path(summary["cluster"]["stdout"]).parent
    assert "Requeued job" in "".join(p.read_text() for p in log.glob("*_log.*"))
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
    sweep = _start(slurm, "hydra/launcher=slurm", *TINY, "budget=3000", "seed=0,1", f"out_dir={tmp_path}", "sweep=c")
    run_dir = _wait_for(lambda: _checkpointed(tmp_path / "c", 0), 300, "seed 0's first checkpoint")
    job = json.loads((run_dir / "summary.json").read_text())["cluster"]["job_id"]
    subprocess.run(["scancel", job], env=slurm, check=True, timeout=30)
    output, _ = sweep.communicate(timeout=600)
    assert sweep.returncode == 1, output  # not every job completed
    assert "1 completed, 1 interrupted (2 runs)" in output and "Traceback" not in output
    summaries = _summaries(tmp_path / "c")
    assert summaries[0]["status"] == "interrupted" and summaries[0]["signal"] == "SIGTERM"
    assert summaries[1]["status"] == "completed"
    resumed = _sweep(slurm, "hydra/launcher=slurm", *TINY, "budget=3000", "seed=0,1", f"out_dir={tmp_path}", "sweep=c")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    again = _summaries(tmp_path / "c")
    assert again[0]["status"] == "completed" and again[0]["resumed_from"] is not None


# --------------------------------------------------------------------------------------------------------- Ray


def test_ray_sweep_on_a_running_cluster(ray_head: dict[str, str], tmp_path: Path) -> None:
    done = _sweep(ray_head, "hydra/launcher=ray", *TINY, "budget=256", "seed=0,1,2,3", f"out_dir={tmp_path}", "sweep=r")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 completed (4 runs)" in done.stdout  # the workers (other processes of the cluster) recorded their jobs
    for summary in _summaries(tmp_path / "r").values():
        assert summary["status"] == "completed" and summary["cluster"]["scheduler"] == "ray"


def test_killed_ray_worker_fails_its_job_and_a_rerun_resumes_it(ray_head: dict[str, str], tmp_path: Path) -> None:
    args = ("hydra/launcher=ray", *TINY, "budget=4000", "seed=0,1", f"out_dir={tmp_path}", "sweep=k")
    sweep = _start(ray_head, *args)
    run_dir = _wait_for(lambda: _checkpointed(tmp_path / "k", 0), 300, "seed 0's first checkpoint")
    worker = json.loads((run_dir / "summary.json").read_text())["cluster"]["pid"]
    assert Path(f"/proc/{worker}/cmdline").read_bytes().startswith(b"ray::")  # a worker of the cluster
    os.kill(worker, signal.SIGKILL)
    output, _ = sweep.communicate(timeout=600)
    assert sweep.returncode == 1, output
    assert "Traceback" not in output and "Ray worker died" in output
    assert "1 completed, 1 failed (2 runs)" in output
    resumed = _sweep(ray_head, *args)
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
        "lit_bench.regress",
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

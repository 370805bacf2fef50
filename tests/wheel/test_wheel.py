"""The harness as a user installs it: a wheel built from the clone's files, installed (not editable) into a fresh
venv, run from an empty directory with the user's own algorithm and config directory, then the report.

The venv gets the wheel alone (``--no-deps``); its dependencies come from the environment running this test, through
a ``.pth`` line naming that environment's site-packages (a plain path: none of its own ``.pth`` files run, so an
editable install of this project there stays invisible). Nothing of the clone is importable in the runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "own_algorithm"
pytestmark = [pytest.mark.wheel, pytest.mark.slow]

MY_PPO = """from lit_sb3 import PPO


class MyPPO(PPO):
    def __init__(self, *args, vf_coef=1.0, **kwargs):
        super().__init__(*args, vf_coef=vf_coef, **kwargs)
"""


def _clone_files(target: Path) -> Path:
    """The files a clone has (tracked, or new and not ignored): what a wheel is built from."""
    listed = (
        subprocess.run(
            ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, capture_output=True, check=True
        )
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, listed):
        if (REPO / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, target / name)
    return target


def _run(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 300) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{args}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel installed; returns its bin/ folder."""
    root = tmp_path_factory.mktemp("wheel")
    source = _clone_files(root / "source")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(root / "dist"),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = (root / "dist").glob("lit_sb3-*.whl")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")], check=True, timeout=120)
    python = root / "venv" / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(purelib, "deps_of_the_test_environment.pth").write_text("\n".join(sorted(deps)) + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return python.parent


def _pair_row(variant: str, base: str, budget: str, env: str) -> str:
    """The start of the report's row pairing a variant with its base (2 seeds, at the tests' budget and episodes)."""
    config = f"[{budget},eval.episodes=2] / lit"
    return f"| {variant}{config} | {base}{config} | {env} | 2 |"


def _user_env(pythonpath: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LIT_BENCH_CONFIG_PATH")}
    return {**env, "PYTHONPATH": str(pythonpath), "OMP_NUM_THREADS": "1", "HYDRA_FULL_ERROR": "0"}


def test_the_issue_command_runs_a_users_variant_from_an_empty_directory(installed, tmp_path):
    user = tmp_path / "user"
    (user / "mypkg").mkdir(parents=True)
    (user / "mypkg" / "__init__.py").write_text(MY_PPO)
    (user / "conf" / "algo").mkdir(parents=True)
    (user / "conf" / "algo" / "my_ppo.yaml").write_text("_target_: mypkg.MyPPO\nbase: ppo\nvf_coef: 1.0\n")
    work = tmp_path / "empty"
    work.mkdir()
    env = _user_env(user)
    where = _run(
        [str(installed / "python"), "-c", "import lit_bench, lit_sb3; print(lit_bench.__file__, lit_sb3.__file__)"],
        work,
        env,
    )
    assert str(REPO) not in where and "site-packages" in where  # the wheel's packages, not the clone's
    out = _run(
        [
            str(installed / "lit-bench"),
            "-m",
            "algo=my_ppo,ppo",
            "env=CartPole",
            "seed=0,1",
            "budget=1000",
            "eval.episodes=2",
            "--config-dir",
            str(user / "conf"),
        ],
        work,
        env,
    )
    assert "4 completed (4 runs)" in out, out
    sweep = work / "results" / "runs" / "default"
    assert len(list(sweep.glob("*/CartPole/*/seed_*/summary.json"))) == 4
    out = _run([str(installed / "python"), "-m", "lit_bench.cli.report", str(sweep), "--formats", "png"], work, env)
    assert _pair_row("my_ppo", "ppo", "budget=1000", "CartPole") in out, out
    assert (sweep / "report" / "curves_CartPole.png").is_file() and (sweep / "report" / "ablations.png").is_file()


def test_the_examples_run_against_the_builtins_from_the_wheel(installed, tmp_path):
    example = shutil.copytree(EXAMPLE, tmp_path / "example")  # (a copy: the clone is not on any path)
    work = tmp_path / "empty"
    work.mkdir()
    env = {**_user_env(example), "LIT_BENCH_CONFIG_PATH": str(example / "conf")}
    for algos, env_name, budget in (("dual_clip_ppo,ppo", "CartPole", 1000), ("optimistic_sac,sac", "Pendulum", 300)):
        out = _run(
            [
                str(installed / "lit-bench"),
                "-m",
                f"algo={algos}",
                f"env={env_name}",
                "seed=0,1",
                f"budget={budget}",
                "eval.episodes=2",
                "sweep=example",
            ],
            work,
            env,
        )
        assert "4 completed (4 runs)" in out, out
    out = _run(
        [str(installed / "python"), "-m", "lit_bench.cli.report", "results/runs/example", "--formats", "png"], work, env
    )
    assert _pair_row("dual_clip_ppo", "ppo", "budget=1000", "CartPole") in out, out
    assert _pair_row("optimistic_sac", "sac", "budget=300", "Pendulum") in out, out

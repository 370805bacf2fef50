"""The RL Zoo (``rl_zoo3``) as a client of lit_sb3: the Zoo's own scripts, run unchanged on lit_sb3's classes through
``python -m lit_sb3.zoo`` (issue 26), at tiny budgets.

Covers the commands of the Zoo's ``tests/test_train.py`` (written here anew; that file itself is not in the Zoo's
wheel) and the Zoo's other entry points: ``train`` for every algorithm, ``enjoy`` (``--load-best``,
``--load-checkpoint``), ``-i`` continued training, ``-optimize`` with a pruner, ``--tensorboard-log``,
``record_video`` and ``plot_train``. Each Zoo command is a subprocess (~10-60 s here): ``make test-zoo``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

rl_zoo3 = pytest.importorskip("rl_zoo3")

pytestmark = [pytest.mark.zoo, pytest.mark.slow]

ENV_OF = {
    "a2c": "CartPole-v1",
    "ppo": "CartPole-v1",
    "dqn": "CartPole-v1",
    "qrdqn": "CartPole-v1",
    "trpo": "CartPole-v1",
    "ars": "CartPole-v1",
    "ppo_lstm": "CartPoleNoVel-v1",
    "sac": "Pendulum-v1",
    "td3": "Pendulum-v1",
    "ddpg": "Pendulum-v1",
    "tqc": "Pendulum-v1",
    "crossq": "Pendulum-v1",
}
BUDGET = {"trpo": 1024, "ppo_lstm": 256, "crossq": 150}


def zoo(cwd: Path, *args: str, sb3: bool = False, env: dict[str, str] | None = None, expect: int = 0) -> str:
    """Run one Zoo script (lit_sb3's classes, or SB3's with ``sb3=True``) in ``cwd``; returns its output."""
    entry = ["-m", "rl_zoo3.cli"] if sb3 else ["-m", "lit_sb3.zoo"]
    run_env = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg", **(env or {})}
    done = subprocess.run(
        [sys.executable, *entry, *args], cwd=cwd, env=run_env, capture_output=True, text=True, timeout=900
    )
    output = done.stdout + done.stderr
    assert done.returncode == expect, f"{' '.join(args)} exited {done.returncode}:\n{output[-3000:]}"
    return output


def _files(root: Path) -> set[str]:
    """The files below ``root``, with the parts that name a host or a time replaced."""
    names = set()
    for path in root.rglob("*"):
        if path.is_file():
            relative = path.relative_to(root).as_posix()
            names.add(relative.split("events.out.tfevents.")[0] + "events" if "tfevents" in relative else relative)
    return names


# ---------------------------------------------------------------------- lit_sb3.zoo itself


def test_use_lit_sb3_points_every_zoo_algorithm_at_lit_sb3():
    import lit_sb3
    import lit_sb3.zoo

    table = lit_sb3.zoo.use_lit_sb3()
    assert set(table) >= set(ENV_OF) and all(cls is getattr(lit_sb3, cls.__name__) for cls in table.values())
    assert rl_zoo3.callbacks.SAC is lit_sb3.SAC
    assert lit_sb3.safe_load.allowed_name("rl_zoo3.utils:SimpleLinearSchedule") is rl_zoo3.utils.SimpleLinearSchedule


def test_an_unknown_script_is_refused_in_one_line(tmp_path):
    output = zoo(tmp_path, "trian", expect=1)
    assert "script must be one of train, enjoy" in output and output.count("\n") == 1


# ---------------------------------------------------------------------- train, every algorithm


@pytest.mark.parametrize("algo", sorted(ENV_OF))
def test_train_every_algorithm(tmp_path, algo):
    import lit_sb3
    import lit_sb3.zoo

    env_id = ENV_OF[algo]
    zoo(
        tmp_path,
        "train",
        "--algo",
        algo,
        "--env",
        env_id,
        "-n",
        str(BUDGET.get(algo, 300)),
        "--log-folder",
        "logs",
        "--seed",
        "0",
    )
    saved = tmp_path / "logs" / algo / f"{env_id}_1" / f"{env_id}.zip"
    lit_sb3.zoo.use_lit_sb3()  # the Zoo's schedules in the zip load as in the Zoo's own scripts
    model = getattr(lit_sb3, rl_zoo3.utils.ALGOS[algo].__name__).load(saved)
    assert model.num_timesteps >= BUDGET.get(algo, 300) // 2


# ---------------------------------------------------------------------- one run, every other entry point


@pytest.fixture(scope="module")
def ppo_run(tmp_path_factory) -> Path:
    """A Zoo PPO run with evaluations, checkpoints and TensorBoard logs."""
    root = tmp_path_factory.mktemp("zoo_ppo")
    zoo(
        root,
        "train",
        "--algo",
        "ppo",
        "--env",
        "CartPole-v1",
        "-n",
        "1024",
        "--log-folder",
        "logs",
        "--seed",
        "0",
        "--eval-freq",
        "64",
        "--eval-episodes",
        "2",
        "--save-freq",
        "64",
        "-tb",
        "tb",
    )
    return root


def test_train_writes_the_files_sb3_writes(ppo_run, tmp_path):
    zoo(
        tmp_path,
        "train",
        "--algo",
        "ppo",
        "--env",
        "CartPole-v1",
        "-n",
        "1024",
        "--log-folder",
        "logs",
        "--seed",
        "0",
        "--eval-freq",
        "64",
        "--eval-episodes",
        "2",
        "--save-freq",
        "64",
        "-tb",
        "tb",
        sb3=True,
    )
    assert _files(ppo_run) == _files(tmp_path)
    assert (ppo_run / "tb" / "CartPole-v1" / "PPO_1").is_dir()


@pytest.mark.parametrize("which", [[], ["--load-best"], ["--load-checkpoint", "512"], ["--load-last-checkpoint"]])
def test_enjoy(ppo_run, which):
    zoo(
        ppo_run,
        "enjoy",
        "--algo",
        "ppo",
        "--env",
        "CartPole-v1",
        "-f",
        "logs",
        "--exp-id",
        "1",
        "-n",
        "50",
        "--no-render",
        *which,
    )


def test_continue_training(ppo_run):
    zoo(
        ppo_run,
        "train",
        "--algo",
        "ppo",
        "--env",
        "CartPole-v1",
        "-n",
        "256",
        "--log-folder",
        "logs",
        "-i",
        "logs/ppo/CartPole-v1_1/CartPole-v1.zip",
        "-tb",
        "tb",
    )
    assert (ppo_run / "logs" / "ppo" / "CartPole-v1_2" / "CartPole-v1.zip").is_file()


def test_record_video(ppo_run):
    pytest.importorskip("moviepy")
    zoo(ppo_run, "record_video", "--algo", "ppo", "--env", "CartPole-v1", "-f", "logs", "--exp-id", "1", "-n", "20")
    assert list((ppo_run / "logs" / "ppo" / "CartPole-v1_1" / "videos").glob("*.mp4"))


def test_plot_train(ppo_run):
    zoo(ppo_run, "plot_train", "--algo", "ppo", "--env", "CartPole-v1", "-f", "logs")


def test_optimize_with_pruning(tmp_path):
    output = zoo(
        tmp_path,
        "train",
        "--algo",
        "ppo",
        "--env",
        "CartPole-v1",
        "-n",
        "512",
        "--log-folder",
        "logs",
        "-optimize",
        "--n-trials",
        "3",
        "--n-jobs",
        "1",
        "--sampler",
        "random",
        "--pruner",
        "median",
        "--n-startup-trials",
        "1",
        "--n-evaluations",
        "2",
        "--eval-episodes",
        "2",
        "--seed",
        "0",
    )
    assert re.search(r"Number of finished trials:\s+3\b", output)
    assert list((tmp_path / "logs" / "ppo").glob("report_CartPole-v1_3-trials-512-random-median_*.csv"))


# ---------------------------------------------------------------------- the commands of the Zoo's test_train.py


def test_vecnormalize_and_frame_stack(tmp_path):
    pytest.importorskip("Box2D")
    zoo(tmp_path, "train", "--algo", "ppo", "--env", "BipedalWalkerHardcore-v3", "-n", "100", "--log-folder", "logs")
    assert (
        tmp_path / "logs" / "ppo" / "BipedalWalkerHardcore-v3_1" / "BipedalWalkerHardcore-v3" / "vecnormalize.pkl"
    ).is_file()


def test_save_and_load_replay_buffer(tmp_path):
    args = [
        "train",
        "--algo",
        "sac",
        "--env",
        "Pendulum-v1",
        "-n",
        "100",
        "--log-folder",
        "logs",
        "--save-replay-buffer",
        "-params",
        "buffer_size:1000",
        "--env-kwargs",
        "g:8.0",
        "--eval-env-kwargs",
        "g:5.0",
    ]
    zoo(tmp_path, *args)
    assert (tmp_path / "logs" / "sac" / "Pendulum-v1_1" / "replay_buffer.pkl").is_file()
    output = zoo(tmp_path, *args, "-i", "logs/sac/Pendulum-v1_1/Pendulum-v1.zip")
    assert "Loading replay buffer" in output


def test_parallel_train_callback(tmp_path):
    zoo(
        tmp_path,
        "train",
        "--algo",
        "sac",
        "--env",
        "Pendulum-v1",
        "-n",
        "400",
        "--log-folder",
        "logs",
        "-params",
        "monitor_kwargs:dict(info_keywords=('TimeLimit.truncated',))",
        "callback:'rl_zoo3.callbacks.ParallelTrainCallback'",
    )


def test_custom_yaml_and_policy_class(tmp_path):
    a2c_yaml = Path(rl_zoo3.__file__).parent / "hyperparams" / "a2c.yml"
    zoo(
        tmp_path,
        "train",
        "--algo",
        "ppo",
        "--env",
        "CartPole-v1",
        "-n",
        "100",
        "--log-folder",
        "logs",
        "-conf",
        str(a2c_yaml),
        "-params",
        "n_envs:2",
        "n_steps:50",
        "n_epochs:2",
        "batch_size:4",
        "policy:'stable_baselines3.ppo.MlpPolicy'",
    )


PYTHON_CONFIG = """hyperparams = {
    "MountainCarContinuous-v0": dict(
        env_wrapper=[{"gymnasium.wrappers.TimeLimit": {"max_episode_steps": 100}}], normalize=True, n_envs=1,
        n_timesteps=20000.0, policy="MlpPolicy", batch_size=8, n_steps=8, n_epochs=2, use_sde=True,
        policy_kwargs=dict(log_std_init=-3.0, ortho_init=False),
    )
}
"""


@pytest.mark.parametrize("form", ["module", "file"])
def test_python_config_file(tmp_path, form):
    (tmp_path / "my_zoo_config.py").write_text(PYTHON_CONFIG)
    config = "my_zoo_config" if form == "module" else str(tmp_path / "my_zoo_config.py")
    zoo(
        tmp_path,
        "train",
        "--algo",
        "ppo",
        "--env",
        "MountainCarContinuous-v0",
        "-n",
        "100",
        "--log-folder",
        "logs",
        "-conf",
        config,
        env={"PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"},
    )


def test_default_hyperparameters(tmp_path):
    (tmp_path / "with_default.yml").write_text("default:\n  policy: 'MlpPolicy'\n  n_timesteps: 200\n  n_steps: 32\n")
    zoo(
        tmp_path,
        "train",
        "--algo",
        "ppo",
        "--env",
        "CartPole-v1",
        "-n",
        "100",
        "--log-folder",
        "logs",
        "-conf",
        "with_default.yml",
    )
    (tmp_path / "no_default.yml").write_text("CartPole-v1:\n  policy: 'MlpPolicy'\n  n_timesteps: 200\n")
    zoo(
        tmp_path,
        "train",
        "--algo",
        "ppo",
        "--env",
        "Pendulum-v1",
        "-n",
        "100",
        "--log-folder",
        "logs",
        "-conf",
        "no_default.yml",
        expect=1,
    )


def test_gym_packages(tmp_path):
    package = tmp_path / "lit_zoo_env"
    package.mkdir()
    (package / "__init__.py").write_text(
        "from gymnasium.envs.registration import register\n\n"
        "register(id='LitZooCartPole-v0', entry_point='gymnasium.envs.classic_control:CartPoleEnv', "
        "max_episode_steps=200)\n"
    )
    (package / "config.py").write_text(
        "hyperparams = {'LitZooCartPole-v0': {'policy': 'MlpPolicy', 'n_timesteps': 20000}}\n"
    )
    zoo(
        tmp_path,
        "train",
        "--algo",
        "ppo",
        "--env",
        "LitZooCartPole-v0",
        "-n",
        "100",
        "--log-folder",
        "logs",
        "--gym-packages",
        "lit_zoo_env",
        "--conf-file",
        "lit_zoo_env.config",
        env={"PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"},
    )


def test_continue_training_from_an_sb3_written_zip(tmp_path):
    """The Zoo's own case (its rl-trained-agents zips are SB3's): loading runs their pickles, so it needs trust."""
    import stable_baselines3

    from lit_sb3 import safe_load

    stable_baselines3.A2C("MlpPolicy", "CartPole-v1", n_steps=8).save(tmp_path / "sb3_a2c.zip")
    zoo(
        tmp_path,
        "train",
        "--algo",
        "a2c",
        "--env",
        "CartPole-v1",
        "-n",
        "100",
        "--log-folder",
        "logs",
        "-i",
        "sb3_a2c.zip",
        env={safe_load.TRUST_ENV: "1"},
    )


@pytest.mark.parametrize("name", ["config.yml", "args.yml"])
def test_enjoy_reads_the_log_folders_yaml_safely(ppo_run, tmp_path, name):
    """Issue #36: a ``!!python/object/apply:os.system`` in the log folder's YAML ran without LIT_SB3_TRUST (the Zoo
    reads it with ``yaml.UnsafeLoader``); lit_sb3.zoo refuses it in one line. The Zoo's own files load."""
    import shutil

    logs = tmp_path / "logs"
    shutil.copytree(ppo_run / "logs", logs)
    marker = tmp_path / "ran"
    (file,) = logs.glob(f"ppo/CartPole-v1_1/CartPole-v1/{name}")
    file.write_text(f'!!python/object/apply:os.system ["touch {marker}"]\n')
    args = ("enjoy", "--algo", "ppo", "--env", "CartPole-v1", "-f", "logs", "-n", "50", "--no-render")
    output = zoo(tmp_path, *args, env={"LIT_SB3_TRUST": "0"}, expect=1)
    assert not marker.exists()
    [line] = [line for line in output.splitlines() if line.startswith("lit_sb3.zoo: ")]
    assert line.startswith(
        f"lit_sb3.zoo: {Path('logs') / file.relative_to(logs)}, line 1: python/object/apply:os.system"
    )
    assert "Traceback" not in output


def test_enjoy_reads_the_log_folders_vecnormalize_safely(ppo_run, tmp_path):
    """Issue #36: the Zoo's enjoy loaded ``vecnormalize.pkl`` with SB3's plain pickle."""
    import shutil

    logs = tmp_path / "logs"
    shutil.copytree(ppo_run / "logs", logs)
    marker = tmp_path / "ran"
    (stats,) = logs.glob("ppo/CartPole-v1_1/CartPole-v1")
    with (stats / "config.yml").open("a") as config:  # one more (key, value) pair of the Zoo's OrderedDict
        config.write("  - - normalize\n    - true\n")
    (stats / "vecnormalize.pkl").write_bytes(f"cposix\nsystem\n(Vtouch {marker}\ntR.".encode())
    args = ("enjoy", "--algo", "ppo", "--env", "CartPole-v1", "-f", "logs", "-n", "50", "--no-render")
    output = zoo(tmp_path, *args, env={"LIT_SB3_TRUST": "0"}, expect=1)
    assert not marker.exists()
    [line] = [line for line in output.splitlines() if line.startswith("lit_sb3.zoo: ")]
    assert "vecnormalize.pkl holds code (posix:system)" in line, line
    assert "Traceback" not in output

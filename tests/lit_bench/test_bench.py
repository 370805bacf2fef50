"""The lit_bench harness: every config composes and instantiates, bad input fails with one clear line, and
run.py sweeps (both backends, joblib) write complete, resumable run directories."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest
from gymnasium import spaces
from omegaconf import DictConfig
from sb3_contrib.common.maskable.utils import is_masking_supported

from lit_bench.config.checks import (
    ConfigError,
    algorithm_class,
    check_before_training,
    check_hyperparameters,
    check_spaces,
    require_package,
    supported_action_spaces,
)
from lit_bench.config.envs import make_envs
from lit_bench.store.format import EVAL_FIELDS
from lit_sb3.common.envs import check_env_id
from tests.lit_bench.helpers import (
    ALGOS,
    CHILD_ENV,
    CONF,
    CORE_ENVS,
    ENVS,
    PAIRS,
    TINY,
    compose_run,
    find_run,
    harness_kwargs,
    kill_when_checkpointed,
    lit_class_or_skip,
    read_csv,
    run_py,
)

pytestmark = pytest.mark.harness


def declared_compatible(cls: type, cfg: DictConfig) -> bool:
    supported = supported_action_spaces(cls) or ()
    return str(cfg.env.action_space) in {s.__name__ for s in supported}


@pytest.fixture(scope="module")
def built_envs() -> dict[str, tuple]:
    """One training env per env group, built once (MuJoCo models take a moment to load)."""
    return {}


@pytest.mark.parametrize("env_name", ENVS)
def test_env_config_pins_one_env(env_name: str) -> None:
    cfg = compose_run(f"env={env_name}")
    assert cfg.env.id is None or cfg.env.id.endswith(("-v0", "-v1", "-v3", "-v4", "-v5"))
    if cfg.env.id is not None:
        try:
            require_package(cfg.env, env_name)
        except ConfigError as error:
            pytest.skip(str(error))
        check_env_id(cfg.env.id)
        if cfg.env.id.split("-")[0] in ("HalfCheetah", "Hopper", "Walker2d", "Ant", "Humanoid", "Swimmer"):
            assert cfg.env.id.endswith("-v5")
    assert cfg.env.budget > 0 and cfg.budget > 0


@pytest.mark.parametrize(
    ("algo", "env_name"), [(a, e) for a in ALGOS for e in CORE_ENVS], ids=[f"{a}-{e}" for a in ALGOS for e in CORE_ENVS]
)
def test_every_pair_instantiates_or_fails_clearly(algo: str, env_name: str, built_envs: dict) -> None:
    """Compatible pairs build their algorithm on the real env (both backends); the others fail with one line."""
    import stable_baselines3 as sb3
    import torch

    torch.set_num_threads(1)
    cfg = compose_run(f"algo={algo}", f"env={env_name}")
    cls = lit_class_or_skip(cfg)
    if not declared_compatible(cls, cfg):
        with pytest.raises(ConfigError, match=rf"^algo={algo} cannot act in env={env_name}: .* actions$"):
            check_before_training(cfg)
        return
    check_before_training(cfg)
    key = (env_name, int(cfg.env.n_envs), str(cfg.env.normalize))
    if key not in built_envs:
        built_envs[key] = make_envs(cfg.env, env_name, 0, cfg.algo.get("gamma"))
    train_env, _ = built_envs[key]
    assert type(train_env.action_space).__name__ == cfg.env.action_space
    if not is_masking_supported(train_env) and "use_masking" in inspect.signature(cls.learn).parameters:
        with pytest.raises(ConfigError, match=rf"^algo={algo} acts on action masks: env={env_name} has no"):
            check_spaces(cls, algo, env_name, cfg.algo.get("policy"), train_env)
        return
    if isinstance(train_env.observation_space, spaces.Dict) and cfg.algo.policy != "MultiInputPolicy":
        with pytest.raises(ConfigError, match=rf"^env={env_name} has Dict observations: set algo.policy=MultiInput"):
            check_spaces(cls, algo, env_name, cfg.algo.get("policy"), train_env)
        return
    model = cls(**harness_kwargs(cfg, cls, train_env, "lit"), seed=0)
    model.check_env(train_env)
    model.build(train_env.observation_space, train_env.action_space)
    sb3_cls = algorithm_class(str(cfg.algo._target_), "sb3")
    sb3_model = sb3_cls(env=train_env, **harness_kwargs(cfg, cls, train_env, "sb3"), seed=0)
    assert type(sb3_model).__name__ == cls.__name__
    if cfg.algo.get("replay_buffer_class") is not None:
        assert sb3_model.replay_buffer_class.__module__.startswith("stable_baselines3")
    assert isinstance(sb3_model, sb3.common.base_class.BaseAlgorithm)


@pytest.mark.parametrize("pair", PAIRS)
def test_algo_env_file_is_valid(pair: str) -> None:
    algo, env_name = pair.rsplit("_", 1)  # algo names may hold "_" (ppo_lstm), env names do not
    text = (CONF / "algo_env" / f"{pair}.yaml").read_text()
    assert text.startswith("# @package _global_\n")
    assert "rl-baselines3-zoo" in text or "not tuned values" in text, "cite the source"
    assert "lin_" not in text and "dict(" not in text, "no mini-language strings"
    cfg = compose_run(f"algo={algo}", f"env={env_name}")
    for backend in ("lit", "sb3"):
        try:
            cls = algorithm_class(str(cfg.algo._target_), backend)
        except ConfigError:
            continue
        check_hyperparameters(cls, cfg.algo, algo)


def test_ppo_toyrl_preset() -> None:
    cfg = compose_run("algo=ppo_toyrl", "env=CartPole")
    assert cfg.algo._target_ == "lit_sb3.PPO" and cfg.env.n_envs == 4 and cfg.env.threshold == 475
    assert (cfg.algo.gamma, cfg.algo.gae_lambda, cfg.algo.clip_range, cfg.algo.ent_coef) == (0.999, 0.98, 0.2, 0.01)
    assert (cfg.algo.n_steps, cfg.algo.n_epochs, cfg.algo.batch_size) == (128, 4, 128)
    assert cfg.algo.learning_rate._target_.endswith("LinearSchedule") and cfg.algo.learning_rate.start == 2.5e-4


def test_budget_precedence() -> None:
    assert compose_run("algo=ppo", "env=Hopper").budget == 1_000_000  # Zoo's ppo Hopper-v4
    assert compose_run("algo=ppo", "env=Acrobot").budget == 1_000_000
    assert compose_run("algo=a2c", "env=InvertedPendulum").budget == 1_000_000  # env default
    assert compose_run("algo=sac", "env=Pendulum", "budget=123").budget == 123


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["budget=0"], "budget=0: the env-step budget must be a positive integer"),
        (["+algo.n_step=5"], "algo.n_step: PPO (algo=ppo) has no hyperparameter 'n_step'; did you mean n_steps"),
        (["algo=dqn", "env=HalfCheetah"], "algo=dqn cannot act in env=HalfCheetah: DQN supports Discrete actions"),
        (["algo=sac", "env=Acrobot"], "algo=sac cannot act in env=Acrobot: SAC supports Box actions"),
        (["algo=ppo", "env=BitFlipping"], "env=BitFlipping has Dict observations: set algo.policy=MultiInputPolicy"),
    ],
)
def test_bad_input_is_one_line(overrides: list[str], message: str, tmp_path: Path) -> None:
    from lit_bench.run.train import run

    summary = run(compose_run(*overrides, f"out_dir={tmp_path}"))
    assert summary["status"] == "failed" and summary["error"].startswith(message)
    assert "\n" not in summary["error"] and summary["traceback"] is None


# ------------------------------------------------------------------------------------------ run.py subprocesses


def test_unknown_group_option_lists_choices() -> None:
    result = run_py("algo=nope")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "Could not find 'algo/nope'" in result.stderr and "ppo_toyrl" in result.stderr


def test_multirun_both_backends_joblib(tmp_path: Path) -> None:
    """4 runs through the real run.py on 2 joblib workers; both backends write the same files and schemas."""
    result = run_py(
        "-m",
        "algo=ppo,a2c",
        "backend=lit,sb3",
        *TINY,
        f"out_dir={tmp_path}",
        "sweep=smoke",
        "hydra/launcher=joblib",
        "hydra.launcher.n_jobs=2",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 completed (4 runs)" in result.stdout
    for algo in ("ppo", "a2c"):
        runs = {
            b: find_run(tmp_path / "smoke" / f"{algo}{suffix}" / "CartPole", 0)
            for b, suffix in (("lit", ""), ("sb3", "@sb3"))
        }
        columns = {}
        for backend, run_dir in runs.items():
            summary = json.loads((run_dir / "summary.json").read_text())
            assert summary["status"] == "completed" and summary["backend"] == backend
            assert summary["timesteps"] >= 512 and summary["algo"] == algo
            for key in ("final_mean_return", "wall_time_s", "fps", "versions", "git", "host", "seed", "startup_s"):
                assert summary.get(key) is not None, key
            eval_rows = read_csv(run_dir / "eval.csv")
            assert list(eval_rows[0]) == list(EVAL_FIELDS)
            assert [int(r["timesteps"]) for r in eval_rows] == [256, 512]
            metrics = read_csv(run_dir / "train" / "metrics.csv")
            assert metrics[0]["step"] and "time/total_timesteps" in metrics[0]
            columns[backend] = set(metrics[0])
            assert (run_dir / "config.yaml").is_file() and (run_dir / "overrides.yaml").is_file()
            assert list(run_dir.rglob(".*.tmp")) == []
        assert columns["lit"] == columns["sb3"]
        assert (runs["lit"] / "checkpoints" / "last.ckpt").is_file()
        assert (runs["sb3"] / "checkpoints" / "last.zip").is_file()


def test_failed_run_leaves_others_and_sweep_resumes(tmp_path: Path) -> None:
    sweep = (
        "-m",
        "algo=ppo",
        "seed=0,1",
        "env=CartPole",
        "env.n_envs=1",
        "algo.n_steps=64",
        "algo.batch_size=64",
        "budget=640",
        "eval.every=128",
        "eval.episodes=2",
        f"out_dir={tmp_path}",
        "sweep=fail",
        "env.wrappers=[{_target_:crash_env.CrashOnSeed,_partial_:true}]",
    )
    # a run per process (test_batched: a seed failing in its batched group)
    result = run_py(*sweep, "seeds_per_process=1", env={**CHILD_ENV, "LIT_BENCH_TEST_CRASH_SEED": "1"})
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 completed, 1 failed (2 runs)" in result.stdout
    runs = tmp_path / "fail" / "ppo" / "CartPole"
    failed = json.loads((find_run(runs, 1) / "summary.json").read_text())
    assert failed["status"] == "failed" and "injected failure" in failed["error"] and "Traceback" in failed["traceback"]
    done = find_run(runs, 0)
    assert json.loads((done / "summary.json").read_text())["status"] == "completed"
    done_mtime = (done / "eval.csv").stat().st_mtime

    # the command again, crash switched off, under the default seeds_per_process=auto (which would train these seeds
    # as one batched group): they keep their own runs, seed 0 skipped, seed 1 resumed from its checkpoint
    result = run_py(*sweep)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 completed (2 runs)" in result.stdout and "already completed, skipped" in result.stdout
    assert (done / "eval.csv").stat().st_mtime == done_mtime
    assert not [d for d in runs.iterdir() if "batched=true" in d.name]
    resumed = json.loads((find_run(runs, 1) / "summary.json").read_text())
    assert resumed["status"] == "completed" and resumed["resumed_from"] == 256


def test_killed_run_resumes_to_full_budget(tmp_path: Path) -> None:
    args = [
        "run.py",
        "algo=ppo",
        "env=CartPole",
        "env.n_envs=1",
        "algo.n_steps=64",
        "algo.batch_size=64",
        "budget=3200",
        "eval.every=320",
        "eval.episodes=2",
        f"out_dir={tmp_path}",
        "sweep=kill",
    ]
    run_dir = kill_when_checkpointed(args[1:], tmp_path / "kill", 960)
    state = run_dir / "checkpoints" / "state.json"
    killed = json.loads((run_dir / "summary.json").read_text())
    assert killed["status"] == "running"
    ckpt_step = json.loads(state.read_text())["timesteps"]
    assert ckpt_step < 3200

    result = run_py(*args[1:])
    assert result.returncode == 0, result.stdout + result.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["resumed_from"] == ckpt_step and summary["timesteps"] >= 3200
    steps = [int(r["timesteps"]) for r in read_csv(run_dir / "eval.csv")]
    assert steps == list(range(320, 3201, 320)), steps
    walls = [float(r["wall_time_s"]) for r in read_csv(run_dir / "eval.csv")]
    assert walls == sorted(walls)
    metric_steps = [int(float(r["step"])) for r in read_csv(run_dir / "train" / "metrics.csv")]
    assert metric_steps == sorted(set(metric_steps)) and metric_steps[-1] >= 3200

"""Watching what was trained: ``lit_bench.cli.enjoy`` rebuilds a run's evaluation env and replays its best/last model on
both backends; the harness keeps a best-model checkpoint and records evaluation videos."""

from __future__ import annotations

import csv
import importlib.util
import json
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import yaml
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

from lit_bench.cli import enjoy
from lit_bench.config.checks import ConfigError, check_eval_video, check_video_deps
from lit_bench.config.envs import make_envs
from lit_bench.run.checkpointing import BestCheckpoint, best_state
from lit_bench.run.video import EvalVideo
from lit_bench.store.rundir import RunDir
from tests.lit_bench.helpers import compose_run

pytestmark = pytest.mark.harness

# One evaluation (after training: eval.every > budget), one episode: that evaluation is the best one, its episode
# starts from the eval env's seeded first reset, so replaying the best checkpoint must give exactly its return/length.
TINY = (
    "algo=ppo",
    "env=CartPole",
    "env.n_envs=1",
    "algo.n_steps=64",
    "algo.batch_size=64",
    "budget=128",
    "eval.every=1000",
    "eval.episodes=1",
    "env.normalize={norm_obs:true,norm_reward:true}",
    "eval.video=true",
)


VIDEO_EXTRA = all(importlib.util.find_spec(name) for name in ("imageio", "imageio_ffmpeg", "pygame"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A tiny VecNormalize PPO run per backend, trained in-process with videos on."""
    from lit_bench.run.train import run

    if not VIDEO_EXTRA:
        pytest.skip("needs the video extra: pip install -e '.[video]'")
    out = tmp_path_factory.mktemp("enjoy_runs")
    found = {}
    for backend in ("lit", "sb3"):
        summary = run(compose_run(*TINY, f"backend={backend}", f"out_dir={out}", "sweep=enjoy"))
        assert summary["status"] == "completed", summary.get("traceback")
        found[backend] = Path(summary["run_dir"])
    return found


def _cartpole() -> gym.Env:
    return gym.make("CartPole-v1")


def eval_rows(run_dir: Path) -> list[dict[str, str]]:
    with (run_dir / "eval.csv").open(newline="") as file:
        return list(csv.DictReader(file))


def test_rebuilt_eval_env_is_the_runs_eval_env(runs: dict[str, Path]) -> None:
    """Same observations as the harness's eval env for the run's seed, normalized with the saved statistics, frozen."""
    run_dir = runs["lit"]
    cfg = enjoy.load_config(RunDir(run_dir))
    rebuilt = enjoy.make_eval_env(cfg, run_dir / "vecnormalize.pkl")
    _, original = make_envs(compose_run(*TINY).env, "CartPole", 0, 0.98)
    assert isinstance(rebuilt, VecNormalize) and isinstance(original, VecNormalize)
    saved = VecNormalize.load(str(run_dir / "vecnormalize.pkl"), original.venv)  # the harness's own (pickle) loader
    original.obs_rms = saved.obs_rms
    assert not rebuilt.training and not rebuilt.norm_reward
    np.testing.assert_array_equal(rebuilt.obs_rms.mean, saved.obs_rms.mean)
    assert saved.obs_rms.count > 64  # statistics of the training run, not a fresh env's
    obs, expected = rebuilt.reset(), original.reset()
    for _ in range(20):
        np.testing.assert_array_equal(obs, expected)
        np.testing.assert_array_equal(rebuilt.get_original_obs(), original.get_original_obs())
        obs, *_ = rebuilt.step(np.array([1]))
        expected, *_ = original.step(np.array([1]))
    rebuilt.close()
    original.close()


@pytest.mark.parametrize("backend", ["lit", "sb3"])
def test_enjoy_best_replays_the_best_evaluation(
    runs: dict[str, Path], backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from stable_baselines3.common import save_util

    def refuse(*_: Any) -> None:
        raise AssertionError("enjoy unpickled a :serialized: entry of an SB3 zip without --trust")

    monkeypatch.setattr(save_util.cloudpickle, "loads", refuse)
    run_dir = runs[backend]
    (row,) = eval_rows(run_dir)
    best = best_state(RunDir(run_dir))
    assert best == {"timesteps": int(row["timesteps"]), "mean_return": float(row["mean_return"])}
    assert (run_dir / "checkpoints" / ("best.ckpt" if backend == "lit" else "best.zip")).is_file()
    # the evaluation after training normalized with the final training statistics (those saved with last.*)
    best_stats = VecNormalize.load(str(run_dir / "checkpoints" / "best_vecnormalize.pkl"), DummyVecEnv([_cartpole]))
    last_stats = VecNormalize.load(str(run_dir / "vecnormalize.pkl"), DummyVecEnv([_cartpole]))
    assert best_stats.obs_rms.count == last_stats.obs_rms.count > 128
    np.testing.assert_array_equal(best_stats.obs_rms.var, last_stats.obs_rms.var)
    video = tmp_path / "replay.mp4"
    played = enjoy.enjoy(run_dir, episodes=2, checkpoint="best", video=video)
    assert len(played) == 2
    assert played[0].ret == pytest.approx(float(row["mean_return"]))
    assert played[0].length == float(row["mean_ep_length"])
    import imageio_ffmpeg

    frames, _ = imageio_ffmpeg.count_frames_and_secs(str(video))  # per episode: its start, each step but the last
    assert frames == played[0].length + played[1].length


@pytest.mark.parametrize("backend", ["lit", "sb3"])
def test_enjoy_last_checkpoint_cli(runs: dict[str, Path], backend: str, capsys: pytest.CaptureFixture) -> None:
    assert enjoy.main([str(runs[backend]), "--episodes", "2", "--stochastic"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("episode 1: return ") and lines[-1].startswith("mean return ")
    assert len(lines) == 3


def test_harness_records_the_final_evaluation(runs: dict[str, Path]) -> None:
    import imageio.v2 as imageio

    (row,) = eval_rows(runs["lit"])
    reader = imageio.get_reader(runs["lit"] / "video" / "final.mp4")
    frames = [frame for frame in reader]
    assert len(frames) == int(float(row["mean_ep_length"]))  # the start and every step but the terminal one
    assert frames[0].shape == (400, 600, 3) and frames[0].std() > 0  # a picture, not a blank


def test_enjoy_errors_are_one_line(runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from lit_bench.config.identity import resolved

    masked = tmp_path / "masked"  # a run's config is enough: the env is checked before any checkpoint is read
    masked.mkdir()
    config = resolved(compose_run("algo=ppo_mask", "env=InvalidActionDiscrete"))
    (masked / "config.yaml").write_text(yaml.safe_dump(config))
    cases = [
        ([str(masked), "--video", "m.mp4"], "video: env=InvalidActionDiscrete cannot render frames"),
        ([str(tmp_path)], "has no config.yaml"),
        ([str(runs["lit"]), "--checkpoint", "worst"], "--checkpoint=worst: choose one of last, best"),
        ([str(runs["lit"]), "--video", "a.avi"], "must end in .mp4 or .gif"),
        ([str(runs["lit"]), "--video", "a.mp4", "--render", "human"], "--render and --video: choose one"),
    ]
    for argv, message in cases:
        assert enjoy.main(argv) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err


def test_missing_video_extra_is_named(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "imageio_ffmpeg" else real(name))
    with pytest.raises(ConfigError, match=r"imageio_ffmpeg not installed; install the extra: pip install"):
        check_video_deps("out.mp4")
    check_video_deps("out.gif")  # GIFs need no ffmpeg
    assert enjoy.main([str(tmp_path), "--video", "x.mp4"]) == 2  # checked before anything is loaded
    assert "pip install -e '.[video]'" in capsys.readouterr().err
    cfg = compose_run("eval.video=true")
    with pytest.raises(ConfigError, match=r"\[video\]"):
        check_eval_video(cfg.eval, cfg.env, "CartPole")  # the harness fails before training, too


def test_eval_video_needs_a_renderable_env() -> None:
    cfg = compose_run("algo=ppo_mask", "env=InvalidActionDiscrete", "eval.video=true")
    with pytest.raises(ConfigError, match="video: env=InvalidActionDiscrete cannot render frames"):
        check_eval_video(cfg.eval, cfg.env, "InvalidActionDiscrete")
    cfg = compose_run("eval.video=true", "eval.video_every=0")
    with pytest.raises(ConfigError, match=r"eval\.video_every=0: must be a positive number"):
        check_eval_video(cfg.eval, cfg.env, "CartPole")


@pytest.mark.parametrize("trust", [False, True])
def test_vecnormalize_without_observation_statistics_loads(tmp_path: Path, trust: bool) -> None:
    saved = VecNormalize(DummyVecEnv([_cartpole]), norm_obs=False)  # keeps return statistics only
    saved.ret_rms.update(np.array([2.0, 4.0]))
    saved.save(str(tmp_path / "vecnormalize.pkl"))
    env = VecNormalize(DummyVecEnv([_cartpole]), norm_obs=False)
    enjoy.load_vecnormalize(tmp_path / "vecnormalize.pkl", env, trust=trust)
    assert env.ret_rms.mean == saved.ret_rms.mean != 0 and not env.training and not env.norm_reward


class _SB3Like:
    """What BestCheckpoint uses of an SB3 model: ``save`` and ``get_env``."""

    def __init__(self) -> None:
        self.version = 0

    def save(self, path: str) -> None:
        Path(path).write_text(str(self.version))

    def get_env(self) -> Any:
        return None


def test_best_checkpoint_keeps_the_best_evaluation(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    model, best = _SB3Like(), BestCheckpoint(run, "sb3", DummyVecEnv([_cartpole]))
    for version, (timesteps, score) in enumerate([(100, 1.0), (200, 0.5), (300, 2.0), (400, 2.0)]):
        model.version = version
        best(model, {"timesteps": timesteps, "mean_return": score})
    assert best_state(run) == {"timesteps": 300, "mean_return": 2.0}
    assert (run.checkpoints / "best.zip").read_text() == "2"  # ties keep the earlier model, as SB3's EvalCallback
    resumed = BestCheckpoint(run, "sb3", best.eval_env)  # a resumed run continues from the kept best score
    model.version = 9
    resumed(model, {"timesteps": 500, "mean_return": 1.5})
    assert (run.checkpoints / "best.zip").read_text() == "2"
    resumed(model, {"timesteps": 600, "mean_return": 3.0})
    assert json.loads((run.checkpoints / "best.json").read_text())["timesteps"] == 600
    assert sorted(p.name for p in run.checkpoints.iterdir()) == ["best.json", "best.zip"]  # no temporary files


def test_eval_video_schedule(tmp_path: Path) -> None:
    final_only = EvalVideo(tmp_path, budget=1000, eval_every=100)
    assert [final_only.path_for(t) for t in (100, 500, 999)] == [None, None, None]
    assert final_only.path_for(1000) == final_only.path_for(1024) == tmp_path / "final.mp4"
    every_third = EvalVideo(tmp_path, budget=1000, eval_every=100, every=3)
    assert [p.name for t in range(100, 1100, 100) if (p := every_third.path_for(t))] == [
        "eval_300.mp4",
        "eval_600.mp4",
        "eval_900.mp4",
        "final.mp4",
    ]

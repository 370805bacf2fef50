"""Watch a trained run: rebuild its evaluation env, load its checkpoint, play episodes, optionally write a video.

    lit-bench enjoy <run_dir> [--episodes N] [--deterministic|--stochastic] [--video out.mp4]
                              [--checkpoint last|best] [--render human] [--trust]

The env is the run's own evaluation env (``config.yaml``: env id or factory, kwargs, wrappers, seed), with the
VecNormalize statistics saved next to the checkpoint, frozen. Nothing in the run directory runs code unless
``--trust``: every name ``config.yaml`` gives (``_target_`` nodes, getters' paths, ``env.package``,
``algo._target_``) must be one the harness's own config groups use or one on lit_sb3's allow-list
(:mod:`lit_bench.trust`); the VecNormalize pickle and the ``lit`` backend's ``.ckpt`` are read through that
allow-list; ``sb3`` runs load from their SB3 zip with every pickled (``:serialized:``) entry rebuilt from the
(checked) config instead of unpickled. ``--trust`` skips the checks and unpickles everything.
Action masks (MaskablePPO) and LSTM states (RecurrentPPO) are handled by SB3's / sb3-contrib's evaluation loop.
"""

from __future__ import annotations

import argparse
import inspect
import json
import pickle
import sys
import warnings
import zipfile
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from omegaconf import DictConfig, OmegaConf
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from lit_bench.config.checks import ConfigError, algorithm_class, check_renderable, check_video_deps
from lit_bench.config.envs import make_envs
from lit_bench.config.hydra_versions import whitelisted
from lit_bench.config.sources import UserConfigError
from lit_bench.config.trust import UntrustedConfig, check_run_config, code_names
from lit_bench.run.checkpointing import checkpoint_files, zip_problem
from lit_bench.run.evaluation import evaluate_episodes
from lit_bench.run.video import recording
from lit_bench.store.rundir import RunDir
from lit_sb3.common.allow_list import Refused, is_trusted
from lit_sb3.common.safe_load import CheckpointError, loads, weights_only_refusal, zip_tensor_refusal

if TYPE_CHECKING:
    from stable_baselines3.common.base_class import BaseAlgorithm as SB3Algorithm

    from lit_sb3.common.base import BaseAlgorithm

CHECKPOINTS = ("last", "best")
RENDER_MODES = ("human",)


class EnjoyError(Exception):
    """A mistake or a refused file: printed as one line, exit code 2."""


@dataclass
class Episode:
    ret: float
    length: int


def load_config(run: RunDir, trust: bool = False) -> DictConfig:
    """The run's recorded config; unless ``trust``, every name in it that would run code is checked first."""
    if not run.config.is_file():
        raise EnjoyError(f"run_dir: {run.root} has no config.yaml (is it a lit_bench run directory?)")
    try:
        tree = yaml.safe_load(run.config.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        where = getattr(error, "problem_mark", None)
        at = f" at line {where.line + 1}" if where is not None else ""
        raise EnjoyError(f"config.yaml: {run.config} is unreadable{at} ({type(error).__name__})") from None
    if not isinstance(tree, dict):
        raise EnjoyError(f"config.yaml: {run.config} is not a mapping of config values")
    if not trust:
        try:
            check_run_config(tree, str(run.config))
        except (UntrustedConfig, UserConfigError) as error:
            raise EnjoyError(str(error)) from None
    return OmegaConf.create(tree)


def load_vecnormalize(path: Path, env: VecNormalize, trust: bool = False) -> None:
    """Copy the saved observation/return statistics into ``env`` (frozen), unpickling only allow-listed data (see
    :mod:`lit_sb3.safe_load`) unless trusted."""
    if not path.is_file():
        raise EnjoyError(f"vecnormalize: the run normalizes observations but {path} is missing")
    data = path.read_bytes()
    try:
        saved = pickle.loads(data) if trust else loads(data, f"vecnormalize: {path}", trusted="--trust")
    except Refused as error:
        raise EnjoyError(str(error)) from None
    if not isinstance(saved, VecNormalize):
        raise EnjoyError(f"vecnormalize: {path} holds a {type(saved).__name__}, not VecNormalize statistics")
    # what the saved layer holds (norm_obs=False keeps no obs_rms): vars(), since an unpickled VecNormalize has no
    # venv and its attribute lookup would recurse into the missing one
    stats = vars(saved)
    for name in ("obs_rms", "ret_rms"):
        if name in stats:
            setattr(env, name, stats[name])
    env.training, env.norm_reward = False, False


def make_eval_env(
    cfg: DictConfig, vecnormalize: Path | None = None, render_mode: str | None = None, trust: bool = False
) -> VecEnv:
    """The run's evaluation env, built as the harness built it (same factory, wrappers, kwargs and seed)."""
    train_env, eval_env = make_envs(
        cfg.env, str(cfg.env_name), int(cfg.seed), cfg.algo.get("gamma"), render_mode=render_mode
    )
    train_env.close()
    if isinstance(eval_env, VecNormalize):
        if vecnormalize is None:
            raise EnjoyError("vecnormalize: the run normalizes observations; give its statistics file")
        load_vecnormalize(vecnormalize, eval_env, trust)
    return eval_env


def load_lit(cls: type[BaseAlgorithm], path: Path, trust: bool) -> BaseAlgorithm:
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r".*Skipping '.*' parameter because.*")
            return cls.load_from_checkpoint(str(path), map_location="cpu", weights_only=not trust)
    except Refused as error:  # a global outside the allow-list, or a damaged file
        raise EnjoyError(f"{error} (enjoy: --trust)") from None
    except pickle.UnpicklingError as error:
        refusal = weights_only_refusal(error, f"checkpoint: {path}")
        raise EnjoyError(f"{refusal}; rerun with --trust if you trust this run") from None


def _serialized_keys(path: Path) -> list[str]:
    with zipfile.ZipFile(path) as archive:
        data = json.loads(archive.read("data"))
    return [key for key, value in data.items() if isinstance(value, dict) and ":serialized:" in value]


def safe_sb3_objects(cls: type[SB3Algorithm], cfg: DictConfig, path: Path, env: VecEnv) -> dict[str, Any]:
    """``custom_objects`` for SB3's ``load`` replacing each pickled entry of the zip: spaces from the env, the
    policy class from its alias, hyperparameters from the run's config (their defaults otherwise); what ``load``
    recomputes itself (schedules, train_freq) gets its config value or None."""
    from lit_bench.run.backends import algorithm_kwargs_for

    kwargs = algorithm_kwargs_for(cfg.algo, env.action_space, "sb3")
    defaults = {
        name: p.default
        for name, p in inspect.signature(cls.__init__).parameters.items()
        if p.default is not inspect.Parameter.empty
    }
    known = {
        "observation_space": env.observation_space,
        "action_space": env.action_space,
        "policy_class": cls.policy_aliases.get(str(cfg.algo.policy), cfg.algo.policy),
    }
    return {key: known.get(key, kwargs.get(key, defaults.get(key))) for key in _serialized_keys(path)}


def load_sb3(cls: type[SB3Algorithm], cfg: DictConfig, path: Path, env: VecEnv, trust: bool) -> SB3Algorithm:
    custom = None if trust else safe_sb3_objects(cls, cfg, path, env)
    try:
        return cls.load(str(path), device="cpu", custom_objects=custom)
    except pickle.UnpicklingError as error:  # a tensor file holding more than tensors (SB3 reads them weights_only)
        raise EnjoyError(str(zip_tensor_refusal(path, error, "checkpoint"))) from None
    except (ValueError, KeyError, TypeError, AttributeError, RuntimeError) as error:  # (JSON errors are ValueErrors)
        raise EnjoyError(
            f"checkpoint: {path} does not load ({type(error).__name__}: {_first_line(error)}): a damaged file, or a "
            f"config.yaml that does not fit it; try --checkpoint best, or rerun the run"
        ) from None


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [""])[0]


def load_model(run: RunDir, cfg: DictConfig, checkpoint: str, env: VecEnv, trust: bool = False) -> Any:
    backend = str(cfg.backend)
    cls = algorithm_class(str(cfg.algo._target_), backend)
    path, _ = checkpoint_files(run, backend, checkpoint)
    if not path.is_file():
        hint = " (runs record it from this version on)" if checkpoint == "best" else ""
        raise EnjoyError(f"checkpoint={checkpoint}: {path} does not exist{hint}")
    problem = zip_problem(path)  # both backends' checkpoints are zip archives: a cut one is named, not loaded
    if problem is not None:
        raise EnjoyError(f"checkpoint: {path} is unreadable ({problem}); try --checkpoint best, or rerun the run")
    return load_sb3(cls, cfg, path, env, trust) if backend == "sb3" else load_lit(cls, path, trust)


def play(model: BaseAlgorithm | SB3Algorithm, env: VecEnv, episodes: int, deterministic: bool) -> list[Episode]:
    """``episodes`` episodes with the harness's own evaluation loop (masks, LSTM states and episode starts)."""
    returns, lengths = evaluate_episodes(
        model, env, n_eval_episodes=episodes, deterministic=deterministic, return_episode_rewards=True, warn=False
    )
    return [Episode(float(r), int(n)) for r, n in zip(returns, lengths)]


def enjoy(
    run_dir: str | Path,
    episodes: int = 3,
    deterministic: bool | None = None,
    video: str | Path | None = None,
    checkpoint: str = "last",
    render: str | None = None,
    trust: bool = False,
) -> list[Episode]:
    """Play ``episodes`` episodes of a run's checkpoint on its evaluation env; write ``video`` when given.
    ``trust`` (``--trust``, or ``LIT_SB3_TRUST=1`` in the environment) loads whatever the run's files name."""
    try:
        trust = trust or is_trusted()
    except Refused as error:  # a malformed LIT_SB3_TRUST
        raise EnjoyError(str(error)) from None
    if checkpoint not in CHECKPOINTS:
        raise EnjoyError(f"--checkpoint={checkpoint}: choose one of {', '.join(CHECKPOINTS)}")
    if render is not None and render not in RENDER_MODES:
        raise EnjoyError(f"--render={render}: choose one of {', '.join(RENDER_MODES)}")
    if render is not None and video is not None:
        raise EnjoyError("--render and --video: choose one (an env renders to a window or to frames)")
    if episodes < 1:
        raise EnjoyError(f"--episodes={episodes}: must be >= 1")
    if video is not None:
        check_video_deps(video)
    run = RunDir(run_dir)
    cfg = load_config(run, trust)
    if deterministic is None:
        deterministic = bool(cfg.eval.deterministic)
    if video is not None:
        check_renderable(cfg.env, str(cfg.env_name))
    _, vecnormalize = checkpoint_files(run, str(cfg.backend), checkpoint)
    # Hydra 1.4 resolves the config's targets (checked above, or trusted) only under a whitelist that names them
    targets = [name for _, kind, name in code_names(OmegaConf.to_container(cfg)) if kind == "target"]
    try:
        with whitelisted(targets):
            env = make_eval_env(
                cfg, vecnormalize, render_mode="rgb_array" if video is not None else render, trust=trust
            )
    except (EnjoyError, ConfigError):
        raise
    except Exception as error:  # the config's (allowed) targets given values they refuse: the file, not a bug here
        raise EnjoyError(
            f"config.yaml: {run.config}: its evaluation env cannot be built ({type(error).__name__}: "
            f"{_first_line(error)})"
        ) from None
    try:
        with whitelisted(targets):  # (an sb3 run's zip is rebuilt from the config's objects)
            model = load_model(run, cfg, checkpoint, env, trust)
        with recording(video, env, episodes) if video is not None else nullcontext(env) as played_env:
            played = play(model, played_env, episodes, deterministic)
    finally:
        env.close()
    return played


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lit-bench enjoy", description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", help="a run directory (holds config.yaml and checkpoints/)")
    parser.add_argument("--episodes", type=int, default=3, help="episodes to play (default 3)")
    parser.add_argument(
        "--deterministic",
        dest="deterministic",
        action="store_true",
        default=None,
        help="act deterministically (default: as the run's evaluations did)",
    )
    parser.add_argument("--stochastic", dest="deterministic", action="store_false", help="sample actions")
    parser.add_argument("--video", default=None, help="write the episodes to this .mp4 or .gif")
    parser.add_argument("--checkpoint", default="last", help=f"which checkpoint: {', '.join(CHECKPOINTS)}")
    parser.add_argument("--render", default=None, help="show the episodes in a window: human")
    parser.add_argument(
        "--trust",
        action="store_true",
        help="load whatever the run's files name: its config's targets and packages, every pickle "
        "(only for run directories you trust)",
    )
    args = parser.parse_args(argv)
    try:
        played = enjoy(
            args.run_dir, args.episodes, args.deterministic, args.video, args.checkpoint, args.render, args.trust
        )
    except (EnjoyError, ConfigError, CheckpointError) as error:
        print(f"enjoy: {str(error).splitlines()[0]}", file=sys.stderr)
        return 2
    for i, episode in enumerate(played):
        print(f"episode {i + 1}: return {episode.ret:.2f}, length {episode.length}")
    mean = sum(e.ret for e in played) / len(played)
    print(f"mean return {mean:.2f} over {len(played)} episodes" + (f"; video: {args.video}" if args.video else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The spec's signatures (seeds 000-002), encoded once for the tests, and the comparison with a callable.

Each entry is a parameter list written as Python source, as the spec prints it without annotations. As in
``../shared/tools/spec_check.py``: parameters in the spec'd order with the spec'd defaults; extra parameters are
allowed when they have defaults (the spec may be extended, never narrowed)."""

from __future__ import annotations

import ast
import inspect
from typing import Any

from lit_sb3 import (
    A2C,
    ARS,
    DDPG,
    DQN,
    PPO,
    QRDQN,
    SAC,
    TD3,
    TQC,
    TRPO,
    CrossQ,
    HerReplayBuffer,
    MaskablePPO,
    RecurrentPPO,
)
from lit_sb3.datamodule import RLEnvDataModule
from lit_sb3.trainer import RLTrainer

_REQUIRED = object()


def parse_spec(params: str) -> list[tuple[str, Any]]:
    """``"a, b=1, c='x'"`` -> [("a", REQUIRED), ("b", 1), ("c", "x")] (defaults must be literals)."""
    func = ast.parse(f"def f({params}): pass").body[0]
    args = func.args
    positional = args.args
    defaults = [_REQUIRED] * (len(positional) - len(args.defaults)) + [ast.literal_eval(d) for d in args.defaults]
    out = [(a.arg, d) for a, d in zip(positional, defaults)]
    out += [(a.arg, _REQUIRED if d is None else ast.literal_eval(d)) for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    return out


def signature_problems(func: Any, spec: str) -> list[str]:
    """What differs between ``func``'s signature and the spec (extra parameters must have defaults)."""
    actual = [p for p in inspect.signature(func).parameters.values() if p.name not in ("self", "cls")]
    names = [p.name for p in actual]
    problems, last = [], -1
    expected = parse_spec(spec)
    for name, default in expected:
        if name not in names:
            problems.append(f"missing {name}")
            continue
        idx = names.index(name)
        if idx < last:
            problems.append(f"{name} out of order")
        last = idx
        got = actual[idx].default
        if default is _REQUIRED:
            continue
        if got is inspect.Parameter.empty:
            problems.append(f"{name} has no default (spec {default!r})")
        elif got != default or (type(got) is not type(default) and not isinstance(default, (int, float))):
            problems.append(f"{name} default {got!r} != spec {default!r}")
    spec_names = {n for n, _ in expected}
    for p in actual:
        if (
            p.name not in spec_names
            and p.default is inspect.Parameter.empty
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ):
            problems.append(f"extra required parameter {p.name}")
    return problems


def _learn(name: str, log_every_n_steps: int, *, extra: str = "", default_root_dir: bool = True) -> str:
    tail = ", default_root_dir=None" if default_root_dir else ""
    return (
        f"total_timesteps, env=None, callback=None, log_every_n_steps={log_every_n_steps}, tb_log_name={name!r}, "
        f"reset_num_timesteps=True, {extra}progress_bar=False{tail}"
    )


_TAIL = "stats_window_size=100, policy_kwargs=None, verbose=0, seed=None, device='auto', _init_setup_model=True"
_OFF_POLICY = (
    "buffer_size=1000000, learning_starts=100, batch_size={batch_size}, tau={tau}, gamma=0.99, "
    "train_freq={train_freq}, gradient_steps=1, "
)
_ACTOR_CRITIC = _OFF_POLICY.format(batch_size=256, tau=0.005, train_freq=1) + (
    "action_noise=None, replay_buffer_class=None, replay_buffer_kwargs=None, optimize_memory_usage=False, n_steps=1, "
)
_Q_LEARNING = _OFF_POLICY.format(batch_size=32, tau=1.0, train_freq=4) + (
    "replay_buffer_class=None, replay_buffer_kwargs=None, optimize_memory_usage=False, n_steps=1, "
    "target_update_interval=10000, "
)
_PPO_LIKE = (
    "policy, learning_rate=0.0003, n_steps={n_steps}, batch_size={batch}, n_epochs=10, gamma=0.99, gae_lambda=0.95, "
    "clip_range=0.2, clip_range_vf=None, normalize_advantage=True, ent_coef=0.0, vf_coef=0.5, max_grad_norm=0.5, "
    "{middle}target_kl=None, " + _TAIL
)
_ROLLOUT_BUFFER = "rollout_buffer_class=None, rollout_buffer_kwargs=None, "
_SDE = "use_sde=False, sde_sample_freq=-1, "
_STEP = "batch, batch_idx"
_PREDICT = "observation, state=None, episode_start=None, deterministic=False"

# (owner, attribute, parameters): the spec entry ``owner.attribute(parameters)``
SIGNATURES: list[tuple[type, str, str]] = [
    # PPO, A2C
    (PPO, "__init__", _PPO_LIKE.format(n_steps=2048, batch=64, middle=_SDE + _ROLLOUT_BUFFER)),
    (PPO, "learn", _learn("PPO", 1)),
    (PPO, "training_step", _STEP),
    (
        A2C,
        "__init__",
        "policy, learning_rate=0.0007, n_steps=5, gamma=0.99, gae_lambda=1.0, ent_coef=0.0, vf_coef=0.5, "
        "max_grad_norm=0.5, rms_prop_eps=1e-05, use_rms_prop=True, "
        + _SDE
        + _ROLLOUT_BUFFER
        + "normalize_advantage=False, "
        + _TAIL,
    ),
    (A2C, "learn", _learn("A2C", 100)),
    (A2C, "training_step", _STEP),
    # MaskablePPO, RecurrentPPO, TRPO
    (MaskablePPO, "__init__", _PPO_LIKE.format(n_steps=2048, batch=64, middle=_ROLLOUT_BUFFER)),
    (MaskablePPO, "learn", _learn("MaskablePPO", 1, extra="use_masking=True, ", default_root_dir=False)),
    (MaskablePPO, "collect_rollouts", "env, callback, rollout_buffer, n_rollout_steps, use_masking=True"),
    (MaskablePPO, "predict", _PREDICT + ", action_masks=None"),
    (RecurrentPPO, "__init__", _PPO_LIKE.format(n_steps=128, batch=128, middle=_SDE)),
    (RecurrentPPO, "learn", _learn("RecurrentPPO", 1, default_root_dir=False)),
    (RecurrentPPO, "collect_rollouts", "env, callback, rollout_buffer, n_rollout_steps"),
    (RecurrentPPO, "train", ""),
    (
        TRPO,
        "__init__",
        "policy, learning_rate=0.001, n_steps=2048, batch_size=128, gamma=0.99, cg_max_steps=15, "
        "cg_damping=0.1, line_search_shrinking_factor=0.8, line_search_max_iter=10, n_critic_updates=10, "
        "gae_lambda=0.95, "
        + _SDE
        + _ROLLOUT_BUFFER
        + "normalize_advantage=True, target_kl=0.01, sub_sampling_factor=1, "
        + _TAIL,
    ),
    (TRPO, "learn", _learn("TRPO", 1, default_root_dir=False)),
    (TRPO, "hessian_vector_product", "params, grad_kl, vector, retain_graph=True"),
    (TRPO, "training_step", _STEP),
    # ARS
    (
        ARS,
        "__init__",
        "policy, n_delta=8, n_top=None, learning_rate=0.02, delta_std=0.05, zero_policy=True, "
        "alive_bonus_offset=0, n_eval_episodes=1, policy_kwargs=None, stats_window_size=100, seed=None, "
        "verbose=0, device='cpu', _init_setup_model=True",
    ),
    (ARS, "learn", _learn("ARS", 1, extra="async_eval=None, ")),
    (ARS, "evaluate_candidates", "candidate_weights, callback, async_eval"),
    (ARS, "dump_logs", ""),
    (ARS, "set_parameters", "load_path_or_dict, exact_match=True, device='auto'"),
    # SAC, TD3, DDPG, DQN, HER
    (
        SAC,
        "__init__",
        "policy, learning_rate=0.0003, " + _ACTOR_CRITIC + "ent_coef='auto', target_update_interval=1, "
        "target_entropy='auto', use_sde=False, sde_sample_freq=-1, use_sde_at_warmup=False, " + _TAIL,
    ),
    (SAC, "learn", _learn("SAC", 4)),
    (
        TD3,
        "__init__",
        "policy, learning_rate=0.001, "
        + _ACTOR_CRITIC
        + "policy_delay=2, target_policy_noise=0.2, target_noise_clip=0.5, "
        + _TAIL,
    ),
    (TD3, "learn", _learn("TD3", 4)),
    (DDPG, "__init__", "policy, learning_rate=0.001, " + _ACTOR_CRITIC + _TAIL.replace("stats_window_size=100, ", "")),
    (DDPG, "learn", _learn("DDPG", 4, default_root_dir=False)),
    (
        DQN,
        "__init__",
        "policy, learning_rate=0.0001, " + _Q_LEARNING + "exploration_fraction=0.1, "
        "exploration_initial_eps=1.0, exploration_final_eps=0.05, max_grad_norm=10, " + _TAIL,
    ),
    (DQN, "learn", _learn("DQN", 4)),
    (
        HerReplayBuffer,
        "__init__",
        "buffer_size, observation_space, action_space, env, device='auto', n_envs=1, "
        "optimize_memory_usage=False, handle_timeout_termination=True, n_sampled_goal=4, "
        "goal_selection_strategy='future', copy_info_dict=False",
    ),
    # TQC, CrossQ, QRDQN
    (
        TQC,
        "__init__",
        "policy, learning_rate=0.0003, " + _ACTOR_CRITIC + "ent_coef='auto', target_update_interval=1, "
        "target_entropy='auto', top_quantiles_to_drop_per_net=2, use_sde=False, sde_sample_freq=-1, "
        "use_sde_at_warmup=False, " + _TAIL,
    ),
    (TQC, "learn", _learn("TQC", 4, default_root_dir=False)),
    (TQC, "training_step", _STEP),
    (TQC, "configure_optimizers", ""),
    (
        CrossQ,
        "__init__",
        "policy, learning_rate=0.001, buffer_size=1000000, learning_starts=100, batch_size=256, "
        "gamma=0.99, train_freq=1, gradient_steps=1, action_noise=None, replay_buffer_class=None, "
        "replay_buffer_kwargs=None, optimize_memory_usage=False, n_steps=1, ent_coef='auto', "
        "target_entropy='auto', policy_delay=3, use_sde=False, sde_sample_freq=-1, "
        "use_sde_at_warmup=False, " + _TAIL,
    ),
    (CrossQ, "learn", _learn("CrossQ", 4, default_root_dir=False)),
    (CrossQ, "training_step", _STEP),
    (CrossQ, "configure_optimizers", ""),
    (
        QRDQN,
        "__init__",
        "policy, learning_rate=5e-05, " + _Q_LEARNING + "exploration_fraction=0.005, "
        "exploration_initial_eps=1.0, exploration_final_eps=0.01, max_grad_norm=None, " + _TAIL,
    ),
    (QRDQN, "learn", _learn("QRDQN", 4, default_root_dir=False)),
    (QRDQN, "predict", _PREDICT),
    (QRDQN, "training_step", _STEP),
    (QRDQN, "configure_optimizers", ""),
    # RLEnvDataModule, RLTrainer
    (
        RLEnvDataModule,
        "__init__",
        "train_env=None, val_env=None, test_env=None, predict_env=None, monitor_wrapper=True, verbose=0",
    ),
    (RLEnvDataModule, "setup", "stage=None"),
    (RLEnvDataModule, "teardown", "stage=None"),
    (RLEnvDataModule, "on_exception", "exception"),
    (RLEnvDataModule, "get_env", "stage, *, resolve=True"),
    (RLEnvDataModule, "load_state_dict", "state_dict"),
    (
        RLEnvDataModule,
        "load_from_checkpoint",
        "checkpoint_path, map_location=None, hparams_file=None, weights_only=None",
    ),
    (RLTrainer, "__init__", "max_steps=None, rl_callback=None, run_name=None"),
    (
        RLTrainer,
        "fit",
        "model, *, datamodule=None, train_dataloaders=None, val_dataloaders=None, ckpt_path=None, weights_only=None",
    ),
]

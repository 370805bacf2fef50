"""Seed groups: N seeds of one configuration trained together as one batched model (issue 39).

    from lit_sb3.seeds import SeedGroup          # also lit_sb3.SeedGroup
    group = SeedGroup(PPO, seeds=range(10), env="CartPole-v1", n_envs=8, **ppo_kwargs)
    group.learn(100_000)                         # env steps PER SEED (SB3's meaning)

The API is the contract's (``SeedGroup`` in :mod:`lit_sb3.seeds.group`)::

    group = SeedGroup(PPO, seeds=[0, 1, 2], env=[venv0, venv1, venv2], **algo_kwargs)   # one VecEnv per seed
    group = SeedGroup(PPO, seeds=range(10), env="CartPole-v1", n_envs=8, **algo_kwargs)  # n_envs per seed
    group.learn(total_timesteps, callback=None, log_interval=-1, reset_num_timesteps=True)  # steps PER SEED
    RLTrainer(max_steps=budget, rl_callback=cb, logger=..., callbacks=[...]).fit(group)   # no datamodule needed
    group.num_timesteps, group.seeds, group.model(i), group.evaluate(eval_envs, n_eval_episodes, deterministic)
    group.seed_state(i), group.load_seed_states([...]), group.metrics(i), SeedGroup.batched(algo_cls)

Batched: PPO and A2C (MlpPolicy, Discrete and Box actions, no gSDE). Anything else is refused in one line.

Writing a batched algorithm (DQN, SAC, TD3): subclass :class:`lit_sb3.seeds.group.BatchedAlgorithm`
(``collect``, ``update``, ``act``, ``seed_state``, ``load_seed_state``, ``export``; :class:`BatchedOnPolicy` in
:mod:`lit_sb3.seeds.on_policy` is the worked example) and add it to ``BATCHED`` in ``group.py``. The group gives it
``group.models`` (the ordinary per-seed models, built with their seeds: their hyperparameters, spaces, initial
networks), ``group.step_envs(actions)`` (one vector step of all seeds: counts env steps, calls the SB3 callback,
gathers episodes; None when the callback stops), ``group.last_obs`` / ``group.last_episode_starts``,
``group.streams`` (the seeds' random streams), ``group.progress_remaining`` and ``group.record(i, key, value)``.

The core, for the batched algorithms (and the off-policy ones built on it):

- :mod:`lit_sb3.seeds.stacked`: ``stack_parameters(modules)`` (N identical modules -> ``{name: [N, ...]}`` leaf
  tensors), ``batched_forward(template, stacked, prefix, x)`` (a template ``nn.Sequential`` / ``nn.Linear`` /
  flatten extractor on ``x`` of shape ``[N, batch, ...]``, Linear layers as ``torch.baddbmm``),
  ``check_batchable(module, what)`` (one-line refusal of what it cannot batch), ``module_slice`` / ``load_slice`` /
  ``set_slice`` (seed i's parameters out of, into an ordinary module, back into the stack). The measurement that
  chose batched layers over ``torch.func.vmap`` is in that module's docstring (``benchmarks/seeds_forward.py``).
- :mod:`lit_sb3.seeds.optim`: ``BatchedAdam`` / ``BatchedRMSprop`` (``step(active)`` with a per-seed mask: a
  masked seed's parameters, moments and step count do not move), ``clip_grad_norm_per_seed(params, max_norm)``,
  ``batched_optimizer(optimizer_class, kwargs, params, lr)`` (the counterpart of an SB3 policy's optimizer, or one
  line refusing it), ``seed_state`` / ``load_seed_state`` / ``torch_state`` (into an ordinary torch optimizer).
- :mod:`lit_sb3.seeds.streams`: ``SeedStreams(seeds)`` (a ``torch.Generator`` and a numpy ``Generator`` per seed,
  seeded from the seed; ``uniform`` / ``normal`` / ``permutations`` draw each seed's share from its own generator;
  ``state(i)`` / ``load_state(i, ...)``), ``gumbel_max`` and ``gaussian`` (batched sampling from those draws).
- :mod:`lit_sb3.seeds.envs`: ``seed_envs(env, n_seeds, n_envs)`` (one monitored VecEnv per seed) and
  ``GroupVecEnv`` (them as one VecEnv of N x n_envs envs: seed i's env j is env ``i * n_envs + j``;
  ``per_seed(array)`` splits a batch back, ``seed_each(seeds)`` seeds each seed's VecEnv).
- :mod:`lit_sb3.seeds.actor_critic`: ``StackedActorCritic`` (PPO's and A2C's MlpPolicy for N seeds).
"""

from lit_sb3.seeds.group import SeedGroup

__all__ = ["SeedGroup"]

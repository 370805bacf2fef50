"""Seed groups: N seeds of one configuration trained together as one batched model (issue 39).

    from lit_sb3.seeds import SeedGroup          # also lit_sb3.SeedGroup
    group = SeedGroup(PPO, seeds=range(10), env="CartPole-v1", n_envs=8, **ppo_kwargs)
    group.learn(100_000)                         # env steps PER SEED (SB3's meaning)

Status: the core below is committed first (batched forward, per-seed optimizer steps and random streams, the
group's VecEnv); ``SeedGroup`` with PPO and A2C follows. The public API is the contract's (see ``group.py``).

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

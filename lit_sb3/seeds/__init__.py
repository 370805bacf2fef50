"""Seed groups: N seeds of one configuration trained together as one batched model (issue 39)::

    from lit_sb3.seeds import SeedGroup          # also lit_sb3.SeedGroup
    group = SeedGroup(PPO, seeds=range(10), env="CartPole-v1", n_envs=8, **ppo_kwargs)
    group.learn(100_000)                         # env steps PER SEED (SB3's meaning)

The API is the contract's (``SeedGroup`` in :mod:`lit_sb3.seeds.group`)::

    group = SeedGroup(PPO, seeds=[0, 1, 2], env=[venv0, venv1, venv2], **algo_kwargs)   # one VecEnv per seed
    group = SeedGroup(PPO, seeds=range(10), env="CartPole-v1", n_envs=8, **algo_kwargs)  # n_envs per seed
    group.learn(total_timesteps, callback=None, log_interval=-1, reset_num_timesteps=True)  # steps PER SEED
    RLTrainer(max_steps=budget, rl_callback=cb, logger=..., callbacks=[...]).fit(group)   # no datamodule needed
    group.num_timesteps, group.seeds, group.model(i), group.evaluate(eval_envs, n_eval_episodes, deterministic)
    group.seed_state(i), group.load_seed_states([...]), group.metrics(i), SeedGroup.batched(algo_cls), group.device

Batched: PPO and A2C (MlpPolicy, Discrete and Box actions, no gSDE); DQN, QR-DQN, SAC, TQC, TD3 and DDPG (MlpPolicy,
step-based ``train_freq``, 1-step returns, SB3's plain replay buffer: :mod:`lit_sb3.seeds.off_policy`), on the CPU or
a CUDA device (``device=``, below). Anything else (other algorithms, CNN / multi-input policies, custom optimizers
but Adam and RMSprop, devices but the CPU and CUDA) is refused in one line.

On a GPU (``SeedGroup(..., device="cuda")``; ``"auto"`` is the CPU, where lit_sb3's ``learn`` trains, and ``"cuda"``
without CUDA falls back to the CPU, as in SB3): the stacked networks, optimizer states and updates are on the device;
the envs, the rollout and replay buffers and every seed's random generators stay on the host, as in SB3, so a CUDA group
draws exactly the CPU group's noise, minibatch orders and exploration (a CUDA generator per seed measured 2.7x slower
than drawing on the host and copying the stacked draws once: ``benchmarks/seeds_gpu.py --draws``). Per env step the
observations and the seeds' noise go to the device in one copy and the actions (with PPO's values and log-probabilities)
come back in one, two where the actions are integers (:mod:`lit_sb3.seeds.transfer`: one copy per dtype); a gradient
step's minibatches and noise travel likewise. ``group.model(i)`` is on the group's device (as ``PPO(...,
device="cuda")`` is); ``seed_state(i)`` is on the host, so a CUDA group's checkpoint resumes on a CPU. What holds there
(``tests/lit_sb3/seeds/test_cuda.py`` and ``benchmarks/seeds_gpu.py --independence``, on an H200): a group trained twice
is identical bit for bit; it starts from the CPU group's weights and takes its first actions, and then computes its
updates to float32 rounding (each parameter's change over a short run within 4e-6 relative of the CPU group's), the runs
drifting apart as training feeds the rounding back; a seed's numbers may depend on the size of its group (cuBLAS chooses
a batched product's kernel by the batch, so the summation order in a seed's slice can change: seed 3 alone vs in a group
of 10 ended bit-identical for SAC [64, 64], 3e-8 apart for PPO CartPole, 1.3e-5 for SAC [400, 300]).

For the harness: a seed trained in a group is the run its own process would train up to float32 rounding (it draws
that run's random numbers, see below), not to the last bit, and on the CPU it is the same run in any group: its
identity records "trained in a group" without the group's other seeds. Speed (``benchmarks/seeds.py``, 10 seeds, 2
processes at once, CPU time of whole processes, imports included): PPO CartPole 2.9x less CPU than one process per
seed (lit_sb3's or SB3's), A2C Acrobot 3.2x (lit_sb3) and 2.6x (SB3) less; the README gives the command and the
load.

What a seed's run is, in a group (tests in ``tests/lit_sb3/seeds/``):

- **its own run**: seed i starts from the weights ``PPO(..., seed=seeds[i])`` starts from (bit for bit), its
  envs are seeded as that run seeds them (``VecEnv.seed(seed)`` before the first reset), it draws that run's random
  numbers (:mod:`lit_sb3.seeds.streams`: the states the process's global torch and numpy generators have once its
  model is built, drawn from with the same calls, shapes and order: ``torch.multinomial``'s and ``Normal.rsample``'s
  noise, SB3's minibatch permutations, replay indices, action noise and exploration test, its action space's
  samples), and on the same minibatch the group computes lit_sb3's losses, logged terms, gradients and clipped
  optimizer step (to 1e-6: the batched products round differently, and on the CPU the group's ``nn.Tanh`` is
  numpy's tanh, within 1.4 ulp where torch's is within 0.5 and 6x faster; the Adam step itself is the run's fused
  kernel on the seed's slices, bit for bit on the same gradients). So a seed takes its ordinary run's actions
  (discrete ones equal; Box ones to float32 rounding) and ends a short run with its parameters to float32 rounding, as
  ``sb3_parity``'s optimizer does (``tests/lit_sb3/seeds/test_own_run.py``); long runs drift apart as training feeds
  the rounding back, as two runs with the fused and the single-tensor Adam do.
- **reproducible**: a group trained twice is identical, bit for bit.
- **independent of its group**: seed 3 alone and seed 3 in a group of 5 or 10 end with bit-identical parameters,
  optimizer state and metrics (PPO and A2C, CartPole and Pendulum, with ``target_kl`` stopping seeds at different
  minibatches; measured on CPU, OMP_NUM_THREADS=1). The kernels that differed: torch's batched matrix product
  of a single pair (a group of one) rounds differently from the same pair in a batch of two or more (up to 3e-5
  on some shapes), so a group of one pads its products with a zero pair (:func:`lit_sb3.seeds.stacked._linear`);
  on an AVX-512 Xeon a product of a strided input (a transposed observation array) rounds differently from a
  contiguous one's, so the input is made contiguous first.
- **an ordinary model**: ``group.model(i)`` is seed i's ``PPO`` / ``A2C`` (parameters, optimizer state, counters,
  episode statistics): ``predict``, ``save`` (an SB3-style zip SB3 loads too), ``load``, ``evaluate_policy``.
- **resumable**: ``seed_state(i)`` (tensors and plain data; ``torch.load(weights_only=True)``) holds the seed's
  networks, optimizer state, random streams, episode statistics, pending metrics and its envs' action log; a group
  that loads them replays the envs and continues bit for bit as if it had not stopped. A seed state of an earlier
  lit_sb3, whose groups drew from random streams of their own (no ``streams_format`` 2), is refused in one line.

Contract changes (additions only): ``SeedGroup(..., policy="MlpPolicy")`` takes the policy as a keyword;
``learn(total_timesteps, callback=None, log_interval=-1, reset_num_timesteps=True, progress_bar=False)``
(``-1``: the algorithm's default interval, PPO 1, A2C 100; continue a resumed group with
``reset_num_timesteps=False``, or ``RLTrainer(max_steps=<total>).fit(group)``); in Lightning's loggers seed s's
metrics are named ``seed_<s>/<SB3 name>`` (``seed_3/rollout/ep_rew_mean``); ``RLTrainer.fit(group)`` needs no
datamodule (the group's ``fit_datamodule()``); stochastic evaluation draws from each seed's evaluation stream
(seeded ``seed + 1000``), so evaluating never changes training. An SB3 callback's ``self.model`` is the group
(``get_env()`` is the group's VecEnv of N x n_envs envs; ``logger`` an SB3 logger of the group's own, written
nowhere); SB3's ``EvalCallback`` needs a model with ``predict``: evaluate a group with ``group.evaluate``. A
Lightning checkpoint of a group (``ModelCheckpoint``) holds every seed's ``seed_state``, and
``RLTrainer(...).fit(group, ckpt_path=...)`` resumes from it exactly. ``verbose`` prints nothing in a group.

Writing a batched algorithm (DQN, QR-DQN, SAC, TQC, TD3): subclass :class:`lit_sb3.seeds.group.BatchedAlgorithm`
(``collect``, ``update``, ``act``, ``seed_state``, ``load_seed_state``, ``export``; :class:`BatchedOnPolicy` in
:mod:`lit_sb3.seeds.on_policy` is the worked example) and add it to ``BATCHED`` in ``group.py``. The group gives it
``group.models`` (the ordinary per-seed models, built with their seeds: their hyperparameters, spaces, initial
networks), ``group.step_envs(actions)`` (one vector step of all seeds: counts env steps, calls the SB3 callback,
gathers episodes; None when the callback stops), ``group.last_obs`` / ``group.last_episode_starts``,
``group.streams`` (the seeds' random streams: draw from them as the ordinary model draws from the global ones),
``group.progress_remaining`` and ``group.record(i, key, value)``.

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
  line refusing it; Adam fused as the policy's is: torch's fused kernel on each seed's slices), ``seed_state`` /
  ``load_seed_state`` / ``torch_state`` (into an ordinary torch optimizer).
- :mod:`lit_sb3.seeds.streams`: ``SeedStreams(seeds)`` (a ``torch.Generator`` and a numpy ``RandomState`` per seed;
  ``take_global(i)`` gives seed i the process's global generators' states, as the group does after building its
  model; ``exponential`` / ``normal`` / ``permutations`` draw each seed's share from its own generators;
  ``state(i)`` / ``load_state(i, ...)``), ``categorical_sample`` and ``gaussian`` (batched sampling from those
  draws).
- :mod:`lit_sb3.seeds.envs`: ``seed_envs(env, n_seeds, n_envs)`` (one monitored VecEnv per seed) and
  ``GroupVecEnv`` (them as one VecEnv of N x n_envs envs: seed i's env j is env ``i * n_envs + j``;
  ``per_seed(array)`` splits a batch back, ``seed_each(seeds)`` seeds each seed's VecEnv).
- :mod:`lit_sb3.seeds.actor_critic`: ``StackedActorCritic`` (PPO's and A2C's MlpPolicy for N seeds).
- :mod:`lit_sb3.seeds.transfer`: ``to_device(arrays, device)`` / ``to_host(tensors)`` (the arrays of one dtype in one
  copy; nothing copied on the CPU).
"""

from lit_sb3.seeds.group import SeedGroup

__all__ = ["SeedGroup"]

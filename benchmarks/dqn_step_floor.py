"""What a DQN CartPole gradient step of a seed group costs, against the least any eager PyTorch step can cost and
against its seeds' steps alone (the RL Zoo's settings: [256, 256] Q-network, minibatches of 64).

    OMP_NUM_THREADS=1 python benchmarks/dqn_step_floor.py --seeds 5 --rounds 3 --repeats 5

Three ways to take a gradient step for every seed, timed in turn (CPU time, ``time.process_time``, the order
rotating by repeat; medians of the repeats), in rounds of 128 steps as the Zoo's settings train (``gradient_steps``
after every 256 env steps):

- ``group``: the group's own round (``SeedGroup``'s ``gradient_steps(128, 64)``: replay sampling, target, Huber
  loss, autograd, each seed's gradient-norm clipping, the fused Adam step), on a replay buffer of 2,000 transitions;
- ``bare``: the arithmetic of that step written out on fixed minibatches, nothing else: the target network's forward
  and the max over actions, the Q-network's forward, the Huber loss's gradient, the backward's batched products, one
  fused Adam call on the stacked parameters. No sampling, no autograd, no clipping, no per-seed bookkeeping: a
  floor under any eager implementation of the batched step (it would still run these kernels);
- ``alone``: each seed's own model taking its round (``DQN.train(gradient_steps=128)``), one seed after another.

It prints ms of CPU per gradient step of all the seeds and the ratios ``alone / group`` and ``alone / bare``: the
second is the most grouping can gain on this machine's gradient steps, whatever else is made cheaper.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from lit_sb3 import DQN
from lit_sb3.seeds import SeedGroup

sys.path.insert(0, str(Path(__file__).resolve().parent))
from seeds import CONFIGS as SEED_CONFIGS

# the RL Zoo's DQN CartPole settings (conf/algo_env/dqn_CartPole.yaml), as benchmarks/seeds.py runs them
ZOO: dict[str, Any] = {k: v for k, v in SEED_CONFIGS["dqn"].kwargs.items() if k != "learning_starts"}
ROUND = 128  # gradient steps per round
FILL = 2_000  # transitions in each replay buffer (learning_starts above it: filled, not trained)


def group_step(seeds: int) -> Callable[[], None]:
    group = SeedGroup(DQN, seeds=range(seeds), env="CartPole-v1", learning_starts=10 * FILL, **ZOO)
    group.learn(FILL)
    algorithm = group.algorithm
    return lambda: algorithm.gradient_steps(ROUND, 64)  # type: ignore[attr-defined]


def alone_steps(seeds: int) -> Callable[[], None]:
    models = [DQN("MlpPolicy", env="CartPole-v1", seed=seed, learning_starts=10 * FILL, **ZOO) for seed in range(seeds)]
    for model in models:
        model.learn(FILL)

    def step() -> None:
        for model in models:
            model.train(gradient_steps=ROUND, batch_size=64)

    return step


def bare_step(seeds: int, batch: int = 64, width: int = 256, n_obs: int = 4, n_actions: int = 2) -> Callable[[], None]:
    generator = torch.Generator().manual_seed(0)
    sizes = [(width, n_obs), (width, width), (n_actions, width)]
    weights = [torch.randn(seeds, *size, generator=generator) * 0.05 for size in sizes]
    biases = [torch.randn(seeds, size[0], generator=generator) * 0.05 for size in sizes]
    target_weights, target_biases = [w.clone() for w in weights], [b.clone() for b in biases]
    params = weights + biases
    exp_avgs, exp_avg_sqs = [torch.zeros_like(p) for p in params], [torch.zeros_like(p) for p in params]
    obs, next_obs = torch.randn(seeds, batch, n_obs), torch.randn(seeds, batch, n_obs)
    actions = torch.randint(0, n_actions, (seeds, batch, 1))
    rewards, dones = torch.ones(seeds, batch, 1), torch.zeros(seeds, batch, 1)
    count = torch.zeros(())

    def forward(x: torch.Tensor, ws: list[torch.Tensor], bs: list[torch.Tensor]) -> list[torch.Tensor]:
        outputs = [x]
        for layer, (w, b) in enumerate(zip(ws, bs)):
            x = torch.baddbmm(b.unsqueeze(1), x, w.transpose(1, 2))
            outputs.append(torch.relu(x) if layer < len(ws) - 1 else x)
            x = outputs[-1]
        return outputs

    initial = [p.clone() for p in params]

    def round_() -> None:
        # every round from the same state: the steps' own updates would drift the numbers (towards subnormal
        # moments, which the group's and a model's optimizer flush and this one does not)
        for param, value, exp_avg, exp_avg_sq in zip(params, initial, exp_avgs, exp_avg_sqs):
            param.copy_(value), exp_avg.zero_(), exp_avg_sq.zero_()
        count.zero_()
        for _ in range(ROUND):
            step()

    def step() -> None:
        next_q = forward(next_obs, target_weights, target_biases)[-1]
        target = rewards + (1 - dones) * 0.99 * next_q.max(dim=-1, keepdim=True).values
        outputs = forward(obs, weights, biases)
        error = outputs[-1].gather(2, actions) - target
        grad = torch.zeros_like(outputs[-1]).scatter_(2, actions, error.clamp(-1.0, 1.0) / batch)  # Huber's
        grad_weights: list[torch.Tensor] = []
        grad_biases: list[torch.Tensor] = []
        for layer in reversed(range(len(weights))):
            grad_weights.insert(0, torch.bmm(grad.transpose(1, 2), outputs[layer]))
            grad_biases.insert(0, grad.sum(dim=1))
            if layer > 0:
                grad = torch.ops.aten.threshold_backward(torch.bmm(grad, weights[layer]), outputs[layer], 0)
        count.add_(1)
        torch._fused_adam_(
            params, grad_weights + grad_biases, exp_avgs, exp_avg_sqs, [], [count] * len(params),
            lr=1e-3, beta1=0.9, beta2=0.999, weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False,
        )  # fmt: skip

    return round_


def cpu_ms(round_: Callable[[], None], rounds: int) -> float:
    """ms of CPU per gradient step over ``rounds`` rounds."""
    start = time.process_time()
    for _ in range(rounds):
        round_()
    return (time.process_time() - start) / (rounds * ROUND) * 1e3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of 128 gradient steps per timing")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    modes = {"group": group_step(args.seeds), "bare": bare_step(args.seeds), "alone": alone_steps(args.seeds)}
    for round_ in modes.values():
        cpu_ms(round_, 1)  # warm-up: first calls, allocator
    times: dict[str, list[float]] = {name: [] for name in modes}
    for repeat in range(args.repeats):
        names = list(modes)
        for name in names[repeat % len(names) :] + names[: repeat % len(names)]:
            times[name].append(cpu_ms(modes[name], args.rounds))
    print(f"{args.seeds} seeds, a gradient step of each (ms CPU, median of {args.repeats}; min-max):")
    for name, values in times.items():
        print(f"  {name:<6} {statistics.median(values):7.3f}  ({min(values):.3f}-{max(values):.3f})")
    alone = statistics.median(times["alone"])
    for name in ("group", "bare"):
        print(f"alone / {name}: {alone / statistics.median(times[name]):.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

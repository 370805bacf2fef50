"""The batched policy forward of a seed group, two ways: ``torch.func`` (stacked module state + ``functional_call``
+ ``vmap``) against batched layers (weights ``[N, in, out]``, ``torch.baddbmm``), on SB3's PPO MlpPolicy for
CartPole (4 -> 64 -> 64 tanh, actor and critic; 2 logits, 1 value).

    OMP_NUM_THREADS=1 python benchmarks/seeds_forward.py --seeds 5 10 --n-envs 8

Each variant runs the rollout forward (no gradient, N x n_envs observations) and the update's forward + backward
(minibatch of 64 per seed); CPU time per call (``time.process_time``), variants interleaved, best of the repeats.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import torch
from gymnasium import spaces
from stable_baselines3.common.policies import ActorCriticPolicy
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

from lit_sb3.seeds.actor_critic import StackedActorCritic


class _Heads(nn.Module):
    """The policy's action logits and value (what the batched forward must give)."""

    def __init__(self, policy: ActorCriticPolicy) -> None:
        super().__init__()
        self.policy = policy

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        latent_pi, latent_vf = self.policy.mlp_extractor(self.policy.extract_features(obs))
        return self.policy.action_net(latent_pi), self.policy.value_net(latent_vf)


def _policies(n: int) -> list[ActorCriticPolicy]:
    obs_space = spaces.Box(-1.0, 1.0, (4,))
    return [ActorCriticPolicy(obs_space, spaces.Discrete(2), lambda _: 3e-4) for _ in range(n)]


def _timed(fn: Callable[[], object], repeats: int) -> float:
    best = float("inf")
    for _ in range(5):
        start = time.process_time()
        for _ in range(repeats):
            fn()
        best = min(best, (time.process_time() - start) / repeats)
    return best * 1e6


def _measure(n: int, n_envs: int, batch: int, repeats: int) -> dict[str, float]:
    """CPU microseconds per call of each variant for N seeds."""
    policies = _policies(n)
    heads = [_Heads(p) for p in policies]
    params, buffers = stack_module_state(heads)
    base = _Heads(_policies(1)[0]).to("meta")

    def one(p: dict[str, torch.Tensor], b: dict[str, torch.Tensor], x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return functional_call(base, (p, b), (x,))

    vmapped = vmap(one)
    stacked = StackedActorCritic(policies)
    rollout_obs = torch.randn(n, n_envs, 4)
    batch_obs = torch.randn(n, batch, 4)

    def vmap_rollout() -> None:
        with torch.no_grad():
            vmapped(params, buffers, rollout_obs)

    def bmm_rollout() -> None:
        with torch.no_grad():
            stacked.heads(rollout_obs)

    def loop_rollout() -> None:  # N ordinary forwards: the one-model-per-seed baseline
        with torch.no_grad():
            for i in range(n):
                heads[i](rollout_obs[i])

    def vmap_update() -> None:
        logits, values = vmapped(params, buffers, batch_obs)
        (logits.sum() + values.sum()).backward()

    def bmm_update() -> None:
        logits, values = stacked.heads(batch_obs)
        (logits.sum() + values.sum()).backward()

    results: dict[str, float] = {}
    for _ in range(2):  # interleaved: A, B, C, A, B, C (the best of all repeats counts)
        for name, fn, times in (
            ("vmap", vmap_rollout, repeats),
            ("baddbmm", bmm_rollout, repeats),
            ("loop", loop_rollout, repeats),
            ("vmap_update", vmap_update, repeats // 3),
            ("baddbmm_update", bmm_update, repeats // 3),
        ):
            results[name] = min(results.get(name, float("inf")), _timed(fn, times))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[5, 10])
    parser.add_argument("--n-envs", type=int, default=8)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=300)
    args = parser.parse_args()
    torch.manual_seed(0)
    for n in args.seeds:
        r = _measure(n, args.n_envs, args.batch, args.repeats)
        print(
            f"N={n:3d} n_envs={args.n_envs}: rollout forward  vmap {r['vmap']:7.1f} us  "
            f"baddbmm {r['baddbmm']:7.1f} us  N ordinary forwards {r['loop']:7.1f} us | "
            f"update fwd+bwd (batch {args.batch})  vmap {r['vmap_update']:7.1f} us  "
            f"baddbmm {r['baddbmm_update']:7.1f} us"
        )


if __name__ == "__main__":
    main()

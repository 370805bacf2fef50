"""Seed groups on a GPU: N seeds of one configuration in one process against one seed on the same GPU.

    python benchmarks/seeds_gpu.py --out DIR                       # on a machine with CUDA: 100 seeds
    python benchmarks/seeds_gpu.py --out DIR --device cpu --seeds 4 --steps small   # smoke run, anywhere

The configurations are ``benchmarks/seeds.py``'s (the RL Zoo's settings): ``ppo`` (CartPole, 8 envs per seed),
``sac`` (Pendulum, [64, 64]) and ``sac-400-300`` (the Zoo's networks). Each measurement ("leg") runs in a fresh
process, one after another:

- ``group``: a ``SeedGroup`` of ``--seeds`` seeds on ``--device``;
- ``lit``: one lit_sb3 model on ``--device`` (``PPO(..., device=...).learn()``);
- ``sb3``: one SB3 model on ``--device``;
- ``sb3-cpu``: one SB3 model on the CPU, for reference (one torch thread, as each process of a sweep runs: a machine
  runs about as many such processes at once as it has cores).

A leg builds its model(s), warms up (``--steps``' warm-up env steps per seed, excluded from the figures: CUDA's
start, the allocator and kernel caches, and the off-policy ``learning_starts`` lie there), then trains on until its
measured env steps per seed or ``--seconds``, whichever comes first. Env steps per second count every seed's steps
over that window (wall clock, the device synchronised before each reading); CPU time is the process's over the same
window. Memory: the process's peak resident set (imports, models and buffers included) and torch's peak GPU memory
(allocated and reserved by its caching allocator; the CUDA context, about 0.5 GiB, is not counted). ``--threads``
sets torch's CPU threads in every leg (default 1).

With ``--draws`` (on CUDA) it first times two ways of drawing each seed's noise from its own generator (host
generators and one copy, which a group uses, or a CUDA generator per seed). With ``--independence`` it checks, on
``--device``, whether seed 3 trained alone ends with the same parameters as seed 3 trained in a group of 10 (bit for
bit, or the largest difference). It prints a Markdown table and writes ``DIR/seeds_gpu.csv`` (a row per leg),
rewritten after every leg.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import resource
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from seeds import CONFIGS, Config  # benchmarks/seeds.py, beside this file

#: env steps per seed: (warm-up, measured at most) per configuration and size
STEPS = {
    "full": {"ppo": (512, 5120), "sac": (300, 5000), "sac-400-300": (300, 5000)},
    "small": {"ppo": (256, 512), "sac": (120, 60), "sac-400-300": (120, 60)},
}
#: the measured window of the one-seed legs, at most (they run slower: the time limit stops them first)
SINGLE_STEPS = {"full": 50_000, "small": 200}
MODES = ("group", "lit", "sb3", "sb3-cpu")


@dataclass(frozen=True)
class Leg:
    """One measurement: a configuration, a mode, seeds (the group's), device, env steps and time limit."""

    config: str
    mode: str
    seeds: int
    device: str
    warmup: int
    measured: int
    seconds: float
    threads: int


def _kwargs(config: Config) -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    exec(config.imports(), namespace)  # the configuration's own imports (action noise), from this repository
    return {**config.kwargs, **{k: eval(v, namespace) for k, v in config.exprs.items()}}


def _synchronize(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _peak_rss_mib() -> float:
    """This process's peak resident set since it started (``VmHWM``; ``ru_maxrss`` would count the parent's)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)  # elsewhere: the closest figure


def run_leg(leg: Leg) -> dict[str, Any]:
    """Build, warm up, measure; the figures of one leg."""
    import torch
    from stable_baselines3.common.callbacks import BaseCallback

    torch.set_num_threads(leg.threads)
    config = CONFIGS[leg.config]
    kwargs = _kwargs(config)
    device = "cpu" if leg.mode == "sb3-cpu" else leg.device
    n_seeds = leg.seeds if leg.mode == "group" else 1
    start = time.perf_counter()
    model: Any
    if leg.mode == "group":
        import lit_sb3
        from lit_sb3 import SeedGroup

        algo = getattr(lit_sb3, config.algo)
        model = SeedGroup(algo, seeds=range(n_seeds), env=config.env, n_envs=config.n_envs, device=device, **kwargs)
    elif leg.mode == "lit":
        import lit_sb3
        from lit_sb3.common.envs import to_vec_env

        algo = getattr(lit_sb3, config.algo)
        model = algo("MlpPolicy", env=to_vec_env(config.env, config.n_envs), seed=0, device=device, **kwargs)
    else:
        import stable_baselines3
        from stable_baselines3.common.env_util import make_vec_env

        algo = getattr(stable_baselines3, config.algo)
        model = algo(
            "MlpPolicy", make_vec_env(config.env, n_envs=config.n_envs, seed=0), seed=0, device=device, **kwargs
        )
    build_seconds = time.perf_counter() - start
    model.learn(leg.warmup)
    _synchronize(device)

    class Deadline(BaseCallback):
        """Stop the measured window after ``seconds``."""

        def __init__(self, seconds: float) -> None:
            super().__init__()
            self.seconds, self.started = seconds, 0.0

        def _on_training_start(self) -> None:
            self.started = time.perf_counter()

        def _on_step(self) -> bool:
            return time.perf_counter() - self.started < self.seconds

    steps_before = model.num_timesteps
    wall, cpu = time.perf_counter(), time.process_time()
    model.learn(leg.measured, callback=Deadline(leg.seconds), reset_num_timesteps=False)
    _synchronize(device)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    env_steps = (model.num_timesteps - steps_before) * n_seeds
    if leg.mode == "group":
        episodes = [e["r"] for buffer in model.ep_info_buffers for e in buffer]
    else:
        episodes = [e["r"] for e in model.ep_info_buffer]
    cuda = device.startswith("cuda")
    return {
        **asdict(leg),
        "seeds": n_seeds,
        "device": device,
        "env_steps": env_steps,
        "seconds": round(wall, 3),
        "steps_per_second": round(env_steps / wall, 1),
        "cpu_seconds": round(cpu, 3),
        "build_seconds": round(build_seconds, 2),
        "peak_rss_mib": _peak_rss_mib(),
        "gpu_allocated_mib": round(torch.cuda.max_memory_allocated() / 2**20, 1) if cuda else "",
        "gpu_reserved_mib": round(torch.cuda.max_memory_reserved() / 2**20, 1) if cuda else "",
        "mean_return": round(sum(episodes) / len(episodes), 1) if episodes else "",
        "gpu": torch.cuda.get_device_name() if cuda else "",
        "torch": torch.__version__,
    }


def independence(device: str, threads: int) -> list[str]:
    """Seed 3 alone vs seed 3 of a group of 10 on ``device``: bit for bit, or the largest difference."""
    import torch

    from lit_sb3 import PPO, SAC, SeedGroup

    torch.set_num_threads(threads)
    lines = []
    for name, algo, steps in (("ppo", PPO, 512), ("sac", SAC, 300), ("sac-400-300", SAC, 300)):
        config = CONFIGS[name]
        final = []
        for seeds in ([3], list(range(10))):
            group = SeedGroup(
                algo, seeds=seeds, env=config.env, n_envs=config.n_envs, device=device, **_kwargs(config)
            ).learn(steps)
            index = seeds.index(3)
            final.append({k: v[index].detach().cpu() for k, v in group.algorithm.net.params.items()})  # type: ignore[attr-defined]
        gap = max(float((final[0][k] - final[1][k]).abs().max()) for k in final[0])
        same = all(torch.equal(final[0][k], final[1][k]) for k in final[0])
        verdict = "bit-identical" if same else f"differ, largest parameter difference {gap:.2e}"
        lines.append(f"{name}: seed 3 alone vs in a group of 10, {steps} steps on {device}: {verdict}")
    return lines


def draw_costs(device: str, seeds: int, threads: int) -> list[str]:
    """Each seed's noise from its own generator, two ways: host generators and one copy of the stacked draws (what
    a group does), or a CUDA generator per seed (no copy, a kernel launch per seed); microseconds per draw of all
    seeds, median of 200 after 20 warm-up draws."""
    import statistics

    import torch

    torch.set_num_threads(threads)
    host = [torch.Generator().manual_seed(s) for s in range(seeds)]
    on_device = [torch.Generator(device=device).manual_seed(s) for s in range(seeds)]

    def from_host(shape: tuple[int, ...]) -> torch.Tensor:
        return torch.stack([torch.randn(shape, generator=g) for g in host]).to(device)

    def per_device_generator(shape: tuple[int, ...]) -> torch.Tensor:
        return torch.stack([torch.randn(shape, generator=g, device=device) for g in on_device])

    lines = []
    for shape, what in (((1, 1), "one action per seed (SAC, 1 env)"), ((256, 1), "a minibatch's noise (SAC, 256)")):
        for name, draw in (
            ("host generators + one copy", from_host),
            ("a CUDA generator per seed", per_device_generator),
        ):
            times = []
            for k in range(220):
                _synchronize(device)
                start = time.perf_counter()
                draw(shape)
                _synchronize(device)
                if k >= 20:
                    times.append(time.perf_counter() - start)
            lines.append(f"{seeds} seeds, {what}: {name}: {statistics.median(times) * 1e6:.0f} us")
    return lines


def _table(rows: list[dict[str, Any]]) -> str:
    header = (
        "| config | mode | seeds | device | env steps/s | vs 1 seed lit | vs 1 seed SB3 | CPU s / wall s "
        "| peak RSS MiB | GPU MiB (alloc / reserved) | mean return |"
    )
    lines = [header, "|" + " --- |" * (header.count("|") - 1)]
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['config']} | {row['mode']} | | | failed: {row['error']} | | | | | | |")
            continue
        same = [r for r in rows if r["config"] == row["config"] and "error" not in r]
        ratios = []
        for mode in ("lit", "sb3"):
            other = next((r for r in same if r["mode"] == mode), None)
            ratios.append(f"{row['steps_per_second'] / other['steps_per_second']:.1f}x" if other else "")
        gpu = f"{row['gpu_allocated_mib']} / {row['gpu_reserved_mib']}" if row["gpu_allocated_mib"] != "" else ""
        lines.append(
            f"| {row['config']} | {row['mode']} | {row['seeds']} | {row['device']} | "
            f"{row['steps_per_second']:,.0f} | {ratios[0]} | {ratios[1]} | "
            f"{row['cpu_seconds'] / row['seconds']:.2f} | {row['peak_rss_mib']:,.0f} | {gpu} | {row['mean_return']} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="directory for seeds_gpu.csv")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--steps", choices=list(STEPS), default="full")
    parser.add_argument("--configs", nargs="+", default=["ppo", "sac", "sac-400-300"], choices=list(STEPS["full"]))
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--seconds", type=float, default=10.0, help="measured window per leg, at most")
    parser.add_argument("--budget", type=float, default=float("inf"), help="skip legs once this many seconds passed")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads in every leg")
    parser.add_argument("--independence", action="store_true", help="first check seed 3 alone vs in a group of 10")
    parser.add_argument("--draws", action="store_true", help="first time the two ways of drawing per-seed noise")
    parser.add_argument("--leg", help=argparse.SUPPRESS)  # internal: run one leg (JSON) and print its figures
    args = parser.parse_args()
    if args.leg:
        print(json.dumps(run_leg(Leg(**json.loads(args.leg)))))
        return
    args.out.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    print(f"{platform.node()}: {os.cpu_count()} CPUs, load average {os.getloadavg()}; {time.strftime('%Y-%m-%d')}")
    if args.draws and args.device.startswith("cuda"):
        for line in draw_costs(args.device, args.seeds, args.threads):
            print(line, flush=True)
    if args.independence:
        for line in independence(args.device, args.threads):
            print(line, flush=True)
    legs = []
    for config in args.configs:
        warmup, measured = STEPS[args.steps][config]
        for mode in args.modes:
            steps = measured if mode == "group" else SINGLE_STEPS[args.steps]
            legs.append(Leg(config, mode, args.seeds, args.device, warmup, steps, args.seconds, args.threads))
    rows: list[dict[str, Any]] = []
    for leg in legs:
        left = args.budget - (time.perf_counter() - began)
        if left < 3 * leg.seconds:
            print(f"skipped (budget): {leg.config} {leg.mode}", flush=True)
            continue
        command = [sys.executable, __file__, "--out", str(args.out), "--leg", json.dumps(asdict(leg))]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=min(left, 300), check=False)
            if done.returncode != 0:
                rows.append({**asdict(leg), "error": done.stderr.strip().splitlines()[-1][:200]})
            else:
                rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        except subprocess.TimeoutExpired:
            rows.append({**asdict(leg), "error": "timed out"})
        print(json.dumps(rows[-1]), flush=True)
        with open(args.out / "seeds_gpu.csv", "w", newline="") as handle:
            fields = list(dict.fromkeys(key for row in rows for key in row))
            writer = csv.DictWriter(handle, fieldnames=fields)
            writer.writeheader()
            writer.writerows(rows)
    print(f"load average after: {os.getloadavg()}; {time.perf_counter() - began:.0f} s")
    print(_table(rows))


if __name__ == "__main__":
    main()

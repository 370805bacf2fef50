"""What a regression suite will cost before it runs: its multiruns, their resources, the CPU core-hours they need.

``lit-bench regress --suite zoo_all --launcher slurm --dry-run`` prints one line per multirun (the
``lit-bench -m`` command, how many runs, the launcher's resources per run) and the totals, with the default
``seeds_per_process``'s groups beside them (``lit_bench.control.seed_groups``). Core-hours come from
``results/reference/suite_cost.csv`` (CPU seconds per env step of each algorithm and env family, measured by
``benchmarks/suite_cost.py``) times each entry's budget and seeds; entries of a family without a measurement are
counted and named, never guessed. The grouped core-hours price an entry whose seeds train as batched groups at its
cost one process per seed times the table's CPU ratio of a seed in a batched group over one process per seed (rows
with a ``group_size``, both measured on the same env in one session: ``group_ratio``), the other entries one process
per seed; a batched entry without such a row is named and left out of the grouped total. With a time limit per job
(SLURM's ``timeout_min``), a run longer than it is requeued from its checkpoint: the plan says how often, and warns
where that exceeds ``max_num_timeout``. With a memory request per job (SLURM's ``mem_gb``), each off-policy entry's
run is sized (``memory_gb``: its replay buffer) and a multirun whose runs need more than ``mem_gb`` says how much
its jobs will ask for.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import yaml
from omegaconf import DictConfig, OmegaConf

from lit_bench.config.hydra_versions import VERSION_BASE
from lit_bench.config.resources import conf_dir
from lit_bench.control.cost_table import GroupRatios, family_of, group_ratio, group_ratios
from lit_bench.control.seed_groups import (
    STARTUP_CPU_S,
    as_job,
    config_refusal,
    config_unpaid,
    group_count,
    group_sizes,
    jobs_at_once,
)

if TYPE_CHECKING:
    from gymnasium import spaces

LAUNCHERS = conf_dir() / "hydra" / "launcher"
MIN_SCALED_BUDGET = 256  # a scaled-down entry still trains a few rollouts


@dataclass(frozen=True)
class Entry:
    """One suite entry as it will run: algorithm, env, budget (after ``--scale``), overrides."""

    algo: str
    env: str
    budget: int | None
    overrides: tuple[str, ...]


def scaled(entries: list[dict[str, Any]], scale: float) -> list[Entry]:
    """The suite's active entries with budgets multiplied by ``scale`` (at least ``MIN_SCALED_BUDGET``)."""
    if not scale > 0:
        raise SystemExit(f"--scale {scale}: must be a positive number (e.g. 0.001 for a test of the machinery)")
    found = []
    for entry in entries:
        if entry.get("skip"):
            continue
        budget = entry.get("budget")
        if budget is not None and scale != 1:
            budget = max(MIN_SCALED_BUDGET, round(budget * scale))
        found.append(Entry(entry["algo"], entry["env"], budget, tuple(entry.get("overrides", []))))
    return found


def groups(entries: list[Entry]) -> dict[tuple[str, int | None, tuple[str, ...]], list[str]]:
    """Entries sharing algorithm, budget and overrides: one multirun over their envs."""
    found: dict[tuple[str, int | None, tuple[str, ...]], list[str]] = {}
    for entry in entries:
        found.setdefault((entry.algo, entry.budget, entry.overrides), []).append(entry.env)
    return found


def group_cpu_s(
    measured: dict[int, float] | None, sizes: list[int], budget: int, per_step: float | None
) -> list[float] | None:
    """CPU seconds of each batched group of ``sizes`` seeds training ``budget`` env steps each (one process, one
    thread: its wall time too), at ``per_step`` CPU seconds per env step one process per seed times the measured
    ratio (``group_ratios``' entry); None where a size or ``per_step`` is not measured."""
    found = []
    for size in sizes:
        ratio = group_ratio(measured or {}, size)
        if ratio is None or per_step is None:
            return None
        found.append(size * budget * per_step * ratio)
    return found


def memory_of(entries: list[Entry]) -> dict[tuple[str, str], int | None]:
    """(algo, env) -> GB its run needs (``memory_gb``) for the entries whose algorithm keeps a replay
    buffer; None where the run cannot be sized here (its env's extra is not installed)."""
    from hydra import compose, initialize_config_dir

    buffered = [
        e
        for e in entries
        if "buffer_size" in (yaml.safe_load((conf_dir() / "algo" / f"{e.algo}.yaml").read_text()) or {})
    ]
    found: dict[tuple[str, str], int | None] = {}
    with initialize_config_dir(config_dir=str(conf_dir()), **VERSION_BASE):
        for entry in buffered:
            overrides = [f"algo={entry.algo}", f"env={entry.env}", *entry.overrides]
            try:
                found[(entry.algo, entry.env)] = memory_gb(compose("config", overrides, return_hydra_config=True))
            except Exception:  # a missing extra, an env that does not build here: the plan says "not sized"
                found[(entry.algo, entry.env)] = None
    return found


def resources(launcher: str | None, threads: int = 1) -> dict[str, Any]:
    """The per-run resources a launcher config asks for (cpus, memory, time limit, requeues)."""
    if launcher is None:
        return {"launcher": "joblib", "cpus": threads}
    path = LAUNCHERS / f"{launcher}.yaml"
    if not path.is_file():
        choices = ", ".join(sorted(p.stem for p in LAUNCHERS.glob("*.yaml")))
        raise SystemExit(f"--launcher: unknown launcher {launcher!r}; available: {choices}")
    config = yaml.safe_load(path.read_text()) or {}
    cpus = config.get("cpus_per_task", threads)
    remote = (config.get("ray") or {}).get("remote") or {}
    return {
        "launcher": launcher,
        "cpus": threads if not isinstance(cpus, int) else cpus,
        "mem_gb": config.get("mem_gb"),
        "timeout_min": config.get("timeout_min"),
        "max_num_timeout": config.get("max_num_timeout"),
        **({"ray_cpus": remote.get("num_cpus")} if remote else {}),
    }


def plan(
    entries: list[Entry],
    seeds: int,
    launcher: str | None,
    cost_table: dict[tuple[str, str], float],
    budget_of: dict[tuple[str, str], int] | None = None,
    memory: dict[tuple[str, str], int | None] | None = None,
    batchable: bool = True,
    group_table: GroupRatios | None = None,
) -> dict[str, Any]:
    """Per multirun: command words, runs, core-hours (None where no cost is measured), the GB its jobs ask for
    (with a launcher that requests memory: the most any of its runs needs, at least ``mem_gb``; None where not
    sized), its jobs under the default ``seeds_per_process=auto`` (``batchable``: whether its lit_sb3 runs may
    train in batched groups; parity runs never do) and their core-hours (``grouped_core_hours``: a batched
    multirun's groups at its cost one process per seed times ``group_table``'s ratio, by default
    ``group_ratios()``, None where a group size is not measured; the others one process per seed); and the totals.
    ``memory``: (algo, env) -> GB, by default ``memory_of(entries)``."""
    family = family_of()
    limits = resources(launcher)
    at_once = launcher_at_once(launcher)
    group_table = group_ratios() if group_table is None else group_table
    size = max(group_sizes(seeds, group_count("auto", seeds, at_once)))  # auto's largest group of a multirun
    unpaid: dict[tuple[str, int | None, tuple[str, ...]], str] = {}
    batched = batchable_multiruns(groups(entries), size, unpaid, group_table) if batchable else set()
    least = limits.get("mem_gb")
    if least is not None and memory is None:
        memory = memory_of(entries)
    lines, unmeasured, grouped_unmeasured = [], [], []
    total, longest, grouped_total, longest_group, left_out = 0.0, 0.0, 0.0, 0.0, 0.0
    for (algo, budget, overrides), envs in groups(entries).items():
        is_batched = (algo, budget, overrides) in batched  # (judged on the multirun's first env)
        sizes = group_sizes(seeds, group_count("auto", seeds, at_once, is_batched))
        hours, grouped_hours = 0.0, 0.0
        known, grouped_known = True, True
        for env in envs:
            steps = budget if budget is not None else (budget_of or {}).get((algo, env))
            per_step = cost_table.get((algo, family.get((algo, env), "classic")))
            if per_step is None or steps is None:
                known = False
                unmeasured.append(f"{algo}:{env}")
            else:
                run_hours = steps * per_step / 3600
                longest = max(longest, run_hours)
                hours += run_hours * seeds
                if not is_batched:  # one process per seed: as above
                    grouped_hours += run_hours * seeds
                    longest_group = max(longest_group, run_hours)
            if not is_batched:
                continue
            measured = group_table.get((algo, family.get((algo, env), "classic")))
            group_s = None if steps is None else group_cpu_s(measured, sizes, steps, per_step)
            if group_s is None:
                grouped_known = False
                grouped_unmeasured.append(f"{algo}:{env}")
                left_out += 0.0 if per_step is None or steps is None else steps * per_step * seeds / 3600
                continue
            grouped_hours += sum(group_s) / 3600
            longest_group = max(longest_group, max(group_s) / 3600)
        total += hours
        grouped_total += grouped_hours
        needs = {env: (memory or {}).get((algo, env), least) for env in envs}
        sized = [gb for gb in needs.values() if gb is not None]
        lines.append(
            {
                "algo": algo,
                "envs": envs,
                "budget": budget,
                "overrides": list(overrides),
                "runs": len(envs) * seeds,
                "batched": is_batched,
                "unpaid": unpaid.get((algo, budget, overrides)),  # why auto trains it one process per seed
                # the default seeds_per_process's groups
                "jobs": len(envs) * len(sizes),
                "core_hours": hours if known else None,
                "grouped_core_hours": grouped_hours if grouped_known and (known or is_batched) else None,
                "mem_gb": None if least is None else max([least, *sized]),
                "not_sized": [env for env, gb in needs.items() if least is not None and gb is None],
            }
        )
    return {
        "multiruns": lines,
        "runs": sum(line["runs"] for line in lines),
        "jobs": sum(line["jobs"] for line in lines),
        "core_hours": total,
        "longest_run_hours": longest,
        "unmeasured": unmeasured,
        "grouped_core_hours": grouped_total,  # entries without a measured grouped cost left out
        "grouped_unmeasured": grouped_unmeasured,
        "grouped_left_out_hours": left_out,  # those entries' core-hours one process per seed
        "longest_group_hours": longest_group,
        "resources": {**limits, "at_once": at_once},
    }


def launcher_at_once(launcher: str | None) -> int | None:
    """The jobs the launcher (a ``conf/hydra/launcher`` name; None: joblib) runs at once (``jobs_at_once``)."""
    path = LAUNCHERS / f"{launcher or 'lit_joblib'}.yaml"
    return jobs_at_once(OmegaConf.create(yaml.safe_load(path.read_text()) or {})) if path.is_file() else None


def batchable_multiruns(
    multiruns: dict[tuple[str, int | None, tuple[str, ...]], list[str]],
    size: int = 2,
    unpaid: dict[tuple[str, int | None, tuple[str, ...]], str] | None = None,
    group_table: GroupRatios | None = None,
) -> set[tuple[str, int | None, tuple[str, ...]]]:
    """The multiruns (``groups``' keys) whose lit_sb3 runs ``seeds_per_process=auto`` trains in batched groups:
    ``config_refusal`` on the config of each one's algorithm, first env and overrides, and groups of ``size`` seeds
    that pay (``config_unpaid`` with ``group_table``'s ratios; why not, per multirun, into ``unpaid``)."""
    from hydra import compose, initialize_config_dir

    found = set()
    with initialize_config_dir(config_dir=str(conf_dir()), **VERSION_BASE):
        for (algo, budget, overrides), envs in multiruns.items():
            try:
                config = compose("config", [f"algo={algo}", f"env={envs[0]}", *overrides], return_hydra_config=True)
                with as_job(config):
                    if config_refusal(config) is not None:
                        continue
                why = config_unpaid(config, size, group_table)
                if why is None:
                    found.add((algo, budget, overrides))
                elif unpaid is not None:
                    unpaid[(algo, budget, overrides)] = why
            except Exception:  # a config that does not compose here: counted ungrouped
                continue
    return found


def describe(result: dict[str, Any], nodes: tuple[int, ...] = (1, 10, 50), cores_per_node: int = 32) -> str:
    """The plan as text: one line per multirun, then totals one process per seed and grouped (the default
    ``seeds_per_process=auto``) side by side, requeues, and the wall time of both with the launcher's jobs at once
    here and on N nodes (one job per core, perfect packing: the longest run, or group, bounds it from below)."""
    limits = result["resources"]
    out = [
        f"resources per run ({limits['launcher']}): {limits['cpus']} CPU"
        + (f", {limits['mem_gb']} GB" if limits.get("mem_gb") else "")
        + (f", time limit {limits['timeout_min']} min" if limits.get("timeout_min") else "")
    ]
    for line in result["multiruns"]:
        budget = line["budget"] if line["budget"] is not None else "zoo"
        extra = f" {' '.join(line['overrides'])}" if line["overrides"] else ""
        memory = ""
        if line["mem_gb"] is not None and line["mem_gb"] > limits["mem_gb"]:
            memory = f", up to {line['mem_gb']} GB per job (replay buffer)"
        if line["not_sized"]:
            memory += f", memory of {','.join(line['not_sized'])} not sized (env not built here: extra missing?)"
        grouped = f"; grouped in {line['jobs']} jobs: {_hours(line['grouped_core_hours'])}" if line["batched"] else ""
        if line.get("unpaid"):
            grouped = f"; one process per seed: {line['unpaid']}"
        out.append(
            f"  algo={line['algo']} env={','.join(line['envs'])} budget={budget}{extra}: {line['runs']} runs, "
            f"{_hours(line['core_hours'])}{grouped}{memory}"
        )
    core_hours, grouped_hours = result["core_hours"], result["grouped_core_hours"]
    out.append(
        f"total, one process per seed: {len(result['multiruns'])} multiruns, {result['runs']} runs, "
        f"{core_hours:.1f} core-hours measured{_left_out(result['unmeasured'], 'cost')}"
    )
    saved = (result["runs"] - result["jobs"]) * STARTUP_CPU_S / 3600  # a cluster job is a process of its own
    at_once = limits.get("at_once")
    left_out = result["grouped_unmeasured"]
    out.append(
        f"total, grouped (seeds_per_process=auto, the default): {result['jobs']} jobs for {result['runs']} runs (a "
        f"batched config's seeds in up to {at_once or 'the cluster CPUs'} groups: the jobs run at once), "
        f"{grouped_hours:.1f} core-hours measured"
        + (f" against {core_hours - result['grouped_left_out_hours']:.1f} one process per seed" if left_out else "")
        + " (a batched group at one process per seed's cost times the CPU ratio group / alone measured at the largest"
        " group size up to its own)"
        + _left_out(left_out, "grouped cost, left out")
        + f"; {saved:.1f} core-hours of start-up saved"
    )
    timeout = limits.get("timeout_min")
    if timeout:
        requeues = math.ceil(result["longest_run_hours"] * 60 / timeout) - 1
        allowed = limits.get("max_num_timeout")
        out.append(
            f"longest run: {result['longest_run_hours']:.1f} h of CPU: {max(requeues, 0)} requeues at a "
            f"{timeout}-minute limit"
            + (
                f" (max_num_timeout {allowed}: raise it, hydra.launcher.max_num_timeout=...)"
                if allowed is not None and requeues > allowed
                else ""
            )
        )
    out.append(
        "wall time, one process per seed / grouped (the measured part"
        + (", grouped without the entries left out" if left_out else "")
        + "; more on a busy machine):"
    )
    places = [(f"{limits['launcher']}'s {at_once} jobs at once", at_once)] if at_once else []
    places += [(f"{n} node(s) of {cores_per_node} cores", n * cores_per_node) for n in nodes]
    for place, cores in places:
        alone = max(core_hours / min(cores, max(result["runs"], 1)), result["longest_run_hours"])
        together = max(grouped_hours / min(cores, max(result["jobs"], 1)), result["longest_group_hours"])
        out.append(f"  on {place}: >= {alone:.1f} h / >= {together:.1f} h wall")
    return "\n".join(out)


def _hours(hours: float | None) -> str:
    return "cost not measured" if hours is None else f"{hours:6.2f} core-h"


def _left_out(entries: list[str], what: str) -> str:
    """`` (+N entries without a measured <what>: a, b, ...)``, or nothing."""
    if not entries:
        return ""
    named = f"{', '.join(entries[:8])}{' ...' if len(entries) > 8 else ''}"
    return f" (+{len(entries)} entries without a measured {what}: {named})"


# ---- The memory one run needs, for a scheduler's request (``hydra/launcher=slurm``'s ``mem_gb``, ``regress
# --dry-run``).
#
# An off-policy run's memory is its replay buffer: ``buffer_size`` transitions of observations (twice, as SB3 keeps
# the next observations apart unless ``optimize_memory_usage``), actions, rewards and done flags, in the dtypes SB3
# stores (the env's observation dtype: uint8 frames, float64 MuJoCo states). A checkpoint that keeps the buffer
# (``checkpoint.replay_buffer``, the default) holds a copy of its filled part while it is written, and a resume holds
# the loaded one while it fills the new buffer: twice the buffer at the peak. On top, ``PROCESS_GB`` for the
# process itself (a DQN run on Atari with a 1,000-transition buffer peaks at 0.55 GB resident; the rest is headroom).
# On-policy rollouts are a few MB and not counted.

GIB = 2**30
PROCESS_GB = 2
_FLAGS_BYTES = 3 * 4  # rewards, dones, timeouts: float32 per transition


def _nbytes(space: spaces.Space[Any]) -> int:
    """Bytes of one element of ``space`` as SB3's replay buffer stores it."""
    from gymnasium import spaces  # (here: a plan that sizes no run never imports gymnasium)

    if isinstance(space, spaces.Dict):
        return sum(_nbytes(sub) for sub in space.spaces.values())
    return int(np.prod(space.shape or ())) * np.dtype(space.dtype).itemsize


_SPACES: dict[str, tuple[spaces.Space[Any], spaces.Space[Any]]] = {}  # env config -> its spaces (one build each)


def _spaces(cfg: DictConfig) -> tuple[spaces.Space[Any], spaces.Space[Any]]:
    """The training env's observation and action spaces (as the algorithm sees them: wrapped, frames stacked)."""
    from lit_bench.config.envs import make_envs

    env_cfg = OmegaConf.create({**OmegaConf.to_container(cfg.env, resolve=True), "n_envs": 1})  # type: ignore[dict-item]
    key = OmegaConf.to_yaml(env_cfg)
    if key not in _SPACES:
        name = OmegaConf.select(cfg, "hydra.runtime.choices.env", default=None) or cfg.env.get("id")
        train, evaluation = make_envs(env_cfg, str(name), 0, None)
        _SPACES[key] = (train.observation_space, train.action_space)
        train.close()
        evaluation.close()
    return _SPACES[key]


def replay_buffer_bytes(cfg: DictConfig) -> int:
    """Bytes of the run's full replay buffer (0 for an algorithm without one)."""
    buffer_size = cfg.algo.get("buffer_size")
    if buffer_size is None:
        return 0
    obs, action = _spaces(cfg)
    observations = _nbytes(obs) * (1 if cfg.algo.get("optimize_memory_usage") else 2)
    # SB3 stores float64 actions as float32 (ReplayBuffer._maybe_cast_dtype)
    actions = _nbytes(action) // 2 if np.dtype(action.dtype) == np.float64 else _nbytes(action)
    return int(buffer_size) * (observations + actions + _FLAGS_BYTES)


def memory_gb(cfg: DictConfig) -> int:
    """GB the run needs at its peak (whole GB, rounded up): the process, plus its replay buffer once, or twice when
    checkpoints keep it."""
    copies = 2 if cfg.get("checkpoint", {}).get("replay_buffer", True) else 1
    return math.ceil(PROCESS_GB + copies * replay_buffer_bytes(cfg) / GIB)

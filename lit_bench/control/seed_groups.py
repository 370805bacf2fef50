"""A sweep's seeds of one config trained in one process (``seeds_per_process``): the launch side.

Every launcher of the harness (joblib, submitit, Ray; ``hydra_plugins.lit_bench_launchers``) and so every sweeper
that launches through one (Hydra's basic sweeper, lit_bench's Optuna sweeper: a trial's ``hpo.seeds`` jobs are one
launch) hands its jobs to ``launch``: the jobs that differ only in ``seed`` become groups, each group is one job
(the first seed's overrides plus ``seed_group={seeds: [...], jobs: [...]}``: its seeds and the job numbers they have
ungrouped), and the group's result comes back as one ``JobReturn`` per seed, in the jobs' order, so that the sweep
table, the job records, lost-job handling and the sweepers see one entry per seed, as without groups. A launcher
numbers the jobs it is given by their place, so in a launch with groups a lone seed is a group of one too (it
carries its own job number); a job with no ``seed=<integer>`` to group by is launched alone under its number. The
group's process trains its seeds with ``lit_bench.run.group``.

``seeds_per_process``:

- ``1``: one process per seed (no groups);
- ``N``: at most N seeds of a config per process (each config's seeds in as few processes as that allows). Where
  ``lit_bench.run.batched.refusal`` allows it (``backend=lit``, one CPU device, an algorithm lit_sb3's
  ``SeedGroup`` batches, ...) the group's seeds train as one batched model: each seed's config records
  ``batched: true`` (its identity: a batched seed's numbers do not depend on its group but differ from the seed
  trained alone, its random streams being the group's) and it resumes only in a group. Otherwise they train one
  after another (``lit_bench.run.group``), each seed's run and numbers exactly those of its own process: the group
  saves the imports of a process per seed (``STARTUP_CPU_S``), which pays where a launcher starts a process per job
  (submitit, Ray); joblib already reuses its workers for the following jobs;
- ``auto`` (the default): meant to group where batched training applies, split into as many groups as the
  launcher runs jobs at once; not turned on yet, so ``auto`` is ``1`` today (seeds one after another in one
  process do not pay under joblib and cost a cluster its parallelism).

Multi-process runs (``trainer.devices`` > 1) are never grouped: Lightning starts their further processes from the
command line, one run per command.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hydra.core.utils import JobReturn, JobStatus
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from lit_bench.config.checks import ConfigError

# CPU seconds a process pays for its imports before a run's first step (lit_bench's run, Lightning, SB3, lit_sb3's
# PPO): 3.2, 3.8 and 4.0 s measured, `python -c "import lit_bench.cli.bench, lit_bench.run.fit, ..."`, 2 cores at
# a load of 2; a group saves it for every process fewer (lit_bench.control.run_plan). A whole job process saves
# more: 4 tiny seeds on submitit's local executor took 40.3 / 42.6 CPU s in 4 jobs and 14.6 / 12.4 in one
# (seeds_per_process=1 / 4 interleaved, 2 cores at a load of 13-15): ~9 s per process; the plan counts the imports.
STARTUP_CPU_S = 3.7
KEY = "seeds_per_process"
GROUP_KEY = "seed_group"  # the config key a group's job carries (never part of a run's identity)
SEED = "seed"


def seeds_per_process(value: Any) -> int | str:
    """``auto`` or a positive number of seeds per process; a bad value is one line naming the key and the choices."""
    if value == "auto":
        return "auto"
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    raise ConfigError(f"{KEY}={value}: one of auto, 1 (one process per seed), 2, 3, ... (seeds per process)")


@dataclass(frozen=True)
class Member:
    """One seed of a group: the job it is without groups."""

    seed: int
    num: int  # its job number
    overrides: tuple[str, ...]  # its job's overrides


@dataclass(frozen=True)
class Group:
    """One job of the launch: one seed (``members`` of one: the job as it was), or several seeds of one config."""

    members: tuple[Member, ...]

    @property
    def seeded(self) -> bool:
        """Whether its job can carry its seeds and their job numbers (not a job without ``seed=<integer>``)."""
        return self.members[0].seed >= 0

    @property
    def overrides(self) -> list[str]:
        """The job's overrides: the first seed's, and its seeds and their job numbers (a launch of groups numbers
        its jobs by their place in it, not by the seeds' numbers: a group of one carries its own too)."""
        first = list(self.members[0].overrides)
        if not self.seeded:
            return first
        seeds = ",".join(str(m.seed) for m in self.members)
        jobs = ",".join(str(m.num) for m in self.members)
        return [*first, f"{GROUP_KEY}={{seeds:[{seeds}],jobs:[{jobs}]}}"]


@dataclass(frozen=True)
class SeedReturn:
    """What a group's process returns for one of its seeds (plain data: it comes back through a pickle)."""

    num: int
    run_dir: str | None
    status: str  # a JobStatus name: COMPLETED (value: the objective, NaN or None) or FAILED (value: the error)
    value: Any


def _seed_of(override: str) -> int | None:
    key, _, value = override.partition("=")
    if key != SEED:
        return None
    try:
        seed = int(value)
    except ValueError:
        return None
    return seed if seed >= 0 else None  # (a negative seed fails its run in one line)


def _config_key(overrides: Sequence[str]) -> tuple[tuple[str, ...], int] | None:
    """(the overrides with the seed's replaced by a marker, the seed), or None for a job that cannot be grouped: no
    ``seed=<integer>`` among its overrides (the job reports a bad seed itself, in one line), or one already grouped."""
    seeds = [(i, _seed_of(o)) for i, o in enumerate(overrides) if o.partition("=")[0] == SEED]
    if len(seeds) != 1 or seeds[0][1] is None or any(o.startswith(f"{GROUP_KEY}=") for o in overrides):
        return None
    at, seed = seeds[0]
    assert seed is not None
    return (*overrides[:at], f"{SEED}=*", *overrides[at + 1 :]), seed


def _split(members: list[Member], groups: int) -> list[tuple[Member, ...]]:
    """``members`` in ``groups`` consecutive groups whose sizes differ by one at most."""
    size, extra = divmod(len(members), groups)
    out, at = [], 0
    for k in range(groups):
        take = size + (1 if k < extra else 0)
        out.append(tuple(members[at : at + take]))
        at += take
    return out


def group_jobs(
    job_overrides: Sequence[Sequence[str]], initial_job_idx: int, groups_of: Callable[[list[str], int], int]
) -> list[Group]:
    """The launch's jobs as groups, ordered by their first job. Jobs whose overrides differ only in ``seed`` are one
    config; ``groups_of(overrides, n)`` says into how many groups its ``n`` seeds go (1: all in one; ``n``: none
    grouped). A seed that appears twice in a config, or a job that cannot be grouped, is a group of its own."""
    configs: dict[tuple[str, ...], list[Member]] = {}
    alone: list[Member] = []
    for num, overrides in enumerate(job_overrides, start=initial_job_idx):
        member = Member(seed=-1, num=num, overrides=tuple(overrides))
        key = _config_key(overrides)
        if key is None:
            alone.append(member)
            continue
        shape, seed = key
        seen = configs.setdefault(shape, [])
        if any(m.seed == seed for m in seen):
            alone.append(Member(seed, num, tuple(overrides)))
        else:
            seen.append(Member(seed, num, tuple(overrides)))
    found = [Group((m,)) for m in alone]
    for members in configs.values():
        count = min(max(groups_of(list(members[0].overrides), len(members)), 1), len(members))
        found += [Group(part) for part in _split(members, count)]
    return sorted(found, key=lambda g: g.members[0].num)


def group_count(setting: int | str, seeds: int) -> int:
    """Into how many groups a config's ``seeds`` go under ``setting`` (``seeds``: none grouped). ``auto`` is not
    turned on yet (module docstring): none grouped."""
    if setting == "auto":
        return seeds
    assert isinstance(setting, int)
    return math.ceil(seeds / setting)


def members(cfg: DictConfig) -> list[tuple[int, int]] | None:
    """A group's (seed, job number) pairs, from its job's config; None for a job of one seed."""
    group = cfg.get(GROUP_KEY)
    if not group:
        return None
    seeds, jobs = list(group["seeds"]), list(group["jobs"])
    if len(seeds) != len(jobs) or not seeds:
        raise ConfigError(f"{GROUP_KEY}: set by the launcher ({{seeds: [...], jobs: [...]}}), got {group}")
    return [(int(s), int(j)) for s, j in zip(seeds, jobs)]


def member_overrides(overrides: Sequence[str], seed: int) -> list[str]:
    """A seed's own job overrides, from its group's: ``seed=<seed>`` and no ``seed_group``."""
    kept = [o for o in overrides if not o.startswith(f"{GROUP_KEY}=")]
    return [f"{SEED}={seed}" if o.partition("=")[0] == SEED else o for o in kept]


def set_job(hydra: DictConfig, num: int, overrides: list[str], output_dir: str | None = None) -> None:
    """A Hydra config (its ``hydra`` node) as the job ``num``'s: its overrides, and its output directory if given."""
    with read_write(hydra.job), read_write(hydra.overrides), read_write(hydra.runtime), open_dict(hydra.runtime):
        hydra.job.num, hydra.overrides.task = num, overrides
        if output_dir is not None:
            hydra.runtime.output_dir = output_dir


def member_config(job_config: DictConfig, seed: int, num: int) -> DictConfig:
    """A group's job config as the config of one of its seeds' jobs (a config with its ``hydra`` node too)."""
    config = copy.deepcopy(job_config)
    with read_write(config), open_dict(config):
        config.seed = seed
        config[GROUP_KEY] = None
    if "hydra" in config:
        set_job(config.hydra, num, member_overrides(list(config.hydra.overrides.task), seed))
    return config


def _member_return(result: JobReturn, member: Member, seed_return: SeedReturn | None) -> JobReturn:
    """One seed's ``JobReturn``, as its own job would have returned it."""
    hydra_cfg = copy.deepcopy(result.hydra_cfg)
    if hydra_cfg is not None:
        run_dir = None if seed_return is None else seed_return.run_dir
        node = hydra_cfg.hydra if "hydra" in hydra_cfg else hydra_cfg  # (a lost job's is the hydra node itself)
        set_job(node, member.num, list(member.overrides), None if run_dir is None else str(run_dir))
    cfg = copy.deepcopy(result.cfg)
    if cfg is not None:
        with read_write(cfg), open_dict(cfg):
            cfg.seed, cfg[GROUP_KEY] = member.seed, None
    status, value = (
        (result.status, result._return_value)
        if seed_return is None
        else (JobStatus[seed_return.status], seed_return.value)
    )
    return JobReturn(
        overrides=list(member.overrides),
        cfg=cfg,
        hydra_cfg=hydra_cfg,
        working_dir=result.working_dir,
        task_name=result.task_name,
        status=status,
        _return_value=value,
    )


def expand(groups: Sequence[Group], results: Sequence[JobReturn]) -> list[JobReturn]:
    """One ``JobReturn`` per seed from one per group, in the order of the jobs before grouping."""
    returns: list[tuple[int, JobReturn]] = []
    for group, result in zip(groups, results):
        value = result._return_value if result.status == JobStatus.COMPLETED else None
        if not group.seeded:  # launched as it was
            returns.append((group.members[0].num, result))
        elif isinstance(value, list):  # the group's process returned: each seed's own (None: it did not start)
            by_num = {r.num: r for r in value}
            for m in group.members:
                own = by_num.get(m.num, SeedReturn(m.num, None, "COMPLETED", None))
                returns.append((m.num, _member_return(result, m, own)))
        else:  # the group failed or never ran (a lost job): each of its seeds so
            returns += [(m.num, _member_return(result, m, None)) for m in group.members]
    return [r for _, r in sorted(returns, key=lambda pair: pair[0])]


def launch(
    launcher: Any,
    job_overrides: Sequence[Sequence[str]],
    initial_job_idx: int,
    dispatch: Callable[[Sequence[Sequence[str]], int], Sequence[JobReturn]],
) -> Sequence[JobReturn]:
    """Launch ``job_overrides`` through ``dispatch`` (the launcher's own launch) in groups of seeds (module
    docstring); a bad ``seeds_per_process`` ends the command in one line."""
    import sys

    try:
        setting = seeds_per_process(launcher.config.get(KEY, 1))
    except ConfigError as error:
        print(f"Error: {error}", file=sys.stderr, flush=True)
        sys.exit(1)
    if setting == 1 or len(job_overrides) < 2:
        return dispatch(job_overrides, initial_job_idx)

    def groups_of(overrides: list[str], seeds: int) -> int:
        job_config = launcher.hydra_context.config_loader.load_sweep_config(launcher.config, overrides)
        if OmegaConf.select(job_config, "trainer.devices", default=1) not in (1, None, "auto"):
            return seeds  # never grouped (module docstring), whatever the setting
        return group_count(setting, seeds)

    groups = group_jobs(job_overrides, initial_job_idx, groups_of)
    if len(groups) == len(job_overrides):
        return dispatch(job_overrides, initial_job_idx)
    seeded = [g for g in groups if g.seeded]
    results = dict(zip(seeded, dispatch([g.overrides for g in seeded], initial_job_idx)))
    for group in groups:  # a job without a seed to group by (it fails on its seed in one line): under its number
        if not group.seeded:
            results[group] = dispatch([group.overrides], group.members[0].num)[0]
    return expand(groups, [results[g] for g in groups])

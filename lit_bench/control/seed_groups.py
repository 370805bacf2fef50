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
  ``batched: true`` (its identity: a batched seed's numbers do not depend on its group; it draws the random numbers
  of the seed trained alone, whose numbers it has to float32 rounding, not to the last bit: the batched kernels
  round differently) and it resumes only in a group. Otherwise they train one
  after another (``lit_bench.run.group``), each seed's run and numbers exactly those of its own process: the group
  saves the imports of a process per seed (``STARTUP_CPU_S``), which pays where a launcher starts a process per job
  (submitit, Ray); joblib already reuses its workers for the following jobs;
- ``auto`` (the default): batched groups where they apply, one process per seed elsewhere (:func:`auto_groups`). A
  config whose seeds :func:`config_refusal` allows (the config alone: no torch, Lightning or SB3 is imported to
  launch) has its seeds split into as many groups as the launcher runs jobs at once (:func:`jobs_at_once`), each
  of 2 seeds or more: every core stays busy and each group trains as one model. A seed that already has an
  ordinary run directory keeps it (its own process: completed, resumable and failed runs skip or resume as
  before, never retrained batched), and a seed that already has a batched one keeps that (a group of one, if it
  is alone). The group's process still checks the whole ``refusal`` (lit_sb3's own checks on the built env) and
  trains one seed after another where it refuses.

Multi-process runs (``trainer.devices`` > 1) are never grouped: Lightning starts their further processes from the
command line, one run per command.
"""

from __future__ import annotations

import contextlib
import copy
import math
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from hydra.core.utils import JobReturn, JobStatus
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from lit_bench.config.checks import ConfigError
from lit_bench.config.identity import BATCHED, resolved, run_path
from lit_bench.store.rundir import RunDir

# CPU seconds a process pays for its imports before a run's first step (lit_bench's run, Lightning, SB3, lit_sb3's
# PPO): 3.2, 3.8 and 4.0 s measured, `python -c "import lit_bench.cli.bench, lit_bench.run.fit, ..."`, 2 cores at
# a load of 2; a group saves it for every process fewer (lit_bench.control.run_plan). A whole job process saves
# more: 4 tiny seeds on submitit's local executor took 40.3 / 42.6 CPU s in 4 jobs and 14.6 / 12.4 in one
# (seeds_per_process=1 / 4 interleaved, 2 cores at a load of 13-15): ~9 s per process; the plan counts the imports.
STARTUP_CPU_S = 3.7
KEY = "seeds_per_process"
GROUP_KEY = "seed_group"  # the config key a group's job carries (never part of a run's identity)
SEED = "seed"
# auto batches a config's seeds only where a seed in a batched group costs at most this share of its CPU alone
# (results/reference/suite_cost.csv's ratio): off-policy groups of the Zoo's [400, 300] networks measured 0.84-1.25,
# their products compute-bound (a group does each seed's arithmetic; it saves only the per-step Python work), on a
# machine whose load moves single measurements by +-30%: below 0.9 the group pays even at the noise's edge
AUTO_MAX_RATIO = 0.9
# lit_sb3's classes that seed groups batch (lit_sb3.seeds.group.BATCHED's keys, which import torch; a test checks
# that the two agree)
BATCHED_ALGORITHMS = ("PPO", "A2C", "DQN", "QRDQN", "SAC", "TQC", "TD3", "DDPG")


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
    batched: bool = False  # auto's word: train them batched, even one seed alone (it has a batched run)

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
        batched = ",batched:true" if self.batched else ""
        return [*first, f"{GROUP_KEY}={{seeds:[{seeds}],jobs:[{jobs}]{batched}}}"]


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


def group_sizes(seeds: int, groups: int) -> list[int]:
    """The sizes of ``groups`` groups of ``seeds`` seeds, which differ by one at most (the larger first)."""
    size, extra = divmod(seeds, groups)
    return [size + (1 if k < extra else 0) for k in range(groups)]


def _split(members: list[Member], groups: int) -> list[tuple[Member, ...]]:
    """``members`` in ``groups`` consecutive groups whose sizes differ by one at most."""
    out, at = [], 0
    for take in group_sizes(len(members), groups):
        out.append(tuple(members[at : at + take]))
        at += take
    return out


def group_jobs(
    job_overrides: Sequence[Sequence[str]], initial_job_idx: int, split: Callable[[list[Member]], Sequence[Group]]
) -> list[Group]:
    """The launch's jobs as groups, ordered by their first job. Jobs whose overrides differ only in ``seed`` are one
    config, whose seeds ``split`` groups (``counted``: into a number of groups). A seed that appears twice in a
    config, or a job that cannot be grouped, is a group of its own."""
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
        found += split(members)
    return sorted(found, key=lambda g: g.members[0].num)


def counted(members: list[Member], groups: int, batched: bool = False) -> list[Group]:
    """``members`` in ``groups`` consecutive groups (at least one, at most one per seed)."""
    return [Group(part, batched) for part in _split(members, min(max(groups, 1), len(members)))]


def group_count(setting: int | str, seeds: int, at_once: int | None = None, batchable: bool = True) -> int:
    """Into how many groups a config's ``seeds`` go under ``setting`` (``seeds``: none grouped). ``auto``: as many
    as ``at_once`` (the jobs the launcher runs at once; None: 1), each of 2 seeds or more, where the config's seeds
    are ``batchable`` (:func:`config_refusal`); none grouped otherwise."""
    if setting == "auto":
        if not batchable or seeds < 2:
            return seeds
        return max(1, min(at_once or 1, seeds // 2))
    assert isinstance(setting, int)
    return math.ceil(seeds / setting)


def config_refusal(cfg: DictConfig) -> str | None:
    """Why a config's seeds cannot train as one batched model, read from the config alone, in one line naming the
    setting (None: they may). Imports no torch, Lightning or SB3: ``auto`` decides with it in the launching process;
    ``lit_bench.run.batched.refusal`` adds lit_sb3's own checks in the group's process. Resolve ``cfg`` as its job's
    (:func:`as_job`)."""
    algo = cfg.algo
    if str(cfg.backend) != "lit":
        return f"backend={cfg.backend}: seed groups batch lit_sb3's models (backend=lit)"
    if cfg.get("parity"):
        return (
            "parity=true: a parity run is SB3's exact run (torch's Adam, one model per process); seed groups batch "
            "their own optimizer step, so parity runs train one process per seed"
        )
    trainer = cfg.get("trainer") or {}
    if str(trainer.get("accelerator", "cpu")) != "cpu" or trainer.get("devices", 1) not in (1, "1", "auto"):
        return (
            f"trainer.accelerator={trainer.get('accelerator')}, trainer.devices={trainer.get('devices')}: seed "
            f"groups train on one CPU (trainer.accelerator=cpu, trainer.devices=1)"
        )
    if str(trainer.get("precision", "32-true")) not in ("32-true", "32", "None"):
        return f"trainer.precision={trainer.get('precision')}: seed groups train in float32 (32-true)"
    module, _, name = str(algo._target_).rpartition(".")
    if name not in BATCHED_ALGORITHMS or not module.startswith("lit_sb3"):
        return f"algo={cfg.algo_name}: seed groups batch {', '.join(BATCHED_ALGORITHMS)}, not {name}"
    if str(algo.get("policy", "MlpPolicy")) != "MlpPolicy":
        return f"algo.policy={algo.policy}: seed groups batch MlpPolicy (CNN and multi-input policies: not yet)"
    if algo.get("use_sde"):
        return "algo.use_sde=true: seed groups do not batch gSDE exploration yet"
    if cfg.eval.get("video") or cfg.eval.get("video_every"):
        return "eval.video / eval.video_every: a batched group records no videos yet"
    extra = (cfg.get("logger") or {}).get("extra") or {}
    if extra:
        return f"logger={','.join(str(k) for k in extra)}: a batched group writes CSV metrics only (logger=csv)"
    off_policy = "buffer_size" in algo
    if off_policy and not cfg.checkpoint.get("replay_buffer", True):
        return "checkpoint.replay_buffer=false: a batched seed's checkpoint always holds its replay buffer"
    return _off_policy_refusal(cfg) if off_policy else None


def _off_policy_refusal(cfg: DictConfig) -> str | None:
    """lit_sb3's off-policy refusals that the config shows (``lit_sb3.seeds.off_policy.check_off_policy_group``)."""
    algo = cfg.algo
    train_freq = algo.get("train_freq")
    if not isinstance(train_freq, int) and train_freq is not None and str(list(train_freq)[-1]) != "step":
        return f"train_freq: seed groups batch step-based train_freq only for {algo._target_.rpartition('.')[2]}"
    if int(algo.get("n_steps") or 1) != 1:
        return f"n_steps: seed groups batch 1-step returns only for {algo._target_.rpartition('.')[2]}"
    if algo.get("replay_buffer_class") is not None:
        return "replay_buffer_class: seed groups batch the plain ReplayBuffer only"
    if cfg.env.get("normalize") is not None:
        return "env.normalize: seed groups batch off-policy algorithms without VecNormalize"
    return None


def jobs_at_once(launcher_node: DictConfig) -> int | None:
    """How many jobs a launcher (its ``hydra.launcher`` config) runs at once, as ``auto`` splits a config's seeds:
    joblib: its ``n_jobs`` (-1: one per core); submitit's local executor: the cores (it starts every job at once;
    more would only share them); SLURM: ``array_parallelism``, the most jobs of the array it runs at once (lower it
    to group more); None where the config does not say (Ray: the cluster's CPUs, which the launcher reads once it is
    connected; the basic launcher runs every job in its own process and never groups)."""
    target = str(launcher_node.get("_target_", ""))
    if "joblib" in target.lower():
        import joblib

        n_jobs = launcher_node.get("n_jobs", -1)
        return int(joblib.effective_n_jobs(int(n_jobs) if n_jobs is not None else -1))
    if target.endswith("LocalLauncher"):
        return os.cpu_count() or 1
    if target.endswith("SlurmLauncher"):
        return int(launcher_node.get("array_parallelism") or 1)
    return None


@contextlib.contextmanager
def as_job(job_config: DictConfig) -> Iterator[None]:
    """Hydra's config of this process as ``job_config``'s (a job's config, with its ``hydra`` node), so that its
    names and run directory resolve as in its own process (the launching process holds the sweep's)."""
    from hydra.core.hydra_config import HydraConfig

    hydra_config = HydraConfig.instance()
    launcher_config = hydra_config.cfg
    hydra_config.set_config(job_config)
    try:
        yield
    finally:
        hydra_config.cfg = launcher_config


def existing_kinds(job_config: DictConfig, seeds: Sequence[int]) -> dict[int, str]:
    """``ordinary`` or ``batched`` per seed of this config that already has a run of that kind in its run directory
    (completed, resumable or failed: a summary or a checkpoint there), the ordinary first; seeds with neither (or a
    config that does not resolve here: its job reports why) are left out. Every seed of a config shares its
    directory's parent (``<config>/seed_<n>``), resolved once per kind."""
    config = copy.deepcopy(job_config)
    found: dict[int, str] = {}
    for kind, batched in (("ordinary", False), ("batched", True)):
        with read_write(config), open_dict(config):
            config[BATCHED] = batched
        try:
            with as_job(config):
                parent = run_path(resolved(config)).parent
        except Exception:  # its job fails on it, in one line
            return {}
        for seed in seeds:
            run_dir = RunDir(parent / f"seed_{seed}")
            if seed not in found and (run_dir.summary.exists() or run_dir.checkpoints.is_dir()):
                found[seed] = kind
    return found


def unpaid_group(
    algo: str, env: str, size: int, measured: dict[tuple[str, str], dict[int, float]] | None = None
) -> str | None:
    """Why ``auto`` trains ``algo``'s seeds on ``env`` one process each although they batch: a seed in a batched group
    of ``size`` costs more than ``AUTO_MAX_RATIO`` of its CPU alone (None: it pays, or nothing is known). The ratio
    is the cost table's for the algorithm on the env's family (``cost_table.group_ratio``: the largest measured
    group size up to ``size``, else the smallest measured); unmeasured there, it is modelled as the median of the
    algorithm's measured families (its networks and updates are the same code on each). ``measured``: the table's
    ratios (``cost_table.group_ratios()`` by default)."""
    import statistics

    from lit_bench.control.cost_table import family_of, group_ratio, group_ratios

    family = next((f for (_, e), f in family_of().items() if e == env), None)
    measured = group_ratios() if measured is None else measured

    def at_size(by_size: dict[int, float]) -> float:
        return group_ratio(by_size, size) or by_size[min(by_size)]

    own = measured.get((algo, family or ""))
    if own:
        ratio, where = at_size(own), f"measured on the {family} family"
    else:
        others = [at_size(by_size) for (name, _), by_size in measured.items() if name == algo and by_size]
        if not others:
            return None
        ratio, where = statistics.median(others), f"modelled: the median over {algo}'s measured env families"
    if ratio <= AUTO_MAX_RATIO:
        return None
    return (
        f"a seed of {algo} in a batched group costs {ratio:.2f}x its CPU alone ({where}, "
        f"results/reference/suite_cost.csv; auto batches at {AUTO_MAX_RATIO}x or less)"
    )


def config_unpaid(
    cfg: DictConfig, size: int, measured: dict[tuple[str, str], dict[int, float]] | None = None
) -> str | None:
    """:func:`unpaid_group` of a composed job config (with its ``hydra`` node) for groups of ``size`` seeds."""
    choices = cfg.hydra.runtime.choices
    algo = str(OmegaConf.select(cfg, "algo.base", default=None) or choices.algo)
    return unpaid_group(algo, str(choices.env), size, measured)


def auto_groups(members: list[Member], job_config: DictConfig, at_once: int | None) -> list[Group]:
    """``auto``'s groups of one config's seeds (``job_config``: its first seed's job config; module docstring): one
    job per seed where :func:`config_refusal` refuses the config, where batching does not pay (:func:`config_unpaid`)
    and for each seed with an ordinary run; the others batched, in ``group_count`` groups (a seed alone with a
    batched run: a batched group of one)."""
    with as_job(job_config):
        refused = config_refusal(job_config) is not None
    if not refused and len(members) >= 2:
        size = math.ceil(len(members) / group_count("auto", len(members), at_once))
        refused = config_unpaid(job_config, size) is not None
    if refused:
        return [Group((m,)) for m in members]
    kinds = existing_kinds(job_config, [m.seed for m in members])
    groups = [Group((m,)) for m in members if kinds.get(m.seed) == "ordinary"]
    rest = [m for m in members if kinds.get(m.seed) != "ordinary"]
    if len(rest) < 2:
        return [*groups, *(Group((m,), batched=kinds.get(m.seed) == "batched") for m in rest)]
    return [*groups, *counted(rest, group_count("auto", len(rest), at_once), batched=True)]


def members(cfg: DictConfig) -> list[tuple[int, int]] | None:
    """A group's (seed, job number) pairs, from its job's config; None for a job of one seed."""
    group = cfg.get(GROUP_KEY)
    if not group:
        return None
    seeds, jobs = list(group["seeds"]), list(group["jobs"])
    if len(seeds) != len(jobs) or not seeds:
        raise ConfigError(f"{GROUP_KEY}: set by the launcher ({{seeds: [...], jobs: [...]}}), got {group}")
    return [(int(s), int(j)) for s, j in zip(seeds, jobs)]


def launched_batched(cfg: DictConfig) -> bool:
    """Whether the launcher asked the group's job to train its seeds batched even alone (``auto``)."""
    return bool((cfg.get(GROUP_KEY) or {}).get("batched"))


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
    docstring); a bad ``seeds_per_process`` ends the command in one line. A launcher may say how many jobs it runs
    at once with a ``jobs_at_once()`` method (Ray), else :func:`jobs_at_once` reads its config."""
    import sys

    try:
        setting = seeds_per_process(launcher.config.get(KEY, 1))
    except ConfigError as error:
        print(f"Error: {error}", file=sys.stderr, flush=True)
        sys.exit(1)
    if setting == 1 or (len(job_overrides) < 2 and setting != "auto"):
        return dispatch(job_overrides, initial_job_idx)
    at_once: int | None = None
    if setting == "auto":
        own = getattr(launcher, "jobs_at_once", None)
        at_once = own() if callable(own) else jobs_at_once(launcher.config.hydra.launcher)

    def split(members: list[Member]) -> Sequence[Group]:
        job_config = launcher.hydra_context.config_loader.load_sweep_config(launcher.config, list(members[0].overrides))
        if setting == "auto":
            return auto_groups(members, job_config, at_once)
        if OmegaConf.select(job_config, "trainer.devices", default=1) not in (1, None, "auto"):
            return counted(members, len(members))  # never grouped (module docstring), whatever the setting
        return counted(members, group_count(setting, len(members)))

    groups = group_jobs(job_overrides, initial_job_idx, split)
    if all(len(g.members) == 1 and not g.batched for g in groups):
        return dispatch(job_overrides, initial_job_idx)
    seeded = [g for g in groups if g.seeded]
    results = dict(zip(seeded, dispatch([g.overrides for g in seeded], initial_job_idx)))
    for group in groups:  # a job without a seed to group by (it fails on its seed in one line): under its number
        if not group.seeded:
            results[group] = dispatch([group.overrides], group.members[0].num)[0]
    return expand(groups, [results[g] for g in groups])

"""What a ``lit-bench`` command will cost before it runs, and the budgets that cannot show learning.

The command line is expanded as Hydra's basic sweeper does (the product of its ``a,b,c`` and ``range(...)`` values),
each distinct config (seeds aside) composed once, and priced like ``regress --dry-run`` prices a suite
(``lit_bench.control.suite_plan``): CPU seconds per env step times the env steps. The speed is this machine's own
where it has completed runs of the same algorithm, env and backend under ``out_dir`` (the median ``cpu_fps`` of
their ``summary.json``, training only, as below), else the algorithm's on the env's family, measured once in
``results/reference/suite_cost.csv`` (one env per family: CartPole at Acrobot's speed, ~8x too slow for PPO). The
wall time is that CPU time spread over the launcher's parallel jobs on this machine (joblib: ``n_jobs``, one per core
by default; basic: one), bounded below by the longest run; a busy machine takes longer. Beside it, the sweep's
``seeds_per_process`` groups: a config whose seeds train as batched groups at its speed one process per seed times
the table's CPU ratio of a seed in a batched group over one process per seed (``cost_table.group_ratio``; a batched
run's ``cpu_fps`` is its group's, so this machine's batched runs are not speeds of their own), named and left out
where the table has none. A sweep always prints its plan; a single run only when it is
estimated to take more than ``LONG_RUN_S``. Commands this cannot expand (an Optuna sweeper's search space, a glob)
are planned only as an Optuna study of lit_bench's sweeper (``_study_plan``).

A budget that makes no gradient step (``lit_bench.config.budget``) refuses the command in one line per config,
exit 2, before Hydra makes any directory (``--allow-no-learning`` runs it anyway, e.g. a test of the machinery); the
budget warnings of a sweep are printed here once per config, not once per run.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from lit_bench.config.budget import PLANNED_ENV, budget_warnings, no_learning, trained_steps
from lit_bench.config.checks import ConfigError
from lit_bench.config.hydra_versions import VERSION_BASE
from lit_bench.config.identity import CONF_DIR, algo_dir
from lit_bench.control.seed_groups import (
    as_job,
    config_refusal,
    group_count,
    group_sizes,
    jobs_at_once,
    seeds_per_process,
    unpaid_group,
)
from lit_bench.store.format import SUMMARY

LONG_RUN_S = 300.0  # a single run estimated longer than this prints its plan
BASIC_SWEEPER = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"
OPTUNA_SWEEPER = "hydra_plugins.lit_optuna_sweeper.sweeper.LitOptunaSweeper"
SEED_KEYS = ("seed",)


class PlanUnavailable(ValueError):
    """The command's config does not compose (the message: Hydra's, on one line)."""


@dataclass
class Config:
    """One distinct config of the command (all its seeds)."""

    algo: str
    env: str
    backend: str
    budget: int
    steps: int  # env steps a run trains (config.budget.trained_steps): on-policy, the budget in whole rollouts
    runs: int
    cpu_s: float | None  # None: no measured speed for this algorithm and env family
    measured_on: str | None  # the env its speed was measured on (one per family), or HERE
    problems: list[str] = field(default_factory=list)  # no gradient step: refused
    warnings: list[str] = field(default_factory=list)
    groups: int = 0  # the jobs its runs go into under seeds_per_process (runs: one per seed)
    batchable: bool = False  # its seeds may train as one batched model (seed_groups.config_refusal)
    # a seed's CPU per env step in a batched group over one process per seed's, by group size
    # (cost_table.group_ratios), and the env they were measured on; None: not measured
    group_ratios: dict[int, float] | None = None
    group_measured_on: str | None = None
    base: str = ""  # the algorithm its costs are looked up under (algo.base, else algo)
    unpaid: str | None = None  # why auto trains its seeds one process each although they batch (seed_groups)
    steps_exact: bool = True  # False: at least ``steps`` (ARS's last update plays its episodes to their ends)

    @property
    def batched(self) -> bool:
        """Whether seeds_per_process's groups train its seeds as one batched model (groups of 2 seeds or more)."""
        return self.batchable and 0 < self.groups < self.runs

    def group_cpu_s(self) -> list[float] | None:
        """Each batched group's CPU seconds (None where a group size is not measured)."""
        from lit_bench.control.suite_plan import group_cpu_s

        per_step = None if self.cpu_s is None else self.cpu_s / self.steps
        return group_cpu_s(self.group_ratios, group_sizes(self.runs, self.groups), self.steps, per_step)


@dataclass
class Plan:
    configs: list[Config]
    launcher: str
    parallel: int | None  # runs at once on this machine (None: a cluster launcher)
    multirun: bool
    seeds_per_process: int | str = 1
    study: tuple[int, int] | None = None  # an Optuna study's (trials, seeds per trial): its runs are at most that

    @property
    def runs(self) -> int:
        return sum(c.runs for c in self.configs)

    @property
    def env_steps(self) -> int:
        return sum(c.runs * c.steps for c in self.configs)

    @property
    def cpu_s(self) -> float:
        return sum(c.runs * c.cpu_s for c in self.configs if c.cpu_s is not None)

    @property
    def unmeasured(self) -> list[Config]:
        return [c for c in self.configs if c.cpu_s is None]

    def wall_s(self) -> float | None:
        """Wall seconds with ``parallel`` runs at once and perfect packing (the longest run bounds it from below)."""
        if self.parallel is None:
            return None
        longest = max((c.cpu_s for c in self.configs if c.cpu_s is not None), default=0.0)
        return max(self.cpu_s / min(self.parallel, max(self.runs, 1)), longest)

    @property
    def jobs(self) -> int:
        """Jobs with seeds_per_process's groups (``runs`` without)."""
        return sum(c.groups or c.runs for c in self.configs)

    def grouped(self) -> GroupedCost:
        """The cost with seeds_per_process's groups (``lit_bench.control.seed_groups``)."""
        return grouped_cost(self.configs, self.parallel)


@dataclass(frozen=True)
class GroupedCost:
    """A plan's training CPU and wall time with its seeds grouped, and the start-up CPU the groups save; the
    batched configs without a measured group cost are left out of both (``unmeasured``; ``left_out_cpu_s``: their
    CPU one process per seed)."""

    cpu_s: float
    wall_s: float | None
    startup_saved_s: float
    unmeasured: list[Config] = field(default_factory=list)
    left_out_cpu_s: float = 0.0


def grouped_cost(configs: list[Config], parallel: int | None) -> GroupedCost:
    """The training CPU of batched groups at their measured ratio to one process per seed (``Config.group_cpu_s``),
    of groups that train one seed after another as it is; the wall time with ``parallel`` jobs at once bounded below
    by the longest group; start-up saved: one process's imports (``STARTUP_CPU_S``) per process fewer (a cluster
    starts one per job; joblib one per worker it uses, reusing them for the following jobs)."""
    from lit_bench.control.seed_groups import STARTUP_CPU_S

    cpu, longest, left_out, unmeasured = 0.0, 0.0, 0.0, []
    for c in configs:
        group_s = c.group_cpu_s() if c.batched else None
        if c.batched and group_s is None:
            unmeasured.append(c)
            left_out += 0.0 if c.cpu_s is None else c.runs * c.cpu_s
        elif group_s is not None:
            cpu += sum(group_s)
            longest = max(longest, *group_s)
        elif c.cpu_s is not None:
            cpu += c.runs * c.cpu_s
            longest = max(longest, c.cpu_s * math.ceil(c.runs / (c.groups or c.runs)))
    runs, jobs = sum(c.runs for c in configs), sum(c.groups or c.runs for c in configs)
    before, after = (runs, jobs) if parallel is None else (min(parallel, runs), min(parallel, jobs))
    wall = None if parallel is None else max(cpu / min(parallel, max(jobs, 1)), longest)
    return GroupedCost(cpu, wall, (before - after) * STARTUP_CPU_S, unmeasured, left_out)


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:,.1f} h"


def _jobs(args: list[str]) -> tuple[list[str], list[list[str]]] | None:
    """(overrides that do not vary, one list of overrides per job) of a command line, or None when it holds a sweep
    this does not expand (a glob, an interval for an Optuna sweeper) or does not parse."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import ChoiceSweep, RangeSweep

    texts = [a for a in args if "=" in a and not a.startswith("-")]
    try:
        parsed = OverridesParser.create().parse_overrides(texts)
    except Exception:  # Hydra reports a malformed command line itself
        return None
    fixed, axes = [], []
    for text, override in zip(texts, parsed):
        if not override.is_sweep_override():
            fixed.append(text)
            continue
        if not isinstance(override.value(), (ChoiceSweep, RangeSweep)):
            return None
        key = override.get_key_element()
        axes.append([f"{key}={value}" for value in override.sweep_string_iterator()])
    return fixed, [list(job) for job in itertools.product(*axes)]


def _parallel(launcher: Any) -> tuple[str, int | None]:
    """The launcher's name and how many runs it runs at once on this machine (None: elsewhere, a cluster)."""
    target = str(launcher.get("_target_", ""))
    if "joblib" in target.lower():
        return "joblib", jobs_at_once(launcher)
    if target.endswith("BasicLauncher"):
        return "basic", 1
    return target.rsplit(".", 1)[-1] or "launcher", None


def _family_of_env() -> dict[str, str]:
    from lit_bench.control.cost_table import family_of

    return {env: family for (_, env), family in family_of().items()}


def make_plan(args: list[str]) -> Plan | None:
    """The plan of a ``lit-bench`` command line (without the program), or None where it cannot be made here (a sweeper
    or glob this does not expand); raises ``PlanUnavailable`` when the config does not compose."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from lit_bench.control.cost_table import cost_rows, group_cost_rows

    multirun = any(flag in args for flag in ("-m", "--multirun"))
    expanded = _jobs(args)
    if expanded is None:
        return _study_plan(args) if multirun else None
    fixed, jobs = expanded
    if not multirun:
        jobs = [[]]
    # seeds never change the cost: one composed config per distinct job without its seed
    distinct: dict[tuple[str, ...], int] = {}
    for job in jobs:
        key = tuple(o for o in job if o.split("=", 1)[0].lstrip("+~") not in SEED_KEYS)
        distinct[key] = distinct.get(key, 0) + 1
    per_step, per_seed = cost_rows(), group_cost_rows()
    family = _family_of_env()
    configs: list[Config] = []
    launcher_cfg, sweeper = None, BASIC_SWEEPER
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), **VERSION_BASE):
            for overrides, runs in distinct.items():
                cfg = compose("config", overrides=[*fixed, *overrides], return_hydra_config=True)
                if launcher_cfg is None:
                    launcher_cfg, sweeper = cfg.hydra.launcher, str(cfg.hydra.sweeper.get("_target_"))
                    setting_value = cfg.get("seeds_per_process", 1)
                configs.append(_config(cfg, runs, per_step, family, per_seed))
    except Exception as error:  # an unknown option, a broken config: Hydra reports it in its own words when it runs
        text = " ".join(str(error).split()).split(" Config search path:")[0]  # (the paths: not the user's concern)
        raise PlanUnavailable(text) from None
    finally:
        GlobalHydra.instance().clear()
    if sweeper == OPTUNA_SWEEPER and multirun:
        return _study_plan(args)
    if sweeper != BASIC_SWEEPER or launcher_cfg is None:
        return None
    launcher, parallel = _parallel(launcher_cfg) if multirun else ("one process", 1)
    setting = seeds_per_process(setting_value)  # a bad value: ConfigError, one line (announce)
    if multirun and launcher != "basic":  # (the basic launcher runs every job in this process: never grouped)
        at_once = jobs_at_once(launcher_cfg)
        for c in configs:
            if setting == "auto" and c.batchable and c.groups and c.runs >= 2:
                size = math.ceil(c.runs / group_count("auto", c.runs, at_once))
                c.unpaid = unpaid_group(c.base or c.algo, c.env, size)
            batchable = c.batchable and c.unpaid is None
            c.groups = group_count(setting, c.runs, at_once, batchable) if c.groups else c.runs
    return Plan(configs, launcher, parallel, multirun, setting)


def _study_plan(args: list[str]) -> Plan | None:
    """The plan of an Optuna study (lit_bench's sweeper): ``n_trials`` x ``hpo.seeds`` runs of the config at its
    composed values, an upper bound (a pruned trial stops early; sampled values change the cost). A budget without a
    gradient step is refused as for a sweep unless the study searches ``budget`` or ``algo.learning_starts``."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from lit_bench.control.cost_table import cost_rows, group_cost_rows

    parser = OverridesParser.create()
    fixed, searched = [], set()
    for text in (a for a in args if "=" in a and not a.startswith("-")):
        try:
            (override,) = parser.parse_overrides([text])
        except Exception:  # Hydra reports a malformed command line itself
            return None
        if override.is_sweep_override():
            searched.add(override.get_key_element().lstrip("+~"))
        else:
            fixed.append(text)
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), **VERSION_BASE):
            cfg = compose("config", overrides=fixed, return_hydra_config=True)
    except Exception as error:
        text = " ".join(str(error).split()).split(" Config search path:")[0]
        raise PlanUnavailable(text) from None
    finally:
        GlobalHydra.instance().clear()
    sweeper = cfg.hydra.sweeper
    if str(sweeper.get("_target_")) != OPTUNA_SWEEPER:
        return None
    searched |= {str(key) for key in (sweeper.get("params") or {})}
    trials, seeds = int(sweeper.n_trials), int(cfg.hpo.seeds)
    config = _config(cfg, trials * seeds, cost_rows(), _family_of_env(), group_cost_rows())
    if searched & {"budget", "algo.learning_starts"}:
        config.problems = []  # (the sampled values decide)
    launcher, parallel = _parallel(cfg.hydra.launcher)
    if parallel is not None:
        parallel = min(parallel, max(1, int(sweeper.get("n_jobs") or 1)) * seeds)  # a batch of trials at once
    return Plan([config], launcher, parallel, True, study=(trials, seeds))


def _config(
    cfg: DictConfig,
    runs: int,
    per_step: dict[tuple[str, str], dict[str, str]],
    family: dict[str, str],
    per_seed: dict[tuple[str, str], dict[int, dict[str, str]]],
) -> Config:
    from lit_bench.control.cost_table import ratios

    choices = cfg.hydra.runtime.choices
    algo, env = str(choices.algo), str(choices.env)
    view = OmegaConf.create(
        {
            "algo": OmegaConf.to_container(cfg.algo, resolve=False),
            "env": {key: cfg.env.get(key) for key in ("n_envs", "id", "make", "kwargs")},
            "eval": {"every": cfg.eval.get("every")},
            "algo_name": algo,
            "env_name": env,
        }
    )
    budget = int(cfg.budget)
    one_device = OmegaConf.select(cfg, "trainer.devices", default=1) in (1, None, "auto")
    key = (str(OmegaConf.select(cfg, "algo.base", default=None) or algo), family.get(env, ""))
    row = per_step.get(key)
    group_rows = per_seed.get(key) or {}
    here = measured_here(str(cfg.out_dir), algo_dir(algo, str(cfg.backend), bool(cfg.get("parity"))), env)
    if here is not None:
        row = {"cpu_s_per_step": str(here), "env": HERE}
    problem = no_learning(view, budget)
    steps, steps_exact = trained_steps(view, budget)
    return Config(
        algo=algo,
        env=env,
        backend=str(cfg.backend),
        budget=budget,
        steps=steps,
        runs=runs,
        cpu_s=None if row is None else float(row["cpu_s_per_step"]) * steps,
        steps_exact=steps_exact,
        measured_on=None if row is None else row["env"],
        problems=[problem] if problem else [],
        warnings=budget_warnings(view, budget),
        groups=int(one_device),  # 0: never grouped (a multi-process run); set from seeds_per_process by make_plan
        batchable=batchable(cfg),
        group_ratios=ratios(group_rows) or None,
        group_measured_on=next((r["env"] for r in group_rows.values()), None),
        base=key[0],
    )


def batchable(cfg: DictConfig) -> bool:
    """Whether the seeds of a composed config (with its ``hydra`` node) may train as one batched model."""
    try:
        with as_job(cfg):
            return config_refusal(cfg) is None
    except Exception:  # a config that does not resolve: its runs report it
        return False


HERE = "here"  # measured_on of a speed from this machine's completed runs
MEASURED_RUNS = 50  # the completed runs a speed is taken from, at most (a glob of a large out_dir stays cheap)


def measured_here(out_dir: str, algo_directory: str, env: str) -> float | None:
    """CPU seconds per env step of training (the median over completed runs' ``cpu_fps``) of this machine's runs of
    ``<out_dir>/<sweep>/<algo_directory>/<env>/``, any sweep and config, one process per seed (a batched seed's
    ``cpu_fps`` is its group's over its seeds: ``cpu_time_note``); None when there are none."""
    per_step = []
    pattern = f"*/{algo_directory}/{env}/*/seed_*/{SUMMARY}"
    for path in itertools.islice(Path(out_dir).glob(pattern), 4 * MEASURED_RUNS):
        try:
            summary = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        fps = summary.get("cpu_fps") if isinstance(summary, dict) else None
        batched = isinstance(summary, dict) and "cpu_time_note" in summary
        if summary.get("status") == "completed" and not batched and isinstance(fps, (int, float)) and fps > 0:
            per_step.append(1.0 / fps)
        if len(per_step) == MEASURED_RUNS:
            break
    return statistics.median(per_step) if per_step else None


def describe(plan: Plan) -> str:
    """The plan as text: one line per config in a sweep, then the total."""
    lines = []
    if plan.multirun:
        for c in plan.configs:
            at_least = "" if c.steps_exact else "at least "
            cost = "speed not measured" if c.cpu_s is None else f"{at_least}{_duration(c.runs * c.cpu_s)} CPU"
            if c.measured_on == HERE:
                cost += " (at its speed in this machine's completed runs)"
            elif c.measured_on not in (None, c.env):
                cost += f" (at its speed on {c.measured_on})"
            sb3 = "@sb3" if c.backend == "sb3" else ""
            alone = f"; one process per seed: {c.unpaid}" if c.unpaid else ""
            lines.append(
                f"  {c.algo}{sb3} on {c.env}, budget={c.budget}: {c.runs} runs, {cost}{_grouped_cost(c)}{alone}"
            )
    wall = plan.wall_s()
    if wall is None:
        where = f"wall time: the {plan.launcher} cluster's"
    elif plan.multirun:
        where = f"~{_duration(wall)} wall with {plan.launcher} ({plan.parallel} at once here; more when it is busy)"
    else:
        where = f"~{_duration(wall)} wall (more when this machine is busy)"
    if plan.study is not None:
        trials, seeds = plan.study
        lines.append(
            f"  an Optuna study of {trials} trials x {seeds} seed{'s' if seeds != 1 else ''}: at most these runs, at "
            f"the config's composed values (a pruned trial stops early; sampled values change the cost)"
        )
    unmeasured = sorted({f"{c.algo} on {c.env}" for c in plan.unmeasured})
    at_least = "" if all(c.steps_exact for c in plan.configs) else "at least "
    lines.append(
        f"plan: {plan.runs} run{'s' if plan.runs != 1 else ''}, {at_least}{plan.env_steps:,} env steps; estimated "
        f"{_duration(plan.cpu_s)} CPU, {where}"
        + (f"; no measured speed for {', '.join(unmeasured)}" if unmeasured else "")
        + " (training speeds: this machine's completed runs, else results/reference/suite_cost.csv; evaluations and"
        " start-up come on top)"
    )
    if plan.multirun and plan.seeds_per_process != 1 and plan.study is None:
        lines.append(_grouped_line(plan))
    return "\n".join(lines)


def _grouped_cost(c: Config) -> str:
    """``; grouped: ...`` of a config whose seeds train in batched groups: its groups and their CPU time."""
    if not c.batched:
        return ""
    sizes = group_sizes(c.runs, c.groups)
    group_s = c.group_cpu_s()
    jobs = f"{c.groups} job{'s' if c.groups != 1 else ''} of {', '.join(str(n) for n in sizes)} seeds"
    if group_s is None:
        return f"; grouped: {jobs}, group cost not measured"
    where = "" if c.group_measured_on in (None, c.env) else f" (at its speed on {c.group_measured_on})"
    return f"; grouped: {jobs}, {_duration(sum(group_s))} CPU{where}"


def _grouped_line(plan: Plan) -> str:
    """What ``seeds_per_process`` makes of the sweep: its jobs, CPU and wall time grouped, beside the line above."""
    setting = f"seeds_per_process={plan.seeds_per_process}"
    if plan.jobs == plan.runs:
        why = (
            "the basic launcher runs every job in this process"
            if plan.launcher == "basic"
            else "auto groups only the seeds of a config that train as one batched model, 2 or more of them, where "
            "the group pays (the config lines say why not)"
            if plan.seeds_per_process == "auto"
            else "no config has more than one seed"
        )
        return f"{setting}: one job per run ({why})"
    cost = plan.grouped()
    wall = "" if cost.wall_s is None else f", ~{_duration(cost.wall_s)} wall"
    unmeasured = sorted({f"{c.algo} on {c.env}" for c in cost.unmeasured})
    left_out = (
        f" (against {_duration(plan.cpu_s - cost.left_out_cpu_s)} one process per seed for the same configs; no "
        f"measured group cost for {', '.join(unmeasured)}: left out)"
        if unmeasured
        else ""
    )
    how = (
        "a config's seeds as one batched model where they batch (lit_bench.run.batched), split over the jobs run at "
        "once; the others one job per run"
        if plan.seeds_per_process == "auto"
        else "seeds one after another in each job, or as one batched model where they batch (lit_bench.run.batched)"
    )
    return (
        f"grouped ({setting}): {plan.runs} runs in {plan.jobs} job{'s' if plan.jobs != 1 else ''}, {how}; "
        f"estimated {_duration(cost.cpu_s)} CPU{left_out}{wall} (a batched group at one process per seed's speed times "
        f"the CPU ratio group / alone measured at the largest group size up to its own, "
        f"results/reference/suite_cost.csv), " + _startup_saved(plan, cost)
    )


def _startup_saved(plan: Plan, cost: GroupedCost) -> str:
    """The start-up the groups save: a process's imports per process fewer; joblib reuses its workers for the
    following jobs (grouped or not, it starts as many processes as it runs jobs at once), so there fewer jobs save
    none unless they are fewer than its workers."""
    from lit_bench.control.seed_groups import STARTUP_CPU_S

    saved = f"{_duration(cost.startup_saved_s)} CPU of start-up saved ({STARTUP_CPU_S} s per process fewer)"
    if cost.startup_saved_s == 0 and plan.launcher == "joblib":
        return (
            f"no start-up saved: joblib starts its {plan.parallel} worker processes either way and reuses them for the "
            f"following jobs (a launcher that starts a process per job saves {STARTUP_CPU_S} s per job fewer)"
        )
    return saved


def announce(args: list[str], dry_run: bool, allow_no_learning: bool) -> None:
    """Print the command's plan (a sweep, a long single run, or any with ``--dry-run``) and its budget warnings;
    exit 2 on a budget without a gradient step; exit 0 after a dry run."""
    try:
        plan = make_plan(args)
    except ConfigError as error:  # seeds_per_process
        print(f"Error: {error}", file=sys.stderr, flush=True)
        sys.exit(2)
    except PlanUnavailable as error:
        if dry_run:  # (a run would stop in Hydra's composition, with the same message)
            print(f"Error: {error}", file=sys.stderr, flush=True)
            sys.exit(2)
        return
    if plan is None:
        if dry_run:
            print("plan: not available for this command (a sweeper or glob this does not expand)", flush=True)
            sys.exit(0)
        return
    long_run = plan.cpu_s > LONG_RUN_S or bool(plan.unmeasured and plan.env_steps > 100_000)
    if dry_run or plan.multirun or long_run:
        print(describe(plan), flush=True)
    if plan.multirun or dry_run:  # a single run warns itself (lit_bench.run.train.warn_budget), after Hydra's checks
        for line in dict.fromkeys(w for c in plan.configs for w in c.warnings):
            print(f"warning: {line}", file=sys.stderr, flush=True)
        os.environ[PLANNED_ENV] = "1"  # the runs (a joblib sweep's workers too) do not repeat them
    problems = list(dict.fromkeys(p for c in plan.configs for p in c.problems))
    if problems and not allow_no_learning:
        for line in problems:
            print(f"Error: {line}; --allow-no-learning runs it anyway", file=sys.stderr, flush=True)
        sys.exit(2)
    if dry_run:
        sys.exit(0)

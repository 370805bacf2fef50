"""What an Optuna study leaves in its sweep directory, written after every sweep of it (the whole study, not only
this command's trials):

    trials.csv              every trial: number, state, value, params_*, pruned_at, last_step, intermediate values
                            (JSON, env step -> value), seeds, seed values, run dirs, start, duration
    param_importances.csv   PED-ANOVA importance of each parameter (completed trials; needs 3 or more)
    best_trial.yaml         the best completed trial: value, params, run dirs, study, storage, config of its run
    best_<algo>_<env>.yaml  its parameters as an ``algo_env`` file (conf/algo_env/<algo>_<env>.yaml), with provenance

and the sweeper draws the figures from the same rows (lit_bench.analysis.hpo: ``report/hpo_*.png``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from lit_bench.config.identity import CONF_DIR
from lit_bench.store.format import BEST_TRIAL
from lit_bench.store.rundir import RunDir, atomic_write_text, csv_text

if TYPE_CHECKING:
    import optuna

STATES = {"COMPLETE": "completed", "PRUNED": "pruned", "FAIL": "failed", "RUNNING": "running", "WAITING": "waiting"}
MIN_TRIALS_FOR_IMPORTANCE = 3


def trial_rows(study: optuna.Study) -> list[dict[str, Any]]:
    rows = []
    for t in study.get_trials(deepcopy=False):
        steps = sorted(t.intermediate_values)
        duration = (
            (t.datetime_complete - t.datetime_start).total_seconds()
            if t.datetime_complete and t.datetime_start
            else None
        )
        rows.append(
            {
                "number": t.number,
                "state": STATES.get(t.state.name, t.state.name.lower()),
                "value": t.value,
                **{f"params_{k}": v for k, v in t.params.items()},
                "pruned_at": t.user_attrs.get("pruned_at"),
                "last_step": steps[-1] if steps else None,
                "intermediate_values": json.dumps({str(s): t.intermediate_values[s] for s in steps}),
                "seeds": json.dumps(t.user_attrs.get("seeds")),
                "seed_values": json.dumps(t.user_attrs.get("seed_values")),
                "run_dirs": ";".join(t.user_attrs.get("run_dirs") or []),
                "datetime_start": t.datetime_start.isoformat(timespec="seconds") if t.datetime_start else None,
                "duration_s": None if duration is None else round(duration, 1),
            }
        )
    return rows


def importances(study: optuna.Study) -> dict[str, float]:
    """PED-ANOVA importances (Optuna's, no extra package); empty with too few completed trials or one parameter."""
    import optuna
    from optuna.trial import TrialState

    completed = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if len(completed) < MIN_TRIALS_FOR_IMPORTANCE or len({k for t in completed for k in t.params}) < 2:
        return {}
    evaluator = optuna.importance.PedAnovaImportanceEvaluator()
    return dict(optuna.importance.get_param_importances(study, evaluator=evaluator))


def _nested(dotted: dict[str, Any]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for key, value in dotted.items():
        node = tree
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return tree


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        merged[key] = (
            _merge(merged[key], value) if isinstance(value, dict) and isinstance(merged.get(key), dict) else value
        )
    return merged


def algo_env_yaml(best: optuna.trial.FrozenTrial, config: dict[str, Any], provenance: dict[str, Any]) -> str:
    """The tuned pair as an ``algo_env`` file: the one the trial ran on top of (if any), its parameters, its budget."""
    algo, env = config["algo_name"], config["env_name"]
    base_file = CONF_DIR / "algo_env" / f"{algo}_{env}.yaml"
    base = yaml.safe_load(base_file.read_text()) if base_file.is_file() else {}
    content = _merge(base or {}, _nested(dict(best.params)))
    content["budget"] = config["budget"]
    header = [
        "# @package _global_",
        f"# {algo} on {env}: tuned by Optuna (lit_bench), drop-in for "
        f"conf/algo_env/{algo}_{env}.yaml" + (" (its values are kept where not tuned)." if base else "."),
    ]
    header += [f"# {key}: {value}" for key, value in provenance.items()]
    return "\n".join(header) + "\n" + yaml.safe_dump(content, sort_keys=False)


def write_results(
    study: optuna.Study, sweep_dir: Path, *, url: str, metric: str, how: str
) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """Write the study's files into ``sweep_dir`` (see the module docstring, figures apart); returns the trials'
    rows and the importances (what the figures show)."""
    from optuna.trial import TrialState

    rows = trial_rows(study)
    fields = list(dict.fromkeys(key for row in rows for key in row))
    written = [sweep_dir / "trials.csv"]
    atomic_write_text(written[0], csv_text(fields, rows))
    found = importances(study)
    if found:
        written.append(sweep_dir / "param_importances.csv")
        atomic_write_text(
            written[-1], csv_text(["param", "importance"], [{"param": k, "importance": v} for k, v in found.items()])
        )
    counts = {state: sum(r["state"] == state for r in rows) for state in ("completed", "pruned", "failed", "running")}
    print(
        f"study {study.study_name}: {len(rows)} trials: "
        + ", ".join(f"{n} {s}" for s, n in counts.items() if n)
        + f" -> {written[0]}",
        flush=True,
    )
    pruned = [r for r in rows if r["state"] == "pruned"]
    if pruned:
        print(
            "pruned trials (trial: after the evaluation at env step): "
            + ", ".join(f"{r['number']}: {r['pruned_at']}" for r in pruned),
            flush=True,
        )
    if study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        _write_best(study, sweep_dir, url=url, metric=metric, how=how)
    return rows, found


def _write_best(study: optuna.Study, sweep_dir: Path, *, url: str, metric: str, how: str) -> list[Path]:
    best = study.best_trial
    run_dirs = best.user_attrs.get("run_dirs") or []
    config = RunDir(run_dirs[0]).read_config() if run_dirs else None
    seeds = best.user_attrs.get("seeds")
    content = {
        "study": study.study_name,
        "storage": url,
        "trial": best.number,
        "direction": study.direction.name.lower(),
        "objective": metric,
        "aggregate": how if seeds and len(seeds) > 1 else None,
        "value": best.value,
        "seed_values": best.user_attrs.get("seed_values"),
        "seeds": seeds,
        "params": dict(best.params),
        "run_dirs": run_dirs,
        "config": config,
    }
    paths = [sweep_dir / BEST_TRIAL]
    atomic_write_text(paths[0], yaml.safe_dump(content, sort_keys=False))
    if config is not None:
        provenance = {
            "study": study.study_name,
            "storage": url,
            "trial": best.number,
            "objective": f"{metric} = {best.value:.6g} ({study.direction.name.lower()})"
            + (f", {how} over seeds {seeds}" if seeds and len(seeds) > 1 else f", seed {config['seed']}"),
            "budget": config["budget"],
            "run": run_dirs[0],
        }
        paths.append(sweep_dir / f"best_{config['algo_name']}_{config['env_name']}.yaml")
        atomic_write_text(paths[-1], algo_env_yaml(best, config, provenance))
    value = "nan" if best.value is None or math.isnan(best.value) else f"{best.value:.2f}"
    print(
        f"best trial {best.number} ({study.direction.name.lower()}, objective {metric}): {value} "
        f"{dict(best.params)} -> {', '.join(str(p) for p in paths)}",
        flush=True,
    )
    return paths

"""Finished work is never deleted or recomputed without a word: a run killed after its final checkpoint only redoes
its final evaluation, a directory the harness cannot prove is its own is left as it is, and the harness never
writes through a symlink it finds in a run directory."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lit_bench.config.identity import identify, resolved
from lit_bench.run import train
from lit_bench.store.format import WRITTEN_DIRS
from lit_bench.store.rundir import RunDir, atomic_write_text
from tests.lit_bench.helpers import TINY, compose_run, read_csv, run_py

pytestmark = pytest.mark.harness


def _completed(tmp_path: Path, *extra: str) -> tuple[list[str], Path, dict]:
    overrides = [*TINY, "budget=256", "eval.every=96", f"out_dir={tmp_path}", *extra]
    summary = train.run(compose_run(*overrides))
    assert summary["status"] == "completed", summary.get("error")
    return overrides, Path(summary["run_dir"]), summary


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and p.name != ".lock"
    }


@pytest.mark.parametrize("backend", ["lit", "sb3"])
def test_killed_during_the_final_evaluation_only_redoes_it(
    tmp_path: Path, backend: str, capfd: pytest.CaptureFixture
) -> None:
    """state.json at the budget, the final evaluation (256 steps, off the 96-step grid) not in eval.csv yet."""
    overrides, run_dir, first = _completed(tmp_path, f"backend={backend}")
    rows = read_csv(run_dir / "eval.csv")
    assert [int(r["timesteps"]) for r in rows] == [96, 192, 256]
    run = RunDir(run_dir)
    assert run.checkpoint_step() == 256
    run.truncate_eval(192)  # as if killed in the final evaluation
    run.write_summary({**first, "status": "running", "resumed_from": None})
    checkpoint = run.checkpoints / ("last.ckpt" if backend == "lit" else "last.zip")
    trained = checkpoint.read_bytes()
    capfd.readouterr()
    again = train.run(compose_run(*overrides))
    assert again["status"] == "completed" and again["resumed_from"] == 256 and again["timesteps"] == 256
    assert checkpoint.read_bytes() == trained  # not retrained: the checkpoint at the budget is the model evaluated
    scores = ("timesteps", "mean_return", "std_return", "mean_ep_length")
    assert [tuple(r[k] for k in scores) for r in read_csv(run_dir / "eval.csv")] == [
        tuple(r[k] for k in scores) for r in rows
    ]
    assert "running it again from the start" not in capfd.readouterr().err


def test_a_completed_run_refuses_a_wrong_objective_instead_of_scoring_another(tmp_path: Path) -> None:
    """A skipped run is scored with the objective too: a wrong one is a one-line error, not another score."""
    overrides, run_dir, _ = _completed(tmp_path)
    before = _files(run_dir)
    for wrong, said in (
        ("objective.metric=best", "objective.metric=best: choose one of final, iqm_last"),
        ("objective.last=0", "objective.last=0: must be >= 1 evaluations"),
    ):
        again = train.run(compose_run(*overrides, "objective.metric=iqm_last", wrong))
        assert again["status"] == "failed" and again["error"] == said, again
    assert train.run(compose_run(*overrides, "objective.metric=iqm_last"))["status"] == "skipped"
    assert _files(run_dir) == before  # nothing changed


@pytest.mark.parametrize("how", ["config.yaml unreadable", "config.yaml missing", "config.yaml not a mapping"])
def test_a_completed_run_that_cannot_be_proven_ours_is_never_deleted(
    tmp_path: Path, how: str, capfd: pytest.CaptureFixture
) -> None:
    overrides, run_dir, _ = _completed(tmp_path)
    (run_dir / "notes.txt").write_text("a user's own file\n")
    config = run_dir / "config.yaml"
    if how == "config.yaml unreadable":
        config.write_text("algo: {unclosed\n")
    elif how == "config.yaml missing":
        config.unlink()
    else:
        config.write_text("- a list\n")
    before = _files(run_dir)
    capfd.readouterr()
    again = train.run(compose_run(*overrides))
    err = capfd.readouterr().err
    assert again["status"] == "failed" and "\n" not in again["error"]
    assert str(run_dir) in again["error"] and "nothing was changed" in again["error"], again["error"]
    assert _files(run_dir) == before  # every file as it was, the user's included
    assert "running it again" not in err


def test_a_directory_left_by_a_config_error_is_reused(tmp_path: Path) -> None:
    """The one directory without config.yaml the harness writes (a config mistake found before training)."""
    bad = train.run(compose_run(*TINY, "algo.n_epochs=zero", f"out_dir={tmp_path}"))
    assert bad["status"] == "failed" and Path(bad["run_dir"], "summary.json").is_file()
    good = train.run(compose_run(*TINY, f"out_dir={tmp_path}"))
    assert good["status"] == "completed", good.get("error")


def test_the_lock_and_written_files_never_follow_a_symlink(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    run = RunDir(tmp_path / "run")
    run.root.mkdir()
    run.lock_file.symlink_to(victim)
    with pytest.raises(OSError, match="symlink"), run.lock():
        pass
    assert victim.read_text() == "precious\n"

    run.lock_file.unlink()
    run.summary.symlink_to(victim)
    tmp = run.root / f".eval.csv.{os.getpid()}.tmp"  # a temporary name planted as a link
    tmp.symlink_to(victim)
    with run.lock():
        run.write_summary({"status": "running"})
        atomic_write_text(run.eval_csv, "timesteps\n")
    assert victim.read_text() == "precious\n"
    assert not run.summary.is_symlink() and json.loads(run.summary.read_text())["status"] == "running"
    assert run.eval_csv.read_text() == "timesteps\n"


def test_a_symlinked_lock_is_one_line_from_run_py(tmp_path: Path) -> None:
    overrides = [*TINY, f"out_dir={tmp_path}"]
    cfg = compose_run(*overrides)

    config = resolved(cfg)
    root = identify(config).root
    root.mkdir(parents=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (root / ".lock").symlink_to(victim)
    summary = train.run(cfg)
    assert summary["status"] == "failed" and "symlink" in summary["error"] and "\n" not in summary["error"]
    assert victim.read_text() == "precious\n"


@pytest.mark.parametrize("where", [".", *WRITTEN_DIRS])
def test_a_symlinked_directory_is_never_written_into(tmp_path: Path, where: str) -> None:
    """The run directory itself, or a directory in it the harness or its loggers write into, that is a symlink: the
    lock is refused (OSError naming the link) before anything is written, and the link's target is untouched."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("precious\n")
    run = RunDir(tmp_path / "run")
    link = run.root / where if where != "." else run.root
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(victim, target_is_directory=True)
    with pytest.raises(OSError, match=f"{link} is a symlink") as refused, run.lock():
        run.write_summary({"status": "running"})
    assert "\n" not in str(refused.value)
    assert sorted(p.name for p in victim.iterdir()) == ["precious.txt"]


def test_a_resume_through_a_symlinked_checkpoints_directory_is_refused(tmp_path: Path) -> None:
    """An interrupted run whose checkpoints/ links to another directory (here: holding that run's own checkpoints):
    run.py fails in one line naming the link, and nothing in the linked directory changes."""
    overrides = [*TINY, f"out_dir={tmp_path}"]  # two rollouts of 256 steps, a checkpoint after each
    first = train.run(compose_run(*overrides))
    assert first["status"] == "completed", first.get("error")
    run = RunDir(first["run_dir"])
    os.replace(run.checkpoints / "previous.ckpt", run.checkpoints / "last.ckpt")  # as if killed after 256 steps
    run.mark_checkpoint(256, 1.0)
    run.truncate_eval(256)
    run.write_summary({**first, "status": "running"})
    victim = tmp_path / "elsewhere"
    os.replace(run.checkpoints, victim)
    run.checkpoints.symlink_to(victim, target_is_directory=True)
    before = _files(victim)
    again = train.run(compose_run(*overrides))
    assert again["status"] == "failed" and "\n" not in again["error"]
    assert f"{run.checkpoints} is a symlink" in again["error"], again["error"]
    assert _files(victim) == before and run.checkpoints.is_symlink()


def _rows_deleted(text: str) -> str:
    lines = text.splitlines(keepends=True)
    return "".join(lines[:3] + lines[7:])  # rows 3-6 of 8 gone, the final evaluation kept


def _not_a_number(text: str) -> str:
    lines = text.splitlines(keepends=True)
    cells = lines[4].split(",")
    cells[2] = "NOTANUMBER"  # row 4's mean_return
    return "".join([*lines[:4], ",".join(cells), *lines[5:]])


@pytest.mark.parametrize("damage", [_rows_deleted, _not_a_number])
def test_a_completed_run_whose_eval_csv_changed_is_damaged_and_left_alone(
    tmp_path: Path, damage: object, capfd: pytest.CaptureFixture
) -> None:
    """A completed run records what it wrote (evaluations, checksum): one that does not match is neither skipped as
    completed nor trained over; one line says so, and every file stays as it is."""
    overrides = [*TINY, "budget=256", "eval.every=32", f"out_dir={tmp_path}"]
    first = train.run(compose_run(*overrides))
    run_dir = Path(first["run_dir"])
    eval_csv = run_dir / "eval.csv"
    eval_csv.write_text(damage(eval_csv.read_text()))  # type: ignore[operator]
    files = _files(run_dir)
    capfd.readouterr()
    again = train.run(compose_run(*overrides))
    assert again["status"] == "damaged" and again["traceback"] is None, again
    assert again["error"].startswith(f"{run_dir}: damaged: eval.csv ") and "\n" not in again["error"]
    assert "left as it is (nothing was changed)" in again["error"] and "force=true" in again["error"]
    assert _files(run_dir) == files  # finished work is the user's: nothing rewritten, nothing deleted
    assert "Traceback" not in "".join(capfd.readouterr())
    assert train.describe(again) == f"ppo on CartPole (seed 0, lit, {again['variant']}): DAMAGED: {again['error']}"
    assert first["evaluations"] == 8 and len(first["eval_csv_sha256"]) == 64  # what it wrote, recorded


def test_a_damaged_run_fails_run_py_in_one_line_and_force_trains_it_again(tmp_path: Path) -> None:
    overrides = [*TINY, "budget=256", "eval.every=32", f"out_dir={tmp_path}"]
    run_dir = Path(train.run(compose_run(*overrides))["run_dir"])
    eval_csv = run_dir / "eval.csv"
    eval_csv.write_text(_not_a_number(eval_csv.read_text()))
    result = run_py(*overrides)
    output = result.stdout + result.stderr
    assert result.returncode == 1 and "Traceback" not in output, output
    assert "DAMAGED: " in output and "row 4 has no number for timesteps or mean_return" in output
    assert "NOTANUMBER" in eval_csv.read_text()
    again = train.run(compose_run(*overrides, "force=true"))
    assert again["status"] == "completed" and "NOTANUMBER" not in eval_csv.read_text()


def test_a_run_written_before_the_record_is_still_skipped(tmp_path: Path) -> None:
    """Format 2 directories have no evaluations / checksum: read as before (and checked for numbers)."""
    overrides = [*TINY, "budget=256", "eval.every=96", f"out_dir={tmp_path}"]
    first = train.run(compose_run(*overrides))
    run = RunDir(first["run_dir"])
    old = {k: v for k, v in json.loads(run.summary.read_text()).items() if k not in ("evaluations", "eval_csv_sha256")}
    atomic_write_text(run.summary, json.dumps({**old, "format": 2}))
    assert train.run(compose_run(*overrides))["status"] == "skipped"

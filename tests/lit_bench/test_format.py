"""The run-directory format (lit_bench.store.format): the files a run writes, summary.json's fields, its version."""

import fnmatch
import json
import re
from pathlib import Path

import pytest

from lit_bench.analysis.load import load_runs
from lit_bench.run.train import run
from lit_bench.store import format as fmt
from lit_bench.store.rundir import RunDir
from tests.lit_bench.helpers import REPO, TINY, compose_run, write_run

FILE_NAME = re.compile(r"[\w<>.-]+\.(?:yaml|csv|npz|json|ckpt|zip|pt|pkl|mp4)\b")


def test_the_harness_guides_table_lists_exactly_the_files_of_the_format():
    guide = (REPO / "docs" / "guides" / "harness.md").read_text()
    table = guide.split("Each run writes its directory (above), every file atomically:", 1)[1].split("\n\n", 2)[1]
    assert set(FILE_NAME.findall(table)) == {Path(name).name for name in fmt.FILES}


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out_dir = tmp_path_factory.mktemp("format")
    summary = run(compose_run("algo=ppo", *TINY, f"out_dir={out_dir}", "sweep=format"))
    assert summary["status"] == "completed", summary.get("traceback")
    return {**summary, "out_dir": out_dir}


def test_a_run_writes_only_files_and_summary_fields_of_the_format(tiny_run: dict):
    root = Path(tiny_run["run_dir"])
    written = json.loads((root / fmt.SUMMARY).read_text())
    assert next(iter(written)) == "format" and written["format"] == fmt.FORMAT
    assert set(written) <= set(fmt.SUMMARY_FIELDS), set(written) - set(fmt.SUMMARY_FIELDS)
    files = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
    known = [re.sub(r"<[^>]+>", "*", name) for name in (*fmt.FILES, fmt.LOCK)]  # <i>, <steps>: any
    unknown = {f for f in files if not any(fnmatch.fnmatchcase(f, pattern) for pattern in known)}
    assert not unknown, unknown
    assert {fmt.CONFIG, fmt.EVAL_CSV, fmt.EVALUATIONS_NPZ, fmt.SUMMARY, fmt.METRICS_CSV} <= files


def test_a_run_records_its_cpu_time_as_well_as_its_wall_time(tiny_run: dict):
    """CPU seconds of the training (this process, evaluations excluded) and env steps per CPU-second: a speed that
    another process's load does not change, as the wall-clock one does."""
    written = json.loads((Path(tiny_run["run_dir"]) / fmt.SUMMARY).read_text())
    assert {"cpu_time_s", "cpu_fps"} <= set(fmt.SUMMARY_FIELDS)
    assert 0 < written["cpu_time_s"] <= written["wall_time_s"] * 4  # a few threads at most
    assert written["cpu_fps"] == pytest.approx(written["timesteps"] / written["cpu_time_s"], rel=0.01)


def test_a_directory_without_format_reads_as_version_1(tmp_path: Path):
    run_dir = write_run(tmp_path / "old", "ppo", "CartPole", 0, "lit", [10.0, 20.0])
    summary = RunDir(run_dir).read_summary()
    assert "format" not in summary and fmt.summary_format(summary) == 1 and fmt.format_problem(summary) is None
    assert load_runs([tmp_path / "old"]).status.tolist() == ["completed"]


def test_a_newer_format_is_named_in_one_line_and_left_alone(tmp_path: Path):
    run_dir = write_run(tmp_path / "new", "ppo", "CartPole", 0, "lit", [10.0, 20.0], format=fmt.FORMAT + 1)
    assert fmt.format_problem(RunDir(run_dir).read_summary()) == (
        f"run-directory format {fmt.FORMAT + 1}, newer than this lit_bench reads (1..{fmt.FORMAT}): upgrade lit_bench"
    )
    runs = load_runs([tmp_path / "new"])
    assert runs.status.tolist() == ["damaged"]
    assert runs.problem[0] == f"{run_dir / fmt.SUMMARY}: {fmt.format_problem({'format': fmt.FORMAT + 1})}"


def test_a_run_never_touches_a_directory_of_a_newer_format(tiny_run: dict):
    root = Path(tiny_run["run_dir"])
    summary_file = root / fmt.SUMMARY
    newer = {**json.loads(summary_file.read_text()), "format": fmt.FORMAT + 1}
    summary_file.write_text(json.dumps(newer))
    again = run(compose_run("algo=ppo", *TINY, f"out_dir={tiny_run['out_dir']}", "sweep=format"))
    assert again["run_dir"] == str(root), again["run_dir"]
    assert again["status"] == "failed" and "newer than this lit_bench reads" in again["error"]
    assert json.loads(summary_file.read_text()) == newer


def test_versions_record_numpy_and_the_env_familys_packages() -> None:
    """#36: the versions that change numbers, numpy among them, and the env family's own packages (its extra's)."""
    from lit_bench.run.provenance import versions

    found = versions({"extra": "box2d"})
    assert {"lit_sb3", "stable-baselines3", "sb3-contrib", "torch", "gymnasium", "mujoco", "numpy"} <= set(found)
    assert found["numpy"] and found["box2d"] and "pygame-ce" in found
    assert "ale-py" not in versions({"extra": "minigrid"}) and "minigrid" in versions({"extra": "minigrid"})

"""SB3's monitor.csv in every run (both backends) and ``lit-bench export``: a sweep as the RL Zoo's log folder,
read by the Zoo's own plot scripts (needs the ``zoo`` extra: rl_zoo3)."""

from __future__ import annotations

import csv
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from lit_bench.store.rundir import RunDir
from tests.lit_bench.helpers import TINY, compose_run

pytestmark = pytest.mark.harness


def _monitor_rows(path: Path) -> tuple[dict, list[dict[str, str]]]:
    header, *lines = path.read_text().splitlines()
    assert header.startswith("#")
    return json.loads(header[1:]), list(csv.DictReader(lines))


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    from lit_bench.run.train import run

    out = tmp_path_factory.mktemp("runs")
    # two seeds per backend: the Zoo's plot_from_file needs two runs of a curve (one run's last scores squeeze away)
    for overrides in (["seed=0"], ["seed=1"], ["seed=0", "backend=sb3"], ["seed=1", "backend=sb3"]):
        summary = run(compose_run(*TINY, f"out_dir={out}", "sweep=zoo", *overrides))
        assert summary["status"] == "completed", summary.get("error")
    return out / "zoo"


def test_every_run_writes_sb3_monitor_files(sweep: Path) -> None:
    for run_dir in sorted(p.parent for p in sweep.rglob("summary.json")):
        files = RunDir(run_dir).monitor_files()
        assert [f.name for f in files] == [f"{i}.monitor.csv" for i in range(8)]  # TINY: env.n_envs=8
        header, rows = _monitor_rows(files[0])
        assert header["env_id"] == "CartPole-v1" and "t_start" in header
        assert rows and list(rows[0]) == ["r", "l", "t"]
        steps = sum(int(r["l"]) for f in files for r in _monitor_rows(f)[1])
        assert 0 < steps <= 512  # every finished episode of the 512-step budget


def test_resume_cuts_monitor_files_at_the_checkpoint(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    run.monitor.mkdir()
    path = run.monitor / "0.monitor.csv"
    path.write_text('#{"t_start": 1.0, "env_id": "X"}\nr,l,t\n1.0,10,0.1\n2.0,20,0.2\n3.0,30,0.3\n')
    run.truncate_monitor(upto=2 * 35, n_envs=2)  # 35 steps of each env: the episodes ending at 10 and 30
    assert path.read_text() == '#{"t_start": 1.0, "env_id": "X"}\nr,l,t\n1.0,10,0.1\n2.0,20,0.2\n'


def _export(sweep: Path, out: Path) -> tuple[str, str]:
    """Export ``sweep`` to ``out``, check the Zoo's tree of links, and return its two groups (lit, sb3)."""
    from lit_bench.cli.export import export

    exported, left_out = export([sweep], out)
    assert left_out == 0
    variant = "budget=512,eval.episodes=2,eval.every=256"  # TINY's differences from the defaults
    lit, sb3 = f"lit_{variant}", f"sb3_{variant}"
    assert sorted(str(e.folder.relative_to(out)) for e in exported) == [
        f"{lit}/ppo/CartPole-v1_1",
        f"{lit}/ppo/CartPole-v1_2",
        f"{sb3}/ppo/CartPole-v1_1",
        f"{sb3}/ppo/CartPole-v1_2",
    ]
    for entry in exported:
        files = sorted(p.name for p in entry.folder.iterdir())
        assert files == [*[f"{i}.monitor.csv" for i in range(8)], "evaluations.npz"]
        assert all((entry.folder / f).is_symlink() for f in files)  # links, not copies
        assert (entry.folder / "evaluations.npz").resolve() == (entry.run_dir / "evaluations.npz").resolve()
    assert export([sweep], out)[0] == exported  # again: the same links, kept
    return lit, sb3


def test_export_links_the_zoo_tree(sweep: Path, tmp_path: Path) -> None:
    """Needs nothing of the Zoo: runs in the default test run (the plots below need the zoo extra)."""
    _export(sweep, tmp_path / "zoo_logs")


def test_the_zoo_plots_read_the_export(sweep: Path, tmp_path: Path) -> None:
    pytest.importorskip("rl_zoo3", reason="the zoo extra (rl_zoo3) is not installed")
    out = tmp_path / "zoo_logs"
    lit, sb3 = _export(sweep, out)
    env = {**os.environ, "MPLBACKEND": "Agg"}

    def zoo(*args: str) -> subprocess.CompletedProcess:
        done = subprocess.run(
            [sys.executable, "-m", *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return done

    pkl = tmp_path / "all.pkl"
    zoo(
        "rl_zoo3.plots.all_plots",
        "-a",
        "ppo",
        "-e",
        "CartPole-v1",
        "-f",
        str(out / lit),
        str(out / sb3),
        "-l",
        "lit",
        "sb3",
        "-o",
        str(pkl.with_suffix("")),
        "--no-display",
        "-print",
    )  # it adds .pkl
    with pkl.open("rb") as file:
        results = pickle.load(file)
    assert set(results["CartPole-v1"]) == {"PPO-lit", "PPO-sb3"}
    assert results["CartPole-v1"]["PPO-lit"]["timesteps"].tolist() == [256, 512]
    zoo("rl_zoo3.plots.plot_from_file", "-i", str(pkl), "-o", str(tmp_path / "figure.png"), "--format", "png")
    assert (tmp_path / "figure.png").is_file()
    trained = zoo("rl_zoo3.plots.plot_train", "-a", "ppo", "-e", "CartPole-v1", "-f", str(out / lit), "-w", "1")
    assert "Error" not in trained.stdout + trained.stderr


def test_export_refuses_to_overwrite(sweep: Path, tmp_path: Path) -> None:
    from lit_bench.cli.export import ExportError, export

    out = tmp_path / "zoo_logs"
    taken = out / "lit_budget=512,eval.episodes=2,eval.every=256" / "ppo" / "CartPole-v1_1" / "evaluations.npz"
    taken.parent.mkdir(parents=True)
    taken.write_bytes(b"someone else's")
    with pytest.raises(ExportError, match="exists and is not a link to"):
        export([sweep], out)
    assert taken.read_bytes() == b"someone else's"


def test_export_leaves_out_files_that_point_outside_the_run(
    sweep: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Issue #36: a symlink in a run (evaluations.npz, a monitor file) made the export link the file it points at,
    outside the run, without a word."""
    import shutil

    from lit_bench.cli.export import export

    copy = tmp_path / "zoo"
    shutil.copytree(sweep, copy, symlinks=True)
    secret = tmp_path / "secret.txt"
    secret.write_text("not a run's file")
    runs = sorted(p.parent for p in copy.rglob("summary.json"))
    monitor = RunDir(runs[0]).monitor_files()[3]
    monitor.unlink()
    monitor.symlink_to(secret)
    evaluations = runs[1] / "evaluations.npz"
    evaluations.unlink()
    evaluations.symlink_to(secret)
    capsys.readouterr()
    out = tmp_path / "zoo_logs"
    exported, _ = export([copy], out)
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"export: {monitor} points outside its run ({secret}); left out",
        f"export: {evaluations} points outside its run ({secret}); left out",
    ]
    assert sorted(e.run_dir for e in exported) == [r for r in runs if r != runs[1]]
    assert not [p for p in out.rglob("*") if p.resolve() == secret]
    assert secret.read_text() == "not a run's file"

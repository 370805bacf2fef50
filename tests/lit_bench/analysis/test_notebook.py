"""The analysis notebook executes top to bottom on a mix of sweeps the test writes, from its own folder and from
the repository root."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tests.lit_bench.helpers import make_mixed_sweeps, make_plain_sweep

NOTEBOOK = Path(__file__).resolve().parents[3] / "notebooks" / "analysis.ipynb"


@pytest.mark.parametrize("folder", [NOTEBOOK.parent, NOTEBOOK.parents[1]], ids=["notebooks", "repo_root"])
def test_analysis_notebook_executes(tmp_path, monkeypatch, folder):
    make_mixed_sweeps(tmp_path)
    monkeypatch.setenv("LIT_BENCH_RUNS", str(tmp_path / "fixture_*"))
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    where = {"metadata": {"path": str(folder)}}
    NotebookClient(notebook, timeout=180, kernel_name="python3", resources=where).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "ppo on CartPole: P(lit > sb3) = 1.00, IQM difference +20.0" in printed
    # the suite over CartPole and Acrobot: the learning-rate configs, with their unequal seeds said
    assert "3 runs per env" not in printed and "its fewest on any env, its lowest seeds (2 runs per env)" in printed
    tables = "".join(o.get("data", {}).get("text/plain", "") for o in outputs if o.output_type == "execute_result")
    assert "algo.learning_rate" in tables  # the hyperparameter column, from config.yaml
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 4  # curves, training metrics, hyperparameters, suite: drawn, not read from files


@pytest.mark.parametrize("sb3", [False, True], ids=["lit_only", "with_sb3"])
def test_analysis_notebook_executes_on_a_plain_multi_algorithm_multi_env_sweep(tmp_path, monkeypatch, sb3):
    """Two algorithms on two envs, one of them without training metrics: the training-metrics cell draws the
    others (the report's bands, ``training.config_bands``) instead of failing on the missing ones."""
    sweep = make_plain_sweep(tmp_path, sb3=sb3)
    monkeypatch.setenv("LIT_BENCH_RUNS", str(sweep))
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(
        notebook, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    training_cell = next(c for c in notebook.cells if c.cell_type == "code" and "config_bands" in c.source)
    assert [o for o in training_cell.outputs if "image/png" in o.get("data", {})]  # drawn, not skipped

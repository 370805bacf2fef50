"""The analysis notebook executes top to bottom on a sweep the test writes."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

from tests.lit_bench.helpers import make_sweep

NOTEBOOK = Path(__file__).resolve().parents[3] / "notebooks" / "analysis.ipynb"


def test_analysis_notebook_executes(tmp_path, monkeypatch):
    make_sweep(tmp_path)
    monkeypatch.setenv("LIT_BENCH_RUNS", str(tmp_path / "fixture_sweep*"))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    where = {"metadata": {"path": str(tmp_path)}}
    NotebookClient(notebook, timeout=120, kernel_name="python3", resources=where).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "ppo on CartPole: P(lit > sb3) = 1.00, IQM difference +20.0" in printed

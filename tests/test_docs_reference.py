"""The docs' generated reference pages (tools/docs_reference.py) match the code they are generated from."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parent.parent / "tools" / "docs_reference.py"


@pytest.fixture
def docs_reference():
    spec = importlib.util.spec_from_file_location("docs_reference", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_reference_pages_are_the_generated_ones(docs_reference, capsys):
    assert docs_reference.main(["--check"]) == 0, capsys.readouterr().out


def test_a_summary_field_added_to_the_format_makes_the_check_fail(docs_reference, monkeypatch, capsys):
    from lit_bench.store import format as fmt

    monkeypatch.setitem(fmt.SUMMARY_FIELDS, "new_field", "a field the page does not list")
    assert docs_reference.main(["--check"]) == 1
    assert "run-directory.md differ from the code" in capsys.readouterr().out
    assert "`new_field`" in docs_reference.run_directory_page()

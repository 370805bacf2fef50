"""The tests' limits on subprocesses catch a hang, never a busy machine: they scale with its load
(tests/lit_bench/helpers.py ``patience``), and ``run_py`` uses them."""

from __future__ import annotations

import subprocess

import pytest

from tests.lit_bench import helpers


def test_a_limit_scales_with_the_load_per_core(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LIT_BENCH_TEST_PATIENCE", raising=False)
    monkeypatch.setattr(helpers.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(helpers.os, "getloadavg", lambda: (8.0, 8.0, 8.0))  # four engineers on two cores
    assert helpers.patience(240) == 960
    monkeypatch.setattr(helpers.os, "getloadavg", lambda: (0.5, 0.5, 0.5))  # idle: the limit as written
    assert helpers.patience(240) == 240
    monkeypatch.setenv("LIT_BENCH_TEST_PATIENCE", "3")  # a slow machine's own factor, on top
    assert helpers.patience(240) == 720


def test_run_py_waits_with_patience(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[float] = []
    monkeypatch.setattr(helpers, "patience", lambda seconds: seconds * 5)
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: seen.append(k["timeout"]))
    helpers.run_py("--help")
    helpers.run_py("--help", timeout=600)
    assert seen == [5 * helpers.RUN_PY_LIMIT_S, 3000]

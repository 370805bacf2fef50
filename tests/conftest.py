"""Shared test settings: keep SB3/Lightning side effects (temp folders, logs) inside pytest's tmp dirs."""

from __future__ import annotations

import os

import pytest
import torch

# The harness's live console (lit_bench.run.console) is off in tests, which read their runs' stderr line by line;
# tests/lit_bench/test_console.py turns it on. (Set before the helpers copy the environment for run.py children.)
os.environ.setdefault("LIT_BENCH_CONSOLE", "off")


@pytest.fixture(autouse=True)
def _isolated_cwd(tmp_path, monkeypatch):
    """MuJoCo and Lightning write into the working directory; give every test its own."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture(autouse=True, scope="session")
def _torch_threads():
    # Tiny MLPs on a 2-core machine: one intra-op thread avoids oversubscription when pytest runs beside other work.
    torch.set_num_threads(int(os.environ.get("LIT_SB3_TEST_THREADS", "1")))

"""``make setup`` says nothing that is not about the user's set-up: torch's version is read from its metadata, never
by importing torch (before numpy is installed that prints "Failed to initialize NumPy")."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _install_recipes() -> str:
    """What ``make`` would run for every target that installs (a dry run)."""
    targets = ["setup", "lint", "test-zoo", "test-cluster", "docs"]
    return subprocess.run(["make", "-n", "-B", *targets], cwd=REPO, capture_output=True, text=True).stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_make_setup_never_imports_torch_to_read_its_version():
    recipe = _install_recipes()
    assert "torch==$(" in recipe  # the extras are installed against the torch that is there
    assert "import torch" not in recipe


def test_the_version_command_prints_the_installed_torch_version():
    import torch

    command = next(
        line.split(":=", 1)[1].strip()
        for line in (REPO / "Makefile").read_text().splitlines()
        if line.startswith("TORCH_VERSION :=")
    )
    script = command.split("-c ", 1)[1].strip("'")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == torch.__version__.split("+")[0]


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_every_editable_install_silences_setuptools_banners():
    recipe = _install_recipes()
    installs = [line for line in recipe.splitlines() if "pip install -q -e" in line]
    assert len(installs) >= 5
    assert all(line.startswith("PYTHONWARNINGS=ignore::UserWarning ") for line in installs), installs

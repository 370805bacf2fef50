"""benchmarks/seeds.py's programs run (each mode's, at a tiny budget, in this process): the benchmark cannot rot."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _benchmark():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("seeds_benchmark", ROOT / "benchmarks" / "seeds.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("algo", ["ppo", "a2c"])
@pytest.mark.parametrize("mode", ["grouped", "lit", "sb3"])
def test_the_benchmarks_programs_run(algo: str, mode: str) -> None:
    bench = _benchmark()
    codes = bench._codes(mode, bench.CONFIGS[algo], n_seeds=2, steps=64, jobs=2)
    assert len(codes) == 2
    exec(compile(codes[0], f"<{mode} {algo}>", "exec"), {})

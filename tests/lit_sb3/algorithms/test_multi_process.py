"""On-policy training in two processes (``strategy="ddp"``, CPU/gloo): every rank collects its own episodes and all
ranks end with the same parameters (their updates are collective), for PPO and for TRPO's natural-gradient step."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).with_name("ddp_sync.py")
REPO = Path(__file__).resolve().parents[3]


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["TRPO", "PPO"])
def test_ranks_collect_their_own_data_and_stay_in_sync(algo: str, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), algo, str(tmp_path)], cwd=REPO, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stdout + result.stderr
    ranks = [torch.load(tmp_path / f"rank{r}.pt", weights_only=True) for r in (0, 1)]
    assert [r["num_timesteps"] for r in ranks] == [512, 512]  # the budget counts the steps of both ranks
    assert [r["rollouts"] for r in ranks] == [2, 2]  # 512 / (2 ranks x 2 envs x 64 steps)
    assert not torch.equal(ranks[0]["observations"], ranks[1]["observations"])  # each rank its own episodes
    assert not torch.equal(ranks[0]["params"], ranks[0]["initial"])  # trained ...
    assert torch.equal(ranks[0]["params"], ranks[1]["params"])  # ... to the same parameters on both ranks

"""The card's command has no SB3 runs: the report says so and gives the exact command that adds them to the sweep
(lit_bench.analysis.tables / markdown), instead of a report without a lit-vs-SB3 verdict and no word why."""

from __future__ import annotations

import yaml

from lit_bench.analysis.markdown import markdown
from lit_bench.analysis.tables import tables
from tests.lit_bench.helpers import write_run


def _card_sweep(root, *, sb3: bool):
    for algo in ("sac", "td3"):
        for seed in range(3):
            for backend in ("lit", "sb3") if sb3 else ("lit",):
                run_dir = write_run(root, algo, "HalfCheetah", seed, backend, [-300.0, 100.0 + seed], every=10000)
                words = [f"algo={algo}", "env=HalfCheetah", f"seed={seed}", "budget=20000", "sweep=card"]
                words += ["backend=sb3"] if backend == "sb3" else []
                (run_dir / "overrides.yaml").write_text(yaml.safe_dump(words))
    return root


def test_a_sweep_without_sb3_runs_gets_the_exact_command_that_adds_them(tmp_path):
    _, summary, comparison = tables([_card_sweep(tmp_path / "card", sb3=False)])
    assert comparison.empty
    text = markdown(summary, comparison)
    assert "no lit-vs-SB3 verdict" in text
    assert "python run.py -m algo=sac,td3 env=HalfCheetah seed=0,1,2 budget=20000 sweep=card backend=sb3" in text


def test_a_sweep_with_its_sb3_runs_gets_the_verdict_and_no_command(tmp_path):
    _, summary, comparison = tables([_card_sweep(tmp_path / "card", sb3=True)])
    assert len(comparison) == 2
    text = markdown(summary, comparison)
    assert "python run.py -m" not in text and "no lit-vs-SB3 verdict" not in text

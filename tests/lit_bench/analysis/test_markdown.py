"""The report's Markdown (summary.md and the console): a lit-vs-SB3 row of 500 seeds stays readable."""

from __future__ import annotations

import numpy as np
import pandas as pd

from lit_bench.analysis.markdown import comparison_markdown
from lit_bench.analysis.paired import ablation_markdown, per_seed_text


def test_per_seed_differences_are_capped_in_the_table_and_kept_in_the_csv():
    seeds, differences = list(range(500)), [0.5 * s for s in range(500)]
    row = {
        "sweep": "s", "algo": "ppo", "variant": "", "env": "CartPole", "n": 500, "lit_iqm": 400.0, "sb3_iqm": 399.0,
        "seeds": seeds, "differences": differences, "iqm_difference": 1.0, "ci_low": -2.0, "ci_high": 3.0,
        "ci_flagged": False, "probability_of_improvement": 0.51, "verdict": "indistinguishable",
        "fps_ratio_median": np.nan, "fps_ratio_min": np.nan, "fps_ratio_max": np.nan,
    }  # fmt: skip
    text = comparison_markdown(pd.DataFrame([row]))
    cell = text.splitlines()[4].split(" | ")[5]
    want = "0: +0.0, 1: +0.5, 2: +1.0, 3: +1.5, 4: +2.0, 5: +2.5, 6: +3.0, 7: +3.5, 8: +4.0, 9: +4.5"
    assert cell == want + ", ... 490 more: comparison.csv"
    assert len(text) < 2000  # (every seed: ~6 kB in one cell)
    assert per_seed_text([3, 7], [1.0, -2.25], "x.csv") == "3: +1.0, 7: -2.2"  # a few seeds: all of them
    assert per_seed_text(range(11), [0.0] * 11, "x.csv", at_most=10).endswith("9: +0.0, ... 1 more: x.csv")


def test_paired_ablations_cap_their_per_seed_differences_too():
    row = {
        "a": "ppo[lr]", "b": "ppo", "env": "CartPole", "n": 40, "a_iqm": 1.0, "b_iqm": 0.5,
        "seeds": list(range(40)), "differences": [0.5] * 40, "iqm_difference": 0.5, "ci_low": 0.1, "ci_high": 0.9,
        "ci_flagged": False, "probability_of_improvement": 0.7, "verdict": "A better",
    }  # fmt: skip
    cell = ablation_markdown(pd.DataFrame([row])).splitlines()[4].split(" | ")[6]
    assert cell.endswith("9: +0.5, ... 30 more: ablations.csv") and cell.startswith("0: +0.5, 1: +0.5")

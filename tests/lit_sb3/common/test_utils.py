"""Helpers around the hot loops: distribution validation is restored, divergence is reported."""

from __future__ import annotations

import pytest
import torch
from torch.distributions import Distribution

from lit_sb3.common.utils import check_finite, unchecked_distributions


def test_unchecked_distributions_restores_validation_even_on_error():
    before = Distribution._validate_args
    with pytest.raises(RuntimeError), unchecked_distributions():
        assert Distribution._validate_args is False
        torch.distributions.Categorical(logits=torch.tensor([float("nan"), 0.0]))  # would raise when validated
        raise RuntimeError("escape")
    assert Distribution._validate_args is before


def test_check_finite_names_the_diverged_metric():
    check_finite({"loss": 1.0}, 10)
    with pytest.raises(FloatingPointError, match=r"training diverged at env step 64: \{'value_loss': nan\}"):
        check_finite({"loss": 1.0, "value_loss": float("nan")}, 64)

"""Building blocks shared by every algorithm."""

from lit_sb3.common.base import BaseAlgorithm
from lit_sb3.common.on_policy import OnPolicyAlgorithm

__all__ = ["BaseAlgorithm", "OnPolicyAlgorithm"]

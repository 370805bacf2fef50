"""TRPO's policies are SB3's actor-critic policies (as in sb3-contrib), re-exported under the algorithm's module."""

from lit_sb3.algorithms.ppo.policies import POLICY_ALIASES, CnnPolicy, MlpPolicy, MultiInputPolicy

__all__ = ["POLICY_ALIASES", "CnnPolicy", "MlpPolicy", "MultiInputPolicy"]

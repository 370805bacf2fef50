from sb3_contrib.trpo.policies import CnnPolicy, MlpPolicy, MultiInputPolicy

from lit_sb3.algorithms.trpo.trpo import TRPO

__all__ = ["TRPO", "CnnPolicy", "MlpPolicy", "MultiInputPolicy"]

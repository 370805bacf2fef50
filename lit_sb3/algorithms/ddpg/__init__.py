from lit_sb3.algorithms.ddpg.ddpg import DDPG
from lit_sb3.algorithms.td3.policies import CnnPolicy, MlpPolicy, MultiInputPolicy

__all__ = ["DDPG", "CnnPolicy", "MlpPolicy", "MultiInputPolicy"]

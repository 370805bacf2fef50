from stable_baselines3.ddpg.policies import CnnPolicy, MlpPolicy, MultiInputPolicy

from lit_sb3.algorithms.ddpg.ddpg import DDPG

__all__ = ["DDPG", "CnnPolicy", "MlpPolicy", "MultiInputPolicy"]

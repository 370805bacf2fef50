from stable_baselines3.td3.policies import CnnPolicy, MlpPolicy, MultiInputPolicy, TD3Policy

from lit_sb3.algorithms.td3.td3 import TD3

__all__ = ["TD3", "CnnPolicy", "MlpPolicy", "MultiInputPolicy", "TD3Policy"]

from stable_baselines3.a2c.policies import CnnPolicy, MlpPolicy, MultiInputPolicy

from lit_sb3.algorithms.a2c.a2c import A2C

__all__ = ["A2C", "CnnPolicy", "MlpPolicy", "MultiInputPolicy"]

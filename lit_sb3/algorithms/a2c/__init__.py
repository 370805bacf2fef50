from lit_sb3.algorithms.a2c.a2c import A2C
from lit_sb3.algorithms.ppo.policies import CnnPolicy, MlpPolicy, MultiInputPolicy

__all__ = ["A2C", "CnnPolicy", "MlpPolicy", "MultiInputPolicy"]

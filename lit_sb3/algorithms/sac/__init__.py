from stable_baselines3.sac.policies import Actor, CnnPolicy, MlpPolicy, MultiInputPolicy, SACPolicy

from lit_sb3.algorithms.sac.sac import SAC

__all__ = ["SAC", "Actor", "CnnPolicy", "MlpPolicy", "MultiInputPolicy", "SACPolicy"]

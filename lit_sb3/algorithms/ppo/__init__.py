from stable_baselines3.ppo.policies import CnnPolicy, MlpPolicy, MultiInputPolicy

from lit_sb3.algorithms.ppo.ppo import PPO

__all__ = ["PPO", "CnnPolicy", "MlpPolicy", "MultiInputPolicy"]

from stable_baselines3.dqn.policies import CnnPolicy, DQNPolicy, MlpPolicy, MultiInputPolicy

from lit_sb3.algorithms.dqn.dqn import DQN

__all__ = ["DQN", "CnnPolicy", "DQNPolicy", "MlpPolicy", "MultiInputPolicy"]

from lit_sb3.algorithms.dqn.dqn import DQN
from lit_sb3.algorithms.dqn.policies import CnnPolicy, DQNPolicy, MlpPolicy, MultiInputPolicy

__all__ = ["DQN", "CnnPolicy", "DQNPolicy", "MlpPolicy", "MultiInputPolicy"]

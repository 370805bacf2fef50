"""DQN's policies are SB3's Q-network policies (online and target network), re-exported here."""

from stable_baselines3.dqn.policies import CnnPolicy, DQNPolicy, MultiInputPolicy, QNetwork

MlpPolicy = DQNPolicy

POLICY_ALIASES = {"MlpPolicy": MlpPolicy, "CnnPolicy": CnnPolicy, "MultiInputPolicy": MultiInputPolicy}

__all__ = ["POLICY_ALIASES", "CnnPolicy", "DQNPolicy", "MlpPolicy", "MultiInputPolicy", "QNetwork"]

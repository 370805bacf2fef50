"""TD3's (and DDPG's) policies are SB3's deterministic actor-critic policies, re-exported here."""

from stable_baselines3.td3.policies import Actor, CnnPolicy, MultiInputPolicy, TD3Policy

MlpPolicy = TD3Policy

POLICY_ALIASES = {"MlpPolicy": MlpPolicy, "CnnPolicy": CnnPolicy, "MultiInputPolicy": MultiInputPolicy}

__all__ = ["POLICY_ALIASES", "Actor", "CnnPolicy", "MlpPolicy", "MultiInputPolicy", "TD3Policy"]

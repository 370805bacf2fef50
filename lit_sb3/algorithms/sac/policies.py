"""SAC's policies are SB3's (actor, twin critics and target critics in one module), re-exported here."""

from stable_baselines3.sac.policies import Actor, CnnPolicy, MultiInputPolicy, SACPolicy

MlpPolicy = SACPolicy

POLICY_ALIASES = {"MlpPolicy": MlpPolicy, "CnnPolicy": CnnPolicy, "MultiInputPolicy": MultiInputPolicy}

__all__ = ["POLICY_ALIASES", "Actor", "CnnPolicy", "MlpPolicy", "MultiInputPolicy", "SACPolicy"]

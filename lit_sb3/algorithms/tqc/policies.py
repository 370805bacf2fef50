"""TQC's policies are sb3-contrib's (actor, quantile critics and target critics in one module), re-exported here."""

from sb3_contrib.tqc.policies import Actor, CnnPolicy, Critic, MultiInputPolicy, TQCPolicy

MlpPolicy = TQCPolicy

POLICY_ALIASES = {"MlpPolicy": MlpPolicy, "CnnPolicy": CnnPolicy, "MultiInputPolicy": MultiInputPolicy}

__all__ = ["POLICY_ALIASES", "Actor", "CnnPolicy", "Critic", "MlpPolicy", "MultiInputPolicy", "TQCPolicy"]

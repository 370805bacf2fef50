"""ARS's policies are sb3-contrib's (a linear map or an MLP from observations to actions), re-exported here."""

from sb3_contrib.ars.policies import ARSLinearPolicy, ARSPolicy

MlpPolicy = ARSPolicy
LinearPolicy = ARSLinearPolicy

POLICY_ALIASES: dict[str, type[ARSPolicy]] = {"LinearPolicy": LinearPolicy, "MlpPolicy": MlpPolicy}

__all__ = ["POLICY_ALIASES", "ARSLinearPolicy", "ARSPolicy", "LinearPolicy", "MlpPolicy"]

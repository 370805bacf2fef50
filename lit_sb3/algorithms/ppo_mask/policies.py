"""MaskablePPO's policies are sb3-contrib's maskable actor-critic policies, re-exported under the algorithm's module."""

from sb3_contrib.common.maskable.policies import (
    MaskableActorCriticCnnPolicy,
    MaskableActorCriticPolicy,
    MaskableMultiInputActorCriticPolicy,
)

MlpPolicy = MaskableActorCriticPolicy
CnnPolicy = MaskableActorCriticCnnPolicy
MultiInputPolicy = MaskableMultiInputActorCriticPolicy

POLICY_ALIASES = {"MlpPolicy": MlpPolicy, "CnnPolicy": CnnPolicy, "MultiInputPolicy": MultiInputPolicy}

__all__ = ["POLICY_ALIASES", "CnnPolicy", "MlpPolicy", "MultiInputPolicy"]

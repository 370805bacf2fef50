"""PPO's policies are SB3's actor-critic policies, re-exported under the algorithm's module."""

from stable_baselines3.common.policies import ActorCriticCnnPolicy, ActorCriticPolicy, MultiInputActorCriticPolicy

MlpPolicy = ActorCriticPolicy
CnnPolicy = ActorCriticCnnPolicy
MultiInputPolicy = MultiInputActorCriticPolicy

POLICY_ALIASES = {"MlpPolicy": MlpPolicy, "CnnPolicy": CnnPolicy, "MultiInputPolicy": MultiInputPolicy}

__all__ = ["POLICY_ALIASES", "CnnPolicy", "MlpPolicy", "MultiInputPolicy"]

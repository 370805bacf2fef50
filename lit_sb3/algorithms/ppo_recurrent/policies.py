"""RecurrentPPO's policies are sb3-contrib's LSTM actor-critic policies, re-exported under the algorithm's module."""

from sb3_contrib.common.recurrent.policies import (
    RecurrentActorCriticCnnPolicy,
    RecurrentActorCriticPolicy,
    RecurrentMultiInputActorCriticPolicy,
)

MlpLstmPolicy = RecurrentActorCriticPolicy
CnnLstmPolicy = RecurrentActorCriticCnnPolicy
MultiInputLstmPolicy = RecurrentMultiInputActorCriticPolicy

POLICY_ALIASES = {
    "MlpLstmPolicy": MlpLstmPolicy,
    "CnnLstmPolicy": CnnLstmPolicy,
    "MultiInputLstmPolicy": MultiInputLstmPolicy,
}

__all__ = ["POLICY_ALIASES", "CnnLstmPolicy", "MlpLstmPolicy", "MultiInputLstmPolicy"]

"""QR-DQN's policies are sb3-contrib's (quantile network and its target), re-exported here."""

from sb3_contrib.qrdqn.policies import CnnPolicy, MultiInputPolicy, QRDQNPolicy, QuantileNetwork

MlpPolicy = QRDQNPolicy

POLICY_ALIASES = {"MlpPolicy": MlpPolicy, "CnnPolicy": CnnPolicy, "MultiInputPolicy": MultiInputPolicy}

__all__ = ["POLICY_ALIASES", "CnnPolicy", "MlpPolicy", "MultiInputPolicy", "QRDQNPolicy", "QuantileNetwork"]

from sb3_contrib.qrdqn.policies import CnnPolicy, MlpPolicy, MultiInputPolicy, QRDQNPolicy, QuantileNetwork

from lit_sb3.algorithms.qrdqn.qrdqn import QRDQN

__all__ = ["QRDQN", "CnnPolicy", "MlpPolicy", "MultiInputPolicy", "QRDQNPolicy", "QuantileNetwork"]

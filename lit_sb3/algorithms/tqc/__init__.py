from sb3_contrib.tqc.policies import Actor, CnnPolicy, Critic, MlpPolicy, MultiInputPolicy, TQCPolicy

from lit_sb3.algorithms.tqc.tqc import TQC

__all__ = ["TQC", "Actor", "CnnPolicy", "Critic", "MlpPolicy", "MultiInputPolicy", "TQCPolicy"]

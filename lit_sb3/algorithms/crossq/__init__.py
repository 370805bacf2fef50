from sb3_contrib.crossq.policies import Actor, CrossQCritic, CrossQPolicy, MlpPolicy

from lit_sb3.algorithms.crossq.crossq import CrossQ

__all__ = ["Actor", "CrossQ", "CrossQCritic", "CrossQPolicy", "MlpPolicy"]

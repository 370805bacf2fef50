from lit_sb3.algorithms.crossq.crossq import CrossQ
from lit_sb3.algorithms.crossq.policies import Actor, CrossQCritic, CrossQPolicy, MlpPolicy

__all__ = ["Actor", "CrossQ", "CrossQCritic", "CrossQPolicy", "MlpPolicy"]

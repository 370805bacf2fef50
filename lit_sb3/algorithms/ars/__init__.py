from sb3_contrib.ars.policies import LinearPolicy, MlpPolicy

from lit_sb3.algorithms.ars.ars import ARS

__all__ = ["ARS", "LinearPolicy", "MlpPolicy"]

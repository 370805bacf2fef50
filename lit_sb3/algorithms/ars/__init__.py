from lit_sb3.algorithms.ars.ars import ARS
from lit_sb3.algorithms.ars.policies import LinearPolicy, MlpPolicy

__all__ = ["ARS", "LinearPolicy", "MlpPolicy"]

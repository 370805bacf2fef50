"""Two small research variants of lit_sb3's algorithms, benchmarked by lit-bench against the built-ins and SB3.

Each is a LightningModule built on lit_sb3 that changes one step of its base's update; its config
(``conf/algo/<name>.yaml``) says ``base: <algo>``, so it runs with its base's tuned hyperparameters and is paired
with its base in the report.
"""

from research_algos.dual_clip_ppo import DualClipPPO, dual_clip_surrogate_loss
from research_algos.optimistic_sac import OptimisticSAC, optimistic_soft_target

__all__ = ["DualClipPPO", "OptimisticSAC", "dual_clip_surrogate_loss", "optimistic_soft_target"]

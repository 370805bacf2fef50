"""CrossQ's policies are sb3-contrib's (actor and batch-renormalized critics, no target network), re-exported here."""

from sb3_contrib.crossq.policies import Actor, CrossQCritic, CrossQPolicy

MlpPolicy = CrossQPolicy

POLICY_ALIASES = {"MlpPolicy": MlpPolicy}

__all__ = ["POLICY_ALIASES", "Actor", "CrossQCritic", "CrossQPolicy", "MlpPolicy"]

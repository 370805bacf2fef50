"""A policy's training-mode switch as flag writes, instead of torch's recursion through the module tree."""

from __future__ import annotations

from stable_baselines3.common.policies import BasePolicy
from torch import nn

#: where the policies' own switches are defined: they set ``training`` flags and do nothing else
_SB3_PACKAGES = ("stable_baselines3.", "sb3_contrib.")


class TrainingModeSwitch:
    """``policy.set_training_mode(mode)`` for one policy, as direct writes of the flags that call sets.

    SB3's algorithms switch modes around every update: collection runs in eval mode, the update in train mode, so the
    switch runs twice per env step for SAC / TD3 / DQN-style training and twice per rollout for A2C / PPO. Torch's
    ``Module.train`` recurses through the tree with a ``Module.__setattr__`` per module: 80-200 us per pair of
    switches for SB3's MLP policies, ~2% of a Pendulum SAC step or of a 32-env A2C rollout on a CPU. Which modules
    a call sets is observed once per mode (by calling the policy's own switch); later switches write those flags.
    A policy whose switch is not SB3's, or with a module that overrides ``train`` (it may do more than set its flag),
    keeps the real call. Submodules replaced after the first switch are not seen: build a new switch then.
    """

    def __init__(self, policy: BasePolicy) -> None:
        self.policy = policy
        modules = list(policy.modules())
        defined_in = getattr(type(policy).set_training_mode, "__module__", "") or ""
        flags_only = defined_in.startswith(_SB3_PACKAGES) and all(
            type(module).train is nn.Module.train for module in modules
        )
        self._set_by: dict[bool, list[nn.Module]] | None = (
            {mode: self._modules_set_by(modules, mode) for mode in (False, True)} if flags_only else None
        )

    def _modules_set_by(self, modules: list[nn.Module], mode: bool) -> list[nn.Module]:
        """The modules whose flag ``set_training_mode(mode)`` sets (their flags are left as they were)."""
        before = [module.training for module in modules]
        for module in modules:
            object.__setattr__(module, "training", not mode)
        self.policy.set_training_mode(mode)
        set_by = [module for module in modules if module.training == mode]
        for module, flag in zip(modules, before):
            object.__setattr__(module, "training", flag)
        return set_by

    def __call__(self, mode: bool) -> None:
        if self._set_by is None:
            self.policy.set_training_mode(mode)
            return
        for module in self._set_by[mode]:
            # what nn.Module.__setattr__ does for a plain attribute, without its checks for parameters and buffers
            object.__setattr__(module, "training", mode)

"""The on-policy loop's state and its training iterable (one Lightning epoch = one rollout)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class RolloutLoop:
    """Where the on-policy loop stands. One Lightning epoch is one rollout; Lightning drives it through these hooks:

    1. ``on_train_epoch_start``: at the budget, stop (``collected = False``); else collect ``n_steps`` x ``n_envs``
       transitions (``collected`` is False when a callback stopped training) and count the rollout (``iteration``);
    2. :class:`RolloutMinibatches` yields ``n_epochs`` passes (``epoch``) of minibatches of a collected rollout,
       until ``stop_updates`` (PPO's ``target_kl``);
    3. ``training_step`` on each minibatch: one optimizer step (``untrained`` turns False at the epoch's end);
    4. ``on_train_epoch_end``: record the update's statistics, dump the logs every ``log_interval`` rollouts, stop
       at the budget.

    SB3-style ``collect_rollouts`` + ``train()`` outside ``fit`` run steps 2-3 through
    :meth:`OnPolicyAlgorithm.update_on_rollout`.
    """

    collected: bool = False  #: this epoch's rollout is complete and may be trained on
    untrained: bool = False  #: a collected rollout no update has used yet (SB3-style ``train()``)
    stop_updates: bool = False  #: skip the remaining minibatches of this rollout
    epoch: int = 0  #: the pass over the rollout being trained on
    iteration: int = 0  #: rollouts collected in this run

"""The on-policy loop's state and its training iterable (one Lightning epoch = one rollout)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lit_sb3.common.on_policy import OnPolicyAlgorithm


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


class RolloutMinibatches:
    """The training "dataloader" of an on-policy algorithm: ``n_epochs`` shuffled passes over the current rollout.

    Lightning iterates it once per epoch, after ``on_train_epoch_start`` has filled the rollout buffer. It stops
    early when the algorithm asks (``target_kl``) or when the rollout was cut short by a callback.

    It has a length on purpose: Lightning prefetches a batch from iterables of unknown length when it sets the
    data up, which would read the first epoch's rollout before it is collected.
    """

    def __init__(self, algorithm: OnPolicyAlgorithm) -> None:
        self.algorithm = algorithm

    def __len__(self) -> int:
        algo = self.algorithm
        env = algo.env
        rollout = algo.n_steps * (env.num_envs if env is not None else algo.n_envs or 1)
        batch = algo._minibatch_size() or rollout
        return algo.n_epochs * -(-rollout // batch)

    def __iter__(self) -> Iterator[Any]:
        algo, loop, buffer = self.algorithm, self.algorithm._loop, self.algorithm.rollout_buffer
        if not loop.collected or buffer is None:  # a collected rollout is in the buffer
            return
        for epoch in range(algo.n_epochs):
            loop.epoch = epoch
            for batch in buffer.get(algo._minibatch_size()):
                if loop.stop_updates:
                    return
                yield batch

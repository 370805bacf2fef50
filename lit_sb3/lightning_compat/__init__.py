"""Lightning behind one door: every private Lightning name lit_sb3 (and lit_bench) uses, and every change either makes
to how Lightning behaves, is in this package, and only here.

Lightning counts optimizer steps and calls every hook on every step; an RL run counts env steps, and a PPO update of
256 minibatches pays for each hook call. Lightning offers no public way to change either, so these patches reach into
its loops. Each is written against Lightning 2.6 (``make test-compat`` runs the Lightning-facing tests on 2.6.0 and
2.6.6; the pin ``lightning>=2.6,<2.7`` says the same; 2.4 and 2.5 fail earlier, ``Trainer.fit`` has no
``weights_only``). A new Lightning release is checked by adding it to ``make test-compat``: a changed private name
fails there, not in a user's run.

The patches, and why each exists:

1. ``loops.EnvStepFitLoop`` (``_FitLoop``): lean epochs, the module's own iterable without a new iterator per epoch.
2. ``loops.EnvStepEpochLoop`` (``_TrainingEpochLoop``): ``global_step`` and the logging step are ``env_steps``.
3. ``loops._EnvStepManualOptimization`` (``_ManualOptimization``): ``training_step`` called directly when lean.
4. ``loops._OneIterableFetcher`` (``_PrefetchDataFetcher``): one sized iterable, no per-epoch ``CombinedLoader``.
5. ``logger_connector.EnvStepLoggerConnector`` (``_LoggerConnector``, set by ``install``): ``log_every_n_steps``.
6. ``monitors.EnvStepMonitors``: ``ModelCheckpoint`` / ``EarlyStopping`` triggered on env steps.
7. ``internals.attached_trainer``: ``LightningModule._trainer`` (the trainer or None, without raising).
8. ``internals.load_checkpoint_file``: ``lightning.fabric.utilities.cloud_io._load``.
9. ``internals.spawns_processes``: ``_MultiProcessingLauncher`` (ddp_spawn cannot run an RL fit).
10. ``internals.callback_entry_points``: the callback-factory registry read once per process.
11. ``internals.step_between_counters``: ``LightningOptimizer._on_before_step`` / ``_on_after_step``.
12. ``internals.save_hyperparameters_of_caller``: ``save_hyperparameters(frame=...)`` from a subclass's
    ``__init__``, whose frame Lightning's own walk does not reach past the SB3-call-form decorator.
13. ``hook_calls.listeners`` / ``lean_fit`` / ``backward`` / ``step``: Lightning's per-step hooks called only where a
    callback, the module or the strategy overrides them (each call costs tens of microseconds, ~15 per manual
    update); otherwise what Lightning does, to the same effect.
14. ``quiet.quiet_lightning`` / ``installed_callbacks_read_once``: Lightning's per-fit tips and warnings that do not
    apply to an RL run kept off the console; the installed packages' entry points read once per process, not at
    every ``learn``'s trainer.
15. ``internals.child_rank_failures``: ``_ChildProcessObserver`` / ``subprocess_script._launch_process_observer``:
    a multi-process run's rank that fails is reported to rank 0 (lit_bench records the run as failed) instead of
    Lightning SIGKILLing rank 0, which may be waiting for it where it cannot notice.
16. ``internals.checkpoint_contents``: ``Trainer._checkpoint_connector.dump_checkpoint``: a checkpoint's contents
    without ``save_checkpoint``'s barrier, for a file only rank 0 writes (lit_bench's best model).

``tests/lit_sb3/test_lightning_door.py`` fails when a module outside this package (in lit_sb3, lit_bench or the Hydra
plugins) imports or uses a private Lightning name.
"""

from lit_sb3.lightning_compat.internals import (
    attached_trainer,
    callback_entry_points,
    checkpoint_contents,
    child_rank_failures,
    load_checkpoint_file,
    save_hyperparameters_of_caller,
    spawns_processes,
    step_between_counters,
)
from lit_sb3.lightning_compat.logger_connector import EnvStepLoggerConnector, install
from lit_sb3.lightning_compat.loops import EnvStepEpochLoop, EnvStepFitLoop, env_steps
from lit_sb3.lightning_compat.monitors import EnvStepMonitors

__all__ = [
    "EnvStepEpochLoop",
    "EnvStepFitLoop",
    "EnvStepLoggerConnector",
    "EnvStepMonitors",
    "attached_trainer",
    "callback_entry_points",
    "checkpoint_contents",
    "child_rank_failures",
    "env_steps",
    "install",
    "load_checkpoint_file",
    "save_hyperparameters_of_caller",
    "spawns_processes",
    "step_between_counters",
]

"""lit_bench's Optuna sweeper for Hydra (``hydra/sweeper=tpe``, ``tpe_ppo``, ``tpe_sac``): current Optuna, samplers
and pruners as config groups, pruning inside running trials, studies that resume."""

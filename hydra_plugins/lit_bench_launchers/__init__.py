"""lit_bench's Hydra launchers (a ``hydra_plugins`` namespace package, where Hydra finds plugins): joblib's (the
default), Ray's and submitit's launchers, changed so that a job that dies (its worker killed, its SLURM job cancelled
or past its time limit) is one failed job of the sweep, while the sweep's other jobs run to their end and its table
is printed."""

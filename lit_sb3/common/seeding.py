"""Seed offsets: the envs of one run never share a seed with each other's episodes or with another process's."""

#: offset of the evaluation envs' seed from the training seed (validation; RLEnvDataModule and the harness)
EVAL_SEED_OFFSET = 1000
#: each stage's envs get their own seeds: validation and test episodes differ, and neither replays training's
STAGE_SEED_OFFSETS = {
    "fit": 0,
    "validate": EVAL_SEED_OFFSET,
    "test": 2 * EVAL_SEED_OFFSET,
    "predict": 3 * EVAL_SEED_OFFSET,
}
#: seed offset of each process (rank) of a multi-process run: rank r uses seed + r * RANK_SEED_STRIDE
RANK_SEED_STRIDE = 10_000

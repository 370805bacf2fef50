"""Running one configured run: train (either backend), evaluate, checkpoint, keep the best model, log, score."""

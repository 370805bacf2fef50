"""What many runs and processes share: the sweep's job table, signals, start-up and the out-dir guard."""

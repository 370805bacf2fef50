"""What many runs and processes share: the sweep's job table and its guard, signals, plans and their costs, studies."""

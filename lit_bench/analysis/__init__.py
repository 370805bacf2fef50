"""Turn sweeps into tables and figures: load -> aggregate -> plot; ``lit-bench report`` is the CLI."""

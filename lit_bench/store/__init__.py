"""The run directory on disk: every file name, its format, atomic writes, and the readers of what runs wrote."""

"""The run directory on disk: its format (``format``: every file, ``summary.json``'s fields, the version), reading
and writing it atomically (``rundir``), and the scores a run records (``scores``). Imports no other layer."""

"""Building blocks shared by every algorithm (``base.BaseAlgorithm``, ``on_policy``, ``off_policy``, ...).

Nothing is imported here: importing one part (e.g. ``lit_sb3.common.optim`` from an algorithm)
must not pull in the algorithm base classes.
"""

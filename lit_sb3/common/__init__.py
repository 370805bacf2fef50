"""Building blocks shared by every algorithm (``base.BaseAlgorithm``, ``on_policy``, ``off_policy``, ...).

Nothing is imported here: the trainer imports modules of this package, and ``base`` imports the trainer.
"""

"""One sub-package per algorithm: ``<algo>.py`` holds the LightningModule, ``policies.py`` the policies."""

"""One sub-package per algorithm: ``<algo>.py`` holds the LightningModule; its policies are SB3's or sb3-contrib's,
imported."""

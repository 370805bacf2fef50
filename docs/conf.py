"""Sphinx settings of the docs site (``make docs``): Markdown pages through MyST, the API from docstrings through
autodoc, Furo's theme. Built with ``-W --keep-going``: a broken cross-reference, a page outside every toctree or a
docstring that does not parse fails the build."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the checkout's packages, as the tests import them

project = "lit_sb3 + lit_bench"
author = "the lit_sb3 developers"
copyright = "2026, the lit_sb3 developers"

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.viewcode"]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build"]
myst_heading_anchors = 3  # links to a page's sections: [text](page.md#a-heading)
suppress_warnings = ["myst.header"]  # generated pages open with a comment line before their title

autodoc_member_order = "bysource"
autodoc_typehints = "description"  # types in the parameter lists, not in long signatures
autodoc_default_options = {"members": True, "show-inheritance": True}

highlight_language = "none"  # a fence without a language (a directory tree, console output) is plain text

html_theme = "furo"
html_title = "lit_sb3 + lit_bench"

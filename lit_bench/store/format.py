"""Names that run directories written before the layered layout (format 1) may hold in ``config.yaml``.

``_target_`` and ``package`` entries named ``lit_bench.noise.*`` and ``lit_bench.wrappers.*`` before the modules
moved into ``lit_bench.config``. ``MOVED`` is the one table of those names: the old module is importable as the new
one (``lit_bench/__init__.py``), and config ids are computed over the old spelling (``legacy_spelling``), so a config
keeps its id and its directory across the move.
"""

from __future__ import annotations

from typing import Any

MOVED: dict[str, str] = {
    "lit_bench.noise": "lit_bench.config.noise",
    "lit_bench.wrappers": "lit_bench.config.wrappers",
    "lit_bench.sweep": "lit_bench.control.sweep",   # Hydra callbacks (``.hydra/config.yaml``)
    "lit_bench.guard": "lit_bench.control.guard",
}
_OLD = {new: old for old, new in MOVED.items()}


def _spelled_old(text: str) -> str:
    for new, old in _OLD.items():
        if text == new or text.startswith((f"{new}.", f"{new}:")):
            return old + text[len(new):]
    return text


def legacy_spelling(data: Any) -> Any:
    """``data`` (plain config data) with every moved module path in its string values spelled as before the move."""
    if isinstance(data, dict):
        return {key: legacy_spelling(value) for key, value in data.items()}
    if isinstance(data, list):
        return [legacy_spelling(value) for value in data]
    return _spelled_old(data) if isinstance(data, str) else data

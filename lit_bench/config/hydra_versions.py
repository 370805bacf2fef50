"""What differs between the Hydra / OmegaConf releases the harness runs on (Hydra 1.3 with OmegaConf 2.3, Hydra 1.4
with OmegaConf 2.4), in one place, so that neither warns about the harness's own calls.

- ``version_base``: Hydra 1.3 warns when it is missing (it would select 1.1's behaviour), Hydra 1.4 warns when it is
  given (1.5 removes it). The harness wants the behaviour both call current: "1.3" on 1.3, nothing on 1.4.
- Resolvers: OmegaConf 2.4 deprecates ``register_new_resolver`` for ``register_resolver``, a name that OmegaConf 2.3
  still gives to its old, string-only resolver API.
- Execution whitelists: Hydra 1.4 warns when ``instantiate`` resolves a ``_target_`` that no whitelist names (1.5
  refuses it); Hydra 1.3 has no whitelist, and would pass an ``_execution_whitelist_`` argument on to the target.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from importlib.metadata import version
from typing import Any

from omegaconf import OmegaConf


def _release(dist: str) -> tuple[int, int]:
    major, minor = version(dist).split(".")[:2]
    return int(major), int("".join(c for c in minor if c.isdigit()) or 0)


#: keyword arguments for ``hydra.main`` / ``initialize_config_dir``
VERSION_BASE: dict[str, str] = {"version_base": "1.3"} if _release("hydra-core") < (1, 4) else {}


def register_resolver(name: str, resolver: Callable[..., Any]) -> None:
    """Register (or replace) an OmegaConf resolver under ``name`` with the current API of the installed OmegaConf."""
    if _release("omegaconf") >= (2, 4):
        OmegaConf.register_resolver(name, resolver, replace=True)  # type: ignore[call-arg,unused-ignore]
    else:
        OmegaConf.register_new_resolver(name, resolver, replace=True)


#: whether ``hydra.main`` and ``instantiate`` take an execution whitelist (Hydra 1.4)
WHITELISTS = _release("hydra-core") >= (1, 4)


def main_whitelist(names: Sequence[str]) -> dict[str, Any]:
    """Keyword arguments for ``hydra.main``: the targets its ``instantiate`` calls may resolve (none on Hydra 1.3)."""
    return {"execution_whitelist": sorted(set(names))} if WHITELISTS else {}


@contextlib.contextmanager
def whitelisted(names: Sequence[str]) -> Iterator[None]:
    """``instantiate`` calls inside may resolve these targets too (Hydra 1.4; nothing to do on 1.3)."""
    if not WHITELISTS or not names:
        yield
        return
    from hydra.utils import execution_whitelist  # type: ignore[attr-defined,unused-ignore]

    with execution_whitelist(sorted(set(names))):
        yield

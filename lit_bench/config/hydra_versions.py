"""What differs between the Hydra / OmegaConf releases the harness runs on (Hydra 1.3 with OmegaConf 2.3, Hydra 1.4
with OmegaConf 2.4), in one place, so that neither warns about the harness's own calls.

- ``version_base``: Hydra 1.3 warns when it is missing (it would select 1.1's behaviour), Hydra 1.4 warns when it is
  given (1.5 removes it). The harness wants the behaviour both call current: "1.3" on 1.3, nothing on 1.4.
- Resolvers: OmegaConf 2.4 deprecates ``register_new_resolver`` for ``register_resolver``, a name that OmegaConf 2.3
  still gives to its old, string-only resolver API.
"""

from __future__ import annotations

from collections.abc import Callable
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

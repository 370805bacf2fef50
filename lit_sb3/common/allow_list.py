"""The allow-list: the classes and callables a file read back may name, and how a user extends it.

An entry is ``module:qualname`` of where the object is *defined*: a file's name must equal an entry (or one of the
few explicit aliases below, e.g. numpy 1.x's ``numpy.core`` paths), never a prefix of one, never a re-export
(``lit_sb3.common.sb3_bridge.HumanOutputFormat`` is SB3's logger class imported there: refused). The objects come
from the list, not from the file: nothing a file names is imported, and a dotted name is never walked attribute by
attribute (pickle protocol 4 would turn ``gymnasium.spaces.box`` + ``gym.os.system`` into ``os.system``).

Each entry is safe to construct from data: building one has no effect outside the process (no file, no process, no
import). A user extends the list once per process with :func:`allow` (their own schedule classes, the RL Zoo's
``rl_zoo3.utils:SimpleLinearSchedule``, an env package) or ``LIT_SB3_ALLOW``; :func:`trusted` or ``LIT_SB3_TRUST=1``
trusts every file (full unpickling) for code paths that cannot pass ``trusted=True`` / ``--trust``. The readers
that apply the list are in :mod:`lit_sb3.common.safe_load`.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

TRUST_ENV = "LIT_SB3_TRUST"
#: comma-separated allow() entries from the environment, for tools a user cannot add a line to (RL Zoo scripts, enjoy)
ALLOW_ENV = "LIT_SB3_ALLOW"

_MODULES_OF = {  # module -> the qualified names defined there that a file may name
    # action noise, schedules, train frequencies, HER's strategy: plain data holders
    "stable_baselines3.common.noise": ("NormalActionNoise", "OrnsteinUhlenbeckActionNoise", "VectorizedActionNoise"),
    "stable_baselines3.common.utils": ("ConstantSchedule", "FloatSchedule", "LinearSchedule"),
    "stable_baselines3.common.type_aliases": ("TrainFreq", "TrainFrequencyUnit"),
    "stable_baselines3.her.goal_selection_strategy": ("GoalSelectionStrategy",),
    # classes hyperparameters name (policy classes come from the algorithms' own policy_aliases, see _policies)
    "stable_baselines3.common.buffers": (
        "ReplayBuffer",
        "DictReplayBuffer",
        "NStepReplayBuffer",
        "RolloutBuffer",
        "DictRolloutBuffer",
    ),
    "stable_baselines3.her.her_replay_buffer": ("HerReplayBuffer",),
    "lit_sb3.common.her": ("HerReplayBuffer",),
    "sb3_contrib.common.recurrent.buffers": ("RecurrentRolloutBuffer", "RecurrentDictRolloutBuffer"),
    "sb3_contrib.common.maskable.buffers": ("MaskableRolloutBuffer", "MaskableDictRolloutBuffer"),
    "stable_baselines3.common.torch_layers": ("FlattenExtractor", "NatureCNN", "CombinedExtractor", "MlpExtractor"),
    "torch.nn.modules.activation": (
        "ReLU",
        "Tanh",
        "ELU",
        "LeakyReLU",
        "GELU",
        "SiLU",
        "Sigmoid",
        "Softplus",
        "SELU",
        "Mish",
        "CELU",
        "ReLU6",
        "Hardtanh",
    ),
    "torch.nn.modules.linear": ("Identity",),
    "torch": ("device",),  # a buffer's device (a name such as "cpu": building one touches no device)
    "torch.optim.adam": ("Adam",),
    "torch.optim.adamw": ("AdamW",),
    "torch.optim.sgd": ("SGD",),
    "torch.optim.rmsprop": ("RMSprop",),
    "stable_baselines3.common.sb2_compat.rmsprop_tf_like": ("RMSpropTFLike",),
    # VecNormalize statistics and the spaces they hold
    "stable_baselines3.common.vec_env.vec_normalize": ("VecNormalize",),
    "stable_baselines3.common.running_mean_std": ("RunningMeanStd",),
    "gymnasium.spaces.box": ("Box",),
    "gymnasium.spaces.discrete": ("Discrete",),
    "gymnasium.spaces.multi_discrete": ("MultiDiscrete",),
    "gymnasium.spaces.multi_binary": ("MultiBinary",),
    "gymnasium.spaces.dict": ("Dict",),
    "gymnasium.spaces.tuple": ("Tuple",),
    "collections": ("OrderedDict",),
    # what numpy arrays, scalars and generators are pickled with
    "numpy": (
        "ndarray",
        "dtype",
        "bool",
        "float16",
        "float32",
        "float64",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
    ),
    "numpy._core.multiarray": ("_reconstruct", "scalar"),
    "numpy._core.numeric": ("_frombuffer",),
    "numpy.random._pickle": ("__generator_ctor", "__bit_generator_ctor", "__randomstate_ctor"),
    "numpy.random._generator": ("Generator",),
    "numpy.random._pcg64": ("PCG64",),
    "numpy.random._mt19937": ("MT19937",),
    "numpy.random.bit_generator": ("SeedSequence", "__pyx_unpickle_SeedSequence"),
}
#: names files written with older libraries use for an entry (exact names, each mapped to one entry)
_ALIASES = {
    "numpy.core.multiarray:_reconstruct": "numpy._core.multiarray:_reconstruct",
    "numpy.core.multiarray:scalar": "numpy._core.multiarray:scalar",
    "numpy.core.numeric:_frombuffer": "numpy._core.numeric:_frombuffer",
}


class Refused(ValueError):
    """A file names code outside the allow-list (or a setting is malformed): one line, naming what and how."""


def _defined_name(obj: Any) -> str | None:
    """``module:qualname`` of where ``obj`` is defined, or None when it has no importable name."""
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", getattr(obj, "__name__", None))
    if not isinstance(module, str) or not isinstance(qualname, str) or "<" in qualname:
        return None
    return f"{module}:{qualname}"


def _import_defined(entry: str) -> Any:
    """The object ``entry`` (``module:qualname``, a name from lit_sb3's list or the user) names, checked to be
    defined there; None when absent or defined elsewhere (a re-export)."""
    obj = _import_anywhere(entry)
    return obj if obj is not None and _defined_name(obj) == entry else None


def _policies() -> dict[str, Any]:
    """Every policy class an SB3 / sb3-contrib algorithm names by alias (their own classes, not the aliases)."""
    import sb3_contrib
    import stable_baselines3

    found = {}
    for package in (stable_baselines3, sb3_contrib):
        for name in dir(package):
            for cls in getattr(getattr(package, name), "policy_aliases", {}).values():
                entry = _defined_name(cls)
                if entry is not None:
                    found[entry] = cls
    return found


@dataclass
class _Registry:
    builtin: dict[str, Any] | None = None  # entry -> object, built on first use
    user: dict[str, Any] = field(default_factory=dict)  # entry -> object, or None for a module (an env package)
    trusted_depth: int = 0  # open `trusted()` blocks

    def entries(self) -> dict[str, Any]:
        self.read_environment()
        if self.builtin is None:
            import numpy as np

            found: dict[str, Any] = {
                f"{module}:{name}": None for module, names in _MODULES_OF.items() for name in names
            }
            found = {entry: obj for entry in found if (obj := _import_defined(entry)) is not None}
            found.update(
                {
                    name: cls
                    for cls in vars(np.dtypes).values()
                    if isinstance(cls, type) and issubclass(cls, np.dtype) and (name := _defined_name(cls))
                }
            )
            found.update(_policies())
            self.builtin = found
        return {**self.builtin, **{k: v for k, v in self.user.items() if v is not None}}

    def read_environment(self) -> None:
        """Register the ``LIT_SB3_ALLOW`` entries not registered yet (once each; a bad one is one line)."""
        for item in filter(None, (part.strip() for part in os.environ.get(ALLOW_ENV, "").split(","))):
            if item not in self.user:
                try:
                    allow(item)
                except Refused as error:
                    raise Refused(f"{ALLOW_ENV}: {error}") from None


_REGISTRY = _Registry()


def allow(*objects: Any) -> None:
    """Let files read back in this process name ``objects``: classes or functions (or ``"module:qualname"``
    strings, imported now and checked to be defined there), or modules / ``"module"`` strings (env packages a
    run's ``env.package`` may import). Raises :class:`Refused` for a name that is
    not where its object is defined (a re-export) or has no importable name (a lambda, a local class)."""
    for item in objects:
        if isinstance(item, types.ModuleType):
            _REGISTRY.user[item.__name__] = None
        elif isinstance(item, str) and ":" not in item:
            if not _is_module(item):
                raise Refused(
                    f"allow: {item!r}: name it as 'module:qualname' (e.g. 'rl_zoo3.utils:"
                    f"SimpleLinearSchedule'), or as an importable module (an env package)"
                )
            _REGISTRY.user[item] = None
        elif isinstance(item, str):
            obj = _import_defined(item)
            if obj is None:
                found = _import_anywhere(item)
                if found is None:
                    raise Refused(f"allow: {item!r}: no such module or name (is its package installed?)")
                where = f": it is {_defined_name(found)}, imported there" if _defined_name(found) else ""
                raise Refused(f"allow: {item!r} is not defined where it is named{where}; name it where it is defined")
            _REGISTRY.user[item] = obj
        else:
            entry = _defined_name(item)
            if entry is None:
                raise Refused(
                    f"allow: {item!r} has no importable name (a lambda or a local class); define it at module level"
                )
            _REGISTRY.user[entry] = item


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a parent that is not a package (a class's dotted path), or not installed
        return False


def _import_anywhere(entry: str) -> Any:
    """The object ``entry`` names, wherever it is defined; None when absent."""
    module, _, qualname = entry.partition(":")
    try:
        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        return None
    return obj


def allowed_name(name: str) -> Any:
    """The allow-listed object ``name`` (``module:qualname``, or the dotted ``module.qualname`` torch and the JSON
    mirror write) names; None when no entry (nor explicit alias) is exactly that name. Imports nothing it is given."""
    entries = _REGISTRY.entries()
    if ":" in name:
        return entries.get(_ALIASES.get(name, name))
    dotted = {entry.replace(":", "."): obj for entry, obj in entries.items()}
    dotted.update({alias.replace(":", "."): entries[entry] for alias, entry in _ALIASES.items() if entry in entries})
    return dotted.get(name)


def allowed_module(name: str) -> bool:
    """Whether the user allowed importing module ``name`` (an env package) with :func:`allow`."""
    _REGISTRY.read_environment()
    return name in _REGISTRY.user and _REGISTRY.user[name] is None


@contextlib.contextmanager
def trusted() -> Iterator[None]:
    """Inside the block every file read back is trusted (full unpickling), as with ``trusted=True`` / ``--trust``:
    for code paths that cannot pass it (the RL Zoo's ``ALGOS[algo].load(path)``). Process-wide, not per thread."""
    _REGISTRY.trusted_depth += 1
    try:
        yield
    finally:
        _REGISTRY.trusted_depth -= 1


def is_trusted() -> bool:
    """Whether files are trusted now: inside :func:`trusted`, or ``LIT_SB3_TRUST=1`` in the environment."""
    value = os.environ.get(TRUST_ENV, "0").strip()
    if value not in ("0", "1", ""):
        raise Refused(f"{TRUST_ENV}={value}: use 1 (trust every file read back) or 0")
    return _REGISTRY.trusted_depth > 0 or value == "1"

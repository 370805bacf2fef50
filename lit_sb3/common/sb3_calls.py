"""SB3's call forms on lit_sb3's classes, next to the spec's (one place for every algorithm).

- Constructor: SB3 writes ``PPO(policy, env, learning_rate, ...)``; the spec ``PPO(policy, learning_rate, ...,
  env=...)``. An env (an env id, a ``gymnasium.Env`` or a ``VecEnv``) in the second position is SB3's form: the
  positional arguments are named by SB3's own signature of the algorithm (which also places ``tensorboard_log``).
  Anything else there (a number, a schedule) keeps the spec's meaning.
- ``learn``: SB3 writes ``learn(n, callback, log_interval, ...)``; the spec ``learn(n, env, callback,
  log_every_n_steps, ...)``. A callback (an SB3 ``BaseCallback``, a list, or a function of ``(locals, globals)``)
  in the second position is SB3's form; ``log_interval=`` is SB3's name of ``log_every_n_steps=`` in both forms.

A call that mixes the forms so that one argument would get two values is refused in one line naming both forms.
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable
from typing import Any, TypeVar, cast

import gymnasium as gym
import sb3_contrib
import stable_baselines3
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecEnv

#: constructor keywords SB3 has and the spec's signatures do not; set as attributes after ``__init__``
SB3_ONLY_INIT_KEYWORDS = ("tensorboard_log",)


LearnMethod = TypeVar("LearnMethod", bound=Callable[..., Any])


def is_env(value: Any) -> bool:
    """What SB3 accepts as a constructor's ``env``: an env id, a gymnasium env or a VecEnv."""
    return isinstance(value, (str, gym.Env, VecEnv))


def is_callback(value: Any) -> bool:
    """What SB3 accepts as ``learn``'s ``callback`` and the spec's ``env`` does not (an env factory takes no
    arguments; an SB3 callback function takes ``(locals, globals)``)."""
    if isinstance(value, (BaseCallback, list)):
        return True
    if not callable(value) or isinstance(value, type) or is_env(value):
        return False
    try:
        params = inspect.signature(value).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in positional)


def _sb3_counterpart(method: Callable[..., Any]) -> Callable[..., Any] | None:
    """SB3's (or sb3-contrib's) method of the same name on the class of the same name as the one defining ``method``.

    Read from the algorithm's subpackage (``stable_baselines3.ppo``), not the top level: code that points
    ``stable_baselines3.PPO`` at lit_sb3's class (to run SB3's own tests or scripts on it) must not make it its own
    counterpart.
    """
    import lit_sb3  # at call time: lit_sb3's package imports the algorithms that import this module

    owner = method.__qualname__.rsplit(".", 1)[0]
    package = lit_sb3._ALGORITHMS.get(owner)
    if package is None:
        return None
    for root in (stable_baselines3, sb3_contrib):
        try:
            sb3_class = getattr(importlib.import_module(f"{root.__name__}.{package}"), owner)
        except (ModuleNotFoundError, AttributeError):
            continue
        return getattr(sb3_class, method.__name__, None)
    return None


def _parameter_names(method: Callable[..., Any]) -> list[str]:
    return [
        p.name
        for p in inspect.signature(method).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name not in ("self", "cls")
    ]


def _sb3_positional_order(method: Callable[..., Any], inserted: str, removed: str | None = None) -> list[str]:
    """SB3's positional parameter names of ``method``: its SB3 counterpart's when that names only parameters lit_sb3
    accepts too, else ``method``'s own with ``inserted`` second (and ``removed`` left out)."""
    own = [name for name in _parameter_names(method) if name not in (removed, inserted)]
    accepted = set(inspect.signature(method).parameters) | set(SB3_ONLY_INIT_KEYWORDS) | {"log_interval", inserted}
    counterpart = _sb3_counterpart(method)
    if counterpart is not None:
        order = _parameter_names(counterpart)
        if set(order) <= accepted:
            return order
    return [own[0], inserted, *own[1:]]


def _bind(
    order: list[str], args: tuple[Any, ...], kwargs: dict[str, Any], call: str, sb3_form: str, spec_form: str
) -> dict[str, Any]:
    if len(args) > len(order):
        raise TypeError(
            f"{call}: {len(args)} positional arguments, SB3's form takes at most {len(order)} "
            f"({sb3_form}); the spec's form is {spec_form}"
        )
    bound = dict(zip(order, args))
    twice = sorted(set(bound) & set(kwargs))
    if twice:
        raise TypeError(
            f"{call}: {', '.join(twice)} given both by position in SB3's form ({sb3_form}) and by "
            f"keyword; use one form (the spec's is {spec_form})"
        )
    return {**bound, **kwargs}


def constructor_arguments(
    cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``cls(*args, **kwargs)`` in the spec's form (SB3's positional form named by SB3's signature)."""
    if len(args) < 2 or not is_env(args[1]):
        return args, kwargs
    name, second = cls.__name__, _parameter_names(cls.__init__)[1]  # type: ignore[misc]
    sb3_form, spec_form = f"{name}(policy, env, {second}, ...)", f"{name}(policy, {second}, ..., env=...)"
    if "env" in kwargs:
        raise TypeError(
            f"{name}: env given both second by position (SB3's form {sb3_form}) and as env= (the spec's "
            f"form {spec_form}); give it once"
        )
    order = _sb3_positional_order(cls.__init__, "env")  # type: ignore[misc]
    return (), _bind(order, args, kwargs, name, sb3_form, spec_form)


def learn_arguments(
    method: Callable[..., Any], owner: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """``learn(*args, **kwargs)`` as the spec's keywords (SB3's ``learn(n, callback, log_interval, ...)`` too)."""
    call = f"{owner}.learn"
    kwargs = dict(kwargs)
    if "log_interval" in kwargs:
        if "log_every_n_steps" in kwargs:
            raise TypeError(
                f"{call}: log_interval (SB3's name) and log_every_n_steps (the spec's) name the same setting; give one"
            )
        kwargs["log_every_n_steps"] = kwargs.pop("log_interval")
    if len(args) >= 2 and is_callback(args[1]):
        order = _sb3_positional_order(method, "callback", removed="env")
        order = ["log_every_n_steps" if name == "log_interval" else name for name in order]
        sb3_form = "learn(total_timesteps, callback, log_interval, ...)"
        return _bind(order, args, kwargs, call, sb3_form, "learn(total_timesteps, env, callback, ...)")
    bound = inspect.signature(method).bind_partial(None, *args, **kwargs).arguments  # None: self
    bound.pop(next(iter(bound)))
    return dict(bound)


class SB3CallForms(type):
    """Metaclass of :class:`~lit_sb3.common.base.BaseAlgorithm`: constructs from SB3's form as from the spec's.

    The spec's signature stays the class's signature (``inspect.signature(PPO)`` shows ``__init__``'s, plus the
    SB3-only keyword ``tensorboard_log``); a ``learn`` a class defines accepts SB3's form too.
    """

    def __init__(cls, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> None:
        super().__init__(name, bases, namespace)
        if "learn" in namespace:
            cls.learn = accepts_sb3_learn_forms(namespace["learn"])

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        args, kwargs = constructor_arguments(cls, args, kwargs)
        extra = {key: kwargs.pop(key) for key in SB3_ONLY_INIT_KEYWORDS if key in kwargs}
        instance = type.__call__(cls, *args, **kwargs)
        for key, value in extra.items():
            setattr(instance, key, value)
        return instance

    @property
    def __signature__(cls) -> inspect.Signature:
        signature = inspect.signature(cls.__init__)  # type: ignore[misc]
        params = list(signature.parameters.values())[1:]
        names = {p.name for p in params}
        extra = [
            inspect.Parameter(key, inspect.Parameter.KEYWORD_ONLY, default=None)
            for key in SB3_ONLY_INIT_KEYWORDS
            if key not in names
        ]
        tail = [p for p in params if p.kind == p.VAR_KEYWORD]
        return signature.replace(parameters=[p for p in params if p.kind != p.VAR_KEYWORD] + extra + tail)


def accepts_sb3_learn_forms(learn: LearnMethod) -> LearnMethod:
    """Wrap an algorithm's ``learn`` so that SB3's form and keywords reach it as the spec's (signature kept)."""
    if getattr(learn, "_sb3_forms", False):
        return learn

    @functools.wraps(learn)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        return learn(self, **learn_arguments(learn, type(self).__name__, args, kwargs))

    wrapper._sb3_forms = True  # type: ignore[attr-defined]
    return cast(LearnMethod, wrapper)  # the spec's signature (SB3's forms are accepted on top of it)

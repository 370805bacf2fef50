"""SB3's call forms, next to the spec's: one decorator for an algorithm's ``__init__``, one for its ``learn``.

- Constructor: SB3 writes ``PPO(policy, env, learning_rate, ...)``; the spec ``PPO(policy, learning_rate, ...,
  env=...)``. An env (an env id, a ``gymnasium.Env`` or a ``VecEnv``) second is SB3's form. SB3's positional order
  is the spec's with ``env`` second and ``tensorboard_log`` after ``stats_window_size`` (before ``policy_kwargs``
  where there is none): true of all thirteen algorithms (a test compares it with SB3's signatures).
- ``learn``: SB3 writes ``learn(n, callback, log_interval, ...)``; the spec ``learn(n, env, callback,
  log_every_n_steps, ...)``. A callback (an SB3 ``BaseCallback``, a list, or a function of ``(locals, globals)``)
  in the second position is SB3's form; ``log_interval=`` is SB3's name of ``log_every_n_steps=`` in both forms.

Python binds positional arguments before the first line of a method runs, so telling the forms apart needs the
arguments as given: each decorator receives them and calls the method with the spec's keywords. The method's own
signature, the spec's, stays what ``inspect.signature`` shows (``functools.wraps``).

A call that mixes the forms so that one argument would get two values is refused in one line naming both forms.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar, cast

import gymnasium as gym
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecEnv

from lit_sb3.common.saved_state import NOT_HPARAMS
from lit_sb3.lightning_compat import save_hyperparameters_of_caller

Method = TypeVar("Method", bound=Callable[..., Any])


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


def _positional_names(method: Callable[..., Any]) -> list[str]:
    return [
        p.name
        for p in inspect.signature(method).parameters.values()
        if p.kind == p.POSITIONAL_OR_KEYWORD and p.name != "self"
    ]


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


def sb3_constructor_order(spec_order: list[str]) -> list[str]:
    """SB3's positional parameter names of a constructor whose spec order is ``spec_order``: ``env`` second and
    ``tensorboard_log`` after ``stats_window_size`` (before ``policy_kwargs`` where there is none)."""
    order = [spec_order[0], "env", *spec_order[1:]]
    if "stats_window_size" in order:
        order.insert(order.index("stats_window_size") + 1, "tensorboard_log")
    else:
        order.insert(order.index("policy_kwargs"), "tensorboard_log")
    return order


def accepts_sb3_constructor_form(init: Method) -> Method:
    """Decorate an algorithm's ``__init__`` (the spec's signature) to take SB3's ``Algo(policy, env, ...)`` too."""
    spec_order = _positional_names(init)
    sb3_order = sb3_constructor_order(spec_order)

    @functools.wraps(init)
    def constructor(self: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) >= 2 and is_env(args[1]):
            name, second = type(self).__name__, spec_order[1]
            sb3_form, spec_form = f"{name}(policy, env, {second}, ...)", f"{name}(policy, {second}, ..., env=...)"
            if "env" in kwargs:
                raise TypeError(
                    f"{name}: env given both second by position (SB3's form {sb3_form}) and as env= (the spec's "
                    f"form {spec_form}); give it once"
                )
            args, kwargs = (), _bind(sb3_order, args, kwargs, name, sb3_form, spec_form)
        init(self, *args, **kwargs)
        if type(self).__init__ is not constructor:  # a subclass's __init__ called this one: its arguments count
            save_hyperparameters_of_caller(self, ignore=NOT_HPARAMS)
        else:  # what the base classes' __init__ took besides (load_from_checkpoint passes every entry back)
            for name in set(self.hparams) - set(spec_order):
                del self.hparams[name]

    return cast(Method, constructor)


def accepts_sb3_learn_form(learn: Method) -> Method:
    """Decorate an algorithm's ``learn`` (the spec's signature) to take SB3's ``learn(n, callback, log_interval,
    ...)`` and its ``log_interval=`` keyword too."""
    spec_order = _positional_names(learn)
    sb3_order = [name for name in spec_order if name not in ("env", "default_root_dir")]  # SB3's learn has neither

    @functools.wraps(learn)
    def sb3_learn(self: Any, *args: Any, **kwargs: Any) -> Any:
        call = f"{type(self).__name__}.learn"
        if "log_interval" in kwargs:
            if "log_every_n_steps" in kwargs:
                raise TypeError(
                    f"{call}: log_interval (SB3's name) and log_every_n_steps (the spec's) name the same setting; "
                    f"give one"
                )
            kwargs["log_every_n_steps"] = kwargs.pop("log_interval")
        if len(args) >= 2 and is_callback(args[1]):
            sb3_form = "learn(total_timesteps, callback, log_interval, ...)"
            kwargs = _bind(sb3_order, args, kwargs, call, sb3_form, "learn(total_timesteps, env, callback, ...)")
            args = ()
        return learn(self, *args, **kwargs)

    return cast(Method, sb3_learn)

"""Compare a callable's signature with a spec'd parameter list written as Python source."""

from __future__ import annotations

import ast
import inspect
from typing import Any

_REQUIRED = object()


def parse_spec(params: str) -> list[tuple[str, Any]]:
    """``"a, b=1, c='x'"`` -> [("a", REQUIRED), ("b", 1), ("c", "x")] (defaults must be literals)."""
    func = ast.parse(f"def f({params}): pass").body[0]
    args = func.args
    positional = args.args
    defaults = [_REQUIRED] * (len(positional) - len(args.defaults)) + [ast.literal_eval(d) for d in args.defaults]
    out = [(a.arg, d) for a, d in zip(positional, defaults)]
    out += [
        (a.arg, _REQUIRED if d is None else ast.literal_eval(d)) for a, d in zip(args.kwonlyargs, args.kw_defaults)
    ]
    return out


def signature_problems(func: Any, spec: str) -> list[str]:
    """What differs between ``func``'s signature and the spec (extra parameters must have defaults)."""
    actual = [p for p in inspect.signature(func).parameters.values() if p.name not in ("self", "cls")]
    names = [p.name for p in actual]
    problems, last = [], -1
    expected = parse_spec(spec)
    for name, default in expected:
        if name not in names:
            problems.append(f"missing {name}")
            continue
        idx = names.index(name)
        if idx < last:
            problems.append(f"{name} out of order")
        last = idx
        got = actual[idx].default
        if default is _REQUIRED:
            continue
        if got is inspect.Parameter.empty:
            problems.append(f"{name} has no default (spec {default!r})")
        elif got != default or (type(got) is not type(default) and not isinstance(default, (int, float))):
            problems.append(f"{name} default {got!r} != spec {default!r}")
    spec_names = {n for n, _ in expected}
    for p in actual:
        if p.name not in spec_names and p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL,
                                                                                                  p.VAR_KEYWORD):
            problems.append(f"extra required parameter {p.name}")
    return problems

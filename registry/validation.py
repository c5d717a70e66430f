"""Type-check every gin binding against its parameter's annotation before anything is built.

gin passes a bound value through untouched, so `loop.steps = 'many'` would only fail deep
inside training. Checking the parsed configuration against the constructors' annotations turns
it into one message naming the binding, the value and the type expected. Annotations this
module cannot judge (classes of other libraries, Any, unresolvable strings) are not checked;
references (`@name`, `%macro`) are left to gin. Ranges written into annotations
(`registry.constraints`: `PositiveInt`, `Widths`, ...) are checked here too, and by
`check_arguments` when a constructor is called from Python: one declaration, both paths.
"""

from __future__ import annotations

import collections.abc
import inspect
import types
import typing
from typing import Any

import gin
import gin.config

from registry import gin_state
from registry.constraints import Range
from registry.core import entry_of
from registry.errors import RecipeError

UNKNOWN = None  # _accepts' answer when it cannot judge


def check_bindings() -> None:
    """Raise RecipeError for the first bound value that its parameter's annotation rules out."""
    for (scope, selector), params in gin_state.bindings():
        configurable = gin_state.configurable(selector)
        if configurable is None:
            continue
        hints = _annotations(configurable.wrapped)
        defaults = _defaults(configurable.wrapped)
        where = f"{scope}/" if scope else ""
        short = selector.rsplit(".", 1)[-1]
        for name, value in params.items():
            _check_kind(f"{where}{short}.{name}", value, defaults.get(name))
            if name in hints:
                _check_value(f"{where}{short}.{name}", value, hints[name], _BINDING_HINT)


def shadowed_bindings() -> list[str]:
    """Unscoped bindings that nothing used because every build of their configurable was in a
    scope that binds the same argument itself (call after building): `context_encoder.gate =
    @batch_gate` next to `a/context_encoder.gate` and `b/context_encoder.gate`, say."""
    built: dict[str, list[str]] = {}
    for (scope, selector), _ in gin_state.built():
        built.setdefault(selector, []).append(scope)
    found = []
    for (scope, selector), params in gin_state.bindings():
        if scope or selector not in built:
            continue
        for arg in params:
            if all(_scope_binds(s, selector, arg) for s in built[selector]):
                short = selector.rsplit(".", 1)[-1]
                scopes = sorted(set(built[selector]))
                found.append(
                    f"{short}.{arg} is never used: every {short} is built in a scope that "
                    f"binds {arg} itself ({', '.join(f'{s}/{short}.{arg}' for s in scopes)}); "
                    "bind the scoped one, or remove it"
                )
    return found


def _scope_binds(scope: str, selector: str, arg: str) -> bool:
    """A build in `scope` (e.g. 'a/b') takes `arg` from a scoped binding, not the unscoped one."""
    if not scope:
        return False
    parts = scope.split("/")
    prefixes = {"/".join(parts[: i + 1]) for i in range(len(parts))} | set(parts)
    return any(arg in gin_state.bound_for(p, selector) for p in prefixes)


def check_arguments(owner: str, function: Any, values: dict[str, Any]) -> None:
    """The range check of `check_bindings` for a constructor called from Python:
    `check_arguments("focal", FocalTrainer.__init__, locals())` raises a RecipeError naming
    `loop.steps` when `steps` is outside what its annotation allows."""
    hints = _annotations(function)
    for name, value in values.items():
        if name in hints and _ranges(hints[name]):
            _check_value(f"{owner}.{name}", value, hints[name], "")


_BINDING_HINT = " (check the recipe files and --gin_param bindings)"


def _check_value(binding: str, value: Any, annotation: Any, hint: str) -> None:
    if _accepts(value, annotation) is not False:
        return
    wrong_type = _accepts(value, annotation, ranges=False) is False
    got = f", got {type(value).__name__}" if wrong_type else ""
    raise RecipeError(f"{binding} = {value!r}: expected {_describe(annotation)}{got}{hint}")


def _ranges(annotation: Any) -> list[Range]:
    """Every Range inside an annotation (nested in tuples and unions too)."""
    if typing.get_origin(annotation) is typing.Annotated:
        meta = annotation.__metadata__
        return [m for m in meta if isinstance(m, Range)] + _ranges(annotation.__origin__)
    return [r for a in typing.get_args(annotation) for r in _ranges(a)]


def _check_kind(binding: str, value: Any, default: Any) -> None:
    """A reference bound where the default is a registered component must name a component
    of the same kind (an encoder where an encoder goes)."""
    if not isinstance(value, gin.config.ConfigurableReference) or value.evaluate:
        return
    expected, chosen = entry_of(default), entry_of(value.configurable.wrapped)
    if expected is None or chosen is None or expected.kind == chosen.kind:
        return
    raise RecipeError(
        f"{binding} = @{chosen.name}: {chosen.name} is a registered {chosen.kind}, but this "
        f"parameter takes a(n) {expected.kind} (its default is @{expected.name}); "
        f"see `python tools/catalog.py --kind {expected.kind}`"
    )


def _defaults(obj: Any) -> dict[str, Any]:
    target = obj.__init__ if inspect.isclass(obj) else obj
    try:
        params = inspect.signature(target).parameters
    except (TypeError, ValueError):
        return {}
    return {n: p.default for n, p in params.items() if p.default is not inspect.Parameter.empty}


def _annotations(obj: Any) -> dict[str, Any]:
    """Each parameter's annotation, evaluated where the function was written; skips any that
    do not evaluate."""
    target = obj.__init__ if inspect.isclass(obj) else obj
    try:
        params = inspect.signature(target).parameters
    except (TypeError, ValueError):
        return {}
    namespace = getattr(inspect.unwrap(target), "__globals__", {})
    hints = {}
    for name, p in params.items():
        annotation = p.annotation
        if annotation is inspect.Parameter.empty:
            continue
        if isinstance(annotation, str):
            try:
                annotation = eval(annotation, dict(namespace))
            except Exception:
                continue
        hints[name] = annotation
    return hints


def _accepts(value: Any, annotation: Any, ranges: bool = True) -> bool | None:
    """True, False, or UNKNOWN; `ranges=False` judges the type alone (not Annotated ranges)."""
    if _is_reference(value) or annotation is Any:
        return UNKNOWN
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        answer = _accepts(value, annotation.__origin__, ranges)
        limits = [m for m in annotation.__metadata__ if isinstance(m, Range)] if ranges else []
        if answer is True and not all(r.holds(value) for r in limits):
            return False
        return answer
    if origin in (typing.Union, types.UnionType):
        answers = [_accepts(value, a, ranges) for a in args]
        return True if True in answers else (UNKNOWN if UNKNOWN in answers else False)
    if annotation is type(None) or annotation is None:
        return value is None
    if annotation is bool:
        return isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if annotation is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if annotation is str:
        return isinstance(value, str)
    if origin is typing.Literal:
        return value in args
    if origin is tuple:
        if not isinstance(value, (tuple, list)):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return _all(_accepts(v, args[0], ranges) for v in value)
        if args and len(args) != len(value):
            return False
        return _all(_accepts(v, a, ranges) for v, a in zip(value, args, strict=False))
    if origin in (list, collections.abc.Sequence):
        if isinstance(value, str) or not isinstance(value, (list, tuple)):
            return False
        return _all(_accepts(v, args[0], ranges) for v in value) if args else True
    if origin in (dict, collections.abc.Mapping):
        return isinstance(value, dict)
    if origin is collections.abc.Callable or annotation is collections.abc.Callable:
        return callable(value)
    return UNKNOWN


def _all(answers) -> bool | None:
    answers = list(answers)
    return False if False in answers else (UNKNOWN if UNKNOWN in answers else True)


def _is_reference(value: Any) -> bool:
    """`@name`, `@name()` and `%macro` (gin parses macros as references too)."""
    return isinstance(value, (gin.config.ConfigurableReference, gin_state.UnknownReference))


def _describe(annotation: Any) -> str:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        ranges = " and ".join(m.describe() for m in annotation.__metadata__ if isinstance(m, Range))
        base = _describe(annotation.__origin__)
        finite = "a finite " if annotation.__origin__ is float else ""
        return f"{finite}{base} {ranges}".strip()
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(a) for a in args)
    if annotation is type(None):
        return "None"
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return f"a tuple of {_describe(args[0])}"
    if origin is collections.abc.Callable or annotation is collections.abc.Callable:
        return "a component reference (@name)"
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "").replace("collections.abc.", "")


def named_sizes(factory: Any, **sizes: Any) -> dict[str, Any]:
    """The `sizes` that `factory`'s constructor names (a part declares the sizes it needs,
    e.g. an objective with networks of its own its `obs_dim`, `act_dim`, `latent_dim`; a
    `**kwargs` catch-all names none). `factory` may be a gin reference."""
    target = getattr(getattr(factory, "configurable", None), "wrapped", factory)
    try:
        params = inspect.signature(target).parameters
    except (TypeError, ValueError):
        return {}
    named = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return {k: v for k, v in sizes.items() if k in params and params[k].kind in named}

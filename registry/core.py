"""The component registry: register under (kind, name), look up, list.

Registering also makes the object gin-configurable as `<name>` in gin module `<kind>`, so a recipe
selects it with `@name` (or `@kind.name` where two kinds share a name) and binds its constructor
arguments as `name.arg = value`.
"""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import gin

from registry.errors import DuplicateComponentError, UnknownComponentError, UnknownKindError
from registry.kinds import KINDS, SPLIT

T = TypeVar("T")


@dataclass(frozen=True)
class Entry:
    """One registered component."""

    kind: str
    name: str
    obj: Any
    module: str

    @property
    def gin_name(self) -> str:
        """The fully qualified gin name, e.g. `transition_encoder.mlp_encoder`."""
        return f"{self.kind}.{self.name}"


_ENTRIES: dict[tuple[str, str], Entry] = {}


def check_kind(kind: str) -> str:
    """Return `kind` if declared in `registry.kinds.KINDS`, else raise naming the valid kinds."""
    if kind in SPLIT:
        raise UnknownKindError(
            f"component kind {kind!r} was split by contract into "
            + " and ".join(f"{k!r} ({KINDS[k]})" for k in SPLIT[kind])
            + ": register under the one whose contract your component honours"
        )
    if kind not in KINDS:
        raise UnknownKindError(
            f"unknown component kind {kind!r}; expected one of: {', '.join(sorted(KINDS))}"
        )
    return kind


BUILTIN_PACKAGES = ("components", "registry")


def register(kind: str, name: str | None = None) -> Callable[[T], T]:
    """Decorator: register a class or function as component `name` (default `__name__`).

    Example:
        @register("transition_encoder", "mlp_encoder")
        class MLPEncoder(nn.Module): ...
    """
    check_kind(kind)

    def decorate(obj: T) -> T:
        key = name or obj.__name__
        first = _ENTRIES.get((kind, key))
        if first is not None:
            raise DuplicateComponentError(_duplicate_message(kind, key, first.module, obj))
        configured = gin.configurable(key, module=kind)(obj)
        _ENTRIES[(kind, key)] = Entry(kind, key, configured, obj.__module__)
        return configured

    return decorate


def _duplicate_message(kind: str, key: str, first: str, obj: Any) -> str:
    """Name the module to rename: never the project's own (a plugin loaded before it took the
    name first), else the second one."""
    second = obj.__module__
    builtin = next((m for m in (first, second) if m.split(".")[0] in BUILTIN_PACKAGES), None)
    if builtin is not None and {first, second} != {builtin}:
        other = second if builtin == first else first
        return (
            f"{kind} {key!r} is a built-in component (module {builtin!r}), and module "
            f"{other!r} registers the same name: rename the one in {other!r} (e.g. "
            f"@register({kind!r}, 'my_{key}')) and select it by that name in the recipe"
        )
    return (
        f"{kind} {key!r} is already registered by module {first!r}; pick another name for the "
        f"one in {second!r} (or, if both are the same file imported twice — once by --plugin "
        "and once by a recipe's import line — load it one way only)"
    )


def get(kind: str, name: str) -> Any:
    """Return the component registered as (kind, name), or raise with the closest names."""
    check_kind(kind)
    entry = _ENTRIES.get((kind, name))
    if entry is None:
        raise UnknownComponentError(unknown_message(kind, name))
    return entry.obj


def unknown_message(kind: str | None, name: str) -> str:
    """The error text for an unknown `name`: closest registered names and how to fix it."""
    pool = names(kind) if kind else sorted({e.name for e in _ENTRIES.values()})
    close = difflib.get_close_matches(name, pool, n=5, cutoff=0.5)
    what = f"{kind} {name!r}" if kind else f"component {name!r}"
    hint = f"did you mean: {', '.join(close)}? " if close else ""
    known = (
        f"registered: {', '.join(pool[:20])}{' ...' if len(pool) > 20 else ''}. " if pool else ""
    )
    return (
        f"unknown {what}. {hint}{known}If it lives in a module that is not imported yet, "
        "add an `import <module>` line to the recipe or pass --plugin <module or file.py>."
    )


def names(kind: str | None = None, pattern: str = "*") -> list[str]:
    """Sorted registered names of `kind` (all kinds when None) matching a shell-style pattern."""
    if kind is not None:
        check_kind(kind)
    return sorted(
        e.name
        for e in _ENTRIES.values()
        if (kind is None or e.kind == kind) and fnmatch.fnmatchcase(e.name, pattern)
    )


def entries(kind: str | None = None) -> list[Entry]:
    """Registered entries, sorted by kind then name."""
    if kind is not None:
        check_kind(kind)
    return sorted(
        (e for e in _ENTRIES.values() if kind is None or e.kind == kind),
        key=lambda e: (e.kind, e.name),
    )


def entry_of(obj: Any) -> Entry | None:
    """The entry under which `obj` (a registered class or function) is registered, if any."""
    for entry in _ENTRIES.values():
        if entry.obj is obj:
            return entry
    return None

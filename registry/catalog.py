"""The catalog: every registered component with what a recipe can bind on it."""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import gin

from registry.core import Entry, entries

REQUIRED = "REQUIRED"


@dataclass(frozen=True)
class Argument:
    """One bindable constructor argument; `default` is its repr, or REQUIRED."""

    name: str
    default: str


@dataclass(frozen=True)
class CatalogEntry:
    kind: str
    name: str
    module: str
    summary: str
    arguments: tuple[Argument, ...]


def bindable_arguments(obj: object) -> tuple[Argument, ...]:
    """Named arguments of a function, or of a class's constructor, with their defaults."""
    target = obj.__init__ if inspect.isclass(obj) else obj
    try:
        params = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):  # builtins without a signature
        return ()
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    out = []
    for p in params:
        if p.kind not in kinds or p.name == "self":
            continue
        missing = p.default is inspect.Parameter.empty or p.default is gin.REQUIRED
        out.append(Argument(p.name, REQUIRED if missing else repr(p.default)))
    return tuple(out)


def summary_line(obj: object) -> str:
    """The first line of the docstring, or an empty string."""
    doc = inspect.getdoc(obj) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


def describe(entry: Entry) -> CatalogEntry:
    return CatalogEntry(
        kind=entry.kind,
        name=entry.name,
        module=entry.module,
        summary=summary_line(entry.obj),
        arguments=bindable_arguments(entry.obj),
    )


def catalog(kind: str | None = None) -> list[CatalogEntry]:
    """Every registered component (of `kind`, when given), sorted by kind and name."""
    return [describe(e) for e in entries(kind)]

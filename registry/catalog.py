"""The catalog: every registered component with what a recipe can bind on it."""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass

import gin

from registry.core import Entry, entries, entry_of

REQUIRED = "REQUIRED"


@dataclass(frozen=True)
class Argument:
    """One bindable constructor argument; `default` is its repr, or REQUIRED; `doc` what the
    docstring's `Args:` section says of it ('' if nothing)."""

    name: str
    default: str
    doc: str = ""


@dataclass(frozen=True)
class CatalogEntry:
    kind: str
    name: str
    module: str
    summary: str
    arguments: tuple[Argument, ...]


def argument_docs(obj: object) -> dict[str, str]:
    """The `Args:` section of a docstring (Google style, `name: text` or `a, b: text` lines,
    continued by deeper-indented lines) as {argument: text}."""
    doc = inspect.getdoc(obj) or ""
    lines = doc.splitlines()
    if "Args:" not in (line.strip() for line in lines):
        return {}
    start = [line.strip() for line in lines].index("Args:") + 1
    found: dict[str, str] = {}
    names: list[str] = []
    indent = None
    for line in lines[start:]:
        if not line.strip():
            if found:
                break
            continue
        depth = len(line) - len(line.lstrip())
        indent = depth if indent is None else indent
        if depth < indent:
            break
        head, colon, text = line.strip().partition(":")
        if depth == indent and colon and re.fullmatch(r"[\w, ]+", head):
            names = [n.strip() for n in head.split(",")]
            for name in names:
                found[name] = text.strip()
        else:
            for name in names:
                found[name] = f"{found[name]} {line.strip()}".strip()
    return found


def bindable_arguments(obj: object) -> tuple[Argument, ...]:
    """Named arguments of a function, or of a class's constructor, with their defaults and
    what the docstring says of each."""
    target = obj.__init__ if inspect.isclass(obj) else obj
    try:
        params = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):  # builtins without a signature
        return ()
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    docs = argument_docs(obj)
    out = []
    for p in params:
        if p.kind not in kinds or p.name == "self":
            continue
        missing = p.default is inspect.Parameter.empty or p.default is gin.REQUIRED
        default = REQUIRED if missing else _shown(p.default)
        out.append(Argument(p.name, default, docs.get(p.name, "")))
    return tuple(out)


def _shown(default: object) -> str:
    """A default as a recipe would write it: a registered component as `@name`."""
    entry = entry_of(default)
    return f"@{entry.name}" if entry else repr(default)


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

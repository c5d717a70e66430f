"""gin's state as this project reads it: the one module that touches gin's private names.

gin-config has no public API for what a run must know of itself: every binding parsed (with its
scope), gin's record of what was built and with which values, the configurable behind a name,
the search path of includes, the parser's import scope. Each is read here and nowhere else, so
a gin release that renames one breaks this file alone and `tests/registry/test_gin_state.py`
says so at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

import gin.config

Key = tuple[str, str]  # (scope, complete selector)

# `%macro` and `@name` that gin could not resolve when parsing (macros parse as these too)
UnknownReference = gin.config._UnknownConfigurableReference


def bindings() -> list[tuple[Key, dict[str, Any]]]:
    """Every (scope, selector) -> {argument: value} parsed or bound so far (a copy)."""
    return [(key, dict(params)) for key, params in gin.config._CONFIG.items()]


def bound_for(scope: str, selector: str) -> dict[str, Any]:
    """The arguments bound for `selector` in exactly `scope` ('' unscoped), a copy."""
    return dict(gin.config._CONFIG.get((scope, selector), {}))


def built() -> list[tuple[Key, dict[str, Any]]]:
    """gin's record of calls: each (scope, selector) built and the values it read (a copy)."""
    return [(key, dict(values)) for key, values in gin.config._OPERATIVE_CONFIG.items()]


@contextmanager
def record_of_calls_kept() -> Iterator[None]:
    """Leave gin's record of calls as it was after the block (parts built inside go unrecorded)."""
    saved = {key: dict(values) for key, values in gin.config._OPERATIVE_CONFIG.items()}
    try:
        yield
    finally:
        gin.config._OPERATIVE_CONFIG.clear()
        gin.config._OPERATIVE_CONFIG.update(saved)


def configurable(name: str) -> Any:
    """gin's registration of `name` (a configurable's name, possibly partial), or None."""
    return gin.config._REGISTRY.get_match(name)


def config_text(config: dict[Key, dict[str, Any]]) -> str:
    """A configuration as gin writes it (`gin.config_str()`'s format) for the given bindings."""
    return gin.config._config_str(config)


def parse_scope() -> AbstractContextManager[Any]:
    """The context gin parses a file in (it resolves `import` statements and references)."""
    return gin.config._parse_scope()


def add_imports(imports: Iterable[Any]) -> None:
    """Record a parsed file's imports as gin's own parser does (operative configs list them)."""
    gin.config._IMPORTS.update(imports)


def search_path() -> list[str]:
    """The directories gin searches for included files, in order: the live list (gin has no
    public way to put one first or to take it away again)."""
    return gin.config._LOCATION_PREFIXES


@dataclass(frozen=True)
class Snapshot:
    """gin's parsed configuration as a value: every (scope, selector) and its arguments, the
    imports the parsed files made, and gin's record of what was built while composing (the
    experiment's choices). `restore()` makes it gin's whole state again."""

    config: tuple[tuple[Key, tuple[tuple[str, Any], ...]], ...]
    imports: tuple[Any, ...]
    built: tuple[tuple[Key, tuple[tuple[str, Any], ...]], ...] = ()

    def restore(self) -> None:
        gin.clear_config()
        for key, params in self.config:
            gin.config._CONFIG[key] = dict(params)
        gin.config._IMPORTS.update(self.imports)
        for key, values in self.built:
            gin.config._OPERATIVE_CONFIG[key] = dict(values)


def snapshot() -> Snapshot:
    """The configuration parsed so far, copied out of gin."""

    def frozen(table) -> tuple:
        return tuple((key, tuple(params.items())) for key, params in table.items())

    return Snapshot(
        frozen(gin.config._CONFIG),
        tuple(gin.config._IMPORTS),
        frozen(gin.config._OPERATIVE_CONFIG),
    )

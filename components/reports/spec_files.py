"""A report's spec file (the headline's, the verdict table's): UTF-8 TOML whose one top-level key
is an array of tables. Anything else is refused naming the file and what is wrong, before a
record is read, so that a typo can neither end in a traceback nor drop an entry unseen."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import tomllib

from registry import FocalppError


def read_tables(path: Path, key: str, what: str) -> list[dict[str, Any]]:
    """The tables of `[[key]]` in the spec file `path` (`what`: "the headline file")."""
    try:
        spec = tomllib.loads(Path(path).read_bytes().decode("utf-8"))
    except OSError as e:
        raise FocalppError(f"cannot read {what} {path}: {e.strerror or e}") from e
    except UnicodeDecodeError as e:
        raise FocalppError(f"cannot read {what} {path}: not UTF-8 text ({e})") from e
    except (tomllib.TOMLDecodeError, RecursionError) as e:
        reason = "nested too deeply" if isinstance(e, RecursionError) else str(e)
        raise FocalppError(f"cannot read {what} {path}: not valid TOML ({reason})") from e
    tables, others = spec.get(key), sorted(set(spec) - {key})
    if others:
        raise FocalppError(
            f"{path} has top-level keys {', '.join(others)}: expected [[{key}]] tables only"
        )
    if not isinstance(tables, list) or not tables:
        raise FocalppError(f"{path} lists no [[{key}]]: expected one table per {key}")
    for number, table in enumerate(tables, 1):
        if not isinstance(table, dict):
            raise FocalppError(f"{path}: {key} {number} is {table!r}: expected a [[{key}]] table")
    return tables


def check_text(table: dict, key: str, where: str, expected: str) -> None:
    """`table[key]` is a text with something in it."""
    value = table[key]
    if not isinstance(value, str) or not value.strip():
        raise FocalppError(f"{where} has {key} = {value!r}: expected {expected}")


def check_once(items: list[tuple[Any, str]], what: str, where: str) -> None:
    """Each identity (a hashable, with the place it was given) appears once in the file: an
    entry given twice would be counted twice."""
    seen: dict[Any, str] = {}
    for identity, place in items:
        if identity in seen:
            raise FocalppError(
                f"{where}: {place} gives {what} again (first at {seen[identity]}): each counts "
                "once; take one out"
            )
        seen[identity] = place

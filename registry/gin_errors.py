"""gin's errors in this project's words: `gin_errors(source)` turns gin's messages about a
file or a binding into ones that name the file, the line and what was expected; `build` calls a
configurable and says which binding broke it."""

from __future__ import annotations

import difflib
import re
import tokenize
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from registry.catalog import bindable_arguments
from registry.core import entries, names
from registry.errors import FocalppError, RecipeError
from registry.experiment import experiment

T = TypeVar("T")

_UNKNOWN = re.compile(r"No configurable matching (?:reference )?'@?([\w./]+?)(?:\(\))?'")

_NO_PARAM = re.compile(r"Configurable '([\w.]+)' doesn't have a parameter named '(\w+)'")

_REQUIRED = re.compile(r"Required bindings for `([\w.]+)` not provided in config: \[(.*)\]")


@contextmanager
def gin_errors(source: str) -> Iterator[None]:
    """Turn gin's parse and bind errors into RecipeError messages that say how to fix them."""
    try:
        yield
    except FocalppError:
        raise
    except SyntaxError as e:
        where = _syntax_location(e, source)
        message = e.msg.split("\n")[0]
        if token := re.search(r"Failed to parse token '(.*)'", e.msg):
            message = f"cannot parse the value {token.group(1)}"
        if "parse value" in message or token:
            message = (
                f"{message.rstrip('.')}: after `name.argument =` write a Python literal, e.g. "
                "`loop.steps = 12_000`, `brac.lr = 3e-4`, `task_data.quality = 'mixed'` (strings "
                "in quotes), `brac.hidden = (64, 64)`, `None`, `True`, or a component "
                "reference `@mlp_encoder` (gin has no nan or inf)"
            )
        raise RecipeError(f"gin syntax error in {where}: {message}") from e
    except tokenize.TokenError as e:
        msg, (line, _) = e.args
        raise RecipeError(f"gin syntax error in {source} near line {line}: {msg}") from e
    except ImportError as e:
        raise RecipeError(
            f"a module imported by {source} cannot be imported: {e}. Check the `import` line, "
            "or pass the module's file with --plugin"
        ) from e
    except OSError as e:
        raise RecipeError(f"cannot read a recipe file included from {source}: {e}") from e
    except (ValueError, RuntimeError) as e:
        raise RecipeError(_explain(str(e), source) or f"invalid recipe ({source}): {e}") from e


def build(factory: Callable[..., T], /, **kwargs: Any) -> T:
    """Call a gin-configured factory; gin's unknown/missing-binding errors become RecipeError.

    Other errors pass through untouched: they are bugs of the component, not of the recipe.
    """
    try:
        return factory(**kwargs)
    except FocalppError:
        raise
    except (ValueError, RuntimeError) as e:
        explained = _explain(str(e), "the recipe")
        if explained is None:
            raise
        raise RecipeError(explained) from e


def _syntax_location(e: SyntaxError, source: str) -> str:
    location = e.args[1] if len(e.args) > 1 else None
    filename = getattr(location, "filename", None) or e.filename or source
    line = getattr(location, "line_num", None) or e.lineno
    content = getattr(location, "line_content", None) or e.text or ""
    return f"{filename} line {line}" + (f"\n    {content.rstrip()}" if content else "")


def _explain(message: str, source: str) -> str | None:
    """Add suggestions to gin's message for unknown names, unknown arguments, missing bindings."""
    if m := _UNKNOWN.search(message):
        name = m.group(1).split("/")[-1]
        pool = [*names(), "experiment"]
        short = name.split(".")[-1]
        close = difflib.get_close_matches(short, pool, n=5, cutoff=0.5)
        hint = f"Did you mean: {', '.join(close)}? " if close else ""
        return (
            f"unknown component or configurable {name!r} in {source}. {hint}If it is defined in "
            "a module not imported yet, add an `import <module>` line to the recipe or pass "
            f"--plugin <module or file.py>.\n{message}"
        )
    if m := _NO_PARAM.search(message):
        configurable, arg = m.groups()
        valid = _arguments_of(configurable.split(".")[-1])
        close = difflib.get_close_matches(arg, valid, n=3, cutoff=0.5)
        hint = f"Did you mean: {', '.join(close)}? " if close else ""
        return (
            f"{configurable!r} has no argument {arg!r} (binding in {source}). {hint}"
            f"Its arguments: {', '.join(valid) or 'none'}.\n{message}"
        )
    if m := _REQUIRED.search(message):
        configurable, missing = m.groups()
        return f"{configurable!r} needs a value for {missing}: bind it in the recipe.\n{message}"
    return None


def _arguments_of(name: str) -> list[str]:
    if name == "experiment":
        return [a.name for a in bindable_arguments(experiment)]
    found = [e for e in entries() if e.name == name]
    return [a.name for a in bindable_arguments(found[0].obj)] if found else []

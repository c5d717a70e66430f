"""Recipe files and bindings parsed into gin, strictly: file by file, each binding's file and line
kept (`registry.usage`), `include` resolved against the recipes directory, the recipe's folder,
the working directory and the including file's folder (a cycle is an error naming its chain),
`# may go unused:` and `# overrides:` lines read as marks."""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import io
import logging
import os
import re
import sys
import tokenize
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import gin
import gin.config
from gin import config_parser
from gin import utils as gin_utils

from registry import gin_state, usage
from registry.core import names
from registry.errors import FocalppError, RecipeError
from registry.gin_errors import gin_errors
from registry.renames import renamed, renamed_name
from registry.usage import Source


def parse_file(path: Path, *, chain: tuple[Path, ...] = (), marks: frozenset = frozenset()) -> None:
    """Parse a recipe file statement by statement with gin's parser and binder; its `include`s
    are resolved here, so that a cycle is named with its chain, an error in an included file
    names that file and where it was included, and each binding remembers its file and line.
    `marks`: the `# may go unused:` entries of the files that include this one."""
    path = Path(path)
    with gin_errors(str(path)):
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as e:
            raise RecipeError(f"cannot read recipe file {path}: {e}") from e
        own = _marks(text, path, MAY_GO_UNUSED)
        with _unclosed_brackets(text, str(path), numbered=True):
            _parse(text, str(path), (*chain, path.resolve()), marks | own, numbered=True)
        _check_marks(own, path, MAY_GO_UNUSED)
        _check_marks(_marks(text, path, OVERRIDES), path, OVERRIDES)


def parse_bindings(bindings: Sequence[str], source: str) -> None:
    text = "\n".join(bindings)
    with gin_errors(source), _unclosed_brackets(text, source, numbered=False):
        _parse(text, source, (), frozenset(), numbered=False)


@contextmanager
def _unclosed_brackets(text: str, where: str, numbered: bool) -> Iterator[None]:
    """The tokenizer's 'EOF in multi-line statement' as the line of the bracket left open."""
    try:
        yield
    except tokenize.TokenError as e:
        opened = _first_unclosed(text)
        if opened is None:
            raise
        line, bracket = opened
        content = text.splitlines()[line - 1].strip()
        at = f"{where} line {line}" if numbered else where
        raise RecipeError(
            f"gin syntax error in {at}: the bracket {bracket!r} opened here is "
            f"never closed (every line after it was read as part of its value)\n    {content}"
        ) from e


def _first_unclosed(text: str) -> tuple[int, str] | None:
    """(line, bracket) of the first bracket still open where the text ends."""
    stack: list[tuple[int, str]] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.OP and token.string in "([{":
                stack.append((token.start[0], token.string))
            elif token.type == tokenize.OP and token.string in ")]}" and stack:
                stack.pop()
    except tokenize.TokenError:
        pass
    return stack[0] if stack else None


def _parse(text: str, where: str, chain: tuple[Path, ...], marks: frozenset, numbered: bool):
    """What `gin.parse_config` does, with includes and the bindings' sources handled here."""
    named = io.StringIO(text)
    named.name = where  # gin's messages then say "In file <where>"
    parser = config_parser.ConfigParser(named, gin.config.ParserDelegate(skip_unknown=False))
    with gin_state.parse_scope() as context:
        for statement in parser:
            location = statement.location
            line = location.line_num if numbered else None
            if isinstance(statement, config_parser.IncludeStatement):
                _include(statement.filename, where, line or 0, chain, marks)
            elif isinstance(statement, config_parser.ImportStatement):
                _import(statement, context, f"{where} line {line}" if line else where)
            elif isinstance(statement, config_parser.BlockDeclaration):
                with gin_utils.try_with_location(location):
                    if not context.get_configurable(statement.selector):
                        raise ValueError(f"No configurable matching '{statement.selector}'.")
            else:
                with gin_utils.try_with_location(location):
                    _bind(statement, Source(where, line, _written(location.line_content)), marks)
        gin_state.add_imports(context.imports)


def _import(statement: config_parser.ImportStatement, context, at: str) -> None:
    try:
        context.process_import(statement)
    except ImportError as e:
        raise RecipeError(
            f"{at}: `{statement.format()}` fails: {type(e).__name__}: {e}. Check the module's "
            "name; a module of your own must sit next to the recipe or in the recipes "
            "directory, or be passed with --plugin FILE.py"
        ) from e
    except FocalppError:
        raise
    except Exception as e:  # the module itself is broken: its code, not the recipe line
        raise RecipeError(
            f"{at}: `{statement.format()}` fails while the module runs: {type(e).__name__}: "
            f"{e} (--debug shows where)"
        ) from e


def _written(line: str) -> str:
    """A binding's line as written, without its comment (`...` if its value goes on)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(line).readline))
    except tokenize.TokenError:
        return line.strip() + " ..."
    comment = next((t for t in tokens if t.type == tokenize.COMMENT), None)
    return (line[: comment.start[1]] if comment else line).strip()


def _bind(statement: config_parser.BindingStatement, source: Source, marks: frozenset) -> None:
    scope, selector, arg, value, _ = statement
    if not arg:  # a macro: `NAME = value`
        scope, selector, arg = (f"{scope}/{selector}" if scope else selector), usage.MACRO, "value"
    else:  # a binding that moved (`loop.steps` -> `loop.steps`): read under its new name
        selector, arg = renamed(selector, arg, source.describe())
    gin.bind_parameter((scope, selector, arg), value)
    scope, complete = gin.config.ParsedBindingKey.parse((scope, selector, arg)).config_key
    optional = usage.marked(marks, complete, arg)
    usage.record((scope, complete, arg), dataclasses.replace(source, optional=optional))


def _include(name: str, where: str, line: int, chain: tuple[Path, ...], marks: frozenset):
    """Parse an included file (found as gin finds it, else next to the including file)."""
    at = f"{where} line {line}" if line else where
    path = _find_include(name, chain[-1].parent if chain else None)
    if path is None:
        searched = [p or "." for p in gin_state.search_path()]
        raise RecipeError(
            f"{at} includes {name!r}, which is not a file in {', '.join(map(str, searched))}"
            " (the recipes directory, the recipe's directory, the working directory)"
        )
    if path.resolve() in chain:
        cycle = " -> ".join(p.name for p in (*chain, path.resolve()))
        raise RecipeError(
            f"include cycle: {cycle} ({at} includes {name!r}, which is already being read); "
            "a recipe includes the row it extends, never one that includes it"
        )
    try:
        parse_file(path, chain=chain, marks=marks)
    except RecipeError as e:
        raise RecipeError(f"{e}\n  (included from {at})") from e


def _find_include(name: str, beside: Path | None) -> Path | None:
    prefixes = [""] if os.path.isabs(name) else list(gin_state.search_path())
    for prefix in [*prefixes, *([str(beside)] if beside else [])]:
        candidate = Path(prefix, name)
        if candidate.is_file():
            return candidate
    return None


MAY_GO_UNUSED = "may go unused"  # `# may go unused: name, ...`: defaults some rows never read

OVERRIDES = "overrides"  # `# overrides: name.argument, ...`: a column changes a row on purpose

_MARK_NAMES = re.compile(r":\s*([\w.]+(?:\s*,\s*[\w.]+)*)\s*,?\s*")


def _marks(text: str, path: Path, label: str) -> frozenset:
    """The names a file's `# <label>: name, name.argument` lines declare."""
    found: set[str] = set()
    for m in re.finditer(rf"^[ \t]*#[ \t]*{label}\b(.*)$", text, re.MULTILINE):
        names = _MARK_NAMES.fullmatch(m.group(1))
        if names is None:
            line = text.count("\n", 0, m.start()) + 1
            raise RecipeError(
                f"{path} line {line}: cannot read {m.group(0).strip()!r}: write "
                f"`# {label}: name, name.argument, ...` (configurables or their arguments)"
            )
        found |= {renamed_name(n.strip()) for n in names.group(1).split(",")}
    return frozenset(found)


def _check_marks(marks: frozenset, path: Path, label: str) -> None:
    """Each declared name is a configurable, or an argument of one (a typo would exempt nothing
    and hide nothing, but it would mislead a reader)."""
    for mark in sorted(marks):
        if gin_state.configurable(mark) is None and not is_argument(mark):
            known = sorted({*names(), "experiment"})  # a name two kinds share, once
            close = difflib.get_close_matches(mark.split(".")[0], known, n=3)
            hint = f" Did you mean: {', '.join(close)}?" if close else ""
            raise RecipeError(
                f"{path}: `# {label}:` names {mark!r}, which is neither a configurable "
                f"nor an argument of one.{hint} Write `name` or `name.argument` of a registered "
                "part"
            )


class _QuietMissingPaths(logging.Filter):
    """gin logs an error for every search-path miss while resolving an include; drop those."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Path not found")


@contextmanager
def _search_paths(*dirs: Path) -> Iterator[None]:
    # gin has no public way to put a search path first or to remove one again.
    prefixes = gin_state.search_path()
    saved, saved_sys_path = list(prefixes), list(sys.path)
    prefixes[:0] = [str(d) for d in dirs]
    sys.path[:0] = [str(d) for d in dirs]
    quiet = _QuietMissingPaths()
    logging.getLogger().addFilter(quiet)
    try:
        yield
    finally:
        prefixes[:] = saved
        sys.path[:] = saved_sys_path
        logging.getLogger().removeFilter(quiet)


def is_argument(name: str) -> bool:
    """`name` is `configurable.argument` of a registered configurable."""
    configurable, _, argument = name.rpartition(".")
    found = gin_state.configurable(configurable) if configurable else None
    return found is not None and argument in parameters_of(found.wrapped)


def parameters_of(obj) -> list[str]:
    target = obj.__init__ if inspect.isclass(obj) else obj
    try:
        return list(inspect.signature(target).parameters)
    except (TypeError, ValueError):
        return []

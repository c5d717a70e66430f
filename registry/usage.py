"""Every binding must configure something the run builds, or the run is not the one it describes.

`sequence_attention.d_model = 64` in a row that builds no sequence attention, or
`nowhere/loop.steps = 3` in a scope nothing is built in, would otherwise be accepted in
silence. gin records each call of a configurable with its scope and the values it used
(its record of calls, `registry/gin_state.py`); a binding `scope/name.arg` is read by a call
whose scope it prefixes, unless a longer scope of that call binds `arg` too, or the caller
passes `arg` itself (gin then leaves it out of the call's record). Call `unused_bindings`
after the run's parts are built and before it trains.

Where each binding was written is recorded while recipes are parsed (`registry.recipes`): a
file and line, or `--gin_param`. A shared recipe file that binds defaults for parts some rows
do not build (a scale's sizes of sequence attention, an environment column's BRAC settings)
declares them with a `# may go unused: name, name.argument` line; those bindings, and those of
the files it includes, may configure nothing.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import gin.config

from registry import gin_state
from registry.core import entries
from registry.errors import RecipeError

MACRO = "gin.macro"


@dataclass(frozen=True)
class Source:
    """Where a binding was written, and whether its file declared it may go unused."""

    where: str  # a recipe file, or a description such as `--gin_param`
    line: int | None
    text: str  # the binding as written
    optional: bool = False

    def describe(self) -> str:
        return f"{self.where} line {self.line}" if self.line else self.where


_SOURCES: dict[tuple[str, str, str], Source] = {}
_HISTORY: dict[tuple[str, str, str], list[Source]] = {}  # every binding of a key, in order


def clear_sources() -> None:
    _SOURCES.clear()
    _HISTORY.clear()


def sources_snapshot() -> tuple[tuple[tuple[str, str, str], tuple[Source, ...]], ...]:
    """Every binding's history so far, as a value (a composition keeps it)."""
    return tuple((key, tuple(history)) for key, history in _HISTORY.items())


def restore_sources(saved: tuple[tuple[tuple[str, str, str], tuple[Source, ...]], ...]) -> None:
    """Make `saved` (a `sources_snapshot()`) the bindings' sources again."""
    clear_sources()
    for key, history in saved:
        for source in history:
            record(key, source)


def record(key: tuple[str, str, str], source: Source) -> None:
    """`key` = (scope, complete selector, argument); a later binding of it replaces the earlier."""
    _SOURCES[key] = source
    _HISTORY.setdefault(key, []).append(source)


@dataclass(frozen=True)
class Provenance:
    """Who set a binding, and the earlier bindings of the same key it overrode."""

    name: str  # `scope/selector.argument`
    source: Source
    overrode: tuple[Source, ...]

    def to_dict(self) -> dict:
        return {
            "binding": self.source.text,
            "set_by": self.source.describe(),
            "overrode": [f"{s.describe()}: {s.text}" for s in self.overrode],
        }


def provenance() -> list[Provenance]:
    """Every binding made since `clear_sources`, with where it was set and what it overrode."""
    return [
        Provenance(_named(key), history[-1], tuple(history[:-1]))
        for key, history in _HISTORY.items()
    ]


def _named(key: tuple[str, str, str]) -> str:
    scope, selector, arg = key
    return f"{scope + '/' if scope else ''}{selector}.{arg}"


def marked(marks: Iterable[str], selector: str, arg: str) -> bool:
    """A `# may go unused:` entry names a configurable (short or complete) or one argument."""
    names = {selector, selector.rsplit(".", 1)[-1]}
    return any(m in names or m in {f"{n}.{arg}" for n in names} for m in marks)


def check_used(
    later: Sequence[str] = (),
    *,
    given: str | None = None,
    read: Iterable[str] = (),
    what: str = "this run builds, so the run would not be the one they describe; nothing was "
    "trained",
    builder: str = "this run",
) -> None:
    """Raise RecipeError naming every binding that configures nothing (see `unused_bindings`;
    `given`, `read`: its filters); `what` ends the message's first sentence."""
    found = unused_bindings(later, given=given, read=read, builder=builder)
    if not found:
        return
    raise RecipeError(
        f"{len(found)} binding(s) configure nothing {what}:\n  "
        + "\n  ".join(found)
        + "\nRemove each, or bind the part it was meant for. A shared recipe file that binds "
        "defaults for parts some rows do not build declares them with a `# may go unused: "
        "name, name.argument` line (docs/ERRORS.md)"
    )


def bindings_outside(selectors: Iterable[str], given: str) -> list[str]:
    """One line per binding written in `given` (e.g. `--gin_param`) whose configurable is none
    of `selectors` (complete gin names): for a tool whose command-line bindings can reach only
    those parts (tools/analyze.py: the analyses it runs, the run being rebuilt already)."""
    allowed = set(selectors)
    return [
        _shown(scope, selector, arg, value, source)
        for (scope, selector), params in gin_state.bindings()
        for arg, value in params.items()
        if (source := _SOURCES.get((scope, selector, arg))) is not None
        and source.where == given
        and selector not in allowed
    ]


def check_macros() -> None:
    """Every `%NAME` in a bound value names a macro the configuration defines (gin would fail
    only when the part reading it is built, with a traceback, or never if nothing reads it)."""
    defined = {scope for (scope, selector), _ in gin_state.bindings() if selector == MACRO}
    for (scope, selector), params in gin_state.bindings():
        for arg, value in params.items():
            for name in _macros_in(value):
                if name in defined:
                    continue
                source = _SOURCES.get((scope, selector, arg))
                close = [d for d in sorted(defined) if d.lower() == name.lower()]
                close = close or difflib.get_close_matches(name, sorted(defined), n=3)
                hint = f" Did you mean: {', '.join('%' + c for c in close)}?" if close else ""
                raise RecipeError(
                    f"{_shown(scope, selector, arg, value, source)} refers to the macro %{name}, "
                    f"which no recipe file or --gin_param defines.{hint} Define it (`{name} = "
                    "value`, read before or after), or write the value itself"
                )


def _macros_in(value) -> list[str]:
    if isinstance(value, gin.config.ConfigurableReference):
        if value.configurable.selector == MACRO:
            return ["/".join(value.scopes)]
        return []
    if isinstance(value, (list, tuple, set)):
        return [name for item in value for name in _macros_in(item)]
    if isinstance(value, dict):
        return [name for item in value.values() for name in _macros_in(item)]
    return []


def unused_bindings(
    later: Sequence[str] = (),
    *,
    given: str | None = None,
    read: Iterable[str] = (),
    builder: str = "this run",
) -> list[str]:
    """One line per binding that no built part reads, with where it was written and why.
    `later`: registered names of configurables built after this check (the run's analyses);
    `given`: only bindings written there (`--gin_param`: a tool that composes shared files
    but builds only some of their parts judges only its own command line); `read`:
    `name.argument`s a tool reads with gin.query_parameter instead of building a part;
    `builder`: what builds the parts, as the reasons name it."""
    built = _built(later)
    read = set(read)
    found = []
    for (scope, selector), params in gin_state.bindings():
        for arg, value in params.items():
            source = _SOURCES.get((scope, selector, arg))
            if source is not None and source.optional:
                continue
            if given is not None and (source is None or source.where != given):
                continue
            if not scope and f"{selector.rsplit('.', 1)[-1]}.{arg}" in read:
                continue
            why = _reason(scope, selector, arg, built, builder)
            if why is not None:
                found.append(f"{_shown(scope, selector, arg, value, source)}: {why}")
    return found


class _Every(dict):
    """The record of a configurable built later: it will read every argument bound for it."""

    def __contains__(self, key: object) -> bool:
        return True


def _built(later: Sequence[str]) -> dict[str, list[tuple[str, dict]]]:
    """selector -> [(scope of a call, the values it read)], from gin's record of calls."""
    built: dict[str, list[tuple[str, dict]]] = {}
    for (scope, selector), values in gin_state.built():
        built.setdefault(selector, []).append((scope, values))
    for entry in entries():
        if entry.name in later:
            built.setdefault(entry.gin_name, []).append(("", _Every()))
    return built


def _reason(scope: str, selector: str, arg: str, built: dict, builder: str) -> str | None:
    """None if some call reads the binding, else why none does."""
    short = selector.rsplit(".", 1)[-1]
    if selector == MACRO:
        return None if scope in {s for s, _ in built.get(MACRO, [])} else _unused_macro(scope)
    calls = built.get(selector, [])
    if not calls:
        return _never_built(selector, built, builder)
    reached = [(s, v) for s, v in calls if _prefixes(scope, s)]
    if not reached:
        return f"{short} is built {_where(calls)}, never in scope {scope!r}"
    open_ = [(s, v) for s, v in reached if not _longer_binding(scope, s, selector, arg)]
    if not open_:
        scopes = ", ".join(sorted({f"{s}/{short}.{arg}" for s, _ in reached}))
        return f"every {short} it would reach takes {arg} from a binding of its scope ({scopes})"
    if any(arg in values for _, values in open_):
        return None
    return f"the part that builds {short} passes {arg} itself, so no binding can set it"


def _unused_macro(name: str) -> str:
    return f"no binding that a built part reads refers to %{name}"


def _never_built(selector: str, built: dict, builder: str = "this run") -> str:
    short, kind = selector.rsplit(".", 1)[-1], _kind_of(selector)
    if kind == "analysis":
        return (
            f"{short} is an analysis, run only when named in experiment.analyses (or by "
            f"`tools/analyze.py RUN --analyses {short}`), and this run does not name it"
        )
    same = sorted(f"@{s.rsplit('.', 1)[-1]}" for s in built if kind and _kind_of(s) == kind)
    chosen = f" (its {kind}: {', '.join(same)})" if same else ""
    return f"{builder} builds no {short}{chosen}"


def _kind_of(selector: str) -> str | None:
    for entry in entries():
        if entry.gin_name == selector:
            return entry.kind
    return None


def _where(calls: list[tuple[str, dict]]) -> str:
    scopes = sorted({s for s, _ in calls})
    return "only " + ", ".join(f"in scope {s!r}" if s else "unscoped" for s in scopes)


def _prefixes(scope: str, call_scope: str) -> bool:
    """gin reads a binding of `scope` in a call whose scope starts with it (component-wise)."""
    return not scope or call_scope == scope or call_scope.startswith(scope + "/")


def _longer_binding(scope: str, call_scope: str, selector: str, arg: str) -> bool:
    """A scope of the call longer than `scope` binds `arg` too (and so wins)."""
    parts = call_scope.split("/") if call_scope else []
    start = len(scope.split("/")) if scope else 0
    longer = ("/".join(parts[:i]) for i in range(start + 1, len(parts) + 1))
    return any(arg in gin_state.bound_for(p, selector) for p in longer)


def _shown(scope: str, selector: str, arg: str, value, source: Source | None) -> str:
    if source is not None:
        return f"{source.text} ({source.describe()})"
    if selector == MACRO:
        return f"{scope} = {value!r} (bound in code)"
    where = f"{scope}/" if scope else ""
    return f"{where}{selector.rsplit('.', 1)[-1]}.{arg} = {value!r} (bound in code)"

"""A recipe's defining choices: `# fixed: name.argument — why` lines.

Some methods are their learner (Contextual BCQ is FOCAL's encoder trained through BCQ; MBML
distils BCQ teachers into a BCQ student; Batch PEARL is SAC with its regularisation off). A later
file or flag that changes such a binding (`--gin_param 'focal.agent = @iql'`, a study's
bindings, a recipe that includes this one) would train another method under this one's name, so
composing refuses it with the recipe's own reason. The value fixed is the one in force at the end
of the recipe and its includes, bound or left at its default.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import gin

from registry import usage
from registry.errors import RecipeError
from registry.parsing import is_argument

_LINE = re.compile(r"^[ \t]*#[ \t]*fixed\b(.*)$", re.MULTILINE)
_MARK = re.compile(r":[ \t]*([\w.]+)[ \t]+(?:—|--)[ \t]*(\S.*?)[ \t]*")


@dataclass(frozen=True)
class Fixed:
    """A binding a recipe file fixes, why, and its value where the recipe ends."""

    name: str
    why: str
    where: str
    value: str


def fixed_in(recipe: Path) -> list[Fixed]:
    """The `# fixed:` lines of `recipe` and the files it includes (those whose bindings gin holds
    so far: call right after parsing the recipe), each with the value gin holds for it now; a
    line that cannot be read, or names no argument of a configurable, is refused."""
    found = []
    parsed = (s.where for b in usage.provenance() for s in (b.source, *b.overrode) if s.line)
    for path in dict.fromkeys([Path(recipe), *map(Path, parsed)]):
        text = path.read_text()
        for m in _LINE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            mark = _MARK.fullmatch(m.group(1))
            if mark is None:
                raise RecipeError(
                    f"{path} line {line}: cannot read {m.group(0).strip()!r}: write "
                    "`# fixed: name.argument — why another value makes another method`"
                )
            name, why = mark.groups()
            found.append(Fixed(name, why, f"{path} line {line}", _value(name, path, line)))
    return found


def check_fixed(fixed: Iterable[Fixed], recipe: Path) -> None:
    """Refuse a composition in which a binding its recipe fixes has another value now, naming
    the file or flag that set it."""
    bindings = usage.provenance()
    set_by = {_short(b.name): f"{b.source.describe()}: `{b.source.text}`" for b in bindings}
    for mark in fixed:
        now = _value(mark.name, None, None)
        if now != mark.value:
            raise RecipeError(
                f"{recipe.name} fixes `{mark.name}` ({mark.where}): {mark.why}. "
                f"{set_by.get(mark.name, 'a later binding')} makes it {now}, not {mark.value}: "
                "drop that binding, or write a recipe of the other method"
            )


def _value(name: str, path: Path | None, line: int | None) -> str:
    """What gin holds for `name` (`unbound`: its default); a name that is no argument of a
    configurable is refused, naming the file and line."""
    try:
        return str(gin.query_parameter(name))
    except ValueError as e:
        if is_argument(name):
            return "unbound (its default)"
        raise RecipeError(
            f"{path} line {line}: `# fixed: {name}` names no argument of a configurable; "
            "write `name.argument` of a registered part"
        ) from e


def _short(name: str) -> str:
    """`scope/module.path.configurable.argument` -> `configurable.argument`."""
    return ".".join(name.rsplit("/", 1)[-1].split(".")[-2:])

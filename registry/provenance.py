"""What a run was built from: the bindings that took effect, their digest, the parts built.

A row name (`focalpp`) and a recipe file name say what a recipe builds today; a record must say
what ran. After a run's parts are built, `effective_bindings` lists every binding that some
built part read — the recipe, the files it includes, the environment column, the scale and
the flags, each with the value it took — and `config_digest` hashes them. Two runs of one row
that differ only in their seed share the digest; changing any binding that took effect changes
it; a binding a file declares may go unused (`# may go unused:`) and that configured nothing in
this run leaves it alone. Constructor defaults are not bindings: the commit a run records
names them.

`built_parts` names each registered part the run built, by kind (the encoder, its blocks, the
objective, the RL learner, the data protocol, ...), from gin's record of the calls it made.

`recorded_config_check` compares the bindings of a composition that has not been built (a
study's dry run) with the effective bindings a record holds for the same row.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence

from registry import gin_state, usage
from registry.core import entries

EXPERIMENT = "registry.experiment.experiment"
# bindings that do not change what a row is: the seed (seeds of one row share the digest), the
# analyses run after training, and where the datasets are stored (which data a run read is
# recorded by its content digest)
PER_RUN = frozenset(
    {(EXPERIMENT, "seed"), (EXPERIMENT, "analyses"), ("task_data.task_data", "root")}
)
# kinds built while a dataset is collected in the same process (only the first run on a new
# dataset builds them), so not part of what a run trains
COLLECTION_KINDS = frozenset({"behaviour_learner"})


def binding_name(scope: str, selector: str, arg: str) -> str:
    """`scope/kind.name.argument` (`experiment.argument` for the experiment's own)."""
    selector = "experiment" if selector == EXPERIMENT else selector
    return f"{scope + '/' if scope else ''}{selector}.{arg}"


def _name(scope: str, selector: str, arg: str) -> str:
    return f"%{scope}" if selector == usage.MACRO else binding_name(scope, selector, arg)


def value_text(value) -> str:
    """A bound value as gin writes it (`@scope/name`, `%MACRO`, a Python literal)."""
    return repr(value)


def parsed_bindings() -> dict[str, tuple[str, bool]]:
    """name -> (value as text, declared may-go-unused) of every binding parsed since the last
    `compose`, the per-run ones left out."""
    found = {}
    for (scope, selector), params in gin_state.bindings():
        for arg, value in params.items():
            if (selector, arg) in PER_RUN:
                continue
            source = usage._SOURCES.get((scope, selector, arg))
            # a macro takes effect where a built part reads it: compared where recorded
            optional = selector == usage.MACRO or (source is not None and source.optional)
            found[_name(scope, selector, arg)] = (value_text(value), optional)
    return dict(sorted(found.items()))


def effective_bindings(later: Sequence[str] = ()) -> dict[str, str]:
    """name -> value of every binding a built part read (call after the parts are built;
    `later`: registered names built afterwards, the run's analyses, which read theirs)."""
    built = usage._built(later)
    found = {}
    for (scope, selector), params in gin_state.bindings():
        for arg, value in params.items():
            if (selector, arg) in PER_RUN:
                continue
            if usage._reason(scope, selector, arg, built, "this run") is None:
                found[_name(scope, selector, arg)] = value_text(value)
    return dict(sorted(found.items()))


def config_digest(bindings: Mapping[str, str]) -> str:
    """SHA-256 of the bindings, independent of their order."""
    text = json.dumps(sorted(bindings.items()), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def built_parts() -> dict[str, list[str]]:
    """kind -> the registered names of that kind the run built (sorted), from gin's record of
    calls; the experiment itself and what a dataset collection builds left out."""
    kinds = {e.gin_name: (e.kind, e.name) for e in entries()}
    parts: dict[str, set[str]] = {}
    for (_scope, selector), _ in gin_state.built():
        if selector in kinds and kinds[selector][0] not in COLLECTION_KINDS:
            kind, name = kinds[selector]
            parts.setdefault(kind, set()).add(name)
    return {kind: sorted(parts[kind]) for kind in sorted(parts)}


def differing(a: Mapping[str, str], b: Mapping[str, str]) -> list[str]:
    """One line per binding the two configurations set differently (or only one sets)."""
    lines = []
    for name in sorted(set(a) | set(b)):
        if a.get(name) != b.get(name):
            lines.append(f"{name}: {a.get(name, '(not bound)')} v {b.get(name, '(not bound)')}")
    return lines


def recorded_config_check(recorded: Mapping[str, str]) -> list[str]:
    """The bindings of the composition just parsed (not built) that differ from `recorded`,
    the effective bindings of a recorded run of the same row: every binding that must take
    effect (not declared may-go-unused) and every recorded one must agree. Empty when a run of
    this composition would be built from the recorded configuration."""
    parsed = parsed_bindings()
    expected = {
        name: value
        for name, (value, optional) in parsed.items()
        if not optional or name in recorded
    }
    return differing(expected, recorded)

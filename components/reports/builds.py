"""What a group of recorded runs trained, read from their records, and the refusal of a group
whose runs were built differently.

A table cell reads the runs of one row on one environment. Their records say what ran
(components/reports/records.py, PROVENANCE): the parts built, the precision, the steps and
the digest of the bindings that took effect. A cell mixing two builds — another encoder, another
precision, another number of steps, another configuration — would average two experiments
under one name, so it is refused, naming what differs. A field a run recorded before it
existed says `unknown`; it is left out of the comparison, never guessed (but for the numerics:
before runs said, every run trained free), and a table names it in its `unrecorded` column
(`provenance_gaps`), so a reader sees what the comparison could not check.

A comparison reads two sides or more — FOCAL++ against FOCAL, rows against their floor and
ceiling, one task against another inside an average — and the sides differ by what is compared
(their recipes, or their tasks) and by nothing else: `check_sides` refuses sides trained at
another precision, for another number of steps, on another dataset, with other numerics, or
with other command-line bindings, naming the field and both values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

from registry import FocalppError
from registry.provenance import differing

T = TypeVar("T")

UNKNOWN = "unknown"  # a field a run recorded before it existed

# the kinds that make an encoder and its objective what they are (each selected by a recipe's
# reference, so also readable from runs recorded before the records named every part)
ENCODING_KINDS = (
    "context_encoder",
    "transition_encoder",
    "attention",
    "block_gate",
    "tokenizer",
    "objective",
    "metric_loss",
)
# how the headline names an encoder by its registered context encoder
ENCODERS = {
    "attention_blocks": "paper's",  # residual attention blocks, z in (-1, 1)
    "parallel_encoder": "first edition",  # two encoders, their outputs summed
    "context_encoder": "one MLP encoder",
}


def encoding(run: dict) -> dict[str, list[str]] | None:
    parts = run.get("parts", UNKNOWN)
    if parts == UNKNOWN or parts is None:
        return None
    return {kind: parts[kind] for kind in ENCODING_KINDS if kind in parts}


def precision_of(run: dict) -> str:
    precision = run.get("precision", UNKNOWN)
    return precision.get("precision", UNKNOWN) if isinstance(precision, dict) else UNKNOWN


def steps_of(run: dict) -> int | str:
    return run.get("eval", {}).get("steps", UNKNOWN)


def check_one_build(runs: Sequence[dict], what: str) -> None:
    """Refuse `runs` (described by `what`) unless every field they know agrees: one row's
    seeds are one build (its parts, precision, steps, numerics and their products, data)."""
    for name, read in ROW_SHARES:
        known = {}
        for run in runs:
            value = read(run)
            if value not in (None, UNKNOWN):
                known.setdefault(repr(value), run["run"])
        if len(known) > 1:
            shown = "; ".join(f"{v} ({r})" for v, r in known.items())
            raise FocalppError(
                f"{what} were built differently, in {name}: {shown}; one row's runs are one "
                "build: give the others a row of their own (`--label NAME`) or another record"
            )
    digests = {}
    for run in runs:
        if run.get("config_digest", UNKNOWN) != UNKNOWN:
            digests.setdefault(run["config_digest"], run)
    if len(digests) > 1:
        first, second = list(digests.values())[:2]
        lines = differing(first.get("config") or {}, second.get("config") or {})
        shown = "\n  ".join(lines[:20]) or "(the record holds neither configuration)"
        raise FocalppError(
            f"{what} were built from other bindings ({len(digests)} configurations; "
            f"{first['run']} v {second['run']}):\n  {shown}\nGive each configuration a row of "
            "its own: a label (`--label NAME`; in a study, `label = 'NAME'`) or another record"
        )


def numerics_of(run: dict) -> str:
    """`portable` (pinned: the same bits on every CPU) or `free`: a run recorded before runs
    said trained free, the only numerics there were."""
    numerics = run.get("numerics")
    return numerics.get("mode", "free") if isinstance(numerics, dict) else "free"


def products_of(run: dict) -> str:
    """Whose float32 matrix products the run computed with: `openblas` (portable numerics
    since they took numpy's pinned OpenBLAS, components/products.py) or `mkl` (free runs, and
    portable runs recorded before): the two round differently, so they are two builds."""
    numerics = run.get("numerics")
    return str(numerics.get("products", "mkl")) if isinstance(numerics, dict) else "mkl"


def dataset_of(run: dict) -> str:
    """The content digest of the data the run trained on."""
    dataset = run.get("dataset", UNKNOWN)
    return dataset.get("content_sha256") or UNKNOWN if isinstance(dataset, dict) else UNKNOWN


# bindings a comparison does not read as such, each compared as what it decided: the precision
# as the precision that ran (a row pinned to fp32 and one whose 'auto' chose fp32 trained alike),
# `loop.steps` as the gradient steps the run made (`steps`: MBML's teacher phase counts on top of
# loop.steps, so its run binds fewer for the same budget); the test-context protocols scored
# beside the offline context at the last meta-test come after its score and leave it alone to
# the bit (tests/components/evaluation/test_test_contexts.py), unless they are scored at every
# meta-test
NOT_READ = ("loop.precision", "loop.steps")
FINAL_READINGS, EVERY_TIME = "meta_test.protocols", "meta_test.protocols_every_time"


def bindings_of(run: dict) -> tuple[str, ...] | str:
    """The bindings given on the command line (a study's, its variant's, --gin_param) that can
    change what a run trained or its offline score, sorted."""
    bindings = run.get("bindings", UNKNOWN)
    if not isinstance(bindings, list):
        return UNKNOWN
    given = [" ".join(b.split()) for b in bindings if isinstance(b, str)]
    skipped = set(NOT_READ)
    if EVERY_TIME not in map(_bound, given):
        skipped.add(FINAL_READINGS)
    return tuple(sorted(b for b in given if _bound(b) not in skipped))


def _bound(binding: str) -> str:
    """The name a binding sets: 'loop.steps' of 'loop.steps = 8_000'."""
    return binding.split("=", 1)[0].strip()


# what the sides of a comparison must share: (the field's name, how a run says it)
SIDES_SHARE = (
    ("precision", precision_of),
    ("steps", steps_of),
    ("numerics", numerics_of),
    ("products", products_of),
    ("dataset", dataset_of),
    ("bindings", bindings_of),
)
# tasks averaged together: each task has its own data
TASKS_SHARE = tuple(field for field in SIDES_SHARE if field[0] != "dataset")
# one row's seeds (check_one_build): its parts too; bindings compared by configuration digest
ROW_SHARES = (("parts", encoding), *(field for field in SIDES_SHARE if field[0] != "bindings"))


class MixedBuilds(FocalppError):
    """A comparison of runs built differently: the field, two of its values and a side and run
    holding each. `brief` says it in a table cell."""

    def __init__(self, what: str, field: str, a: tuple, b: tuple):
        (value_a, side_a, run_a), (value_b, side_b, run_b) = a, b
        shown_a, shown_b = shown_value(value_a), shown_value(value_b)
        super().__init__(
            f"{what} compares runs built differently, in {field}: {shown_a} ({side_a}, {run_a}) v "
            f"{shown_b} ({side_b}, {run_b}). A comparison reads sides of one build: re-run one "
            "side with the other's settings"
        )
        self.field, self.values, self.sides = field, (value_a, value_b), (side_a, side_b)

    def brief(self, sides: bool = True) -> str:
        """`precision, rows fp32 v floor bf16` (with the sides), else `precision fp32 v bf16`."""
        a, b = (shown_value(v) for v in self.values)
        if sides:
            return f"{self.field}, {self.sides[0]} {a} v {self.sides[1]} {b}"
        return f"{self.field} {a} v {b}"


def read_or_refusal(read: Callable[[], T], marked: bool, what: str) -> T | MixedBuilds:
    """`read()`, or the refusal it raises where `what` is marked refused (a table shows what the
    guard found instead of a reading). A mark on sides of one build is an error: its runs were
    redone, and the mark is to be taken out."""
    try:
        result = read()
    except MixedBuilds as mixed:
        if not marked:
            raise
        return mixed
    if marked:
        raise FocalppError(
            f"{what} is marked refused, but its sides are one build now: take its mark out"
        )
    return result


def check_sides(
    sides: Mapping[str, Sequence[dict]], what: str, share: Sequence = SIDES_SHARE
) -> None:
    """Refuse the comparison `what` of `sides` (a name → its runs) where its runs differ in a
    field of `share` that they know, naming the field, two values and a run holding each (of
    two sides where the sides differ; a side mixing two builds is refused too)."""
    for name, read in share:
        seen: dict = {}  # value → {side: a run of it}
        for side, runs in sides.items():
            for run in runs:
                value = read(run)
                if value not in (None, UNKNOWN):
                    seen.setdefault(value, {}).setdefault(side, _name(run))
        if len(seen) > 1:
            raise MixedBuilds(what, name, *_two_values(seen))


def _name(run: dict) -> str:
    """A run's name: in a record its `run`, read from its directory that directory's name."""
    return run.get("run") or Path(run.get("dir", "?")).name


def _two_values(seen: dict) -> tuple:
    """Two values of `seen` with a run holding each, of two different sides where there are."""
    held = [(value, side, run) for value, sides in seen.items() for side, run in sides.items()]
    pairs = [(x, y) for x in held for y in held if x[0] != y[0]]
    return next(((x, y) for x, y in pairs if x[1] != y[1]), pairs[0])


def shown_value(value) -> str:
    """A field's value as a refusal names it: steps with thousands separators, bindings as
    `[a; b]` (or `no bindings`)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, tuple):
        return "[" + "; ".join(value) + "]" if value else "no bindings"
    return str(value)


def _field(name: str) -> Callable[[dict], bool]:
    return lambda run: run.get(name) in (None, "", UNKNOWN)


# what a verdict's runs should each record, by the name a reader sees, and how a run lacks it (a
# run recorded before runs said trained free numerics, so the numerics are never missing)
PROVENANCE: tuple[tuple[str, Callable[[dict], bool]], ...] = (
    ("digest", _field("config_digest")),
    ("data", lambda run: dataset_of(run) == UNKNOWN),  # the content digest of its data
    # a run from an uncommitted tree (or one that did not say) names no commit to read it at
    ("commit", lambda run: _field("commit")(run) or run.get("clean") is not True),
    ("CPU", _field("cpu")),
    ("torch", _field("torch")),
    ("precision", lambda run: precision_of(run) == UNKNOWN),
)


def provenance_gaps(runs: Sequence[dict]) -> str:
    """What some of `runs` did not record (`-`: nothing), e.g. `digest, torch`."""
    return ", ".join(name for name, lacks in PROVENANCE if any(map(lacks, runs))) or "-"


def encoder_name(runs: Sequence[dict]) -> str:
    """The runs' encoder in words ('paper's', 'first edition'), from the
    context encoder they built; `unknown` where no run recorded it."""
    names = {tuple(e.get("context_encoder", ())) for run in runs if (e := encoding(run))}
    if not names:
        return UNKNOWN
    words = []
    for built in sorted(names):
        chosen = [ENCODERS[n] for n in built if n in ENCODERS and n != "context_encoder"]
        words.append(chosen[0] if chosen else ", ".join(ENCODERS.get(n, n) for n in built))
    return " + ".join(words)


def precision_name(runs: Sequence[dict]) -> str:
    known = sorted({p for run in runs if (p := precision_of(run)) != UNKNOWN})
    return " + ".join(known) if known else UNKNOWN


def run_steps(runs: Sequence[dict]) -> str:
    known = sorted({s for run in runs if isinstance(s := steps_of(run), int)})
    return " + ".join(f"{s:,}" for s in known) if known else UNKNOWN

"""The verdict table: each of the paper's order claims, read from committed records.

A verdicts file (results/verdicts.toml) lists the claims, each with its readings. A reading
names a record (a folder under the file's), the environments (several: averaged over tasks,
each task's seeds against the other row's on the same task), the row and the row it is claimed
to beat (`row`, `against`, each a recipe stem, with an optional `label`), the measure and the
paper's side (`claim = "above"`: the row is claimed better; `"below"`: worse). Each reading
gives the seeds, both rows' means, P(a run of the side the paper calls better does better than
a run of the other) with its 95% interval, the verdict by the one rule, and what some of its runs
did not record (`unrecorded`, as in the headline: configuration digest, the commit of a clean
tree, CPU, torch version, precision)
(components/reports/intervals.py). The two rows are one build but for their recipes
(components/reports/builds.py): a reading that mixes is refused, and a reading may say why it
stays empty instead (`empty = "why"`).

A reading marked `refused = true` names its rows as any other, and the table shows what the
guard finds (`refused: steps, focal 12,000 v mbml 16,000`); once its runs are redone as one
build, the mark is an error to take out.

Two claims are not an order of two rows. A reading with `level = x` instead of `against` reads
one row against a fixed level (Figure 4c: the gate's AUC against chance, 0.5): P is then P(a
run of the row lies on the claimed side of the level). A reading with `tests = "folder"` names
the property tests that check a claim (the theorems): it counts them, and its verdict says that
they are run by every run of the suite, which nothing lands without.

Nothing in the table is typed but the claim's words, the paper's numbers and the study links:
every number and verdict word comes from the records.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from math import isfinite
from pathlib import Path
from typing import Any

import numpy as np

from components.reports.builds import MixedBuilds, provenance_gaps, read_or_refusal
from components.reports.intervals import improvement, verdict
from components.reports.pairs import paired_runs, row_runs
from components.reports.readings import (
    attention_auc,
    comparable,
    grid_drops,
    last_three,
    normalised,
    quality_drops,
    success,
    variance,
    variance_ratio,
)
from components.reports.spec_files import check_once, check_text, read_tables
from components.reports.tables import Table
from registry import FocalppError

COLUMNS = (
    "claim",
    "paper",
    "reading",
    "seeds",
    "row v against",
    "P(row better)",
    "verdict",
    "unrecorded",
    "study",
)


def _per_run(read: Callable[[dict], float | None]) -> Callable[[list[dict]], list]:
    return lambda group: [read(run) for run in group]


def _dense(run: dict) -> float | None:
    return run["eval"].get("dense_return_mean")


def _quality_drop(train: str, test: str) -> Callable[[list[dict]], list]:
    return lambda group: quality_drops(group).get((train, test), [])


# a measure: how a row's runs (one group) give one value per run, and whether higher is better
MEASURES: dict[str, tuple[Callable[[list[dict]], list], bool]] = {
    "return": (_per_run(comparable), True),
    "return, last three": (_per_run(last_three), True),
    "dense return": (_per_run(_dense), True),
    "normalised score": (_per_run(normalised), True),
    "success rate": (_per_run(success), True),
    "embedding variance": (_per_run(variance), False),
    "within/between variance": (_per_run(variance_ratio), False),
    "attention AUC": (_per_run(attention_auc), True),
    "drop, another task's context": (grid_drops, False),
    "drop, medium → expert context": (_quality_drop("medium", "expert"), False),
    "drop, expert → medium context": (_quality_drop("expert", "medium"), False),
}
CLAIMS = {"above": True, "below": False}
CLAIM_KEYS = {"claim", "paper", "study", "reading"}
READING_KEYS = {
    "name",
    "record",
    "envs",
    "row",
    "against",
    "level",
    "label",
    "measure",
    "claim",
    "empty",
    "refused",
    "tests",
}
OPTIONAL = {"label", "refused"}
ORDER_KEYS = READING_KEYS - OPTIONAL - {"empty", "level", "tests"}  # a reading of two rows
LEVEL_KEYS = READING_KEYS - OPTIONAL - {"empty", "against", "tests"}  # one row against a level
TESTED = "checked by every run of the suite"


def read_spec(path: Path) -> list[dict[str, Any]]:
    """The claims of a verdicts file, each reading checked before anything is read."""
    claims = read_tables(path, "claim", "the verdicts file")
    for number, claim in enumerate(claims, 1):
        where = f"{path}: claim {number}"
        _keys(claim, CLAIM_KEYS, {"claim", "paper", "reading"}, where)
        check_text(claim, "claim", where, "the paper's claim, in words")
        check_text(claim, "paper", where, "the paper's numbers, in words")
        if "study" in claim:
            check_text(claim, "study", where, "a link to the study that reads it")
        readings = claim["reading"]
        if not isinstance(readings, list) or not readings:
            raise FocalppError(f"{where} has no [[claim.reading]]: expected at least one")
        for k, reading in enumerate(readings, 1):
            if not isinstance(reading, dict):
                raise FocalppError(
                    f"{where}, reading {k} is {reading!r}: expected a [[claim.reading]] table"
                )
            _check_reading(reading, f"{where}, reading {k}", Path(path).parent)
        places = [f"reading {k}" for k in range(1, len(readings) + 1)]
        shown = [(r["name"].strip(), r.get("measure")) for r in readings]  # as the table names it
        check_once(list(zip(shown, places, strict=True)), "a reading's name and measure", where)
        reads = [_reads(r) for r in readings]
        check_once([(r, p) for r, p in zip(reads, places, strict=True) if r], "a reading", where)
    check_once(
        [(c["claim"].strip(), f"claim {n}") for n, c in enumerate(claims, 1)], "a claim", str(path)
    )
    return claims


def _reads(reading: dict) -> str:
    """What a reading compares, whatever its name ('' for one that reads no record)."""
    if "record" not in reading:
        return ""
    keys = ("record", "row", "against", "level", "measure")
    return repr((sorted(reading["envs"]), reading.get("label", ""), [reading.get(k) for k in keys]))


def _keys(table: dict, allowed: set[str], needed: set[str], where: str) -> None:
    missing, unknown = needed - set(table), set(table) - allowed
    if missing or unknown:
        raise FocalppError(
            f"{where} "
            + (f"lacks {', '.join(sorted(missing))} " if missing else "")
            + (f"has unknown keys {', '.join(sorted(unknown))} " if unknown else "")
            + f"(expected the keys {', '.join(sorted(allowed))})"
        )


def _check_reading(reading: dict, where: str, root: Path) -> None:
    """A reading names what it compares, or says in words why it stays empty."""
    if "name" in reading:
        check_text(reading, "name", where, "the reading's name, in words")
    if "empty" in reading:
        _keys(reading, READING_KEYS, {"name", "empty"}, where)
        check_text(reading, "empty", where, "why, in words")
        return
    if "tests" in reading:
        _keys(reading, {"name", "tests"}, {"name", "tests"}, where)
        if not isinstance(reading["tests"], str) or not _properties(root / reading["tests"]):
            raise FocalppError(
                f"{where} has tests = {reading['tests']!r}: expected a folder (from the "
                f"verdicts file's) holding test_*.py files with tests"
            )
        return
    if "level" in reading:
        _keys(reading, LEVEL_KEYS | OPTIONAL, LEVEL_KEYS, where)
        level = reading["level"]
        if isinstance(level, bool) or not isinstance(level, int | float) or not isfinite(level):
            raise FocalppError(f"{where} has level = {level!r}: expected a finite number")
    else:
        _keys(reading, ORDER_KEYS | OPTIONAL, ORDER_KEYS, where)
    if reading.get("refused", True) is not True:
        raise FocalppError(
            f"{where} has refused = {reading['refused']!r}: expected true (the guard refuses "
            "this reading, and the table shows why), or no `refused`"
        )
    for key in ("row", "against"):
        if key in reading:
            check_text(reading, key, where, "a recipe's stem (focalpp for focalpp.gin)")
    if not isinstance(reading.get("label", ""), str):
        raise FocalppError(f"{where} has label = {reading['label']!r}: expected a text")
    if reading.get("against") == reading["row"]:
        raise FocalppError(
            f"{where} compares row {reading['row']!r} with itself: expected `against` to name "
            "another row"
        )
    if not isinstance(reading["measure"], str) or reading["measure"] not in MEASURES:
        raise FocalppError(
            f"{where} has measure {reading['measure']!r}: expected one of {', '.join(MEASURES)}"
        )
    if not isinstance(reading["claim"], str) or reading["claim"] not in CLAIMS:
        raise FocalppError(f"{where} has claim {reading['claim']!r}: expected above or below")
    envs = reading["envs"]
    if not isinstance(envs, list) or not envs or not all(isinstance(e, str) for e in envs):
        raise FocalppError(f"{where} has envs = {envs!r}: expected a list of environments")
    if len(set(envs)) != len(envs):
        raise FocalppError(f"{where} lists an environment twice: {envs}")
    record = reading["record"]
    if not isinstance(record, str) or not (root / record).is_dir():
        raise FocalppError(f"{where} has record = {record!r}: expected a folder under {root}")


def verdicts(path: Path) -> Table:
    """The verdict table of the claims in `path`, records read from its folder."""
    root, rows = Path(path).parent, []
    for claim in read_spec(path):
        for k, reading in enumerate(claim["reading"]):
            head = (claim["claim"], claim["paper"]) if k == 0 else ("", "")
            study = claim.get("study", "-") if k == 0 else ""
            rows.append((*head, *_reading(root, reading), study))
    return Table("Verdicts, claim by claim", COLUMNS, rows)


def _reading(root: Path, reading: dict) -> tuple[str, ...]:
    """A reading's cells, or what the guard found where the reading is marked refused."""
    found = read_or_refusal(
        lambda: _read(root, reading),
        bool(reading.get("refused")),
        f"the verdicts file's reading {reading['name']!r}",
    )
    if isinstance(found, MixedBuilds):
        return (reading["name"], "-", "-", "-", f"refused: {found.brief()}", "-")
    return found


def _read(root: Path, reading: dict) -> tuple[str, ...]:
    name = reading["name"]
    if reading.get("empty"):
        return (name, "-", "-", "-", f"not read: {reading['empty']}", "-")
    if "tests" in reading:
        count = len(_properties(root / reading["tests"]))
        return (name, "-", f"{count} properties", "-", TESTED, "-")
    read, higher = MEASURES[reading["measure"]]
    record, envs, label = root / reading["record"], reading["envs"], reading.get("label", "")
    if "level" in reading:
        runs = row_runs(record, envs, reading["row"], label, spec="the verdicts file")
        x = [read(runs[env]) for env in envs]
        y = [[float(reading["level"])] * len(v) for v in x]  # the level as a row of equal runs
        used = [run for env in envs for run in runs[env]]
    else:
        groups = paired_runs(
            record, envs, (reading["row"], reading["against"]), label, spec="the verdicts file"
        )
        x, y = (
            [read(groups[stem][env]) for env in envs]
            for stem in (reading["row"], reading["against"])
        )
        used = [run for side in groups.values() for env in envs for run in side[env]]
    counts = [min(len(v) for v in side) for side in (x, y)]  # each row's seeds on every task
    if min(counts) < 2 or any(None in v for v in (*x, *y)):
        raise FocalppError(
            f"{record}: the reading {name!r} has under two seeds in {reading['measure']} on some "
            "task, or a run without it"
        )
    a, b = (np.array([v[:n] for v in side]).T for side, n in zip((x, y), counts, strict=True))
    # P(a run of the side the paper calls better beats a run of the other), [runs, tasks] each:
    # averaged over tasks; lower is better for a variance or a drop
    sign = 1.0 if higher else -1.0
    better, worse = (a, b) if CLAIMS[reading["claim"]] else (b, a)
    p = improvement(sign * better, sign * worse)
    seeds = str(counts[0]) if "level" in reading else f"{counts[0]} v {counts[1]}"
    seeds += f" × {len(envs)} tasks" if len(envs) > 1 else ""
    return (
        f"{name}, {reading['measure']}",
        seeds,
        _means(float(np.mean(a)), float(np.mean(b))),
        p.format(),
        verdict(p, True),
        provenance_gaps(used),
    )


def _properties(folder: Path) -> list[str]:
    """The test functions (`def test_...`) of the test_*.py files under `folder`."""
    found = []
    for path in sorted(folder.rglob("test_*.py")) if folder.is_dir() else []:
        tree = ast.parse(path.read_text(), filename=str(path))
        found += [n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    return [name for name in found if name.startswith("test_")]


def _means(a: float, b: float) -> str:
    """Both rows' means in one format: exponent notation where either lies under 0.01."""
    small = any(0 < abs(v) < 0.01 for v in (a, b))
    return " v ".join(f"{v:.2e}" if small else f"{v:.2f}" for v in (a, b))

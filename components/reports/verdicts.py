"""The verdict table: each of the paper's order claims, read from committed records.

A verdicts file (results/verdicts.toml) lists the claims, each with its readings. A reading
names a record (a folder under the file's), the environments (several: averaged over tasks,
each task's seeds against the other row's on the same task), the row and the row it is claimed
to beat (`row`, `against`, each a recipe stem, with an optional `label`), the measure and the
paper's side (`claim = "above"`: the row is claimed better; `"below"`: worse). Each reading
gives the seeds, both rows' means, P(a run of the side the paper calls better does better than
a run of the other) with its 95% interval, and the verdict by the one rule
(components/reports/intervals.py). The two rows are one build but for their recipes
(components/reports/builds.py): a reading that mixes is refused, and a reading may say why it
stays empty instead (`empty = "why"`).

Nothing in the table is typed but the claim's words, the paper's numbers and the study links:
every number and verdict word comes from the records.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import tomllib

from components.reports.intervals import improvement, verdict
from components.reports.pairs import paired_runs
from components.reports.readings import (
    comparable,
    grid_drops,
    last_three,
    normalised,
    quality_drops,
    success,
    variance,
    variance_ratio,
)
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
    "drop, another task's context": (grid_drops, False),
    "drop, medium → expert context": (_quality_drop("medium", "expert"), False),
    "drop, expert → medium context": (_quality_drop("expert", "medium"), False),
}
CLAIMS = {"above": True, "below": False}
CLAIM_KEYS = {"claim", "paper", "study", "reading"}
READING_KEYS = {"name", "record", "envs", "row", "against", "label", "measure", "claim", "empty"}


def read_spec(path: Path) -> list[dict[str, Any]]:
    """The claims of a verdicts file, each reading checked before anything is read."""
    try:
        spec = tomllib.loads(Path(path).read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise FocalppError(f"cannot read the verdicts file {path}: {e}") from e
    claims = spec.get("claim")
    if not isinstance(claims, list) or not claims:
        raise FocalppError(f"{path} lists no [[claim]]: expected one table per claim")
    for number, claim in enumerate(claims, 1):
        where = f"{path}: claim {number}"
        _keys(claim, CLAIM_KEYS, {"claim", "paper", "reading"}, where)
        if not isinstance(claim["reading"], list) or not claim["reading"]:
            raise FocalppError(f"{where} has no [[claim.reading]]: expected at least one")
        for k, reading in enumerate(claim["reading"], 1):
            _check_reading(reading, f"{where}, reading {k}", Path(path).parent)
    return claims


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
    if "empty" in reading:
        _keys(reading, READING_KEYS, {"name", "empty"}, where)
        if not isinstance(reading["empty"], str) or not reading["empty"].strip():
            raise FocalppError(f"{where} has empty = {reading['empty']!r}: expected why, in words")
        return
    _keys(reading, READING_KEYS, READING_KEYS - {"label", "empty"}, where)
    if reading["measure"] not in MEASURES:
        raise FocalppError(
            f"{where} has measure {reading['measure']!r}: expected one of {', '.join(MEASURES)}"
        )
    if reading["claim"] not in CLAIMS:
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
    name = reading["name"]
    if reading.get("empty"):
        return (name, "-", "-", "-", f"not read: {reading['empty']}")
    read, higher = MEASURES[reading["measure"]]
    record, envs, label = root / reading["record"], reading["envs"], reading.get("label", "")
    groups = paired_runs(
        record, envs, (reading["row"], reading["against"]), label, spec="the verdicts file"
    )
    x, y = (
        [read(groups[stem][env]) for env in envs] for stem in (reading["row"], reading["against"])
    )
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
    seeds = f"{counts[0]} v {counts[1]}" + (f" × {len(envs)} tasks" if len(envs) > 1 else "")
    return (
        f"{name}, {reading['measure']}",
        seeds,
        _means(float(np.mean(a)), float(np.mean(b))),
        p.format(),
        verdict(p, True),
    )


def _means(a: float, b: float) -> str:
    """Both rows' means in one format: exponent notation where either lies under 0.01."""
    small = any(0 < abs(v) < 0.01 for v in (a, b))
    return " v ".join(f"{v:.2e}" if small else f"{v:.2f}" for v in (a, b))

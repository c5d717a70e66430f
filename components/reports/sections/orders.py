"""Orders: the paper's order claims between two rows, tested on our seeds."""

from __future__ import annotations

from components.reports.builds import check_sides
from components.reports.intervals import improvement, verdict
from components.reports.paper import (
    PAIRS,
    claimed_drop_order,
    claimed_return_order,
    claimed_variance_order,
)
from components.reports.readings import (
    OOD_SOURCE,
    comparable,
    dense_return,
    goal_radius,
    grid_cells,
    grid_drops,
    last_three,
    quality_drops,
    shift_return,
    sparsity,
    variance,
    variance_ratio,
)
from components.reports.successors import (
    NOTHING_TO_LOSE,
    SUCCESSORS,
    claimed_ood_order,
    nothing_to_lose,
)
from components.reports.tables import RunGroups, Section, recipe_stem, table_or_none
from registry import register

# (measure, the value of a run, whether higher is better)
MEASURES = (
    ("return (paper-comparable)", comparable, True),
    ("return, last 3 meta-tests", last_three, True),
    ("embedding variance", variance, False),
    ("within/between variance", variance_ratio, False),
)
COLUMNS = (
    "env",
    "scale",
    "label",
    "measure",
    "row",
    "against",
    "seeds",
    "P(row better) [95% CI]",
    "paper",
    "verdict",
)


@register("report_section", "orders")
class Orders:
    """The paper's order claims between two rows (paper.PAIRS: each ingredient against FOCAL,
    FOCAL++ against each ingredient, FOCAL against each baseline), within one environment, scale
    and label: P(a run of the row does better than a run of the other) with its 95%
    stratified-bootstrap interval, for the return (final, and the mean of the last three
    meta-tests where a run made three), the embedding variance and the scale-free variance
    ratio (lower is better), Table 3's drop under a shift of context and the successors' drop
    with another task's behaviour policy (smaller is better); the verdict says 'reproduced'
    only where the interval excludes 0.5 on the paper's side."""

    order = 20
    title = (
        "Orders: P(a run of the row beats a run of the other) [95% CI], and the verdict on the "
        "paper's order"
    )

    def __call__(self, runs: RunGroups) -> Section | None:
        rows_by_key = {
            (env, scale, group[0].get("label") or "", recipe_stem(group[0])): group
            for (env, scale, _), group in runs.items()
        }
        rows = []
        for measure, value, higher in MEASURES:
            for (env, scale, label, stem), group in sorted(rows_by_key.items()):
                for row, other in PAIRS:
                    if row != stem or (env, scale, label, other) not in rows_by_key:
                        continue
                    against = _against(rows_by_key, (env, scale, label, stem), other)
                    x, y = [value(r) for r in group], [value(r) for r in against]
                    if min(len(x), len(y)) < 2 or None in x + y:
                        continue
                    if higher:
                        claim, said = claimed_return_order(env, row, other, goal_radius(group))
                    else:
                        claim, said = claimed_variance_order(env, row, other, sparsity(group))
                    sign = 1.0 if higher else -1.0
                    p = improvement([sign * v for v in x], [sign * v for v in y], reps=runs.reps)
                    rows.append(
                        (env, scale, label or "-", measure, row, other, f"{len(x)} v {len(y)}",
                         p.format(), said, verdict(p, claim))
                    )  # fmt: skip
        rows += _drop_orders(rows_by_key, runs.reps)
        rows += _ood_orders(rows_by_key, runs.reps)
        return table_or_none(self.title, COLUMNS, rows)


def _against(rows_by_key: dict, key: tuple, other: str) -> list[dict]:
    """The runs of row `other` that row `key` (env, scale, label, stem) is compared with; the
    two must be one build but for their recipes (components/reports/builds.py)."""
    env, scale, label, stem = key
    against = rows_by_key[(env, scale, label, other)]
    where = f"{env} ({scale}{f', {label}' if label else ''})"
    check_sides({stem: rows_by_key[key], other: against}, f"{where}: {stem} against {other}")
    return against


def _drop_orders(rows_by_key: dict, reps: int) -> list[tuple[str, ...]]:
    """Table 3's claim tested per (train quality, test context): FOCAL++ loses less than
    FOCAL when the context comes from another quality (a smaller drop is better)."""
    rows = []
    for (env, scale, label, stem), group in sorted(rows_by_key.items()):
        if stem != "focalpp" or (env, scale, label, "focal") not in rows_by_key:
            continue
        against = _against(rows_by_key, (env, scale, label, stem), "focal")
        ours, theirs = quality_drops(group), quality_drops(against)
        for (train, test), x in sorted(ours.items()):
            y = theirs.get((train, test), [])
            if test == train or min(len(x), len(y)) < 2:
                continue
            measure = f"drop, {train} → {test} context"
            claim = claimed_drop_order(env, train, test)
            rows.append(_drop_row((env, scale, label), measure, stem, x, y, claim, reps))
    return rows


def _drop_row(key, measure, stem, x, y, claim, reps) -> tuple[str, ...]:
    """One Orders row on drops x (the row's seeds) and y (FOCAL's): smaller is better."""
    env, scale, label = key
    p = improvement([-v for v in x], [-v for v in y], reps=reps)
    count = f"{len(x)} v {len(y)}"
    return (env, scale, label or "-", measure, stem, "focal", count, p.format(), claim[1],
            verdict(p, claim[0]))  # fmt: skip


def _ood_orders(rows_by_key: dict, reps: int) -> list[tuple[str, ...]]:
    """The successors' claim tested per family: each successor loses less than FOCAL on the
    test tasks when the context comes from another task's behaviour policy (the context
    grid's other_policy against own; a smaller drop is better)."""
    rows = []
    for (env, scale, label, stem), group in sorted(rows_by_key.items()):
        if stem not in SUCCESSORS or (env, scale, label, "focal") not in rows_by_key:
            continue
        against = _against(rows_by_key, (env, scale, label, stem), "focal")
        x, y = grid_drops(group), grid_drops(against)
        if min(len(x), len(y)) < 2:
            continue
        measure = f"drop, own → {OOD_SOURCE} context (test)"
        claim = claimed_ood_order(env, stem)
        found = [(measure, shift_return, x, y)]
        # on a sparse family the same test in dense return, UNICORN's Table 2 metric
        dx = grid_drops(group, measure=dense_return)
        dy = grid_drops(against, measure=dense_return)
        if dx != x and None not in dx + dy:
            found.append((f"{measure}, dense", dense_return, dx, dy))
        for name, cell, drops, focal in found:
            row = _drop_row((env, scale, label), name, stem, drops, focal, claim, reps)
            if claim[0] and nothing_to_lose(
                grid_cells(group, "own", cell), grid_cells(against, OOD_SOURCE, cell)
            ):
                row = (*row[:-1], NOTHING_TO_LOSE)
            rows.append(row)
    return rows

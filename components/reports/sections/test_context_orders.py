"""FOCAL++ against FOCAL under each test-context protocol, on each offline learner
(docs/TEST_CONTEXTS.md): which is above, and which loses less when the context is not the test
task's offline data."""

from __future__ import annotations

import numpy as np

from components.reports.builds import check_sides
from components.reports.floors import Bracket, bracket_of, brackets, learner
from components.reports.intervals import improvement, verdict
from components.reports.tables import RunGroups, Section, spread, table_or_none
from registry import register

# FOCAL++'s row -> FOCAL's row on the same learner: the recipes' stems (a study's variant, the
# label, pairs the two rows of the same label)
PAIRS = {"focalpp": "focal", "focalpp_iql": "focal_iql"}
COLUMNS = (
    "env",
    "scale",
    "learner",
    "protocol",
    "share FOCAL++",
    "share FOCAL",
    "seeds",
    "FOCAL++",
    "FOCAL",
    "P(FOCAL++ > FOCAL)",
    "verdict",
    "drop FOCAL++",
    "drop FOCAL",
    "P(FOCAL++ loses less)",
    "verdict on the drop",
)


@register("report_section", "test_context_orders")
class ProtocolOrders:
    """Per environment, learner (`focalpp` v `focal`, `focalpp_iql` v `focal_iql`, each pair
    of one label: the learner named as built, with the label) and test-context protocol: first
    each row's share of its floor-to-ceiling gap (components/reports/floors.py; "-" where the
    report holds no floor and ceiling of that learner); both rows' returns (mean ± std over
    seeds, the final meta-test's headline return), P(FOCAL++ > FOCAL) with its 95%
    stratified-bootstrap interval and the verdict on the paper's order (FOCAL++ above) by the
    headline's rule; then each row's drop from its own `offline` score, seed by seed, and
    P(FOCAL++'s drop < FOCAL's) with its verdict on the claim of the paper's Table 3 (the
    attention loses less when the context shifts). Where the report holds the floor, the drops
    are compared only where all four means (each row's offline and protocol cell) lie above the
    floor's interval; otherwise they read "at the floor": no inference to lose. `offline` has
    no drop."""

    order = 96
    title = "Test-context protocols: FOCAL++ against FOCAL on each learner, and the drops"

    def __call__(self, runs: RunGroups) -> Section | None:
        found, rows = brackets(runs), []
        for (env, scale, recipe), x in runs.items():
            stem, _, label = recipe.partition(" ")  # `focalpp (label)` pairs `focal (label)`
            if stem not in PAIRS:
                continue
            y = runs.groups.get((env, scale, recipe.replace(stem, PAIRS[stem], 1)))
            if not y:
                continue
            name = learner(x[0]).upper() + (f" {label}" if label else "")
            check_sides(
                {stem: x, PAIRS[stem]: y}, f"{env} ({scale}, {name}): {stem} against {PAIRS[stem]}"
            )
            pair = (bracket_of(found, x), bracket_of(found, y))
            x_cells, y_cells = _cells(x), _cells(y)
            for protocol in [n for n in x_cells if n in y_cells]:
                cells = _row(x_cells, y_cells, protocol, runs, pair)
                rows.append((env, scale, name, protocol, *cells))
        return table_or_none(self.title, COLUMNS, rows)


def _cells(group: list[dict]) -> dict[str, dict[str, list[float]]]:
    """protocol -> {"return": per seed, "drop": per seed (offline minus it)}, over the seeds
    whose protocol scored (a protocol that could not score a run is left out of its cells)."""
    found: dict[str, dict[str, list[float]]] = {}
    for run in group:
        cells = run["eval"].get("test_contexts", {})
        for name, cell in cells.items():
            if "mean" not in cell:
                continue
            entry = found.setdefault(name, {"return": [], "drop": []})
            entry["return"].append(cell["mean"])
            if "mean" in cells.get("offline", {}):
                entry["drop"].append(cells["offline"]["mean"] - cell["mean"])
    return found


def _row(x_cells, y_cells, name: str, runs: RunGroups, pair) -> tuple[str, ...]:
    x, y = x_cells[name], y_cells[name]
    shares = tuple(
        b.share_text(float(np.mean(c[name]["return"]))) if b else "-"
        for b, c in zip(pair, (x_cells, y_cells), strict=True)
    )
    p = improvement(x["return"], y["return"], reps=runs.reps)
    drops = ("-", "-", "-", "-")
    if name != "offline" and x["drop"] and y["drop"]:
        if _at_the_floor(pair, x_cells, y_cells, name):
            drops = ("at the floor", "at the floor", "-", "no inference to lose")
        else:
            less = improvement([-d for d in x["drop"]], [-d for d in y["drop"]], reps=runs.reps)
            drops = (spread(x["drop"]), spread(y["drop"]), less.format(), verdict(less, True))
    seeds = f"{len(x['return'])} v {len(y['return'])}"
    return (*shares, seeds, spread(x["return"]), spread(y["return"]), p.format(),
            verdict(p, True), *drops)  # fmt: skip


def _at_the_floor(pair: tuple[Bracket | None, Bracket | None], x_cells, y_cells, name) -> bool:
    """Whether either row's drop to `name` is no inference lost: its offline or `name` cell
    lies at its floor (a row whose learner has no floor in the report is not read against one)."""
    for bracket, cells in zip(pair, (x_cells, y_cells), strict=True):
        means = [float(np.mean(cells[p]["return"])) for p in ("offline", name)]
        if bracket is not None and not bracket.drop_is_inference(*means):
            return True
    return False

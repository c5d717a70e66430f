"""FOCAL++ against FOCAL under each test-context protocol, on each offline learner
(docs/TEST_CONTEXTS.md): which is above, and which loses less when the context is not the test
task's offline data."""

from __future__ import annotations

from components.reports.intervals import improvement, verdict
from components.reports.tables import RunGroups, Section, spread, table_or_none
from registry import register

# (FOCAL++'s row, FOCAL's row) on each learner: the recipes' stems
PAIRS = {"BRAC": ("focalpp", "focal"), "IQL": ("focalpp_iql", "focal_iql")}
COLUMNS = (
    "env",
    "scale",
    "learner",
    "protocol",
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
    """Per environment, learner (BRAC: `focalpp` v `focal`; IQL: `focalpp_iql` v `focal_iql`)
    and test-context protocol: both rows' returns (mean ± std over seeds, the final meta-test's
    headline return), P(FOCAL++ > FOCAL) with its 95% stratified-bootstrap interval and the
    verdict on the paper's order (FOCAL++ above) by the headline's rule; then each row's drop
    from its own `offline` score, seed by seed, and P(FOCAL++'s drop < FOCAL's) with its
    verdict on the claim of the paper's Table 3 (the attention loses less when the context
    shifts). `offline` has no drop."""

    order = 96
    title = "Test-context protocols: FOCAL++ against FOCAL on each learner, and the drops"

    def __call__(self, runs: RunGroups) -> Section | None:
        rows = []
        envs = sorted({(env, scale) for env, scale, _ in runs.groups})
        for env, scale in envs:
            for learner, (ours, theirs) in PAIRS.items():
                x, y = runs.groups.get((env, scale, ours)), runs.groups.get((env, scale, theirs))
                if not x or not y:
                    continue
                x_cells, y_cells = _cells(x), _cells(y)
                for name in [n for n in x_cells if n in y_cells]:
                    rows.append((env, scale, learner, name, *_row(x_cells, y_cells, name, runs)))
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


def _row(x_cells, y_cells, name: str, runs: RunGroups) -> tuple[str, ...]:
    x, y = x_cells[name], y_cells[name]
    p = improvement(x["return"], y["return"], reps=runs.reps)
    drops = ("-", "-", "-", "-")
    if name != "offline" and x["drop"] and y["drop"]:
        less = improvement([-d for d in x["drop"]], [-d for d in y["drop"]], reps=runs.reps)
        drops = (spread(x["drop"]), spread(y["drop"]), less.format(), verdict(less, True))
    seeds = f"{len(x['return'])} v {len(y['return'])}"
    return (seeds, spread(x["return"]), spread(y["return"]), p.format(), verdict(p, True), *drops)

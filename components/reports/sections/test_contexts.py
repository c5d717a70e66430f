"""The return under each test-context protocol (`meta_test.protocols`; docs/TEST_CONTEXTS.md)."""

from __future__ import annotations

import numpy as np

from components.reports.floors import Bracket, bracket_of, brackets
from components.reports.tables import RunGroups, Section, spread, table_or_none
from registry import register

COLUMNS = (
    "env",
    "scale",
    "recipe",
    "protocol",
    "recovered share",
    "share in success",
    "seeds",
    "test return",
    "drop from offline",
    "success rate",
    "normalised score",
)


@register("report_section", "test_contexts")
class ProtocolReturns:
    """Per row and test-context protocol: first the share of its learner's floor-to-ceiling gap
    the protocol recovers (components/reports/floors.py; "-" where the report holds no floor and
    ceiling of the row's learner), in return and, on Meta-World, in success rate; then the
    headline return of the final meta-test (mean ± std over seeds; the appendix sparse return on
    sparse families), and each seed's drop from its `offline` score (offline minus the
    protocol's: how much the agent loses when the context is not its test task's offline data)
    — where the report holds the floor, only where both means lie above its interval ("at the
    floor" otherwise: no inference to lose); on Meta-World the success rate and the normalised
    score beside them. A protocol that could not score a run (its `not applicable` reason) is
    left out of that run's cells."""

    order = 95
    title = "Test-context protocols: the return of one trained agent under each"

    def __call__(self, runs: RunGroups) -> Section | None:
        found, rows = brackets(runs), []
        found_success = brackets(runs, "success_rate")  # Meta-World's
        for (env, scale, recipe), group in runs.items():
            bracket = bracket_of(found, group)
            in_success = bracket_of(found_success, group)
            cells = [r["eval"]["test_contexts"] for r in group if "test_contexts" in r["eval"]]
            protocols = list(dict.fromkeys(name for c in cells for name in c))
            for name in protocols:
                scored = [c for c in cells if "mean" in c.get(name, {})]
                if not scored:
                    continue
                values = [c[name]["mean"] for c in scored]
                drops = [c["offline"]["mean"] - c[name]["mean"] for c in scored if "offline" in c]
                rows.append(
                    (
                        env,
                        scale,
                        recipe,
                        name,
                        bracket.share_text(float(np.mean(values))) if bracket else "-",
                        _success_share(scored, name, in_success),
                        str(len(values)),
                        spread(values),
                        _drop(drops, scored, name, bracket),
                        *(
                            _measure(scored, name, key)
                            for key in ("success_rate", "normalised_score")
                        ),
                    )
                )
        return table_or_none(self.title, COLUMNS, rows)


def _success_share(cells: list[dict], name: str, bracket: Bracket | None) -> str:
    """The share of the floor-to-ceiling gap in success rate (Meta-World; "-" elsewhere)."""
    rates = [c[name]["success_rate"] for c in cells if "success_rate" in c[name]]
    if bracket is None or len(rates) != len(cells):
        return "-"
    return bracket.share_text(float(np.mean(rates)))


def _drop(drops: list[float], cells: list[dict], name: str, bracket: Bracket | None) -> str:
    """The drop from offline, or why it is not inference lost: a cell at the floor."""
    if not drops or name == "offline":
        return "-"
    if bracket is not None:
        offline = [c["offline"]["mean"] for c in cells if "mean" in c.get("offline", {})]
        value = np.mean([c[name]["mean"] for c in cells])
        if not bracket.drop_is_inference(float(np.mean(offline)), float(value)):
            return "at the floor"
    return spread(drops)


def _measure(cells: list[dict], name: str, key: str) -> str:
    values = [c[name].get(key) for c in cells]
    return spread(values) if values and None not in values else "-"

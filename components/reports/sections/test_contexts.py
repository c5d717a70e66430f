"""The return under each test-context protocol (`meta_test.protocols`; docs/TEST_CONTEXTS.md)."""

from __future__ import annotations

from components.reports.tables import RunGroups, Section, spread, table_or_none
from registry import register

COLUMNS = (
    "env",
    "scale",
    "recipe",
    "protocol",
    "seeds",
    "test return",
    "drop from offline",
    "success rate",
    "normalised score",
)


@register("report_section", "test_contexts")
class ProtocolReturns:
    """Per row and test-context protocol: the headline return of the final meta-test (mean ±
    std over seeds; the appendix sparse return on sparse families), and each seed's drop from
    its `offline` score (offline minus the protocol's: how much the agent loses when the context
    is not its test task's offline data); on Meta-World the success rate and the normalised
    score beside them. A protocol that could not score a run (its `not applicable` reason) is
    left out of that run's cells."""

    order = 95
    title = "Test-context protocols: the return of one trained agent under each"

    def __call__(self, runs: RunGroups) -> Section | None:
        rows = []
        for (env, scale, recipe), group in runs.items():
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
                        str(len(values)),
                        spread(values),
                        spread(drops) if drops and name != "offline" else "-",
                        *(
                            _measure(scored, name, key)
                            for key in ("success_rate", "normalised_score")
                        ),
                    )
                )
        return table_or_none(self.title, COLUMNS, rows)


def _measure(cells: list[dict], name: str, key: str) -> str:
    values = [c[name].get(key) for c in cells]
    return spread(values) if values and None not in values else "-"

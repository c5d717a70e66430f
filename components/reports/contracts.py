"""The contracts of the two kinds that read finished runs: an analysis (it names the report
section that tables its results) and a report section (its order, its docstring, None for runs
that hold nothing it reports). They live with the reports, whose sections they check; the other
kinds' contracts are in components/contracts/."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any, Protocol

import components.reports.sections  # noqa: F401  (the built-in sections)
from components.contracts import check
from components.contracts.core import Broken, build, contract
from components.evaluation.analyses import check_names
from components.reports.tables import RunGroups
from registry import get, names


class Analysis(Protocol):
    section: str | None

    def __call__(self, trained: Any, figures: Any) -> dict: ...


class ReportSection(Protocol):
    order: int

    def __call__(self, runs: Any) -> Any: ...


def check_analyses(analyses: Sequence[str]) -> None:
    """Each of `analyses` is a registered analysis (a misspelt one named, with suggestions) and
    keeps its kind's contract (it names a section), before anything runs."""
    check_names(list(analyses))
    for name in analyses:
        check(get("analysis", name))


@contract("analysis", Analysis)
def probe_analysis(factory, given) -> None:
    analysis = build(factory, "be built as cls() (its settings are gin bindings)")
    if not callable(analysis):
        raise Broken("be callable as analysis(trained, figures_dir)", "it is not callable")
    try:
        inspect.signature(analysis).bind(object(), object())
    except TypeError as e:
        raise Broken("be callable as analysis(trained, figures_dir)", str(e)) from e

    section = getattr(analysis, "section", "")
    if section == "" or (section is not None and section not in names("report_section")):
        raise Broken(
            "name the report section that tables its results (section = 'name', or None)",
            "it names none" if section == "" else f"it names {section!r}, which is not one",
            f"registered sections: {', '.join(names('report_section'))}; a new one is a "
            "report_section of your own (docs/EXTENDING.md)",
        )


@contract("report_section", ReportSection)
def probe_report_section(factory, given) -> None:
    section = build(factory, "be built as cls() (its settings are gin bindings)")
    order = getattr(section, "order", None)
    if isinstance(order, bool) or not isinstance(order, int):
        raise Broken("have an int `order`, its place in report.md", f"it has {order!r}")
    if not (type(section).__doc__ or "").strip():
        raise Broken("say in its docstring what its columns mean", "it has no docstring")
    try:
        inspect.signature(section).bind(object())
    except TypeError as e:
        raise Broken("be callable as section(runs)", str(e)) from e
    empty = section(RunGroups({}))
    if empty is not None:
        raise Broken("return None for runs that hold nothing it reports", f"it returned {empty!r}")

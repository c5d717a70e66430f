"""A report: the runs under some paths, turned into tables and figures by every registered
report section (kind `report_section`, in its `order`), printed and, with an output folder,
written as report.md beside the figures. tools/report.py is its command line; tools/sweep.py
--records and tools/records.py --report write one when a study lands."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path

from rich.markup import escape
from rich.table import Table as RichTable

import components.evaluation.analyses
import components.reports.contracts
import components.reports.sections  # noqa: F401  (registers the report sections)
from components.contracts import ContractError, check
from components.outputs.console import err, out
from components.outputs.run_dir import (
    atomic_write_text,
    make_dirs,
    removed_on_failure,
    staged_folder,
)
from components.reports.intervals import REPS
from components.reports.runs import read_runs
from components.reports.tables import RunGroups, Section, Table
from registry import entries, entry_of, load_plugin, names

MAX_TITLE = 120  # a table's title; what its columns mean goes to docs/REPORTS.md


def report(
    paths: Sequence[Path],
    *,
    out_dir: Path | None = None,
    reps: int = REPS,
    markdown: bool = False,
    plugins: Sequence[str] = (),
) -> None:
    """Print the report of the runs under `paths` (Markdown or console tables); with
    `out_dir`, also write report.md and the figures there (nothing is left of a failed one)."""
    for plugin in plugins:
        load_plugin(plugin)
    grouped, unfinished = read_runs(paths)
    created = make_dirs(out_dir, "report directory") if out_dir else None
    with removed_on_failure(created), staged_folder(out_dir) if out_dir else nullcontext() as stage:
        runs = RunGroups(grouped, reps, stage)  # report.md and the figures land together
        results = [checked(s, s(runs)) for s in sections()]
        written = write(results, unfinished, markdown=markdown, out_dir=stage)
    if out_dir:
        out.print(f"wrote {escape(str(out_dir / 'report.md'))} and {written} figure(s)")
    for note in unreported(grouped):
        err.print(escape(note))


def sections() -> list:
    """Every registered section, checked against its contract, in report order."""
    found = []
    for entry in entries("report_section"):
        check(entry.obj)
        found.append((entry.obj.order, entry.name, entry.obj()))
    return [section for *_, section in sorted(found, key=lambda f: (f[0], f[1]))]


def checked(section, result) -> Section | None:
    """A section's result, or an error naming the section and the promise it broke."""
    name = f"report_section {entry_of(type(section)).name!r}"
    if result is not None and not isinstance(result, Section):
        raise ContractError(f"{name} returned {type(result).__name__}, expected a Section or None")
    for table in result.tables if result else ():
        if not isinstance(table, Table) or len(table.title) > MAX_TITLE:
            raise ContractError(
                f"{name} gave a table titled {getattr(table, 'title', table)!r}: expected a Table "
                f"whose title is at most {MAX_TITLE} characters (say what its columns mean in "
                "the section's docstring)"
            )
        for row in table.rows:
            if len(row) != len(table.columns) or not all(isinstance(c, str) for c in row):
                raise ContractError(
                    f"{name}: table {table.title!r} has a row {row!r}: expected "
                    f"{len(table.columns)} strings, one per column"
                )
    return result


def unreported(grouped) -> list[str]:
    """Notes on the analyses whose results the runs hold but no loaded section tables."""
    held = {key for group in grouped.values() for run in group for key in run["analysis"]}
    known = {entry.name: entry.obj for entry in entries("analysis")}
    notes = []
    for key in sorted(held):
        section = getattr(known.get(key), "section", None)
        if key not in known:
            why = "the analysis is not loaded here (--plugin its file)"
        elif section is not None and section not in names("report_section"):
            why = f"its section {section!r} is not loaded here (--plugin its file)"
        else:
            continue
        notes.append(
            f"note: the runs hold results of analysis {key!r} that no table reports: {why}"
        )
    return notes


def write(
    results: list[Section | None], unfinished: list[str], *, markdown: bool, out_dir: Path | None
) -> int:
    """Print the tables (and with `out_dir` write report.md beside the figures, returning how
    many figures it shows)."""
    results = [result for result in results if result is not None]
    tables = [table for result in results for table in result.tables]
    for table in tables:
        if markdown:
            print(table.markdown())
            continue
        shown = RichTable(title=table.title, title_justify="left")
        for column in table.columns:
            shown.add_column(column)
        for row in table.rows:
            shown.add_row(*row)
        out.print(shown)
    for note in unfinished:
        out.print(escape(note))
    if out_dir:
        pictures = [path for result in results for path in result.figures]
        text = "\n".join(table.markdown() for table in tables)
        text += "".join(f"\n![{p.stem}]({p.name})\n" for p in pictures)
        atomic_write_text(out_dir / "report.md", text)
        return len(pictures)
    return 0

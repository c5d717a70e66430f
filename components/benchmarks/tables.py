"""The benchmarks' tables: rows of figures printed under a title, one format per column."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

console = Console(highlight=False, width=max(120, Console().width))


def table(title: str, rows: list[dict], columns: dict[str, str]) -> None:
    """A rich table of `rows`: one column per header, its cell `format.format(**row)` ("-"
    where the row lacks a field or holds None)."""
    out = Table(title=title, title_justify="left")
    for i, header in enumerate(columns):
        out.add_column(header, justify="left" if i == 0 else "right")
    for row in rows:
        cells = []
        for fmt in columns.values():
            try:
                cells.append(fmt.format(**row))
            except (KeyError, TypeError):
                cells.append("-")
        out.add_row(*cells)
    console.print(out)

"""Print the catalog of registered components.

python tools/components.py [--kind KIND] [--pattern GLOB] [--plugin MODULE_OR_FILE ...]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from fnmatch import fnmatchcase
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# First, even if ROOT is on PYTHONPATH: this script's own folder holds tools/components.py,
# which would shadow the components package.
sys.path.insert(0, str(ROOT))

from rich.markup import escape  # noqa: E402
from rich.table import Table  # noqa: E402

import components  # noqa: E402
from components.reporting.console import out, run_tool  # noqa: E402
from registry import catalog, load_plugin  # noqa: E402
from registry.core import check_kind  # noqa: E402


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--kind", help="only this kind")
    p.add_argument("--pattern", default="*", help="shell-style pattern on names, e.g. '*attn*'")
    p.add_argument("--plugin", action="append", default=[], help="module or .py file to import")
    p.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    return p.parse_args(argv)


def execute(args: argparse.Namespace) -> int:
    if args.kind:
        check_kind(args.kind)
    components.load_builtin()
    for plugin in args.plugin:
        load_plugin(plugin)
    rows = [c for c in catalog(args.kind) if fnmatchcase(c.name, args.pattern)]
    table = Table(title=f"registered components ({len(rows)})", title_justify="left")
    for column in ("kind", "name", "module", "summary", "arguments (default)"):
        table.add_column(column, overflow="fold")
    for c in rows:
        arguments = ", ".join(f"{a.name}={a.default}" for a in c.arguments)
        table.add_row(*(escape(x) for x in (c.kind, c.name, c.module, c.summary, arguments)))
    out.print(table)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_tool(execute, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())

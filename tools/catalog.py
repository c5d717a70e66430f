"""Print the catalog of registered components, or check an author's own against their contracts.

python tools/catalog.py [--kind KIND] [--pattern GLOB] [--plugin MODULE_OR_FILE ...]
python tools/catalog.py --check MODULE_OR_FILE [...]

`--check` imports each file (or module), probes every component it registers against its kind's
contract (components/contracts/: shapes, finiteness, `loss_*` terms, gradients, state-dict
round trip) and prints one line per component; exit status 2 if any breaks its contract.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from fnmatch import fnmatchcase

from rich.markup import escape
from rich.table import Table

import components
from components.reporting.console import err, out, run_tool
from registry import FocalppError, catalog, entries, load_plugin
from registry.core import check_kind


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--kind", help="only this kind")
    p.add_argument("--pattern", default="*", help="shell-style pattern on names, e.g. '*attn*'")
    p.add_argument("--plugin", action="append", default=[], help="module or .py file to import")
    p.add_argument(
        "--check",
        action="append",
        default=[],
        metavar="MODULE_OR_FILE",
        help="probe every component this file registers against its kind's contract",
    )
    p.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    return p.parse_args(argv)


def check_files(plugins: list[str]) -> int:
    """Probe what each plugin registers; one line per component; 2 if any breaks its contract."""
    from components.contracts import ContractError, check

    broken = 0
    for plugin in plugins:
        module = load_plugin(plugin).__name__
        own = [e for e in entries() if e.module == module]
        if not own:
            raise FocalppError(
                f"{plugin} registers no component: decorate a class with "
                "@register('<kind>', '<name>') (kinds: python tools/catalog.py)"
            )
        for entry in own:
            try:
                check(entry.obj)
            except ContractError as e:
                broken += 1
                err.print(f"[red]broken[/] {entry.kind} {escape(entry.name)}: {escape(str(e))}")
            else:
                out.print(f"[green]ok[/] {entry.kind} {escape(entry.name)}: honours its contract")
    if broken:
        raise FocalppError(f"{broken} component(s) break their contract (see above)")
    return 0


def execute(args: argparse.Namespace) -> int:
    if args.check:
        components.load_builtin()
        return check_files(args.check)
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

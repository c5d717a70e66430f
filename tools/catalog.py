"""Print the catalog of registered components, or check an author's own against their contracts.

python tools/catalog.py [--kind KIND] [--pattern GLOB] [--plugin MODULE_OR_FILE ...]
python tools/catalog.py --arguments [--kind KIND] [--pattern GLOB]
python tools/catalog.py --run [ALGORITHM]
python tools/catalog.py --check MODULE_OR_FILE [...]

`--arguments` prints each component's arguments one per line: the binding, its default and what
its docstring says of it. `--run focal` prints, grouped, every argument a run of that algorithm
reads: the task data (`task_data.*`), the loop (`loop.*`), the sizes (`sizes.*`) and the
algorithm's own.

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
from components.cli.parser import ToolParser
from components.experiment.build import HANDED
from components.outputs.console import err, out, run_tool
from registry import CatalogEntry, FocalppError, catalog, entries, get, load_plugin
from registry.catalog import describe
from registry.core import check_kind


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = ToolParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--kind", help="only this kind")
    p.add_argument("--pattern", default="*", help="shell-style pattern on names, e.g. '*attn*'")
    p.add_argument("--plugin", action="append", default=[], help="module or .py file to import")
    p.add_argument("--arguments", action="store_true", help="each argument with what it is")
    p.add_argument(
        "--run", nargs="?", const="focal", metavar="ALGORITHM", help="a run's arguments, grouped"
    )
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
    if args.run:
        get("algorithm", args.run)  # an unknown name fails here, with suggestions
        groups = [("task_data", "task_data"), ("loop", "loop"), ("sizes", "sizes")]
        for kind, name in [*groups, ("algorithm", args.run)]:
            print_arguments(describe(entries(kind)[[e.name for e in entries(kind)].index(name)]))
        return 0
    rows = [c for c in catalog(args.kind) if fnmatchcase(c.name, args.pattern)]
    if args.arguments:
        for c in rows:
            print_arguments(c)
        return 0
    table = Table(title=f"registered components ({len(rows)})", title_justify="left")
    for column in ("kind", "name", "module", "summary", "arguments (default)"):
        table.add_column(column, overflow="fold")
    for c in rows:
        arguments = ", ".join(f"{a.name}={a.default}" for a in c.arguments)
        table.add_row(*(escape(x) for x in (c.kind, c.name, c.module, c.summary, arguments)))
    out.print(table)
    return 0


def print_arguments(c: CatalogEntry) -> None:
    """One component's arguments as a table: the binding, its default, what it is."""
    table = Table(title=f"{c.kind} {c.name}: {c.summary}", title_justify="left")
    for column in ("binding", "default", "what it is"):
        table.add_column(column, overflow="fold")
    for a in c.arguments:
        handed = a.name in HANDED and a.default == "REQUIRED"  # built by the experiment
        default = "(handed by the experiment)" if handed else a.default
        table.add_row(*(escape(x) for x in (f"{c.name}.{a.name}", default, a.doc)))
    out.print(table)


def main(argv: Sequence[str] | None = None) -> int:
    return run_tool(execute, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())

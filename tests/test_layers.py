"""The house's arrows point one way: tools → algorithms → parts → registry.

Every import in registry/, components/ and tools/ (at module level or inside a function) is read
from the source and checked against the layer order below: a module may import from its own
package or from a lower layer, never from a higher one, so no two packages import each other.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Lowest first; each tuple is one layer, and packages in one layer do not import each other.
# `components` itself (its __init__: `load_builtin`, which imports every part for the catalogue)
# sits above the parts it loads.
LAYERS: list[tuple[str, ...]] = [
    ("registry",),
    ("components.cpu_kernels", "components.json_text"),
    ("components.vector_math", "components.products"),  # below numerics, which installs them
    ("components.numerics",),  # below runtime: a device is resolved by the numerics in force
    (
        "components.runtime",
        "components.transitions",
        "components.machine",
        "components.seeds",
        "components.profiling",
        "components.checkout",
    ),
    ("components.envs", "components.outputs"),
    ("components.rl", "components.encoders", "components.objectives"),
    ("components.first_edition",),  # opt-in: nothing below the tools imports it
    ("components.data",),
    ("components.evaluation",),
    ("components.contracts",),
    ("components.algorithms",),
    ("components.experiment",),
    ("components.sweep",),
    ("components.reports",),
    ("components.benchmarks",),
    ("components",),
    ("components.cli",),
    ("tools",),
]
RANK = {package: rank for rank, layer in enumerate(LAYERS) for package in layer}


def package_of(module: str) -> str | None:
    """The layered package a dotted module name belongs to (None: outside the house)."""
    parts = module.split(".")
    for n in (2, 1):
        if ".".join(parts[:n]) in RANK:
            return ".".join(parts[:n])
    return None


def imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


def sources() -> list[tuple[str, Path]]:
    found = []
    for top in ("registry", "components", "tools"):
        for path in sorted((ROOT / top).rglob("*.py")):
            dotted = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found.append((dotted.removesuffix(".__init__"), path))
    return found


def test_every_import_points_down_or_within_its_package():
    wrong = []
    for module, path in sources():
        own = package_of(module)
        assert own is not None, f"{module} belongs to no layer: add its package to LAYERS"
        for line, target in imports(path):
            other = package_of(target)
            if other is None or other == own:
                continue
            if RANK[other] >= RANK[own]:
                wrong.append(f"{path.relative_to(ROOT)}:{line}: {own} imports {target}")
    assert wrong == [], "imports against the layer order:\n" + "\n".join(wrong)


def test_the_check_sees_a_wrong_import(tmp_path):
    """The rule itself: an import upward is caught (so the test above can fail)."""
    path = tmp_path / "bad.py"
    path.write_text("def f():\n    from components.algorithms.focal import FocalTrainer\n")
    ((line, target),) = imports(path)
    assert line == 2 and RANK[package_of(target)] > RANK["components.rl"]


def _module_graph() -> dict[str, set[str]]:
    """module -> the house's modules it imports (`from package import name` reaches the module
    `package.name` where there is one, else the package's __init__)."""
    known = {module for module, _ in sources()}
    graph: dict[str, set[str]] = {}
    for module, path in sources():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                inner = {f"{node.module}.{alias.name}" for alias in node.names}
                targets |= (inner & known) or {node.module}
        graph[module] = {t for t in targets & known if t != module}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One circle per strongly connected group of two or more modules (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_modules_import_each_other_round_a_circle():
    """A circle (a imports b, b imports a, through functions or type hints too) ties two files
    into one: neither can be read, tested or moved alone."""
    assert _circles(_module_graph()) == []


def test_the_circle_check_sees_a_circle():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _tool_paths(path: Path) -> list[tuple[int, str]]:
    """Where a module builds a path into tools/: `... / "tools"` (a path join), or an argv list
    holding `tools/<name>.py`. Messages that tell a user which tool to run are left alone."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            for side in (node.left, node.right):
                if isinstance(side, ast.Constant) and side.value == "tools":
                    found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, (ast.List, ast.Tuple)):
            for item in node.elts:
                text = ast.unparse(item)
                if re.search(r"tools[/\\][\w{}]+\.py", text):
                    found.append((node.lineno, text))
    return found


def test_the_library_never_reaches_into_tools():
    """tools/ is the top floor: the library never names a file under tools/ to run (a path the
    import graph cannot see)."""
    wrong = [
        f"{path.relative_to(ROOT)}:{line}: {text}"
        for module, path in sources()
        if not module.startswith("tools")
        for line, text in _tool_paths(path)
    ]
    assert wrong == [], "the library names a file under tools/:\n" + "\n".join(wrong)


def test_the_tools_check_sees_a_path_into_tools(tmp_path):
    path = tmp_path / "bad.py"
    path.write_text(
        'import sys\nROOT = None\ncmd = [sys.executable, str(ROOT / "tools" / "run.py")]\n'
        'other = [sys.executable, "tools/collect.py"]\n'
    )
    assert sorted(line for line, _ in _tool_paths(path)) == [3, 4]


# The one place under components/ that starts a command line as a process: the benchmarks that
# measure a whole command (its time from an empty store, its peak memory), and say so.
COMMAND_STARTERS = ("components.benchmarks.commands",)


def _command_lines(path: Path) -> list[tuple[int, str]]:
    """Where a module names a command line's module (`components.cli...`) in code: a string or
    an f-string's text outside a docstring (a process started as `python -m components.cli.run`
    is an arrow up to the command line that the import graph cannot see)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
        and re.search(r"\bcomponents\.cli\b", node.value)
    ]


def test_nothing_under_components_starts_a_command_line():
    """The sweep's workers, the analyses and the data builds call the library; only the
    benchmarks that time the real command start `components.cli` (COMMAND_STARTERS)."""
    wrong = [
        f"{path.relative_to(ROOT)}:{line}: {text!r}"
        for module, path in sources()
        if module.startswith(("components", "registry"))
        and not module.startswith("components.cli")
        and module not in COMMAND_STARTERS
        for line, text in _command_lines(path)
    ]
    assert wrong == [], "a command line started under components/:\n" + "\n".join(wrong)


def test_the_command_line_check_sees_a_start(tmp_path):
    path = tmp_path / "bad.py"
    path.write_text(
        '"""Calls `python -m components.cli.run` nowhere: a docstring."""\n'
        "import subprocess, sys\n"
        'subprocess.run([sys.executable, "-m", "components.cli.run", "--recipe", "x"])\n'
        'tool = "collect"\nargv = [sys.executable, "-m", f"components.cli.{tool}"]\n'
    )
    assert sorted(line for line, _ in _command_lines(path)) == [3, 5]

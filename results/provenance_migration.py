"""How the lines recorded before runs carried their provenance got it (run once; kept to show
the rule). `python results/provenance_migration.py` rewrites every runs.jsonl under results/.

A line written before `config_digest` existed gets each PROVENANCE field from what it holds,
else from git, else `unknown` — never a guess:

- commit, clean: the line's `commit` (a trailing `+` meant uncommitted changes), else unknown;
- cpu: the CPU part of the line's `machine`, else unknown;
- precision: the line's `precision`, else unknown; torch, config_digest: unknown (never stored);
- parts: where the run directory itself was once committed (records before compact ones kept
  whole run directories under docs/results/), the parts its stored config.gin — the operative
  configuration the run wrote — has a section for, found by the run's exact test return; else
  the registered parts the recipe's bound references name (from the algorithm down), composed
  from the recipe files as they were at the commit that trained the run, or, where that is
  unknown, at the first commit holding the run's exact test return; kinds no reference names
  (parts built by a constructor's default) are then left out. Unknown where neither exists.
  `recovered` says which source and commit.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import tempfile
from functools import cache
from io import BytesIO
from pathlib import Path

import gin.config

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from components import load_builtin  # noqa: E402
from components.reports.records import COLUMNS, UNKNOWN  # noqa: E402
from registry import FocalppError, compose, entries  # noqa: E402
from registry.provenance import COLLECTION_KINDS, EXPERIMENT  # noqa: E402

# the last commit whose docs/results/ held whole run directories (their config.gin)
STORED = "0ea0986e780a97526867cebe1cf998c651bccb2e^"


def git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout


@cache
def recipes_at(commit: str) -> Path:
    """The recipes directory as it was at `commit`, extracted once."""
    data = subprocess.run(
        ["git", "archive", commit, "recipes"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    where = Path(tempfile.mkdtemp(prefix=f"recipes-{commit[:8]}-"))
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(where, filter="data")
    return where / "recipes"


@cache
def stored_runs() -> dict[str, str]:
    """repr(test_return_mean) -> the run directory at STORED that holds a config.gin."""
    files = git("ls-tree", "-r", "--name-only", STORED, "docs/results").split()
    dirs = {f.rsplit("/", 1)[0] for f in files if f.endswith("/config.gin")}
    found = {}
    for path in sorted(f for f in files if f.endswith("/eval.json")):
        run_dir = path.rsplit("/", 1)[0]
        if run_dir in dirs:
            value = json.loads(git("show", f"{STORED}:{path}")).get("test_return_mean")
            found.setdefault(repr(value), run_dir)
    return found


def stored_parts(run_dir: str) -> dict[str, list[str]]:
    """kind -> names of the registered parts a stored config.gin has a section for."""
    by_name: dict[str, list] = {}
    for e in entries():
        by_name.setdefault(e.name, []).append(e.kind)
    parts: dict[str, set[str]] = {}
    for line in git("show", f"{STORED}:{run_dir}/config.gin").splitlines():
        if line.startswith("# Parameters for ") and line.endswith(":"):
            name = line[len("# Parameters for ") : -1].split("/")[-1]
            kinds = [name.rsplit(".", 1)[0]] if "." in name else by_name.get(name, [])
            name = name.rsplit(".", 1)[-1]
            if len(kinds) == 1 and kinds[0] not in COLLECTION_KINDS:
                parts.setdefault(kinds[0], set()).add(name)
    return {kind: sorted(names) for kind, names in sorted(parts.items())}


def first_recorded(value: float) -> str | None:
    """The first commit holding this exact test return anywhere."""
    found = git("log", "--reverse", "--format=%H", "-S", repr(value))
    return found.split()[0] if found.split() else None


def referenced_parts() -> dict[str, list[str]]:
    """kind -> names of the registered parts reached by bound references from the algorithm."""
    kinds = {e.gin_name: (e.kind, e.name) for e in entries()}
    config = gin.config._CONFIG
    parts: dict[str, set[str]] = {}
    todo, seen = [((), EXPERIMENT)], set()
    while todo:
        chain, selector = todo.pop()
        if (chain, selector) in seen:
            continue
        seen.add((chain, selector))
        if selector in kinds:
            kind, name = kinds[selector]
            parts.setdefault(kind, set()).add(name)
        prefixes = {"/".join(chain[:i]) for i in range(len(chain) + 1)}
        for (scope, sel), params in config.items():
            if sel == selector and scope in prefixes:
                for value in params.values():
                    for ref in references(value):
                        todo.append((chain + tuple(ref.scopes), ref.configurable.selector))
    return {kind: sorted(names) for kind, names in sorted(parts.items())}


def references(value):
    if isinstance(value, gin.config.ConfigurableReference):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from references(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from references(item)


def recovered_parts(row: dict, commit: str | None) -> tuple[dict | str, str]:
    """The run's parts and where they were read (UNKNOWN, why, where they cannot be)."""
    value = row["eval"].get("test_return_mean")
    stored = stored_runs().get(repr(value))
    if stored is not None:
        parts = stored_parts(stored)
        where = f"the sections of the run's config.gin as committed at {STORED[:12]}^:{stored}"
        return (parts, where) if parts else (UNKNOWN, f"{where} names no registered part")
    source = commit or first_recorded(value)
    if source is None or row.get("plugins"):
        return UNKNOWN, "no stored configuration and no commit to read the recipes at"
    how = "the commit that trained it" if commit else "the first commit holding its test return"
    try:
        compose(
            row["recipe"],
            env=row["env"],
            scale=row["scale"],
            seed=row["seed"],
            bindings=row.get("bindings", []),
            recipes_dir=recipes_at(source),
        )
    except (FocalppError, OSError, ValueError) as e:
        return UNKNOWN, f"the recipes at {source[:12]} no longer compose ({str(e)[:80]})"
    return referenced_parts(), f"the references bound by the recipes at {source[:12]}, {how}"


def migrate(row: dict) -> dict:
    if "config_digest" in row:
        return row  # recorded with its provenance
    commit = row.get("commit")
    machine = row.get("machine")
    parts, where = recovered_parts(row, commit.rstrip("+") if commit else None)
    out = {k: v for k, v in row.items() if k not in ("commit", "machine", "precision")}
    out |= {
        "commit": commit.rstrip("+") if commit else UNKNOWN,
        "clean": (not commit.endswith("+")) if commit else UNKNOWN,
        "config_digest": UNKNOWN,
        "parts": parts,
        "cpu": machine.rsplit(", ", 1)[0] if machine and "torch threads" in machine else UNKNOWN,
        "torch": UNKNOWN,
        "precision": row.get("precision") or UNKNOWN,
        "machine": machine,
        "recovered": f"parts: {where}; config_digest, torch: never recorded",
    }
    first = [k for k in COLUMNS if k in out]
    return {k: out[k] for k in first} | {k: v for k, v in out.items() if k not in first}


def main() -> None:
    load_builtin(opt_in=True)  # every registered name, to read a stored config.gin's sections
    for path in sorted(ROOT.glob("results/**/runs.jsonl")):
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        print(path.relative_to(ROOT), len(rows), flush=True)
        migrated = [migrate(r) for r in rows]
        text = "".join(json.dumps(r, ensure_ascii=False, allow_nan=True) + "\n" for r in migrated)
        path.write_text(text)


if __name__ == "__main__":
    main()

"""The repository's text points only inside the repository: every decision the code, recipes
and docs cite is in docs/DECISIONS.md, whose sections they name as "DECISIONS §n"."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEXT = ("*.py", "*.md", "*.gin", "*.toml")
OUTSIDE = re.compile(r"\bSPEC\b|shared/|\.\./shared")


def project_files() -> list[Path]:
    """Tracked-looking text: not hidden folders (.git, virtual environments), run outputs,
    or builds."""
    return [
        path
        for pattern in TEXT
        for path in ROOT.rglob(pattern)
        if path != Path(__file__)
        and not any(_skipped(p) for p in path.relative_to(ROOT).parts[:-1])
    ]


def _skipped(folder: str) -> bool:
    return (
        folder.startswith(".")
        or folder in {"runs", "build", "dist"}
        or (folder.endswith(".egg-info"))
    )


def test_no_text_points_outside_the_repository():
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in project_files()
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert found == []


def test_every_cited_decision_section_exists():
    sections = set(re.findall(r"^## (\d+)\.", (ROOT / "docs" / "DECISIONS.md").read_text(), re.M))
    cited = {
        number
        for path in project_files()
        for number in re.findall(r"DECISIONS(?:\.md)? §(\d+)", path.read_text(errors="replace"))
    }
    assert cited and cited <= sections, cited - sections

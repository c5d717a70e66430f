"""docs/methods/: one page per method, each with the same five sections, its links resolving,
and every key its recipes write to metrics.jsonl (train and eval rows) named on it.

Each recipe runs once at the tiny scale (a few seconds) on the session's tiny datasets."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import cli

ROOT = Path(__file__).resolve().parents[1]
PAGES = ROOT / "docs" / "methods"

# recipe (recipes/<name>.gin) -> its page under docs/methods/
RECIPE_PAGES = {
    "focal": "focal.md",
    "focalpp": "focalpp.md",
    "focalpp_contrastive": "focalpp.md",
    "focalpp_batchwise": "focalpp.md",
    "focalpp_seqwise": "focalpp.md",
    "focalpp_dml": "focalpp.md",
    "first_edition/focalpp_output_sum": "focalpp.md",
    "first_edition/focalpp_batchwise_softmax": "focalpp.md",
    "first_edition/focalpp_seqwise_transformer": "focalpp.md",
    "batch_pearl": "batch_pearl.md",
    "contextual_bcq": "contextual_bcq.md",
    "mbml": "mbml.md",
    "corro": "corro.md",
    "corro_model": "corro.md",
    "csro": "csro.md",
    "unicorn": "unicorn.md",
    "unicorn_sup": "unicorn.md",
    "focal_iql": "iql.md",
    "focalpp_iql": "iql.md",
}
METHOD_PAGES = sorted(set(RECIPE_PAGES.values()))
SECTIONS = ["Overview", "Usage", "Logged metrics", "Implementation details", "Results"]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _text(name: str) -> str:
    return (PAGES / name).read_text(encoding="utf-8")


def logged_keys(run_dir: Path) -> set[str]:
    """Every key of every row of a run's metrics.jsonl, but `step` and `kind`."""
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert {row["kind"] for row in rows} == {"train", "eval"}, rows
    return {key for row in rows for key in row} - {"step", "kind"}


@pytest.mark.parametrize("recipe", sorted(RECIPE_PAGES))
def test_every_logged_key_is_on_its_page(recipe, tiny_data, tmp_path):
    assert (ROOT / "recipes" / f"{recipe}.gin").is_file()
    run_dir = tmp_path / recipe
    done = cli(
        "run",
        "--recipe",
        f"{recipe}.gin",
        "--scale",
        "tiny",
        "--out",
        str(run_dir),
        "--gin_param",
        f"task_data.root = '{tiny_data}'",
        "--gin_param",
        "experiment.analyses = []",  # a recipe's end-of-run analyses log no training key
    )
    assert done.returncode == 0, done.stderr
    page = _text(RECIPE_PAGES[recipe])
    missing = sorted(key for key in logged_keys(run_dir) if f"`{key}`" not in page)
    assert missing == [], f"{RECIPE_PAGES[recipe]} does not name {missing}"


@pytest.mark.parametrize("name", METHOD_PAGES)
def test_page_has_the_five_sections_in_order(name):
    headings = re.findall(r"^## (.+?)\s*$", _text(name), re.M)
    assert headings == SECTIONS


def test_index_lists_every_page():
    index = _text("README.md")
    assert [p for p in METHOD_PAGES if f"]({p})" not in index] == []
    assert sorted(p.name for p in PAGES.glob("*.md")) == sorted([*METHOD_PAGES, "README.md"])


def _anchor(heading: str) -> str:
    """A Markdown heading's anchor as GitHub makes it: lower case, punctuation dropped,
    spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("name", [*METHOD_PAGES, "README.md"])
def test_relative_links_resolve(name):
    text = _text(name)
    targets = [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t)]
    broken = []
    for target in targets:
        path, _, anchor = target.partition("#")
        file = (PAGES / path).resolve() if path else PAGES / name
        if not file.exists():
            broken.append(target)
        elif anchor and file.suffix == ".md":
            headings = re.findall(r"^#+ (.+)$", file.read_text(encoding="utf-8"), re.M)
            if anchor not in {_anchor(h) for h in headings}:
                broken.append(target)
    assert targets and broken == []
    assert all(len(line) <= 300 for line in text.splitlines())

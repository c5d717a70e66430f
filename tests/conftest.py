"""Shared fixtures: the toy recipes under tests/data and a clean gin state per test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import gin
import pytest

DATA = Path(__file__).parent / "data"
TOY_RECIPES = DATA / "recipes"
ROOT = Path(__file__).resolve().parents[1]

sys.path.insert(0, str(TOY_RECIPES))  # so tests can `import toy_components` as the recipes do

from components.runtime import tune_allocator  # noqa: E402

tune_allocator()  # as the tools do


@pytest.fixture(autouse=True)
def _clean_gin():
    gin.clear_config()
    yield
    gin.clear_config()


@pytest.fixture
def toy_recipes() -> Path:
    return TOY_RECIPES


def cli(tool: str, *args: str, env: dict | None = None, cwd=None) -> subprocess.CompletedProcess:
    """Run `python tools/<tool>.py ARGS` as a user would; capture its output."""
    return subprocess.run(
        [sys.executable, str(ROOT / "tools" / f"{tool}.py"), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "250", **(env or {})},
        cwd=cwd or ROOT,
        timeout=300,
    )

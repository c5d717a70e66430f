"""Shared fixtures: the toy recipes under tests/data and a clean gin state per test."""

from __future__ import annotations

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

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


@pytest.fixture(scope="session")
def tiny_data(tmp_path_factory) -> Path:
    """One dataset store for the whole session: tiny-scale datasets are built once, on first
    use, and shared by every test that runs the learner."""
    return tmp_path_factory.mktemp("tiny-datasets")


def run_row(
    recipe: str | Path,
    env: str,
    data_root: Path,
    run_dir: Path,
    *,
    seed: int = 0,
    bindings: tuple[str, ...] = (),
    plugins: tuple[str, ...] = (),
    device: str = "cpu",
    train: bool = True,
):
    """Compose a shipped (or given) recipe at the tiny scale and run it in-process, as
    tools/run.py does; returns (metrics, algorithm); with train=False only builds it and
    returns (None, algorithm)."""
    from registry import RECIPES_DIR, RunContext, compose
    from registry.recipes import build

    comp = compose(
        recipe,
        env=env,
        scale="tiny",
        seed=seed,
        device=device,
        bindings=[f"focal.data_root = '{data_root}'", *bindings],
        plugins=plugins,
        recipes_dir=RECIPES_DIR,
    )
    run_dir.mkdir(parents=True)
    context = RunContext(env=env, scale="tiny", seed=seed, run_dir=run_dir, device=device)
    algorithm = build(comp.experiment.algorithm, run=context)
    return (algorithm.run() if train else None), algorithm

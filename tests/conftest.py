"""Shared fixtures: the toy recipes under tests/data and a clean gin state per test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import gin
import pytest

from components import numerics

DATA = Path(__file__).parent / "data"
TOY_RECIPES = DATA / "recipes"
ROOT = Path(__file__).resolve().parents[1]

sys.path.insert(0, str(TOY_RECIPES))  # so tests can `import toy_components` as the recipes do

# Every test runs with portable numerics (components/numerics.py): one thread (two PyTorch
# processes of two threads each on two cores run several times slower than one after the
# other) and the kernels every x86 CPU shares, so no number a test checks depends on the CPU
# that runs it. Set before torch loads; the tools' own processes inherit it.
numerics.pin()
os.environ.setdefault(numerics.WORKERS_ENV, "1")  # tiny builds: a worker's start costs more

from components.runtime import tune_allocator  # noqa: E402

tune_allocator()  # as the tools do


@pytest.fixture(autouse=True, scope="session")
def _own_precision_cache(tmp_path_factory):
    """Runs that time their precision write to a cache of the test session's, not the user's."""
    os.environ["FOCALPP_CACHE"] = str(tmp_path_factory.mktemp("focalpp-cache"))


@pytest.fixture(autouse=True)
def _clean_gin():
    gin.clear_config()
    yield
    gin.clear_config()


@pytest.fixture
def toy_recipes() -> Path:
    return TOY_RECIPES


def cli(
    tool: str, *args: str, env: dict | None = None, cwd=None, process: bool = False
) -> subprocess.CompletedProcess:
    """Run `tools/<tool>.py ARGS` as a user would and capture its output and exit status.

    In this process, through the tool's `main(argv)` (its own start-up is what a separate
    process would add, and that is most of a tool test's time), unless `process` is set or the
    call needs a process of its own: a working directory, or environment variables read at
    start-up (the thread count, which changes the order of float sums and so the bits of a run
    that another process is compared with) that this process does not already have. Variables
    the tools read at each call (FOCALPP_RECIPES) are set for the call only.
    """
    start_up = {k: v for k, v in (env or {}).items() if k not in READ_AT_EACH_CALL}
    if process or cwd is not None or not _in_effect(start_up):
        return subprocess.run(
            [sys.executable, str(ROOT / "tools" / f"{tool}.py"), *args],
            capture_output=True,
            text=True,
            env={**os.environ, "COLUMNS": "250", **(env or {})},
            cwd=cwd or ROOT,
        )
    return _in_process(tool, list(args), env or {})


READ_AT_EACH_CALL = {"FOCALPP_RECIPES"}


def _in_effect(start_up: dict[str, str]) -> bool:
    """This process started with these values (a test worker's one thread, say), and its
    PyTorch still runs with the thread count they give."""
    if any(os.environ.get(k) != v for k, v in start_up.items()):
        return False
    if "OMP_NUM_THREADS" in start_up:
        import torch

        return torch.get_num_threads() == int(start_up["OMP_NUM_THREADS"])
    return True


def _in_process(tool: str, args: list[str], env: dict) -> subprocess.CompletedProcess:
    import io
    import traceback
    from contextlib import redirect_stderr, redirect_stdout
    from unittest.mock import patch

    from components.outputs import console

    main = _tool(tool).main
    stdout, stderr = io.StringIO(), io.StringIO()
    widths = console.out.width, console.err.width
    console.out.width = console.err.width = 250
    try:
        with patch.dict(os.environ, env), redirect_stdout(stdout), redirect_stderr(stderr):
            try:
                code = main(args)
            except SystemExit as e:  # argparse errors and --help
                code = e.code if isinstance(e.code, int) else 2
            except BaseException:  # an escaped exception: a traceback and status 1, as python
                traceback.print_exc()
                code = 1
    finally:
        console.out.width, console.err.width = widths
        gin.clear_config()
    argv = [sys.executable, str(ROOT / "tools" / f"{tool}.py"), *args]
    return subprocess.CompletedProcess(argv, code, stdout.getvalue(), stderr.getvalue())


_TOOLS: dict = {}


def _tool(name: str):
    """tools/<name>.py imported once as a module (the tools folder is not a package)."""
    if name not in _TOOLS:
        import importlib.util

        spec = importlib.util.spec_from_file_location(
            f"focalpp_tool_{name}", ROOT / "tools" / f"{name}.py"
        )
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses defined in a tool look their module up
        spec.loader.exec_module(module)
        _TOOLS[name] = module
    return _TOOLS[name]


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
    from components.experiment.build import build_algorithm
    from registry import RunContext, compose, default_recipes_dir
    from registry.usage import check_used

    comp = compose(
        recipe,
        env=env,
        scale="tiny",
        seed=seed,
        device=device,
        bindings=[f"task_data.root = '{data_root}'", *bindings],
        plugins=plugins,
        recipes_dir=default_recipes_dir(),
    )
    run_dir.mkdir(parents=True)
    context = RunContext(env=env, scale="tiny", seed=seed, run_dir=run_dir, device=device)
    algorithm = build_algorithm(comp.experiment, context)
    check_used(later=comp.experiment.analyses)  # as tools/run.py: every binding configured a part
    return (algorithm.run() if train else None), algorithm


def logged_steps(run_dir: Path) -> list[int]:
    """The steps of a running run's metrics.jsonl records, complete lines only (the line being
    written when the file is read has no newline yet)."""
    log = run_dir / "metrics.jsonl"
    text = log.read_text() if log.exists() else ""
    return [json.loads(line)["step"] for line in text.split("\n")[:-1] if line]

"""The bad-input catalogue: every command-line tool, driven as a user drives it, with inputs that
are wrong in one way each. For every case: a non-zero exit, a message on stderr that names the
problem, no traceback, and nothing partial left behind (no run directory, no dataset, no study
directory; a run being resumed is left exactly as it was).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.conftest import cli

DATASET = Path("sparse_point_robot") / "checkpoints-s0-tiny"
ARRAY = DATASET / "mixed" / "obs.npy"  # the quality the point-robot recipes train on
ONE_THREAD = {"OMP_NUM_THREADS": "1"}


@dataclass
class World:
    """Shared, valid material that each case spoils a copy of."""

    root: Path
    store: Path  # a valid tiny dataset store
    finished: Path  # a finished tiny run
    recipe: Path  # a recipe file of our own (a shipped row plus the tiny run's bindings)


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> World:
    root = tmp_path_factory.mktemp("bad-inputs")
    store = root / "store"
    r = cli("collect", "--env", "sparse_point_robot", "--scale", "tiny", "--out", str(store))
    assert r.returncode == 0, r.stderr
    recipe = root / "my_row.gin"
    recipe.write_text(f"include 'focal.gin'\nfocal.data_root = '{store}'\n")
    finished = root / "finished"
    r = cli("run", "--recipe", str(recipe), "--scale", "tiny", "--out", str(finished))
    assert r.returncode == 0, r.stderr
    return World(root, store, finished, recipe)


def snapshot(path: Path) -> dict[str, str]:
    """Every file under `path` with a hash of its bytes."""
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }


def copy_store(world: World, case: Path) -> Path:
    store = case / "store"
    shutil.copytree(world.store, store)
    return store


def rewrite_checksum(store: Path, relative: Path) -> None:
    """Make the manifest agree with an array file changed on purpose (so the checksum passes
    and the loader's later checks are what must catch the problem)."""
    manifest_path = store / DATASET / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    quality, name = relative.parts[-2], relative.stem
    entry = manifest["qualities"][quality]["files"][name]
    entry["sha256"] = hashlib.sha256((store / relative).read_bytes()).hexdigest()
    manifest_path.write_text(json.dumps(manifest))


def run_args(world: World, out: Path, *extra: str, store: Path | None = None) -> list[str]:
    bindings = [f"focal.data_root = '{store}'"] if store else []
    return [
        "--recipe",
        str(world.recipe),
        "--scale",
        "tiny",
        "--out",
        str(out),
        *(a for b in bindings for a in ("--gin_param", b)),
        *extra,
    ]


# Each case prepares its input in a fresh directory and returns (tool, args, paths that must
# not exist afterwards, paths that must be unchanged).
Prepare = Callable[[World, Path], tuple[str, list[str], list[Path], list[Path]]]


def recipe_file(text: str) -> Prepare:
    def prepare(world: World, case: Path):
        recipe = case / "bad.gin"
        recipe.write_text(text)
        return "run", ["--recipe", str(recipe), "--out", str(case / "run")], [case / "run"], []

    return prepare


def binding(*bindings: str) -> Prepare:
    def prepare(world: World, case: Path):
        extra = [a for b in bindings for a in ("--gin_param", b)]
        return "run", run_args(world, case / "run", *extra), [case / "run"], []

    return prepare


def run_flags(*flags: str) -> Prepare:
    def prepare(world: World, case: Path):
        return "run", run_args(world, case / "run", *flags), [case / "run"], []

    return prepare


def spoiled_store(spoil: Callable[[Path], None]) -> Prepare:
    def prepare(world: World, case: Path):
        store = copy_store(world, case)
        spoil(store)
        before = case / "run"
        return "run", run_args(world, before, store=store), [before], []

    return prepare


def flip_byte(store: Path) -> None:
    data = bytearray((store / ARRAY).read_bytes())
    data[-1] ^= 0xFF
    (store / ARRAY).write_bytes(bytes(data))


def truncate(store: Path) -> None:
    data = (store / ARRAY).read_bytes()
    (store / ARRAY).write_bytes(data[: len(data) // 2])
    rewrite_checksum(store, ARRAY)


def nan_data(store: Path) -> None:
    array = np.load(store / ARRAY)
    array[3, 5, 0] = np.nan
    np.save(store / ARRAY, array)
    rewrite_checksum(store, ARRAY)


def wrong_shape(store: Path) -> None:
    np.save(store / ARRAY, np.zeros((2, 2), dtype=np.float32))
    rewrite_checksum(store, ARRAY)


def resume(make: Callable[[World, Path], Path], *extra: str) -> Prepare:
    def prepare(world: World, case: Path):
        run_dir = make(world, case)
        return "run", ["--resume", str(run_dir), *extra], [], [run_dir]

    return prepare


def copied_run(world: World, case: Path, *, drop: tuple[str, ...] = ()) -> Path:
    run_dir = case / "run"
    shutil.copytree(world.finished, run_dir)
    for name in drop:
        (run_dir / name).unlink()
    return run_dir


def edited_recipe(world: World, case: Path) -> Path:
    """A run stopped after its last checkpoint, whose recipe file was edited since."""
    recipe = case / "row.gin"
    recipe.write_text(world.recipe.read_text())
    run_dir = case / "run"
    r = cli("run", "--recipe", str(recipe), "--scale", "tiny", "--out", str(run_dir))
    assert r.returncode == 0, r.stderr
    (run_dir / "eval.json").unlink()
    recipe.write_text(world.recipe.read_text() + "meta_test.curve = True\n")
    return run_dir


def garbage_checkpoint(world: World, case: Path) -> Path:
    run_dir = copied_run(world, case, drop=("eval.json",))
    (run_dir / "checkpoint.pt").write_bytes(b"not a checkpoint at all")
    return run_dir


def study(text: str, *extra: str) -> Prepare:
    def prepare(world: World, case: Path):
        path = case / "study.toml"
        path.write_text(text)
        out = case / "study"
        return "sweep", [str(path), "--out", str(out), *extra], [out], []

    return prepare


GOOD_STUDY = 'name = "s"\nrecipes = ["focal.gin"]\nenvs = ["sparse_point_robot"]\nseeds = [0]\n'


def other_study(world: World, case: Path):
    """A study directory made by a study with other bindings."""
    out = case / "study"
    out.mkdir()
    (out / "study.json").write_text(
        json.dumps({"scale": "cpu", "bindings": ["focal.steps = 5"], "plugins": []})
    )
    path = case / "study.toml"
    path.write_text(GOOD_STUDY)
    return "sweep", [str(path), "--out", str(out)], [out / "runs", out / "index.json"], []


def collect(*args: str) -> Prepare:
    def prepare(world: World, case: Path):
        store = case / "store"
        return "collect", [*args, "--scale", "tiny", "--out", str(store)], [store], []

    return prepare


def unwritable_out(world: World, case: Path):
    blocker = case / "a-file"
    blocker.write_text("")
    return "run", run_args(world, blocker / "run"), [blocker / "run"], [blocker]


def existing_out(world: World, case: Path):
    out = case / "run"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    return "run", run_args(world, out), [], [out]


def syntax_error_plugin(world: World, case: Path):
    plugin = case / "broken_plugin.py"
    plugin.write_text("def oops(:\n")
    return "run", run_args(world, case / "run", "--plugin", str(plugin)), [case / "run"], []


CASES: dict[str, tuple[Prepare, str]] = {
    # recipes and bindings
    "recipe file missing": (run_flags("--recipe", "no_such_recipe.gin"), "recipe file not found"),
    "recipe syntax error": (recipe_file("include 'focal.gin'\nfocal.steps = = 3\n"), "bad.gin"),
    "unknown component in recipe": (
        recipe_file("include 'focal.gin'\nfocal.encoder = @no_such_encoder\n"),
        "no_such_encoder",
    ),
    "unknown parameter": (binding("focal.no_such_arg = 1"), "no_such_arg"),
    "wrong type in binding": (
        binding("focal.steps = 'many'"),
        "focal.steps = 'many': expected int",
    ),
    "wrong element type": (binding("brac.hidden = (64, 'wide')"), "brac.hidden"),
    "component of the wrong kind": (binding("focal.encoder = @brac"), "registered agent"),
    "malformed binding": (binding("focal.steps == 3"), "--gin_param"),
    "unknown env": (run_flags("--env", "nowhere"), "nowhere"),
    "unknown scale": (run_flags("--scale", "huge"), "huge"),
    "unknown plugin module": (run_flags("--plugin", "no_such_plugin_module"), "no_such_plugin"),
    "plugin with a syntax error": (syntax_error_plugin, "broken_plugin.py"),
    # impossible sizes
    "batch larger than a task's data without replacement": (
        binding("focal.context_replace = False", "focal.context_batch = 100000"),
        "distinct transitions",
    ),
    "more distinct tasks than exist": (
        binding("focal.meta_batch = 500", "focal.tasks_with_replacement = False"),
        "focal.meta_batch = 500",
    ),
    "empty batch": (binding("focal.rl_batch = 0"), "focal.rl_batch = 0: must be ≥ 1"),
    "negative steps": (binding("focal.steps = -5"), "focal.steps = -5"),
    # datasets
    "dataset checksum mismatch": (spoiled_store(flip_byte), "checksum mismatch"),
    "truncated dataset array": (spoiled_store(truncate), "obs.npy"),
    "NaN in dataset": (spoiled_store(nan_data), "non-finite value"),
    "array of the wrong shape": (spoiled_store(wrong_shape), "manifest says"),
    "dataset array missing": (
        spoiled_store(lambda s: (s / ARRAY).unlink()),
        "obs.npy is missing",
    ),
    "dataset manifest missing": (
        spoiled_store(lambda s: (s / DATASET / "manifest.json").unlink()),
        "half-written",
    ),
    "dataset manifest not JSON": (
        spoiled_store(lambda s: (s / DATASET / "manifest.json").write_text("{oops")),
        "not valid JSON",
    ),
    "dataset of an unknown quality": (binding("focal.quality = 'superb'"), "superb"),
    # output
    "output directory exists": (existing_out, "already exists"),
    "output not writable": (unwritable_out, "cannot create output directory"),
    # resume
    "resume of a missing run": (
        lambda w, c: ("run", ["--resume", str(c / "nothing")], [c / "nothing"], []),
        "no such run directory",
    ),
    "resume of a directory that is not a run": (
        resume(lambda w, c: (c / "plain").mkdir() or (c / "plain")),
        "not a run directory",
    ),
    "resume under another recipe": (
        resume(lambda w, c: copied_run(w, c, drop=("eval.json",)), "--recipe", "focalpp.gin"),
        "it is a run of recipe",
    ),
    "resume with another seed": (
        resume(lambda w, c: copied_run(w, c, drop=("eval.json",)), "--seed", "7"),
        "it is a run of seed 0",
    ),
    "resume of a run without a checkpoint": (
        resume(lambda w, c: copied_run(w, c, drop=("eval.json", "checkpoint.pt"))),
        "no checkpoint.pt",
    ),
    "resume of a corrupted checkpoint": (resume(garbage_checkpoint), "cannot read checkpoint"),
    "resume after the recipe changed": (resume(edited_recipe), "different configuration"),
    # dataset collection
    "collect: unknown protocol": (
        collect("--env", "sparse_point_robot", "--protocol", "nope"),
        "nope",
    ),
    "collect: unknown env": (collect("--env", "nowhere"), "nowhere"),
    # studies
    "study file missing": (
        lambda w, c: ("sweep", [str(c / "none.toml"), "--out", str(c / "s")], [c / "s"], []),
        "study file not found",
    ),
    "study not TOML": (study("name = = 'x'\n"), "not valid TOML"),
    "study with an unknown key": (study(GOOD_STUDY + "sedes = [1]\n"), "unknown key(s) sedes"),
    "study with a wrong type": (
        study(GOOD_STUDY.replace("seeds = [0]", 'seeds = "0"')),
        "`seeds` must be a list",
    ),
    "study of an unknown env": (
        study(GOOD_STUDY.replace("sparse_point_robot", "nowhere")),
        "unknown env 'nowhere'",
    ),
    "study with an unknown analysis": (
        study(GOOD_STUDY + 'analyses = ["embeding_variance"]\n'),
        "embeding_variance",
    ),
    "study on an unknown backend": (study(GOOD_STUDY, "--backend", "slurm"), "slurm"),
    "study directory of another study": (other_study, "other bindings"),
    # reports
    "report of a missing path": (
        lambda w, c: ("report", [str(c / "none")], [], []),
        "does not exist",
    ),
    "report of a directory without runs": (
        lambda w, c: ("report", [str(c)], [], []),
        "no finished runs",
    ),
}


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA GPU")
def test_cuda_without_a_gpu(world, tmp_path):
    out = tmp_path / "run"
    r = cli("run", *run_args(world, out, "--device", "cuda"))
    assert r.returncode == 2 and "sees no CUDA GPU" in r.stderr and not out.exists()


@dataclass
class Outcome:
    result: subprocess.CompletedProcess
    directory: Path
    absent: list[Path]
    unchanged: dict[Path, object]  # path -> its snapshot before the command


def attempt(case: str, world: World, directory: Path) -> Outcome:
    prepare, _ = CASES[case]
    tool, args, absent, unchanged = prepare(world, directory)
    before = {p: state(p) for p in unchanged}
    return Outcome(cli(tool, *args, env=ONE_THREAD), directory, absent, before)


def state(path: Path):
    return snapshot(path) if path.is_dir() else path.read_bytes()


@pytest.fixture(scope="module")
def outcomes(world, tmp_path_factory) -> dict[str, Outcome]:
    """Every case, two at a time (each is a fresh process, mostly start-up)."""
    dirs = {case: tmp_path_factory.mktemp(re.sub(r"\W+", "-", case)[:40]) for case in CASES}
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {case: pool.submit(attempt, case, world, dirs[case]) for case in CASES}
    return {case: future.result() for case, future in futures.items()}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input(case, outcomes):
    outcome, message = outcomes[case], CASES[case][1]
    r = outcome.result
    assert r.returncode != 0, f"{case}: exit 0\n{r.stdout}"
    assert message in r.stderr, f"{case}: {message!r} not in:\n{r.stderr}"
    assert "Traceback" not in r.stderr
    for path in outcome.absent:
        assert not path.exists(), f"{case}: {path} was left behind"
    for path, before in outcome.unchanged.items():
        assert state(path) == before, f"{case}: {path} changed"
    leftovers = [p for p in outcome.directory.rglob(".*") if p.name.endswith((".tmp", ".partial"))]
    assert leftovers == [], leftovers


def test_catalogue_is_large():
    assert len(CASES) >= 20

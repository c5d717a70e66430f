"""The bad-input catalogue: every command-line tool, driven as a user drives it, with inputs that
are wrong in one way each. For every case: exit status 2, a message on stderr that names the
problem, no traceback, and nothing partial left behind (no run directory, no dataset, no study
directory; a run being resumed is left exactly as it was). docs/ERRORS.md lists the cases.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch

from components.outputs.checkpoint import CHECKPOINT
from tests.conftest import DATA, ROOT, cli

DATASET = Path("sparse_point_robot") / "checkpoints-s0-tiny"
ARRAY = DATASET / "mixed" / "obs.npy"  # the quality the point-robot recipes train on
DIVERGING = DATA / "diverging_parts.py"  # parts that go NaN at a chosen step


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
    bindings = [f"task_data.root = '{store}'"] if store else []
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
# not exist afterwards, paths that must be unchanged[, environment variables[, the working
# directory]]).
Prepare = Callable[[World, Path], tuple]


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


def consistent_edit(field: str, edit: Callable[[np.ndarray], np.ndarray]) -> Callable:
    """Replace one array of the trained-on quality and make the manifest agree with it
    (checksum, shape and dtype): only the content checks can catch what is wrong."""

    def spoil(store: Path) -> None:
        relative = ARRAY.with_name(f"{field}.npy")
        array = edit(np.load(store / relative))
        np.save(store / relative, array)
        manifest_path = store / DATASET / "manifest.json"
        manifest = json.loads(manifest_path.read_text())
        entry = manifest["qualities"][relative.parts[-2]]["files"][field]
        entry.update(shape=list(array.shape), dtype=str(array.dtype))
        entry["sha256"] = hashlib.sha256((store / relative).read_bytes()).hexdigest()
        manifest_path.write_text(json.dumps(manifest))

    return spoil


def edited_quality(edit: Callable[[dict], None]) -> Callable:
    """Edit the trained-on quality's manifest entry (its arrays untouched)."""

    def spoil(store: Path) -> None:
        manifest_path = store / DATASET / "manifest.json"
        manifest = json.loads(manifest_path.read_text())
        edit(manifest["qualities"][ARRAY.parts[-2]])
        manifest_path.write_text(json.dumps(manifest))

    return spoil


def flags_of_two(flags: np.ndarray) -> np.ndarray:
    out = flags.astype(np.uint8)
    out[out == 1] = 2
    return out


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


def edited_configuration(world: World, case: Path) -> Path:
    """A run stopped after its last checkpoint, whose recorded configuration (run.json's
    `config`, what a resume rebuilds it from) was edited since."""
    run_dir = copied_run(world, case, drop=("eval.json",))
    record = json.loads((run_dir / "run.json").read_text())
    record["config"] += "\nmeta_test.curve = True\n"
    (run_dir / "run.json").write_text(json.dumps(record))
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


def study_into_a_record(record_line: str, folder: str) -> Prepare:
    """A study given `--records` of a committed record under results/: refused before anything
    is read or written, the record left as it was (`--dry-run`, so that a guard that let it
    through would still train nothing into the repository's record)."""

    def prepare(world: World, case: Path):
        path = case / "study.toml"
        path.write_text(GOOD_STUDY + record_line)
        out, records = case / "study", ROOT / "results" / folder
        args = [str(path), "--out", str(out), "--records", str(records), "--dry-run"]
        return "sweep", args, [out], [records]

    return prepare


def study_binding_nothing(world: World, case: Path):
    """Two runs whose study binds a part no run builds: the first is refused, the second is
    not started (the study halts) rather than refused in its turn."""
    path = case / "study.toml"
    path.write_text(
        GOOD_STUDY.replace("seeds = [0]", "seeds = [0, 1]")
        + 'scale = "tiny"\n'
        + f"bindings = [\"focal.data_root = '{world.store}'\", "
        + '"attention_blocks.heads = 2"]\n'
    )
    out = case / "study"
    runs = [out / "runs" / f"focal-sparse_point_robot-s{seed}" for seed in (0, 1)]
    return "sweep", [str(path), "--out", str(out), "--workers", "1"], runs, []


def other_study(world: World, case: Path, **spec):
    """A study directory made by a study with other bindings (or other `spec` fields)."""
    out = case / "study"
    out.mkdir()
    before = {"scale": "cpu", "bindings": ["loop.steps = 5"], "plugins": [], "numerics": "portable"}
    (out / "study.json").write_text(json.dumps({**before, **spec}))
    path = case / "study.toml"
    path.write_text(GOOD_STUDY)
    return "sweep", [str(path), "--out", str(out)], [out / "runs", out / "index.json"], []


def study_folder_built_otherwise(edit, drop: tuple[str, ...] = ()) -> Prepare:
    """A study directory holding a run of the study's name that the sweep would keep (finished,
    or stopped after a checkpoint: `drop` eval.json) whose run.json `edit` spoils: another
    configuration than the study builds now (its digest left as it was), none recorded, or a
    file that is not a run record. Refused before anything trains; the run is kept."""

    def prepare(world: World, case: Path):
        out = case / "study"
        run_dir = out / "runs" / "focal-sparse_point_robot-s0"
        shutil.copytree(world.finished, run_dir)
        for name in drop:
            (run_dir / name).unlink()
        path = run_dir / "run.json"
        path.write_text(edit(json.loads(path.read_text())))
        study = case / "study.toml"
        study.write_text(
            GOOD_STUDY
            + 'scale = "tiny"\n'
            + f"bindings = [\"focal.data_root = '{world.store}'\"]\n"
        )
        return "sweep", [str(study), "--out", str(out)], [out / "index.json"], [run_dir]

    return prepare


STEPS_7 = (
    "focal-sparse_point_robot-s0: built otherwise (today v its run.json: loop.loop.steps: 6 v 7)"
)


def _steps_7(record: dict) -> str:
    record["effective_bindings"]["loop.loop.steps"] = "7"
    return json.dumps(record)


def _no_bindings(record: dict) -> str:
    record.pop("effective_bindings")
    return json.dumps(record)


def record_of_mkl_products(world: World, case: Path):
    """A study recording into a record whose portable runs computed their matrix products
    with MKL (made before the products moved to OpenBLAS)."""
    record = case / "results" / "record"
    r = cli("records", str(copied_run(world, case)), "--out", str(record))
    assert r.returncode == 0, r.stderr
    line = json.loads((record / "runs.jsonl").read_text())
    line["numerics"].pop("products", None)
    (record / "runs.jsonl").write_text(json.dumps(line) + "\n")
    path = case / "study.toml"
    path.write_text(GOOD_STUDY.replace("seeds = [0]", "seeds = [7]"))
    out = case / "study"
    return "sweep", [str(path), "--out", str(out), "--records", str(record)], [out / "runs"], []


def other_study_with_runs(world: World, case: Path):
    """The same, holding a run of the study's name: refused as another study's folder (what
    differs in the study), before its runs are compared one by one."""
    tool, args, _, _ = other_study(world, case)
    run_dir = case / "study" / "runs" / "focal-sparse_point_robot-s0"
    shutil.copytree(world.finished, run_dir)
    return tool, args, [case / "study" / "index.json"], [run_dir]


def other_numerics(world: World, case: Path):
    """A study directory whose runs ran with the other numerics: only they differ."""
    return other_study(world, case, bindings=[], numerics="free")


def collect(*args: str) -> Prepare:
    def prepare(world: World, case: Path):
        store = case / "store"
        return "collect", [*args, "--scale", "tiny", "--out", str(store)], [store], []

    return prepare


def unwritable_out(world: World, case: Path):
    blocker = case / "a-file"
    blocker.write_text("")
    return "run", run_args(world, blocker / "run"), [blocker / "run"], [blocker]


def seeds_run(*extra: str):
    """`--seeds` runs into case/runs: neither the parent's seed directories nor any other
    output may be left behind."""

    def case_of(world: World, case: Path):
        out = case / "runs"
        seeds = [out / f"{stem}-sparse_point_robot-s{s}" for stem in ("focal", "batch_pearl")
                 for s in (0, 1, 2)]  # fmt: skip
        return "run", run_args(world, out, *extra, store=world.store), seeds, []

    return case_of


def existing_out(world: World, case: Path):
    out = case / "run"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    return "run", run_args(world, out), [], [out]


def algorithm_needing_an_argument(world: World, case: Path):
    """A plugin algorithm whose constructor requires an argument nothing binds."""
    plugin = case / "wide_algorithm.py"
    plugin.write_text(
        "from registry import register\n\n\n"
        "@register('algorithm', 'needs_width')\n"
        "class NeedsWidth:\n"
        "    def __init__(self, *, data, loop, width):\n"
        "        self.width = width\n\n"
        "    def run(self):\n"
        "        return {}\n"
    )
    recipe = case / "wide.gin"
    recipe.write_text(world.recipe.read_text() + "experiment.algorithm = @needs_width\n")
    args = ["--recipe", str(recipe), "--plugin", str(plugin), "--scale", "tiny"]
    return "run", [*args, "--out", str(case / "run")], [case / "run"], []


def syntax_error_plugin(world: World, case: Path):
    plugin = case / "broken_plugin.py"
    plugin.write_text("def oops(:\n")
    return "run", run_args(world, case / "run", "--plugin", str(plugin)), [case / "run"], []


def spoiled_checkpoint(spoil: Callable[[Path], None], tool: str = "run") -> Prepare:
    """A stopped copy of the finished run (it still has its previous checkpoint) whose
    checkpoint.pt is spoiled; resumed, or analysed."""

    def prepare(world: World, case: Path):
        run_dir = copied_run(world, case, drop=("eval.json",) if tool == "run" else ())
        spoil(run_dir / CHECKPOINT)
        args = ["--resume", str(run_dir)] if tool == "run" else [str(run_dir)]
        return tool, args, [case / "was-run"], [run_dir]

    return prepare


def flip_a_checkpoint_bit(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


class CodeOnLoad:
    """Unpickled, this would create a file next to the checkpoint's run directory."""

    def __init__(self, target: Path):
        self.target = target

    def __reduce__(self):
        return (open, (str(self.target), "w"))


def code_running_checkpoint(path: Path) -> None:
    """A pickle that runs code on load, with a valid digest (a hostile file, not a damaged one)."""
    buffer = io.BytesIO()
    torch.save({"step": 1, "x": CodeOnLoad(path.parent.parent / "was-run")}, buffer)
    payload = buffer.getvalue()
    digest = hashlib.sha256(payload).hexdigest().encode()
    path.write_bytes(b"focalpp-checkpoint sha256=" + digest + b"\n" + payload)


def edited_manifest(edit: Callable[[dict], None]) -> Prepare:
    """A store whose manifest was edited by hand (the arrays and their checksums untouched)."""

    def spoil(store: Path) -> None:
        path = store / DATASET / "manifest.json"
        manifest = json.loads(path.read_text())
        edit(manifest)
        path.write_text(json.dumps(manifest))

    return spoiled_store(spoil)


def move_a_test_task_to_train(manifest: dict) -> None:
    task = manifest["split"]["test"].pop(0)
    manifest["split"]["train"].append(task)


def move_a_goal(manifest: dict) -> None:
    manifest["tasks"][3]["goal"] = [0.0, 1.0]


def rebuilt_dataset(world: World, case: Path) -> Path:
    """A stopped run whose dataset's manifest is not the one it was trained on."""
    run_dir = copied_run(world, case, drop=("eval.json",))
    record = json.loads((run_dir / "run.json").read_text())
    record["dataset"]["manifest_sha256"] = "0" * 64
    record["dataset"]["content_sha256"] = "0" * 64
    (run_dir / "run.json").write_text(json.dumps(record))
    return run_dir


def plugin_file(text: str, tool: str = "run") -> Prepare:
    def prepare(world: World, case: Path):
        plugin = case / "my_plugin.py"
        plugin.write_text(text)
        return "run", run_args(world, case / "run", "--plugin", str(plugin)), [case / "run"], []

    return prepare


def objective_plugin(name: str, body: str) -> Prepare:
    """A recipe whose objective `name` comes from a plugin file; its forward returns `body`."""

    def prepare(world: World, case: Path):
        plugin = case / f"{name}.py"
        plugin.write_text(
            "import torch\nfrom registry import register\n\n"
            f"@register('objective', '{name}')\nclass Mine(torch.nn.Module):\n"
            f"    def forward(self, emb):\n        {body}\n"
        )
        extra = ("--plugin", str(plugin), "--gin_param", f"focal.objective = @{name}")
        return "run", run_args(world, case / "run", *extra), [case / "run"], []

    return prepare


def analyze(make: Callable[[World, Path], Path] | None, *extra: str) -> Prepare:
    def prepare(world: World, case: Path):
        run_dir = make(world, case) if make else case / "missing-run"
        unchanged = [run_dir] if run_dir.exists() else []
        return "analyze", [str(run_dir), *extra], [], unchanged

    return prepare


def report_of(spoil: Callable[[Path], None]) -> Prepare:
    def prepare(world: World, case: Path):
        run_dir = copied_run(world, case)
        spoil(run_dir)
        return "report", [str(case)], [], [run_dir]

    return prepare


def records_of(spoil: Callable[[Path], None]) -> Prepare:
    """tools/records.py of a spoiled copy of the finished run: no record is written."""

    def prepare(world: World, case: Path):
        run_dir = copied_run(world, case)
        spoil(run_dir)
        return "records", [str(run_dir), "--out", str(case / "rec")], [case / "rec"], [run_dir]

    return prepare


def headline_file(entry: str) -> Prepare:
    """`tools/report.py --headline` of a headline file of one [[benchmark]] entry, beside an
    empty folder `record`."""

    def prepare(world: World, case: Path):
        (case / "record").mkdir()
        path = case / "headline.toml"
        path.write_text("[[benchmark]]\n" + entry)
        return "report", ["--headline", str(path)], [], [path]

    return prepare


def verdicts_file(reading: str) -> Prepare:
    """`tools/report.py --verdicts` of a verdicts file of one claim with one reading, beside an
    empty folder `record`."""

    def prepare(world: World, case: Path):
        (case / "record").mkdir()
        path = case / "verdicts.toml"
        path.write_text('[[claim]]\nclaim = "C"\npaper = "1 v 0"\n[[claim.reading]]\n' + reading)
        return "report", ["--verdicts", str(path)], [], [path]

    return prepare


READING = 'name = "r"\nrecord = "record"\nenvs = ["a"]\nrow = "focalpp"\nagainst = "focal"\n'
LEVEL = 'name = "r"\nrecord = "record"\nenvs = ["a"]\nrow = "focalpp"\n'


def record_of(spoil: Callable[[list[dict]], None], file: str = "runs.jsonl") -> Prepare:
    """A report of a compact record (tools/records.py) of the finished run whose `file` was
    spoiled; the record is left as it was."""

    def prepare(world: World, case: Path):
        record = case / "record"
        r = cli("records", str(copied_run(world, case)), "--out", str(record), "--logs")
        assert r.returncode == 0, r.stderr
        rows = [json.loads(line) for line in (record / file).read_text().splitlines()]
        spoil(rows)
        (record / file).write_text("".join(json.dumps(row) + "\n" for row in rows))
        return "report", [str(record)], [], [record]

    return prepare


def record_with_a_changed_archive(world: World, case: Path):
    record = case / "record"
    r = cli("records", str(copied_run(world, case)), "--out", str(record), "--logs")
    assert r.returncode == 0, r.stderr
    (record / "logs.sha256").write_text("0" * 64 + "  logs.tar.xz\n")
    return "report", [str(record)], [], [record]


def store_under_a_file(world: World, case: Path):
    blocker = case / "a-file"
    blocker.write_text("")
    store = blocker / "store"
    args = ["--env", "sparse_point_robot", "--scale", "tiny", "--out", str(store)]
    return "collect", args, [store], [blocker]


NESTED = "[" * 100_000  # deeper than json's parser recurses


def run_json_edited(**fields) -> Callable[[Path], None]:
    """Set `fields` in a run's run.json (a dict value is merged into the field's object)."""

    def spoil(run_dir: Path) -> None:
        record = json.loads((run_dir / "run.json").read_text())
        for key, value in fields.items():
            record[key] = {**record[key], **value} if isinstance(value, dict) else value
        (run_dir / "run.json").write_text(json.dumps(record))

    return spoil


def run_json_without(key: str) -> Callable[[Path], None]:
    def spoil(run_dir: Path) -> None:
        record = json.loads((run_dir / "run.json").read_text())
        record.pop(key)
        (run_dir / "run.json").write_text(json.dumps(record))

    return spoil


def record_file(file: str, data: bytes | Callable[[bytes], bytes], tool: str = "report") -> Prepare:
    """A compact record of the finished run (with its training logs) whose `file` now holds
    `data` (or `data` of its bytes); `tools/report.py` of it, or (`records`) the record
    extended with the run again."""

    def prepare(world: World, case: Path):
        record = case / "record"
        r = cli("records", str(copied_run(world, case)), "--out", str(record), "--logs")
        assert r.returncode == 0, r.stderr
        path = record / file
        path.write_bytes(data(path.read_bytes()) if callable(data) else data)
        if tool == "records":
            args = [str(world.finished), "--out", str(record), "--logs"]
            return "records", args, [], [record]
        return "report", [str(record)], [], [record]

    return prepare


def record_whose_archive_does_not_open(world: World, case: Path):
    """Extending a record whose logs.tar.xz is not an archive, its digest written to match."""
    junk = b"not an xz archive"
    prepare = record_file("logs.tar.xz", junk, tool="records")
    tool, args, absent, unchanged = prepare(world, case)
    digest = hashlib.sha256(junk).hexdigest()
    (case / "record" / "logs.sha256").write_text(f"{digest}  logs.tar.xz\n")
    return tool, args, absent, unchanged


def record_with_two_configurations_in_a_row(world: World, case: Path):
    """A record whose second line, the first's row (recipe, label, env, scale), was built from
    another configuration that the record holds: a line moved into another row by an edit."""
    from registry.provenance import config_digest

    record = case / "record"
    r = cli("records", str(copied_run(world, case)), "--out", str(record))
    assert r.returncode == 0, r.stderr
    row = json.loads((record / "runs.jsonl").read_text())
    config = json.loads((record / "configs.jsonl").read_text())
    other = {**config["bindings"], "loop.loop.log_every": "7"}
    second = {**row, "run": "run-b", "config_digest": config_digest(other)}
    (record / "runs.jsonl").write_text(json.dumps(row) + "\n" + json.dumps(second) + "\n")
    lines = [config, {"config_digest": second["config_digest"], "bindings": other}]
    (record / "configs.jsonl").write_text("".join(json.dumps(c) + "\n" for c in lines))
    return "report", [str(record)], [], [record]


def record_whose_row_built_other_parts(known_digests: bool) -> Prepare:
    """A record of two runs of one row whose second line names other parts (a batch gate the
    first did not build): by hand, or by a recovery that read another run's config; with the
    first line's configuration digest, or (a line recorded before digests were) none."""

    def prepare(world: World, case: Path):
        record = case / "record"
        r = cli("records", str(copied_run(world, case)), "--out", str(record))
        assert r.returncode == 0, r.stderr
        row = json.loads((record / "runs.jsonl").read_text())
        if not known_digests:
            row["config_digest"] = "unknown"
            (record / "configs.jsonl").write_text("")
        second = {**row, "run": "run-b", "parts": {**row["parts"], "attention": ["batch_gate"]}}
        (record / "runs.jsonl").write_text(json.dumps(row) + "\n" + json.dumps(second) + "\n")
        return "report", [str(record)], [], [record]

    return prepare


def two_runs_of_a_row_one_naming_other_parts(world: World, case: Path):
    """tools/records.py of two runs of one row, one whose run.json names an agent it did not
    build (its configuration unchanged; not a part of the encoder, which the build check
    compares): no record is written."""
    runs = case / "runs"
    a, b = runs / "a", runs / "b"
    shutil.copytree(world.finished, a)
    shutil.copytree(world.finished, b)
    run_json_edited(parts={"agent": ["bcq"]})(b)
    return "records", [str(a), str(b), "--out", str(case / "rec")], [case / "rec"], [a, b]


def two_runs_of_a_row_one_trained_free(world: World, case: Path):
    """tools/records.py of two runs of one row, the second trained with free numerics (its
    run.json says so; the first's portable): one row holds one build, so no record is written."""
    runs = case / "runs"
    a, b = runs / "a", runs / "b"
    shutil.copytree(world.finished, a)
    shutil.copytree(world.finished, b)
    run_json_edited(numerics={"mode": "free", "torch_threads": 2})(b)
    return "records", [str(a), str(b), "--out", str(case / "rec")], [case / "rec"], [a, b]


def spec_file(flag: str, text: bytes) -> Prepare:
    """`tools/report.py --headline` or `--verdicts` of a spec file holding `text`, beside an
    empty folder `record`."""

    def prepare(world: World, case: Path):
        (case / "record").mkdir()
        path = case / "spec.toml"
        path.write_bytes(text)
        return "report", [flag, str(path)], [], [path]

    return prepare


def in_an_empty_folder(tool: str, *args: str) -> Prepare:
    """A tool given `--out ''` (an unset shell variable), run from a folder of its own: it
    must write nothing there."""

    def prepare(world: World, case: Path):
        here = case / "here"
        here.mkdir()
        (case / "study.toml").write_text(GOOD_STUDY)
        filled = [a.format(finished=world.finished, case=case) for a in args]
        return tool, filled, [], [here], {}, here

    return prepare


DIVERGING_ENCODER = (
    "--plugin",
    str(DIVERGING),
    "--gin_param",
    "loop.eval_every = 2",
    "--gin_param",
    "context_encoder.transition = @diverging_mlp_encoder",
)


def diverged_after_a_checkpoint(world: World, case: Path):
    """Its transition encoder's output is NaN from step 4, after the checkpoint of step 2: the
    run stops and stays, to be resumed from that checkpoint."""
    extra = (*DIVERGING_ENCODER, "--gin_param", "diverging_mlp_encoder.after = 3")
    return "run", run_args(world, case / "run", *extra), [], []


def own_recipes(files: dict[str, str], *flags: str) -> Prepare:
    """Recipe files of one's own in the case directory (`{row}` in a text: the world's valid
    row, `{here}`: the case directory); the first is run at the tiny scale."""

    def prepare(world: World, case: Path):
        for name, text in files.items():
            (case / name).write_text(
                text.replace("{row}", str(world.recipe)).replace("{here}", str(case))
            )
        recipe = case / next(iter(files))
        args = ["--recipe", str(recipe), "--scale", "tiny", "--out", str(case / "run"), *flags]
        return "run", args, [case / "run"], []

    return prepare


PARTS_HEAD = (
    "import numpy as np\nimport torch\nfrom torch import nn\n\nfrom registry import register\n\n"
)


def encoder_text(name: str, init: str, forward: str, arguments: str = "") -> str:
    """A transition encoder plugin `name` (its __init__ body and forward's return)."""
    return (
        f"@register('transition_encoder', '{name}')\nclass Mine(nn.Module):\n"
        f"    def __init__(self, *, sizes, latent_dim{arguments}):\n        {init}\n\n"
        f"    def forward(self, context):\n        return {forward}\n"
    )


LINEAR = "super().__init__()\n        self.net = nn.Linear(sum(sizes), latent_dim)"


def checked_parts(text: str) -> Prepare:
    """`tools/catalog.py --check` of a plugin file of one's own (left unchanged)."""

    def prepare(world: World, case: Path):
        plugin = case / "my_parts.py"
        plugin.write_text(PARTS_HEAD + text)
        return "catalog", ["--check", str(plugin)], [], [plugin]

    return prepare


def encoder_in_a_run(text: str, name: str) -> Prepare:
    """A run whose transition encoder `name` comes from a plugin file."""

    def prepare(world: World, case: Path):
        plugin = case / "my_parts.py"
        plugin.write_text(PARTS_HEAD + text)
        extra = ("--plugin", str(plugin), "--gin_param", f"context_encoder.transition = @{name}")
        return "run", run_args(world, case / "run", *extra), [case / "run"], []

    return prepare


FIXED_FEATURES = (
    "super().__init__()\n        g = torch.Generator().manual_seed(0)\n"
    "        self.register_buffer('proj', torch.randn(sum(sizes), latent_dim, generator=g))"
)
STANDARDISED = "self.net((context - context.mean(1, keepdim=True)) / context.std(1, keepdim=True))"
COSINE_OBJECTIVE = (
    "@register('objective', 'bad_input_cosine')\nclass Cosine(nn.Module):\n"
    "    def forward(self, emb):\n"
    "        z = emb.query_mean / emb.query_mean.norm(dim=-1, keepdim=True)\n"
    "        return {'loss_cosine': -((z @ z.T) * emb.same_task().float()).mean()}\n"
)


def with_environment(prepare: Prepare, **variables: str) -> Prepare:
    def wrapped(world: World, case: Path):
        return (*prepare(world, case), variables)

    return wrapped


LONG = "x" * 300  # a name longer than file systems take (255 bytes)
HOLDERS: list[subprocess.Popen] = []  # processes holding a run's lock until this one ends


def held_run(world: World, case: Path, drop: tuple[str, ...] = ("eval.json",)) -> Path:
    """A stopped run (finished, with `drop=()`) that another real process holds the lock of (as
    a training one does); that process lets go when its stdin closes, at the latest when the
    tests end."""
    run_dir = copied_run(world, case, drop=drop)
    code = "import sys\nfrom components.outputs.run_dir import run_lock\n"
    code += "with run_lock(sys.argv[1]):\n    print('held', flush=True)\n    sys.stdin.read()\n"
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(run_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    HOLDERS.append(holder)
    assert holder.stdout.readline() == "held\n"
    return run_dir


def moved_plugin_run(world: World, case: Path, drop: tuple[str, ...] = ("eval.json",)) -> Path:
    """A stopped run (finished, with `drop=()`) made with `--plugin FILE` whose file is no
    longer where run.json says."""
    run_dir = copied_run(world, case, drop=drop)
    record = json.loads((run_dir / "run.json").read_text())
    record["plugins"] = [str(case / "moved-away" / "my_plugin.py")]
    (run_dir / "run.json").write_text(json.dumps(record))
    return run_dir


def edited_record(**changes) -> Callable[[World, Path], Path]:
    def make(world: World, case: Path) -> Path:
        run_dir = copied_run(world, case, drop=("eval.json",))
        record = json.loads((run_dir / "run.json").read_text())
        (run_dir / "run.json").write_text(json.dumps({**record, **changes}))
        return run_dir

    return make


def binary_record(world: World, case: Path) -> Path:
    run_dir = copied_run(world, case, drop=("eval.json",))
    (run_dir / "run.json").write_bytes(b"\xff\xfe\x00 not text")
    return run_dir


def edited_eval(**changes) -> Callable[[Path], None]:
    def spoil(run_dir: Path) -> None:
        record = json.loads((run_dir / "eval.json").read_text())
        (run_dir / "eval.json").write_text(json.dumps({**record, **changes}))

    return spoil


def edited_meta_test(**changes) -> Callable[[Path], None]:
    """The run's log with its first meta-test line (`"kind": "eval"`) edited."""

    def spoil(run_dir: Path) -> None:
        lines = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
        next(x for x in lines if x.get("kind") == "eval").update(changes)
        (run_dir / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))

    return spoil


def glued_metrics(run_dir: Path) -> None:
    """metrics.jsonl as a resume used to leave it: a record cut mid-line, the next glued on."""
    lines = (run_dir / "metrics.jsonl").read_text().splitlines(keepends=True)
    lines[1] = lines[1][:40] + lines.pop(2)
    (run_dir / "metrics.jsonl").write_text("".join(lines))


def report_to(spoil: Callable[[Path], None]) -> Prepare:
    """A report with --out (which reads each run's metrics log) of a spoiled copy of a run."""

    def prepare(world: World, case: Path):
        run_dir = copied_run(world, case)
        spoil(run_dir)
        out = case / "report"
        return "report", [str(run_dir), "--out", str(out)], [out], [run_dir]

    return prepare


def two_copies(world: World, case: Path):
    for name in ("a", "b"):
        shutil.copytree(world.finished, case / name)
    return "report", [str(case)], [], [case / "a", case / "b"]


def into_a_file(tool: str) -> Prepare:
    """`--out` naming a file that exists: a report's or a study's directory."""

    def prepare(world: World, case: Path):
        blocker = case / "a-file"
        blocker.write_text("mine")
        (case / "study.toml").write_text(GOOD_STUDY)
        first = str(world.finished) if tool == "report" else str(case / "study.toml")
        return tool, [first, "--out", str(blocker)], [], [blocker]

    return prepare


def too_long_a_name(tool: str) -> Prepare:
    """`--out` with a name longer than the file system takes, under a directory to be made."""

    def prepare(world: World, case: Path):
        out = case / "deep" / LONG
        (case / "study.toml").write_text(GOOD_STUDY)
        first = {
            "run": run_args(world, out),
            "report": [str(world.finished), "--out", str(out)],
            "sweep": [str(case / "study.toml"), "--out", str(out)],
            "collect": ["--env", "sparse_point_robot", "--scale", "tiny", "--out", str(out)],
        }
        return tool, first[tool], [case / "deep"], []

    return prepare


def damaged_index(world: World, case: Path):
    """A study directory whose index.json lists a run without its status and directory."""
    out = case / "study"
    out.mkdir()
    (out / "index.json").write_text(json.dumps({"runs": [{"name": "focal-s0"}]}))
    return "report", [str(out)], [], [out]


def damaged_study_spec(world: World, case: Path):
    out = case / "study"
    out.mkdir()
    (out / "study.json").write_text("{oops")
    (case / "study.toml").write_text(GOOD_STUDY)
    args = [str(case / "study.toml"), "--out", str(out)]
    return "sweep", args, [out / "runs", out / "index.json"], [out / "study.json"]


CASES: dict[str, tuple[Prepare, str]] = {
    # recipes and bindings
    "recipe file missing": (run_flags("--recipe", "no_such_recipe.gin"), "recipe file not found"),
    "recipe syntax error": (recipe_file("include 'focal.gin'\nfocal.steps = = 3\n"), "bad.gin"),
    "unknown component in recipe": (
        recipe_file("include 'focal.gin'\nfocal.encoder = @no_such_encoder\n"),
        "no_such_encoder",
    ),
    "unknown parameter": (binding("focal.no_such_arg = 1"), "no_such_arg"),
    "seeds beyond a seed's range": (
        run_flags("--seeds", "0-99999999999"),
        "--seeds 99999999999: expected an integer seed in [0, 4294967295]",
    ),
    "seeds beginning with a minus": (
        run_flags("--seeds", "-3-4"),
        "'-3-4': expected seeds as a range and/or a list, e.g. 0-7",
    ),
    "seeds range running backwards": (
        run_flags("--seeds", "7-3"),
        "the range 7-3 runs backwards",
    ),
    "seeds range too long": (
        run_flags("--seeds", "0-5000"),
        "5,001 seeds; expected at most 1,000",
    ),
    "run with unknown numerics": (
        run_flags("--numerics", "exact"),
        "argument --numerics: invalid choice: 'exact'",
    ),
    "portable run with bf16 steps": (
        run_flags("--numerics", "portable", "--gin_param", "loop.precision = 'bf16'"),
        "loop.precision = 'bf16' with portable numerics",
    ),
    "wrong type in binding": (
        binding("loop.steps = 'many'"),
        "loop.steps = 'many': expected int",
    ),
    "wrong element type": (binding("brac.hidden = (64, 'wide')"), "brac.hidden"),
    "component of the wrong kind": (binding("focal.encoder = @brac"), "registered agent"),
    "malformed binding": (binding("loop.steps == 3"), "--gin_param"),
    "unknown env": (run_flags("--env", "nowhere"), "nowhere"),
    "unknown Meta-World ML1 environment": (
        run_flags("--env", "ml1_pushh"),
        "unknown --env 'ml1_pushh': not one of the 50 families of the group 'ml1'. "
        "Did you mean: ml1_push",
    ),
    "unknown Meta-World ML1 environment, dry run": (
        run_flags("--env", "ml1_pushh", "--dry-run"),
        "unknown --env 'ml1_pushh': not one of the 50 families",
    ),
    "unknown scale": (run_flags("--scale", "huge"), "huge"),
    "scale name that climbs out of its folder": (
        run_flags("--scale", "../envs/sparse_point_robot"),
        "--scale '../envs/sparse_point_robot' is not a name",
    ),
    "env name that is a path": (
        run_flags("--env", "groups/ml1"),
        "--env 'groups/ml1' is not a name",
    ),
    "recipe name of a file in a column folder": (
        lambda w, c: (
            "run",
            ["--recipe", "envs/sparse_point_robot.gin", "--scale", "tiny", "--out", str(c / "run")],
            [c / "run"],
            [],
        ),
        "recipe file not found: envs/sparse_point_robot.gin",
    ),
    "unknown plugin module": (run_flags("--plugin", "no_such_plugin_module"), "no_such_plugin"),
    "plugin with a syntax error": (syntax_error_plugin, "broken_plugin.py"),
    # bindings that configure nothing the run builds (registry/usage.py)
    "binding of a part the recipe does not build": (
        binding("attention_blocks.width = 999"),
        "attention_blocks.width = 999 (--gin_param): this run builds no attention_blocks",
    ),
    "binding in a scope nothing is built in": (
        binding("nowhere/loop.steps = 3"),
        "loop is built only unscoped, never in scope 'nowhere'",
    ),
    "binding of an argument the framework passes": (
        binding("mlp_encoder.latent_dim = 3"),
        "the part that builds mlp_encoder passes latent_dim itself",
    ),
    "macro that nothing refers to": (binding("STEPS = 3"), "refers to %STEPS"),
    "setting of an analysis the run does not run": (
        binding("embedding_variance.draws = 5"),
        "embedding_variance is an analysis, run only when named in experiment.analyses",
    ),
    "recipe file binding a part it does not build": (
        own_recipes(
            {"bad.gin": "include '{row}'\nattention_blocks.tokenizer = @component_tokens\n"}
        ),
        "bad.gin line 2): this run builds no attention_blocks",
    ),
    "collection setting for a dataset that exists": (
        binding("behaviour_sac.env_steps = 50"),
        "env_steps is 60 there, 50 here",
    ),
    "may-go-unused line naming no configurable": (
        own_recipes({"bad.gin": "include '{row}'\n# may go unused: atention_blocks\n"}),
        "Did you mean: attention_blocks,",
    ),
    "macro that is not defined": (
        binding("focal.encoder_lr = %LR"),
        "refers to the macro %LR, which no recipe file or --gin_param defines",
    ),
    # recipe files that include others, import modules
    "recipe that includes itself": (
        own_recipes({"bad.gin": "include '{here}/bad.gin'\n"}),
        "include cycle: bad.gin -> bad.gin",
    ),
    "recipes that include each other": (
        own_recipes(
            {
                "bad.gin": "include 'other.gin'\n",
                "other.gin": "include '{row}'\ninclude 'bad.gin'\n",
            }
        ),
        "include cycle: bad.gin -> other.gin -> bad.gin",
    ),
    "unclosed bracket in an included recipe": (
        own_recipes(
            {
                "bad.gin": "include 'other.gin'\n",
                "other.gin": "include '{row}'\nbrac.hidden = (64,\n",
            }
        ),
        "other.gin line 2: the bracket '(' opened here is never closed",
    ),
    "syntax error in an included recipe": (
        own_recipes({"bad.gin": "include 'other.gin'\n", "other.gin": "loop.steps = = 3\n"}),
        "(included from",
    ),
    "included recipe missing": (
        own_recipes({"bad.gin": "include 'no_such_row.gin'\n"}),
        "includes 'no_such_row.gin', which is not a file in",
    ),
    "recipe that imports a module that fails": (
        own_recipes(
            {
                "bad.gin": "include '{row}'\nimport my_failing_module\n",
                "my_failing_module.py": "x = undefined_name\n",
            }
        ),
        "`import my_failing_module` fails while the module runs: NameError",
    ),
    "unknown component in an included recipe": (
        own_recipes(
            {
                "bad.gin": "include 'other.gin'\n",
                "other.gin": "include '{row}'\ncontext_encoder.transition = @mlp_encodr\n",
            }
        ),
        "other.gin. Did you mean: mlp_encoder",
    ),
    "recipe that imports a missing module": (
        own_recipes({"bad.gin": "include '{row}'\nimport no_such_module\n"}),
        "bad.gin line 2: `import no_such_module` fails",
    ),
    # parts that break their contract in ways the probes used to miss (tools/catalog.py --check)
    "encoder without trainable parameters": (
        checked_parts(encoder_text("bad_input_fixed", FIXED_FEATURES, "(context @ self.proj)")),
        "it has no trainable parameter",
    ),
    "run with an encoder without trainable parameters": (
        encoder_in_a_run(
            encoder_text("bad_input_fixed_run", FIXED_FEATURES, "(context @ self.proj)"),
            "bad_input_fixed_run",
        ),
        "it has no trainable parameter",
    ),
    "encoder that divides by a spread that can be zero": (
        checked_parts(encoder_text("bad_input_standardised", LINEAR, STANDARDISED)),
        "on a context whose rewards are all zero",
    ),
    "objective that divides by a norm that can be zero": (
        checked_parts(COSINE_OBJECTIVE),
        "on all-zero embeddings",
    ),
    "part with a required argument nothing passes": (
        checked_parts(encoder_text("bad_input_deep", LINEAR, "self.net(context)", ", depth: int")),
        "requires 'depth', which the framework does not pass",
    ),
    "part keeping a plain tensor": (
        checked_parts(
            encoder_text(
                "bad_input_plain",
                LINEAR + "\n        self.gain = torch.ones(latent_dim)",
                "self.net(context) * self.gain",
            )
        ),
        "gain: plain tensor attribute",
    ),
    "part with a lazy layer": (
        checked_parts(
            encoder_text(
                "bad_input_lazy",
                "super().__init__()\n        self.net = nn.LazyLinear(latent_dim)",
                "self.net(context)",
            )
        ),
        "came into being in the first forward",
    ),
    "part computing in float64": (
        checked_parts(
            encoder_text(
                "bad_input_float64",
                LINEAR
                + "\n        self.register_buffer('gain', torch.from_numpy(np.ones(latent_dim)))",
                "self.net(context) * self.gain",
            )
        ),
        "as float32, the dtype of its input",
    ),
    "part that does not call super().__init__()": (
        checked_parts(
            encoder_text(
                "bad_input_no_super",
                "self.net = nn.Linear(sum(sizes), latent_dim)",
                "self.net(context)",
            )
        ),
        "call super().__init__() first in __init__",
    ),
    # impossible sizes
    "batch larger than a task's data without replacement": (
        binding("sizes.context_replace = False", "sizes.context_batch = 100000"),
        "distinct transitions",
    ),
    "more distinct tasks than exist": (
        binding("sizes.meta_batch = 500", "focal.tasks_with_replacement = False"),
        "sizes.meta_batch = 500",
    ),
    "empty batch": (binding("sizes.rl_batch = 0"), "sizes.rl_batch = 0: expected int ≥ 1"),
    "negative steps": (binding("loop.steps = -5"), "loop.steps = -5"),
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
    "dataset of an unknown quality": (binding("task_data.quality = 'superb'"), "superb"),
    # datasets whose content breaks the schema, the manifest's word kept consistent
    "dataset array of another dtype": (
        spoiled_store(consistent_edit("obs", lambda x: x.astype(np.float64))),
        "quality 'mixed': obs: float64 [",
    ),
    "dataset flags other than 0 and 1": (
        spoiled_store(consistent_edit("terminated", flags_of_two)),
        "terminated: uint8 [",
    ),
    "dataset counts that disagree with the manifest": (
        spoiled_store(edited_quality(lambda q: q["per_task_counts"].__setitem__(0, 7))),
        "the manifest's per_task_counts say [7,",
    ),
    "dataset manifest without an array the schema needs": (
        spoiled_store(edited_quality(lambda q: q["files"].pop("reward"))),
        "the manifest lists no array for reward",
    ),
    "dataset actions outside the family's bounds": (
        spoiled_store(consistent_edit("action", lambda x: x * 3)),
        "expected within [-1, 1], the family's action bounds",
    ),
    "collection binding a part it does not build": (
        collect("--env", "sparse_point_robot", "--gin_param", "attention_blocks.heads = 2"),
        "attention_blocks.heads = 2 (--gin_param): this collection builds no attention_blocks",
    ),
    "analysis binding a part no analysis builds": (
        analyze(copied_run, "--analyses", "task_vectors", "--gin_param", "brac.hidden = (8, 8)"),
        "brac.hidden = (8, 8) (tools/analyze.py --gin_param): not one of the analyses run",
    ),
    "dataset episodes without their ends": (
        spoiled_store(consistent_edit("truncated", np.zeros_like)),
        "is longer than the horizon of 20 steps",
    ),
    "dataset tag with a path": (
        binding("task_data.tag = '../../escape'"),
        "dataset tag '../../escape' (--tag, or task_data.tag) must be a plain name",
    ),
    # output
    "output directory exists": (existing_out, "already exists"),
    "output not writable": (unwritable_out, "cannot create output directory"),
    "output name too long": (too_long_a_name("run"), "is 300 bytes, longer than the 255"),
    # seeds trained together
    "a seed given twice": (seeds_run("--seeds", "0,0"), "expected at least one seed, each once"),
    "--seed beside --seeds": (seeds_run("--seeds", "0-1", "--seed", "2"), "drop --seed"),
    "seeds of a part without a seed-batched form": (
        seeds_run("--seeds", "0-1", "--recipe", "batch_pearl.gin"),
        "cannot be trained with several seeds in one process",
    ),
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
    "resume of a corrupted checkpoint": (resume(garbage_checkpoint), "is damaged"),
    "resume after the recorded configuration was edited": (
        resume(edited_configuration),
        "different configuration",
    ),
    "resume of a run another process is training": (
        resume(held_run),
        "another process is training it",
    ),
    "resume of a run whose plugin file moved": (
        resume(moved_plugin_run),
        "say where it is now with --plugin NEW_PATH/my_plugin.py",
    ),
    "resume of a run.json with a seed of the wrong type": (
        resume(edited_record(seed="0")),
        "run.json has seed = '0': expected an integer seed in [0, 4294967295]",
    ),
    "resume of a run.json that is not text": (resume(binary_record), "is not a run record"),
    # sizes, rates and values (ranges declared in the constructors' annotations)
    "negative hidden width": (
        binding("brac.hidden = (-4, 16)"),
        "brac.hidden = (-4, 16): expected a tuple of int ≥ 1",
    ),
    "zero-width encoder layer": (
        binding("mlp_encoder.hidden = (0,)"),
        "mlp_encoder.hidden = (0,): expected a tuple of int ≥ 1",
    ),
    "infinite learning rate": (
        binding("focal.encoder_lr = 1e999"),
        "focal.encoder_lr = inf: expected a finite float > 0",
    ),
    "zero learning rate": (binding("brac.lr = 0.0"), "brac.lr = 0.0: expected a finite float > 0"),
    "dropout above one": (
        binding("attention_blocks.dropout = 1.5"),
        "attention_blocks.dropout = 1.5: expected a finite float in [0, 1]",
    ),
    "attention blocks with neither attention": (
        binding(
            "focal.encoder = @attention_blocks",
            "attention_blocks.self_attention = False",
            "attention_blocks.gate = None",
        ),
        "attention_blocks with self_attention = False and gate = None has no attention",
    ),
    "attention width not divisible by the heads": (
        binding(
            "focal.encoder = @attention_blocks",
            "attention_blocks.width = 30",
            "attention_blocks.heads = 4",
        ),
        "attention_blocks.width = 30 cannot be split among 4 heads",
    ),
    "parallel branches combined another way": (
        run_flags(
            *("--plugin", "components.first_edition"),  # the first edition's, opt-in
            *("--gin_param", "focal.encoder = @parallel_encoder"),
            *(
                "--gin_param",
                "parallel_encoder.branches = [@a/context_encoder, @b/context_encoder]",
            ),
            *("--gin_param", "parallel_encoder.combine = 'max'"),
        ),
        "parallel_encoder.combine must be 'sum' or 'mean', got 'max'",
    ),
    "discount above one": (binding("brac.discount = 1.2"), "brac.discount = 1.2"),
    "binding without a value": (binding("loop.steps ="), "write a Python literal"),
    "nan in a binding": (binding("focal.encoder_lr = nan"), "gin has no nan or inf"),
    "training that diverges before its first checkpoint": (
        run_flags(  # the objective's loss is NaN from step 2 on, on any CPU
            "--plugin",
            str(DIVERGING),
            "--gin_param",
            "focal.objective = @diverging_dml",
        ),
        "no checkpoint had been written",
    ),
    "task vectors that go NaN in a meta-test": (
        run_flags(*DIVERGING_ENCODER, "--gin_param", "diverging_mlp_encoder.after = 2"),
        "in the meta-test at step 2, the policy's actions are not finite",
    ),
    "an encoder whose output goes NaN after a checkpoint": (
        diverged_after_a_checkpoint,
        "first appeared in the output of encoder.transition (@diverging_mlp_encoder) at step 4",
    ),
    "missing recipes directory": (
        with_environment(run_flags(), FOCALPP_RECIPES="/nonexistent/recipes"),
        "FOCALPP_RECIPES",
    ),
    "plugin that takes a built-in name": (
        plugin_file(
            "from registry import register\n"
            "@register('objective', 'matrix_moco')\n"
            "class Mine:\n    pass\n"
        ),
        "is a built-in component (module 'components.objectives.matrix_moco')",
    ),
    "plugin that raises on import": (plugin_file("raise RuntimeError('boom')\n"), "boom"),
    "a setting that breaks a part's contract": (
        binding("brac.reward_scale = 1e38"),
        "@brac (built with this run's bindings: one of them may be the cause) breaks",
    ),
    "encoder of the other encoder contract": (
        binding("focal.encoder = @mlp_encoder"),
        "mlp_encoder is a registered transition_encoder, but this parameter takes a(n) "
        "context_encoder",
    ),
    "objective that returns a bare tensor": (
        objective_plugin("bare_objective", "return emb.query_mean.pow(2).mean()"),
        "return from forward(TaskEmbeddings) a dict of named terms",
    ),
    "objective without a loss_ term": (
        objective_plugin("lossless_objective", "return {'spread': emb.query_mean.pow(2).mean()}"),
        "at least one `loss_*` term",
    ),
    "seed beyond 32 bits": (
        run_flags("--seed", "4294967296"),
        "--seed 4294967296: expected an integer seed in [0, 4294967295]",
    ),
    "seed not a whole number": (
        run_flags("--seed", "1.5"),
        "argument --seed: '1.5' is not a whole number: expected an integer seed in [0, 4294967295]",
    ),
    "dataset seed out of range": (
        binding("task_data.seed = -1"),
        "task_data.seed (the dataset's seed) = -1: expected an integer seed in [0, 4294967295]",
    ),
    "device with a bad index": (
        run_flags("--device", "cuda:x"),
        "experiment.device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got 'cuda:x'",
    ),
    # checkpoints
    "resume of a checkpoint with one bit flipped": (
        spoiled_checkpoint(flip_a_checkpoint_bit),
        "is damaged: its content does not match the digest",
    ),
    "resume of a truncated checkpoint": (
        spoiled_checkpoint(lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])),
        "is damaged",
    ),
    "resume of a checkpoint that would run code": (
        spoiled_checkpoint(code_running_checkpoint),
        "does not load as tensors and plain data",
    ),
    "analysis of a run with a damaged checkpoint": (
        spoiled_checkpoint(flip_a_checkpoint_bit, tool="analyze"),
        "checkpoint.prev.pt",
    ),
    "resume after the dataset was rebuilt": (resume(rebuilt_dataset), "manifest digest"),
    # hand-edited manifests
    "manifest with a test task moved into training": (
        edited_manifest(move_a_test_task_to_train),
        "the task split",
    ),
    "manifest with another horizon": (
        edited_manifest(lambda m: m.update(horizon=30)),
        "horizon is 30 but sparse_point_robot has 20",
    ),
    "manifest with a goal moved": (edited_manifest(move_a_goal), "task 3 is"),
    "manifest with another goal radius": (
        edited_manifest(lambda m: m.update(goal_radius=-0.5)),
        "use goal radius -0.5",
    ),
    "manifest of another family": (
        edited_manifest(lambda m: m.update(family="point_robot_wind")),
        "family is 'point_robot_wind'",
    ),
    # analyses
    "analysis of a missing run": (analyze(None), "no such run directory"),
    "analysis of an unknown name": (
        analyze(copied_run, "--analyses", "embeding_variance"),
        "embeding_variance",
    ),
    "analysis of a run without a checkpoint": (
        analyze(lambda w, c: copied_run(w, c, drop=("checkpoint.pt", "checkpoint.prev.pt"))),
        "no checkpoint.pt",
    ),
    "analysis with an out-of-range setting": (
        analyze(
            copied_run,
            "--analyses",
            "embedding_variance",
            "--gin_param",
            "embedding_variance.draws = 1",
        ),
        "embedding_variance.draws = 1: expected int ≥ 2",
    ),
    "analysis with an empty list": (
        analyze(copied_run, "--analyses", ""),
        "--analyses '' names no analysis",
    ),
    "analysis of a run whose plugin file moved": (
        analyze(lambda w, c: moved_plugin_run(w, c, drop=()), "--analyses", "embedding_variance"),
        "say where it is now with --plugin NEW_PATH/my_plugin.py",
    ),
    "analysis of an unfinished run": (
        analyze(lambda w, c: copied_run(w, c, drop=("eval.json",))),
        "the run has not finished (it has no eval.json), so its checkpoint is not its final state",
    ),
    "analysis of a run another process holds": (
        analyze(lambda w, c: held_run(w, c, drop=()), "--analyses", "embedding_variance"),
        "cannot analyse",
    ),
    # dataset collection
    "collect: negative environment steps": (
        collect("--env", "sparse_point_robot", "--gin_param", "behaviour_sac.env_steps = -1"),
        "behaviour_sac.env_steps = -1: expected int ≥ 1",
    ),
    "collect: relabeled data for a family of another radius": (
        collect("--env", "sparse_point_robot", "--protocol", "relabeled"),
        "relabeled.goal_radius = -0.5, but SparsePointRobot scores with goal radius -0.2",
    ),
    "collect: store under a file": (
        store_under_a_file,
        "cannot create the dataset store",
    ),
    "collect: unknown protocol": (
        collect("--env", "sparse_point_robot", "--protocol", "nope"),
        "nope",
    ),
    "collect: unknown env": (collect("--env", "nowhere"), "nowhere"),
    "collect: more blocks than tasks": (
        collect("--env", "sparse_point_robot", "--gin_param", "behaviour_sac.blocks = 101"),
        "behaviour_sac.blocks = 101, but sparse_point_robot has 100 tasks: expected 1 ≤ blocks",
    ),
    "collect: no blocks": (
        collect("--env", "sparse_point_robot", "--gin_param", "behaviour_sac.blocks = 0"),
        "behaviour_sac.blocks = 0",
    ),
    "collect: a conditioned learner in more blocks than tasks": (
        collect(
            "--env",
            "sparse_cheetah_fwd_back",
            "--gin_param",
            "behaviour_sac.learner = 'conditioned'",
            "--gin_param",
            "behaviour_sac.blocks = 3",
        ),
        "behaviour_sac.blocks = 3, but sparse_cheetah_fwd_back has 2 tasks: expected 1 ≤ blocks",
    ),
    "collect: unknown numerics": (
        collect("--env", "sparse_point_robot", "--numerics", "exact"),
        "argument --numerics: invalid choice: 'exact'",
    ),
    "collect: build workers not a number": (
        lambda w, c: (
            "collect",
            ["--env", "sparse_point_robot", "--scale", "tiny", "--out", str(c / "store")],
            [c / "store"],
            [],
            {"FOCALPP_BUILD_WORKERS": "two"},
        ),
        "$FOCALPP_BUILD_WORKERS = 'two': expected a whole number ≥ 1",
    ),
    "collect: product threads not a whole number": (
        lambda w, c: (
            "collect",
            ["--env", "sparse_point_robot", "--scale", "tiny", "--out", str(c / "store")],
            [c / "store"],
            [],
            {"FOCALPP_PRODUCT_THREADS": "0"},
        ),
        "$FOCALPP_PRODUCT_THREADS = '0': expected a whole number ≥ 1",
    ),
    "collect: a negative product threshold": (
        lambda w, c: (
            "collect",
            ["--env", "sparse_cheetah_vel", "--scale", "tiny", "--out", str(c / "store")],
            [c / "store"],
            [],
            {"FOCALPP_PRODUCT_MIN_WORK": "-5"},
        ),
        "$FOCALPP_PRODUCT_MIN_WORK = '-5': expected a whole number ≥ 0",
    ),
    "collect: a published Meta-World split beyond the draw's 50 variations": (
        collect("--env", "ml1pub_push", "--gin_param", "ml1pub_push.test_variations = 45"),
        "40 train + 45 test variations = 85, but one ML1 draw has 50",
    ),
    "a score over more meta-tests than the run makes": (
        binding("loop.score_over = 5"),
        "loop.score_over = 5: this run makes 2 meta-tests",
    ),
    "collect: negative seed": (
        collect("--env", "sparse_point_robot", "--seed", "-1"),
        "--seed -1: expected an integer seed in [0, 4294967295]",
    ),
    "collect: seed beyond 64 bits": (
        collect("--env", "sparse_point_robot", "--seed", str(2**70)),
        f"--seed {2**70}: expected an integer seed",
    ),
    "collect: tag with a path": (
        collect("--env", "sparse_point_robot", "--tag", "../../escape"),
        "dataset tag '../../escape' (--tag, or task_data.tag) must be a plain name",
    ),
    "collect: a shard with a negative index": (
        collect("--env", "sparse_point_robot", "--shard", "-1/2"),
        "shard -1/2: expected 0 ≤ index < count and count ≥ 2",
    ),
    "collect: merge of fewer than two shards": (
        collect("--env", "sparse_point_robot", "--merge", "1"),
        "--merge 1: expected the number K ≥ 2 of shards",
    ),
    "collect: merge of a count in exponent form": (
        collect("--env", "sparse_point_robot", "--merge", "1e9"),
        "argument --merge: '1e9' is not a whole number: expected the number K ≥ 2 of shards",
    ),
    "collect: seed in hexadecimal": (
        collect("--env", "sparse_point_robot", "--seed", "0x10"),
        "argument --seed: '0x10' is not a whole number: expected an integer seed in [0,",
    ),
    "collect: store name too long": (
        too_long_a_name("collect"),
        "is 300 bytes, longer than the 255",
    ),
    # studies
    "study file missing": (
        lambda w, c: ("sweep", [str(c / "none.toml"), "--out", str(c / "s")], [c / "s"], []),
        "study file not found",
    ),
    "study not TOML": (study("name = = 'x'\n"), "not valid TOML"),
    "study with an unknown key": (study(GOOD_STUDY + "sedes = [1]\n"), "unknown key(s) sedes"),
    "study narrowed to a seed beyond a seed's range": (
        study(GOOD_STUDY, "--seeds", "99999999999"),
        "argument --seeds: --seeds 99999999999: expected an integer seed in [0, 4294967295]",
    ),
    "study retrying a dead run a million times": (
        study(GOOD_STUDY + "retries = 1000000\n"),
        "`retries` = 1000000: expected 0 to 100",
    ),
    "study given --retries beyond its range": (
        study(GOOD_STUDY, "--retries", "101"),
        "--retries 101: expected 0 to 100",
    ),
    "study given more workers than it could start": (
        study(GOOD_STUDY, "--workers", "100000"),
        "--workers 100000: expected 1 to 4,096",
    ),
    "study given workers in exponent form": (
        study(GOOD_STUDY, "--workers", "1e3"),
        "argument --workers: '1e3' is not a whole number: expected 1 to 4,096",
    ),
    "study given --retries in words": (
        study(GOOD_STUDY, "--retries", "two"),
        "argument --retries: 'two' is not a whole number: expected 0 to 100",
    ),
    "study with unknown numerics": (
        study(GOOD_STUDY + 'numerics = "exact"\n'),
        "`numerics` 'exact': expected 'portable' or 'free'",
    ),
    "study with threads per run under portable numerics": (
        study(GOOD_STUDY + "threads_per_run = 2\n"),
        "`threads_per_run` = 2 with portable numerics",
    ),
    "study with a wrong type": (
        study(GOOD_STUDY.replace("seeds = [0]", 'seeds = "0"')),
        "`seeds` must be a list",
    ),
    "study of an unknown env": (
        study(GOOD_STUDY.replace("sparse_point_robot", "nowhere")),
        "unknown --env 'nowhere': no ",
    ),
    "study of a misspelt Meta-World environment": (
        study(GOOD_STUDY.replace("sparse_point_robot", "ml1_hammerr")),
        "unknown --env 'ml1_hammerr': not one of the 50 families of the group 'ml1'",
    ),
    "study with an unknown analysis": (
        study(GOOD_STUDY + 'analyses = ["embeding_variance"]\n'),
        "embeding_variance",
    ),
    "algorithm requiring an argument nothing binds": (
        algorithm_needing_an_argument,
        "its constructor requires 'width', which the framework does not pass (it passes data, "
        "loop)",
    ),
    "study binding a part no run builds": (
        study_binding_nothing,
        "s1 (not started: focal-sparse_point_robot-s0 was refused for bad input (exit status "
        "2: error: 1 binding(s) configure nothing",
    ),
    "study on an unknown backend": (study(GOOD_STUDY, "--backend", "slurm"), "slurm"),
    "study directory of another study": (other_study, "other bindings"),
    "study directory of another study, holding runs": (other_study_with_runs, "other bindings"),
    "study directory of other numerics": (other_numerics, "other numerics (numerics: 'free')"),
    "study directory whose finished run was built otherwise": (
        study_folder_built_otherwise(_steps_7),
        STEPS_7,
    ),
    "study directory whose stopped run was built otherwise": (
        study_folder_built_otherwise(_steps_7, drop=("eval.json",)),
        STEPS_7,
    ),
    "study directory whose run recorded no effective bindings": (
        study_folder_built_otherwise(_no_bindings),
        "focal-sparse_point_robot-s0: its run.json records no effective bindings",
    ),
    "study directory whose run's record is not JSON": (
        study_folder_built_otherwise(lambda record: "{not json"),
        "cannot count as done",
    ),
    "study recording beside runs of MKL's products": (
        record_of_mkl_products,
        "whose matrix products were MKL's",
    ),
    "study with a seed beyond 32 bits": (
        study(GOOD_STUDY.replace("seeds = [0]", "seeds = [0, 4294967296]")),
        "`seeds` lists seed = 4294967296: expected an integer seed in [0, 4294967295]",
    ),
    "study recorded into another study's record": (
        study_into_a_record("", "paper_blocks/fwd_back_coupled"),
        "that folder is the record of studies/focalpp_blocks_fwd_back_coupled_10_seeds.toml",
    ),
    "study recorded beside the record it names": (
        study_into_a_record('record = "paper_blocks/fwd_back_coupled"\n', "paper_blocks/coupled"),
        "records into results/paper_blocks/fwd_back_coupled, not results/paper_blocks/coupled",
    ),
    "study directory that is a file": (
        into_a_file("sweep"),
        "is a file, not a directory",
    ),
    "study directory name too long": (
        too_long_a_name("sweep"),
        "is 300 bytes, longer than the 255",
    ),
    "study directory with a damaged study.json": (
        damaged_study_spec,
        "study.json is not valid JSON",
    ),
    # reports
    "report of a missing path": (
        lambda w, c: ("report", [str(c / "none")], [], []),
        "does not exist",
    ),
    "report of a run with a damaged eval.json": (
        report_of(lambda run: (run / "eval.json").write_text("{oops")),
        "eval.json is not valid JSON",
    ),
    "report of a run with an incomplete run.json": (
        report_of(lambda run: (run / "run.json").write_text('{"recipe": "focal.gin"}')),
        "lacks env, scale, seed, device",
    ),
    "report of a directory without runs": (
        lambda w, c: ("report", [str(c)], [], []),
        "no finished runs",
    ),
    "report of two copies of one run": (two_copies, "are both seed 0 of my_row"),
    "report of a run whose eval.json holds NaN": (
        report_of(edited_eval(test_return_mean=float("nan"))),
        "eval.json has test_return_mean = nan, expected a finite number",
    ),
    "report of a run whose analysis.json holds NaN": (
        report_of(
            lambda run: (run / "analysis.json").write_text(
                json.dumps({"embedding_variance": {"embedding_variance": float("nan")}})
            )
        ),
        "analysis.json has embedding_variance.embedding_variance = nan: expected a number",
    ),
    "report of a run whose eval.json holds a string": (
        report_of(edited_eval(test_return_std="wide")),
        "eval.json has test_return_std = 'wide', expected a finite number ≥ 0",
    ),
    "report of a run whose eval.json has a success rate above one": (
        report_of(edited_eval(success_rate=1.5)),
        "eval.json has success_rate = 1.5, expected a number in [0, 1]",
    ),
    "report of a run whose eval.json has a negative context": (
        report_of(edited_eval(context_sizes=[-1])),
        "eval.json has context_sizes = [-1], expected a list of integers ≥ 1",
    ),
    "report of a run whose eval.json has a field no meta-test writes": (
        report_of(edited_eval(test_return_median=3.0)),
        "eval.json has test_return_median, which is not a field of a meta-test",
    ),
    "report of a run whose eval.json has a task's return as a text": (
        report_of(edited_eval(per_task_return={"0": 1.0, "1": "high"})),
        "eval.json has per_task_return.1 = 'high', expected a finite number",
    ),
    "report of a run whose eval.json has a negative protocol spread": (
        report_of(edited_eval(test_contexts={"offline": {"mean": 1.0, "std": -2.0}})),
        "eval.json has test_contexts.offline.std = -2.0, expected a finite number ≥ 0",
    ),
    "report of a run whose log has a meta-test at a negative step": (
        report_to(edited_meta_test(step=-1000)),
        "has step = -1000, expected an integer ≥ 0",
    ),
    "records of a run whose log has a meta-test step as a text": (
        records_of(edited_meta_test(step="1000")),
        "has step = '1000', expected an integer ≥ 0",
    ),
    "records of an unfinished run": (
        records_of(lambda run: (run / "eval.json").unlink()),
        "the run has not finished (it has no eval.json)",
    ),
    "records of a run with a damaged eval.json": (
        records_of(lambda run: (run / "eval.json").write_text('{"test_return_mean": 1')),
        "eval.json is not valid JSON",
    ),
    "records of a run whose eval.json is a list": (
        records_of(lambda run: (run / "eval.json").write_text("[1, 2]")),
        "eval.json is not a run's record (expected a JSON object with 'test_return_mean')",
    ),
    "records of a run whose analysis.json is not text": (
        records_of(lambda run: (run / "analysis.json").write_bytes(b"\xff\xfe{")),
        "analysis.json is not valid JSON",
    ),
    "records of a run without metrics.jsonl": (
        records_of(lambda run: (run / "metrics.jsonl").unlink()),
        "metrics.jsonl (No such file or directory)",
    ),
    "report of a run with a damaged metrics.jsonl": (
        report_to(glued_metrics),
        "metrics.jsonl line 2 is not valid JSON",
    ),
    "report of a run without metrics.jsonl": (
        report_to(lambda run: (run / "metrics.jsonl").unlink()),
        "metrics.jsonl (No such file or directory)",
    ),
    "report into a file": (into_a_file("report"), "is a file, not a directory"),
    "report directory name too long": (
        too_long_a_name("report"),
        "is 300 bytes, longer than the 255",
    ),
    "report of a study with a damaged index.json": (
        damaged_index,
        "lists a run without its name, status and run_dir ({'name': 'focal-s0'})",
    ),
    "report of a record that lacks a column": (
        record_of(lambda rows: rows[0].pop("dataset")),
        "runs.jsonl line 1 lacks column(s) dataset",
    ),
    "report of a record that lists a run twice": (
        record_of(lambda rows: rows.append(rows[0])),
        "runs.jsonl line 2 lists run 'run' again (first at line 1)",
    ),
    "headline entry with no environment": (
        headline_file('benchmark = "Nothing"\nenvs = []\npaper = "record"\n'),
        "has envs = []: expected a list of at least one environment",
    ),
    "headline entry naming an environment twice": (
        headline_file('benchmark = "Twice"\nenvs = ["a", "a"]\npaper = "record"\n'),
        "lists an environment twice",
    ),
    "headline entry reading a record that is not there": (
        headline_file('benchmark = "Nowhere"\nenvs = ["a"]\npaper = "nowhere"\n'),
        "has paper = 'nowhere': expected a record, a folder under",
    ),
    "headline entry reading its own folder as a record": (
        headline_file('benchmark = "Here"\nenvs = ["a"]\npaper = "."\n'),
        "has paper = '.': expected a record, a folder under",
    ),
    "headline entry naming references for a form it does not read": (
        headline_file(
            'benchmark = "B"\nenvs = ["a"]\npaper = "record"\n'
            'references = {paper = "record", coupled = "record"}\n'
        ),
        "or a table naming one for each form whose record it names (paper)",
    ),
    "headline entry naming a record for a cell it calls empty": (
        headline_file('benchmark = "B"\nenvs = ["a"]\npaper = "record"\nempty = {paper = "x"}\n'),
        "both names a record for its paper cell and says why it is empty",
    ),
    "headline entry saying why a cell of no form is empty": (
        headline_file('benchmark = "B"\nenvs = ["a"]\npaper = "record"\nempty = {pape = "x"}\n'),
        "expected a table naming a form (paper, coupled) and, in words, why its cell is empty",
    ),
    "headline entry with a paper cell neither read nor explained": (
        headline_file('benchmark = "B"\nenvs = ["a"]\ncoupled = "record"\n'),
        "names no record for its paper cell and does not say why it is empty",
    ),
    "verdict reading of an unknown measure": (
        verdicts_file(READING + 'measure = "retrun"\nclaim = "above"\n'),
        "has measure 'retrun': expected one of return, return, last three",
    ),
    "verdict reading claiming neither side": (
        verdicts_file(READING + 'measure = "return"\nclaim = "better"\n'),
        "has claim 'better': expected above or below",
    ),
    "verdict reading without the row it compares": (
        verdicts_file('name = "r"\nrecord = "record"\nenvs = ["a"]\nmeasure = "return"\n'),
        "lacks against, claim, row",
    ),
    "verdict reading of a record that is not there": (
        verdicts_file(
            READING.replace('"record"', '"nowhere"') + 'measure = "return"\nclaim = "above"\n'
        ),
        "has record = 'nowhere': expected a folder under",
    ),
    "verdict reading empty without a reason": (
        verdicts_file('name = "r"\nempty = " "\n'),
        "has empty = ' ': expected why, in words",
    ),
    "verdict reading of a level that is not a number": (
        verdicts_file(LEVEL + 'level = "half"\nmeasure = "attention AUC"\nclaim = "above"\n'),
        "has level = 'half': expected a finite number",
    ),
    "verdict reading of an infinite level": (
        verdicts_file(LEVEL + 'level = inf\nmeasure = "attention AUC"\nclaim = "above"\n'),
        "has level = inf: expected a finite number",
    ),
    "verdict reading of a level and a row against": (
        verdicts_file(READING + 'level = 0.5\nmeasure = "attention AUC"\nclaim = "above"\n'),
        "has unknown keys against",
    ),
    "verdict reading marked refused in words": (
        verdicts_file(READING + 'measure = "return"\nclaim = "above"\nrefused = "yes"\n'),
        "has refused = 'yes': expected true",
    ),
    "verdict reading of property tests that are not there": (
        verdicts_file('name = "r"\ntests = "nowhere"\n'),
        "has tests = 'nowhere': expected a folder",
    ),
    "headline entry refusing a form it does not read": (
        headline_file('benchmark = "B"\nenvs = ["a"]\npaper = "record"\nrefused = ["coupled"]\n'),
        "has refused = ['coupled']: expected a list of the forms",
    ),
    "headline entry with a blank label": (
        headline_file('benchmark = "B"\nenvs = ["a"]\npaper = "record"\nlabel = " "\n'),
        "has label = ' ': expected the label of its paper's rows",
    ),
    "headline entry without a name": (
        headline_file('benchmark = ""\nenvs = ["a"]\npaper = "record"\n'),
        "has benchmark = '': expected its name",
    ),
    "report of a record whose seed is a text": (
        record_of(lambda rows: rows[0].update(seed="zero")),
        "runs.jsonl line 1 has seed = 'zero', expected an integer seed in [0, 4294967295]",
    ),
    "report of a record whose environment is a number": (
        record_of(lambda rows: rows[0].update(env=5)),
        "runs.jsonl line 1 has env = 5, expected a text",
    ),
    "report of a record whose run name is a list": (
        record_of(lambda rows: rows[0].update(run=["a"])),
        "runs.jsonl line 1 has run = ['a'], expected a text",
    ),
    "report of a record whose bindings are a text": (
        record_of(lambda rows: rows[0].update(bindings="loop.steps = 5")),
        "runs.jsonl line 1 has bindings = 'loop.steps = 5', expected a list of texts",
    ),
    "report of a record whose dataset is a number": (
        record_of(lambda rows: rows[0].update(dataset=3)),
        "runs.jsonl line 1 has dataset = 3, expected null or the dataset's object",
    ),
    "report of a record whose scale is missing its value": (
        record_of(lambda rows: rows[0].update(scale=None)),
        "runs.jsonl line 1 has scale = None, expected a text",
    ),
    "report of a record with unknown numerics": (
        record_of(lambda rows: rows[0].update(numerics={"mode": "exact"})),
        "runs.jsonl line 1 has numerics = {'mode': 'exact'}, expected an object whose mode",
    ),
    "report of a record whose line names another environment than its configuration binds": (
        record_of(lambda rows: rows[0].update(env="point_robot_wind")),
        "runs.jsonl: run 'run' has env = 'point_robot_wind', but its configuration",
    ),
    "report of a record whose run was trained with seeds that leave out its own": (
        record_of(lambda rows: rows[0].update(trained_with_seeds=[rows[0]["seed"] + 1])),
        "has trained_with_seeds = [1], expected distinct seeds, the run's own seed 0 among them",
    ),
    "report of a record with a non-finite score": (
        record_of(lambda rows: rows[0].update(final=float("nan"))),
        "runs.jsonl line 1 has final = nan, expected a finite number",
    ),
    "report of a record with a negative training time": (
        record_of(lambda rows: rows[0].update(train_seconds=-5.0)),
        "runs.jsonl line 1 has train_seconds = -5.0, expected a finite number ≥ 0",
    ),
    "report of a record that ran on no thread": (
        record_of(lambda rows: rows[0]["numerics"].update(torch_threads=0)),
        "runs.jsonl line 1 has numerics.torch_threads = 0, expected an integer ≥ 1",
    ),
    "report of a record with unknown vector math": (
        record_of(lambda rows: rows[0]["numerics"].update(vector_math="fast")),
        "runs.jsonl line 1 has numerics.vector_math = 'fast', expected 'portable' or 'mkl'",
    ),
    "report of a record with unknown matrix products": (
        record_of(lambda rows: rows[0]["numerics"].update(products="blis")),
        "runs.jsonl line 1 has numerics.products = 'blis', expected 'openblas' or 'mkl'",
    ),
    "report of a record whose meta-test has a success rate below zero": (
        record_of(lambda rows: rows[0].update(success_rate=-0.25), "meta_tests.jsonl"),
        "meta_tests.jsonl line 1 has success_rate = -0.25, expected a number in [0, 1]",
    ),
    "report of a record whose meta-test lacks its step": (
        record_of(lambda rows: rows[0].pop("step"), "meta_tests.jsonl"),
        "meta_tests.jsonl line 1 lacks step",
    ),
    "report of a record whose training logs do not match their digest": (
        record_with_a_changed_archive,
        "the archive was changed or damaged",
    ),
    "records of a folder without runs": (
        lambda w, c: ("records", [str(c), "--out", str(c / "record")], [c / "record"], []),
        "no finished runs (run.json + eval.json) under",
    ),
    "records that would list a run twice": (
        lambda w, c: (
            "records",
            [str(w.finished), str(w.finished), "--out", str(c / "record")],
            [c / "record"],
            [],
        ),
        "is already in the record",
    ),
    "report of a record whose runs.jsonl is nested too deeply": (
        record_file("runs.jsonl", NESTED.encode()),
        "runs.jsonl line 1 is not valid JSON (nested too deeply to read)",
    ),
    "report of a record whose line gives a key twice": (
        record_file(
            "runs.jsonl", lambda line: line.rstrip().removesuffix(b"}") + b', "seed": 3}\n'
        ),
        "runs.jsonl line 1 is not valid JSON (key 'seed' given twice)",
    ),
    "records of a run whose run.json is nested too deeply": (
        records_of(lambda run: (run / "run.json").write_text(NESTED)),
        "run.json is not a run record (nested too deeply to read)",
    ),
    "records of a run whose eval.json is nested too deeply": (
        records_of(lambda run: (run / "eval.json").write_text(NESTED)),
        "eval.json is not valid JSON (nested too deeply to read)",
    ),
    "report of a record whose logs digest is not text": (
        record_file("logs.sha256", b"\xff\xfe"),
        "the archive was changed or damaged",
    ),
    "records extending a record whose archive does not open": (
        record_whose_archive_does_not_open,
        "logs.tar.xz does not open as an archive",
    ),
    "report of a record whose row holds two configurations": (
        record_with_two_configurations_in_a_row,
        "hold 2 configurations (run: ",
    ),
    "report of a record whose row's runs built other parts": (
        record_whose_row_built_other_parts(known_digests=True),
        "built other parts (attention: none (run) v batch_gate (run-b))",
    ),
    "report of a record whose row, recorded without digests, built other parts": (
        record_whose_row_built_other_parts(known_digests=False),
        "built other parts (attention: none (run) v batch_gate (run-b))",
    ),
    "records of two runs of a row, one trained free": (
        two_runs_of_a_row_one_trained_free,
        "were built differently, in numerics: 'portable' (a); 'free' (b)",
    ),
    "records of two runs of a row, one naming other parts": (
        two_runs_of_a_row_one_naming_other_parts,
        "built other parts (agent: brac (a) v bcq (b)), where a row's runs build the same: a "
        "run's run.json was edited or damaged",
    ),
    "report of a record whose dataset digest is blank": (
        record_of(lambda rows: rows[0]["dataset"].update(content_sha256="")),
        "runs.jsonl line 1 has dataset = ",
    ),
    "report of a record whose dataset numerics are no mode": (
        record_of(lambda rows: rows[0]["dataset"].update(numerics="exact")),
        "its numerics (portable, free, unrecorded) or none",
    ),
    "records of a run whose run.json has a blank commit": (
        records_of(run_json_edited(commit="")),
        "run.json has commit = '', expected a hexadecimal digest or 'unknown': the run's run.json",
    ),
    "records of a run whose run.json has a number for its label": (
        records_of(run_json_edited(label=5)),
        "run.json has label = 5, expected a text (empty for none)",
    ),
    "records of a run whose run.json names a dataset of a blank digest": (
        records_of(run_json_edited(dataset={"manifest_sha256": ""})),
        "run.json has dataset = ",
    ),
    "records of a run whose run.json lost its configuration": (
        records_of(run_json_without("effective_bindings")),
        "effective_bindings are missing or do not hash to it",
    ),
    "records of a run whose run.json has numerics of no mode": (
        records_of(run_json_edited(numerics={"mode": "exact"})),
        "run.json has numerics = ",
    ),
    "headline file whose benchmark is not a table": (
        spec_file("--headline", b"benchmark = [5]\n"),
        "benchmark 1 is 5: expected a [[benchmark]] table",
    ),
    "headline file that is not UTF-8": (
        spec_file("--headline", b"\xff\xfe[[benchmark]]\n"),
        "not UTF-8 text",
    ),
    "headline file nested too deeply": (
        spec_file("--headline", b"x = " + b"[" * 100_000),
        "cannot read the headline file",
    ),
    "headline file with a table it does not read": (
        spec_file(
            "--headline",
            b'[[benchmark]]\nbenchmark = "B"\nenvs = ["a"]\npaper = "record"\n'
            b'[[benchmarks]]\nbenchmark = "C"\n',
        ),
        "has top-level keys benchmarks: expected [[benchmark]] tables only",
    ),
    "headline entry given twice under two names": (
        spec_file(
            "--headline",
            b'[[benchmark]]\nbenchmark = "B"\nenvs = ["a"]\npaper = "record"\n'
            b'[[benchmark]]\nbenchmark = "C"\nenvs = ["a"]\npaper = "record"\n',
        ),
        "benchmark 2 gives the same cells again (first at benchmark 1)",
    ),
    "headline entries of one name": (
        spec_file(
            "--headline",
            b'[[benchmark]]\nbenchmark = "B"\nenvs = ["a"]\npaper = "record"\n'
            b'[[benchmark]]\nbenchmark = "B "\nenvs = ["b"]\npaper = "record"\n',
        ),
        "benchmark 2 gives a name again (first at benchmark 1)",
    ),
    "verdicts file that is not UTF-8": (
        spec_file("--verdicts", b"\xff\xfe[[claim]]\n"),
        "cannot read the verdicts file",
    ),
    "verdict claim whose words are a number": (
        spec_file("--verdicts", b'[[claim]]\nclaim = 5\npaper = "1 v 0"\nreading = []\n'),
        "claim 1 has claim = 5: expected the paper's claim, in words",
    ),
    "verdict claims that are numbers": (
        spec_file("--verdicts", b"claim = [5]\n"),
        "claim 1 is 5: expected a [[claim]] table",
    ),
    "verdict reading that is not a table": (
        spec_file("--verdicts", b'[[claim]]\nclaim = "C"\npaper = "1 v 0"\nreading = [5]\n'),
        "reading 1 is 5: expected a [[claim.reading]] table",
    ),
    "verdict reading comparing a row with itself": (
        verdicts_file(
            READING.replace('against = "focal"', 'against = "focalpp"')
            + 'measure = "return"\nclaim = "above"\n'
        ),
        "compares row 'focalpp' with itself",
    ),
    "verdict reading with a blank name": (
        verdicts_file(READING.replace('name = "r"', 'name = ""') + 'measure = "return"\n'),
        "has name = '': expected the reading's name, in words",
    ),
    "verdict readings of one comparison under two names": (
        verdicts_file(
            READING
            + 'measure = "return"\nclaim = "above"\n[[claim.reading]]\n'
            + READING.replace('name = "r"', 'name = "s"')
            + 'measure = "return"\nclaim = "above"\n'
        ),
        "reading 2 gives a reading again (first at reading 1)",
    ),
    "verdict claim given twice": (
        spec_file(
            "--verdicts",
            b'[[claim]]\nclaim = "C"\npaper = "1 v 0"\n[[claim.reading]]\nname = "r"\n'
            b'empty = "not run"\n'
            b'[[claim]]\nclaim = "C"\npaper = "1 v 0"\n[[claim.reading]]\nname = "r"\n'
            b'empty = "not run"\n',
        ),
        "claim 2 gives a claim again (first at claim 1)",
    ),
    "records into an empty --out": (
        in_an_empty_folder("records", "{finished}", "--out", ""),
        "argument --out: '' is not a path",
    ),
    "report into an empty --out": (
        in_an_empty_folder("report", "{finished}", "--out", ""),
        "argument --out: '' is not a path",
    ),
    "sweep into an empty --out": (
        in_an_empty_folder("sweep", "{case}/study.toml", "--out", "", "--dry-run"),
        "argument --out: '' is not a path",
    ),
    "run with a range of seeds without its end": (
        run_flags("--seeds", "5-"),
        "'5-': expected seeds as a range and/or a list",
    ),
    "sweep with a range of seeds without its end": (
        study(GOOD_STUDY, "--seeds", "0-", "--dry-run"),
        "'0-': expected seeds as a range and/or a list",
    ),
    "collect of an empty shard": (
        lambda w, c: (
            "collect",
            [
                "--env",
                "sparse_point_robot",
                "--scale",
                "tiny",
                "--shard",
                "",
                "--merge",
                "2",
                "--out",
                str(c / "store"),
            ],
            [c / "store"],
            [],
        ),
        "give one of them",
    ),
    "collect of an empty shard alone": (
        lambda w, c: (
            "collect",
            [
                "--env",
                "sparse_point_robot",
                "--scale",
                "tiny",
                "--shard",
                "",
                "--out",
                str(c / "store"),
            ],
            [c / "store"],
            [],
        ),
        "--shard '': expected I/K, e.g. 0/4",
    ),
    "study listing an analysis twice": (
        study(GOOD_STUDY + 'analyses = ["embedding_variance", "embedding_variance"]\n'),
        "`analyses` lists an entry twice",
    ),
    "report with too many bootstrap replications": (
        lambda w, c: ("report", [str(w.finished), "--reps", "10000000"], [], []),
        "--reps 10000000: expected 100 to 1,000,000",
    ),
    "report with replications in thousands": (
        lambda w, c: ("report", [str(w.finished), "--reps", "1k"], [], []),
        "argument --reps: '1k' is not a whole number: expected 100 to 1,000,000",
    ),
}


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA GPU")
def test_cuda_without_a_gpu(world, tmp_path):
    out = tmp_path / "run"
    r = cli("run", *run_args(world, out, "--device", "cuda"))
    assert r.returncode == 2 and "sees no CUDA GPU" in r.stderr and not out.exists()


@dataclass
class Outcome:
    tool: str
    result: subprocess.CompletedProcess
    directory: Path
    absent: list[Path]
    unchanged: dict[Path, object]  # path -> its snapshot before the command


def attempt(case: str, world: World, directory: Path) -> Outcome:
    prepare, _ = CASES[case]
    tool, args, absent, unchanged, *extra = prepare(world, directory)
    env, cwd = (*extra, None, None)[:2]  # start-up variables, a working directory
    before = {p: state(p) for p in unchanged}
    result = cli(tool, *args, env=env or None, cwd=cwd)
    return Outcome(tool, result, directory, absent, before)


def state(path: Path):
    return snapshot(path) if path.is_dir() else path.read_bytes()


@pytest.fixture(scope="module")
def outcomes(world, tmp_path_factory) -> Callable[[str], Outcome]:
    """A case's outcome, each case through the tool's main(argv) in this process (a case that
    sets a start-up environment variable gets a process of its own). Cases run where their
    test runs: a test worker attempts only its own share of the catalogue."""
    done: dict[str, Outcome] = {}

    def outcome(case: str) -> Outcome:
        if case not in done:
            directory = tmp_path_factory.mktemp(re.sub(r"\W+", "-", case)[:40])
            done[case] = attempt(case, world, directory)
        return done[case]

    return outcome


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input(case, outcomes):
    outcome, message = outcomes(case), CASES[case][1]
    r = outcome.result
    assert r.returncode == 2, f"{case}: exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    assert message in r.stderr, f"{case}: {message!r} not in:\n{r.stderr}"
    assert "Traceback" not in r.stderr
    for path in outcome.absent:
        assert not path.exists(), f"{case}: {path} was left behind"
    for path, before in outcome.unchanged.items():
        assert state(path) == before, f"{case}: {path} changed"
    leftovers = [p for p in outcome.directory.rglob(".*") if p.name.endswith((".tmp", ".partial"))]
    assert leftovers == [], leftovers


def test_catalogue_is_large_and_reaches_every_tool(world, tmp_path):
    assert len(CASES) >= 120
    tools = set()
    for i, (prepare, _) in enumerate(CASES.values()):  # the tool each case drives, not run
        directory = tmp_path / str(i)
        directory.mkdir()
        tools.add(prepare(world, directory)[0])
    assert tools == {"run", "collect", "sweep", "analyze", "report", "records", "catalog"}


def test_docs_list_every_case():
    listed = (Path(__file__).resolve().parents[1] / "docs" / "ERRORS.md").read_text()
    assert [case for case in CASES if f"| {case} |" not in listed] == []

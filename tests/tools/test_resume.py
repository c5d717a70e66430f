"""Exact resume: a run killed (SIGKILL) or stopped (Ctrl-C) mid-way and continued with
`tools/run.py --resume` ends with the same metrics as a run that was never interrupted.

Real subprocesses throughout, one thread each (thread count changes float sums). What is not
bitwise: `train_seconds` and `meta_test_seconds` in eval.json (wall times) and TensorBoard's
event files.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from components.outputs.checkpoint import (
    CHECKPOINT,
    load_checkpoint,
    remove_stale_temporaries,
)
from tests.conftest import ROOT, cli, logged_steps

ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
STEPS = 150


def flags(data_root: Path) -> list[str]:
    bindings = (
        f"task_data.root = '{data_root}'",
        f"loop.steps = {STEPS}",
        "loop.eval_every = 50",
        "loop.log_every = 10",
        "loop.checkpoint_every = 25",
    )
    return [
        "--recipe",
        "focalpp.gin",
        "--env",
        "sparse_point_robot",
        "--scale",
        "tiny",
        *(arg for b in bindings for arg in ("--gin_param", b)),
    ]


def start_run(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(ROOT / "tools" / "run.py"), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "250", **ONE_THREAD},
        cwd=ROOT,
    )


def wait_for_step(run_dir: Path, step: int, proc: subprocess.Popen) -> None:
    """Block until the run has logged `step` (it is then past a checkpoint)."""
    while True:  # until the step is logged or the process ends (no clock: load varies)
        assert proc.poll() is None, proc.communicate()
        if any(logged >= step for logged in logged_steps(run_dir)):
            return
        time.sleep(0.02)


def final(run_dir: Path) -> tuple[str, dict]:
    record = json.loads((run_dir / "eval.json").read_text())
    record.pop("train_seconds")
    record.pop("meta_test_seconds")
    return (run_dir / "metrics.jsonl").read_text(), record


@pytest.fixture(scope="module")
def uninterrupted(tiny_data, tmp_path_factory) -> tuple[str, dict]:
    out = tmp_path_factory.mktemp("resume") / "uninterrupted"
    r = cli("run", *flags(tiny_data), "--out", str(out), env=ONE_THREAD)
    assert r.returncode == 0, r.stderr
    return final(out)


def test_sigkill_then_resume_matches_uninterrupted_run(uninterrupted, tiny_data, tmp_path):
    out = tmp_path / "killed"
    proc = start_run([*flags(tiny_data), "--out", str(out)])
    wait_for_step(out, 65, proc)
    proc.kill()  # SIGKILL: no handler runs, nothing is flushed
    proc.wait()
    checkpoint_step = load_checkpoint(out)["step"]
    assert 50 <= checkpoint_step < STEPS
    r = cli("run", "--resume", str(out), env=ONE_THREAD)
    assert r.returncode == 0, r.stderr
    assert f"resuming at step {checkpoint_step} of {STEPS}" in r.stdout
    assert final(out) == uninterrupted


def test_damaged_checkpoint_is_refused_and_the_previous_one_resumes_exactly(
    uninterrupted, tiny_data, tmp_path
):
    """A bit flipped in checkpoint.pt: refused as damaged; doing what the message says (move
    checkpoint.prev.pt over it, resume) ends exactly as the uninterrupted run."""
    out = tmp_path / "damaged"
    proc = start_run([*flags(tiny_data), "--out", str(out)])
    wait_for_step(out, 65, proc)
    proc.kill()
    proc.wait()
    path = out / CHECKPOINT
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    r = cli("run", "--resume", str(out), env=ONE_THREAD)
    assert r.returncode == 2 and "is damaged" in r.stderr, r.stderr
    move = re.search(r"`mv (\S+) (\S+)`", r.stderr.replace("\n", ""))
    assert move is not None, r.stderr
    os.replace(move.group(1), move.group(2))
    r = cli("run", "--resume", str(out), env=ONE_THREAD)
    assert r.returncode == 0, r.stderr
    assert final(out) == uninterrupted


def test_ctrl_c_checkpoints_exits_cleanly_and_resumes_exactly(uninterrupted, tiny_data, tmp_path):
    out = tmp_path / "interrupted"
    proc = start_run([*flags(tiny_data), "--out", str(out)])
    wait_for_step(out, 55, proc)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate()
    assert proc.returncode == 130
    assert "SIGINT at step" in stderr and f"--resume {out}" in stderr
    assert "Traceback" not in stderr
    stopped_at = load_checkpoint(out)["step"]
    assert 55 <= stopped_at < STEPS
    r = cli("run", "--resume", str(out), env=ONE_THREAD)
    assert r.returncode == 0, r.stderr
    assert final(out) == uninterrupted
    again = cli("run", "--resume", str(out))  # finished: reported, left alone
    assert again.returncode == 0 and "has finished; nothing to resume" in again.stdout
    assert final(out) == uninterrupted


WRITER = """
import sys, torch
sys.path.insert(0, {root!r})
from components.outputs.checkpoint import save_checkpoint
save_checkpoint({{"step": 2, "big": torch.zeros(200_000_000)}}, {root_dir!r})
"""


def test_checkpoint_write_killed_half_way_keeps_the_previous_one(tmp_path):
    from components.outputs.checkpoint import save_checkpoint

    save_checkpoint({"step": 1, "weights": torch.arange(3.0)}, tmp_path)
    script = WRITER.format(root=str(ROOT), root_dir=str(tmp_path))
    writer = subprocess.Popen([sys.executable, "-c", script])
    while not any(p.stat().st_size > 1_000_000 for p in tmp_path.glob(".*.tmp")):
        assert writer.poll() is None, "writer ended early"
        time.sleep(0.01)
    writer.kill()
    writer.wait()
    assert list(tmp_path.glob(".*.tmp")), "the killed write left its temporary file"
    state = load_checkpoint(tmp_path)
    assert state["step"] == 1 and torch.equal(state["weights"], torch.arange(3.0))
    assert remove_stale_temporaries(tmp_path) and not list(tmp_path.glob(".*.tmp"))


LAB_OBJECTIVE = """from components.objectives.dml import FocalDML
from registry import register


@register("objective", "lab_moved_dml")
class LabDML(FocalDML):
    pass
"""


def tiny_run(data_root: Path, out: Path, *extra: str) -> Path:
    """A finished tiny run, stopped as if killed after its last checkpoint (no eval.json)."""
    r = cli(
        "run",
        *("--recipe", "focal.gin", "--env", "sparse_point_robot", "--scale", "tiny"),
        *("--gin_param", f"task_data.root = '{data_root}'", *extra, "--out", str(out)),
    )
    assert r.returncode == 0, r.stderr
    (out / "eval.json").unlink()
    return out


def test_a_moved_plugin_file_is_found_where_the_user_says(tiny_data, tmp_path):
    """Made with `--plugin FILE` whose component the run uses; the file moves; the run resumes
    and is analysed with `--plugin NEW_PATH` (real processes: a plugin registers its names once
    per process)."""
    plugin = tmp_path / "lab" / "lab_moved.py"
    plugin.parent.mkdir()
    plugin.write_text(LAB_OBJECTIVE)
    objective = ("--plugin", str(plugin), "--gin_param", "focal.objective = @lab_moved_dml")
    run_dir = tiny_run(tiny_data, tmp_path / "run", *objective)
    moved = plugin.rename(tmp_path / plugin.name)
    r = cli("run", "--resume", str(run_dir))
    assert r.returncode == 2 and "--plugin NEW_PATH/lab_moved.py" in r.stderr, r.stderr
    r = cli("run", "--resume", str(run_dir), "--plugin", str(moved), process=True)
    assert r.returncode == 0, r.stderr
    assert (run_dir / "eval.json").is_file()
    r = cli("analyze", str(run_dir), "--analyses", "embedding_variance", "--plugin", str(moved),
            process=True)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "embedding_variance" in json.loads((run_dir / "analysis.json").read_text())


def test_a_metrics_log_cut_mid_line_resumes_to_valid_json_lines(tiny_data, tmp_path):
    """The log lost the end of its last record (a crash before it reached the disk): the
    resume drops the cut line instead of writing on after it, and the report reads it."""
    run_dir = tiny_run(tiny_data, tmp_path / "run")
    log = run_dir / "metrics.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[:-2]) + lines[-2][:30])  # the last record the checkpoint saw
    r = cli("run", "--resume", str(run_dir))
    assert r.returncode == 0, r.stderr
    assert "was cut mid-line" in r.stderr
    records = [json.loads(line) for line in log.read_text().splitlines()]  # all whole
    assert [r["step"] for r in records] == [json.loads(line)["step"] for line in lines[:-2]] + [
        json.loads(lines[-1])["step"]
    ]
    r = cli("report", str(run_dir), "--out", str(tmp_path / "report"))
    assert r.returncode == 0, r.stderr


def test_a_run_resumes_on_the_same_data_built_on_another_machine(tmp_path):
    """The run's store is gone (another machine): the resume builds the dataset again into a
    new store, where the manifest names the new build (another digest) but the content is the
    same, so the resume goes on (other data are refused: tests/test_bad_inputs.py)."""
    recipe = ("--recipe", "focal.gin", "--env", "sparse_point_robot", "--scale", "tiny")
    run_dir = tmp_path / "run"
    r = cli("run", *recipe, "--out", str(run_dir), env={"FOCALPP_DATA": str(tmp_path / "a")})
    assert r.returncode == 0, r.stderr
    (run_dir / "eval.json").unlink()
    recorded = json.loads((run_dir / "run.json").read_text())["dataset"]
    r = cli("run", "--resume", str(run_dir), env={"FOCALPP_DATA": str(tmp_path / "b")})
    assert r.returncode == 0, r.stderr
    assert (run_dir / "eval.json").is_file()
    rebuilt = tmp_path / "b" / "sparse_point_robot" / "checkpoints-s0-tiny" / "manifest.json"
    assert hashlib.sha256(rebuilt.read_bytes()).hexdigest() != recorded["manifest_sha256"]
    assert json.loads((run_dir / "run.json").read_text())["dataset"] == recorded


def test_a_portable_run_resumed_from_a_free_shell_takes_its_numerics_again(
    uninterrupted, tiny_data, tmp_path
):
    """Started with --numerics portable, killed, then `tools/run.py --resume` from a shell
    with none of the pinned settings (and two threads): the tool reads the run's numerics from
    run.json, pins them before torch loads, and ends where the uninterrupted run ended; asking
    for other numerics is refused."""
    from components import numerics

    out = tmp_path / "killed"
    proc = start_run([*flags(tiny_data), "--numerics", "portable", "--out", str(out)])
    wait_for_step(out, 65, proc)
    proc.kill()
    proc.wait()
    free = {**numerics.child_env(numerics.FREE), "OMP_NUM_THREADS": "2", "COLUMNS": "250"}
    tool = [sys.executable, str(ROOT / "tools" / "run.py")]
    other = subprocess.run(
        [*tool, "--resume", str(out), "--numerics", "free"],
        capture_output=True, text=True, env=free, cwd=ROOT,
    )  # fmt: skip
    assert other.returncode == 2 and "trained with portable numerics" in other.stderr
    done = subprocess.run(
        [*tool, "--resume", str(out)], capture_output=True, text=True, env=free, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    assert json.loads((out / "run.json").read_text())["numerics"]["mode"] == "portable"
    assert final(out) == uninterrupted  # the suite's own runs are portable too


def test_a_recipe_edited_then_deleted_after_the_run_changes_nothing_rebuilt(
    uninterrupted, tiny_data, tmp_path
):
    """run.json keeps the configuration the run was composed from: a resume after the recipe
    file was edited ends where the uninterrupted run ended, and an analysis after it was
    deleted measures the run as trained (the same as before the deletion)."""
    recipe = tmp_path / "mine.gin"
    recipe.write_text("include 'focalpp.gin'\n")
    args = flags(tiny_data)
    args[args.index("focalpp.gin")] = str(recipe)
    out = tmp_path / "killed"
    proc = start_run([*args, "--out", str(out)])
    wait_for_step(out, 65, proc)
    proc.kill()
    proc.wait()
    recipe.write_text("include 'focalpp.gin'\nattention_blocks.dropout = 0.5\n")  # edited
    r = cli("run", "--resume", str(out), env=ONE_THREAD)
    assert r.returncode == 0, r.stderr
    assert final(out) == uninterrupted
    measured = cli("analyze", str(out), "--analyses", "embedding_variance")
    assert measured.returncode == 0, measured.stderr
    before = json.loads((out / "analysis.json").read_text())["embedding_variance"]
    recipe.unlink()
    (out / "analysis.json").unlink()
    again = cli("analyze", str(out), "--analyses", "embedding_variance")
    assert again.returncode == 0, again.stderr
    assert json.loads((out / "analysis.json").read_text())["embedding_variance"] == before


def test_the_library_resume_continues_a_killed_run_exactly(uninterrupted, tiny_data, tmp_path):
    """`from components.experiment import resume` does what `tools/run.py --resume` does: a
    SIGKILLed run goes on to the uninterrupted run's metrics, bit for bit; then it is finished,
    and `load` gives its trained algorithm."""
    from components.experiment import load, resume

    out = tmp_path / "killed"
    proc = start_run([*flags(tiny_data), "--out", str(out)])
    wait_for_step(out, 65, proc)
    proc.kill()
    proc.wait()
    finished = resume(out)
    assert finished is not None and finished.run_dirs == (out,)
    assert final(out) == uninterrupted
    assert resume(out) is None  # nothing left to train
    trained = load(out)
    assert hasattr(trained, "train_step")

"""A run whose writes the machine starts refusing mid-run — a disk that fills, a run folder
replaced by a file — ends with one line naming the path and the cause and exit status 2; its
last good checkpoint is whole, and `--resume` once the fault is cleared ends exactly as the run
never stopped. Single runs and K seeds trained together alike.

Real subprocesses, one thread each. A disk that fills is a file-size limit (RLIMIT_FSIZE, with
SIGXFSZ ignored: the write fails with EFBIG as it would with ENOSPC), set between the size of a
checkpoint and that of the metrics log the run grows, so the log's write fails after some
checkpoints were written."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from components.outputs.checkpoint import CHECKPOINT, load_checkpoint
from tests.conftest import ROOT, cli
from tests.tools.test_resume import ONE_THREAD, wait_for_step

STEPS = 400
TOOL = ROOT / "tools" / "run.py"


def flags(data_root: Path, *more: str) -> list[str]:
    bindings = (
        f"task_data.root = '{data_root}'",
        f"loop.steps = {STEPS}",
        "loop.eval_every = 100",
        "loop.log_every = 1",  # the log grows past a checkpoint's size within the run
        "loop.checkpoint_every = 25",
        "loop.precision = 'fp32'",
    )
    return [
        *("--recipe", "focal.gin", "--env", "sparse_point_robot", "--scale", "tiny"),
        *(arg for b in bindings for arg in ("--gin_param", b)),
        *more,
    ]


def final(run_dir: Path) -> tuple[str, dict]:
    record = json.loads((run_dir / "eval.json").read_text())
    record.pop("train_seconds")
    record.pop("meta_test_seconds")
    return (run_dir / "metrics.jsonl").read_text(), record


def run_dirs(out: Path, seeds: bool) -> list[Path]:
    if not seeds:
        return [out]
    return [out / f"focal-sparse_point_robot-s{s}" for s in (0, 1)]


@pytest.fixture(scope="module", params=[False, True], ids=["single", "two_seeds"])
def uninterrupted(request, tiny_data, tmp_path_factory):
    seeds = request.param
    out = tmp_path_factory.mktemp("whole") / "run"
    more = ("--seeds", "0-1") if seeds else ()
    r = cli("run", *flags(tiny_data, *more), "--out", str(out), env=ONE_THREAD)
    assert r.returncode == 0, r.stderr
    dirs = run_dirs(out, seeds)
    return seeds, more, [final(d) for d in dirs], dirs


def limited(limit: int):
    def start() -> None:  # in the child, before it runs Python
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return start


def test_a_disk_that_fills_mid_run_ends_named_and_resumes_exactly(
    uninterrupted, tiny_data, tmp_path
):
    seeds, more, expected, whole = uninterrupted
    checkpoint = max((d / CHECKPOINT).stat().st_size for d in whole)
    log = min((d / "metrics.jsonl").stat().st_size for d in whole)
    assert log > 1.3 * checkpoint, "the log must outgrow a checkpoint for this test to mean it"
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, str(TOOL), *flags(tiny_data, *more), "--out", str(out)],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "250", **ONE_THREAD},
        cwd=ROOT,
        preexec_fn=limited((checkpoint + log) // 2),
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "cannot write" in done.stderr and "File too large (EFBIG)" in done.stderr
    assert "metrics.jsonl" in done.stderr
    dirs = run_dirs(out, seeds)
    for d in dirs:
        assert 25 <= load_checkpoint(d)["step"] < STEPS  # the last good one, whole
    r = cli("run", "--resume", *map(str, dirs), env=ONE_THREAD)
    assert r.returncode == 0, r.stderr
    assert [final(d) for d in dirs] == expected


def test_a_run_folder_replaced_by_a_file_mid_run_ends_named_and_resumes_exactly(
    uninterrupted, tiny_data, tmp_path
):
    seeds, more, expected, _ = uninterrupted
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, str(TOOL), *flags(tiny_data, *more), "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "250", **ONE_THREAD},
        cwd=ROOT,
    )  # fmt: skip
    dirs = run_dirs(out, seeds)
    wait_for_step(dirs[-1], 60, proc)
    moved = tmp_path / "moved"
    dirs[-1].rename(moved)
    dirs[-1].write_text("a file where the run's folder was")
    _, stderr = proc.communicate()
    assert proc.returncode == 2, stderr
    assert "Traceback" not in stderr
    assert f"cannot write {dirs[-1]}" in stderr
    dirs[-1].unlink()
    moved.rename(dirs[-1])
    for d in dirs:
        assert 50 <= load_checkpoint(d)["step"] < STEPS
    r = cli("run", "--resume", *map(str, dirs), env=ONE_THREAD)
    assert r.returncode == 0, r.stderr
    assert [final(d) for d in dirs] == expected


def test_nothing_is_left_half_written(uninterrupted, tmp_path):
    """No temporary file stays behind in a finished run's folder (atomic writes)."""
    *_, dirs = uninterrupted
    for d in dirs:
        assert not [p.name for p in d.iterdir() if p.name.endswith(".tmp")]

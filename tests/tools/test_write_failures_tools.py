"""Every tool that writes (reports, records, dataset builds, sweeps) treats a failed write as a
run does: one line naming the path and the cause, exit status 2, and nothing half-written —
what the target held before is byte for byte intact, and no temporary file stays beside it.

A disk that fills is a file-size limit on a real subprocess (RLIMIT_FSIZE, SIGXFSZ ignored, as
tests/tools/test_write_failures.py does for runs); a folder replaced by a file is a file where
the tool's output folder should be."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, cli
from tests.tools.test_resume import ONE_THREAD
from tests.tools.test_write_failures import limited

RECORD = ROOT / "results" / "paper_blocks" / "failing_seeds"  # a small committed record


def limited_tool(tool: str, *args: str, limit: int) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "tools" / f"{tool}.py"), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "250", **ONE_THREAD},
        cwd=ROOT,
        preexec_fn=limited(limit),
    )  # fmt: skip


def contents(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (hidden ones too) by its relative path."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


def refused(done: subprocess.CompletedProcess, *named: str) -> None:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "cannot write" in done.stderr, done.stderr
    for text in named:
        assert text in done.stderr, done.stderr


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory, tiny_data) -> Path:
    """One finished tiny run, trained by a one-run study."""
    study = tmp_path_factory.mktemp("study") / "one.toml"
    study.write_text(
        'name = "one"\nrecipes = ["focal.gin"]\nenvs = ["sparse_point_robot"]\nseeds = [0]\n'
        f'scale = "tiny"\nbindings = ["task_data.root = \'{tiny_data}\'"]\n'
    )
    out = study.parent / "sweep"
    r = cli("sweep", str(study), "--out", str(out), "--workers", "1", env=ONE_THREAD)
    assert r.returncode == 0, r.stderr
    return out / "runs" / "focal-sparse_point_robot-s0"


def test_a_report_that_cannot_be_written_replaces_nothing(tmp_path):
    out = tmp_path / "report"
    out.mkdir()
    (out / "report.md").write_text("an older report\n")
    before = contents(out)
    done = limited_tool("report", str(RECORD), "--out", str(out), limit=8 * 1024)
    refused(done, str(out), "File too large (EFBIG)", f"Nothing in {out} was replaced")
    assert contents(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]  # no stage left beside it


def test_a_record_that_cannot_be_written_keeps_every_file_it_held(finished_run, tmp_path):
    record = tmp_path / "record"
    shutil.copytree(RECORD, record, ignore=shutil.ignore_patterns("report"))
    before = contents(record)
    limit = max(p.stat().st_size for p in record.glob("*.jsonl")) + 1  # the runs grow past it
    done = limited_tool("records", str(finished_run), "--out", str(record), limit=limit)
    refused(done, str(record / "runs.jsonl"), "was written; what was there before is intact")
    assert contents(record) == before
    r = cli("records", str(finished_run), "--out", str(record))  # room again: it lands whole
    assert r.returncode == 0, r.stderr
    assert (
        sum(1 for _ in (record / "runs.jsonl").open()) == len(before["runs.jsonl"].splitlines()) + 1
    )


def test_a_record_folder_replaced_by_a_file_is_named(finished_run, tmp_path):
    blocked = tmp_path / "a file"
    blocked.write_text("in the way")
    r = cli("records", str(finished_run), "--out", str(blocked / "record"))
    assert r.returncode == 2, r.stderr
    assert f"cannot create record folder {blocked / 'record'}" in r.stderr
    assert blocked.read_text() == "in the way"


def test_a_dataset_build_that_cannot_be_written_leaves_no_part_behind(tmp_path):
    store = tmp_path / "data"
    done = limited_tool(
        "collect", "--env", "sparse_point_robot", "--scale", "tiny", "--out", str(store),
        limit=16 * 1024,
    )  # fmt: skip
    refused(done, str(store / "sparse_point_robot"), "No part of the dataset was left behind")
    assert not [p for p in store.rglob("*") if p.is_file()], "a half-built dataset stayed"


def test_a_sweep_whose_record_cannot_be_written_names_it_and_keeps_its_runs(finished_run, tmp_path):
    blocked = tmp_path / "a file"
    blocked.write_text("in the way")
    study = finished_run.parents[2] / "one.toml"
    out = finished_run.parents[1]
    r = cli(
        "sweep", str(study), "--out", str(out), "--records", str(blocked / "rec"), env=ONE_THREAD
    )
    assert r.returncode == 2, r.stderr
    assert f"cannot create record folder {blocked / 'rec'}" in r.stderr
    assert (finished_run / "eval.json").is_file()  # the study's run is kept, to record later


@pytest.fixture
def other_file_system(tmp_path):
    """A folder on another file system than the temporary one (tmpfs at /dev/shm, where the
    machine has one): a write staged in the temporary folder and moved would cross devices."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or shm.stat().st_dev == tmp_path.stat().st_dev:
        pytest.skip("no second file system at /dev/shm on this machine")
    folder = shm / f"focalpp-test-{os.getpid()}-{tmp_path.name}"
    folder.mkdir()
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_reports_and_records_land_whole_on_another_file_system(finished_run, other_file_system):
    """Each output is staged beside its target, so a folder on another file system than the
    source, the working directory or the temporary folder takes it whole, a second time over
    the first, and a write that fails there replaces nothing."""
    report, record = other_file_system / "report", other_file_system / "record"
    for _ in range(2):  # written, then written again over itself
        done = cli("report", str(RECORD), "--out", str(report))
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        done = cli("records", str(finished_run), "--out", str(record))
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert (report / "report.md").is_file() and any(report.glob("*.png"))
    assert sum(1 for _ in (record / "runs.jsonl").open()) == 1
    assert sorted(p.name for p in other_file_system.iterdir()) == ["record", "report"]
    before = contents(report)
    done = limited_tool("report", str(RECORD), "--out", str(report), limit=8 * 1024)
    refused(done, str(report), f"Nothing in {report} was replaced")
    assert contents(report) == before
    assert sorted(p.name for p in other_file_system.iterdir()) == ["record", "report"]

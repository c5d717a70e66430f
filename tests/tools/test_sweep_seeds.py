"""A study with `seeds_per_process`: each K seeds of a row train in one process, each seed in
the run directory its single run would have, and the index lists every run as for single runs;
a group killed mid-way resumes together when the study runs again."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from components.sweep.study import SeedGroupSpec, load_study
from tests.conftest import cli, logged_steps
from tests.tools.test_sweep import sweep, write_study


def grouped_study(path: Path, data_root: Path, k: int = 2, seeds=(0, 1, 2)) -> Path:
    write_study(path, data_root, seeds=seeds, steps=200)
    path.write_text(path.read_text() + f"seeds_per_process = {k}\nthreads_per_run = 1\n")
    return path


def kill_group_when_logged(out: Path, run_dir: Path, step: int, proc) -> None:
    """SIGKILL the worker process (`python -m components.sweep.worker run ...`) training in the
    study `out` once `run_dir` has logged `step` (a group's call names its directories by a
    template)."""
    while True:  # until the step is logged or the process ends (no clock: load varies)
        assert proc.poll() is None, proc.communicate()
        if any(logged >= step for logged in logged_steps(run_dir)):
            for pid in Path("/proc").iterdir():
                try:
                    argv = (pid / "cmdline").read_bytes().split(b"\0")
                except OSError:
                    continue
                if b"components.sweep.worker" in argv and any(str(out).encode() in a for a in argv):
                    os.kill(int(pid.name), signal.SIGKILL)
                    return
        time.sleep(0.02)


def test_jobs_group_the_seeds_of_each_row(tiny_data, tmp_path):
    study = load_study(grouped_study(tmp_path / "s.toml", tiny_data))
    jobs = study.jobs()
    assert [j.name for j in jobs] == [
        "focal-sparse_point_robot-s0-1",
        "focal-sparse_point_robot-s2-2",
    ]
    assert isinstance(jobs[0], SeedGroupSpec)
    call, arguments = jobs[0].call(tmp_path / "runs")
    assert call == "run" and arguments["seeds"] == [0, 1] and arguments["grouped"]


def test_a_grouped_study_writes_single_runs_and_resumes_a_killed_group(tiny_data, tmp_path):
    spec = grouped_study(tmp_path / "s.toml", tiny_data, seeds=(0, 1))
    out = tmp_path / "study"
    proc = sweep(str(spec), "--out", str(out), "--workers", "1")
    kill_group_when_logged(out, out / "runs" / "focal-sparse_point_robot-s1", 50, proc)
    proc.communicate()
    r = cli("sweep", str(spec), "--out", str(out), "--workers", "1")
    assert r.returncode == 0, r.stderr
    index = json.loads((out / "index.json").read_text())
    assert [(run["name"], run["status"]) for run in index["runs"]] == [
        (f"focal-sparse_point_robot-s{s}", "done") for s in (0, 1)
    ]
    assert {run["how"] for run in index["runs"]} == {"resumed"}
    for seed in (0, 1):
        record = json.loads(
            (out / "runs" / f"focal-sparse_point_robot-s{seed}" / "run.json").read_text()
        )
        assert record["seed"] == seed
    report = cli("report", str(out))
    assert report.returncode == 0 and "focal" in report.stdout, report.stderr


def test_dry_run_lists_the_processes_the_study_starts(tiny_data, tmp_path):
    r = cli("sweep", str(grouped_study(tmp_path / "s.toml", tiny_data)), "--dry-run")
    assert r.returncode == 0, r.stderr
    assert "2 processes of up to 2 seeds each" in r.stdout
    text = " ".join(r.stdout.split())  # lines wrapped at the console's width, joined
    assert text.count("tools/run.py") == 2
    assert "focal-sparse_point_robot-s0-1: tools/run.py" in text and "--seeds 0,1 " in text
    assert "focal-sparse_point_robot-s2-2: tools/run.py" in text and "--seeds 2 " in text

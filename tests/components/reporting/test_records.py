"""A study's compact record (results/<study>): written from run directories, read back as the
runs were, and refused by file and line when damaged."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from components.reporting.metrics import read_metrics
from components.reporting.records import (
    COLUMNS,
    LOGS,
    LOGS_DIGEST,
    META_TESTS,
    RUNS,
    read_logs,
    read_records,
    write_records,
)
from components.results.runs import find_runs
from registry import FocalppError
from tests.conftest import ROOT, cli

RESULTS = ROOT / "results"


@pytest.fixture(scope="module")
def two_runs(tiny_data, tmp_path_factory) -> Path:
    """Seeds 0 and 1 of FOCAL at the tiny scale, in one folder."""
    root = tmp_path_factory.mktemp("record-runs")
    for seed in (0, 1):
        done = cli(
            "run", "--recipe", "focal.gin", "--scale", "tiny", "--seed", str(seed),
            "--out", str(root / f"focal-s{seed}"),
            "--gin_param", f"task_data.root = '{tiny_data}'",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    return root


def test_a_record_gives_back_what_the_report_reads_of_its_run_directories(two_runs, tmp_path):
    runs = sorted(two_runs.iterdir())
    count = write_records(runs, tmp_path / "rec", root=two_runs, logs=True)
    assert count == 2
    from_dirs, _ = find_runs([two_runs])
    from_record = read_records(tmp_path / "rec")
    assert [r["run"] for r in from_record] == ["focal-s0", "focal-s1"]
    for direct, recorded in zip(from_dirs, from_record, strict=True):
        for key in ("recipe", "env", "scale", "seed", "label", "bindings", "dataset", "eval"):
            assert recorded[key] == direct[key], key
        evals = [m for m in read_metrics(direct["dir"]) if m["kind"] == "eval"]
        assert recorded["metrics"] == evals and evals  # every meta-test, none of the train rows
        assert recorded["final"] == direct["eval"]["paper_return_mean"]
        # the training log, whole, from the archive
        assert read_logs(tmp_path / "rec", recorded["run"]) == read_metrics(direct["dir"])
    row = json.loads((tmp_path / "rec" / RUNS).read_text().splitlines()[0])
    assert set(COLUMNS) <= set(row)
    # provenance a new run records: the machine, and the code's commit in a git checkout
    assert isinstance(row["machine"], str) and "torch threads" in row["machine"]
    assert row["commit"] is None or re.fullmatch(r"[0-9a-f]{40}\+?", row["commit"])


def test_extending_a_record_keeps_its_runs_and_refuses_one_twice(two_runs, tmp_path):
    rec = tmp_path / "rec"
    write_records([two_runs / "focal-s0"], rec, root=two_runs, logs=True)
    kept = read_records(rec)
    write_records([two_runs / "focal-s1"], rec, root=two_runs, logs=True, keep=kept)
    assert [r["run"] for r in read_records(rec)] == ["focal-s0", "focal-s1"]
    assert len(read_logs(rec, "focal-s0")) == len(read_metrics(two_runs / "focal-s0"))
    with pytest.raises(FocalppError, match="already in the record"):
        write_records([two_runs / "focal-s1"], rec, root=two_runs, keep=read_records(rec))


@pytest.fixture
def record(tmp_path) -> Path:
    """A committed record (with its training logs), copied to be damaged."""
    copy = tmp_path / "failing_seeds"
    shutil.copytree(RESULTS / "paper_blocks" / "failing_seeds", copy)
    return copy


def _edit_runs(record: Path, edit) -> None:
    lines = [json.loads(x) for x in (record / RUNS).read_text().splitlines()]
    edit(lines)
    (record / RUNS).write_text("".join(json.dumps(x) + "\n" for x in lines))


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda rows: rows[1].pop("dataset"), r"runs.jsonl line 2 lacks column\(s\) dataset"),
        (
            lambda rows: rows.append(rows[0]),
            r"line \d+ lists run '.*control-s2' again \(first at line 1\)",
        ),
        (
            lambda rows: rows[2].update(final=float("nan")),
            r"line 3 has final = nan, expected a finite",
        ),
        (
            lambda rows: rows[0]["eval"].update(test_return_mean=float("inf")),
            r"line 1 \(its eval\) has test_return_mean = inf",
        ),
    ],
    ids=["missing column", "run twice", "non-finite score", "non-finite eval"],
)
def test_a_damaged_record_is_refused_by_file_and_line(record, damage, message):
    _edit_runs(record, damage)
    with pytest.raises(FocalppError, match=message):
        read_records(record)
    result = cli("report", str(record), "--markdown")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert str(record / RUNS) in result.stderr


def test_an_archive_that_does_not_match_its_digest_is_refused(record):
    data = bytearray((record / LOGS).read_bytes())
    data[-20] ^= 1
    (record / LOGS).write_bytes(bytes(data))
    with pytest.raises(FocalppError, match=rf"{LOGS} has SHA-256 .* but .*{LOGS_DIGEST} records"):
        read_records(record)


def test_a_meta_test_of_no_listed_run_is_refused(record):
    with (record / META_TESTS).open("a") as f:
        f.write(json.dumps({"run": "nobody-s0", "step": 1, "kind": "eval"}) + "\n")
    with pytest.raises(FocalppError, match=rf"{META_TESTS} line \d+ names no run"):
        read_records(record)


def test_a_report_of_a_folder_without_records_says_what_it_expected(tmp_path):
    (tmp_path / "empty").mkdir()
    result = cli("report", str(tmp_path / "empty"))
    assert result.returncode == 2
    assert "no finished runs" in result.stderr and "runs.jsonl" in result.stderr

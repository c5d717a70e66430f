"""A study's compact record (results/<study>): written from run directories, read back as the
runs were, and refused by file and line when damaged."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from components.outputs.metrics import read_metrics
from components.reports.records import (
    COLUMNS,
    CONFIGS,
    LOGS,
    LOGS_DIGEST,
    META_TESTS,
    RUNS,
    read_logs,
    read_records,
    write_records,
)
from components.reports.runs import find_runs
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
    # provenance a new run records: what was built and from which bindings, the code, the
    # machine, torch and the precision the loop used
    assert isinstance(row["machine"], str) and "torch threads" in row["machine"]
    assert row["commit"] == "unknown" or re.fullmatch(r"[0-9a-f]{40}", row["commit"])
    assert row["clean"] in (True, False, "unknown")
    assert re.fullmatch(r"[0-9a-f]{64}", row["config_digest"])
    assert row["parts"]["context_encoder"] == ["context_encoder"]
    assert row["parts"]["objective"] == ["focal_dml"] and row["parts"]["agent"] == ["brac"]
    assert row["cpu"] and row["torch"] and row["precision"]["precision"] == "fp32"
    # the configuration itself, once per digest: both seeds share it
    configs = [json.loads(x) for x in (tmp_path / "rec" / CONFIGS).read_text().splitlines()]
    assert [c["config_digest"] for c in configs] == [row["config_digest"]]
    assert configs[0]["bindings"]["sizes.sizes.latent_dim"]
    assert "experiment.seed" not in configs[0]["bindings"]
    assert from_record[0]["config"] == configs[0]["bindings"]


def test_extending_a_record_keeps_its_runs_and_refuses_one_twice(two_runs, tmp_path):
    rec = tmp_path / "rec"
    write_records([two_runs / "focal-s0"], rec, root=two_runs, logs=True)
    kept = read_records(rec)
    write_records([two_runs / "focal-s1"], rec, root=two_runs, logs=True, keep=kept)
    assert [r["run"] for r in read_records(rec)] == ["focal-s0", "focal-s1"]
    assert len(read_logs(rec, "focal-s0")) == len(read_metrics(two_runs / "focal-s0"))
    with pytest.raises(FocalppError, match="already in the record"):
        write_records([two_runs / "focal-s1"], rec, root=two_runs, keep=read_records(rec))


def test_a_run_built_otherwise_does_not_join_its_row_without_a_label(two_runs, tiny_data, tmp_path):
    """A record holds one configuration per row: a run of the same recipe built from other
    bindings is refused, naming them; under a label of its own it is a row of its own."""
    rec = tmp_path / "rec"
    write_records([two_runs / "focal-s0"], rec, root=two_runs)
    other = tmp_path / "other"
    for label in ("", "wider"):
        done = cli(
            "run", "--recipe", "focal.gin", "--scale", "tiny", "--seed", "1",
            "--out", str(other / f"focal-{label or 'plain'}"),
            "--gin_param", f"task_data.root = '{tiny_data}'",
            "--gin_param", "mlp_encoder.hidden = (8, 8)",
            *(["--label", label] if label else []),
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    with pytest.raises(FocalppError, match=r"(?s)built from other bindings.*mlp_encoder\.hidden"):
        write_records([other / "focal-plain"], rec, root=other, keep=read_records(rec))
    write_records([other / "focal-wider"], rec, root=other, keep=read_records(rec))
    runs = read_records(rec)
    assert [r["label"] for r in runs] == ["", "wider"]
    assert runs[0]["config_digest"] != runs[1]["config_digest"]


def test_a_run_does_not_join_a_row_recorded_without_a_configuration(two_runs, tmp_path):
    """Runs recorded before configurations were cannot be shown to be built alike."""
    rec = tmp_path / "rec"
    write_records([two_runs / "focal-s0"], rec, root=two_runs)
    _edit_runs(rec, lambda rows: rows[0].update(config_digest="unknown"))
    with pytest.raises(FocalppError, match=r"without a configuration digest.*label of their own"):
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
        (lambda rows: rows[3].update(commit="abc"), r"line 4 has commit = 'abc', expected a hex"),
        (lambda rows: rows[0].update(clean="yes"), r"line 1 has clean = 'yes', expected true"),
        (lambda rows: rows[1].update(parts={"encoder": []}), r"line 2 has parts = .* expected an"),
        (
            lambda rows: rows[1].update(precision={"precision": "fp8"}),
            r"line 2 has precision = .* expected an object whose precision is one of",
        ),
        (
            lambda rows: rows[0].update(config_digest="0" * 64),
            r"run '.*' has config_digest 000000000000…, which .*configs.jsonl does not hold",
        ),
    ],
    ids=[
        "missing column",
        "run twice",
        "non-finite score",
        "non-finite eval",
        "commit",
        "clean",
        "parts",
        "precision",
        "digest not held",
    ],
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


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda row: row.update(env="point_robot_wind"), r"has env = 'point_robot_wind', but"),
        (lambda row: row.update(scale="paper"), r"has scale = 'paper', but"),
        (lambda row: row.update(algorithm="focalpp"), r"has algorithm = 'focalpp', but"),
        (lambda row: row.update(device="cuda"), r"has device = 'cuda', but"),
        (
            lambda row: row["precision"].update(requested="bf16"),
            r"has precision.requested = 'bf16', but",
        ),
    ],
    ids=["env", "scale", "algorithm", "device", "precision"],
)
def test_a_choice_edited_away_from_its_configuration_is_refused(
    two_runs, tmp_path, damage, message
):
    """A line's env, scale, algorithm, device and requested precision are also bindings of the
    configuration its digest names; the two must agree."""
    rec = tmp_path / "rec"
    write_records([two_runs / "focal-s0"], rec, root=two_runs)
    read_records(rec)  # as written, it agrees
    _edit_runs(rec, lambda rows: damage(rows[0]))
    with pytest.raises(FocalppError, match=message + r" its configuration [0-9a-f]{12}… binds"):
        read_records(rec)


@pytest.mark.parametrize(
    ("seeds", "message"),
    [
        ([2, 2, 3, 5, 9], "distinct seeds, the run's own seed 2 among them"),
        ([3, 5, 9], "distinct seeds, the run's own seed 2 among them"),
        ([2, 3, -1], r"a list of seeds, each in \[0, 4294967295\]"),
        ([2, 3, 2**32], r"a list of seeds, each in \[0, 4294967295\]"),
    ],
    ids=["twice", "own seed missing", "negative", "too large"],
)
def test_the_seeds_a_run_was_trained_with_are_checked(record, seeds, message):
    """trained_with_seeds: the seeds of the process that trained the run, its own among them."""
    _edit_runs(record, lambda rows: rows[0].update(trained_with_seeds=seeds))
    with pytest.raises(
        FocalppError, match=rf"line 1 has trained_with_seeds = .*expected {message}"
    ):
        read_records(record)

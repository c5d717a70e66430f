"""The provenance section lists what each row ran on and what some of its runs did not record."""

from __future__ import annotations

from components.reports.sections.provenance import Provenance
from components.reports.tables import RunGroups

FULL = {
    "numerics": {"mode": "portable"},
    "precision": {"precision": "fp32"},
    "dataset": {"content_sha256": "ab" * 32},
    "cpu": "Intel Xeon",
    "commit": "1234567" + "0" * 33,
    "clean": True,
    "config_digest": "cd" * 32,
    "torch": "2.13.0",
}


def rows_of(groups):
    (table,) = Provenance()(RunGroups(groups)).tables
    return [dict(zip(table.columns, row, strict=True)) for row in table.rows]


def test_a_row_of_full_provenance_says_nothing_is_unrecorded():
    (row,) = rows_of({("env", "cpu", "focal"): [FULL, {**FULL, "seed": 1}]})
    assert row["runs"] == "2" and row["unrecorded"] == "-"
    assert (row["numerics"], row["precision"], row["dataset"]) == ("portable", "fp32", "ab" * 6)
    assert (row["CPU"], row["commit"]) == ("Intel Xeon", "1234567")


def test_a_row_names_each_value_and_what_one_run_did_not_record():
    older = {**FULL, "numerics": None, "clean": False, "cpu": "unknown", "torch": "unknown"}
    (row,) = rows_of({("env", "cpu", "focal"): [FULL, older]})
    assert row["numerics"] == "free, portable"
    assert row["CPU"] == "Intel Xeon, unknown"
    assert row["commit"] == "1234567, 1234567 (dirty)"
    assert row["unrecorded"] == "commit, CPU, torch"

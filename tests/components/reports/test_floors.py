"""The floor and the ceiling a test-context cell is read against (components/reports/floors.py)
and the first number of the per-row protocol table, on records with known answers."""

from __future__ import annotations

import pytest

from components.reports.floors import brackets
from components.reports.runs import groups
from components.reports.sections.test_contexts import ProtocolReturns
from components.reports.tables import RunGroups


def line(recipe: str, seed: int, agent: str, label: str = "", **cells: float) -> dict:
    found = {"recipe": recipe, "env": "sparse_point_robot", "scale": "cpu", "seed": seed,
             "label": label, "parts": {"agent": [agent]}}  # fmt: skip
    if cells:
        return found | {"eval": {"test_contexts": {k: {"mean": v} for k, v in cells.items()}}}
    return found | {
        "eval": {"test_return_mean": 2.0 + seed % 2 if "no_context" in recipe else 10.0}
    }


def references(agent: str, label: str = "") -> list[dict]:
    """Four seeds of each reference row: the floor 2, 3, 2, 3 (mean 2.5), the ceiling 10."""
    return [
        line(recipe, seed, agent, label)
        for recipe in ("reference_no_context.gin", "reference_oracle.gin")
        for seed in range(4)
    ]


def test_a_setting_has_a_bracket_only_with_both_reference_rows():
    runs = references("brac") + references("iql", "shared")[:4]  # IQL's floor, no ceiling
    found = brackets(RunGroups(groups(runs), reps=200))
    assert set(found) == {("sparse_point_robot", "cpu", "brac", "")}
    bracket = found["sparse_point_robot", "cpu", "brac", ""]
    assert bracket.floor.point == pytest.approx(2.5) and bracket.ceiling == 10.0
    assert bracket.floor.low >= 2.0 and bracket.floor.high <= 3.0
    assert bracket.share(6.25) == pytest.approx(0.5)
    assert bracket.above(3.01) and not bracket.above(2.6)


def test_the_protocol_table_leads_with_the_share_and_reads_no_drop_to_the_floor():
    runs = references("brac")
    runs += [line("focal.gin", s, "brac", offline=8.5, online_greedy=7.0, zero_shot=2.5)
             for s in range(4)]  # fmt: skip
    (table,) = ProtocolReturns()(RunGroups(groups(runs), reps=200)).tables
    rows = {(row[2], row[3]): row for row in table.rows}
    assert table.columns[4] == "recovered share"
    assert rows["focal", "offline"][4] == "0.80"  # (8.5 - 2.5) / (10 - 2.5)
    assert rows["focal", "online_greedy"][4] == "0.60"
    assert rows["focal", "online_greedy"][8] == "1.50 ± 0.00"  # both above the floor
    assert rows["focal", "zero_shot"][4] == "0.00"
    assert rows["focal", "zero_shot"][8] == "at the floor"  # no inference there to lose
    assert rows["focal", "offline"][5] == "-"  # no success rate on a point robot


def test_another_learner_s_or_label_s_floor_is_never_used():
    runs = references("brac") + references("iql", "own")
    runs += [line("focal.gin", s, "iql", "shared", offline=8.5, zero_shot=2.5) for s in range(4)]
    (table,) = ProtocolReturns()(RunGroups(groups(runs), reps=200)).tables
    rows = {(row[2], row[3]): row for row in table.rows}
    assert rows["focal (shared)", "offline"][4] == "-"  # IQL (shared) has no floor here
    assert rows["focal (shared)", "zero_shot"][8] == "6.00 ± 0.00"  # not read against one


def test_on_meta_world_the_share_is_read_in_success_rate_too():
    """Where the references scored a success rate (Meta-World), each cell's share of the gap in
    success stands beside its share in return, from the same floor and ceiling rows."""
    runs = []
    for seed in range(4):
        for recipe, value, rate in (("reference_no_context.gin", 2.5, 0.2),
                                    ("reference_oracle.gin", 10.0, 0.9)):  # fmt: skip
            run = line(recipe, seed, "brac")
            run["eval"] = {"test_return_mean": value, "success_rate": rate}
            runs.append(run)
        run = line("focal.gin", seed, "brac", offline=8.5, online_greedy=4.0)
        run["eval"]["test_contexts"]["offline"]["success_rate"] = 0.76
        run["eval"]["test_contexts"]["online_greedy"]["success_rate"] = 0.2 + 0.1 * (seed % 2)
        runs.append(run)
    (table,) = ProtocolReturns()(RunGroups(groups(runs), reps=200)).tables
    rows = {(row[2], row[3]): row for row in table.rows}
    assert table.columns[5] == "share in success"
    assert rows["focal", "offline"][4:6] == ("0.80", "0.80")  # (0.76 - 0.2) / (0.9 - 0.2)
    assert rows["focal", "online_greedy"][4:6] == ("0.20", "0.07")  # 0.25 of success: 0.05 / 0.7

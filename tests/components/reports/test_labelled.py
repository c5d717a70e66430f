"""A labelled row against the same row unlabelled, on runs with known answers."""

from __future__ import annotations

from components.reports.runs import groups
from components.reports.sections.labelled import Labelled
from components.reports.tables import RunGroups


def run(recipe: str, seed: int, final: float, label: str = "") -> dict:
    evaluation = {"sparse_return_mean": final, "paper_return_mean": final}
    return {"recipe": recipe, "env": "sparse_point_robot", "scale": "cpu", "seed": seed,
            "label": label, "eval": evaluation, "metrics": []}  # fmt: skip


def test_a_labelled_row_is_compared_with_its_unlabelled_row_only():
    runs = [run("focalpp.gin", s, 10.0 + s) for s in range(4)]
    runs += [run("focalpp.gin", s, 10.0 + s, "faster") for s in range(4)]  # the same values
    runs += [run("focal.gin", s, 1.0 + s, "faster") for s in range(4)]  # no unlabelled focal
    runs += [run("focal_iql.gin", s, 1.0 + s) for s in range(4)]  # no label
    (table,) = Labelled()(RunGroups(groups(runs), reps=200)).tables
    assert [row[2:5] for row in table.rows] == [
        ("focalpp", "faster", "return (paper-comparable)")
    ]  # no last-three row: these runs made no meta-tests in their metrics
    row = table.rows[0]
    assert row[5] == row[6] == "11.50 ± 1.12" and row[7] == "4 v 4"
    assert row[8].startswith("0.50") and row[9] == "same within noise"


def test_a_labelled_row_above_its_unlabelled_row_is_called_above():
    runs = [run("focalpp.gin", s, 1.0 + 0.1 * s) for s in range(5)]
    runs += [run("focalpp.gin", s, 5.0 + 0.1 * s, "new") for s in range(5)]
    (table,) = Labelled()(RunGroups(groups(runs), reps=200)).tables
    assert table.rows[0][8].startswith("1.00") and table.rows[0][9] == "above"


def test_nothing_to_compare_gives_no_section():
    runs = [run("focalpp.gin", s, 1.0) for s in range(3)]
    assert Labelled()(RunGroups(groups(runs), reps=200)) is None

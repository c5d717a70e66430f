"""The orders under the test-context protocols: P(FOCAL++ > FOCAL) per learner and protocol,
and which row loses less from its offline score, on cells with known answers."""

from __future__ import annotations

from components.reports.runs import groups
from components.reports.sections.test_context_orders import ProtocolOrders
from components.reports.tables import RunGroups


def run(recipe: str, seed: int, offline: float, online: float) -> dict:
    cells = {"offline": {"mean": offline}, "online_greedy": {"mean": online},
             "non_prior": {"not_applicable": "no prior-free exploration here"}}  # fmt: skip
    return {"recipe": recipe, "env": "sparse_point_robot", "scale": "cpu", "seed": seed,
            "eval": {"test_contexts": cells}}  # fmt: skip


def test_each_learner_s_pair_is_ordered_per_protocol_with_its_drop():
    runs = [run("focalpp.gin", s, 10.0 + s, 9.0 + s) for s in range(4)]  # loses 1
    runs += [run("focal.gin", s, 5.0 + s, 1.0 + s) for s in range(4)]  # loses 4
    runs += [run("focalpp_iql.gin", s, 6.0, 3.0) for s in range(3)]
    runs += [run("focal_iql.gin", s, 6.0, 3.0) for s in range(3)]  # the same: P 0.5
    (table,) = ProtocolOrders()(RunGroups(groups(runs), reps=200)).tables
    by = {(row[2], row[3]): row for row in table.rows}
    assert set(by) == {
        (learner, p) for learner in ("BRAC", "IQL") for p in ("offline", "online_greedy")
    }
    brac = by["BRAC", "online_greedy"]
    assert brac[4] == "4 v 4"
    assert brac[7].startswith("1.00") and brac[8] == "reproduced"
    assert (brac[9], brac[10]) == ("1.00 ± 0.00", "4.00 ± 0.00")
    assert brac[11].startswith("1.00") and brac[12] == "reproduced"  # FOCAL++ loses less
    assert by["BRAC", "offline"][9:] == ("-", "-", "-", "-")  # offline has no drop
    iql = by["IQL", "online_greedy"]
    assert iql[7].startswith("0.50") and iql[8] == "same within noise"
    assert iql[12] == "same within noise"


def test_a_row_without_its_counterpart_has_no_order():
    runs = [run("focalpp.gin", s, 10.0, 9.0) for s in range(3)]
    assert ProtocolOrders()(RunGroups(groups(runs), reps=200)) is None

"""The orders under the test-context protocols: P(FOCAL++ > FOCAL) per learner and protocol,
and which row loses less from its offline score, on cells with known answers."""

from __future__ import annotations

from components.reports.runs import groups
from components.reports.sections.test_context_orders import ProtocolOrders
from components.reports.tables import RunGroups


def run(recipe: str, seed: int, offline: float, online: float) -> dict:
    cells = {"offline": {"mean": offline}, "online_greedy": {"mean": online},
             "non_prior": {"not_applicable": "no prior-free exploration here"}}  # fmt: skip
    agent = "iql" if recipe.endswith("_iql.gin") else "brac"  # as the recipe builds it
    return {"recipe": recipe, "env": "sparse_point_robot", "scale": "cpu", "seed": seed,
            "parts": {"agent": [agent]}, "eval": {"test_contexts": cells}}  # fmt: skip


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
    assert brac[4:7] == ("-", "-", "4 v 4")  # no floor and ceiling in the report: no share
    assert brac[9].startswith("1.00") and brac[10] == "reproduced"
    assert (brac[11], brac[12]) == ("1.00 ± 0.00", "4.00 ± 0.00")
    assert brac[13].startswith("1.00") and brac[14] == "reproduced"  # FOCAL++ loses less
    assert by["BRAC", "offline"][11:] == ("-", "-", "-", "-")  # offline has no drop
    iql = by["IQL", "online_greedy"]
    assert iql[9].startswith("0.50") and iql[10] == "same within noise"
    assert iql[14] == "same within noise"


def test_a_row_without_its_counterpart_has_no_order():
    runs = [run("focalpp.gin", s, 10.0, 9.0) for s in range(3)]
    assert ProtocolOrders()(RunGroups(groups(runs), reps=200)) is None


def reference(recipe: str, seed: int, value: float, label: str, agent: str) -> dict:
    return {"recipe": recipe, "env": "sparse_point_robot", "scale": "cpu", "seed": seed,
            "label": label, "parts": {"agent": [agent]},
            "eval": {"test_return_mean": value}}  # fmt: skip


def labelled(recipe: str, seed: int, offline: float, online: float, label: str) -> dict:
    return {**run(recipe, seed, offline, online), "label": label}


def test_each_label_s_pair_is_read_against_its_own_floor_and_ceiling():
    """Two settings of one learner (a study's variants): each pair's shares come from its own
    label's floor (0) and ceiling (10); a drop to a cell inside the floor's interval is not
    compared, one between two cells above it is."""
    runs = []
    for label, floor in (("own", 0.0), ("shared", 4.0)):
        for s in range(4):
            runs += [reference("reference_no_context.gin", s, floor + 0.01 * s, label, "iql")]
            runs += [reference("reference_oracle.gin", s, 10.0, label, "iql")]
            runs += [labelled("focalpp_iql.gin", s, 8.0 + 0.1 * s, 5.0 + 0.1 * s, label)]
            runs += [labelled("focal_iql.gin", s, 6.0 + 0.1 * s, 4.5 - 0.1 * s, label)]
    (table,) = ProtocolOrders()(RunGroups(groups(runs), reps=200)).tables
    by = {(row[2], row[3]): row for row in table.rows}
    assert set(by) == {
        (f"IQL ({label})", p) for label in ("own", "shared") for p in ("offline", "online_greedy")
    }
    for label, floor in (("own", 0.015), ("shared", 4.015)):  # the floors' means

        def share(value, floor=floor):
            return f"{(value - floor) / (10.0 - floor):.2f}"

        online, offline = by[f"IQL ({label})", "online_greedy"], by[f"IQL ({label})", "offline"]
        assert online[4:6] == (share(5.15), share(4.35)), label  # FOCAL++'s mean, FOCAL's
        assert offline[4:6] == (share(8.15), share(6.15)), label
        assert online[11] == "3.00 ± 0.00"  # every cell above its floor: the drops compared
        assert online[14] == "reversed"  # FOCAL++ loses 3.0, FOCAL 1.5-2.1: it loses more
    assert share(5.15) != by["IQL (own)", "online_greedy"][4]  # another floor, another share


def test_a_drop_to_a_cell_at_the_floor_is_not_compared():
    runs = []
    for s in range(4):
        runs += [reference("reference_no_context.gin", s, 1.0 + 0.1 * s, "", "brac")]
        runs += [reference("reference_oracle.gin", s, 10.0, "", "brac")]
        runs += [run("focalpp.gin", s, 8.0, 1.05 + 0.1 * s)]  # within the floor's interval
        runs += [run("focal.gin", s, 7.0, 5.0)]
    (table,) = ProtocolOrders()(RunGroups(groups(runs), reps=200)).tables
    online = {row[3]: row for row in table.rows}["online_greedy"]
    assert online[2] == "BRAC"
    assert online[11:] == ("at the floor", "at the floor", "-", "no inference to lose")

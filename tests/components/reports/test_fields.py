"""Every field a meta-test writes is one the reports' field check knows, in its range; and each
kind of check refuses what lies outside it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from components.evaluation.meta_test import MetaTestResult
from components.numerics import state
from components.reports.fields import EVAL, META_TEST, NUMERICS, check_fields
from registry import FocalppError


def full_result() -> MetaTestResult:
    """A meta-test result with every optional part a family can give (sparse, paper-formula,
    ceiling, success, dataset returns, a curve, a protocol cell), one task's normalisation
    undefined."""
    tasks = [3, 7]
    cell = MetaTestResult(
        tasks, np.array([1.0, 2.0]), None, [400], success=np.array([0.0, 1.0])
    ).cell()
    return MetaTestResult(
        tasks=tasks,
        returns=np.array([-3.0, 5.0]),
        sparse_returns=np.array([0.0, 4.0]),
        context_sizes=[200, 400],
        curve=[0.5, 2.0],
        paper_returns=np.array([1.0, 6.0]),
        paper_formula="inside_bonus",
        ceiling={"dense": -1.0, "sparse": 9.0, "paper": 10.0},
        success=np.array([0.0, 1.0]),
        dataset_returns=np.array([0.0, 8.0]),  # task 3's score is NaN (no positive reference)
        protocols={"online_greedy": cell},
    )


def test_every_field_a_meta_test_writes_is_known_and_in_range():
    record = {**full_result().to_dict(), "steps": 10, "train_seconds": 1.5}
    record["meta_test_seconds"] = 0.25
    record["last_meta_tests"] = {"count": 2, "steps": [5, 10], "test_return_mean": 1.0}
    assert math.isnan(record["per_task_normalised_score"]["3"])
    check_fields(record, EVAL, "eval.json", "fix")
    line = {"kind": "eval", "step": 10}
    line.update({k: v for k, v in record.items() if k in META_TEST})
    check_fields(line, META_TEST, "metrics.jsonl line 1", "fix", required=("step",))


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"success_rate": 1.0000001}, "success_rate = 1.0000001, expected a number in [0, 1]"),
        ({"test_return_std": -1e-9}, "expected a finite number ≥ 0"),
        ({"test_return_mean": math.inf}, "test_return_mean = inf, expected a finite number"),
        ({"test_return_mean": True}, "test_return_mean = True, expected a finite number"),
        ({"dense_return_mean": None}, None),  # not measured by an older run
        ({"steps": 2.0}, "steps = 2.0, expected an integer ≥ 0"),
        ({"context_sizes": []}, "expected a list of integers ≥ 1"),
        ({"context_sizes": [0]}, "expected a list of integers ≥ 1"),
        ({"per_task_return": {"3": math.nan}}, "per_task_return.3 = nan, expected a finite"),
        ({"per_task_success": {"3": -0.5}}, "per_task_success.3 = -0.5, expected a number in"),
        ({"curve": [1.0, "x"]}, "curve = [1.0, 'x'], expected a list of finite numbers"),
        ({"last_meta_tests": {"count": 0, "steps": [1]}}, "last_meta_tests.count = 0"),
        ({"last_meta_tests": {"count": 1}}, "lacks last_meta_tests.steps"),
        ({"test_contexts": {}}, "test_contexts = {}, expected an object of name -> object"),
        ({"test_contexts": {"zero_shot": {"std": 1.0}}}, "lacks test_contexts.zero_shot.mean"),
        ({"test_contexts": {"zero_shot": [1.0]}}, "test_contexts.zero_shot = [1.0]"),
        ({"paper_formula": ""}, "paper_formula = '', expected a text"),
        ({"per_task_regret": {}}, "per_task_regret, which is not a field of a meta-test"),
    ],
)
def test_a_field_outside_its_range_is_named(change, expected):
    record = {"test_return_mean": 1.0, "test_return_std": 0.5, **change}
    if expected is None:
        check_fields(record, EVAL, "eval.json", "fix")
        return
    with pytest.raises(FocalppError, match=r"^eval\.json .*: fix$") as error:
        check_fields(record, EVAL, "eval.json", "fix")
    assert expected in str(error.value)


def test_a_meta_test_line_needs_its_step_and_return():
    with pytest.raises(FocalppError, match="lacks step"):
        check_fields({"test_return_mean": 1.0}, META_TEST, "m", "fix", required=("step",))
    with pytest.raises(FocalppError, match="lacks test_return_mean"):
        check_fields({"step": 1}, META_TEST, "m", "fix")
    with pytest.raises(FocalppError, match="has a record = 3, expected a JSON object"):
        check_fields(3, META_TEST, "m", "fix")


def test_the_numerics_this_machine_records_pass_their_check():
    found = state()
    check_fields(found, NUMERICS, "runs.jsonl line 1", "fix", required=("mode",))
    with pytest.raises(FocalppError, match=r"numerics\.torch_threads = 0, expected an integer ≥ 1"):
        bad = {**found, "torch_threads": 0}
        check_fields(bad, NUMERICS, "runs.jsonl line 1", "fix", ("mode",), "numerics")

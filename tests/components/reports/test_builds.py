"""The sides of a comparison are one build: check_sides refuses sides that differ in a field
both record, naming the field, both values and a run of each."""

import re

import pytest

from components.reports.builds import (
    SIDES_SHARE,
    TASKS_SHARE,
    check_one_build,
    check_sides,
    provenance_gaps,
)
from registry import FocalppError


def line(run: str, **fields) -> dict:
    """A run line as a record holds it (components/reports/records.py), one build by default."""
    base = {
        "run": run,
        "precision": {"precision": "fp32", "requested": "fp32"},
        "eval": {"steps": 6000},
        "numerics": {"mode": "portable"},
        "dataset": {"content_sha256": "aaaa"},
        "bindings": ["loop.precision = 'fp32'", "meta_test.protocols = ['offline']"],
    }
    return {**base, **fields}


# one kind of mixing each: the field the message names, and the edit to one side's run
MIXES = {
    "precision": {"precision": {"precision": "bf16", "requested": "auto"}},
    "steps": {"eval": {"steps": 3000}},
    "numerics": {"numerics": {"mode": "free"}},
    "products": {"numerics": {"mode": "portable", "products": "openblas"}},
    "dataset": {"dataset": {"content_sha256": "bbbb"}},
    "bindings": {"bindings": ["loop.precision = 'fp32'", "brac.lr = 1e-3"]},
}


def test_sides_of_one_build_pass():
    check_sides({"FOCAL++": [line("a"), line("b")], "FOCAL": [line("c")]}, "a cell")


@pytest.mark.parametrize("field", sorted(MIXES))
def test_each_kind_of_mixing_is_refused_naming_it(field):
    with pytest.raises(FocalppError) as refused:
        check_sides({"FOCAL++": [line("a")], "FOCAL": [line("c", **MIXES[field])]}, "a cell")
    said = str(refused.value)
    assert said.startswith("a cell compares runs built differently, in " + field)
    assert "(FOCAL++, a)" in said and "(FOCAL, c)" in said


@pytest.mark.parametrize("field", ["precision", "steps", "numerics", "products", "dataset"])
def test_one_rows_seeds_of_two_builds_are_refused(field):
    """A record's row (and a table's cell) holds one build: seeds pinned and free, or on two
    data builds, are refused as a study appends them, naming the field and both values."""
    check_one_build([line("s0"), line("s1")], "the focal runs")
    with pytest.raises(FocalppError) as refused:
        check_one_build([line("s0"), line("s1", **MIXES[field])], "the focal runs")
    said = str(refused.value)
    assert said.startswith(f"the focal runs were built differently, in {field}: ")
    first, second = re.search(r"in \w+: (.+) \(s0\); (.+) \(s1\); one row", said).groups()
    assert first != second  # both values, each with a run
    assert "--label NAME" in said


def test_a_side_mixing_within_itself_is_refused_too():
    with pytest.raises(FocalppError, match="in steps: 6,000"):
        check_sides({"FOCAL++": [line("a"), line("b", **MIXES["steps"])], "FOCAL": []}, "x")


def test_two_sides_are_named_where_the_sides_differ():
    """Side A holds both values, side B the second: the message pairs runs of two sides."""
    sides = {
        "A": [line("a1"), line("a2", **MIXES["precision"])],
        "B": [line("b1", **MIXES["precision"])],
    }
    with pytest.raises(FocalppError) as refused:
        check_sides(sides, "x")
    said = str(refused.value)
    assert "fp32 (A, a1) v bf16 (B, b1)" in said


def test_unknown_fields_are_left_out_never_guessed():
    """A run recorded before a field existed says nothing of it: no refusal on that field;
    before runs recorded their numerics, every run trained free."""
    old = line("old", numerics={"mode": "free"})
    for field in ("dataset", "bindings"):
        del old[field]
    old["precision"] = "unknown"
    check_sides({"FOCAL++": [line("a", numerics={"mode": "free"})], "FOCAL": [old]}, "a cell")
    del old["numerics"]
    check_sides({"FOCAL++": [line("a", numerics={"mode": "free"})], "FOCAL": [old]}, "a cell")
    with pytest.raises(FocalppError, match="in numerics: portable"):
        check_sides({"FOCAL++": [line("a")], "FOCAL": [old]}, "a cell")


def test_the_precision_binding_is_read_as_the_precision_that_ran():
    """A row pinned to fp32 and one whose 'auto' chose fp32 trained alike."""
    auto = line("auto", bindings=["meta_test.protocols = ['offline']"])
    check_sides({"FOCAL++": [line("a")], "FOCAL": [auto]}, "a cell")
    # the same binding spelt with other spaces is the same binding
    spaced = line("s", bindings=["meta_test.protocols  =  ['offline']"])
    check_sides({"FOCAL++": [line("a")], "FOCAL": [spaced]}, "a cell")


def test_tasks_of_an_average_differ_in_their_data_alone():
    push = [line("p", dataset={"content_sha256": "push"})]
    wall = [line("w", dataset={"content_sha256": "wall"})]
    check_sides({"push": push, "reach-wall": wall}, "the tasks", TASKS_SHARE)
    with pytest.raises(FocalppError, match="in precision"):
        check_sides(
            {"push": push, "reach-wall": [line("w", **MIXES["precision"])]}, "t", TASKS_SHARE
        )
    assert {name for name, _ in SIDES_SHARE} - {name for name, _ in TASKS_SHARE} == {"dataset"}


def test_protocols_scored_after_the_last_offline_score_are_not_read():
    """The test-context protocols scored at the last meta-test leave the offline score alone:
    sides that differ in them alone are one build; scored at every meta-test, they are read."""
    more = "meta_test.protocols = ['offline', 'zero_shot']"
    check_sides({"a": [line("a")], "b": [line("b", bindings=[more])]}, "x")
    every = "meta_test.protocols_every_time = True"
    with pytest.raises(FocalppError, match="in bindings"):
        check_sides(
            {"a": [line("a", bindings=[every])], "b": [line("b", bindings=[more, every])]}, "x"
        )


def test_provenance_gaps_name_what_some_run_did_not_record():
    full = line(
        "a", config_digest="d" * 64, commit="c" * 40, clean=True, cpu="Intel Xeon", torch="2.13"
    )
    assert provenance_gaps([full, dict(full)]) == "-"
    dirty = {**full, "clean": False}
    assert provenance_gaps([full, dirty]) == "commit"
    old = {k: v for k, v in full.items() if k not in ("config_digest", "torch")}
    assert provenance_gaps([full, old]) == "digest, torch"
    unknown = {**full, "cpu": "unknown", "precision": "unknown"}
    assert provenance_gaps([unknown]) == "CPU, precision"
    # the data it trained on: a run that did not record their content digest, or left it blank
    no_data = {k: v for k, v in full.items() if k != "dataset"}
    assert provenance_gaps([full, no_data]) == "data"
    assert provenance_gaps([{**full, "dataset": {"content_sha256": ""}}]) == "data"


def test_the_steps_binding_is_read_as_the_steps_that_ran():
    """MBML binds loop.steps = 8,000 and makes 12,000 gradient steps (its teacher phase counts
    on top): against a row that made 12,000 it is one budget; a binding that changes the steps
    made is refused as steps; a binding whose name merely begins alike is read."""
    teacher_first = line("m", bindings=["loop.precision = 'fp32'", "loop.steps = 8_000"])
    check_sides({"FOCAL": [line("f")], "MBML": [teacher_first]}, "a reading")
    shorter = line("s", bindings=["loop.steps = 3_000"], eval={"steps": 3000})
    with pytest.raises(FocalppError, match="in steps: 6,000"):
        check_sides({"FOCAL": [line("f")], "short": [shorter]}, "a reading")
    alike = line("a", bindings=["loop.precision = 'fp32'", "loop.steps_between = 2"])
    with pytest.raises(FocalppError, match="in bindings"):
        check_sides({"FOCAL": [line("f")], "other": [alike]}, "a reading")

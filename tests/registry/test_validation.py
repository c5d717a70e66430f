"""Binding checks: values against annotations, references against the default's kind, ranges."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

import gin
import pytest

from registry import RecipeError, register
from registry.validation import _accepts, at_least, check_bindings


@pytest.mark.parametrize(
    ("value", "annotation", "expected"),
    [
        (3, int, True),
        (True, int, False),  # a bool is not a count
        (3.5, int, False),
        (3, float, True),
        ("3", float, False),
        (None, int | None, True),
        ("x", int | None, False),
        ((64, 64), tuple[int, ...], True),
        ((64, "a"), tuple[int, ...], False),
        ([1, 2], Sequence[int], True),
        ("ab", Sequence[str], False),  # a string is not a list of names
        ((1, "a"), tuple[int, str], True),
        ((1,), tuple[int, str], False),
        ("mixed", Literal["mixed", "expert"], True),
        ("other", Literal["mixed", "expert"], False),
        (len, Callable[..., int], True),
        (3, Callable[..., int], False),
        (object(), object, None),  # a class it cannot judge
    ],
)
def test_accepts(value, annotation, expected):
    assert _accepts(value, annotation) is expected


@register("objective", "validation_probe_objective")
class _Objective:
    def __init__(self, *, weight: float = 1.0):
        self.weight = weight


@register("encoder", "validation_probe_encoder")
class _Encoder:
    def __init__(self, *, width: int = 4):
        self.width = width


@register("algorithm", "validation_probe_algorithm")
class _Algorithm:
    def __init__(self, *, steps: int = 1, hidden: tuple[int, ...] = (2,), objective=_Objective):
        self.steps = steps


def test_wrong_type_names_binding_value_and_expected_type():
    gin.parse_config("validation_probe_algorithm.steps = 'many'")
    with pytest.raises(
        RecipeError, match=r"validation_probe_algorithm.steps = 'many': expected int"
    ):
        check_bindings()


def test_reference_of_another_kind_is_refused():
    gin.parse_config("validation_probe_algorithm.objective = @validation_probe_encoder")
    with pytest.raises(RecipeError, match="registered encoder, but this parameter takes a"):
        check_bindings()


def test_good_bindings_pass():
    gin.parse_config(
        "validation_probe_algorithm.steps = 5\n"
        "validation_probe_algorithm.hidden = (8, 8)\n"
        "validation_probe_algorithm.objective = @validation_probe_objective\n"
        "validation_probe_objective.weight = 2\n"
    )
    check_bindings()


def test_at_least_names_the_binding():
    at_least("x", n=(1, 1), m=(0, 0))
    with pytest.raises(RecipeError, match=r"x.n = 0: must be ≥ 1"):
        at_least("x", n=(0, 1))

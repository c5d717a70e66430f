"""Binding checks: values against annotations, references against the default's kind, ranges."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Literal

import gin
import pytest

from registry import RecipeError, get, register
from registry.constraints import Count, Fraction, PositiveFloat, PositiveInt, Widths
from registry.validation import _accepts, check_arguments, check_bindings


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
        (1, PositiveInt, True),
        (0, PositiveInt, False),
        (0, Count, True),
        (-1, Count, False),
        (1e-3, PositiveFloat, True),
        (0.0, PositiveFloat, False),
        (float("inf"), PositiveFloat, False),  # 1e999 in a recipe
        (1.0, Fraction, True),
        (1.5, Fraction, False),
        ((64, 64), Widths, True),
        ((), Widths, True),  # no hidden layer: a linear map
        ((0,), Widths, False),
        ((-4, 16), Widths, False),
        (None, PositiveFloat | None, True),
        (-1.0, PositiveFloat | None, False),
    ],
)
def test_accepts(value, annotation, expected):
    assert _accepts(value, annotation) is expected


@register("objective", "validation_probe_objective")
class _Objective:
    def __init__(self, *, weight: float = 1.0):
        self.weight = weight


@register("transition_encoder", "validation_probe_encoder")
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
    with pytest.raises(
        RecipeError, match="registered transition_encoder, but this parameter takes a"
    ):
        check_bindings()


def test_good_bindings_pass():
    gin.parse_config(
        "validation_probe_algorithm.steps = 5\n"
        "validation_probe_algorithm.hidden = (8, 8)\n"
        "validation_probe_algorithm.objective = @validation_probe_objective\n"
        "validation_probe_objective.weight = 2\n"
    )
    check_bindings()


@register("algorithm", "validation_range_probe")
class _Ranged:
    def __init__(self, *, steps: PositiveInt = 1, lr: PositiveFloat = 1e-3, hidden: Widths = (2,)):
        check_arguments("validation_range_probe", _Ranged.__init__, locals())


@pytest.mark.parametrize(
    ("binding", "message"),
    [
        ("steps = 0", "validation_range_probe.steps = 0: expected int ≥ 1 (check the recipe"),
        ("lr = 1e999", "lr = inf: expected a finite float > 0"),
        ("hidden = (-4, 16)", "hidden = (-4, 16): expected a tuple of int ≥ 1"),
        ("hidden = (0,)", "hidden = (0,): expected a tuple of int ≥ 1"),
        ("steps = 'many'", "steps = 'many': expected int ≥ 1, got str"),
    ],
)
def test_a_value_out_of_range_names_binding_value_and_range(binding, message):
    gin.parse_config(f"validation_range_probe.{binding}")
    with pytest.raises(RecipeError, match=re.escape(message)):
        check_bindings()


def test_the_same_ranges_hold_for_a_call_from_python():
    _Ranged(steps=3, hidden=())
    with pytest.raises(RecipeError, match=re.escape("validation_range_probe.lr = -1.0: expected")):
        _Ranged(lr=-1.0)


def test_every_registered_default_is_in_its_range():
    """A constructor's own defaults satisfy the ranges its annotations declare."""
    import importlib
    import pkgutil

    import components
    from registry import entries
    from registry.validation import _annotations, _defaults

    for module in pkgutil.walk_packages(components.__path__, "components."):
        importlib.import_module(module.name)
    checked = 0
    for entry in entries():
        hints, defaults = _annotations(entry.obj), _defaults(entry.obj)
        for name, default in defaults.items():
            if name in hints and not isinstance(default, type) and not callable(default):
                assert _accepts(default, hints[name]) is not False, (entry.name, name, default)
                checked += 1
    assert checked > 100


@register("transition_encoder", "validation_scoped_probe")
class _Scoped:
    def __init__(self, *, width: int = 1):
        self.width = width


def test_an_unscoped_binding_that_every_scope_overrides_is_reported():
    from registry.validation import shadowed_bindings

    gin.parse_config(
        "validation_scoped_probe.width = 4\n"
        "a/validation_scoped_probe.width = 2\n"
        "b/validation_scoped_probe.width = 3\n"
    )
    for scope in ("a", "b"):
        with gin.config_scope(scope):
            get("transition_encoder", "validation_scoped_probe")()
    (message,) = shadowed_bindings()
    assert message.startswith("validation_scoped_probe.width is never used")
    assert "a/validation_scoped_probe.width" in message
    with gin.config_scope(None):
        get("transition_encoder", "validation_scoped_probe")()  # now the unscoped one is used
    assert shadowed_bindings() == []

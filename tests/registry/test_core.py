from __future__ import annotations

import pytest
import toy_components

import registry
from registry import (
    DuplicateComponentError,
    UnknownComponentError,
    UnknownKindError,
    catalog,
    get,
    names,
    register,
)


def test_register_and_lookup():
    assert get("transition_encoder", "toy_linear") is toy_components.ToyLinear
    assert get("algorithm", "toy_algorithm") is toy_components.ToyAlgorithm
    entry = registry.entry_of(toy_components.ToyLinear)
    assert (entry.kind, entry.name, entry.gin_name) == (
        "transition_encoder",
        "toy_linear",
        "transition_encoder.toy_linear",
    )


def test_name_defaults_to_dunder_name():
    @register("objective")
    def toy_default_named_loss(x: float = 1.0) -> float:
        """Doubles."""
        return 2 * x

    assert "toy_default_named_loss" in names("objective")


def test_duplicate_registration_names_first_module():
    with pytest.raises(
        DuplicateComponentError, match=r"already registered by module 'toy_components'"
    ):

        @register("transition_encoder", "toy_linear")
        class Again:
            pass


def test_unknown_name_suggests_closest():
    with pytest.raises(UnknownComponentError) as e:
        get("transition_encoder", "toy_linaer")
    message = str(e.value)
    assert "did you mean: toy_linear" in message
    assert "--plugin" in message and "import" in message


def test_unknown_kind_lists_kinds():
    with pytest.raises(
        UnknownKindError, match=r"unknown component kind 'encdoer'; expected one of: .*encoder"
    ):
        register("encdoer", "x")
    with pytest.raises(UnknownKindError):
        names("nope")


def test_names_wildcards_sorted():
    toys = names("transition_encoder", "toy_*")  # other tests' toys may be registered too
    assert toys == sorted(toys) and {"toy_linear", "toy_square"} <= set(toys)
    assert names("transition_encoder", "*square") == ["toy_square"]
    assert names("transition_encoder", "zzz*") == []


def test_catalog_lists_arguments_and_summary():
    rows = {(c.kind, c.name): c for c in catalog()}
    linear = rows[("transition_encoder", "toy_linear")]
    assert linear.module == "toy_components"
    assert linear.summary == "A linear map y = scale * x + shift."
    assert [(a.name, a.default) for a in linear.arguments] == [("scale", "1.0"), ("shift", "0.0")]
    algo = rows[("algorithm", "toy_algorithm")]
    assert ("run", "REQUIRED") in [(a.name, a.default) for a in algo.arguments]
    assert all(c.kind == "transition_encoder" for c in catalog("transition_encoder"))

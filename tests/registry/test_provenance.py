"""A run's configuration digest: the bindings that took effect, hashed (registry/provenance.py).
Two runs of one row share it; any binding that took effect changes it; a binding a shared file
declares may go unused, and that configured nothing, leaves it alone."""

from __future__ import annotations

import shutil

from hypothesis import given
from hypothesis import strategies as st

from components.experiment.build import build_algorithm
from registry import RunContext, compose, default_recipes_dir
from registry.provenance import (
    built_parts,
    config_digest,
    effective_bindings,
    recorded_config_check,
)


def built(recipe, data, run_dir, *, seed=0, bindings=(), recipes_dir=None):
    """Build a row at the tiny scale (no training); its effective bindings and parts."""
    comp = compose(
        recipe,
        env="sparse_point_robot",
        scale="tiny",
        seed=seed,
        device="cpu",
        bindings=[f"task_data.root = '{data}'", *bindings],
        recipes_dir=recipes_dir or default_recipes_dir(),
    )
    run_dir.mkdir(parents=True)
    context = RunContext(env=comp.experiment.env, scale="tiny", seed=seed, run_dir=run_dir)
    build_algorithm(comp.experiment, context)
    return effective_bindings(), built_parts()


names = st.text(alphabet="abcdefghij._/", min_size=1, max_size=12)
configs = st.dictionaries(names, st.text(min_size=0, max_size=6), min_size=1, max_size=8)


@given(configs, st.randoms())
def test_the_digest_ignores_order_and_sees_every_value(bindings, random):
    shuffled = list(bindings.items())
    random.shuffle(shuffled)
    assert config_digest(dict(shuffled)) == config_digest(bindings)
    for name, value in bindings.items():
        assert config_digest({**bindings, name: value + "x"}) != config_digest(bindings)
        rest = {k: v for k, v in bindings.items() if k != name}
        assert config_digest(rest) != config_digest(bindings)


def test_seeds_of_one_row_share_the_digest_and_a_binding_changes_it(tiny_data, tmp_path):
    first, parts = built("focal.gin", tiny_data, tmp_path / "s0")
    again, _ = built("focal.gin", tiny_data, tmp_path / "s3", seed=3)
    assert config_digest(first) == config_digest(again)
    assert "experiment.seed" not in first and "transition_encoder.mlp_encoder.hidden" in first
    assert parts["context_encoder"] == ["context_encoder"] and parts["objective"] == ["focal_dml"]
    wider, _ = built(
        "focal.gin", tiny_data, tmp_path / "w", bindings=("mlp_encoder.hidden = (8, 8)",)
    )
    assert config_digest(wider) != config_digest(first)
    assert {k for k in first if first[k] != wider.get(k)} == {
        "transition_encoder.mlp_encoder.hidden"
    }


def test_a_scale_binding_left_unused_does_not_change_the_digest(tiny_data, tmp_path):
    """The tiny scale binds the attention blocks' width for every row (may go unused): FOCAL,
    which builds no attention block, keeps its digest when it changes; FOCAL++ does not."""
    recipes = tmp_path / "recipes"
    shutil.copytree(default_recipes_dir(), recipes)
    scale = recipes / "scales" / "tiny.gin"
    scale.write_text(
        scale.read_text().replace("attention_blocks.width = 8", "attention_blocks.width = 4")
    )
    for recipe, changes in (("focal.gin", False), ("focalpp.gin", True)):
        shipped, _ = built(recipe, tiny_data, tmp_path / f"{recipe}-a")
        edited, parts = built(recipe, tiny_data, tmp_path / f"{recipe}-b", recipes_dir=recipes)
        assert (config_digest(shipped) != config_digest(edited)) is changes, recipe
    assert parts["context_encoder"] == ["attention_blocks"] and parts["block_gate"] == [
        "block_gate"
    ]


def test_a_dry_composition_is_checked_against_recorded_bindings(tiny_data, tmp_path):
    """A study's dry run (parsed, not built) agrees with the effective bindings recorded for its
    row, and names a binding that no longer does."""
    recorded, _ = built("focalpp.gin", tiny_data, tmp_path / "run")
    compose("focalpp.gin", env="sparse_point_robot", scale="tiny", seed=7, device="cpu",
            bindings=[f"task_data.root = '{tiny_data}'"])  # fmt: skip
    assert recorded_config_check(recorded) == []
    compose("focalpp.gin", env="sparse_point_robot", scale="tiny", seed=7, device="cpu",
            bindings=[f"task_data.root = '{tiny_data}'", "focal.key_momentum = 0.5"])  # fmt: skip
    assert recorded_config_check(recorded) == ["algorithm.focal.key_momentum: 0.5 v 0.9"]

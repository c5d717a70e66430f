"""Bindings that moved out of `focal` (registry/renames.py): old recipes, run records and flags
still mean what they meant, a note names the new binding, and a checkpoint written under the old
names still matches its configuration's fingerprint."""

from __future__ import annotations

import gin
import pytest

from components.outputs.checkpoint import check_fingerprint, config_fingerprint
from registry import RecipeError, gin_state, renames
from registry.catalog import bindable_arguments
from registry.parsing import parse_bindings, parse_file
from registry.renames import RENAMED, legacy_config_str
from tests.conftest import DATA, run_row

OLD = DATA / "recipes" / "old_names.gin"
# gin.config_str() of old_names.gin as the version before the renames composed it
OLD_CONFIG = (DATA / "recipes" / "old_names.config.txt").read_text()


@pytest.fixture
def fresh_notes(monkeypatch):
    monkeypatch.setattr(renames, "_noted", set())


def test_old_names_are_read_under_their_new_ones_with_a_note(fresh_notes, capsys):
    parse_file(OLD)
    assert gin.query_parameter("loop.steps") == 6
    assert gin.query_parameter("task_data.tag") == "tiny"
    assert gin.query_parameter("sizes.latent_dim") == 3
    assert gin.query_parameter("sizes.meta_batch") == 4
    assert gin.query_parameter("loop.meta_test").configurable.name == "meta_test"
    assert gin.query_parameter("focal.encoder_lr") == 0.01  # FOCAL's own: unchanged
    err = capsys.readouterr().err
    assert "`focal.steps` is now `loop.steps`" in err and str(OLD) in err
    assert "`focal.evaluator` is now `loop.meta_test`" in err
    assert err.count("`focal.steps`") == 1
    parse_bindings(["focal.steps = 7"], "--gin_param")  # a flag too; noted once per process
    assert gin.query_parameter("loop.steps") == 7
    assert "focal.steps" not in capsys.readouterr().err


def test_a_configuration_written_before_the_renames_keeps_its_fingerprint():
    parse_file(OLD)
    assert legacy_config_str() == OLD_CONFIG
    assert "loop.steps = 6" in gin.config_str()
    old_checkpoint = {"config_fingerprint": config_fingerprint(OLD_CONFIG)}
    check_fingerprint(old_checkpoint, config_fingerprint(), OLD)  # accepted
    parse_bindings(["loop.steps = 8"], "--gin_param")  # another configuration: refused
    with pytest.raises(Exception, match="different configuration"):
        check_fingerprint(old_checkpoint, config_fingerprint(), OLD)


def test_every_rename_names_an_argument_that_exists():
    import components

    components.load_builtin()
    for (old, argument), (new, new_argument) in RENAMED.items():
        assert new_argument in _arguments(new), (new, new_argument)
        assert argument not in _arguments(old), (old, argument)  # it did move


def _arguments(name: str) -> set[str]:
    return {a.name for a in bindable_arguments(gin_state.configurable(name).wrapped)}


def test_mbml_reads_no_focal_binding(tiny_data, tmp_path):
    """MBML composes the data, the loop and the sizes; it inherits nothing from FOCAL, so a
    `focal.*` binding in an MBML run configures nothing and is refused before training."""
    with pytest.raises(
        RecipeError, match=r"focal\.encoder_lr = 0\.5.*builds no focal \(its algorithm: @mbml\)"
    ):
        run_row(
            "mbml.gin",
            "sparse_point_robot",
            tiny_data,
            tmp_path / "run",
            bindings=("focal.encoder_lr = 0.5",),
            train=False,
        )
    _, algorithm = run_row(
        "mbml.gin",
        "sparse_point_robot",
        tiny_data,
        tmp_path / "run2",
        bindings=("mbml.encoder_lr = 0.5",),
        train=False,
    )
    assert algorithm.encoder_opt.param_groups[0]["lr"] == 0.5

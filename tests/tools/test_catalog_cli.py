from __future__ import annotations

from tests.conftest import DATA, cli


def catalog_cli(*args: str):
    return cli("catalog", *args)


def test_lists_plugin_components_with_arguments():
    r = catalog_cli("--plugin", str(DATA / "lab_plugin.py"))
    assert r.returncode == 0, r.stderr
    assert "lab_cube" in r.stdout and "gain=1.0" in r.stdout
    assert "Cubes its input, times a gain." in r.stdout


def test_kind_filter():
    r = catalog_cli("--kind", "algorithm", "--plugin", str(DATA / "lab_plugin.py"))
    assert r.returncode == 0, r.stderr
    assert "lab_cube" not in r.stdout


def test_a_kind_that_was_split_names_its_successors():
    r = catalog_cli("--kind", "encoder")
    assert r.returncode == 2
    assert "'transition_encoder'" in r.stderr and "'context_encoder'" in r.stderr


def test_unknown_kind_is_a_clear_error():
    r = catalog_cli("--kind", "encoders")
    assert r.returncode == 2
    assert "unknown component kind 'encoders'" in r.stderr and "encoder" in r.stderr
    assert "Traceback" not in r.stderr


def test_check_passes_the_documented_examples():
    r = catalog_cli(
        "--check",
        "examples/extending/residual_encoder.py",
        "--check",
        "examples/extending/variance_ratio.py",
    )
    assert r.returncode == 0, r.stderr
    assert "ok transition_encoder residual_mlp_encoder" in r.stdout
    assert "ok objective variance_ratio" in r.stdout


def test_check_names_a_broken_promise_and_the_fix():
    r = catalog_cli("--check", str(DATA / "fixed_width_encoder.py"))
    assert r.returncode == 2
    assert "broken transition_encoder fixed_width_encoder" in r.stderr
    assert "build every layer from `sizes`" in r.stderr and "Traceback" not in r.stderr


def test_check_of_a_file_that_registers_nothing(tmp_path):
    empty = tmp_path / "nothing_here.py"
    empty.write_text("x = 1\n")
    r = catalog_cli("--check", str(empty))
    assert r.returncode == 2 and "registers no component" in r.stderr

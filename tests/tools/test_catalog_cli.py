from __future__ import annotations

import pytest

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


def test_check_accepts_a_per_transition_head_and_names_what_a_run_would_trip_on(tmp_path):
    """A head used only by the per-transition embeddings gets its gradient from them (the
    docs allow it); a standardisation without an epsilon is caught on a context of all-zero
    rewards, before a run meets one."""
    plugin = tmp_path / "my_heads.py"
    plugin.write_text(
        "import torch\nfrom torch import nn\n\nfrom components.encoders.encoded import Encoded\n"
        "from registry import register\n\n\n"
        "@register('context_encoder', 'cli_headed_encoder')\nclass Headed(nn.Module):\n"
        "    def __init__(self, *, sizes, latent_dim):\n        super().__init__()\n"
        "        self.body = nn.Linear(sum(sizes), latent_dim)\n"
        "        self.head = nn.Linear(latent_dim, latent_dim)\n\n"
        "    def forward(self, context):\n        h = self.body(context)\n"
        "        return Encoded(self.head(h), torch.ones(h.shape[:2]), h.mean(1))\n\n\n"
        "@register('transition_encoder', 'cli_standardised')\nclass Standardised(nn.Module):\n"
        "    def __init__(self, *, sizes, latent_dim):\n        super().__init__()\n"
        "        self.net = nn.Linear(sum(sizes), latent_dim)\n\n"
        "    def forward(self, x):\n"
        "        return self.net((x - x.mean(1, keepdim=True)) / x.std(1, keepdim=True))\n"
    )
    r = catalog_cli("--check", str(plugin))
    assert r.returncode == 2
    assert "ok context_encoder cli_headed_encoder: honours its contract" in r.stdout
    assert "broken transition_encoder cli_standardised" in r.stderr
    assert "on a context whose rewards are all zero" in r.stderr and "Traceback" not in r.stderr


def test_a_runs_arguments_are_printed_grouped_each_with_what_it_is():
    """`--run` prints the four configurables a run reads, every argument documented."""
    r = cli("catalog", "--run", "mbml")
    assert r.returncode == 0, r.stderr
    text = " ".join(r.stdout.split())
    groups = [
        ("task_data", "task_data"),
        ("loop", "loop"),
        ("sizes", "sizes"),
        ("algorithm", "mbml"),
    ]
    starts = [text.index(f"{kind} {name}:") for kind, name in groups]
    assert starts == sorted(starts)
    assert "loop.meta_test" in text and "sizes.latent_dim" in text and "mbml.teacher_steps" in text
    assert "(handed by the experiment)" in text


@pytest.mark.parametrize("name", ["task_data", "loop", "sizes", "focal", "mbml"])
def test_every_argument_of_a_runs_configurables_is_documented(name):
    import components
    from registry import entries
    from registry.catalog import describe

    components.load_builtin()
    (entry,) = [e for e in entries() if e.name == name]
    undocumented = [a.name for a in describe(entry).arguments if not a.doc]
    assert undocumented == [], f"{name}'s docstring says nothing of {undocumented}"

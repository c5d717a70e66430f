"""The README and the results page answer in a minute: short, their cells short and plain, the
README's Python example runs as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.conftest import ROOT

README = (ROOT / "README.md").read_text()


def test_the_readme_is_short():
    lines = README.splitlines()
    assert len(lines) <= 150
    assert max(len(line) for line in lines) <= 300


def test_every_status_cell_says_working_partial_or_missing_in_few_words():
    status = README.split("## Status", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in status.splitlines() if line.startswith("| ")][1:]  # no header
    cells = [row.strip("|").rsplit(" | ", 1)[1].strip() for row in rows]
    assert len(cells) >= 10
    for cell in cells:
        assert re.match(r"(working|partial|missing)\b", cell), cell
        assert len(cell) <= 120, cell


def test_the_python_example_runs_as_written(tiny_data, tmp_path):
    example = README.split("## In Python", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    done = subprocess.run(
        [sys.executable, "-c", example],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "FOCALPP_DATA": str(tiny_data), "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "runs" / "example" / "eval.json").is_file()
    assert "test" in done.stdout.strip().splitlines()[-1]  # the meta-test's headline


def test_the_results_page_is_an_index():
    page = (ROOT / "docs" / "RESULTS.md").read_text()
    assert len(page.splitlines()) <= 250
    assert max(len(line) for line in page.splitlines()) <= 300
    table = page.split("<!-- verdicts: ", 1)[1].split("<!-- /verdicts -->", 1)[0]
    rows = [row.strip("|").split(" | ") for row in table.splitlines()[3:]]
    assert len(rows) >= 10 and max(len(cell.strip()) for row in rows for cell in row) <= 200


def test_the_readme_quotes_the_main_commands_record():
    """The line the README says its main command prints everywhere is the one its record
    (results/main_command: that command, seed 0, portable numerics, a clean commit) printed."""
    import json

    lines = (ROOT / "results" / "main_command" / "runs.jsonl").read_text().splitlines()
    (run,) = [json.loads(x) for x in lines]
    assert (run["recipe"], run["env"], run["scale"], run["seed"]) == (
        "focalpp_seqwise.gin",
        "sparse_point_robot",
        "cpu",
        0,
    )
    assert run["numerics"]["mode"] == "portable" and run["clean"] is True
    result = run["eval"]
    line = (
        f"test sparse return {result['test_return_mean']:.2f} ± {result['test_return_std']:.2f}, "
        f"paper-comparable ({result['paper_formula']}) {result['paper_return_mean']:.2f} ± "
        f"{result['paper_return_std']:.2f}"
    )
    text = " ".join(README.split())
    assert line in text, line
    assert "python tools/run.py --recipe recipes/focalpp_seqwise.gin --numerics portable" in README
    # the prose's other figures: its time (train_seconds holds the meta-tests) and test tasks
    assert f"about {round(result['train_seconds'] / 60)} minutes on 2 cores" in text
    assert text.count(f"over the {len(result['per_task_return'])} test tasks") == 2


def test_the_readme_quotes_the_numerics_benchmarks_cost():
    """The status table's "a step A-B× a free one" is the range of the step ratios of the latest
    numerics benchmarks of today's products (OpenBLAS) on each vendor's CPU, rounded to one
    decimal."""
    import json

    ratios = []
    for name in ("bench-numerics-amd-2026-12-07.json", "bench-numerics-intel-2026-12-08.json"):
        bench = ROOT / "results" / "performance" / "numerics" / name
        rows = json.loads(bench.read_text())["sections"]["numerics"]
        ratios += [row["portable_vs_free"] for row in rows if row["config"].startswith("step ")]
    assert len(ratios) >= 4
    (quoted,) = re.findall(r"a step (\d+\.\d-\d+\.\d)× a free one", README)
    assert f"{min(ratios):.1f}-{max(ratios):.1f}" == quoted, ratios

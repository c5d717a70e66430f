"""Nothing changes in what runs unless a change says so: the tiny-scale metrics of every Table 1
row, a baseline (Batch PEARL), a successor (CSRO) and three FOCAL++ seeds trained together equal
the values recorded in tests/data/tiny_runs.json, bit for bit, on every x86 CPU: the runs train
with portable numerics (fp32, one thread, the kernels every x86 CPU shares: components/numerics.py,
docs/NUMERICS.md) on the tiny dataset those numerics build, so no tolerance by CPU kind is needed
or allowed. At this size even a 2% change of the target networks' Polyak rate moves the losses by
only 1e-7 relative, so nothing looser could tell a changed computation from none. The file's
`recorded_at` names the commit each row was recorded at, `machine` the CPU that recorded it,
`checked_on` the other CPUs whose suite found the same values (docs/NUMERICS.md, "Runs across
vendors").

A change that alters a row's arithmetic on purpose records that row again, after showing at a
real scale that its results did not move (as the joint-head attention did:
results/performance/token_attention, docs/PERFORMANCE.md):

    python -m tests.e2e.test_unchanged --record ROW [ROW ...] --commit SHORT_SHA"""

from __future__ import annotations

import json

import pytest

from tests.conftest import ROOT, cli  # first: it sets portable numerics before numpy loads

RECORDED_FILE = ROOT / "tests" / "data" / "tiny_runs.json"
RECORDED = json.loads(RECORDED_FILE.read_text())
ROWS = sorted({name.split("/")[0] for name in RECORDED["runs"]})
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def numbers(record: dict) -> dict[str, float]:
    skip = ("train_seconds", "meta_test_seconds")
    return {
        k: v
        for k, v in record.items()
        if isinstance(v, int | float) and not isinstance(v, bool) and k not in skip
    }


def close(found: dict, expected: dict, where: str) -> None:
    """Equal, bit for bit (NaN equal to NaN)."""
    import numpy as np

    assert found.keys() == expected.keys(), f"{where}: {sorted(found.keys() ^ expected.keys())}"
    for key, value in expected.items():
        np.testing.assert_array_equal(found[key], value, err_msg=f"{where} {key}")


def tiny_run(row: str, data_root, out) -> dict[str, dict]:
    """`row` trained at the tiny scale as recorded: {run: its metrics, eval, per-task returns}."""
    seeds = row.startswith("focalpp_seeds_")
    recipe = "focalpp" if seeds else row
    args = [
        *("--recipe", f"recipes/{recipe}.gin", "--env", "sparse_point_robot", "--scale", "tiny"),
        *("--gin_param", f"task_data.root = '{data_root}'"),
        *("--gin_param", "loop.precision = 'fp32'", "--numerics", "portable"),
        *(("--seeds", "0-2") if seeds else ()),
        *("--out", str(out)),
    ]
    r = cli("run", *args, env=ONE_THREAD)
    assert r.returncode == 0, r.stderr
    names = [f"{row}/s{k}" for k in range(3)] if seeds else [row]
    runs = {}
    for name in names:
        run_dir = out / f"focalpp-sparse_point_robot-{name[-2:]}" if seeds else out
        lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
        evaluation = json.loads((run_dir / "eval.json").read_text())
        runs[name] = {
            "metrics": lines,
            "eval": numbers(evaluation),
            "per_task_return": evaluation["per_task_return"],
        }
    return runs


@pytest.mark.parametrize("row", ROWS)
def test_a_tiny_run_gives_the_numbers_it_gave_when_recorded(row, tiny_data, tmp_path):
    runs = tiny_run(row, tiny_data, tmp_path / "run")
    expected = {k: v for k, v in RECORDED["runs"].items() if k.split("/")[0] == row}
    assert runs.keys() == expected.keys()
    for name, values in expected.items():
        lines = runs[name]["metrics"]
        assert [(x["step"], x["kind"]) for x in lines] == [
            (x["step"], x["kind"]) for x in values["metrics"]
        ]
        for found, record in zip(lines, values["metrics"], strict=True):
            where = f"{name} step {record['step']} {record['kind']}"
            close(numbers(found), numbers(record), where)
        close(runs[name]["eval"], values["eval"], f"{name} eval.json")
        close(runs[name]["per_task_return"], values["per_task_return"], f"{name} per task")


def record(rows: list[str], commit: str) -> None:
    """Train `rows` again and write their values into the recorded file."""
    import tempfile
    from pathlib import Path

    import components.machine as machine

    unknown = sorted(set(rows) - set(ROWS))
    if unknown:
        raise SystemExit(f"no recorded row {unknown}; recorded rows: {', '.join(ROWS)}")
    with tempfile.TemporaryDirectory() as tmp:
        for row in rows:
            RECORDED["runs"].update(tiny_run(row, Path(tmp) / "data", Path(tmp) / row))
            RECORDED["recorded_at"][row] = commit
    RECORDED["machine"] = {"cpu": machine.cpu(), "numerics": "portable"}
    RECORDED["checked_on"] = []  # values recorded again: no other CPU has checked them yet
    staged = RECORDED_FILE.with_suffix(".tmp")
    staged.write_text(json.dumps(RECORDED, indent=1) + "\n")
    staged.replace(RECORDED_FILE)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", nargs="+", required=True, metavar="ROW")
    parser.add_argument("--commit", required=True, help="the commit whose arithmetic they record")
    options = parser.parse_args()
    record(options.record, options.commit)

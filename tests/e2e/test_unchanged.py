"""Nothing changes in what runs: the tiny-scale metrics of every Table 1 row, a baseline (Batch
PEARL), a successor (CSRO) and three FOCAL++ seeds trained together equal the values recorded
before the library's redesign (tests/data/tiny_runs_before_redesign.json: commit bcefccb, fp32,
one thread; its `recorded` field names the machine).

On a machine like the one that recorded them (the same CPU kind, PyTorch's CPU kernels and
version: the file's `machine`) every number must be equal, bit for bit: at this size even a 2%
change of the target networks' Polyak rate moves the losses by only 1e-7 relative, so nothing
looser can tell a changed computation from none. Another CPU rounds differently (its SIMD width
changes the order of float sums), so there the test allows a relative 1e-4 and catches only
larger changes (another update order, another learning rate, another draw)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.conftest import ROOT, cli

RECORDED = json.loads((ROOT / "tests" / "data" / "tiny_runs_before_redesign.json").read_text())
ROWS = sorted({name.split("/")[0] for name in RECORDED["runs"]})
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def numbers(record: dict) -> dict[str, float]:
    skip = ("train_seconds", "meta_test_seconds")
    return {
        k: v
        for k, v in record.items()
        if isinstance(v, int | float) and not isinstance(v, bool) and k not in skip
    }


def recording_machine() -> bool:
    import components.machine as machine

    here = machine.describe()
    ours = {"cpu": machine.cpu(), "torch_cpu_capability": here["torch_cpu_capability"],
            "torch": here["torch"]}  # fmt: skip
    return ours == RECORDED["machine"]


RTOL = 0.0 if recording_machine() else 1e-4


def close(found: dict, expected: dict, where: str) -> None:
    assert found.keys() == expected.keys(), f"{where}: {sorted(found.keys() ^ expected.keys())}"
    for key, value in expected.items():
        np.testing.assert_allclose(
            found[key], value, rtol=RTOL, atol=RTOL and 1e-6, err_msg=f"{where} {key}"
        )


@pytest.mark.parametrize("row", ROWS)
def test_a_tiny_run_gives_the_numbers_it_gave_before_the_redesign(row, tiny_data, tmp_path):
    seeds = row.startswith("focalpp_seeds_")
    recipe = "focalpp" if seeds else row
    args = [
        *("--recipe", f"recipes/{recipe}.gin", "--env", "sparse_point_robot", "--scale", "tiny"),
        *("--gin_param", f"task_data.root = '{tiny_data}'"),
        *("--gin_param", "loop.precision = 'fp32'"),
        *(("--seeds", "0-2") if seeds else ()),
        *("--out", str(tmp_path / "run")),
    ]
    r = cli("run", *args, env=ONE_THREAD)
    assert r.returncode == 0, r.stderr
    expected = {k: v for k, v in RECORDED["runs"].items() if k.split("/")[0] == row}
    for name, values in expected.items():
        run_dir = tmp_path / "run" / f"focalpp-sparse_point_robot-{name[-2:]}" if seeds else (
            tmp_path / "run")  # fmt: skip
        lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
        assert [(x["step"], x["kind"]) for x in lines] == [
            (x["step"], x["kind"]) for x in values["metrics"]
        ]
        for found, record in zip(lines, values["metrics"], strict=True):
            where = f"{name} step {record['step']} {record['kind']}"
            close(numbers(found), numbers(record), where)
        evaluation = json.loads((run_dir / "eval.json").read_text())
        close(numbers(evaluation), values["eval"], f"{name} eval.json")
        close(evaluation["per_task_return"], values["per_task_return"], f"{name} per task")

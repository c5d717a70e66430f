"""`loop.precision = 'auto'`: the rule that picks bf16, its cache, and a trial that leaves the
run exactly as it was."""

from __future__ import annotations

import json
import threading

import pytest
import torch

from components.algorithms.precision import PrecisionChoice, Trial, choose, interleaved, measured
from components.outputs.checkpoint import load_checkpoint
from tests.conftest import cli, run_row

CPU = torch.device("cpu")


def trial(ms: float, **losses: float) -> Trial:
    return Trial(ms, {f"loss_{k}": v for k, v in losses.items()})


def test_bf16_only_where_it_is_faster_and_its_losses_agree():
    fp32 = trial(100.0, q=10.0, dml=0.5)
    assert measured(fp32, trial(50.0, q=10.2, dml=0.51)).precision == "bf16"
    slower = measured(fp32, trial(400.0, q=10.0, dml=0.5))
    assert (slower.precision, slower.bf16_speedup) == ("fp32", 0.25)
    assert measured(fp32, trial(95.0, q=10.0, dml=0.5)).precision == "fp32"  # within noise
    disagrees = measured(fp32, trial(50.0, q=12.0, dml=0.5))
    assert disagrees.precision == "fp32" and "differ by 20.0%" in disagrees.reason
    diverged = measured(fp32, trial(50.0, q=float("nan"), dml=0.5))
    assert diverged.precision == "fp32" and diverged.loss_gap == float("inf")


def test_auto_takes_fp32_without_timing_on_a_cpu_without_bf16_units(tmp_path):
    def never(precision):
        raise AssertionError("timed although the CPU has no bf16 units")

    choice = choose("auto", CPU, "size", never, cache=tmp_path / "p.json", bf16_units=False)
    assert choice.precision == "fp32" and "no bf16 units" in choice.reason
    assert choose("bf16", CPU, "size", never, bf16_units=False).precision == "bf16"  # as asked


def test_a_size_is_timed_once_per_machine(tmp_path):
    calls = []

    def timed(precision):
        calls.append(precision)
        return trial(10.0 if precision == "bf16" else 30.0, q=1.0)

    cache = tmp_path / "precision.json"
    first = choose("auto", CPU, "T16 E512", timed, cache=cache, bf16_units=True)
    again = choose("auto", CPU, "T16 E512", timed, cache=cache, bf16_units=True)
    other = choose("auto", CPU, "T4 E64", timed, cache=cache, bf16_units=True)
    assert calls == ["fp32", "bf16"] * 4  # twice each, in turn; the second size again
    assert first.precision == again.precision == other.precision == "bf16"
    assert again.bf16_speedup == 3.0 and again.reason.endswith("cached")
    assert len(json.loads(cache.read_text())) == 2


def test_runs_of_one_size_starting_together_measure_once(tmp_path):
    """A second run that asks while the first is timing waits for it and takes its choice
    (the two seed groups of a study would otherwise time each other and may disagree)."""
    cache, timing, first = tmp_path / "precision.json", threading.Event(), []
    calls = []

    def slow_bf16(precision):  # the first run: bf16 faster
        calls.append(("first", precision))
        timing.set()
        return trial(10.0 if precision == "bf16" else 30.0, q=1.0)

    def fast_fp32(precision):  # the second, had it timed: fp32 faster
        calls.append(("second", precision))
        return trial(30.0 if precision == "bf16" else 10.0, q=1.0)

    def run_first():
        first.append(choose("auto", CPU, "T4 E64", slow_bf16, cache=cache, bf16_units=True))

    thread = threading.Thread(target=run_first)
    thread.start()
    timing.wait()  # the first run holds the cache's lock from here until it has written
    second = choose("auto", CPU, "T4 E64", fast_fp32, cache=cache, bf16_units=True)
    thread.join()
    assert {who for who, _ in calls} == {"first"}
    assert first[0].precision == second.precision == "bf16" and second.reason.endswith("cached")


def test_a_trial_leaves_the_run_exactly_as_it_was(tiny_data, tmp_path):
    """Timing both precisions from the trainer's state, then training, gives the first step
    of a trainer that was never timed, to the bit."""
    bindings = ("loop.precision = 'fp32'",)
    row = ("focalpp.gin", "sparse_point_robot", tiny_data)
    _, plain = run_row(*row, tmp_path / "a", train=False)
    _, timed = run_row(*row, tmp_path / "b", bindings=bindings, train=False)
    torch.manual_seed(7)  # the global generator both trainers draw from (dropout, policy)
    expected = {k: float(v) for k, v in plain.train_step().items()}
    torch.manual_seed(7)
    bf16 = timed.loop.step_precision.trial(timed, "bf16", 0, seconds=0.0)
    fp32 = timed.loop.step_precision.trial(timed, "fp32", 0, seconds=0.0)
    assert bf16.losses.keys() == fp32.losses.keys() and bf16.losses != fp32.losses
    assert {k: float(v) for k, v in timed.train_step().items()} == expected
    assert {k: v for k, v in expected.items() if k.startswith("loss_")} == fp32.losses


def test_a_run_prints_and_records_its_precision(tiny_data, tmp_path):
    run_dir = tmp_path / "run"
    flags = f"--recipe focal.gin --scale tiny --out {run_dir}".split()
    data = f"task_data.root = '{tiny_data}'"
    done = cli("run", *flags, "--gin_param", data, "--gin_param", "loop.precision = 'auto'")
    assert done.returncode == 0, done.stderr
    recorded = json.loads((run_dir / "run.json").read_text())["precision"]
    assert recorded["requested"] == "auto" and recorded["precision"] in ("fp32", "bf16")
    assert f"precision: {recorded['precision']} (" in done.stdout
    assert load_checkpoint(run_dir)["precision"] == recorded


def test_a_resumed_run_keeps_the_precision_its_checkpoint_holds(tiny_data, tmp_path):
    _, first = run_row("focal.gin", "sparse_point_robot", tiny_data, tmp_path / "a", train=False)
    first.loop.step_precision.choice = PrecisionChoice(
        "bf16", "auto", "measured: bf16 2.0 ms vs fp32 4.0 ms"
    )
    _, resumed = run_row("focal.gin", "sparse_point_robot", tiny_data, tmp_path / "b", train=False)
    resumed.load_state(first.state())
    assert resumed.loop.step_precision.choice == first.loop.step_precision.choice
    with resumed.autocast():
        assert torch.is_autocast_enabled("cpu")
        assert torch.get_autocast_dtype("cpu") == torch.bfloat16


@pytest.mark.parametrize("value", ["fp8", "BF16"])
def test_an_unknown_precision_names_the_choices(tiny_data, tmp_path, value):
    from registry import RecipeError

    with pytest.raises(RecipeError, match=r"expected one of \['auto', 'bf16', 'fp32'\]"):
        run_row(
            "focal.gin",
            "sparse_point_robot",
            tiny_data,
            tmp_path / "r",
            bindings=(f"loop.precision = '{value}'",),
            train=False,
        )


def test_a_burst_of_other_work_during_one_trial_does_not_decide():
    """Trials in turn, and each precision's fastest: a slowed trial of bf16 (another job
    starting) leaves the choice to the unslowed ones."""
    times = iter([30.0, 90.0, 31.0, 10.0])  # fp32, bf16 (slowed), fp32, bf16
    order = []

    def timed(precision):
        order.append(precision)
        return trial(next(times), q=1.0 if precision == "fp32" else 1.01)

    fp32, bf16 = interleaved(timed)
    assert order == ["fp32", "bf16", "fp32", "bf16"]
    assert (fp32.ms_per_step, bf16.ms_per_step) == (30.0, 10.0)
    assert fp32.losses == {"loss_q": 1.0} and bf16.losses == {"loss_q": 1.01}
    assert measured(fp32, bf16).precision == "bf16"

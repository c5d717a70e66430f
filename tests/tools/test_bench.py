from __future__ import annotations

import json

import pytest
import torch

from tests.conftest import cli


def test_quick_bench_writes_well_formed_json(tmp_path):
    out = tmp_path / "bench.json"
    r = cli("bench", "--quick", "--json", str(out), "--figures", str(tmp_path / "figures"))
    assert r.returncode == 0, r.stderr
    report = json.loads(out.read_text())
    assert report["quick"] is True and report["machine"]["cpus"] >= 1
    assert report["machine"]["cpu"] and report["machine"]["vector_units"]
    assert report["machine"]["torch_threads"] >= 1 and "bf16_units" in report["machine"]
    rows = {row["family"]: row for row in report["sections"]["env"]}
    assert len(rows) >= 6
    costs = {row["config"]: row for row in report["sections"]["numerics"]}
    updates = [name for name in costs if "SAC update" in name]
    assert len(updates) == 2  # one task's own SAC, and the conditioned one of many tasks
    for row in [f"step {row}, fp32, cpu scale" for row in ("focal", "focalpp")] + updates:
        step = costs[row]
        assert step["portable_ms"] > 0 and step["free_ms"] > 0
        assert step["portable_vs_free"] == pytest.approx(step["portable_ms"] / step["free_ms"])
        assert step["banded_ms"] > 0 and step["product_threads"] >= 1
        assert step["banded_vs_portable"] == pytest.approx(step["banded_ms"] / step["portable_ms"])
    builds = [row for name, row in costs.items() if name.startswith("build: ")]
    assert len(builds) == 4 and all(row["seconds"] > 0 for row in builds)
    assert costs["build: free, one piece"]["vs_free_build"] == 1.0
    for row in rows.values():
        assert row["single_steps_per_s"] > 0 and row["batched_sync_steps_per_s"] > 0
    assert "batched_async_steps_per_s" in rows["walker_params"]
    assert not any(name.startswith("ml1") for name in rows)  # quick: no Meta-World
    focal, focalpp = report["sections"]["rows"]  # quick: the two rows at the tiny scale
    assert (focal["config"], focalpp["config"]) == ("focal", "focalpp")
    assert focal["vs_focal"] == 1.0 and focalpp["vs_focal"] > 0 and focalpp["ms_per_step"] > 0
    assert focalpp["precision"] == "fp32" and len(focalpp["ms_per_step_rounds"]) == 2
    profiled = report["sections"]["profile"]  # quick: the tiny scale's two rows, by part
    parts = {(r["config"], r["part"]) for r in profiled}
    for part in ("context sampling", "query encoder", "critic", "actor", "optimiser steps"):
        assert ("focal", part) in parts and ("focalpp", part) in parts, part
    assert ("focalpp", "key encoder") in parts and ("focal", "key encoder") not in parts
    assert all(r["ms"] >= 0 and r["ops"] >= 0 for r in profiled)
    (collect,) = report["sections"]["collect"]
    assert collect["tasks"] == 100 and collect["env_steps_per_task"] == 60
    assert collect["batched_seconds"] > 0 and len(collect["sequential_seconds_measured"]) == 2
    assert {"random_mean_sparse_return", "expert_mean_return"} <= set(collect)
    assert collect["update_ms_one_task"] > 0 and collect["update_ms_all_tasks"] > 0
    # 100 tasks' networks do 100 times one task's matrix products: 0.9 GFLOP at the 64-64 sizes
    assert 0.5 < collect["update_gflop_all_tasks"] < 1.5

    train = report["sections"]["train"]
    assert {"fp32_gflops", "bf16_gflops"} <= set(train[0]) and train[0]["fp32_gflops"] > 0
    steps = {(row["config"], row["precision"]): row for row in train[1:]}
    expected = {
        "(a) focal, reference sizes",
        "(b) focal, reference sizes, equal work",
        "(c) mbml student",
        "(d) focalpp, paper sizes",
    }
    assert expected <= {config for config, _ in steps}
    assert all(row["ms_per_step"] > 0 for row in steps.values())
    counted = steps[("(a) focal, reference sizes", "fp32")]
    assert counted["gflop_per_step"] > 0 and counted["fraction_of_matmul_peak"] > 0
    # ratios only against the equal-work configuration of the same run
    equal = steps[("(b) focal, reference sizes, equal work", "fp32")]
    assert equal["speedup_vs_equal_work"] == 1.0
    assert counted["speedup_vs_equal_work"] == equal["ms_per_step"] / counted["ms_per_step"]
    assert "speedup_vs_equal_work" not in steps[("(d) focalpp, paper sizes", "fp32")]
    encoder = {row["pass"]: row for row in report["sections"]["encoder"]}
    assert len(encoder) == 4 and all(r["ms"] > 0 and r["gflop"] > 0 for r in encoder.values())
    precision = report["sections"]["precision"]
    assert len(precision) == 4 and all(r["fp32_ms"] > 0 and r["bf16_ms"] > 0 for r in precision)
    assert all(r["auto"].split()[0] in ("fp32", "bf16") for r in precision)
    assert {row["config"] for row in report["sections"]["eval"]} == {"reference sizes", "cpu scale"}
    assert all(row["seconds"] > 0 for row in report["sections"]["eval"])
    # the simulators' share is measured inside the same meta-test: a part of its time
    assert all(0 < row["simulator_seconds"] < row["seconds"] for row in report["sections"]["eval"])
    assert all(row["peak_rss_gib"] > 0.1 for row in report["sections"]["memory"])
    scaling = report["sections"]["scaling"]
    assert {row["binding"] for row in scaling} == {
        "sizes.meta_batch",
        "sizes.context_batch",
        "sizes.latent_dim",
    }
    assert {p.name for p in (tmp_path / "figures").iterdir()} == {
        "scaling-T.png",
        "scaling-E.png",
        "scaling-Z.png",
        "profile-parts.png",
    }


def test_quick_quality_times_both_focalpp_variants_on_the_paper_comparable_metric(tmp_path):
    out = tmp_path / "bench.json"
    r = cli("bench", "--quick", "--sections", "quality", "--json", str(out))
    assert r.returncode == 0, r.stderr
    rows = json.loads(out.read_text())["sections"]["quality"]
    assert [row["variant"] for row in rows] == ["focalpp (the paper's row)", "focalpp, coupled"]
    for row in rows:
        assert row["target"] == 12.96 and row["metric"] == "paper_return_mean"
        assert row["best_step"] >= 1 and row["wall_seconds"] > 0
        # a tiny run cannot reach the paper's return: it runs to its end
        assert row["reached_seconds"] is None and row["best_return"] < 12.96


@pytest.mark.skipif(torch.cuda.is_available(), reason="the refusal is for machines without CUDA")
def test_the_gpu_section_refuses_clearly_without_a_gpu(tmp_path):
    out = tmp_path / "bench.json"
    r = cli("bench", "--quick", "--sections", "gpu", "--json", str(out))
    assert r.returncode == 2
    assert "gpu section" in r.stderr and "CUDA GPU" in r.stderr and "Traceback" not in r.stderr
    assert not out.exists()  # no report of a section that did not run


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_quick_gpu_section_times_both_steps_in_three_precisions(tmp_path):
    out = tmp_path / "bench.json"
    r = cli("bench", "--quick", "--sections", "gpu", "--json", str(out))
    assert r.returncode == 0, r.stderr
    peak, *rows = json.loads(out.read_text())["sections"]["gpu"]
    assert set(peak["gflops"]) == {"fp32", "tf32", "bf16"}
    assert [(row["precision"]) for row in rows] == ["fp32", "tf32", "bf16"] * 2
    for row in rows:
        assert row["ms_per_step"] > 0 and row["peak_gpu_gib"] > 0 and row["gflop_per_step"] > 0

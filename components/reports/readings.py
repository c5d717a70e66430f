"""Numbers a report reads off one run (or one group of runs), shared by several sections."""

from __future__ import annotations

import re

import numpy as np

from components.reports.paper import TABLE1_DENSE

OOD_SOURCE = "other_policy"  # the context grid's out-of-distribution cell


def comparable(run: dict) -> float | None:
    """The return the paper's Table 1 number for this run's column is compared with: the
    paper-comparable sparse return on the point robots (eval.json's `paper_return_mean`), the
    dense return where the paper reported dense returns (MuJoCo), the test return otherwise;
    None for a sparse run recorded before paper-comparable returns existed."""
    record = run["eval"]
    if run["env"] in TABLE1_DENSE:
        return record.get("dense_return_mean")
    if "sparse_return_mean" not in record:
        return record["test_return_mean"]
    return record.get("paper_return_mean")


def comparable_key(env: str, run: dict) -> str:
    """The metrics.jsonl key of `comparable` at each meta-test."""
    if env in TABLE1_DENSE:
        return "dense_return_mean"
    return "paper_return_mean" if "sparse_return_mean" in run["eval"] else "test_return_mean"


def last_meta_tests(run: dict, count: int = 3, key: str | None = None) -> float | None:
    """The mean of the run's last `count` meta-tests' `key` (default: the paper-comparable
    return; fewer if it recorded fewer): a reading less exposed than the final one to the swing
    between meta-tests. Needs the run's metrics log (`run["metrics"]`)."""
    key = key or comparable_key(run["env"], run)
    values = [r[key] for r in run.get("metrics", []) if r.get("kind") == "eval" and key in r]
    return float(np.mean(values[-count:])) if values else None


def ceiling_of(group: list[dict], formula: str) -> float | None:
    """The test split's ceiling under `formula` ('paper', 'sparse', 'dense'), if every run of
    the group recorded the same one."""
    found = [r["eval"].get("ceiling", {}).get(formula) for r in group]
    return found[0] if found and None not in found and len(set(found)) == 1 else None


def variance(run: dict) -> float | None:
    return run["analysis"].get("embedding_variance", {}).get("embedding_variance")


def finite_ratio(task_vectors: dict) -> float | None:
    """A task_vectors analysis' within/between ratio; None where the vectors do not differ
    between tasks (a fixed z; records written before the analysis said so hold infinity)."""
    ratio = task_vectors.get("variance_ratio")
    return ratio if ratio is not None and np.isfinite(ratio) else None


def variance_ratio(run: dict) -> float | None:
    return finite_ratio(run["analysis"].get("task_vectors", {}))


def goal_radius(group: list[dict]) -> float | None:
    """The goal radius the runs bound (a variance-sparsity level), or None."""
    for binding in group[0].get("bindings", []):
        found = re.match(r"\s*[\w.]*goal_radius\s*=\s*(-?[\d.]+)\s*$", binding)
        if found:
            return float(found.group(1))
    return None


def sparsity(group: list[dict]) -> float | None:
    found = [r["analysis"].get("embedding_variance", {}).get("sparsity") for r in group]
    return float(np.mean(found)) if found and None not in found else None


def last_three(run: dict) -> float | None:
    """The mean of the run's last three meta-tests (paper-comparable), for runs that made at
    least three: the reading less exposed to the swing between meta-tests."""
    meta_tests = [r for r in run.get("metrics", []) if r.get("kind") == "eval"]
    return last_meta_tests(run) if len(meta_tests) >= 3 else None


def normalised(run: dict) -> float | None:
    """A Meta-World run's normalised score (None elsewhere): the mean over its last meta-tests
    where it was scored so (`loop.score_over`, the published Meta-World score), else its
    final meta-test's."""
    last = run["eval"].get("last_meta_tests", {})
    return last.get("normalised_score", run["eval"].get("normalised_score"))


def attention_auc(run: dict) -> float | None:
    """Figure 4c's measure: how well a run's batch-wise gate ranks rewarded transitions above
    unrewarded ones (the `attention_auc` analysis); None where the encoder has no gate."""
    found = run["analysis"].get("attention_auc", {})
    return found.get("attention_auc") if found.get("attention_gated") else None


def success(run: dict) -> float | None:
    """A Meta-World run's success rate (None elsewhere), read as its normalised score is: over
    its last meta-tests where it was scored so, else its final meta-test's."""
    last = run["eval"].get("last_meta_tests", {})
    return last.get("success_rate", run["eval"].get("success_rate"))


def shift_return(cell: dict) -> float:
    """The return Table 3 compares: paper-comparable where the run scored it, else its own."""
    return cell.get("paper_mean", cell["mean"])


def dense_return(cell: dict) -> float | None:
    """A grid cell's dense return: recorded beside the headline, or the headline itself where
    the family has no sparse return (no paper-comparable one either); None for older records
    of sparse families."""
    if "dense_mean" in cell:
        return cell["dense_mean"]
    return None if "paper_mean" in cell else cell["mean"]


def grid_cells(group: list[dict], source: str, measure) -> list[float]:
    """Each seed's test return with the context from `source` (the context grid)."""
    return [
        measure(run["analysis"]["context_grid"]["cells"]["test"][source])
        for run in group
        if source in run["analysis"].get("context_grid", {}).get("cells", {}).get("test", {})
    ]


def grid_drops(group: list[dict], source: str = OOD_SOURCE, measure=shift_return) -> list:
    """Each seed's loss of test return when the context comes from `source` rather than the
    task's own data (the context grid; negative is a gain), by `measure` of a cell (None
    where a seed's cells lack it)."""
    drops = []
    for run in group:
        cells = run["analysis"].get("context_grid", {}).get("cells", {}).get("test", {})
        if "own" in cells and source in cells:
            own, other = measure(cells["own"]), measure(cells[source])
            drops.append(None if own is None or other is None else own - other)
    return drops


def quality_drops(group: list[dict]) -> dict[tuple[str, str], list[float]]:
    """Per (train quality, test context): each seed's loss of return against a context of the
    quality it trained on (Table 3's parenthesised numbers; negative is a gain)."""
    found: dict[tuple[str, str], list[float]] = {}
    for run in group:
        shift = run["analysis"].get("distribution_shift")
        if not shift or shift["train_quality"] not in shift["shift"]:
            continue
        own = shift_return(shift["shift"][shift["train_quality"]])
        for test, cell in shift["shift"].items():
            found.setdefault((shift["train_quality"], test), []).append(own - shift_return(cell))
    return found

"""Tabulate finished runs like the paper's tables, with the paper's numbers beside ours.

    python tools/report.py RUN_DIR_OR_PARENT_OR_STUDY [...] [--markdown] [--out DIR]

Finds every run directory (one holding run.json and eval.json) under the given paths (for a
study directory of tools/sweep.py, the runs its index.json lists; failed ones are named), groups
runs by (env, scale, recipe) and prints, mean ± std over seeds:
  Table 1   the final test return the paper's number is compared with (on the point robots
            the sparse return as the paper scored it, 1 − d inside the goal radius; the dense
            return on the MuJoCo families, as the paper's), the paper's number (at its scale),
            the interquartile mean over seeds with its 95% stratified-bootstrap interval
            (rliable; `--reps` replications), the fraction of the test split's ceiling, the
            appendix sparse return and its fraction, the mean std over test tasks, the dense
            return, the training time; the paper's numbers are per recipe and env: a labelled
            run (a study variant) is set beside its recipe's number, its label in the recipe
            column
  Orders    the paper's order claims between two rows (paper.PAIRS: each ingredient against
            FOCAL, FOCAL++ against each ingredient, FOCAL against each baseline) tested on our
            seeds: P(a run of one row does better than a run of the other) with its interval,
            for the return (final, and the mean of the last three meta-tests), the embedding
            variances and (FOCAL++ against FOCAL) Table 3's
            drop under a shift of context, and the verdict the interval allows
  Ceilings  each test split's oracle return under each formula
  Task vectors  read-out error, identification, variance ratio, goal holding
  Table 2   the embedding variance (and the scale-free ratio)
  Table 3   return under distribution shift, and each seed's drop
  Fig. 4c   the batch-attention AUC
            (these from each run's analysis.json, written by tools/analyze.py)
  OOD       in- vs out-of-distribution context, the context grid (split × context source),
            the successors' table (own data against another task's behaviour policy, with
            UNICORN's Table 2 beside it; the successors' claim of a smaller drop than FOCAL's
            is in Orders), and the variance-sparsity study (labelled runs)
`--out DIR` also writes report.md and one learning-curve PNG per environment and scale.
Unfinished runs (no eval.json) are listed apart. Runs of one dataset trained on builds of other
content (`dataset.content_sha256` in run.json) are named in a warning."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rich.markup import escape
from rich.table import Table

from components.evaluation.embedding_variance import crossovers
from components.reporting import figures, metaworld
from components.reporting.console import err, out, run_tool
from components.reporting.intervals import REPS, improvement, iqm, mean, verdict
from components.reporting.metrics import read_metrics
from components.reporting.paper import (
    ATTENTION_AUC,
    PAIRS,
    TABLE1,
    TABLE1_DENSE,
    TABLE2,
    TABLE3,
    claimed_drop_order,
    claimed_return_order,
    claimed_variance_order,
)
from components.reporting.report_figures import (
    ceiling_of,
    comparable,
    last_meta_tests,
    report_figures,
)
from components.reporting.run_dir import atomic_write_text, make_dirs, removed_on_failure
from components.reporting.run_record import read_run_record
from components.reporting.successors import (
    NOTHING_TO_LOSE,
    SUCCESSORS,
    UNICORN_TABLE2,
    claimed_ood_order,
    nothing_to_lose,
    unicorn_drop,
)
from components.sweep.runner import INDEX, read_index
from registry import FocalppError
from registry.renames import renamed_binding


@dataclass
class Report:
    title: str
    columns: tuple[str, ...]
    rows: list[tuple[str, ...]]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("paths", nargs="+", type=Path, help="run or study directories, or parents")
    p.add_argument("--markdown", action="store_true", help="print Markdown tables")
    p.add_argument("--out", type=Path, help="also write report.md and figures (PNG) here")
    p.add_argument(
        "--reps",
        type=int,
        default=REPS,
        help=f"bootstrap replications of the intervals (default {REPS})",
    )
    p.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    args = p.parse_args(argv)
    if not 100 <= args.reps <= MAX_REPS:
        p.error(
            f"--reps {args.reps}: expected 100 to {MAX_REPS:,} bootstrap replications "
            f"(more only costs memory and time; rliable's default is 50,000)"
        )
    return args


MAX_REPS = 1_000_000  # a bootstrap keeps reps × seeds numbers per interval


def find_runs(paths: Sequence[Path]) -> tuple[list[dict], list[str]]:
    """Finished runs (run.json + eval.json) and notes on the others. A study directory (one
    with index.json, written by tools/sweep.py) contributes the runs its index lists."""
    finished, others, seen = [], [], set()
    for root in paths:
        if not root.exists():
            raise FocalppError(f"{root} does not exist")
        if root.name == INDEX or (root / INDEX).is_file():
            study_dir = root.parent if root.name == INDEX else root
            index = read_index(study_dir)
            run_dirs = []
            for entry in index["runs"]:
                if entry["status"] == "done":
                    run_dirs.append(study_dir / entry["run_dir"])
                else:
                    reason = entry.get("reason", "no reason recorded")
                    others.append(f"failed: {entry['name']} ({reason})")
        else:
            run_dirs = [p.parent for p in sorted(root.rglob("run.json"))]
        for run_dir in run_dirs:
            if run_dir.resolve() in seen:  # named twice (a run and its parent): one run
                continue
            seen.add(run_dir.resolve())
            if not (run_dir / "eval.json").is_file():
                others.append(f"unfinished (no eval.json): {run_dir}")
                continue
            run = read_run_record(run_dir, doing="report")
            run["eval"] = _record(run_dir / "eval.json", "test_return_mean")
            _check_numbers(run["eval"], run_dir / "eval.json")
            analysis = run_dir / "analysis.json"
            run["analysis"] = _record(analysis) if analysis.is_file() else {}
            run["dir"] = run_dir
            finished.append(run)
    return finished, others


def _record(path: Path, required: str | None = None) -> dict:
    """A run's JSON record, or an error that names the damaged file."""
    try:
        record = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise FocalppError(
            f"{path} is not valid JSON ({e}): the run directory is damaged; restore the file "
            f"or leave that run out of the report"
        ) from e
    if not isinstance(record, dict) or (required is not None and required not in record):
        raise FocalppError(
            f"{path} is not a run's record (expected a JSON object"
            f"{f' with {required!r}' if required else ''}): the run directory is damaged; "
            "restore the file or leave that run out of the report"
        )
    return record


def _check_numbers(record: dict, path: Path) -> None:
    """The returns and times a report reads from eval.json are finite numbers: a NaN (a run
    whose evaluation diverged, or an edit) would print as 'nan ± nan' and spoil its row's
    mean and interval without a word."""
    for key, value in record.items():
        if not key.endswith(("_mean", "_std")) and key != "train_seconds":
            continue
        if value is None and key != "test_return_mean":
            continue  # not measured for this run (older records)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
            raise FocalppError(
                f"{path} has {key} = {value!r}: expected a finite number; the run's evaluation "
                "is not usable (it diverged, or the file was edited): rerun the run, or leave "
                "it out of the report"
            )


def check_distinct_seeds(grouped: dict[tuple[str, str, str], list[dict]]) -> None:
    """Each row counts a seed once: a copied run directory, or one seed run twice with the same
    bindings, would count as independent evidence and narrow the row's interval. Runs of one
    seed with other bindings (a probe beside a study's run) are other configurations: the row
    mixes them, and a warning says so (label them to give each its own row)."""
    for (env, scale, recipe), group in grouped.items():
        by_seed: dict[int, list[dict]] = defaultdict(list)
        for run in group:
            by_seed[run["seed"]].append(run)
        for seed, same_seed in sorted(by_seed.items()):
            by_config: dict[tuple, list[str]] = defaultdict(list)
            for run in same_seed:
                bindings = tuple(renamed_binding(b) for b in run.get("bindings") or ())
                config = (bindings, tuple(run.get("plugins") or ()))
                by_config[config].append(str(run["dir"]))
            for dirs in by_config.values():
                if len(dirs) > 1:
                    raise FocalppError(
                        f"{' and '.join(dirs)} are {'both' if len(dirs) == 2 else 'all'} seed "
                        f"{seed} of {recipe} on {env} ({scale}) with the same bindings: a row "
                        "counts each seed once (a copy, or a second run of a seed, is not "
                        "independent evidence); report one of them: name only the run "
                        "directories to report, or move the others away"
                    )
            if len(by_config) > 1:
                dirs = [str(run["dir"]) for run in same_seed]
                err.print(
                    f"warning: the row {recipe} on {env} ({scale}) mixes runs of other "
                    f"bindings, seed {seed} among them ({', '.join(escape(d) for d in dirs)}); "
                    "give a variant its own row with tools/run.py --label"
                )


def check_same_data(runs: list[dict]) -> None:
    """Rows set side by side must read the same data: runs of one dataset (env, scale, store
    name) whose content digests differ (the dataset rebuilt on another machine into other
    numbers, or edited) would compare unlike with like. Records older than the content digest
    carry none and are not checked."""
    by_dataset: dict[tuple[str, str, str], dict[str, list[str]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for run in runs:
        dataset = run.get("dataset") or {}
        if dataset.get("content_sha256"):
            key = (run["env"], run["scale"], dataset.get("name", "?"))
            by_dataset[key][dataset["content_sha256"]].append(Path(run["dir"]).name)
    for (env, scale, name), digests in sorted(by_dataset.items()):
        if len(digests) > 1:
            seen = "; ".join(
                f"{digest[:12]}… ({len(dirs)} run{'s' * (len(dirs) != 1)}: "
                f"{', '.join(escape(d) for d in dirs[:3])}{', …' if len(dirs) > 3 else ''})"
                for digest, dirs in sorted(digests.items(), key=lambda kv: -len(kv[1]))
            )
            err.print(
                f"warning: the runs of {env} ({scale}) read {len(digests)} different builds of "
                f"dataset {name} (content digests {seen}): their rows compare unlike data; rerun "
                "the fewer on the others' data"
            )


def recipe_stem(run: dict) -> str:
    """The run's recipe file name without its folder and `.gin`: the key of the paper's tables."""
    return Path(run["recipe"]).stem


def groups(runs: list[dict]) -> dict[tuple[str, str, str], list[dict]]:
    """Runs by (env, scale, recipe), sorted; a labelled run's recipe reads `stem (label)`."""
    grouped: dict[tuple[str, str, str], list[dict]] = defaultdict(list)
    for run in runs:
        label = run.get("label") or ""
        recipe = recipe_stem(run) + (f" ({label})" if label else "")
        grouped[(run["env"], run["scale"], recipe)].append(run)
    return dict(sorted(grouped.items()))


def spread(values: Sequence[float], digits: str = ".2f") -> str:
    values = np.asarray(values, dtype=float)
    return f"{values.mean():{digits}} ± {values.std():{digits}}"


def seeds(group: list[dict]) -> str:
    return ",".join(str(s) for s in sorted(r["seed"] for r in group))


def fraction(values: Sequence[float], best: float | None) -> str:
    """Mean as a percentage of the ceiling (returns ≥ 0 only; dense returns are negative)."""
    if best is None or best <= 0 or not values:
        return "-"
    return f"{100 * np.mean(values) / best:.0f}%"


def interval(values: Sequence[float | None], reps: int) -> str:
    """IQM over seeds [95% stratified-bootstrap interval]; '-' below two seeds."""
    if len(values) < 2 or None in values:
        return "-"
    return iqm(values, reps=reps).format()


def returns_table(grouped, reps: int = REPS) -> Report:
    rows = []
    for (env, scale, recipe), group in grouped.items():
        task_stds = [r["eval"].get("test_return_std") for r in group]
        secs = [r["eval"]["train_seconds"] for r in group if "train_seconds" in r["eval"]]
        dense = [r["eval"].get("dense_return_mean") for r in group]
        sparse = [r["eval"].get("sparse_return_mean") for r in group]
        ours = [comparable(r) for r in group]
        last = [last_meta_tests(r) for r in group]
        paper = TABLE1.get((env, recipe_stem(group[0])))
        paper_cell = "-" if paper is None else f"{paper[0]:.2f} ± {paper[1]:.2f}"
        if paper and env in TABLE1_DENSE:
            paper_cell += " (dense)"
        formula = "dense" if env in TABLE1_DENSE or sparse[0] is None else "paper"
        rows.append(
            (
                env,
                scale,
                recipe,
                seeds(group),
                spread(ours) if None not in ours else "-",
                interval(ours, reps),
                paper_cell,
                spread(last) if None not in last else "-",
                fraction(ours, ceiling_of(group, formula)) if None not in ours else "-",
                spread(sparse) if None not in sparse else "-",
                fraction(sparse, ceiling_of(group, "sparse")) if None not in sparse else "-",
                f"{np.mean(task_stds):.2f}" if None not in task_stds else "-",
                spread(dense) if None not in dense else "-",
                f"{np.mean(secs):.0f}" if secs else "-",
            )
        )
    columns = (
        "env",
        "scale",
        "recipe",
        "seeds",
        "paper-comparable",
        "IQM [95% CI]",
        "paper",
        "last 3 meta-tests",
        "of ceiling",
        "sparse (appendix)",
        "of ceiling",
        "std over tasks",
        "dense return",
        "train s",
    )
    return Report(
        "Table 1: final test return, mean ± std over seeds and interquartile mean with its 95% "
        "stratified-bootstrap interval (rliable), beside the paper's (its full scale). "
        "Paper-comparable: the point robots' sparse return as the paper scored it (1 − d inside "
        "the goal radius), the dense return where the paper gives dense returns; last 3 "
        "meta-tests: each run's mean of its last three (a reading less exposed to the swing "
        "between meta-tests), mean ± std over seeds; sparse "
        "(appendix): (r − g)/|g| above g; std over tasks: of the appendix return",
        columns,
        rows,
    )


def _variance(run: dict) -> float | None:
    return run["analysis"].get("embedding_variance", {}).get("embedding_variance")


def _finite_ratio(task_vectors: dict) -> float | None:
    """A task_vectors analysis' within/between ratio; None where the vectors do not differ
    between tasks (a fixed z; records written before the analysis said so hold infinity)."""
    ratio = task_vectors.get("variance_ratio")
    return ratio if ratio is not None and np.isfinite(ratio) else None


def _variance_ratio(run: dict) -> float | None:
    return _finite_ratio(run["analysis"].get("task_vectors", {}))


def _goal_radius(group: list[dict]) -> float | None:
    """The goal radius the runs bound (a variance-sparsity level), or None."""
    for binding in group[0].get("bindings", []):
        found = re.match(r"\s*[\w.]*goal_radius\s*=\s*(-?[\d.]+)\s*$", binding)
        if found:
            return float(found.group(1))
    return None


def _sparsity(group: list[dict]) -> float | None:
    found = [r["analysis"].get("embedding_variance", {}).get("sparsity") for r in group]
    return float(np.mean(found)) if found and None not in found else None


def _last_three(run: dict) -> float | None:
    """The mean of the run's last three meta-tests (paper-comparable), for runs that made at
    least three: the reading less exposed to the swing between meta-tests."""
    meta_tests = [r for r in run.get("metrics", []) if r.get("kind") == "eval"]
    return last_meta_tests(run) if len(meta_tests) >= 3 else None


# (measure, the value of a run, whether higher is better)
MEASURES = (
    ("return (paper-comparable)", comparable, True),
    ("return, last 3 meta-tests", _last_three, True),
    ("embedding variance", _variance, False),
    ("within/between variance", _variance_ratio, False),
)


def order_table(grouped, reps: int = REPS) -> Report | None:
    """The paper's order claims between two rows (paper.PAIRS) tested on our seeds: the
    probability that a run of the row does better than a run of the other (higher return,
    lower variance) with its 95% interval, and the verdict the interval allows. Rows are
    compared within one environment, scale and label."""
    rows_by_key = {
        (env, scale, group[0].get("label") or "", recipe_stem(group[0])): group
        for (env, scale, _), group in grouped.items()
    }
    rows = []
    for measure, value, higher in MEASURES:
        for (env, scale, label, stem), group in sorted(rows_by_key.items()):
            for row, other in PAIRS:
                against = rows_by_key.get((env, scale, label, other))
                if row != stem or against is None:
                    continue
                x, y = [value(r) for r in group], [value(r) for r in against]
                if min(len(x), len(y)) < 2 or None in x + y:
                    continue
                if higher:
                    claim, said = claimed_return_order(env, row, other, _goal_radius(group))
                else:
                    claim, said = claimed_variance_order(env, row, other, _sparsity(group))
                sign = 1.0 if higher else -1.0
                p = improvement([sign * v for v in x], [sign * v for v in y], reps=reps)
                rows.append(
                    (
                        env,
                        scale,
                        label or "-",
                        measure,
                        row,
                        other,
                        f"{len(x)} v {len(y)}",
                        p.format(),
                        said,
                        verdict(p, claim),
                    )
                )
    rows += _drop_orders(rows_by_key, reps)
    rows += _ood_orders(rows_by_key, reps)
    columns = (
        "env",
        "scale",
        "label",
        "measure",
        "row",
        "against",
        "seeds",
        "P(row better) [95% CI]",
        "paper",
        "verdict",
    )
    title = (
        "Orders: the probability that a run of the row does better than a run of the other "
        "(higher return — the final meta-test's, and the mean of each run's last three "
        "meta-tests where it made three —, lower variance, smaller drop under a shift of "
        "context — another quality's (Table 3) or another task's behaviour policy (the "
        "successors'); 0.5 = no "
        "difference) with its 95% stratified-bootstrap "
        "interval (rliable); 'reproduced' only where the interval excludes 0.5 on the paper's "
        "side. Both variances are set against Table 2's raw numbers, the scale-free ratio "
        "(at the task_vectors context size) as a reading of the same claim"
    )
    return Report(title, columns, rows) if rows else None


def _drop_orders(rows_by_key: dict, reps: int) -> list[tuple[str, ...]]:
    """Table 3's claim tested per (train quality, test context): FOCAL++ loses less than
    FOCAL when the context comes from another quality (a smaller drop is better)."""
    rows = []
    for (env, scale, label, stem), group in sorted(rows_by_key.items()):
        against = rows_by_key.get((env, scale, label, "focal"))
        if stem != "focalpp" or against is None:
            continue
        ours, theirs = _drops(group), _drops(against)
        for (train, test), x in sorted(ours.items()):
            y = theirs.get((train, test), [])
            if test == train or min(len(x), len(y)) < 2:
                continue
            measure = f"drop, {train} → {test} context"
            claim = claimed_drop_order(env, train, test)
            rows.append(_drop_row((env, scale, label), measure, stem, x, y, claim, reps))
    return rows


def _drop_row(key, measure, stem, x, y, claim, reps) -> tuple[str, ...]:
    """One Orders row on drops x (the row's seeds) and y (FOCAL's): smaller is better."""
    env, scale, label = key
    p = improvement([-v for v in x], [-v for v in y], reps=reps)
    count = f"{len(x)} v {len(y)}"
    return (env, scale, label or "-", measure, stem, "focal", count, p.format(), claim[1],
            verdict(p, claim[0]))  # fmt: skip


def _ood_orders(rows_by_key: dict, reps: int) -> list[tuple[str, ...]]:
    """The successors' claim tested per family: each successor loses less than FOCAL on the
    test tasks when the context comes from another task's behaviour policy (the context
    grid's other_policy against own; a smaller drop is better)."""
    rows = []
    for (env, scale, label, stem), group in sorted(rows_by_key.items()):
        against = rows_by_key.get((env, scale, label, "focal"))
        if stem not in SUCCESSORS or against is None:
            continue
        x, y = _grid_drops(group), _grid_drops(against)
        if min(len(x), len(y)) < 2:
            continue
        measure = f"drop, own → {OOD_SOURCE} context (test)"
        claim = claimed_ood_order(env, stem)
        found = [(measure, _shift_return, x, y)]
        # on a sparse family the same test in dense return, UNICORN's Table 2 metric
        dx, dy = (
            _grid_drops(group, measure=_dense_return),
            _grid_drops(against, measure=_dense_return),
        )
        if dx != x and None not in dx + dy:
            found.append((f"{measure}, dense", _dense_return, dx, dy))
        for name, cell, drops, focal in found:
            row = _drop_row((env, scale, label), name, stem, drops, focal, claim, reps)
            if claim[0] and nothing_to_lose(
                _grid_cells(group, "own", cell), _grid_cells(against, OOD_SOURCE, cell)
            ):
                row = (*row[:-1], NOTHING_TO_LOSE)
            rows.append(row)
    return rows


def ceilings_table(grouped) -> Report | None:
    """Each test split's best possible return (a task-knowing oracle) under each formula."""
    found: dict[tuple[str, tuple], dict] = {}
    for (env, _, _), group in grouped.items():
        for run in group:
            best = run["eval"].get("ceiling")
            if best:
                tasks = tuple(sorted(run["eval"]["per_task_return"]))
                found[(env, tasks)] = best
    rows = [
        (
            env,
            str(len(tasks)),
            *(f"{best[k]:.2f}" if k in best else "-" for k in ("paper", "sparse", "dense")),
        )
        for (env, tasks), best in sorted(found.items())
    ]
    columns = ("env", "test tasks", "paper-comparable", "sparse (appendix)", "dense")
    title = "Ceilings: the mean test return of a task-knowing oracle on the same test tasks"
    return Report(title, columns, rows) if rows else None


def task_vector_table(grouped) -> Report | None:
    """The task-vector diagnostics (analysis `task_vectors`), mean ± std over seeds."""
    rows = []
    for (env, scale, recipe), group in grouped.items():
        found = [r["analysis"]["task_vectors"] for r in group if "task_vectors" in r["analysis"]]
        if not found:
            continue
        unit = found[0]["unit"]

        def cell(key: str, digits: str = ".2f", found=found) -> str:
            return spread([f[key] for f in found], digits)

        ratios = [_finite_ratio(f) for f in found]
        holding = [f.get("holding_error") for f in found]
        hold = {
            k: spread([h[k] for h in holding], digits)
            if None not in holding and k in holding[0]
            else "-"
            for k, digits in (("distance", ".3f"), ("angle", ".2f"))
        }
        rows.append(
            (
                env,
                scale,
                recipe,
                str(len(found)),
                f"{cell('decoding_error', '.3g')} {unit}".strip(),
                f"{cell('nearest_train_task_error', '.3g')} {unit}".strip(),
                cell("identification_accuracy"),
                spread(ratios, ".1e") if None not in ratios else "-",
                hold["distance"],
                hold["angle"],
            )
        )
    columns = (
        "env",
        "scale",
        "recipe",
        "seeds",
        "read-out error (test)",
        "nearest training task",
        "identified",
        "within/between variance",
        "holding distance",
        "holding angle °",
    )
    title = (
        "Task vectors: ridge read-out of the task parameters from z (fitted on training tasks, "
        "error on test tasks), nearest-task identification, scale-free variance ratio, and how "
        "far the meta-tested robot ends from its goal (last steps of the episode)"
    )
    return Report(title, columns, rows) if rows else None


def variance_table(grouped) -> Report | None:
    rows = []
    for (env, scale, recipe), group in grouped.items():
        values = [
            r["analysis"]["embedding_variance"]["embedding_variance"]
            for r in group
            if "embedding_variance" in r["analysis"]
        ]
        if values:
            paper = TABLE2.get((env, recipe_stem(group[0])))
            found = [r["analysis"].get("task_vectors") for r in group]
            found = [f for f in found if f]
            ratios = [_finite_ratio(f) for f in found]
            sizes = sorted({f["context_size"] for f in found})
            rows.append(
                (
                    env,
                    scale,
                    recipe,
                    seeds(group),
                    spread(values, ".2e"),
                    f"{paper:.2e}" if paper else "-",
                    spread(ratios, ".1e") + f" (context {sizes[0]})"
                    if len(sizes) == 1 and None not in ratios
                    else "-",
                )
            )
    columns = (
        "env",
        "scale",
        "recipe",
        "seeds",
        "embedding variance",
        "paper",
        "within/between task variance (scale-free)",
    )
    return (
        Report("Table 2: embedding variance over context batches", columns, rows) if rows else None
    )


def _shift_return(cell: dict) -> float:
    """The return Table 3 compares: paper-comparable where the run scored it, else its own."""
    return cell.get("paper_mean", cell["mean"])


def _drops(group: list[dict]) -> dict[tuple[str, str], list[float]]:
    """Per (train quality, test context): each seed's loss of return against a context of the
    quality it trained on (Table 3's parenthesised numbers; negative is a gain)."""
    found: dict[tuple[str, str], list[float]] = defaultdict(list)
    for run in group:
        shift = run["analysis"].get("distribution_shift")
        if not shift or shift["train_quality"] not in shift["shift"]:
            continue
        own = _shift_return(shift["shift"][shift["train_quality"]])
        for test, cell in shift["shift"].items():
            found[(shift["train_quality"], test)].append(own - _shift_return(cell))
    return found


def shift_table(grouped) -> Report | None:
    rows = []
    for (env, scale, recipe), group in grouped.items():
        shifts = [
            r["analysis"]["distribution_shift"]
            for r in group
            if "distribution_shift" in r["analysis"]
        ]
        stem = recipe_stem(group[0])
        drops = _drops(group)
        for train in sorted({s["train_quality"] for s in shifts}):
            same = [s["shift"] for s in shifts if s["train_quality"] == train]
            for test in same[0]:
                values = [s[test]["mean"] for s in same if test in s]
                papers = [s[test].get("paper_mean") for s in same if test in s]
                paper = TABLE3.get((env, stem, train, test))
                own = TABLE3.get((env, stem, train, train))
                drop = drops.get((train, test), [])
                rows.append(
                    (
                        env,
                        scale,
                        recipe,
                        train,
                        test,
                        str(len(values)),
                        spread(papers) if None not in papers else "-",
                        f"{paper:.2f}" if paper is not None else "-",
                        spread(values),
                        spread(drop) if drop and test != train else "-",
                        f"{own - paper:.2f}" if None not in (own, paper) and test != train else "-",
                    )
                )
    columns = (
        "env",
        "scale",
        "recipe",
        "train quality",
        "test context",
        "seeds",
        "paper-comparable",
        "paper",
        "test return",
        "drop",
        "paper's drop",
    )
    title = (
        "Table 3: distribution shift (paper-comparable: on sparse point robots 1 − d inside "
        "the goal radius; test return: the appendix sparse return, or the return of a dense "
        "family; drop: the loss against a context of the trained-on quality, per seed, on the "
        "paper-comparable return where there is one)"
    )
    return Report(title, columns, rows) if rows else None


def attention_table(grouped) -> Report | None:
    rows = []
    for (env, scale, recipe), group in grouped.items():
        found = [r["analysis"]["attention_auc"] for r in group if "attention_auc" in r["analysis"]]
        aucs = [a["attention_auc"] for a in found if a["attention_gated"] and a["attention_auc"]]
        if aucs:
            rewarded = np.mean([a["rewarded_fraction"] for a in found])
            rows.append(
                (env, scale, recipe, str(len(aucs)), spread(aucs, ".3f"), f"{rewarded:.2f}")
            )
    columns = ("env", "scale", "recipe", "seeds", "AUC", "rewarded fraction")
    title = f"Figure 4c: batch-attention AUC, rewarded vs unrewarded (paper: {ATTENTION_AUC})"
    return Report(title, columns, rows) if rows else None


def ood_table(grouped) -> Report | None:
    rows = []
    for (env, scale, recipe), group in grouped.items():
        found = [r["analysis"]["ood_context"] for r in group if "ood_context" in r["analysis"]]
        found = [f for f in found if f.get("ood_applies")]
        if found:
            cells = []
            for key in ("in_distribution", "out_of_distribution"):
                for suffix in ("_paper", ""):
                    values = [f.get(key + suffix) for f in found]
                    cells.append(spread(values) if None not in values else "-")
            rows.append((env, scale, recipe, str(len(found)), *cells))
    columns = (
        "env",
        "scale",
        "recipe",
        "seeds",
        "in-distribution (paper-comparable)",
        "in-distribution",
        "out-of-distribution (paper-comparable)",
        "out-of-distribution",
    )
    title = "Out-of-distribution behaviour context (CORRO/UNICORN protocol; not in the paper)"
    return Report(title, columns, rows) if rows else None


def grid_table(grouped) -> Report | None:
    """The context grid (analysis `context_grid`): the return per split and context source,
    mean ± std over seeds, and its change against the task's own data."""
    rows = []
    for (env, scale, recipe), group in grouped.items():
        grids = [r["analysis"]["context_grid"] for r in group if "context_grid" in r["analysis"]]
        if not grids:
            continue
        for split in ("train", "test"):
            own = [_shift_return(g["cells"][split]["own"]) for g in grids]
            for source in grids[0]["cells"][split]:
                values = [_shift_return(g["cells"][split][source]) for g in grids]
                change = [v - o for v, o in zip(values, own, strict=True)]
                rows.append(
                    (env, scale, recipe, split, source, str(len(values)), spread(values),
                     spread(change) if source != "own" else "-")
                )  # fmt: skip
    columns = ("env", "scale", "recipe", "split", "context", "seeds", "return", "against own")
    title = (
        "Context grid: the meta-test with contexts from the task's own data (own), each other "
        "quality, another training task's expert behaviour policy rolled out in the task "
        "(other_policy) and the run's own online collection (online); paper-comparable where "
        "the run scored it"
    )
    return Report(title, columns, rows) if rows else None


OOD_SOURCE = "other_policy"  # the context grid's out-of-distribution cell


def _dense_return(cell: dict) -> float | None:
    """A grid cell's dense return: recorded beside the headline, or the headline itself where
    the family has no sparse return (no paper-comparable one either); None for older records
    of sparse families."""
    if "dense_mean" in cell:
        return cell["dense_mean"]
    return None if "paper_mean" in cell else cell["mean"]


def _grid_cells(group: list[dict], source: str, measure) -> list[float]:
    """Each seed's test return with the context from `source` (the context grid)."""
    return [
        measure(run["analysis"]["context_grid"]["cells"]["test"][source])
        for run in group
        if source in run["analysis"].get("context_grid", {}).get("cells", {}).get("test", {})
    ]


def _grid_drops(group: list[dict], source: str = OOD_SOURCE, measure=_shift_return) -> list:
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


def _normalised(run: dict) -> float | None:
    return run["eval"].get("normalised_score")


def metaworld_table(grouped, reps: int = REPS) -> Report | None:
    """Meta-World ML1: normalised score and success rate per row beside the published
    comparison, and each row's place between the floor and the ceiling of task inference
    (the reference rows, where the report has them)."""
    by_env: dict[tuple[str, str], dict[str, list[dict]]] = defaultdict(dict)
    for (env, scale, recipe), group in grouped.items():
        if _normalised(group[0]) is not None:
            by_env[(env, scale)][recipe] = group
    rows = []
    for (env, scale), recipes in sorted(by_env.items()):
        floor, ceiling = recipes.get(metaworld.FLOOR), recipes.get(metaworld.CEILING)
        kind = "hidden goal" if env in metaworld.HIDDEN_GOAL else "visible"
        for recipe, group in recipes.items():
            scores = [_normalised(r) for r in group]
            last = [last_meta_tests(r, key="normalised_score") for r in group]
            success = [r["eval"].get("success_rate") for r in group]
            theirs = metaworld.published(env, recipe_stem(group[0]))
            where = "-"
            if floor and ceiling and recipe not in (metaworld.FLOOR, metaworld.CEILING):
                at = metaworld.place(
                    float(np.mean(scores)),
                    [_normalised(r) for r in floor],
                    [_normalised(r) for r in ceiling],
                )
                where = "-" if at is None else f"{at:.2f}"
            rows.append(
                (env, kind, scale, recipe, seeds(group), spread(scores, ".3f"),
                 interval(scores, reps), spread(success) if None not in success else "-",
                 where, "-" if theirs is None else f"{theirs[0]:.2f} ± {theirs[1]:.2f}",
                 spread(last, ".3f") if None not in last else "-")
            )  # fmt: skip
    columns = (
        "env",
        "goal",
        "scale",
        "recipe",
        "seeds",
        "normalised score",
        "IQM [95% CI]",
        "success rate",
        "place (floor 0, ceiling 1)",
        "published",
        "last 3 meta-tests",
    )
    title = (
        "Meta-World ML1: normalised score (test return ÷ the test task's dataset return of the "
        "quality trained on, mean over test tasks) and success rate, mean ± std over seeds; "
        "place: (score − floor) / (ceiling − floor), the floor and ceiling being FOCAL's "
        "learner with z = 0 and with the true task (reference rows; '-' where they differ by "
        "under 0.05); published: another dataset, compare orders and rough levels; last 3 "
        "meta-tests: each run's mean normalised score over its last three (a reading less "
        "exposed to the swing between meta-tests)"
    )
    return Report(title, columns, rows) if rows else None


def metaworld_orders(grouped, reps: int = REPS) -> Report | None:
    """FOCAL++ against FOCAL on Meta-World (within each variant of a study: the coupled forms
    with each other), and each other method (the successors) against the paper's two rows, per
    task and over the tasks both rows ran: the probability that a run of one beats a run of the
    other in normalised score, the mean normalised score over the tasks with its interval, and
    the verdict against the published order where the published table has both rows."""
    scores: dict[tuple[str, str, str], dict[str, list[float]]] = defaultdict(dict)
    for (env, scale, _), group in grouped.items():
        if env in metaworld.PUBLISHED and _normalised(group[0]) is not None:
            label = group[0].get("label") or ""  # a study's variant: compared within it
            scores[(scale, label, recipe_stem(group[0]))][env] = [_normalised(r) for r in group]
    paper = ("focalpp", "focal")
    rows = []
    for scale, label in sorted({(s, lab) for s, lab, _ in scores}):
        pairs = [paper]
        if not label:  # the other methods against the paper's rows as the paper builds them
            others = sorted(
                stem
                for s, lab, stem in scores
                if (s, lab) == (scale, label) and stem not in (*paper, *metaworld.REFERENCES)
            )
            pairs += [(stem, against) for stem in others for against in reversed(paper)]
        for stem, against in pairs:
            x, y = scores.get((scale, label, stem), {}), scores.get((scale, label, against), {})
            rows += _order_rows(x, y, scale, (stem, against), label, reps)
    columns = (
        "env",
        "scale",
        "row",
        "against",
        "seeds",
        "P(row better) [95% CI]",
        "row's score",
        "against's score",
        "verdict (against the published order)",
    )
    title = (
        "Meta-World ML1 orders in normalised score: the probability that a run of the row beats "
        "a run of the other (per task; over the tasks, averaged over tasks with seeds resampled "
        "within each), with the rows' scores (per task mean ± std over seeds; over the tasks the "
        "mean and its 95% interval); 'reproduced' / 'reversed' against the published table's "
        "order where it has both rows (FOCAL++ above FOCAL on 29 of its 30 tasks), else "
        "'above' / 'below'"
    )
    return Report(title, columns, rows) if rows else None


def _published_above(stem: str, against: str, envs: Sequence[str]) -> bool | None:
    """Whether the published table puts `stem` above `against` on these tasks (over several,
    by their mean); None where it lacks either row."""
    mine = [metaworld.published(env, stem) for env in envs]
    theirs = [metaworld.published(env, against) for env in envs]
    if None in mine or None in theirs:
        return None
    return sum(m for m, _ in mine) > sum(t for t, _ in theirs)


def _order_rows(x, y, scale, stems: tuple[str, str], label: str, reps: int) -> list[tuple]:
    """`stems[0]` against `stems[1]`: one row per task both ran (two seeds or more each), and
    one over them."""
    row, other = (f"{s} ({label})" if label else s for s in stems)
    rows = []
    shared = sorted(set(x) & set(y))
    for env in shared:
        if min(len(x[env]), len(y[env])) < 2:
            continue
        p = improvement(x[env], y[env], reps=reps)
        rows.append((env, scale, row, other, f"{len(x[env])} v {len(y[env])}", p.format(),
                     spread(x[env], ".3f"), spread(y[env], ".3f"),
                     verdict(p, _published_above(*stems, [env]))))  # fmt: skip
    runs = min((len(v[e]) for v in (x, y) for e in shared), default=0)  # seeds per task
    if len(shared) > 1 and runs >= 2:
        a = np.array([x[e][:runs] for e in shared]).T  # [runs, tasks]
        b = np.array([y[e][:runs] for e in shared]).T
        p = improvement(a, b, reps=reps)
        rows.append((f"over {len(shared)} tasks", scale, row, other,
                     f"{runs} v {runs} per task", p.format(),
                     mean(a, reps=reps).format(".3f"), mean(b, reps=reps).format(".3f"),
                     verdict(p, _published_above(*stems, shared))))  # fmt: skip
    return rows


def successors_table(grouped) -> Report | None:
    """In- against out-of-distribution context per recipe (the test split of the context
    grid): the return with the task's own data, with another task's behaviour policy, the
    drop between them, the run's own online collection, and UNICORN's Table 2 where it has
    the family and the method."""
    rows = []
    for (env, scale, recipe), group in grouped.items():
        grids = [
            r["analysis"]["context_grid"]["cells"]["test"]
            for r in group
            if "context_grid" in r["analysis"]
        ]
        if not grids or OOD_SOURCE not in grids[0]:
            continue

        def cell(source: str, grids=grids) -> str:
            found = [_shift_return(g[source]) for g in grids if source in g]
            return spread(found) if len(found) == len(grids) else "-"

        theirs = UNICORN_TABLE2.get((env, recipe_stem(group[0])))
        paper = "-" if theirs is None else f"{theirs[0]:g} / {theirs[1]:g}"
        drop = unicorn_drop(env, recipe_stem(group[0]))
        dense = _grid_drops(group, measure=_dense_return)
        rows.append(
            (env, scale, recipe, str(len(grids)), cell("own"), cell(OOD_SOURCE),
             spread(_grid_drops(group)), cell("online"),
             "-" if None in dense else spread(dense), paper,
             "-" if drop is None else f"{drop:g}")
        )  # fmt: skip
    columns = (
        "env",
        "scale",
        "recipe",
        "seeds",
        "own data",
        "another task's policy",
        "drop",
        "online",
        "drop, dense",
        "UNICORN Table 2 (in / out)",
        "its drop",
    )
    title = (
        "In- and out-of-distribution context on the test tasks (the context grid): the "
        "task's own data, another training task's expert behaviour policy rolled out in the "
        "task, the drop between them (mean ± std of each seed's), the run's own online "
        "collection; paper-comparable where the run scored it. UNICORN's numbers are dense "
        "returns at its scale and on its data: set them beside the dense drop"
    )
    return Report(title, columns, rows) if rows else None


def variance_sparsity(grouped, out_dir: Path | None) -> tuple[Report | None, list[Path]]:
    """The variance-sparsity study: labelled runs (one label per sparsity level, set by a
    bound goal radius) with an embedding-variance analysis; per recipe, variance against the
    data's sparsity ratio, and where each recipe's curve crosses FOCAL's. Labels that vary
    something else (a data quality, a precision) are not sparsity levels."""
    points: dict[tuple[str, str], dict[str, list[dict]]] = defaultdict(dict)
    for (env, scale, _), group in grouped.items():
        for run in group:
            found = run["analysis"].get("embedding_variance", {})
            radius_bound = any("goal_radius" in b for b in run.get("bindings", []))
            if not run.get("label") or not radius_bound or "sparsity" not in found:
                continue
            auc = run["analysis"].get("attention_auc", {})
            point = {
                "label": run["label"],
                "sparsity": found["sparsity"],
                "variance": found["embedding_variance"],
                "return": comparable(run),
                "auc": auc.get("attention_auc") if auc.get("attention_gated") else None,
            }
            points[(env, scale)].setdefault(recipe_stem(run), []).append(point)
    rows, pictures = [], []
    for (env, scale), recipes in sorted(points.items()):
        series = {}
        for stem, found in sorted(recipes.items()):
            by_label = defaultdict(list)
            for point in found:
                by_label[point["label"]].append(point)
            levels, lines = [], []
            for label, same in by_label.items():
                column = {
                    k: [p[k] for p in same] for k in ("sparsity", "variance", "return", "auc")
                }
                levels.append((np.mean(column["sparsity"]), np.mean(column["variance"]), label))
                cells = [
                    spread(column[k], digits) if None not in column[k] else "-"
                    for k, digits in (("variance", ".2e"), ("return", ".2f"), ("auc", ".3f"))
                ]
                lines.append(
                    (env, scale, stem, label, str(len(same)), f"{levels[-1][0]:.3f}", *cells)
                )
            rows += sorted(lines, key=lambda line: float(line[5]))
            series[stem] = sorted(levels)
        base = "focal" if "focal" in series else next(iter(series))
        for stem, levels in series.items():
            if stem == base or len(levels) < 2:
                continue
            common = {lab for *_, lab in levels} & {lab for *_, lab in series[base]}
            a = [v for s, v, lab in series[base] if lab in common]
            b = [v for s, v, lab in levels if lab in common]
            x = [s for s, v, lab in levels if lab in common]
            at = crossovers(x, a, b)
            where = ", ".join(f"{c:.2f}" for c in at) if at else "none in range"
            rows.append((env, scale, f"{stem} crosses {base}", "-", "-", where, "-", "-", "-"))
        if out_dir is not None and len(series) >= 1:
            pictures.append(
                figures.curves(
                    {k: np.array([p[0] for p in v]) for k, v in series.items()},
                    {k: np.array([p[1] for p in v]) for k, v in series.items()},
                    title=f"{env} ({scale}): embedding variance vs sparsity",
                    xlabel="sparsity ratio (fraction of zero-reward transitions)",
                    ylabel="embedding variance",
                    path=out_dir / f"variance-sparsity-{env}-{scale}.png",
                )
            )
    columns = (
        "env",
        "scale",
        "recipe",
        "label",
        "seeds",
        "sparsity ratio",
        "embedding variance",
        "paper-comparable return",
        "attention AUC",
    )
    title = (
        "Variance-sparsity (paper: crossover near a sparsity ratio of 0.6), mean ± std over "
        "seeds per sparsity level; the crossover of the seed means"
    )
    return (Report(title, columns, rows) if rows else None), pictures


def markdown(report: Report) -> str:
    lines = [f"### {report.title}", "", "| " + " | ".join(report.columns) + " |"]
    lines.append("|" + "---|" * len(report.columns))
    lines += ["| " + " | ".join(row) + " |" for row in report.rows]
    return "\n".join(lines) + "\n"


def execute(args: argparse.Namespace) -> int:
    runs, unfinished = find_runs(args.paths)
    if not runs:
        raise FocalppError(f"no finished runs (run.json + eval.json) under {args.paths}")
    grouped = groups(runs)
    check_distinct_seeds(grouped)
    check_same_data(runs)
    for run in runs:  # the meta-tests' logs (curves, last meta-tests): damaged fails first
        run["metrics"] = read_metrics(run["dir"])
    created = make_dirs(args.out, "report directory") if args.out else None
    with removed_on_failure(created):
        return write_reports(args, grouped, unfinished)


def write_reports(args: argparse.Namespace, grouped, unfinished: list[str]) -> int:
    """Print the tables (and with --out write report.md and the figures there)."""
    reports = [returns_table(grouped, args.reps)]
    study, sparsity_figures = variance_sparsity(grouped, args.out)
    reports += [
        t
        for t in (
            order_table(grouped, args.reps),
            metaworld_table(grouped, args.reps),
            metaworld_orders(grouped, args.reps),
            ceilings_table(grouped),
            task_vector_table(grouped),
            variance_table(grouped),
            shift_table(grouped),
            attention_table(grouped),
            ood_table(grouped),
            grid_table(grouped),
            successors_table(grouped),
            study,
        )
        if t
    ]
    for report in reports:
        if args.markdown:
            print(markdown(report))
            continue
        table = Table(title=report.title, title_justify="left")
        for column in report.columns:
            table.add_column(column)
        for row in report.rows:
            table.add_row(*row)
        out.print(table)
    for note in unfinished:
        out.print(escape(note))
    if args.out:
        pictures = report_figures(grouped, args.out, args.reps) + sparsity_figures
        text = "\n".join(markdown(r) for r in reports)
        text += "".join(f"\n![{p.stem}]({p.name})\n" for p in pictures)
        atomic_write_text(args.out / "report.md", text)
        out.print(f"wrote {escape(str(args.out / 'report.md'))} and {len(pictures)} figure(s)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_tool(execute, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())

"""The headline: does FOCAL++ beat FOCAL, and where? One small table from committed records.

A headline file (results/headline.toml) lists the benchmarks; each names the environments, the
record of the paper's rows (the encoder learns from its objective alone) and the record of our
coupled rows (label `coupled`: the critic's gradient let into the encoder). Per benchmark and
form: the seeds, P(a run of FOCAL++ beats a run of FOCAL) with its 95% interval (over several
tasks, averaged over tasks with seeds resampled within each), and the verdict on the paper's
claim that FOCAL++ is above. The score: Meta-World's normalised score, elsewhere the
paper-comparable return of the final meta-test.

What each cell trained is read from the records, never typed: the FOCAL++ encoder (the parts
its runs built), the steps, the precision, the seeds, and what some of its runs did not record
(`unrecorded`: the configuration digest, the commit of a clean tree, the CPU, the torch version
or the precision; `-` where every run recorded all). A cell whose runs were built
differently is refused, naming what differs (`components/reports/builds.py`): two encoders,
precisions, step counts or configurations under one row; FOCAL++ against FOCAL, the rows against
their floor and ceiling, or one task against another in an average, at two precisions, step
counts, numerics, datasets or sets of command-line bindings. A benchmark may say why one of its
cells is empty (`empty = {coupled = "why"}`) instead of naming a record for it, or name a record
and say that the cell is refused (`refused = ["coupled"]`): the cell then shows what the guard
found (`refused: precision fp32 v bf16`), and a cell so marked whose sides are one build is an
error (its runs were redone: unmark it). It may also name the label
of its paper's rows and their floor and ceiling (`label = "brac"`) where a record holds several
learners.

A benchmark may name the record of its floor and ceiling of task inference (`references`): then
only the tasks where the two differ by their interval, in the benchmark's `measure` (its score,
or `success rate`), enter its cells; the count of tasks says how many of the listed ones that
is (at the CPU scale, on Meta-World's published recipe, the context can matter in score on
reach-wall alone). One record serves both forms (read at the benchmark's label); where a form's
rows were trained otherwise than the paper's (the coupled rows' learning-rate schedule reaches
every learner), each form names its own (`references = {paper = "…", coupled = "…"}`, read at
the form's label), and each cell counts the tasks its own floor and ceiling keep.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from components.reports import metaworld
from components.reports.builds import (
    MixedBuilds,
    check_sides,
    encoder_name,
    precision_name,
    provenance_gaps,
    read_or_refusal,
    run_steps,
)
from components.reports.intervals import REPS, improvement, verdict
from components.reports.pairs import paired_runs
from components.reports.readings import comparable, normalised, success
from components.reports.runs import read_runs
from components.reports.sections.metaworld_gap import context_can_matter
from components.reports.spec_files import check_once, check_text, read_tables
from components.reports.tables import Table, recipe_stem
from registry import FocalppError

CANNOT = "the context cannot matter here"

FORMS = (("paper", ""), ("coupled", "coupled"))  # (the spec's key, the runs' label)
ROW, AGAINST = "focalpp", "focal"
COLUMNS = (
    "benchmark",
    "seeds",
    "paper's rows: P(FOCAL++ > FOCAL)",
    "verdict",
    "coupled rows: P(FOCAL++ > FOCAL)",
    "verdict",
    "FOCAL++ encoder",
    "steps",
    "precision",
    "unrecorded",
)
KEYS = {
    "benchmark",
    "envs",
    "paper",
    "coupled",
    "references",
    "measure",
    "empty",
    "refused",
    "label",
}
MEASURES = {"score": None, "success rate": success}  # None: the benchmark's own score


def read_spec(path: Path) -> list[dict[str, Any]]:
    rows = read_tables(path, "benchmark", "the headline file")
    for number, row in enumerate(rows, 1):
        measure = row.get("measure", "score")
        if not isinstance(measure, str) or measure not in MEASURES:
            raise FocalppError(
                f"{path}: benchmark {number} has measure {row['measure']!r}; expected one of "
                f"{', '.join(MEASURES)}"
            )
        missing = {"benchmark", "envs"} - set(row)
        unknown = set(row) - KEYS
        if missing or unknown:
            raise FocalppError(
                f"{path}: benchmark {number} "
                + (f"lacks {', '.join(sorted(missing))}" if missing else "")
                + (f"has unknown keys {', '.join(sorted(unknown))}" if unknown else "")
                + f"; expected the keys {', '.join(sorted(KEYS))}"
            )
        check_entry(row, f"{path}: benchmark {number}", Path(path).parent)
    places = [f"benchmark {n}" for n in range(1, len(rows) + 1)]
    names = [row["benchmark"].strip() for row in rows]
    check_once(list(zip(names, places, strict=True)), "a name", str(path))
    reads = [_reads(row) for row in rows]
    check_once(list(zip(reads, places, strict=True)), "the same cells", str(path))
    return rows


def _reads(row: dict[str, Any]) -> str:
    """What a benchmark's cells read, whatever its name: the same twice would count twice."""
    forms = [row.get(key) for key, _ in FORMS]
    read_at = (row.get("references"), row.get("label", ""), row.get("measure", "score"))
    return repr((sorted(row["envs"]), forms, read_at))


def check_entry(row: dict[str, Any], where: str, root: Path) -> None:
    """A benchmark names itself, averages over at least one environment (each once) and reads
    records that are folders under the headline file's: a cell with nothing to average, or read
    from nowhere, is refused rather than printed."""
    check_text(row, "benchmark", where, "its name")
    envs = row["envs"]
    if not isinstance(envs, list) or not envs or not all(isinstance(e, str) for e in envs):
        raise FocalppError(
            f"{where} ({row['benchmark']}) has envs = {envs!r}: expected a list of at least one "
            "environment, whose runs the cell averages"
        )
    if len(set(envs)) != len(envs):
        raise FocalppError(f"{where} ({row['benchmark']}) lists an environment twice: {envs}")
    for key in ("paper", "coupled"):
        if key in row and not _is_record(root, row[key]):
            raise FocalppError(
                f"{where} ({row['benchmark']}) has {key} = {row[key]!r}: expected a record, a "
                f"folder under {root}"
            )
    _check_references(row, where, root)

    label = row.get("label", "")
    if not isinstance(label, str) or (label and not label.strip()):
        raise FocalppError(
            f"{where} ({row['benchmark']}) has label = {label!r}: expected the label of its "
            "paper's rows (a study's variant), or no label"
        )
    empty = row.get("empty", {})
    forms = [key for key, _ in FORMS]
    if not isinstance(empty, dict) or not all(
        form in forms and isinstance(why, str) and why.strip() for form, why in empty.items()
    ):
        raise FocalppError(
            f"{where} ({row['benchmark']}) has empty = {empty!r}: expected a table naming a form "
            f"({', '.join(forms)}) and, in words, why its cell is empty"
        )
    refused = row.get("refused", [])
    if not isinstance(refused, list) or not all(f in forms and f in row for f in refused):
        raise FocalppError(
            f"{where} ({row['benchmark']}) has refused = {refused!r}: expected a list of the "
            f"forms ({', '.join(forms)}) whose record it names and the guard refuses"
        )
    for form in forms:
        if (form in row) == (form in empty) and (form == "paper" or form in row):
            raise FocalppError(
                f"{where} ({row['benchmark']}) "
                + ("both names a record for" if form in row else "names no record for")
                + f" its {form} cell and "
                + ("says why it is empty" if form in row else "does not say why it is empty")
                + f": expected one of {form} = 'RECORD' or empty = {{{form} = 'why'}}"
            )


def _is_record(root: Path, value: Any) -> bool:
    """A folder under the headline file's (never that folder itself)."""
    if not isinstance(value, str) or not value.strip():
        return False
    folder = root / value
    return folder.is_dir() and folder.resolve() != root.resolve()


def _check_references(row: dict[str, Any], where: str, root: Path) -> None:
    """`references` is one record, or a table naming one for each form whose record the
    benchmark names (and for no other)."""
    refs = row.get("references")
    if refs is None or _is_record(root, refs):
        return
    named = [key for key, _ in FORMS if key in row]
    if not (
        isinstance(refs, dict)
        and sorted(refs) == sorted(named)
        and all(_is_record(root, r) for r in refs.values())
    ):
        raise FocalppError(
            f"{where} ({row['benchmark']}) has references = {refs!r}: expected a record (a "
            f"folder under {root}) or a table naming one for each form whose record it names "
            f"({', '.join(named) or 'none'})"
        )


def headline(path: Path) -> Table:
    """The headline table of the benchmarks in `path`, records read from its folder."""
    root = Path(path).parent
    rows, read = [], []  # read: (benchmark, form, verdict) of every cell with a verdict
    for bench in read_spec(path):
        name, cells = bench["benchmark"], []
        seeds, encoders, steps, precisions, gaps = {}, {}, {}, {}, {}
        measure = MEASURES[bench.get("measure", "score")]
        envs, references, label = bench["envs"], {}, bench.get("label", "")
        per_form = isinstance(bench.get("references"), dict)
        if bench.get("references") and not per_form:
            references = _references(root / bench["references"], envs, measure, label)
            envs = [env for env in envs if env in references]
        if not envs:
            rows.append((name, f"0 of {len(bench['envs'])} tasks", CANNOT, *["-"] * 7))
            continue
        for key, form_label in FORMS:
            if why := bench.get("empty", {}).get(key):
                cells += ["-", f"empty: {why}"]
                continue
            if not bench.get(key):
                cells += ["-", "-"]
                continue
            record = root / bench[key]
            if per_form:  # this form's own floor and ceiling choose its tasks
                own = root / bench["references"][key]
                references = _references(own, bench["envs"], measure, form_label or label)
                envs = [env for env in bench["envs"] if env in references]
                if not envs:
                    cells += ["-", CANNOT]
                    seeds[key] = f"0 of {len(bench['envs'])} tasks"
                    continue
            found = read_or_refusal(
                partial(
                    _checked, name, key, record, envs, form_label or label, measure, references
                ),
                key in bench.get("refused", []),
                f"{name}: its {key} cell",
            )
            if isinstance(found, MixedBuilds):
                cells += ["-", f"refused: {found.brief(sides=False)}"]
                continue
            (x, y), runs = found
            p = improvement(x, y)
            cells += [p.format(), verdict(p, True)]
            read.append((name, key, verdict(p, True)))
            used = [run for env in envs for run in runs[env]]
            encoders[key] = encoder_name([run for run in used if recipe_stem(run) == ROW])
            steps[key], precisions[key] = run_steps(used), precision_name(used)
            gaps[key] = provenance_gaps(used + [r for env in references for r in references[env]])
            tasks, of = x.shape[1], len(bench["envs"])
            seeds[key] = f"{x.shape[0]} v {y.shape[0]}"
            if of > 1:
                seeds[key] += f" × {tasks} of {of} tasks" if tasks < of else f" × {tasks} tasks"
        rows.append(
            (
                name,
                _per_form(seeds),
                *cells,
                *(_per_form(x) for x in (encoders, steps, precisions)),
                _gaps(gaps),
            )
        )
    empty = sum(cell.startswith(("empty: ", "refused: ")) for row in rows for cell in row)
    return Table(
        "Headline: does FOCAL++ beat FOCAL? P(a run of FOCAL++ beats a run of FOCAL)",
        COLUMNS,
        rows,
        _summary(read, empty),
    )


def _checked(name, key, record, envs, label, measure, references):
    """`_scores` of one form's rows, checked against the floor and ceiling that chose its
    tasks."""
    (x, y), runs = _scores(record, envs, label, measure)
    for env in references:
        check_sides(
            {"floor, ceiling": references[env], "rows": runs[env]},
            f"{name}: the {key} rows ({record}) against their floor and ceiling on {env}",
        )
    return (x, y), runs


def _summary(read: list[tuple[str, str, str]], empty: int) -> str:
    """The verdicts counted, the cells that reproduce or reverse the paper's order named."""

    def named(word: str, name_them: bool = True) -> str:
        cells = [
            name + ("" if key == "paper" else f", {key}") for name, key, v in read if v == word
        ]
        return f"{len(cells)} {word}" + (f" ({'; '.join(cells)})" if cells and name_them else "")

    words = [named("reproduced"), named("reversed"), named("same within noise", False)]
    gone = f"; {empty} cell{'s' if empty != 1 else ''} empty or refused, each saying why"
    gone = gone if empty else ""
    return f"Verdicts: {', '.join(words)}{gone}."


def _per_form(values: dict[str, str]) -> str:
    """One cell for both forms: the value, or `paper's value; coupled: its value`."""
    if len(set(values.values())) <= 1:
        return next(iter(values.values()), "-")
    return "; ".join(v if k == "paper" else f"{k}: {v}" for k, v in values.items())


def _gaps(gaps: dict[str, str]) -> str:
    """The forms' provenance gaps, each form named where the forms differ: `digest (paper's)`."""
    if len(set(gaps.values())) <= 1:
        return next(iter(gaps.values()), "-")
    named = {"paper": "paper's", "coupled": "coupled"}
    return "; ".join(f"{v} ({named[k]})" for k, v in gaps.items() if v != "-")


def _references(
    references: Path, envs: list[str], measure, label: str = ""
) -> dict[str, list[dict]]:
    """The floor and ceiling runs of each of `envs` on which the two differ in `measure` by their
    interval (components/reports/sections/metaworld_gap.py): elsewhere no order of two context
    encoders says anything about their contexts. The floor and the ceiling must be one build."""
    grouped, _ = read_runs([references])
    found: dict[str, dict[str, list[dict]]] = {env: {} for env in envs}
    for (env, _, _), group in grouped.items():
        its_label = group[0].get("label") or ""
        if env in found and recipe_stem(group[0]) in metaworld.REFERENCES and its_label == label:
            found[env][recipe_stem(group[0])] = group
    kept = {}
    for env, refs in found.items():
        if set(refs) != set(metaworld.REFERENCES):
            raise FocalppError(
                f"{references} holds no floor and ceiling runs{_labelled(label)} on {env}"
            )
        floor, ceiling = refs[metaworld.FLOOR], refs[metaworld.CEILING]
        check_sides(
            {"floor": floor, "ceiling": ceiling}, f"{references}: the floor against the ceiling"
        )
        scores = [[_score(run, measure) for run in side] for side in (floor, ceiling)]
        if context_can_matter(*scores, REPS)[1]:
            kept[env] = floor + ceiling
    return kept


def _scores(
    record: Path, envs: list[str], label: str, measure=None
) -> tuple[tuple[np.ndarray, np.ndarray], dict[str, list[dict]]]:
    """[runs, tasks] scores of FOCAL++ and of FOCAL in the record's runs of `label` on `envs`
    (as many runs per task as every task has), and the runs read on each task. Each row's runs
    on one task are one build, FOCAL++ and FOCAL on a task are one build but for their recipes,
    and the tasks averaged differ in their data alone."""
    found = paired_runs(
        record, envs, (ROW, AGAINST), label, ("FOCAL++", "FOCAL"), "the headline file"
    )
    count = {stem: min(len(found[stem][env]) for env in envs) for stem in (ROW, AGAINST)}
    read = {
        env: [run for stem in (ROW, AGAINST) for run in found[stem][env][: count[stem]]]
        for env in envs
    }
    arrays = [
        np.array(
            [[_score(run, measure) for run in found[stem][env][: count[stem]]] for env in envs]
        ).T
        for stem in (ROW, AGAINST)
    ]
    return (arrays[0], arrays[1]), read


def _labelled(label: str) -> str:
    return f" labelled {label!r}" if label else ""


def _score(run: dict, measure=None) -> float:
    if measure is not None:
        return measure(run)
    score = normalised(run)
    return comparable(run) if score is None else score

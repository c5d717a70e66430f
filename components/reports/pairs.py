"""The runs of two rows on each of a list of tasks, read from one record as one comparison: the
headline's FOCAL++ against FOCAL and each reading of the verdict table; or of one row, read
against a fixed level (a verdict reading such as an AUC against chance).

Each row's runs on a task are one build; the two rows on a task are one build but for their
recipes; the tasks averaged together differ in their data alone (components/reports/builds.py).
"""

from __future__ import annotations

from pathlib import Path

from components.reports.builds import TASKS_SHARE, check_one_build, check_sides
from components.reports.runs import read_runs
from components.reports.tables import recipe_stem
from registry import FocalppError


def row_runs(
    record: Path, envs: list[str], stem: str, label: str = "", spec: str = "the file"
) -> dict[str, list[dict]]:
    """env → the runs of row `stem` (labelled `label`) on `env` in `record`: each task's runs
    one build, the tasks differing in their data alone; refused where the row lacks a task."""
    found = _found(record, envs, (stem,), label, spec)[stem]
    if len(envs) > 1:
        check_sides(
            {env: found[env] for env in envs},
            f"{record}: {stem}{_labelled(label)}, the tasks averaged",
            TASKS_SHARE,
        )
    return found


def paired_runs(
    record: Path,
    envs: list[str],
    stems: tuple[str, str],
    label: str = "",
    names: tuple[str, str] | None = None,
    spec: str = "the file",
) -> dict[str, dict[str, list[dict]]]:
    """stem → env → the runs of row `stem` (labelled `label`) on `env` in `record`, refused
    where a row lacks a task (`spec` names the file that named the record) or the comparison
    mixes builds; `names` are the rows as the messages call them (by default their stems)."""
    names = names or stems
    labelled = _labelled(label)
    found = _found(record, envs, stems, label, spec)
    (row, against), (row_name, against_name) = stems, names
    for env in envs:
        check_sides(
            {row_name: found[row][env], against_name: found[against][env]},
            f"{record}: {row_name} against {against_name}{labelled} on {env}",
        )
    if len(envs) > 1:
        check_sides(
            {env: found[row][env] + found[against][env] for env in envs},
            f"{record}: {row_name} against {against_name}{labelled}, the tasks averaged",
            TASKS_SHARE,
        )
    return found


def _labelled(label: str) -> str:
    return f" labelled {label!r}" if label else ""


def _found(
    record: Path, envs: list[str], stems: tuple[str, ...], label: str, spec: str
) -> dict[str, dict[str, list[dict]]]:
    """stem → env → that row's runs on that task, each task's runs checked to be one build."""
    labelled = _labelled(label)
    grouped, _ = read_runs([record])
    found: dict[str, dict[str, list[dict]]] = {stem: {} for stem in stems}
    for (env, _, _), group in grouped.items():
        stem = recipe_stem(group[0])
        if env in envs and stem in found and (group[0].get("label") or "") == label:
            check_one_build(group, f"{record}: the {stem} runs{labelled} on {env}")
            found[stem][env] = group
    for stem in stems:
        missing = [env for env in envs if env not in found[stem]]
        if missing:
            raise FocalppError(
                f"{record} holds no {stem} runs{labelled} on {', '.join(missing)}: {spec} names "
                "the wrong record"
            )
    return found

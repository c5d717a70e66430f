"""Every study that names its record still builds what that record holds: run again, it would
add runs of the same configuration to each row, never another build under the row's name."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from components.reports.drift import drifted_rows
from components.sweep.study import StudyError, load_study

ROOT = Path(__file__).resolve().parents[2]
STUDIES = sorted((ROOT / "studies").glob("*.toml"))
RECORDED = [p for p in STUDIES if load_study(p).record is not None]


def test_some_study_names_its_record():
    assert RECORDED, "no study under studies/ names its record (`record = 'folder'`)"


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.stem)
def test_a_study_still_builds_its_record(path):
    study = load_study(path)
    record = ROOT / "results" / study.record
    drifted = drifted_rows(study, record)
    assert drifted == [], (
        f"{path.name} would no longer build what results/{study.record} holds; give the "
        "changed rows a variant of their own, or run the study into a new record:\n"
        + "\n".join(drifted)
    )


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.stem)
def test_a_study_names_the_numerics_its_record_ran_with(path):
    """Run again as written, a study trains with its record's numerics (a line without the
    field trained free), so the record takes the new runs instead of refusing them."""
    study = load_study(path)
    lines = (ROOT / "results" / study.record / "runs.jsonl").read_text().splitlines()
    modes = {json.loads(line).get("numerics", {}).get("mode", "free") for line in lines}
    assert modes == {study.numerics}, (
        f"{path.name} says numerics = {study.numerics!r}; results/{study.record} ran {modes}"
    )


def test_a_study_that_drifted_is_named(tmp_path):
    """The coupled rows with another learning-rate schedule than their record's."""
    path = ROOT / "studies" / "focalpp_blocks_coupled_10_seeds.toml"
    study = load_study(path)
    overlay = "\"include 'overlays/coupled.gin'\""
    text = path.read_text().replace(overlay, f"{overlay}, \"loop.lr_decay = 'linear'\"")
    changed = tmp_path / path.name
    changed.write_text(text)
    assert text != path.read_text(), "the test's study no longer includes the coupled overlay"
    drifted = drifted_rows(load_study(changed), ROOT / "results" / study.record)
    assert drifted and all("loop.lr_decay: 'linear' v 'cosine'" in line for line in drifted)


def test_a_record_outside_results_is_refused(tmp_path):
    path = tmp_path / "s.toml"
    shutil.copy(ROOT / "studies" / "focalpp_blocks_coupled_10_seeds.toml", path)
    path.write_text(path.read_text().replace('record = "', 'record = "../'))
    with pytest.raises(StudyError, match="must be a folder under results/"):
        load_study(path)

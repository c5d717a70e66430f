"""`--records` names the study's own record: never a folder another study records into, never a
folder beside the one its file names; a scratch copy outside results/ is the caller's."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.sweep.study import StudyError, check_record_folder, load_study

STUDY = 'name = "{name}"\nrecipes = ["focal.gin"]\nenvs = ["sparse_point_robot"]\nseeds = [0]\n'


def tree(tmp_path: Path) -> tuple[Path, Path]:
    results, studies = tmp_path / "results", tmp_path / "studies"
    for folder in ("mine", "theirs", "loose"):
        (results / folder).mkdir(parents=True)
    studies.mkdir()
    (studies / "theirs.toml").write_text(STUDY.format(name="theirs") + 'record = "theirs"\n')
    (studies / "broken.toml").write_text("record = [")  # names nothing, and is no error here
    return results, studies


def study(tmp_path: Path, record: str | None):
    path = tmp_path / "study.toml"
    path.write_text(STUDY.format(name="mine") + (f'record = "{record}"\n' if record else ""))
    return load_study(path)


def test_a_study_naming_its_record_records_there_or_outside_results(tmp_path):
    results, studies = tree(tmp_path)
    mine = study(tmp_path, "mine")
    check_record_folder(mine, results / "mine", results, studies)
    check_record_folder(mine, results / "sub" / ".." / "mine", results, studies)  # resolved
    check_record_folder(mine, tmp_path / "scratch", results, studies)  # a copy to try it
    check_record_folder(mine, None, results, studies)
    for beside in ("theirs", "loose", "mine/part"):
        with pytest.raises(StudyError, match=f"records into results/mine, not results/{beside}"):
            check_record_folder(mine, results / beside, results, studies)


def test_a_study_naming_no_record_never_joins_another_studys(tmp_path):
    results, studies = tree(tmp_path)
    loose = study(tmp_path, None)
    check_record_folder(loose, results / "loose", results, studies)  # no study names it
    for root in (results, results / "loose" / ".."):
        with pytest.raises(StudyError, match="that is the results folder itself"):
            check_record_folder(loose, root, results, studies)
    with pytest.raises(StudyError, match=r"that folder is the record of studies/theirs\.toml"):
        check_record_folder(loose, results / "theirs", results, studies)

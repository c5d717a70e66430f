"""The committed reports come back byte for byte from the committed compact records, the tables
docs/ embeds come from registered sections, and every figure or record docs/ points at exists."""

from __future__ import annotations

import itertools
import json
import os
import re
from pathlib import Path

import matplotlib
import PIL
import pytest
from PIL import Image

from components.reports import metaworld
from tests.conftest import ROOT, cli

RESULTS = ROOT / "results"

# one study of each kind, small enough to report in seconds
KINDS = {
    "paper_blocks/failing_seeds": "Table 1 on a point robot, its figures, the training logs",
    "metaworld/reach_wall": "Meta-World's scores and orders beside the published table",
    "mujoco_long": "dense-return MuJoCo rows, labelled variants",
    "successors": "the context grid, the successors' table and their drop orders",
}


@pytest.mark.parametrize("study", sorted(KINDS))
def test_a_committed_report_comes_back_byte_for_byte(study, tmp_path):
    committed = RESULTS / study / "report"
    result = cli("report", str(RESULTS / study), "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "report.md").read_text() == (committed / "report.md").read_text()
    drawn = sorted(p.name for p in tmp_path.glob("*.png"))
    assert drawn and drawn == sorted(p.name for p in committed.glob("*.png"))
    # a PNG names the library versions that drew it: the same bytes come back under those
    # versions only, so under others the set of figures is compared, not their bytes
    for name in drawn:
        assert Image.open(tmp_path / name).size == Image.open(committed / name).size, name
        said = Image.open(tmp_path / name).info  # what the figure says (figures.words)
        assert re.search(r"\b\d+(/\d+)* seeds?\b", said["Title"]), said["Title"]
        assert any(m in said["Title"] + said["Axes"] for m in METRICS), said
        assert said["Axes"].strip(" |\n"), f"{name} has no axis labels"
        if drawn_here(committed / name):
            assert (tmp_path / name).read_bytes() == (committed / name).read_bytes(), name


METRICS = ("paper-comparable return", "dense return", "normalised score", "embedding variance")


def drawn_here(path: Path) -> bool:
    """Whether this machine's matplotlib and Pillow are the ones that drew the PNG."""
    from components.outputs.figures import SOFTWARE

    said = Image.open(path).info.get("Software", "")
    return said == f"{SOFTWARE} {matplotlib.__version__}, Pillow {PIL.__version__}"


def test_every_committed_table_title_is_short():
    titles = [
        line
        for report in RESULTS.rglob("report.md")
        for line in report.read_text().splitlines()
        if line.startswith("### ")
    ]
    assert titles and max(len(t) - 4 for t in titles) <= 120


def test_every_section_is_explained_in_the_docs():
    import components.reports.sections  # noqa: F401
    from registry import entries

    # the project's own sections: a plugin another test loaded into this worker is not ours
    ours = [e.name for e in entries("report_section") if e.module.startswith("components.")]
    page = (ROOT / "docs" / "REPORTS.md").read_text()
    assert len(ours) >= 5
    assert [n for n in ours if f"## `{n}`" not in page] == []


def test_the_report_tool_only_iterates_the_sections():
    assert len((ROOT / "tools" / "report.py").read_text().splitlines()) <= 250


LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)|^\[[^\]]+\]:\s*([^\s#]+)", re.M)
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+\.png)\)")
PATH = re.compile(r"`((?:\.\./)?results/[\w./-]+)`")


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *RESULTS.rglob("*.md")]


def test_every_figure_and_record_the_docs_point_at_exists():
    missing = []
    for page in _pages():
        text = page.read_text()
        if "docs/results" in text:
            missing.append(f"{page.relative_to(ROOT)} names docs/results (now results/)")
        for target in (a or b for a, b in LINK.findall(text)):
            if re.match(r"[a-z]+:", target):
                continue  # a web address
            if not (page.parent / target).exists():
                missing.append(f"{page.relative_to(ROOT)} -> {target}")
        for target in PATH.findall(text):  # a folder or file named in the text
            if not (ROOT / target.removeprefix("../")).exists():
                missing.append(f"{page.relative_to(ROOT)} names {target}")
    assert missing == []


INDEX_ROW = r"^\| `([^`]+)` \| [^|]+ \| ([\d,]+)( each)? \| ([^|]+) \|"


def _index_rows() -> list[tuple[str, str, str, str]]:
    """results/README.md's rows with runs: (folder, runs, ' each' or '', unrecorded)."""
    return re.findall(INDEX_ROW, (RESULTS / "README.md").read_text(), re.M)


def _record_files(folder: str, named: set[str]) -> list[Path]:
    """The runs.jsonl files of an index row: its record, or for a folder of tasks (`<task>`)
    the task records that no row of their own names."""
    base, _, _ = folder.partition("/<task>")
    if "<task>" not in folder:
        return [RESULTS / folder / "runs.jsonl"]
    files = sorted((RESULTS / base).glob("*/runs.jsonl"))
    return [p for p in files if f"{base}/{p.parent.name}" not in named]


def test_the_records_index_counts_each_record_s_runs():
    """results/README.md's runs column and its total are the records' line counts: a folder of
    tasks (`<task>`) counts its task records, together or `each`."""
    rows = _index_rows()
    named = {row[0] for row in rows}
    assert len(rows) >= 20

    def count(path: Path) -> int:
        return len(path.read_text().splitlines())

    for folder, said, each, _ in rows:
        counts = [count(p) for p in _record_files(folder, named)]
        assert counts, folder
        if each:
            assert set(counts) == {int(said)}, (folder, counts)
        else:
            assert sum(counts) == int(said.replace(",", "")), (folder, counts)
    text = (RESULTS / "README.md").read_text()
    total = int(re.search(r"^([\d,]+) runs in all", text, re.M).group(1).replace(",", ""))
    every = [*RESULTS.glob("*/runs.jsonl"), *RESULTS.glob("*/*/runs.jsonl")]
    assert total == sum(count(p) for p in every)


def test_the_records_index_names_what_each_record_s_runs_did_not_record():
    """results/README.md's `unrecorded` column is what the record's reports say of its runs."""
    from components.reports.builds import provenance_gaps

    rows = _index_rows()
    named = {row[0] for row in rows}
    for folder, _, _, said in rows:
        files = _record_files(folder, named)
        runs = [json.loads(line) for f in files for line in f.read_text().splitlines()]
        assert said.strip() == provenance_gaps(runs), folder


def test_every_committed_figure_is_embedded_in_a_page():
    embedded = {
        (page.parent / target).resolve()
        for page in _pages()
        for target in IMAGE.findall(page.read_text())
    }
    figures = {p.resolve() for p in RESULTS.rglob("*.png")}
    assert figures and sorted(str(p.relative_to(ROOT)) for p in figures - embedded) == []


def test_docs_hold_few_files():
    assert len(list((ROOT / "docs").rglob("*"))) < 60


HEADLINE = re.compile(r"<!-- headline: (.*?) -->\n(.*?)<!-- /headline -->\n", re.S)


def test_the_headline_in_the_readme_and_the_results_page_is_the_records():
    """Both pages open their results with the headline table, as its command writes it from
    the committed records today."""
    result = cli("report", "--headline", str(RESULTS / "headline.toml"))
    assert result.returncode == 0, result.stderr
    table = result.stdout.split("\n", 2)[2].strip() + "\n"  # without its title line
    for page in (ROOT / "README.md", ROOT / "docs" / "RESULTS.md"):
        (command, shown), *more = HEADLINE.findall(page.read_text())
        assert command == "python tools/report.py --headline results/headline.toml"
        assert shown == table, f"{page.name}'s headline is not what the records give"
        assert not more
    rows = [line for line in table.splitlines()[2:] if line.startswith("|")]
    cells = [cell.strip() for line in rows for cell in line.strip("|").split(" | ")]
    assert max(len(cell) for cell in cells) <= 40
    # the line under the table counts the table's own verdict cells
    summary = table.strip().splitlines()[-1]
    for word in ("reproduced", "reversed", "same within noise"):
        assert f"{cells.count(word)} {word}" in summary, (word, summary)
    gone = sum(cell.startswith(("empty: ", "refused: ")) for cell in cells)
    assert f"{gone} cells empty or refused" in summary


def test_a_headline_cell_of_two_builds_is_refused_naming_them(tmp_path):
    """What a cell trained is read from its records: a row whose runs built two encoders (or
    ran two precisions) is refused by the headline, naming what differs and the runs (two
    encoders in one row already by the record's reader)."""
    import json
    import shutil

    record = tmp_path / "rows"
    shutil.copytree(RESULTS / "ten_seeds" / "mujoco", record)
    rows = [json.loads(x) for x in (record / "runs.jsonl").read_text().splitlines()]
    spec = tmp_path / "headline.toml"
    spec.write_text(
        '[[benchmark]]\nbenchmark = "Walker"\nenvs = ["walker_params"]\npaper = "rows"\n'
    )
    good = cli("report", "--headline", str(spec))
    assert good.returncode == 0, good.stderr
    assert "| first edition | 25,000 | fp32 |" in good.stdout
    for field, value, named in (
        ("parts", {"context_encoder": ["attention_blocks"]}, "built other parts"),
        ("precision", {"precision": "bf16"}, "in precision"),
    ):
        edited = [dict(r) for r in rows]
        victim = next(
            r for r in edited if r["recipe"] == "focalpp.gin" and r["env"] == "walker_params"
        )
        victim[field] = value
        (record / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in edited))
        refused = cli("report", "--headline", str(spec))
        assert refused.returncode == 2 and "Traceback" not in refused.stderr
        assert named in refused.stderr and victim["run"] in refused.stderr


# one kind of mixing each: how every run of one row is edited, and the field the refusal names
MIXES = {
    "precision": ("precision", {"precision": "bf16", "requested": "auto"}),
    "steps": ("eval", None),  # the row's steps halved
    "numerics": ("numerics", {"mode": "free"}),
    "dataset": (  # another build of other data
        "dataset",
        {"name": "d/other", "tag": None, "manifest_sha256": "1" * 64, "content_sha256": "0" * 64},
    ),
    "bindings": ("bindings", ["loop.precision = 'fp32'", "brac.lr = 1e-3"]),
}


def _names_both_values(refusal: str, kind: str, record) -> None:
    """The refusal names the field and each side's value, as each side's runs hold it."""
    from components.reports.builds import SIDES_SHARE, shown_value

    read = dict(SIDES_SHARE)[kind]
    rows = [json.loads(x) for x in (record / "runs.jsonl").read_text().splitlines()]
    held = {
        row: {shown_value(read(r)) for r in rows if r["recipe"] == f"{row}.gin"}
        for row in ("focal", "focalpp")
    }
    said = " ".join(refusal.split())
    named = re.search(rf"in {kind}: (.+?) \([^()]+\) v (.+?) \([^()]+\)", said)
    assert named and named[1] != named[2], said
    assert {named[1], named[2]} & held["focal"] and {named[1], named[2]} & held["focalpp"], said


def _edit(record, field, value, where) -> None:
    """Set `field` of the record's runs for which `where(run)` holds (the others keep theirs;
    every run gets a portable `numerics` where the record predates the field)."""
    import json

    path = record / "runs.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    for run in rows:
        run.setdefault("numerics", {"mode": "portable"})
        if where(run):
            run[field] = (
                value if field != "eval" else {**run["eval"], "steps": run["eval"]["steps"] // 2}
            )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.mark.parametrize("kind", sorted(MIXES))
def test_a_headline_refuses_focalpp_and_focal_of_two_builds(tmp_path, kind):
    """FOCAL++ against FOCAL on one task reads two sides of one build: a FOCAL row trained at
    another precision, for other steps, with other numerics, on other data or with another
    binding is refused, naming the field (exit 2, no traceback), although each row is one build."""
    import shutil

    shutil.copytree(RESULTS / "paper_blocks" / "rows", tmp_path / "rows")
    spec = tmp_path / "headline.toml"
    spec.write_text(
        '[[benchmark]]\nbenchmark = "SPR"\nenvs = ["sparse_point_robot"]\npaper = "rows"\n'
    )
    field, value = MIXES[kind]
    _edit(tmp_path / "rows", field, None if field == "eval" else value, lambda run: False)
    assert cli("report", "--headline", str(spec)).returncode == 0
    _edit(tmp_path / "rows", field, value, lambda run: run["recipe"] == "focal.gin")
    refused = cli("report", "--headline", str(spec))
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "FOCAL++ against FOCAL on sparse_point_robot" in refused.stderr
    assert f"compares runs built differently, in {kind}" in refused.stderr
    _names_both_values(refused.stderr, kind, tmp_path / "rows")


@pytest.mark.parametrize("kind", sorted(MIXES))
def test_a_folder_report_refuses_an_order_of_two_builds(tmp_path, kind):
    """A report's orders read two rows of one build but for their recipes: FOCAL++ against a
    FOCAL of another build is refused by `tools/report.py FOLDER`, naming the field (the record
    unedited reports: test_the_headline_in_the_readme_and_the_results_page_is_the_records and
    the reports committed beside it)."""
    import shutil

    record = tmp_path / "rows"
    shutil.copytree(RESULTS / "paper_blocks" / "rows", record)
    field, value = MIXES[kind]
    _edit(record, field, value, lambda run: run["recipe"] == "focal.gin")
    refused = cli("report", str(record), "--reps", "100")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "against focal compares runs built differently, in " + kind in refused.stderr
    _names_both_values(refused.stderr, kind, record)


def test_a_test_context_report_refuses_a_floor_or_ceiling_of_another_build(tmp_path):
    """A test-context cell is read against its learner's floor and ceiling of one build: a
    ceiling trained for other steps than its floor, or a floor and ceiling on other data than the
    row, is refused by the folder report."""
    import shutil

    record = tmp_path / "tc"
    shutil.copytree(RESULTS / "test_contexts" / "point_robot", record)
    _edit(record, "eval", None, lambda run: run["recipe"] == "reference_oracle.gin")
    refused = cli("report", str(record), "--reps", "100")
    assert refused.returncode == 2 and "the floor against the ceiling" in refused.stderr
    assert "in steps" in refused.stderr
    shutil.rmtree(record)
    shutil.copytree(RESULTS / "test_contexts" / "point_robot", record)
    field, value = MIXES["dataset"]
    _edit(record, field, value, lambda run: run["recipe"].startswith("reference_"))
    refused = cli("report", str(record), "--reps", "100")
    assert refused.returncode == 2 and "focal against its floor and ceiling" in refused.stderr
    assert "in dataset" in refused.stderr


@pytest.mark.parametrize("kind", sorted(MIXES))
def test_a_verdict_refuses_a_reading_of_two_builds(tmp_path, kind):
    """A reading of the verdict table compares two rows of one build but for their recipes: a
    FOCAL row of another build is refused, naming the field; unedited, it reads."""
    import shutil

    shutil.copytree(RESULTS / "paper_blocks" / "rows", tmp_path / "rows")
    spec = tmp_path / "verdicts.toml"
    spec.write_text(
        '[[claim]]\nclaim = "FOCAL++ above FOCAL"\npaper = "12.96 v 11.84"\n'
        '[[claim.reading]]\nname = "form"\nrecord = "rows"\nenvs = ["sparse_point_robot"]\n'
        'row = "focalpp"\nagainst = "focal"\nmeasure = "return"\nclaim = "above"\n'
    )
    field, value = MIXES[kind]
    _edit(tmp_path / "rows", field, None if field == "eval" else value, lambda run: False)
    good = cli("report", "--verdicts", str(spec))
    assert good.returncode == 0, good.stderr
    assert "| form, return | 10 v 10 | 12.36 v 12.23 | 0.69 [0.43, 0.90] |" in good.stdout
    _edit(tmp_path / "rows", field, value, lambda run: run["recipe"] == "focal.gin")
    refused = cli("report", "--verdicts", str(spec))
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert (
        f"focalpp against focal on sparse_point_robot compares runs built differently, in {kind}"
        in refused.stderr
    )
    _names_both_values(refused.stderr, kind, tmp_path / "rows")


def test_a_verdict_claimed_below_reads_p_for_the_claimed_side(tmp_path):
    """`claim = "below"`: P is that the other row does better, so the one rule reads it."""
    spec = tmp_path / "verdicts.toml"
    spec.write_text(
        '[[claim]]\nclaim = "4d"\npaper = "crossover"\n[[claim.reading]]\nname = "r1.2"\n'
        f'record = "{(RESULTS / "paper_blocks" / "variance_sparsity").as_posix()}"\n'
        'envs = ["sparse_point_robot_relabeled"]\nrow = "focalpp_batchwise"\n'
        'against = "focal"\nlabel = "r1.2"\nmeasure = "embedding variance"\nclaim = "below"\n'
    )
    result = cli("report", "--verdicts", str(spec))
    assert result.returncode == 0, result.stderr
    # the batch-wise row varies more at sparsity 0.28, as the paper has it there
    assert "| 3.33e-02 v 7.45e-03 | 1.00 [1.00, 1.00] | reproduced |" in result.stdout


def test_a_verdict_reads_one_row_against_a_level(tmp_path):
    """`level` in place of `against`: P is the share of the row's runs on the claimed side of
    the level, counted here from the record's analyses, and the one rule reads it."""
    import json

    record = RESULTS / "paper_blocks" / "relabeled"
    aucs = [
        line["attention_auc"]["attention_auc"]
        for line in map(json.loads, (record / "analyses.jsonl").read_text().splitlines())
        if line["run"].startswith("focalpp_batchwise-")
    ]
    spec = tmp_path / "verdicts.toml"
    spec.write_text(
        '[[claim]]\nclaim = "4c"\npaper = "AUC 0.969"\n[[claim.reading]]\nname = "relabeled"\n'
        f'record = "{record.as_posix()}"\nenvs = ["sparse_point_robot_relabeled"]\n'
        'row = "focalpp_batchwise"\nlevel = 0.5\nmeasure = "attention AUC"\nclaim = "above"\n'
    )
    result = cli("report", "--verdicts", str(spec))
    assert result.returncode == 0, result.stderr
    share = sum(a > 0.5 for a in aucs) / len(aucs)
    assert 0 < share < 1  # some seeds invert the gate: the interval has room on both sides
    mean = sum(aucs) / len(aucs)
    assert f"| relabeled, attention AUC | {len(aucs)} | {mean:.2f} v 0.50 | {share:.2f} [" in (
        result.stdout
    )
    # claimed below the level, the same runs read the other way
    spec.write_text(spec.read_text().replace('claim = "above"', 'claim = "below"'))
    below = cli("report", "--verdicts", str(spec))
    assert f"| {1 - share:.2f} [" in below.stdout


def test_a_verdict_marked_refused_shows_what_the_guard_found(tmp_path):
    """`refused = true`: the reading names its rows, and the table shows the field and values
    the guard refuses them on, read from the records; a mark on rows of one build is an error."""
    spec = tmp_path / "verdicts.toml"
    reading = (
        '[[claim]]\nclaim = "Figure 3"\npaper = "curves"\n[[claim.reading]]\nname = "MBML"\n'
        f'record = "{(RESULTS / "edition2").as_posix()}"\nenvs = ["sparse_point_robot"]\n'
        'row = "focal"\nagainst = "{against}"\nmeasure = "return"\nclaim = "above"\n'
        "refused = true\n"
    )
    spec.write_text(reading.replace("{against}", "mbml"))
    result = cli("report", "--verdicts", str(spec))
    assert result.returncode == 0, result.stderr
    assert "| MBML | - | - | - | refused: steps, focal 12,000 v mbml 16,000 |" in result.stdout
    spec.write_text(reading.replace("{against}", "batch_pearl"))
    stale = cli("report", "--verdicts", str(spec))
    assert stale.returncode == 2 and "Traceback" not in stale.stderr
    assert "is marked refused, but its sides are one build now" in stale.stderr


def test_a_verdict_names_what_its_runs_did_not_record(tmp_path):
    """The `unrecorded` column of a reading names what some of either row's runs lack: nothing
    on a record of full provenance; the torch version, once one FOCAL run loses it."""
    import shutil

    record = tmp_path / "point_robot"
    shutil.copytree(RESULTS / "test_contexts" / "point_robot", record)
    spec = tmp_path / "verdicts.toml"
    spec.write_text(
        '[[claim]]\nclaim = "C"\npaper = "1 v 0"\n[[claim.reading]]\nname = "r"\n'
        'record = "point_robot"\nenvs = ["sparse_point_robot"]\nrow = "reference_oracle"\n'
        'against = "focal"\nlabel = "brac"\nmeasure = "return"\nclaim = "above"\n'
    )
    full = cli("report", "--verdicts", str(spec))
    assert full.returncode == 0, full.stderr
    (row,) = [line for line in full.stdout.splitlines() if line.startswith("| C |")]
    assert row.endswith("| - | - |")  # nothing unrecorded, no study link
    _edit(
        record,
        "torch",
        "unknown",
        lambda run: run["run"].endswith("focal-sparse_point_robot-brac-s3"),
    )
    gap = cli("report", "--verdicts", str(spec))
    (row,) = [line for line in gap.stdout.splitlines() if line.startswith("| C |")]
    assert row.endswith("| torch | - |"), row


def test_a_verdict_of_property_tests_counts_them(tmp_path):
    """`tests = "folder"`: the reading counts the folder's test functions, not its helpers."""
    tests = tmp_path / "theory"
    tests.mkdir()
    (tests / "test_a.py").write_text(
        "def helper():\n    pass\n\n\ndef test_one():\n    assert helper() is None\n"
    )
    (tests / "test_b.py").write_text("class TestX:\n    def test_two(self):\n        assert 1\n")
    (tests / "conftest.py").write_text("def test_not_a_test_file():\n    pass\n")
    spec = tmp_path / "verdicts.toml"
    spec.write_text(
        '[[claim]]\nclaim = "Theorems"\npaper = "stated"\n[[claim.reading]]\n'
        'name = "property tests"\ntests = "theory"\n'
    )
    result = cli("report", "--verdicts", str(spec))
    assert result.returncode == 0, result.stderr
    assert "| property tests | - | 2 properties | - | checked by every run of the suite |" in (
        result.stdout
    )


def test_a_headline_reads_the_paper_rows_of_one_label(tmp_path):
    """A record of several learners (a study's variants) names the paper's rows by their label;
    without it the headline finds no unlabelled rows and says so."""
    import shutil

    shutil.copytree(RESULTS / "paper_blocks" / "rows", tmp_path / "rows")
    _edit(tmp_path / "rows", "label", "brac", lambda run: True)
    spec = tmp_path / "headline.toml"
    head = '[[benchmark]]\nbenchmark = "SPR"\nenvs = ["sparse_point_robot"]\npaper = "rows"\n'
    spec.write_text(head + 'label = "brac"\n')
    read = cli("report", "--headline", str(spec))
    assert read.returncode == 0, read.stderr
    assert "| SPR | 10 v 10 | 0.69 [0.43, 0.90] | same within noise |" in read.stdout
    spec.write_text(head)
    refused = cli("report", "--headline", str(spec))
    assert (
        refused.returncode == 2 and "holds no focalpp runs on sparse_point_robot" in refused.stderr
    )


def test_a_headline_refuses_tasks_of_two_builds_in_one_average(tmp_path):
    """An average over tasks reads tasks that differ in their data alone: a task whose rows ran
    bf16 beside one whose rows ran fp32 is refused."""
    import shutil

    shutil.copytree(RESULTS / "paper_blocks" / "rows", tmp_path / "rows")
    spec = tmp_path / "headline.toml"
    spec.write_text(
        '[[benchmark]]\nbenchmark = "robots"\nenvs = ["sparse_point_robot", "point_robot_wind"]'
        '\npaper = "rows"\n'
    )
    good = cli("report", "--headline", str(spec))
    assert good.returncode == 0 and "10 v 10 × 2 tasks" in good.stdout, good.stderr
    field, value = MIXES["precision"]
    _edit(tmp_path / "rows", field, value, lambda run: run["env"] == "point_robot_wind")
    refused = cli("report", "--headline", str(spec))
    assert refused.returncode == 2 and "the tasks averaged" in refused.stderr
    assert "in precision: fp32" in refused.stderr and "bf16" in refused.stderr


def test_a_headline_refuses_rows_against_a_floor_and_ceiling_of_another_build(tmp_path):
    """The rows and the floor and ceiling that choose their tasks are one build: the published
    reach-wall rows (bf16) stand against their references (bf16); the coupled rows (fp32) are
    refused against the same references, and a cell may say why it stays empty instead."""
    results = RESULTS.as_posix()
    spec = tmp_path / "headline.toml"
    head = (
        f'[[benchmark]]\nbenchmark = "score"\nenvs = ["ml1pub_reach_wall"]\n'
        f'paper = "{results}/metaworld_published"\n'
        f'references = "{results}/metaworld_published/references"\n'
    )
    spec.write_text(head + f'coupled = "{results}/metaworld_published/coupled"\n')
    refused = cli("report", "--headline", str(spec))
    assert refused.returncode == 2 and "against their floor and ceiling" in refused.stderr
    assert "in precision: bf16 (floor, ceiling" in refused.stderr
    spec.write_text(head + 'empty = {coupled = "rows fp32; floor, ceiling bf16"}\n')
    shown = cli("report", "--headline", str(spec))
    assert shown.returncode == 0, shown.stderr
    assert "| reproduced | - | empty: rows fp32; floor, ceiling bf16 |" in shown.stdout
    # marked refused, the cell shows what the guard found, read from the records
    marked = head + f'coupled = "{results}/metaworld_published/coupled"\n'
    spec.write_text(marked + 'refused = ["coupled"]\n')
    shown = cli("report", "--headline", str(spec))
    assert shown.returncode == 0, shown.stderr
    assert "| reproduced | - | refused: precision bf16 v fp32 |" in shown.stdout
    assert (
        "1 cells empty or refused" not in shown.stdout and "1 cell empty or refused" in shown.stdout
    )
    # a cell marked refused whose sides are one build is an error: its mark is stale
    spec.write_text(marked + 'refused = ["paper", "coupled"]\n')
    stale = cli("report", "--headline", str(spec))
    assert stale.returncode == 2 and "Traceback" not in stale.stderr
    assert "its paper cell is marked refused, but its sides are one build now" in stale.stderr


@pytest.mark.parametrize(
    "refused", ['"coupled"', '["coupled"]', '["shared"]', "true", '["benchmark"]']
)
def test_a_headline_refuses_a_refused_mark_it_cannot_read(tmp_path, refused):
    """`refused` lists forms whose record the benchmark names: a string, a form without a
    record (the coupled one here) or a form that does not exist is refused, naming the key."""
    import shutil

    shutil.copytree(RESULTS / "paper_blocks" / "rows", tmp_path / "rows")
    spec = tmp_path / "headline.toml"
    spec.write_text(
        f'[[benchmark]]\nbenchmark = "SPR"\nenvs = ["sparse_point_robot"]\npaper = "rows"\n'
        f"refused = {refused}\n"
    )
    result = cli("report", "--headline", str(spec))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "has refused = " in result.stderr and "expected a list of the forms" in result.stderr


@pytest.mark.parametrize(
    "entry, said",
    [
        ('paper = "rows"\nempty = {paper = "why"}', "both names a record for its paper cell"),
        ("", "names no record for its paper cell"),
        ('paper = "rows"\nempty = {coupled = ""}', "expected a table naming a form"),
        ('paper = "rows"\nempty = {shared = "why"}', "expected a table naming a form"),
        ('paper = "rows"\nempty = "why"', "expected a table naming a form"),
    ],
)
def test_a_headline_cell_is_a_record_or_says_why_it_is_empty(tmp_path, entry, said):
    import shutil

    shutil.copytree(RESULTS / "paper_blocks" / "rows", tmp_path / "rows")
    spec = tmp_path / "headline.toml"
    spec.write_text(f'[[benchmark]]\nbenchmark = "SPR"\nenvs = ["sparse_point_robot"]\n{entry}\n')
    refused = cli("report", "--headline", str(spec))
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert said in refused.stderr


def test_a_headline_counts_only_the_tasks_where_the_context_can_matter(tmp_path):
    """With the floor and ceiling's record named, a task enters a Meta-World cell only where
    they differ by their interval in the cell's measure; a benchmark with none says so."""
    spec = tmp_path / "headline.toml"
    results = RESULTS.as_posix()
    spec.write_text(
        "".join(
            f'[[benchmark]]\nbenchmark = "{name}"\nenvs = {envs}\npaper = '
            f'"{results}/metaworld_published"\nreferences = '
            f'"{results}/metaworld_published/references"\nmeasure = "{measure}"\n'
            for name, envs, measure in (
                ("score", '["ml1pub_sweep", "ml1pub_reach_wall"]', "score"),
                ("success", '["ml1pub_push", "ml1pub_sweep"]', "success rate"),
                ("none", '["ml1pub_sweep", "ml1pub_door_lock"]', "score"),
            )
        )
    )
    result = cli("report", "--headline", str(spec))
    assert result.returncode == 0, result.stderr
    rows = {line.split(" | ")[0].strip("| "): line for line in result.stdout.splitlines()}
    assert "10 v 10 × 1 of 2 tasks | 0.81 [0.60, 0.97] | reproduced" in rows["score"]
    assert "× 1 of 2 tasks" in rows["success"]
    assert "0 of 2 tasks | the context cannot matter here" in rows["none"]


def test_a_headline_form_may_name_its_own_floor_and_ceiling(tmp_path):
    """`references` as a table names each form's own floor and ceiling, read at that form's
    label: the paper's form alone reads as with one record; a coupled form whose record holds
    no floor and ceiling labelled `coupled` is refused, naming the record and the task."""
    results = RESULTS.as_posix()
    spec = tmp_path / "headline.toml"
    head = (
        '[[benchmark]]\nbenchmark = "score"\nenvs = ["ml1pub_sweep", "ml1pub_reach_wall"]\n'
        f'paper = "{results}/metaworld_published"\n'
    )
    spec.write_text(head + f'references = {{paper = "{results}/metaworld_published/references"}}\n')
    shown = cli("report", "--headline", str(spec))
    assert shown.returncode == 0, shown.stderr
    assert "10 v 10 × 1 of 2 tasks | 0.81 [0.60, 0.97] | reproduced" in shown.stdout
    spec.write_text(
        head
        + f'coupled = "{results}/metaworld_published/coupled"\n'
        + f'references = {{paper = "{results}/metaworld_published/references", '
        + f'coupled = "{results}/metaworld_published/references"}}\n'
    )
    refused = cli("report", "--headline", str(spec))
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "holds no floor and ceiling runs labelled 'coupled' on ml1pub_sweep" in refused.stderr


@pytest.mark.parametrize(
    "entry",
    [
        'references = {shared = "rows"}',  # no such form
        'references = {paper = "rows", coupled = "rows"}',  # a form without a record
        "references = {}",  # the paper's form names a record, so a table must name its own
        "references = {paper = 3}",
        'references = {paper = "nowhere"}',
        'references = ""',
        'references = "."',
        "references = 3",
    ],
)
def test_a_headline_refuses_references_it_cannot_read(tmp_path, entry):
    import shutil

    shutil.copytree(RESULTS / "paper_blocks" / "rows", tmp_path / "rows")
    spec = tmp_path / "headline.toml"
    spec.write_text(
        '[[benchmark]]\nbenchmark = "SPR"\nenvs = ["sparse_point_robot"]\npaper = "rows"\n'
        + f"{entry}\n"
    )
    result = cli("report", "--headline", str(spec))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "has references = " in result.stderr
    assert "or a table naming one for each form whose record it names (paper)" in result.stderr


@pytest.mark.parametrize("record", ['""', '"."', '"nowhere"', "3"])
def test_a_headline_refuses_a_record_that_is_no_folder_under_it(tmp_path, record):
    spec = tmp_path / "headline.toml"
    spec.write_text(
        f'[[benchmark]]\nbenchmark = "SPR"\nenvs = ["sparse_point_robot"]\npaper = {record}\n'
    )
    result = cli("report", "--headline", str(spec))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "has paper = " in result.stderr and "expected a record, a folder under" in result.stderr


def test_every_verdict_word_follows_the_one_rule():
    """Each P [low, high] on the README's and the results page's tables stands beside the verdict
    word the one rule gives it (components/reports/intervals.verdict)."""
    from components.reports.intervals import Estimate, verdict

    interval = re.compile(r"^(\d\.\d\d) \[(\d\.\d\d), (\d\.\d\d)\]$")
    words = {"reproduced", "reversed", "same within noise"}
    checked = 0
    for page in (ROOT / "README.md", ROOT / "docs" / "RESULTS.md"):
        for line in page.read_text().splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            for cell, word in itertools.pairwise(cells):
                found = interval.match(cell)
                if found and word in words:
                    p, low, high = map(float, found.groups())
                    assert verdict(Estimate(p, low, high), True) == word, (page.name, line)
                    checked += 1
    assert checked >= 10


VERDICTS = re.compile(r"<!-- verdicts: (.*?) -->\n(.*?)<!-- /verdicts -->\n", re.S)


def test_the_verdict_table_on_the_results_page_is_the_records():
    """docs/RESULTS.md's verdict table is what its command writes from the committed records
    today, byte for byte."""
    result = cli("report", "--verdicts", str(RESULTS / "verdicts.toml"))
    assert result.returncode == 0, result.stderr
    table = result.stdout.split("\n", 2)[2].strip() + "\n"
    (command, shown), *more = VERDICTS.findall((ROOT / "docs" / "RESULTS.md").read_text())
    assert command == "python tools/report.py --verdicts results/verdicts.toml"
    assert shown == table, "docs/RESULTS.md's verdict table is not what the records give"
    assert not more


def test_every_verdict_shows_a_figure_of_the_study_it_cites():
    """docs/RESULTS.md: each row of the verdict table links the sections of the study pages
    that hold its evidence; the page embeds a figure of a record one of those sections names
    (a claim without records, the theorems' property tests, has none)."""
    page = ROOT / "docs" / "RESULTS.md"
    text = page.read_text()
    (_, table), *_ = VERDICTS.findall(text)
    targets = dict(re.findall(r"^\[([^\]]+)\]:\s*(\S+)", text, re.M))
    images = [(page.parent / p).resolve() for p in IMAGE.findall(text)]
    rows = [row for row in table.splitlines()[2:] if row.startswith("|")]
    assert len(rows) >= 10
    for row in rows:
        cell = row.strip().strip("|").rsplit("|", 1)[1].strip()
        links = [targets[key] for key in re.findall(r"\]\[([^\]]+)\]", cell)]
        links += re.findall(r"\]\(([^)]+)\)", cell)
        cited = [(page.parent / link).resolve() for link in links if "results/" in link]
        if not cited:
            continue
        shown = [i for i in images if any(_shows(section, i) for section in cited)]
        assert shown, f"no figure of the records this row cites: {row[:90]}"


def _read_by(spec) -> set[tuple[str, str]]:
    """The (record, environment) pairs the entries of a headline or verdict spec read."""
    pairs = set()
    for entry in spec:
        records = [entry.get(k) for k in ("record", "paper", "coupled", "references")]
        records += [r for r in records if isinstance(r, dict) for r in r.values()]
        pairs |= {(r, env) for r in records if isinstance(r, str) for env in entry.get("envs", ())}
    return pairs


def _figure_of(image: Path) -> tuple[str, str]:
    """The record (its path under results/) and environment of `<kind>-<env>-<scale>.png`."""
    return image.parents[1].relative_to(RESULTS).as_posix(), image.stem.split("-")[-2]


def _reads(pairs: set[tuple[str, str]], image: Path) -> bool:
    record, env = _figure_of(image)
    return any(env == e and (record == r or record.startswith(r + "/")) for r, e in pairs)


def test_every_figure_beside_the_verdicts_is_of_a_record_and_task_a_verdict_reads():
    """docs/RESULTS.md's figures come from the records (and of the tasks) that the headline or
    a verdict reads, and every claim read from records shows a figure of its own readings: a
    figure of another study or task beside a verdict would show what the verdict did not read."""
    import tomllib

    page = ROOT / "docs" / "RESULTS.md"
    images = [(page.parent / p).resolve() for p in IMAGE.findall(page.read_text())]
    claims = tomllib.loads((RESULTS / "verdicts.toml").read_text())["claim"]
    benchmarks = tomllib.loads((RESULTS / "headline.toml").read_text())["benchmark"]
    read = _read_by([r for c in claims for r in c.get("reading", ())]) | _read_by(benchmarks)
    assert len(images) >= 10
    assert [i.relative_to(ROOT) for i in images if not _reads(read, i)] == []
    for claim in claims:
        own = _read_by(claim.get("reading", ()))
        if own:
            assert any(_reads(own, i) for i in images), f"no figure of {claim['claim']!r}"


def _shows(link: Path, image: Path) -> bool:
    """Whether the section a link points at (page#anchor) is about the figure's record (the
    record's own page, or a section naming the record by its path from the repository or from
    the page's folder) and the figure's environment (`iqm-<env>-<scale>.png`)."""
    record = image.parents[1]
    path, _, anchor = str(link).partition("#")
    page = Path(path)
    text = page.read_text()
    if anchor:
        sections = re.split(r"^(?=#{1,6} )", text, flags=re.M)
        found = [s for s in sections if s.startswith("#") and _slug(s.splitlines()[0]) == anchor]
        assert found, f"{page.relative_to(ROOT)} has no section #{anchor}"
        level = len(found[0]) - len(found[0].lstrip("#"))
        after = sections[sections.index(found[0]) + 1 :]
        until = next((i for i, s in enumerate(after) if len(s) - len(s.lstrip("#")) <= level), None)
        text = "".join([found[0], *after[:until]])
    env = image.stem.split("-")[1]
    task = metaworld.task_of(env).removeprefix("ml1_")  # a Meta-World task by its name
    names = {env, env.replace("_", "-"), task.replace("_", "-")}
    if not any(name in text.lower() for name in names):
        return False
    from_root = str(record.relative_to(ROOT))
    from_page = os.path.relpath(record, page.parent)
    if from_page == ".":  # the record's own page
        return True
    return from_root in text or f"{from_page}/" in text or f"`{from_page}`" in text


def _slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    words = heading.lstrip("#").strip().lower()
    return re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", words))


def test_unlabelled_runs_are_the_default_sparsity_level():
    """Figure 4d in the paper's form is two records: the study's four labelled radii and the
    paper's own radius, unlabelled, from the Figure 4b study. Read together, the unlabelled runs
    are each row's `default` level, in sparsity order among the others; read alone, the
    unlabelled record has no levels and no variance-sparsity section."""
    records = [
        RESULTS / "paper_blocks" / "variance_sparsity",
        RESULTS / "paper_blocks" / "relabeled",
    ]
    together = cli("report", *map(str, records), "--markdown", "--reps", "200")
    assert together.returncode == 0, together.stderr
    table = together.stdout.split("### Variance-sparsity")[1].split("###")[0]
    for recipe in ("focal", "focalpp_batchwise"):
        rows = [
            [c.strip() for c in line.strip("|").split("|")]
            for line in table.splitlines()
            if line.startswith(f"| sparse_point_robot_relabeled | cpu | {recipe} |")
        ]
        labels = [row[3] for row in rows]
        assert labels == ["r1.2", "r0.8", "default", "r0.3", "r0.15"], labels
        sparsity = [float(row[5]) for row in rows]
        assert sparsity == sorted(sparsity) and 0.7 < sparsity[2] < 0.85
        assert rows[2][4] == "10"  # the Figure 4b study's ten seeds
    alone = cli("report", str(records[1]), "--markdown", "--reps", "200")
    assert alone.returncode == 0 and "### Variance-sparsity" not in alone.stdout

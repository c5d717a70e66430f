"""A study's compact record: what its reports read, in a few files that fit a repository.

    results/<study>/
        runs.jsonl        one line per run: its choices, provenance and final numbers (COLUMNS)
        configs.jsonl     each configuration its runs were built from: {"config_digest": ...,
                          "bindings": {name: value}} (registry/provenance.py)
        meta_tests.jsonl  every meta-test of every run: {"run": name, "step": ..., ...}
        analyses.jsonl    each analysed run's analysis.json: {"run": name, "<analysis>": {...}}
        logs.tar.xz       optional: the runs' per-step training logs (their metrics.jsonl)
        logs.sha256       that archive's SHA-256
        report/           report.md and its figures (tools/report.py --out)
        README.md         what the study is, the command that ran it, the one that reports it

`write_records` turns finished run directories into one (tools/records.py, tools/sweep.py
--records); `read_records` gives the runs back as tools/report.py reads run directories
(run.json's choices, eval.json as `eval`, analysis.json as `analysis`, the meta-tests as
`metrics`), and refuses a damaged record by file and line: a missing column, a run listed
twice, a non-finite score, an archive whose digest does not match, a provenance field of the
wrong type, a configuration whose bindings do not hash to its digest, a line whose environment,
scale, algorithm, device or requested precision is not what its configuration binds, a run whose
process's seeds leave out its own.

A record holds one configuration per row: a run is refused where the record's runs of its row
(recipe, label, environment, scale) were built from other bindings, naming those that differ,
or from a configuration the record cannot show (runs recorded before configurations were):
give the new runs a label of their own (`--label`, a study's `label`).
"""

from __future__ import annotations

import ast
import hashlib
import io
import json
import lzma
import math
import re
import tarfile
from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from components.json_text import loads
from components.outputs.metrics import DAMAGED as METRICS_DAMAGED
from components.outputs.metrics import jsonl
from components.outputs.run_dir import atomic_write_all, make_dirs, removed_on_failure
from components.outputs.run_record import RUN_JSON, read_run_record
from components.reports.builds import UNKNOWN, check_one_build
from components.reports.fields import EVAL, META_TEST, NUMERICS, RUN_SCORES, check_fields
from components.reports.readings import comparable, last_meta_tests
from registry import FocalppError
from registry.constraints import check_seed
from registry.provenance import config_digest

RUNS, META_TESTS, ANALYSES = "runs.jsonl", "meta_tests.jsonl", "analyses.jsonl"
CONFIGS = "configs.jsonl"
LOGS, LOGS_DIGEST = "logs.tar.xz", "logs.sha256"

# every line of runs.jsonl holds these; `final` and `last_three` are the paper-comparable
# return (the final meta-test's, the mean of the last three), for a reader of the file
CHOICES = (
    "run", "recipe", "algorithm", "env", "scale", "seed", "label", "bindings", "plugins",
    "device", "dataset",
)  # fmt: skip
# what ran (UNKNOWN where a run recorded before a field existed cannot say): the commit and
# whether its checkout was clean, the digest of the bindings that took effect, the registered
# parts built by kind, the CPU, torch, the precision the loop used
PROVENANCE = ("commit", "clean", "config_digest", "parts", "cpu", "torch", "precision")
COLUMNS = (*CHOICES, *PROVENANCE, "machine", "final", "last_three", "train_seconds", "eval")
SCORES = tuple(RUN_SCORES)  # final, last_three, train_seconds
ROW = ("recipe", "label", "env", "scale")  # the runs of one row share one configuration
# run.json's keys a record keeps besides COLUMNS (the rest, e.g. each binding's source, is in
# the run directory only); `recovered`: how a line made before PROVENANCE got its fields;
# `numerics`: portable or free (docs/NUMERICS.md; a line without it trained free)
KEPT = ("trained_with_seeds", "analyses", "recovered", "numerics")


def is_records(path: Path) -> bool:
    return (Path(path) / RUNS).is_file()


def run_dirs_under(root: Path) -> list[Path]:
    """The finished run directories (run.json and eval.json) under `root`, sorted."""
    return sorted(
        p.parent for p in Path(root).rglob("eval.json") if (p.parent / RUN_JSON).is_file()
    )


def write_records(
    run_dirs: Sequence[Path],
    out: Path,
    *,
    root: Path,
    logs: bool = False,
    keep: Sequence[dict] = (),
) -> int:
    """Write the compact record of `run_dirs` (each named by its path under `root`) to `out`,
    after the rows of `keep` (runs recorded before, with their meta-tests and analyses).
    Nothing is written unless every run reads whole; returns the number of runs."""
    rows, meta_tests, analyses, names, configs = [], [], [], set(), {}
    for run in keep:
        rows.append(_row_of(run))
        if run.get("config") is not None:
            configs[run["config_digest"]] = run["config"]
        meta_tests += [{"run": run["run"], **m} for m in run["metrics"]]
        if run["analysis"]:
            analyses.append({"run": run["run"], **run["analysis"]})
        names.add(run["run"])
    archive = _archived(out) if logs else []
    for run_dir in run_dirs:
        name = Path(run_dir).relative_to(root).as_posix()
        if name in names:
            raise FocalppError(
                f"{run_dir}: run {name!r} is already in the record {out} (or given twice)"
            )
        names.add(name)
        run = _read_run_dir(Path(run_dir), name)
        row = _row_of(run)
        _check_recordable(row, run.get("effective_bindings"), Path(run_dir))
        check_same_configuration(row, run.get("effective_bindings"), rows, configs, out)
        rows.append(row)
        if run.get("effective_bindings") is not None:
            configs[row["config_digest"]] = run["effective_bindings"]
        meta_tests += [{"run": name, **m} for m in run["metrics"]]
        if run["analysis"]:
            analyses.append({"run": name, **run["analysis"]})
        if logs:
            archive.append(
                (f"{name}/metrics.jsonl", (Path(run_dir) / "metrics.jsonl").read_bytes())
            )
    _check_one_configuration_per_row(
        rows,
        f"cannot record into {out}",
        "a run's run.json was edited or damaged; restore it, or leave the run out",
    )
    config_lines = [{"config_digest": d, "bindings": configs[d]} for d in sorted(configs)]
    files = {
        out / name: "".join(_line(x) for x in lines).encode()
        for name, lines in (
            (META_TESTS, meta_tests),
            (ANALYSES, analyses),
            (CONFIGS, config_lines),
            (RUNS, rows),
        )
    }
    if logs:
        data = _tar_xz(archive)
        files[out / LOGS] = data
        files[out / LOGS_DIGEST] = f"{hashlib.sha256(data).hexdigest()}  {LOGS}\n".encode()
    made = make_dirs(out, "record folder")
    with removed_on_failure(made):  # the record's files all new, or all as they were
        atomic_write_all(files)
    return len(rows)


def _check_recordable(row: dict, bindings: Any, run_dir: Path) -> None:
    """A run's line passes every check a reader of the record makes (`read_records`), so that
    a record is never written that its readers then refuse: an edited run.json is named here."""
    where = f"cannot record {run_dir}: its {RUN_JSON}"
    fix = f"the run's {RUN_JSON} was edited or damaged; restore it, or leave the run out"
    check_choices(row, where, fix)
    check_provenance(row, where, fix)
    if row["config_digest"] == UNKNOWN:
        return
    if not _is_bindings(bindings) or config_digest(bindings) != row["config_digest"]:
        raise FocalppError(
            f"{where} has config_digest {row['config_digest'][:12]}…, but its "
            "effective_bindings are missing or do not hash to it: " + fix
        )
    check_configured(row, bindings, where, fix)


def _is_bindings(bindings: Any) -> bool:
    """A configuration as run.json and configs.jsonl hold it: binding -> its value's text."""
    return isinstance(bindings, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in bindings.items()
    )


def check_same_configuration(
    row: dict, bindings: dict | None, rows: Sequence[dict], configs: dict, out: Path
) -> None:
    """Refuse `row` (a run about to join the record) where the record's runs of its row were
    built otherwise (`check_one_build`), or recorded without a configuration to compare."""
    same_row = [r for r in rows if all(r.get(k) == row.get(k) for k in ROW)]
    if not same_row:
        return
    what = f"{row['recipe']} on {row['env']} at scale {row['scale']}" + (
        f" labelled {row['label']!r}" if row["label"] else ""
    )
    unknown = [r["run"] for r in same_row if r["config_digest"] == UNKNOWN]
    if unknown or row["config_digest"] == UNKNOWN:
        raise FocalppError(
            f"cannot add run {row['run']!r} to {out}: the record's runs of {what} (e.g. "
            f"{(unknown or [row['run']])[0]!r}) were recorded without a configuration digest, "
            "so they cannot be shown to be built like it; give the new runs a label of their "
            "own (`--label NAME`; in a study, `label = 'NAME'`) or record them in a new record"
        )
    recorded = [{**r, "config": configs.get(r["config_digest"])} for r in same_row]
    check_one_build(
        [*recorded, {**row, "config": bindings}],
        f"cannot add run {row['run']!r} to {out}: the record's runs of {what} and it",
    )


def _line(record: dict) -> str:
    return json.dumps(record, ensure_ascii=False, allow_nan=True) + "\n"


def _read_run_dir(run_dir: Path, name: str) -> dict[str, Any]:
    record = read_run_record(run_dir, doing="record")
    run = {**record, "run": name}
    if not (run_dir / "eval.json").is_file():
        raise FocalppError(
            f"cannot record {run_dir}: the run has not finished (it has no eval.json); finish "
            f"it (python tools/run.py --resume {run_dir}) or leave it out of the record"
        )
    run["eval"] = read_json_record(run_dir / "eval.json", "test_return_mean", "the record")
    check_numbers(run["eval"], run_dir / "eval.json")  # a NaN is refused here, not recorded
    analysis = run_dir / "analysis.json"
    run["analysis"] = read_json_record(analysis, None, "the record") if analysis.is_file() else {}
    check_analysis(run["analysis"], analysis)
    run["metrics"] = [m for m in read_checked_metrics(run_dir) if m.get("kind") == "eval"]
    return run


def read_json_record(path: Path, required: str | None, leave_out: str) -> dict[str, Any]:
    """A run's JSON file (eval.json, analysis.json) as an object, or an error that names the
    damaged file and says to restore it or leave the run out of `leave_out`."""
    fix = f"the run directory is damaged; restore the file or leave that run out of {leave_out}"
    try:
        record = loads(path.read_bytes())
    except OSError as e:
        raise FocalppError(f"cannot read {path} ({e.strerror}): {fix}") from e
    except ValueError as e:
        raise FocalppError(f"{path} is not valid JSON ({e}): {fix}") from e
    if not isinstance(record, dict) or (required is not None and required not in record):
        want = f" with {required!r}" if required else ""
        raise FocalppError(f"{path} is not a run's record (expected a JSON object{want}): {fix}")
    return record


def read_checked_metrics(run_dir: Path) -> list[dict[str, Any]]:
    """Every line of a run directory's log (metrics.jsonl), its meta-tests (`"kind": "eval"`)
    checked field by field."""
    path, lines = Path(run_dir) / "metrics.jsonl", []
    for number, line in jsonl(path, METRICS_DAMAGED):
        if line.get("kind") == "eval":
            check_meta_test(line, f"{path} line {number}")
        lines.append(line)
    return lines


def _row_of(run: dict[str, Any]) -> dict[str, Any]:
    """A run as one line of runs.jsonl: COLUMNS, then the kept keys it has."""
    defaults = {"label": "", "bindings": [], "plugins": [], "dataset": None}
    row = {k: run.get(k, defaults.get(k)) for k in CHOICES}
    for key in PROVENANCE:
        value = run.get(key)
        row[key] = UNKNOWN if value is None else value
    row["machine"] = run.get("machine")
    row["final"] = comparable(run)
    meta_tests = len(run["metrics"])
    row["last_three"] = last_meta_tests(run) if meta_tests >= 3 else None
    row["train_seconds"] = run["eval"].get("train_seconds")
    row["eval"] = run["eval"]
    row.update({k: run[k] for k in KEPT if k in run})
    return row


def _archived(out: Path) -> list[tuple[str, bytes]]:
    """The training logs a record holds already (kept when it is extended)."""
    if not (out / LOGS).is_file():
        return []
    with _opened_logs(out) as tar:
        return [(m.name, tar.extractfile(m).read()) for m in tar.getmembers() if m.isfile()]


@contextmanager
def _opened_logs(study: Path):
    """The training-log archive, open; one whose digest matches but that does not open (made
    or damaged elsewhere, its digest written to match) is refused by name."""
    try:
        with tarfile.open(fileobj=io.BytesIO(check_logs(study)), mode="r:xz") as tar:
            yield tar
    except (tarfile.TarError, lzma.LZMAError, EOFError) as e:
        archive = Path(study) / LOGS
        raise FocalppError(f"{archive} does not open as an archive ({e}): {DAMAGED}") from e


def _tar_xz(files: list[tuple[str, bytes]]) -> bytes:
    """A reproducible archive: sorted members, no times, owners or modes of this machine."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:xz", preset=9) as tar:
        for name, data in sorted(files):
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def read_records(study: Path) -> list[dict[str, Any]]:
    """The runs of a compact record, as tools/report.py reads run directories (`dir` is the
    study directory joined with the run's name); a damaged record is refused by file and line."""
    study = Path(study)
    if not is_records(study):
        raise FocalppError(
            f"{study} holds no compact record (expected {RUNS}, with {META_TESTS} and "
            f"{ANALYSES} beside it: tools/records.py writes them)"
        )
    runs, seen = {}, {}
    for number, row in jsonl(study / RUNS, DAMAGED):
        where = f"{study / RUNS} line {number}"
        missing = [c for c in COLUMNS if c not in row]
        if missing:
            raise FocalppError(f"{where} lacks column(s) {', '.join(missing)}: {DAMAGED}")
        check_choices(row, where)
        if row["run"] in seen:
            raise FocalppError(
                f"{where} lists run {row['run']!r} again (first at line {seen[row['run']]}): "
                f"a run counts once; {DAMAGED}"
            )
        seen[row["run"]] = number
        if not isinstance(row["eval"], dict):
            raise FocalppError(f"{where} has eval = {row['eval']!r}, expected eval.json's object")
        check_numbers(row["eval"], f"{where} (its eval)", DAMAGED)
        check_fields({k: row[k] for k in SCORES}, RUN_SCORES, where, DAMAGED, required=())
        check_provenance(row, where)
        runs[row["run"]] = {**row, "dir": study / row["run"], "metrics": [], "analysis": {}}
    configs = read_configs(study)
    for run in runs.values():
        digest = run["config_digest"]
        if digest != UNKNOWN and digest not in configs:
            raise FocalppError(
                f"{study / RUNS}: run {run['run']!r} has config_digest {digest[:12]}…, which "
                f"{study / CONFIGS} does not hold: {DAMAGED}"
            )
        run["config"] = configs.get(digest)
        if run["config"] is not None:
            check_configured(run, run["config"], f"{study / RUNS}: run {run['run']!r}")
    _check_one_configuration_per_row(list(runs.values()), study / RUNS)
    for name, key in ((META_TESTS, "metrics"), (ANALYSES, "analysis")):
        path = study / name
        for number, row in jsonl(path, DAMAGED) if path.is_file() else ():
            run = runs.get(row.pop("run", None))
            if run is None:
                raise FocalppError(
                    f"{path} line {number} names no run of {study / RUNS}: {DAMAGED}"
                )
            if key == "metrics":
                check_meta_test(row, f"{path} line {number}", DAMAGED)
                run["metrics"].append(row)
            else:
                check_analysis(row, f"{path} line {number}")
                run["analysis"] = row
    if (study / LOGS).is_file() or (study / LOGS_DIGEST).is_file():
        check_logs(study)
    return list(runs.values())


def _check_one_configuration_per_row(
    runs: list[dict], where: Path | str, fix: str | None = None
) -> None:
    """The runs of one row (ROW: recipe, label, environment, scale) share one configuration, as
    `write_records` lets them in: lines whose recipe or label was edited would move a run into
    another row, here named by the digests that differ. Rows recorded before configurations
    were (every digest `unknown`) cannot say by digest, but the parts their runs built (where
    known) must still agree: a row whose seeds built different encoders is no row."""
    fix = fix or DAMAGED
    rows: dict[tuple, tuple[dict[str, str], dict[str, tuple[str, dict]]]] = {}
    for run in runs:
        digests, parts = rows.setdefault(tuple(run[k] for k in ROW), ({}, {}))
        digests.setdefault(run["config_digest"], run["run"])
        if run["parts"] != UNKNOWN:  # the same names in any order, an empty kind as none
            built = {kind: sorted(names) for kind, names in run["parts"].items() if names}
            parts.setdefault(json.dumps(built, sort_keys=True), (run["run"], built))
    for row, (digests, parts) in rows.items():
        named = f"{where}: the runs of {row[0]} on {row[2]} at scale {row[3]}" + (
            f" labelled {row[1]!r}" if row[1] else ""
        )
        if len(digests) > 1:
            (a, run_a), (b, run_b) = list(digests.items())[:2]
            raise FocalppError(
                f"{named} hold {len(digests)} configurations ({run_a}: {a[:12]}…; {run_b}: "
                f"{b[:12]}…), where a record holds one per row: {fix}"
            )
        if len(parts) > 1:
            (run_a, a), (run_b, b) = list(parts.values())[:2]
            differ = "; ".join(
                f"{kind}: {', '.join(a.get(kind, [])) or 'none'} ({run_a}) v "
                f"{', '.join(b.get(kind, [])) or 'none'} ({run_b})"
                for kind in sorted(set(a) | set(b))
                if a.get(kind) != b.get(kind)
            )
            raise FocalppError(
                f"{named} built other parts ({differ}), where a row's runs build the same: {fix}"
            )


def read_configs(study: Path) -> dict[str, dict[str, str]]:
    """digest -> bindings of a record's configs.jsonl (none in a record without one), each
    checked to hash to its digest."""
    path, configs = Path(study) / CONFIGS, {}
    for number, line in jsonl(path, DAMAGED) if path.is_file() else ():
        where = f"{path} line {number}"
        digest, bindings = line.get("config_digest"), line.get("bindings")
        if not _is_bindings(bindings):
            raise FocalppError(f"{where}: expected bindings as an object of texts; {DAMAGED}")
        if digest != config_digest(bindings):
            raise FocalppError(
                f"{where}: its bindings do not hash to its config_digest {str(digest)[:12]}… "
                f"(edited?); {DAMAGED}"
            )
        if digest in configs:
            raise FocalppError(f"{where} gives configuration {digest[:12]}… again; {DAMAGED}")
        configs[digest] = bindings
    return configs


TEXTS = ("run", "recipe", "algorithm", "env", "scale", "device")  # never empty
DATASET_FIELDS = ("name", "tag", "manifest_sha256", "content_sha256", "numerics")
DATASET_NUMERICS = ("portable", "free", "unrecorded")  # as the dataset's manifest says


def _is_dataset(dataset: Any) -> bool:
    """The dataset a run names (components/experiment/facts.py): a blank digest would pass for
    unknown and let unlike data through a comparison."""
    if not isinstance(dataset, dict) or set(dataset) - set(DATASET_FIELDS):
        return False
    name, tag = dataset.get("name"), dataset.get("tag")
    content = dataset.get("content_sha256")
    return (
        isinstance(name, str)
        and bool(name.strip())
        and (tag is None or (isinstance(tag, str) and bool(tag.strip())))
        and isinstance(dataset.get("manifest_sha256"), str)
        and bool(_SHA256.fullmatch(dataset["manifest_sha256"]))
        and (content is None or (isinstance(content, str) and bool(_SHA256.fullmatch(content))))
        and dataset.get("numerics", "unrecorded") in DATASET_NUMERICS
    )


def check_choices(row: dict, where: str, fix: str | None = None) -> None:
    """The CHOICES fields of a runs.jsonl line, and the kept ones it has, have the types a
    run's record gives them (a hand edit or a damaged file is named, field and value)."""

    def bad(key: str, expected: str) -> FocalppError:
        return FocalppError(
            f"{where} has {key} = {row[key]!r}, expected {expected}: {fix or DAMAGED}"
        )

    def texts(value) -> bool:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)

    for key in TEXTS:
        if not isinstance(row[key], str) or not row[key]:
            raise bad(key, "a text")
    if not isinstance(row["label"], str):
        raise bad("label", "a text (empty for none)")
    try:
        check_seed(row["seed"], "seed")
    except FocalppError:
        raise bad("seed", "an integer seed in [0, 4294967295]") from None
    for key in ("bindings", "plugins"):
        if not texts(row[key]):
            raise bad(key, "a list of texts")
    if row["dataset"] is not None and not _is_dataset(row["dataset"]):
        raise bad(
            "dataset",
            "null or the dataset's object: its name, its manifest's SHA-256 and (built since "
            "builds said) its content's, a tag or null, its numerics "
            f"({', '.join(DATASET_NUMERICS)}) or none",
        )
    if row["machine"] is not None and not isinstance(row["machine"], str):
        raise bad("machine", "a text or null")
    if "analyses" in row and not texts(row["analyses"]):
        raise bad("analyses", "a list of analysis names")
    seeds = row.get("trained_with_seeds", [])
    if not isinstance(seeds, list) or any(
        isinstance(s, bool) or not isinstance(s, int) or not 0 <= s <= 2**32 - 1 for s in seeds
    ):
        raise bad("trained_with_seeds", "a list of seeds, each in [0, 4294967295]")
    if seeds and (len(set(seeds)) != len(seeds) or row["seed"] not in seeds):
        raise bad(
            "trained_with_seeds", f"distinct seeds, the run's own seed {row['seed']} among them"
        )
    mode = row.get("numerics", {"mode": "free"})
    if not isinstance(mode, dict) or mode.get("mode") not in ("portable", "free"):
        raise bad("numerics", "an object whose mode is 'portable' or 'free'")
    check_fields(mode, NUMERICS, where, fix or DAMAGED, required=("mode",), path="numerics")


# a line's choices that its configuration binds too (where the configuration has them: those
# recorded before a binding existed do not); a hand edit of one side is caught by the other
CONFIGURED = {
    "env": "experiment.env",
    "scale": "experiment.scale",
    "algorithm": "experiment.algorithm",
    "device": "experiment.device",
}


def check_configured(row: dict, config: dict[str, str], where: str, fix: str | None = None) -> None:
    """The line's env, scale, algorithm, device and requested precision equal what the
    configuration its digest names binds."""
    pairs = [(key, row[key], config.get(binding)) for key, binding in CONFIGURED.items()]
    if isinstance(row["precision"], dict) and "requested" in row["precision"]:
        requested = row["precision"]["requested"]
        pairs.append(("precision.requested", requested, config.get("loop.loop.precision")))
    for key, value, bound in pairs:
        if bound is not None and value != _gin_value(bound):
            raise FocalppError(
                f"{where} has {key} = {value!r}, but its configuration "
                f"{row['config_digest'][:12]}… binds {_gin_value(bound)!r}: {fix or DAMAGED}"
            )


def _gin_value(text: str) -> Any:
    """A binding's value as configs.jsonl writes it: '@focal' -> 'focal', "'cpu'" -> 'cpu'."""
    if text.startswith("@"):
        return text[1:]
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def check_provenance(row: dict, where: str, fix: str | None = None) -> None:
    """The PROVENANCE fields of a runs.jsonl line have their types (UNKNOWN allowed)."""

    def bad(key: str, expected: str) -> FocalppError:
        return FocalppError(
            f"{where} has {key} = {row[key]!r}, expected {expected} or {UNKNOWN!r}: "
            f"{fix or DAMAGED}"
        )

    for key, pattern in (("commit", _SHA1), ("config_digest", _SHA256)):
        if row[key] != UNKNOWN and not (isinstance(row[key], str) and pattern.fullmatch(row[key])):
            raise bad(key, "a hexadecimal digest")
    if row["clean"] != UNKNOWN and not isinstance(row["clean"], bool):
        raise bad("clean", "true or false")
    for key in ("cpu", "torch"):
        if not isinstance(row[key], str) or not row[key]:
            raise bad(key, "a text")
    parts = row["parts"]
    if parts != UNKNOWN and not (
        isinstance(parts, dict)
        and parts
        and all(
            isinstance(names, list) and names and all(isinstance(n, str) for n in names)
            for names in parts.values()
        )
    ):
        raise bad("parts", "an object of kind -> registered names")
    precision = row["precision"]
    if precision != UNKNOWN and not (
        isinstance(precision, dict) and precision.get("precision") in PRECISIONS
    ):
        raise bad("precision", f"an object whose precision is one of {', '.join(PRECISIONS)}")


_SHA1, _SHA256 = re.compile(r"[0-9a-f]{40}"), re.compile(r"[0-9a-f]{64}")
PRECISIONS = ("fp32", "bf16", "fp16")


def check_logs(study: Path) -> bytes:
    """The training-log archive's bytes, once its digest is the one recorded beside it."""
    archive, digest = Path(study) / LOGS, Path(study) / LOGS_DIGEST
    if not archive.is_file() or not digest.is_file():
        raise FocalppError(
            f"{study} has one of {LOGS} and {LOGS_DIGEST} without the other: {DAMAGED}"
        )
    data, text = archive.read_bytes(), digest.read_bytes().decode("utf-8", "replace")
    expected = text.split()[0] if text.strip() else ""
    found = hashlib.sha256(data).hexdigest()
    if found != expected:
        raise FocalppError(
            f"{archive} has SHA-256 {found[:12]}…, but {digest} records "
            f"{expected[:12] or 'none'}…: the archive was changed or damaged; {DAMAGED}"
        )
    return data


def read_logs(study: Path, run: str) -> list[dict[str, Any]]:
    """Every record of one run's training log (its metrics.jsonl), from the study's archive."""
    with _opened_logs(study) as tar:
        try:
            member = tar.extractfile(f"{run}/metrics.jsonl")
        except KeyError:
            member = None
        if member is None:
            raise FocalppError(f"{Path(study) / LOGS} holds no training log of run {run!r}")
        data = member.read()
    return [record for _, record in jsonl(Path(study) / LOGS / run, DAMAGED, data)]


def check_numbers(record: dict, path: Path | str, fix: str | None = None) -> None:
    """Every field of a run's final meta-test (eval.json) has its type and range
    (components/reports/fields.py): a NaN from a diverged evaluation, or an edit, would print as
    a number and spoil its row's mean and interval without a word."""
    check_fields(record, EVAL, str(path), fix or UNUSABLE)


def check_meta_test(record: dict, path: Path | str, fix: str | None = None) -> None:
    """The same for one meta-test line of a run's log (or of a record's meta_tests.jsonl)."""
    required = ("step", "test_return_mean")
    check_fields(record, META_TEST, str(path), fix or UNUSABLE, required=required)


UNUSABLE = (
    "the run's evaluation is not usable (it diverged, or the file was edited): rerun the run, "
    "or leave it out of the report"
)


def check_analysis(record: dict, path: Path | str) -> None:
    """An analysis.json holds no NaN: a measure that came out NaN (a diverged run, a degenerate
    batch, an edit) would print as 'nan' and spoil a table's mean without a word. Infinity is
    kept (a variance ratio of task vectors that do not differ between tasks; the sections say
    '-')."""
    for where, value in _leaves(record, ""):
        if isinstance(value, float) and math.isnan(value):
            raise FocalppError(
                f"{path} has {where} = nan: expected a number; the analysis is not usable (the "
                "run diverged, or the file was edited): run the analysis again, or leave the run "
                "out of the report"
            )


def _leaves(value, where: str):
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _leaves(inner, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            yield from _leaves(inner, f"{where}[{i}]")
    else:
        yield where, value


DAMAGED = "the study's record is damaged; restore it from the repository (git checkout)"

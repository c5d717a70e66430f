"""What a new run states about itself, the fields of its run.json: its choices, the code and
machine that train it, the configuration that took effect (digest, bindings, built parts) and the
dataset it reads. components/outputs/run_record.py writes and reads the file."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gin
import torch

import components.numerics as numerics
from components.algorithms.seed_records import with_seed
from components.machine import cpu, summary
from components.outputs.run_record import plugin_reference, portable
from registry import Composition, operative_config
from registry.provenance import built_parts, config_digest, effective_bindings
from registry.usage import provenance

ROOT = Path(__file__).resolve().parents[2]


def run_facts(
    comp: Composition,
    algorithm: Any,
    seed: int,
    *,
    label: str,
    seeds: Sequence[int],
    configuration: dict[str, Any],
) -> dict[str, Any]:
    """The run.json fields of a new run of `comp` with `seed` (`seeds`: all seeds trained
    together with it, or empty for a single run); call after the algorithm has built its
    parts."""
    exp = comp.experiment
    return {
        "recipe": portable(comp.recipe),
        "algorithm": exp.algorithm_name,
        "env": exp.env,
        "scale": exp.scale,
        "seed": seed,
        "device": exp.device,
        "bindings": list(comp.bindings),
        "label": label,
        "plugins": [plugin_reference(p) for p in comp.plugins],
        "sources": [portable_source(s) for s in comp.sources],
        "binding_sources": [binding.to_dict() for binding in provenance()],
        "analyses": list(exp.analyses),  # run at its end; --resume finishes them
        # every binding parsed, as gin writes it: a resume or an analysis rebuilds the run from
        # this, never from the recipe files (which may have changed since)
        "config": gin.config_str(),
        **code_and_machine(),
        "machine": summary(),
        **configuration,
        **({"trained_with_seeds": list(seeds)} if seeds else {}),
        **dataset_record(algorithm),
    }


def seed_config(seed: int, grouped: bool) -> str:
    """The operative configuration; of one of several seeds trained together, as that seed's
    single run would have it."""
    return with_seed(operative_config(), seed) if grouped else operative_config()


def configuration_record(analyses: Sequence[str]) -> dict[str, Any]:
    """What the run is built from (after its parts are built): every binding that took effect,
    their digest, and the registered parts built, by kind (registry/provenance.py)."""
    bindings = effective_bindings(later=analyses)
    return {
        "config_digest": config_digest(bindings),
        "parts": built_parts(),
        "effective_bindings": bindings,
    }


def code_and_machine() -> dict[str, Any]:
    """The code and machine that train the run: the commit and whether the checkout had
    uncommitted changes ('unknown' outside a git checkout), the CPU, the torch version, and the
    numerics in force (portable: the same bits on every x86 CPU; components/numerics.py)."""
    commit = source_commit()
    return {
        "commit": commit.rstrip("+") if commit else "unknown",
        "clean": not commit.endswith("+") if commit else "unknown",
        "cpu": cpu(),
        "torch": torch.__version__,
        "numerics": numerics.state(),
    }


def source_commit() -> str | None:
    """The git commit of the code that trains the run (`+` if it has uncommitted changes), or
    None outside a git checkout: a record names the code its numbers came from."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", "components",
             "registry", "recipes", "tools"],
            cwd=ROOT, capture_output=True, text=True, timeout=10,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode != 0:
        return None
    return head.stdout.strip() + ("+" if dirty.stdout.strip() else "")


def dataset_record(algorithm: Any) -> dict[str, Any]:
    """Which dataset the run trains on: its name in the store, its tag (the variant of
    collection settings; `-shards<K>` for a build in shards), its manifest digest (this build)
    and its content digest (these data, wherever built), which the resume of the run checks."""
    dataset = dataset_of(algorithm)
    if dataset is None:
        return {}
    name = f"{dataset.path.parent.name}/{dataset.path.name}"
    tag = dataset.manifest.get("tag")
    return {
        "dataset": {
            "name": name,
            "tag": tag,
            "manifest_sha256": dataset.digest,
            "content_sha256": dataset.content_digest,
            "numerics": (dataset.manifest.get("numerics") or {}).get("mode", "unrecorded"),
        }
    }


def dataset_of(algorithm: Any) -> Any:
    """The store dataset an algorithm trains on: its task data's, or (an algorithm of one's
    own that loads its data itself) its own `dataset`; None if it has none."""
    data = getattr(algorithm, "data", None)
    return getattr(data, "dataset", None) or getattr(algorithm, "dataset", None)


def portable_source(source: str) -> str:
    """A source file as a portable path; anything else (a description of bindings) as is."""
    try:
        is_file = Path(source).is_file()
    except OSError:  # e.g. a description longer than a file name may be
        is_file = False
    return portable(source) if is_file else source

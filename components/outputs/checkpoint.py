"""What a run needs to continue exactly where it stopped: random-number states, a fingerprint
of its configuration, checkpoints that prove they are whole, and polite stopping on Ctrl-C /
SIGTERM.

A checkpoint file is one header line, `focalpp-checkpoint sha256=<hex>`, then the bytes of
`torch.save(state)`; the loader recomputes the digest before unpickling anything, so a flipped
bit, a truncated copy or another file in its place is refused as damaged. The file is written
whole to a temporary file, fsynced and renamed over `checkpoint.pt`; the checkpoint it replaces
stays as `checkpoint.prev.pt`, the state to fall back on if the newest one is ever damaged. A
write killed half-way leaves only a stale `.checkpoint.pt.*.tmp`, which
`remove_stale_temporaries` clears on resume.

Checkpoints are data: they are loaded with `torch.load(..., weights_only=True)`, which builds
tensors and plain containers only and never runs code from the file. The one non-tensor state
(NumPy's random state) is stored as a tensor for that reason.
"""

from __future__ import annotations

import hashlib
import io
import os
import random
import re
import signal
import threading
from pathlib import Path
from typing import Any

import gin
import numpy as np
import torch

from components.outputs.run_dir import atomic_file
from registry import FocalppError
from registry.renames import legacy_config_str

CHECKPOINT = "checkpoint.pt"
PREVIOUS = "checkpoint.prev.pt"
_MAGIC = b"focalpp-checkpoint sha256="


class CheckpointError(FocalppError):
    """A checkpoint is missing, unreadable or belongs to another configuration."""


def rng_state(generators: dict[str, torch.Generator]) -> dict[str, Any]:
    """Every random state a run draws from: Python, NumPy, torch (CPU, CUDA) and its own
    generators (e.g. the sampler's)."""
    return {
        "python": random.getstate(),
        "numpy": _numpy_state(),
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
        "generators": {name: g.get_state() for name, g in generators.items()},
    }


def restore_rng_state(state: dict[str, Any], generators: dict[str, torch.Generator]) -> None:
    random.setstate(state["python"])
    np.random.set_state(_numpy_state_from(state["numpy"]))
    torch.set_rng_state(state["torch"])
    if state["cuda"] is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
    for name, g in generators.items():
        g.set_state(state["generators"][name])


# What is measured after a run does not configure it: left out of the fingerprint, so asking
# for other analyses (or a recipe that asks for them) still resumes and analyses a run.
_AFTER_THE_RUN = re.compile(r"^experiment\.analyses = .*?(?=^\S|\Z)", re.MULTILINE | re.DOTALL)


def config_fingerprint(config: str | None = None) -> str:
    """SHA-256 of the parsed gin configuration (every binding of the recipe, its columns and
    flags but `experiment.analyses`): a resumed run must be configured exactly as the run it
    continues."""
    config = gin.config_str() if config is None else config
    return hashlib.sha256(_AFTER_THE_RUN.sub("", config).encode()).hexdigest()


def _numpy_state() -> tuple:
    """NumPy's global random state with its key as a tensor (loadable with weights_only)."""
    name, key, pos, has_gauss, cached = np.random.get_state()
    return (name, torch.from_numpy(key.astype(np.int64)), pos, has_gauss, cached)


def _numpy_state_from(saved: tuple) -> tuple:
    name, key, pos, has_gauss, cached = saved
    key = key.numpy() if isinstance(key, torch.Tensor) else key  # older checkpoints: an array
    return (name, np.asarray(key, dtype=np.uint32), pos, has_gauss, cached)


def save_checkpoint(state: dict[str, Any], run_dir: Path) -> None:
    """Write `run_dir/checkpoint.pt` whole (digest header + torch bytes), keeping the one it
    replaces as `checkpoint.prev.pt`; at every instant `checkpoint.pt` is a whole checkpoint."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    payload = buffer.getbuffer()
    path, previous = Path(run_dir) / CHECKPOINT, Path(run_dir) / PREVIOUS

    def keep_previous() -> None:  # by a hard link, so that `path` never vanishes
        if path.exists():
            link = previous.with_name(f".{PREVIOUS}.link.tmp")
            link.unlink(missing_ok=True)
            os.link(path, link)
            os.replace(link, previous)

    with atomic_file(path, before_replace=keep_previous) as f:
        f.write(_MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n")
        f.write(payload)


def load_checkpoint(run_dir: Path, *, fingerprint: str | None = None) -> dict[str, Any]:
    """Load `run_dir/checkpoint.pt` after checking its digest; with `fingerprint`, refuse one
    made under another configuration."""
    path = Path(run_dir) / CHECKPOINT
    if not path.is_file():
        raise CheckpointError(
            f"{run_dir} has no {CHECKPOINT}: the run stopped before its first checkpoint, so "
            "there is nothing to resume; start it again without --resume"
        )
    state = read_checkpoint(path)
    if fingerprint is not None:
        check_fingerprint(state, fingerprint, path)
    return state


def read_checkpoint(path: Path) -> dict[str, Any]:
    """The state in one checkpoint file, or a CheckpointError that says it is damaged and what
    earlier state the run directory still holds."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise CheckpointError(f"cannot read checkpoint {path}: {e.strerror}") from e
    if data.startswith(_MAGIC):
        header, _, payload = data.partition(b"\n")
        expected = header[len(_MAGIC) :].decode("ascii", "replace")
        if hashlib.sha256(payload).hexdigest() != expected:
            raise _damaged(path, "its content does not match the digest written with it")
        try:
            state = torch.load(io.BytesIO(payload), map_location="cpu", weights_only=True)
        except Exception as e:  # a whole file that still does not unpickle as data
            raise _damaged(path, f"it does not load as tensors and plain data ({_why(e)})") from e
    elif data.startswith(b"PK"):  # a zip: written before checkpoints carried a digest
        try:
            with torch.serialization.safe_globals(_legacy_globals()):
                state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
        except Exception as e:
            raise _damaged(path, f"it does not load as tensors and plain data ({_why(e)})") from e
    else:
        raise _damaged(path, "it does not start like a focalpp checkpoint")
    if not isinstance(state, dict) or "step" not in state:
        raise _damaged(path, "it holds no training step")
    return state


def _legacy_globals() -> list:
    """What older checkpoints need besides tensors: NumPy's random state as an array."""
    core = getattr(np, "_core", None) or np.core  # NumPy 2 renamed np.core
    return [core.multiarray._reconstruct, np.ndarray, np.dtype, type(np.dtype(np.uint32))]


def _why(error: Exception) -> str:
    """torch's reason in one line (its full message also suggests loading unsafely)."""
    text = str(error)
    found = re.search(r"WeightsUnpickler error: ([^\n]*)", text)
    reason = found.group(1).split(" Please use")[0] if found else text.strip().splitlines()[0]
    return reason[:200]


def _damaged(path: Path, why: str) -> CheckpointError:
    previous = path.with_name(PREVIOUS)
    fallback = (
        f"The previous checkpoint {previous} is whole (step {_step_of(previous)}): to continue "
        f"from it, move it over {path.name} (`mv {previous} {path}`) and resume again."
        if previous != path and _step_of(previous) is not None
        else "No earlier checkpoint is kept; start the run again."
    )
    return CheckpointError(f"checkpoint {path} is damaged: {why}. {fallback}")


def _step_of(path: Path) -> int | None:
    try:
        return int(read_checkpoint(path)["step"])
    except (CheckpointError, FileNotFoundError):
        return None


def check_fingerprint(state: dict[str, Any], fingerprint: str, path: Path) -> None:
    """Refuse a checkpoint written under another configuration than `fingerprint` (or than the
    same configuration in the names bindings had before `registry.renames`)."""
    legacy = config_fingerprint(legacy_config_str())
    if state.get("config_fingerprint") not in (fingerprint, legacy):
        raise CheckpointError(
            f"{path} was written under a different configuration: the configuration run.json "
            "keeps (or, for a run recorded before it kept one, the recipe files or bindings) "
            "changed since the run started. Resume the run as it was recorded, or start a new run"
        )


def remove_stale_temporaries(run_dir: Path) -> list[Path]:
    """Delete temporary files left by writes that were killed before their rename."""
    stale = sorted(Path(run_dir).glob(".*.tmp"))
    for path in stale:
        path.unlink(missing_ok=True)
    return stale


class StopRequests:
    """While active, SIGINT and SIGTERM ask the training loop to stop at the next step
    boundary (`requested`) instead of killing it mid-update; a second signal interrupts at
    once. Outside the main thread (where handlers cannot be installed) it does nothing."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.requested: str | None = None
        self._previous: dict[int, Any] = {}

    def _handle(self, signum: int, frame: Any) -> None:
        if self.requested is not None:
            raise KeyboardInterrupt
        self.requested = signal.Signals(signum).name

    def __enter__(self) -> StopRequests:
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

"""What a run needs to continue exactly where it stopped: random-number states, a fingerprint
of its configuration, a validated checkpoint loader, and polite stopping on Ctrl-C / SIGTERM.

A checkpoint is written with `atomic_torch_save` (temporary file, fsync, rename), so the
previous checkpoint stays whole until the new one is complete; a write killed half-way leaves
only a stale `.checkpoint.pt.*.tmp` behind, which `remove_stale_temporaries` clears on resume.
"""

from __future__ import annotations

import hashlib
import random
import signal
import threading
from pathlib import Path
from typing import Any

import gin
import numpy as np
import torch

from registry import FocalppError

CHECKPOINT = "checkpoint.pt"


class CheckpointError(FocalppError):
    """A checkpoint is missing, unreadable or belongs to another configuration."""


def rng_state(generators: dict[str, torch.Generator]) -> dict[str, Any]:
    """Every random state a run draws from: Python, NumPy, torch (CPU, CUDA) and its own
    generators (e.g. the sampler's)."""
    return {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
        "generators": {name: g.get_state() for name, g in generators.items()},
    }


def restore_rng_state(state: dict[str, Any], generators: dict[str, torch.Generator]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if state["cuda"] is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
    for name, g in generators.items():
        g.set_state(state["generators"][name])


def config_fingerprint() -> str:
    """SHA-256 of the parsed gin configuration (every binding of the recipe, its columns and
    flags): a resumed run must be configured exactly as the run it continues."""
    return hashlib.sha256(gin.config_str().encode()).hexdigest()


def load_checkpoint(run_dir: Path, *, fingerprint: str | None = None) -> dict[str, Any]:
    """Load `run_dir/checkpoint.pt`; with `fingerprint`, refuse one made under another config."""
    path = Path(run_dir) / CHECKPOINT
    if not path.is_file():
        raise CheckpointError(
            f"{run_dir} has no {CHECKPOINT}: the run stopped before its first checkpoint, so "
            "there is nothing to resume; start it again without --resume"
        )
    try:
        state = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as e:  # pickle and zip errors have many types
        raise CheckpointError(f"cannot read checkpoint {path}: {e}") from e
    if not isinstance(state, dict) or "step" not in state:
        raise CheckpointError(f"{path} is not a focalpp checkpoint (no training step recorded)")
    if fingerprint is not None:
        check_fingerprint(state, fingerprint, path)
    return state


def check_fingerprint(state: dict[str, Any], fingerprint: str, path: Path) -> None:
    """Refuse a checkpoint written under another configuration than `fingerprint`."""
    if state.get("config_fingerprint") != fingerprint:
        raise CheckpointError(
            f"{path} was written under a different configuration: the recipe files or "
            "bindings changed since the run started. Resume with the same recipe, or start a "
            "new run"
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

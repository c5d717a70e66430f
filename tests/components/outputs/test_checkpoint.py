"""Checkpoints prove they are whole: a digest checked before unpickling, the previous one kept,
data-only loading."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from components.outputs.checkpoint import (
    CHECKPOINT,
    PREVIOUS,
    CheckpointError,
    load_checkpoint,
    restore_rng_state,
    rng_state,
    save_checkpoint,
)
from registry import WriteError


def state(step: int) -> dict:
    return {"step": step, "weights": torch.arange(1000.0) * step, "rng": rng_state({})}


def test_round_trip_keeps_the_previous_checkpoint(tmp_path):
    save_checkpoint(state(1), tmp_path)
    assert not (tmp_path / PREVIOUS).exists()
    save_checkpoint(state(2), tmp_path)
    loaded = load_checkpoint(tmp_path)
    assert loaded["step"] == 2 and torch.equal(loaded["weights"], torch.arange(1000.0) * 2)
    assert load_checkpoint(tmp_path)["step"] == 2
    assert not list(tmp_path.glob(".*.tmp"))


def test_random_states_survive_data_only_loading(tmp_path):
    np.random.seed(5)
    save_checkpoint(state(1), tmp_path)
    expected = np.random.rand(3)
    np.random.seed(9)
    restore_rng_state(load_checkpoint(tmp_path)["rng"], {})
    assert np.array_equal(np.random.rand(3), expected)


def flip_a_bit_in_the_tensors(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "spoil",
    [
        flip_a_bit_in_the_tensors,
        lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]),
        lambda p: p.write_text("not a checkpoint at all"),
    ],
    ids=["bit flip", "truncated", "text"],
)
def test_a_damaged_checkpoint_is_refused_and_the_previous_one_named(tmp_path, spoil):
    save_checkpoint(state(1), tmp_path)
    save_checkpoint(state(2), tmp_path)
    spoil(tmp_path / CHECKPOINT)
    with pytest.raises(CheckpointError) as caught:
        load_checkpoint(tmp_path)
    message = str(caught.value)
    assert "is damaged" in message and "(step 1)" in message and f"mv {tmp_path}" in message


def test_without_a_previous_one_the_message_says_so(tmp_path):
    save_checkpoint(state(1), tmp_path)
    flip_a_bit_in_the_tensors(tmp_path / CHECKPOINT)
    with pytest.raises(CheckpointError, match="No earlier checkpoint is kept"):
        load_checkpoint(tmp_path)


class Payload:
    """Unpickling this object would run code (here: create a file)."""

    def __init__(self, target):
        self.target = target

    def __reduce__(self):
        return (open, (str(self.target), "w"))


@pytest.mark.parametrize("with_digest", [True, False])
def test_a_checkpoint_that_would_run_code_is_refused(tmp_path, with_digest):
    """weights_only loading: a pickle that calls a function is refused, digest or not."""
    import hashlib
    import io

    target = tmp_path / "was-run"
    buffer = io.BytesIO()
    torch.save({"step": 1, "evil": Payload(target)}, buffer)
    payload = buffer.getvalue()
    data = payload
    if with_digest:
        data = b"focalpp-checkpoint sha256=" + hashlib.sha256(payload).hexdigest().encode()
        data += b"\n" + payload
    (tmp_path / CHECKPOINT).write_bytes(data)
    with pytest.raises(CheckpointError, match="is damaged"):
        load_checkpoint(tmp_path)
    assert not target.exists()


def test_a_checkpoint_from_before_digests_still_loads(tmp_path):
    """Checkpoints written as a plain torch.save (with NumPy's random state as an array) load."""
    legacy = {"step": 3, "rng": {"numpy": np.random.get_state()}, "w": torch.ones(2)}
    torch.save(legacy, tmp_path / CHECKPOINT)
    loaded = load_checkpoint(tmp_path)
    assert loaded["step"] == 3 and isinstance(loaded["rng"]["numpy"][1], np.ndarray)


def test_the_fingerprint_ignores_what_is_measured_after_the_run():
    """Asking for analyses (`experiment.analyses`) does not configure the run: a run resumes
    and re-analyses whatever analyses its recipe asks for now; any other binding counts."""
    from components.outputs.checkpoint import config_fingerprint
    from registry import compose

    def fingerprint(*bindings: str) -> str:
        compose("csro.gin", env="point_robot_wind", scale="tiny", bindings=list(bindings))
        return config_fingerprint()

    plain = fingerprint()
    many = "experiment.analyses = ['context_grid', 'embedding_variance', 'task_vectors', 'tsne']"
    assert fingerprint(many) == plain  # a list long enough to wrap over several lines
    assert fingerprint("experiment.analyses = ['context_grid']") == plain
    assert fingerprint("club.weight = 6.0") != plain
    assert fingerprint("experiment.seed = 1") != plain


# --- a write the machine refuses ----------------------------------------------------------

REFUSED_WRITE = """
import resource, signal, sys, torch
sys.path.insert(0, {root!r})
from components.outputs.checkpoint import save_checkpoint
from components.outputs.metrics import MetricsLog
from registry import WriteError
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG instead of a kill
save_checkpoint({{"step": 1, "weights": torch.arange(3.0)}}, {run_dir!r})
log = MetricsLog({run_dir!r}, tensorboard=False)
log.write(1, "train", {{"loss": 1.0}})
resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))  # as a disk that fills
for what, write in (
    ("checkpoint", lambda: save_checkpoint({{"big": torch.zeros(100_000)}}, {run_dir!r})),
    ("metrics", lambda: log.write(2, "train", {{"pad": "x" * 300_000}})),
):
    try:
        write()
    except WriteError as e:
        print(what, e)
"""


def test_a_refused_write_is_named_and_the_previous_checkpoint_stays_whole(tmp_path):
    """A file-size limit makes the operating system refuse the write, as a full disk does
    (EFBIG for ENOSPC): the error names the file and the cause, the checkpoint written before
    still loads, and no temporary file is left."""
    import subprocess
    import sys

    from components.outputs.metrics import MetricsLog, read_metrics
    from tests.conftest import ROOT

    script = REFUSED_WRITE.format(root=str(ROOT), run_dir=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    checkpoint, metrics = done.stdout.strip().splitlines()
    assert checkpoint.startswith(f"checkpoint cannot write {tmp_path / CHECKPOINT}: File too large")
    assert (
        "(EFBIG)" in checkpoint and "checkpoint.pt holds what it held before, whole" in checkpoint
    )
    assert metrics.startswith(f"metrics cannot write {tmp_path / 'metrics.jsonl'}: File too large")
    state = load_checkpoint(tmp_path)
    assert state["step"] == 1 and torch.equal(state["weights"], torch.arange(3.0))
    assert not list(tmp_path.glob(".*.tmp"))
    MetricsLog(tmp_path, tensorboard=False, resume=(1, 1)).close()  # as --resume: cut line dropped
    assert [r["step"] for r in read_metrics(tmp_path)] == [1]


def test_a_run_folder_replaced_by_a_file_is_named(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.write_text("not a folder")
    with pytest.raises(WriteError, match=rf"cannot write {run_dir / CHECKPOINT}: Not a directory"):
        save_checkpoint({"step": 1}, run_dir)

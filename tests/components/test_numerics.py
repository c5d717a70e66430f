"""Portable numerics: tiny builds equal the committed digests on whatever CPU runs the suite,
however many processes build them and whatever the CPU's libraries would choose by themselves;
too-late pinning and lost settings are refused with a message that says what to do."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from components import numerics, products
from components.outputs.run_record import recorded_numerics
from registry import FocalppError
from tests.conftest import ROOT

COMMITTED = json.loads((ROOT / "tests" / "data" / "portable_digests.json").read_text())
DIGESTS, OTHER_SETTINGS = COMMITTED["datasets"], COMMITTED["other_settings"]


def collect(
    env: str, out: Path, extra_env: dict[str, str] | None = None, *bindings: str, flags=()
) -> str:
    """`tools/collect.py --env ENV --scale tiny` in a process of its own; the content digest."""
    tool = [sys.executable, str(ROOT / "tools" / "collect.py")]
    extra = [word for binding in bindings for word in ("--gin_param", binding)]
    proc = subprocess.run(
        [*tool, "--env", env, "--scale", "tiny", "--out", str(out), *extra, *flags],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "250", **(extra_env or {})},
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    said = [line for line in proc.stdout.splitlines() if line.startswith('{"dataset"')]
    return digest_of(json.loads(said[-1])["dataset"])


def build_cores_here() -> int:
    """The cores a build in a tool process may use here (components/data/blocks.py)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return cores or 1


def digest_of(path) -> str:
    from components.data.store import load_dataset

    return load_dataset(Path(path)).content_digest


def test_the_suite_runs_with_portable_numerics():
    state = numerics.state()
    assert state["mode"] == numerics.PORTABLE, state
    assert state["mkl_cbwr"] == "COMPATIBLE" and state["torch_cpu_capability"] == "AVX2"
    assert state["numpy_dispatch"] == [] and state["torch_threads"] == 1
    assert state["openblas"] in ("Haswell, 1 thread", "not used")
    assert state["vector_math"] == "portable"


@pytest.mark.parametrize("env", sorted(DIGESTS))
def test_a_tiny_build_equals_its_committed_digest(env, tmp_path):
    """One worker: the blocks one after the other in the tool's own process."""
    assert collect(env, tmp_path, {numerics.WORKERS_ENV: "1"}) == DIGESTS[env]


def test_a_build_in_shards_equals_its_committed_digest(tmp_path):
    """Each shard in a tool process of its own, as on K machines: the products and vector math
    in force before the shard's first kernel (not only when its manifest is written)."""
    for index in (0, 1):
        tool = [sys.executable, str(ROOT / "tools" / "collect.py"), "--env", "sparse_point_robot"]
        proc = subprocess.run(
            [*tool, "--scale", "tiny", "--out", str(tmp_path), "--shard", f"{index}/2"],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        assert proc.returncode == 0, proc.stderr
    merged = collect("sparse_point_robot", tmp_path, None, flags=("--merge", "2"))
    assert merged == OTHER_SETTINGS["sparse_point_robot, tiny, shards 2"]


TWO_CORES = pytest.mark.skipif(
    build_cores_here() < 2, reason="two workers side by side need two cores (a build caps them)"
)


@TWO_CORES
def test_blocks_built_side_by_side_give_the_same_bytes(tmp_path):
    """Two worker processes (one per block) against the committed one-after-the-other digest."""
    assert (
        collect("walker_params", tmp_path, {numerics.WORKERS_ENV: "2"}) == DIGESTS["walker_params"]
    )


@TWO_CORES
def test_a_conditioned_learner_in_blocks_is_the_same_on_one_worker_or_two(tmp_path):
    """A conditioned learner cut into two blocks is two networks, each its block's: built one
    after the other or side by side, the same bytes; and other data than one network."""
    conditioned = "behaviour_sac.learner = 'conditioned'"
    two = (conditioned, "behaviour_sac.blocks = 2")
    one_worker = collect("sparse_cheetah_vel", tmp_path / "a", {numerics.WORKERS_ENV: "1"}, *two)
    two_workers = collect("sparse_cheetah_vel", tmp_path / "b", {numerics.WORKERS_ENV: "2"}, *two)
    whole = collect("sparse_cheetah_vel", tmp_path / "c", {numerics.WORKERS_ENV: "2"}, conditioned)
    assert one_worker == two_workers != whole


def test_what_the_cpu_would_choose_does_not_enter(tmp_path):
    """The settings another CPU's libraries take by themselves (an AVX2-only CPU's MKL and
    oneDNN kernels, two threads, numpy's AVX2 loops, OpenBLAS's AVX-512 kernels) are overridden
    by the pinned ones."""
    other_cpu = {
        "MKL_ENABLE_INSTRUCTIONS": "AVX2",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
        "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR",
        "OMP_NUM_THREADS": "2",
        "MKL_NUM_THREADS": "2",
        "ATEN_CPU_CAPABILITY": "default",
        "MKL_CBWR": "AUTO",
        "OPENBLAS_CORETYPE": "SkylakeX",
        "OPENBLAS_NUM_THREADS": "2",
    }
    assert collect("sparse_point_robot", tmp_path, other_cpu) == DIGESTS["sparse_point_robot"]


def test_a_library_call_from_a_free_process_builds_with_portable_numerics(tmp_path):
    """Python that loaded torch without the pinned settings (a notebook): its build runs in a
    worker process that has them, and gives the committed bytes."""
    script = (
        "import torch, gin\n"
        "from components import numerics\n"
        "assert numerics.mode() == 'free', numerics.state()\n"
        "import components.data.protocols, components.envs\n"
        "from components.data.build import ensure_dataset\n"
        "gin.parse_config_files_and_bindings(['recipes/scales/tiny.gin'], [])\n"
        f"ds = ensure_dataset('sparse_point_robot', 'checkpoints', 0, root={str(tmp_path)!r},\n"
        "                     tag='tiny')\n"
        "print(ds.content_digest)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=numerics.child_env(numerics.FREE, {**os.environ, "OMP_NUM_THREADS": "2"}),
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[-1] == DIGESTS["sparse_point_robot"]


def test_pinning_after_torch_has_loaded_is_refused():
    script = "import torch\nfrom components import numerics\nnumerics.pin()\n"
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=numerics.child_env(numerics.FREE),
        cwd=ROOT,
    )
    assert proc.returncode != 0
    assert "portable numerics must be set before torch and numpy load" in proc.stderr
    assert "components.numerics.pin() first thing" in proc.stderr


@pytest.mark.parametrize(
    "setting, said",
    [
        (("ATEN_CPU_CAPABILITY", "default"), "PyTorch's CPU kernels 'DEFAULT' (expected 'AVX2')"),
        (
            ("OPENBLAS_CORETYPE", "Sandybridge"),
            "numpy's OpenBLAS 'Sandybridge, 1 thread' (expected 'Haswell, 1 thread')",
        ),
    ],
)
def test_lost_settings_are_named(setting, said):
    """A process asked for portable numerics that runs otherwise says which setting is off."""
    script = (
        "from components import numerics\n"
        "try:\n"
        "    numerics.require('portable')\n"
        "except numerics.NumericsError as e:\n"
        "    print(e)\n"
    )
    env = numerics.child_env(numerics.PORTABLE)
    env[setting[0]] = setting[1]
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=ROOT
    )
    assert said in proc.stdout, proc.stderr
    with pytest.raises(numerics.NumericsError, match="numerics 'exact': expected one of"):
        numerics.require("exact")


def test_a_command_line_asks_for_its_mode(tmp_path):
    assert numerics.requested(["--recipe", "r.gin", "--numerics", "free"]) == "free"
    assert numerics.requested(["--numerics=portable"]) == "portable"
    assert numerics.requested(["--recipe", "r.gin"]) is None
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"numerics": {"mode": "portable"}}))
    assert numerics.resumed(["--resume", str(run), "--debug"]) == [str(run)]
    assert recorded_numerics([str(run)]) == "portable"
    assert recorded_numerics([str(tmp_path / "nothing")]) is None
    assert numerics.pin_for_command(["--resume", str(run)], recorded=recorded_numerics) == (
        "portable"
    )


def test_a_portable_run_records_its_numerics_and_trains_in_fp32(tiny_data, tmp_path):
    from tests.conftest import cli

    run = tmp_path / "run"
    common = ["--recipe", "recipes/focal.gin", "--scale", "tiny", "--numerics", "portable"]
    common += ["--gin_param", f"task_data.root = '{tiny_data}'"]
    r = cli("run", *common, "--gin_param", "loop.precision = 'auto'", "--out", str(run))
    assert r.returncode == 0, r.stderr
    record = json.loads((run / "run.json").read_text())
    assert record["numerics"]["mode"] == "portable" and record["dataset"]["numerics"] == "portable"
    assert record["precision"]["precision"] == "fp32"
    assert record["precision"]["reason"].startswith("portable numerics")
    bf16 = ["--gin_param", "loop.precision = 'bf16'", "--out", str(tmp_path / "bf16")]
    r = cli("run", *common, *bf16)
    assert r.returncode == 2 and "'bf16' with portable numerics" in r.stderr
    assert not (tmp_path / "bf16").exists()


def test_portable_numerics_are_the_cpus(monkeypatch):
    """In a process of portable numerics (this suite's), 'auto' is the CPU even where a GPU is
    there, and a GPU asked for is refused (a GPU rounds otherwise, so a run recorded as portable
    would not be), saying what to do; a user's error, which a tool reports in one line."""
    import torch

    from components.runtime import resolve_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # as on a GPU machine
    assert resolve_device("auto") == torch.device("cpu")
    assert resolve_device("cpu") == torch.device("cpu")
    for asked in ("cuda", "cuda:1"):
        with pytest.raises(numerics.NumericsError, match=f"device '{asked}' with portable") as e:
            resolve_device(asked)
        assert "--numerics free" in str(e.value) and "--device cpu" in str(e.value)
    assert issubclass(numerics.NumericsError, FocalppError)


def test_another_cpu_builds_free_by_default(monkeypatch, capsys, tmp_path):
    """Where portable numerics cannot hold (an ARM laptop), a build takes free ones by default
    (on this suite's CPUs, portable ones), and asking for portable ones ends in one line, exit
    status 2."""
    assert numerics.build_default() == numerics.PORTABLE
    monkeypatch.setattr(numerics.platform, "machine", lambda: "aarch64")
    assert numerics.build_default() == numerics.FREE
    assert numerics.pin_for_command([], default=lambda argv: numerics.build_default()) == "free"
    with pytest.raises(SystemExit) as e:
        numerics.pin_for_command(["--numerics", "portable"])
    assert e.value.code == 2
    said = capsys.readouterr().err
    assert said.startswith("error: portable numerics are defined for x86-64 CPUs")
    assert "aarch64" in said and "--numerics free" in said
    monkeypatch.setattr(numerics.platform, "machine", lambda: "x86_64")
    cpuinfo = tmp_path / "cpuinfo"  # an x86 CPU without AVX2 and FMA, as Linux lists it
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse sse2 ssse3 sse4_1 sse4_2 avx\n")
    monkeypatch.setattr(numerics, "CPUINFO", str(cpuinfo))
    assert numerics.build_default() == numerics.FREE
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma\n")
    assert numerics.build_default() == numerics.PORTABLE


def test_a_run_given_no_numerics_trains_free(tiny_data, tmp_path):
    """tools/run.py from a shell with nothing set, as a user starts it: free numerics (a
    portable step costs 1.3-1.5 free ones), recorded as free; `--numerics portable` pinned
    before torch loads, recorded as portable, its products on the pinned OpenBLAS."""
    tool = [sys.executable, str(ROOT / "tools" / "run.py")]
    args = ["--recipe", "recipes/focal.gin", "--scale", "tiny", "--device", "cpu"]
    args += ["--gin_param", f"task_data.root = '{tiny_data}'", "--gin_param", "loop.steps = 20"]
    free_shell = numerics.child_env(numerics.FREE)
    for asked, mode in (([], "free"), (["--numerics", "portable"], "portable")):
        run = tmp_path / mode
        proc = subprocess.run(
            [*tool, *args, *asked, "--out", str(run)], env=free_shell, capture_output=True
        )
        assert proc.returncode == 0, proc.stderr
        record = json.loads((run / "run.json").read_text())
        assert record["numerics"]["mode"] == mode
        products = "openblas" if mode == "portable" else "mkl"
        assert record["numerics"]["products"] == products


def test_a_portable_run_refuses_data_of_one_machine(tiny_data, tmp_path):
    """Data built with free numerics (tools/collect.py --numerics free) are this machine's
    only: a portable run says so instead of training on them."""
    from tests.conftest import cli

    store = tmp_path / "store"
    tool = [sys.executable, str(ROOT / "tools" / "collect.py")]
    args = ["--env", "sparse_point_robot", "--scale", "tiny", "--numerics", "free"]
    free = numerics.child_env(numerics.FREE)
    proc = subprocess.run([*tool, *args, "--out", str(store)], env=free, capture_output=True)
    assert proc.returncode == 0, proc.stderr
    args = ["--recipe", "recipes/focal.gin", "--scale", "tiny", "--numerics", "portable"]
    args += ["--gin_param", f"task_data.root = '{store}'", "--out", str(tmp_path / "run")]
    r = cli("run", *args)
    assert r.returncode == 2 and "built with free numerics" in r.stderr, r.stderr


def test_a_killed_build_leaves_no_worker_behind(tmp_path):
    """SIGKILL the build while its two workers train: they end with it (none builds on)."""
    import signal
    import time

    tool = [sys.executable, str(ROOT / "tools" / "collect.py")]
    args = ["--env", "point_robot_wind", "--out", str(tmp_path)]
    args += ["--gin_param", "behaviour_sac.env_steps = 20000"]  # minutes: killed long before
    env = {**os.environ, numerics.WORKERS_ENV: "2"}
    build = subprocess.Popen([*tool, *args], env=env, cwd=ROOT, stdout=subprocess.DEVNULL)
    children = Path(f"/proc/{build.pid}/task/{build.pid}/children")
    workers: list[int] = []
    while len(workers) < 3 and build.poll() is None:  # the two workers and the resource tracker
        workers = [int(p) for p in children.read_text().split()]
        time.sleep(0.05)
    time.sleep(1.0)  # the workers are past their start-up
    build.send_signal(signal.SIGKILL)
    build.wait()
    for _ in range(200):  # up to 10 s for the kernel to end them
        alive = [p for p in workers if Path(f"/proc/{p}").exists() and _running(p)]
        if not alive:
            break
        time.sleep(0.05)
    assert not alive, f"workers {alive} outlived the killed build"


def _running(pid: int) -> bool:
    """Not a zombie (a process that has ended but whose exit nobody collected yet)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def test_a_lone_block_on_several_threads_is_the_same_as_on_one(tmp_path):
    """One network for every task, built alone in the tool's process: its products cut into
    bands on three threads (every product, however small) give the one-thread bytes."""
    conditioned = "behaviour_sac.learner = 'conditioned'"
    one = collect("sparse_cheetah_vel", tmp_path / "a", {numerics.WORKERS_ENV: "1"}, conditioned)
    threads = {products.THREADS_ENV: "3", products.MIN_WORK_ENV: "0"}
    three = collect("sparse_cheetah_vel", tmp_path / "b", threads, conditioned)
    assert one == three

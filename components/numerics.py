"""Portable numerics: the same bits from the same inputs on every x86 CPU.

PyTorch, MKL and numpy choose their code paths at run time by the CPU at hand (its vendor, its
vector units) and split work by the thread count; each path rounds differently, so a dataset
built or a run trained on an AMD EPYC is other data than on an Intel Xeon. Pinned, every
library takes one path that exists on every x86-64 CPU with AVX2 and gives the same results
on all of them:

- MKL's conditional-numerical-reproducibility branch COMPATIBLE (`MKL_CBWR`), the one branch
  oneMKL documents as giving the same results on Intel and non-Intel processors (the AVX2 branch
  promises that only among Intel CPUs, and on an AMD EPYC it does round otherwise);
- PyTorch's AVX2 kernels (`ATEN_CPU_CAPABILITY`), so CPUs with and without AVX-512 vectorise
  alike;
- numpy's baseline loops, none of its run-time dispatched ones (`NPY_ENABLE_CPU_FEATURES`), and
  its OpenBLAS's AVX2 kernels (`OPENBLAS_CORETYPE`), which it would otherwise choose by the CPU;
- one thread per process (`OMP_NUM_THREADS`, `MKL_NUM_THREADS`, `OPENBLAS_NUM_THREADS`): a
  thread count splits sums differently. Parallel work runs in processes instead (a dataset's
  blocks: docs/NUMERICS.md);
- PyTorch's sqrt, log2, log10, tan, atan, asin and acos (and float64 log) on kernels of their
  own (components/vector_math.py): MKL's start from approximate reciprocal instructions, whose
  bits differ between Intel and AMD.
- PyTorch's float32 matrix products on numpy's OpenBLAS, pinned above (components/products.py):
  the same bits on every CPU with AVX2 and FMA, and 3 to 5 times as fast as MKL's COMPATIBLE
  branch at the shapes the networks here have.

The libraries read these settings once, when they load, so they must be in the environment
before torch or numpy is imported: `pin()` puts them there (the command-line tools call it
first thing, and a process they start inherits them), and refuses once it is too late.
`state()` reads back what the loaded libraries actually do; it is what manifests and run
records store. The same bits also need the same library versions (torch, which carries MKL;
numpy; mujoco; glibc's libm), which the record names too.
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Callable, Mapping, Sequence
from importlib import metadata

import components.products as products
import components.vector_math as vector_math
from registry.errors import FocalppError

PORTABLE, FREE = "portable", "free"
MODES = (PORTABLE, FREE)
ENV = "FOCALPP_NUMERICS"  # set by pin(): how a child process knows its parent asked for it
WORKERS_ENV = "FOCALPP_BUILD_WORKERS"  # caps the worker processes of a dataset build
NPY_DISABLE = "NPY_DISABLE_CPU_FEATURES"
NUMPY_BASELINE = "X86_V2"  # numpy 2.4's x86-64 baseline: enabling it alone enables no dispatch
OPENBLAS_CORE = "Haswell"  # numpy's OpenBLAS: its AVX2 + FMA kernels, whatever else the CPU has
THREADS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


class NumericsError(FocalppError, RuntimeError):
    """Portable numerics asked for where they cannot hold (too late, not an x86 CPU with AVX2
    and FMA, a GPU run): a tool says it in one line and exits 2."""


def portable_env() -> dict[str, str]:
    """The environment variables that pin the numerics (x86-64)."""
    return {
        ENV: PORTABLE,
        "MKL_CBWR": "COMPATIBLE",
        "ATEN_CPU_CAPABILITY": "avx2",
        "NPY_ENABLE_CPU_FEATURES": NUMPY_BASELINE,
        "OPENBLAS_CORETYPE": OPENBLAS_CORE,
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
    }


def _x86() -> bool:
    return platform.machine().lower() in ("x86_64", "amd64")


CPUINFO = "/proc/cpuinfo"  # where Linux lists the CPU's feature flags


def _cpu_flags() -> set[str]:
    """The CPU's feature flags as Linux lists them (empty where it cannot be read)."""
    try:
        with open(CPUINFO) as info:
            for line in info:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def holds() -> bool:
    """Whether portable numerics can hold on this CPU (x86-64 with AVX2 and FMA), told before
    torch loads."""
    return _x86() and {"avx2", "fma"} <= _cpu_flags()


def build_default() -> str:
    """A dataset build's numerics where none are asked for: portable where they hold, free on
    another CPU (an ARM laptop: data of that machine only, which its manifest says)."""
    return PORTABLE if holds() else FREE


def pin() -> None:
    """Pin this process's numerics (and its children's) before torch or numpy loads.

    Idempotent. Raises `NumericsError` where torch or numpy is already imported with other
    settings (they would not read the new ones), or on a CPU that is not x86-64."""
    if not _x86():
        raise NumericsError(
            f"portable numerics are defined for x86-64 CPUs; this is {platform.machine()}: "
            "use --numerics free"
        )
    wanted = portable_env()
    late = [m for m in ("torch", "numpy") if m in sys.modules]
    if late and any(os.environ.get(k) != v for k, v in wanted.items()):
        raise NumericsError(
            f"portable numerics must be set before torch and numpy load ({' and '.join(late)} "
            "already did here, and they read their settings once, when they load): call "
            "components.numerics.pin() first thing in the script, or start Python with "
            + " ".join(f"{k}={v}" for k, v in wanted.items())
        )
    os.environ.update(wanted)
    os.environ.pop(NPY_DISABLE, None)  # numpy refuses both lists; the enabled one decides


def child_env(mode: str, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a process started to run in `mode` (base: this process's)."""
    env = dict(os.environ if base is None else base)
    if mode == PORTABLE:
        env.update(portable_env())
        env.pop(NPY_DISABLE, None)
    else:
        for key in portable_env():
            if key not in THREADS:
                env.pop(key, None)
    return env


def requested(argv: Sequence[str]) -> str | None:
    """The mode a command line asks for with `--numerics MODE` (or `--numerics=MODE`)."""
    return _argument(argv, "--numerics")


def _argument(argv: Sequence[str], flag: str) -> str | None:
    """The value of `flag` on a command line (`--flag VALUE` or `--flag=VALUE`)."""
    for i, arg in enumerate(argv):
        if arg == flag and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(f"{flag}="):
            return arg.split("=", 1)[1]
    return None


def resumed(argv: Sequence[str]) -> list[str]:
    """The run directories after `--resume` on a command line."""
    if "--resume" not in argv:
        return []
    rest = argv[argv.index("--resume") + 1 :]
    return [a for a in rest[: next((i for i, a in enumerate(rest) if a.startswith("-")), None)]]


def pin_for_command(
    argv: Sequence[str] | None = None,
    default: str | Callable[[Sequence[str]], str] = FREE,
    recorded: Callable[[list[str]], str | None] = lambda run_dirs: None,
) -> str:
    """For a command-line tool, before it imports torch: the mode `--numerics MODE` asks for,
    else the one the runs it resumes trained with (`recorded`: read from their run.json,
    components/outputs/run_record.py), else `default` (a mode, or a function of the command
    line); pinned where portable. An unknown mode is left for the tool's own
    argument check to refuse."""
    argv = sys.argv[1:] if argv is None else list(argv)
    mode = requested(argv) or recorded(resumed(argv))
    if mode is None:
        mode = default if isinstance(default, str) else default(argv)
    if mode == PORTABLE:
        try:
            pin()
        except NumericsError as e:  # before the tool's own error handling has loaded
            print(f"error: {e}", file=sys.stderr)
            raise SystemExit(2) from None
    return mode


def state() -> dict[str, object]:
    """What the loaded libraries do here, and whether that is the portable path: the record a
    manifest and a run line keep (imports torch and numpy)."""
    import numpy as np
    import torch

    numpy_features = _numpy_dispatch()
    record: dict[str, object] = {
        "mkl_cbwr": _mkl_branch(torch),
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "numpy_dispatch": numpy_features,
        "openblas": _openblas(),
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "mujoco": _version("mujoco"),
        "libc": " ".join(platform.libc_ver()) or "unknown",
    }
    portable = (
        _x86()
        and record["mkl_cbwr"] == "COMPATIBLE"
        and record["torch_cpu_capability"] == "AVX2"
        and not numpy_features
        and record["openblas"] in (f"{OPENBLAS_CORE}, 1 thread", "not used")
        and record["torch_threads"] == 1
    )
    if portable:  # MKL's vector math for the few functions whose kernels round by vendor
        vector_math.install()
    if portable and record["openblas"] == f"{OPENBLAS_CORE}, 1 thread":
        products.install()  # float32 products on the pinned OpenBLAS (a numpy without: MKL's)
    record["vector_math"] = "portable" if vector_math.installed() else "mkl"
    record["products"] = "openblas" if products.installed() else "mkl"
    return {"mode": PORTABLE if portable else FREE, **record}


def mode() -> str:
    """'portable' where this process's libraries take the portable path, else 'free'."""
    return str(state()["mode"])


def require(wanted: str) -> dict[str, object]:
    """`state()`, having checked that it is `wanted`'s; a clear error where portable numerics
    were asked for and do not hold (a setting lost on the way, a CPU without AVX2)."""
    if wanted not in MODES:
        raise NumericsError(f"numerics {wanted!r}: expected one of {', '.join(MODES)}")
    found = state()
    if wanted == PORTABLE and found["mode"] != PORTABLE:
        wrong = {
            "MKL_CBWR": (found["mkl_cbwr"], "COMPATIBLE"),
            "PyTorch's CPU kernels": (found["torch_cpu_capability"], "AVX2"),
            "numpy's dispatched loops": (found["numpy_dispatch"] or "none", "none"),
            "numpy's OpenBLAS": (found["openblas"], f"{OPENBLAS_CORE}, 1 thread"),
            "torch threads": (found["torch_threads"], 1),
        }
        said = "; ".join(f"{k} {v!r} (expected {e!r})" for k, (v, e) in wrong.items() if v != e)
        raise NumericsError(
            f"portable numerics were asked for but do not hold in this process: {said}. "
            "They are set before torch and numpy load (components.numerics.pin()); PyTorch's "
            "AVX2 kernels need a CPU with AVX2"
        )
    return found


# oneMKL's codes for its reproducibility branches (mkl_service.h), as mkl_cbwr_get returns them
MKL_BRANCHES = {1: "OFF", 2: "AUTO", 3: "COMPATIBLE", 4: "SSE2", 6: "SSSE3", 7: "SSE4_1",
                8: "SSE4_2", 9: "AVX", 10: "AVX2", 12: "AVX512", 14: "AVX512_E1"}  # fmt: skip


def _mkl_branch(torch) -> str:
    """The branch MKL runs (asked of MKL itself, which torch's CPU library carries), or where
    MKL cannot be asked, the one $MKL_CBWR names."""
    import ctypes
    from pathlib import Path

    try:
        lib = ctypes.CDLL(str(Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"))
        get = lib.mkl_serv_cbwr_get
    except (OSError, AttributeError):  # another BLAS, or another platform's library name
        return os.environ.get("MKL_CBWR", "unknown")
    get.restype, get.argtypes = ctypes.c_int, [ctypes.c_int]
    code = get(1)  # MKL_CBWR_BRANCH
    return MKL_BRANCHES.get(code & 0xFFFF, str(code)) + (",STRICT" if code & 0x10000 else "")


def _numpy_dispatch() -> list[str]:
    """numpy's run-time dispatched CPU features in use (empty: its baseline loops only)."""
    try:
        from numpy._core import _multiarray_umath as umath
    except ImportError:  # numpy < 2
        from numpy.core import _multiarray_umath as umath
    return sorted(f for f in umath.__cpu_dispatch__ if umath.__cpu_features__.get(f))


def _openblas() -> str:
    """The kernels and threads of the OpenBLAS numpy carries (asked of OpenBLAS itself), or "not
    used" where numpy links another BLAS."""
    import ctypes
    from pathlib import Path

    import numpy as np

    libs = sorted((Path(np.__file__).parent.parent / "numpy.libs").glob("libscipy_openblas*.so"))
    if not libs:
        return "not used"
    lib = ctypes.CDLL(str(libs[0]))
    for suffix in ("64_", ""):  # the 64-bit-integer build's names, then the 32-bit one's
        corename = getattr(lib, f"scipy_openblas_get_corename{suffix}", None)
        num_threads = getattr(lib, f"scipy_openblas_get_num_threads{suffix}", None)
        if corename is not None and num_threads is not None:
            corename.restype = ctypes.c_char_p
            threads = num_threads()
            return f"{corename().decode()}, {threads} thread{'s' if threads != 1 else ''}"
    return "unknown"  # an OpenBLAS that cannot be asked: portable numerics refuse it by name


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"

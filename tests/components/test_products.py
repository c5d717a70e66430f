"""The `fma` numerics' products (components/products.py) are the FMA chains they are defined
as, on whatever CPU runs the suite: each product the installed kernels compute — plain, padded,
transposed, sliced, with a bias, batched, and as autograd calls them for a layer's gradients —
equals the chain computed exactly, element for element. The check runs in a process of its
own (the suite's own process keeps the `portable` numerics)."""

from __future__ import annotations

import json
import subprocess
import sys

from components import numerics
from tests.conftest import ROOT

PROBE = ROOT / "tests" / "components" / "fma_probe.py"


def probe(seed: int) -> dict[str, int]:
    proc = subprocess.run(
        [sys.executable, str(PROBE), str(seed)],
        capture_output=True,
        text=True,
        env=numerics.child_env(numerics.FMA),
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_every_product_is_its_fma_chain():
    found = probe(0)
    mkl = found.pop("MKL's portable product, elements equal to the chain")
    assert found == {case: 0 for case in found}, {k: v for k, v in found.items() if v}
    assert "linear: weight gradient" in found and "mm 1x1x1" in found
    # the reference tells other arithmetic apart: MKL's portable branch rounds otherwise
    assert mkl < 300 * 256 * 0.9, mkl

"""Value ranges written into a constructor's annotations, so the signature says what it accepts.

    def __init__(self, *, steps: PositiveInt = 100_000, lr: PositiveFloat = 1e-3,
                 hidden: Widths = (256, 256)): ...

`Annotated[int, Range(low=1)]` is still an `int` to Python and to type checkers; the `Range`
is read by the two places that judge values: `registry.validation.check_bindings` (every gin
binding, before anything is built) and `check_arguments` (a constructor called from Python).
The catalogue prints the range next to the argument. A float that passes any range is finite:
`1e999` parses as inf and no learning rate, temperature or weight can be infinite.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Annotated

from registry.errors import RecipeError


@dataclass(frozen=True)
class Range:
    """low ≤ value ≤ high (or < where open); None: unbounded on that side."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def holds(self, value: float) -> bool:
        if isinstance(value, float) and not math.isfinite(value):
            return False
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or (value < self.high if self.high_open else value <= self.high)

    def describe(self) -> str:
        if self.low is not None and self.high is not None:
            left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
            return f"in {left}{_num(self.low)}, {_num(self.high)}{right}"
        if self.low is not None:
            return f"{'>' if self.low_open else '≥'} {_num(self.low)}"
        if self.high is not None:
            return f"{'<' if self.high_open else '≤'} {_num(self.high)}"
        return "finite"


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


PositiveInt = Annotated[int, Range(low=1)]
Count = Annotated[int, Range(low=0)]  # a number of things or steps that may be zero
PositiveFloat = Annotated[float, Range(low=0, low_open=True)]
NonNegativeFloat = Annotated[float, Range(low=0)]
Fraction = Annotated[float, Range(low=0, high=1)]
Widths = tuple[PositiveInt, ...]  # hidden-layer sizes
PositiveFloats = tuple[PositiveFloat, ...]
# Every generator a run or a dataset build seeds takes this: NumPy's legacy global generator
# (np.random.seed) takes 32-bit seeds only, and one seed feeds every generator of a run.
SEED_RANGE = Range(low=0, high=2**32 - 1)
Seed = Annotated[int, SEED_RANGE]


def check_seed(value: object, name: str) -> None:
    """Refuse a seed that some generator would not take, naming it (`--seed`, `task_data.seed`)
    and the range; raised before anything is built or written."""
    integer = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if not integer or not SEED_RANGE.holds(value):
        raise RecipeError(
            f"{name}{' ' if name.startswith('--') else ' = '}{value!r}: expected an integer "
            f"seed {SEED_RANGE.describe()} "
            "(NumPy's generators take 32-bit seeds)"
        )

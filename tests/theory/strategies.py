"""Generated meta-batches for the theorem properties: float64, edge cases included.

T ≥ 2 tasks (T = 2 is the smallest contrast), Z ≥ 1 latent dimensions, B ≥ 1 transitions per
context batch, temperatures from 0.05 (sharp softmax) to 5, magnitudes up to 10 per coordinate
(so logits reach thousands: log-sum-exp stability matters).
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

temperatures = st.floats(0.05, 5.0, allow_nan=False)


@st.composite
def meta_batches(draw, max_tasks: int = 6, max_latent: int = 5, max_batch: int = 4):
    """(query [T, B, Z], key [T, B, Z]) as float64 numpy arrays."""
    t = draw(st.integers(2, max_tasks))
    z = draw(st.integers(1, max_latent))
    b = draw(st.integers(1, max_batch))
    scale = draw(st.sampled_from([1e-3, 1.0, 10.0]))
    values = st.floats(-1.0, 1.0, allow_nan=False, allow_infinity=False)
    query = draw(arrays(np.float64, (t, b, z), elements=values)) * scale
    key = draw(arrays(np.float64, (t, b, z), elements=values)) * scale
    return query, key

"""CPU kernels of ATen operators replaced for this process (components/vector_math.py and
components/products.py use it): a `torch.library` registration, kept alive while the process
runs, that portable numerics install once."""

from __future__ import annotations

import warnings
from collections.abc import Callable


class Replacement:
    """The CPU kernels of some ATen operators, replaced once `install`ed (idempotent)."""

    def __init__(self, kernels: Callable[[], dict[str, Callable]]):
        self._kernels = kernels  # builds {operator name: kernel}; called at install (imports torch)
        self._library = None

    @property
    def installed(self) -> bool:
        return self._library is not None

    def install(self) -> None:
        if self._library is not None:
            return
        import torch

        library = torch.library.Library("aten", "IMPL")
        with warnings.catch_warnings():  # "Overriding a previously registered kernel": meant
            warnings.simplefilter("ignore", UserWarning)
            for name, kernel in self._kernels().items():
                library.impl(name, kernel, "CPU")
        self._library = library

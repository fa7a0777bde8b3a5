"""The CPU backend: NumPy and SciPy, with Numba for loops that cannot be vectorized."""

from __future__ import annotations

import platform

import numpy as np
import scipy.sparse as sp

from .base import Backend


class NumpyBackend(Backend):
    name = "cpu"
    xp = np

    def asarray(self, x, dtype=None):
        # a cupyx matrix first: the CPU emulator's (tests/cudasim) subclasses SciPy's, which real CuPy's does
        # not, and the SciPy branch would keep its device arrays (a CPU model then failed on cupyx CSR input)
        if _is_cupy_sparse(x):
            x = x.get()
            return x.astype(dtype) if dtype is not None and x.dtype != dtype else x
        if sp.issparse(x):
            x = x.tocsr()
            return x.astype(dtype) if dtype is not None and x.dtype != dtype else x
        if hasattr(x, "__cuda_array_interface__") and hasattr(x, "get"):
            x = x.get()
        return np.asarray(x, dtype=dtype)

    def to_host(self, x):
        if sp.issparse(x):
            return x
        return np.asarray(x)

    def issparse(self, x) -> bool:
        return sp.issparse(x)

    @property
    def device_name(self) -> str:
        return platform.processor() or platform.machine() or "cpu"


def _is_cupy_sparse(x) -> bool:
    mod = type(x).__module__
    return mod.startswith("cupyx.scipy.sparse")


CPU = NumpyBackend()

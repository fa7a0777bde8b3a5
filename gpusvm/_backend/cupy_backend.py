"""The GPU backend: CuPy arrays, cuBLAS/cuSPARSE products, and raw CUDA kernels from ``kernels/``.

Importing this module imports CuPy; :func:`gpusvm._backend.get_backend` imports it only when a GPU is
asked for or probed, so ``import gpusvm`` never imports CuPy.
"""

from __future__ import annotations

import cupy as cp
import cupyx.scipy.sparse as csp
import numpy as np
import scipy.sparse as sp

from .base import Backend


class CupyBackend(Backend):
    name = "gpu"
    xp = cp

    def __init__(self, device_id: int = 0):
        self.device_id = int(device_id)
        self.device = cp.cuda.Device(self.device_id)

    def asarray(self, x, dtype=None):
        with self.device:
            if sp.issparse(x):
                x = csp.csr_matrix(x.tocsr())
            if csp.issparse(x):
                x = x.tocsr()
                return x.astype(dtype) if dtype is not None and x.dtype != dtype else x
            return cp.asarray(x, dtype=dtype)

    def to_host(self, x):
        if csp.issparse(x):
            return x.get()
        if isinstance(x, cp.ndarray):
            return cp.asnumpy(x)
        return np.asarray(x)

    def sync(self) -> None:
        self.device.synchronize()

    def issparse(self, x) -> bool:
        return csp.issparse(x)

    @property
    def device_name(self) -> str:
        props = cp.cuda.runtime.getDeviceProperties(self.device_id)
        name = props["name"]
        return name.decode() if isinstance(name, bytes) else str(name)

    def memory_info(self) -> tuple[int, int]:
        """(free, total) device memory in bytes."""
        with self.device:
            return cp.cuda.runtime.memGetInfo()

"""The GPU backend: CuPy arrays, cuBLAS/cuSPARSE products, and raw CUDA kernels from ``kernels/``.

Importing this module imports CuPy; :func:`gpusvm._backend.get_backend` imports it only when a GPU is
asked for or probed, so ``import gpusvm`` never imports CuPy.

Sparse input becomes a ``cupyx.scipy.sparse.csr_matrix`` in canonical form (sorted indices, no
duplicates) with int32 ``indices``/``indptr`` whenever the shape and the number of stored entries fit
(the index type cuSPARSE and our kernels are fastest with). The conversion happens on the host first:
cupyx only stores bool/float/complex data, and CuPy 13 turns SciPy's int64 index arrays into int32
without a range check, so a matrix with 2**31 or more stored entries is refused with a clear error on a
CuPy that cannot keep int64 indices.
"""

from __future__ import annotations

import cupy as cp
import cupyx.scipy.sparse as csp
import numpy as np
import scipy.sparse as sp

from .base import Backend

_INT32_MAX = np.iinfo(np.int32).max


def _host_csr_for_device(x, dtype):
    """A SciPy CSR copy of ``x`` ready for cupyx: data in ``dtype`` (float64 for non-float input),
    canonical format, and int32 index arrays when they fit (int64 otherwise). ``x`` is never modified."""
    x = x.tocsr()
    target = np.dtype(dtype) if dtype is not None else (
        x.dtype if x.dtype in (np.float32, np.float64) else np.dtype(np.float64))
    if x.dtype != target:
        x = x.astype(target)
    if not x.has_canonical_format:
        x = x.copy()
        x.sum_duplicates()  # also sorts the column indices
    fits = x.nnz <= _INT32_MAX and max(x.shape) <= _INT32_MAX
    idx_dtype = np.int32 if fits else np.int64
    if x.indices.dtype != idx_dtype or x.indptr.dtype != idx_dtype:
        x = sp.csr_matrix((x.data, x.indices.astype(idx_dtype), x.indptr.astype(idx_dtype)), shape=x.shape)
    return x, fits


class CupyBackend(Backend):
    name = "gpu"
    xp = cp

    def __init__(self, device_id: int = 0):
        self.device_id = int(device_id)
        self.device = cp.cuda.Device(self.device_id)

    def asarray(self, x, dtype=None):
        with self.device:
            # a cupyx matrix first: the CPU emulator's (tests/cudasim) is also a SciPy matrix, so it would take
            # the host branch below, which real CuPy's never does
            if csp.issparse(x):
                x = x.tocsr()
                if dtype is not None and x.dtype != dtype:
                    x = x.astype(dtype)
                return x
            if sp.issparse(x):
                host, fits = _host_csr_for_device(x, dtype)
                out = csp.csr_matrix(host)
                if not fits and out.indptr.dtype != cp.int64:
                    raise ValueError(
                        f"The sparse matrix has {host.nnz:,} stored entries (shape {host.shape}): more than "
                        "this CuPy's int32 sparse indices can address (2**31 - 1). Fit on device='cpu', use "
                        "a newer CuPy with int64 sparse indices, or pass a dense array.")
                return out
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

    def row_sqnorms(self, X, dtype=None):
        """Squared Euclidean norm of each row of ``X`` (dense or cupyx CSR), accumulated in float64 for CSR.

        The base class's CSR formula expands the row ids with ``xp.repeat(arange(n), diff(indptr))``,
        which CuPy before v14 refuses (an array of repeat counts) and whose ``bincount`` accumulates with
        atomics in a run-dependent order; CSR rows go through ``csr_row_sqnorms`` (kernels/gram.cu), one
        warp per row with a fixed reduction order, instead.
        """
        if not self.issparse(X):
            return super().row_sqnorms(X, dtype)
        from .cuda_source import ctype, get_kernel

        dtype = np.dtype(dtype or X.dtype)
        X = X.tocsr()
        n = int(X.shape[0])
        with self.device:
            out = cp.zeros(n, dtype=cp.float64)
            if n == 0 or int(X.nnz) == 0:
                return out.astype(dtype, copy=False)
            data = X.data
            if data.dtype not in (cp.float32, cp.float64):
                data = data.astype(cp.float64)
            if data.dtype != dtype and dtype in (np.float32, np.float64):
                data = data.astype(dtype)  # square the values as stored in ``dtype``, like the CPU version
            data = cp.ascontiguousarray(data)
            indptr = X.indptr
            if indptr.dtype not in (cp.int32, cp.int64):
                indptr = indptr.astype(cp.int64)
            indptr = cp.ascontiguousarray(indptr)
            fn = get_kernel("gram.cu", f"csr_row_sqnorms<{ctype(data.dtype)}, {ctype(indptr.dtype)}>",
                            self.device_id)
            threads = 256  # 8 rows per block
            blocks = int(min(65535, (n * 32 + threads - 1) // threads))
            fn((blocks,), (threads,), (data, indptr, cp.int64(n), out))
            return out.astype(dtype, copy=False)

    @property
    def device_name(self) -> str:
        props = cp.cuda.runtime.getDeviceProperties(self.device_id)
        name = props["name"]
        return name.decode() if isinstance(name, bytes) else str(name)

    def memory_info(self) -> tuple[int, int]:
        """(free, total) device memory in bytes."""
        with self.device:
            return cp.cuda.runtime.memGetInfo()

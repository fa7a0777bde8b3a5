"""The backend protocol shared by the NumPy (CPU) and CuPy (GPU) backends.

A backend object gives a solver everything it needs to run on one device:

* ``be.xp``: the array namespace (``numpy`` or ``cupy``) for ordinary array math;
* data movement: ``be.asarray``, ``be.to_host``, ``be.sync``;
* sparse helpers: ``be.issparse``, ``be.dot`` (dense or CSR times dense), ``be.row_sqnorms``, ``be.take_rows``;
* fused operations (Gram blocks, local SMO, ...). Each fused op is written twice with one signature, a
  CUDA kernel for the GPU and a NumPy/Numba twin for the CPU, and registered with :func:`register_op`.
  ``be.<op>(...)`` dispatches to the version for the backend's device. The CPU twin is the reference
  that GPU tests compare against.

Op modules live in :mod:`gpusvm._backend.ops` and are discovered on first use, so a solver issue adds
its fused ops in a file of its own without touching the backends.
"""

from __future__ import annotations

import contextlib
import importlib
import pkgutil
import threading

_OPS: dict[str, dict[str, object]] = {}
_DISCOVERED = False
_LOCK = threading.Lock()


def register_op(name: str, device: str):
    """Register ``fn(be, *args, **kwargs)`` as fused op ``name`` for ``device`` ("cpu" or "gpu")."""
    if device not in ("cpu", "gpu"):
        raise ValueError(f"device must be 'cpu' or 'gpu', got {device!r}")

    def deco(fn):
        _OPS.setdefault(name, {})[device] = fn
        return fn

    return deco


def _discover_ops() -> None:
    global _DISCOVERED
    if _DISCOVERED:  # (every fused op call comes here: no lock once done)
        return
    with _LOCK:
        if _DISCOVERED:
            return
        from . import ops

        for info in pkgutil.iter_modules(ops.__path__):
            importlib.import_module(f"{ops.__name__}.{info.name}")
        _DISCOVERED = True


def is_device_oom(exc: BaseException) -> bool:
    """True for the ways CuPy and the CUDA libraries report an exhausted device memory.

    Matched by name so that this module never imports CuPy: ``cupy.cuda.memory.OutOfMemoryError``
    (memory pool), a ``CUDARuntimeError`` of ``cudaErrorMemoryAllocation`` and the cuBLAS/cuSPARSE
    ``..._STATUS_ALLOC_FAILED`` errors (workspace allocations inside the libraries).
    """
    name = type(exc).__name__
    module = type(exc).__module__ or ""
    if not module.startswith("cupy"):
        return False
    if name == "OutOfMemoryError":
        return True
    text = str(exc)
    return "cudaErrorMemoryAllocation" in text or "STATUS_ALLOC_FAILED" in text


def _device_facts(be):
    """(name, id, "x GiB free of y GiB") of ``be``'s device, or of CuPy's current device without ``be``."""
    try:
        if be is not None:
            name, dev_id = be.device_name, be.device_id
            free, total = be.memory_info()
        else:
            import cupy

            dev_id = cupy.cuda.Device().id
            name = cupy.cuda.runtime.getDeviceProperties(dev_id)["name"]
            name = name.decode() if isinstance(name, bytes) else str(name)
            free, total = cupy.cuda.runtime.memGetInfo()
        return name, dev_id, f"{free / 2**30:.2f} GiB free of {total / 2**30:.2f} GiB"
    except Exception:  # the device may be unusable after the failure
        return "the GPU", "?", "free memory unknown"


@contextlib.contextmanager
def device_memory_guard(what: str, hint: str = "", be=None):
    """Turn a device out-of-memory error raised inside the block into a ``MemoryError`` that says what
    ran out, on which device, how much memory the device has free, and what to do about it.

    ``what`` names the operation ("SVC.fit"); ``hint`` adds estimator-specific advice ("lower
    cache_size"). Other exceptions pass through unchanged, and so does everything on the CPU backend
    (NumPy raises ``MemoryError`` itself). Usable as a context manager or as a method decorator.
    """
    try:
        yield
    except Exception as exc:
        if (be is not None and not be.is_gpu) or not is_device_oom(exc):
            raise
        name, dev_id, where = _device_facts(be)
        advice = (hint + "; " if hint else "") + "or fit on device='cpu'"
        err = MemoryError(f"{what} ran out of GPU memory on {name} (device {dev_id}; {where}): {exc}. "
                          f"To fit, {advice}.")
        err.gpusvm_explained = True
        raise err from exc


@contextlib.contextmanager
def host_memory_guard(what: str, hint: str, detail: str = ""):
    """Turn a host ``MemoryError`` raised inside the block into one that says which operation ran out,
    what the parameters make it hold and what to lower: the CPU twin of :func:`device_memory_guard`.

    NumPy's own message ("Unable to allocate 7.47 GiB for an array with shape (501, 2000000) and data
    type float64") names no parameter; it is kept in the new message and the error is chained to it.
    ``what`` names the operation ("BudgetSVC.fit"), ``detail`` the arrays a parameter sizes and their
    size, ``hint`` what to lower. Device out-of-memory errors (CuPy's derive from ``MemoryError``) and
    errors already explained by a guard pass unchanged. Usable as a context manager or a decorator.
    """
    try:
        yield
    except MemoryError as exc:
        if getattr(exc, "gpusvm_explained", False) or is_device_oom(exc):
            raise
        err = MemoryError(f"{what} ran out of host memory: {exc}. {detail + '. ' if detail else ''}"
                          f"To fit, {hint}.")
        err.gpusvm_explained = True
        raise err from exc


def reserve_rows(xp, rows: int, n: int, dtype, min_rows: int = 1):
    """An empty ``(r, n)`` array of ``dtype`` for a cache store: ``r = rows``, or when that cannot be reserved
    (``MemoryError``), the first of ``rows // 2``, ``rows // 4``, ... that can, never below ``min_rows`` (the
    error is raised there).

    A store is reserved whole up front (its pages committed only as rows are filled), where LIBSVM allocates
    each row when it computes it, so a cache's byte budget is a limit, not a requirement: ``SVC(cache_size=20000)``
    on full ijcnn1 under a 6 GB address-space limit raised a MemoryError naming 49,990 x 49,990 float32 values
    (9.3 GB), where scikit-learn's SVC fit in 0.9 GB. Fewer rows change a solver's speed, not its solution. For
    host memory only: on a GPU (CuPy's out-of-memory error is a ``MemoryError`` too) call ``xp.empty``.
    """
    while True:
        try:
            return xp.empty((rows, n), dtype=dtype)
        except MemoryError:
            if rows <= min_rows:
                raise
            rows = max(min_rows, rows // 2)


def registered_ops() -> dict[str, tuple[str, ...]]:
    """Map each fused op's name to the devices it is implemented for."""
    _discover_ops()
    return {name: tuple(sorted(impls)) for name, impls in sorted(_OPS.items())}


class Backend:
    """Base class of the per-device backends; see the module docstring."""

    name: str = "?"  # "cpu" or "gpu"
    xp = None

    @property
    def is_gpu(self) -> bool:
        return self.name == "gpu"

    @property
    def device_key(self) -> str:
        """The ``device=`` value that selects this backend again: "cpu" or "gpu:N" (what fitted models
        record, so that :func:`gpusvm.get_backend` gives their backend back)."""
        return f"gpu:{self.device_id}" if self.is_gpu else self.name

    def __getattr__(self, attr):
        # Only called when normal lookup fails: resolve fused ops from the registry.
        if attr.startswith("__"):
            raise AttributeError(attr)
        _discover_ops()
        impls = _OPS.get(attr)
        if impls is None:
            raise AttributeError(f"{type(self).__name__} has no attribute or fused op {attr!r}")
        fn = impls.get(self.name)
        if fn is None:
            raise NotImplementedError(f"fused op {attr!r} has no {self.name} implementation")

        def bound(*args, **kwargs):
            return fn(self, *args, **kwargs)

        bound.__name__ = attr
        bound.__doc__ = fn.__doc__
        return bound

    # ---- to be provided by subclasses -------------------------------------------------------
    def asarray(self, x, dtype=None):  # pragma: no cover - abstract
        raise NotImplementedError

    def to_host(self, x):  # pragma: no cover - abstract
        raise NotImplementedError

    def sync(self) -> None:
        """Wait for queued device work (no-op on the CPU)."""

    def issparse(self, x) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    # ---- shared helpers written once over ``xp`` --------------------------------------------
    def dot(self, a, b):
        """``a @ b`` where ``a`` may be dense or CSR and ``b`` is dense; returns a dense array."""
        if self.issparse(a):
            out = a @ b
            return out.toarray() if self.issparse(out) else self.xp.asarray(out)
        return a @ b

    def row_sqnorms(self, X, dtype=None):
        """Squared Euclidean norm of each row of ``X`` (dense or CSR), accumulated in ``dtype``."""
        xp = self.xp
        dtype = dtype or X.dtype
        if self.issparse(X):
            # O(nnz) without copying the matrix: square the stored values, sum them per row
            data = X.data.astype(dtype, copy=False)
            n = X.shape[0]
            counts = xp.diff(X.indptr)
            rows = xp.repeat(xp.arange(n), counts)
            return xp.bincount(rows, weights=data * data, minlength=n).astype(dtype, copy=False)
        Xd = X.astype(dtype, copy=False)
        return xp.einsum("ij,ij->i", Xd, Xd)

    def take_rows(self, X, idx):
        """Rows ``idx`` of a dense or CSR matrix (CSR stays CSR)."""
        return X[idx]

    def select_rows(self, X, rows):
        """Rows ``rows`` (a host int array) of ``X``: ``X`` itself, uncopied, when they are all of its rows
        in order, else :meth:`take_rows` (a copy on the device)."""
        import numpy as np

        rows = np.asarray(rows)
        if rows.shape[0] == X.shape[0] and bool(np.all(rows == np.arange(rows.shape[0]))):
            return X
        return self.take_rows(X, self.asarray(rows))

    def to_dense(self, X):
        return X.toarray() if self.issparse(X) else X

    def transpose(self, X):
        """``X.T`` for products ``X.T @ v``: a view of a dense ``X``; for CSR ``X`` the CSR matrix of the
        transpose (a copy of the nonzeros, so every product is a row-wise sparse product)."""
        return X.T.tocsr() if self.issparse(X) else X.T

    def __repr__(self) -> str:
        return f"<gpusvm {self.name} backend: {self.device_name}>"

    def memory_guard(self, what: str, hint: str = ""):
        """:func:`device_memory_guard` for this backend's device (a no-op wrapper on the CPU)."""
        return device_memory_guard(what, hint, be=self)

    @property
    def device_name(self) -> str:  # pragma: no cover - overridden
        return self.name

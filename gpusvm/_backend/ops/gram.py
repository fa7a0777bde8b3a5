"""Fused op ``gram``: a block of kernel values ``K[i, j] = k(X[i], Y[j])``, tiled under a byte budget.

Every tile is one matrix product (BLAS / cuBLAS, or a CSR product) followed by the elementwise gram
function, which uses the rows' squared norms for the RBF distance (clipped at 0). On the GPU the
transform and the write into the output are fused in ``kernels/gram.cu``. On the CPU the transform is
either NumPy's vectorized ufuncs in place on the product tile or the fused Numba twin of the CUDA
kernel, whichever measured faster for the gram kind, dtype and tile size (:data:`CPU_TRANSFORM_RULE`).
The driver below (tiling, sparse handling) is written once for both devices. A precomputed Gram
matrix (SVC's ``kernel="precomputed"``) is a gather instead (:func:`gpusvm._gram.precomputed_gram`).
"""

from __future__ import annotations

import contextlib
import math
import threading

from ..._gram import precomputed_gram
from ..base import register_op

DEFAULT_MAX_BYTES = 256 * 2**20


def _tile_shape(nx, ny, d, itemsize, max_bytes, y_dense_cost, x_dense_cost=False):
    """Rows and columns of a tile so that the product tile plus any densified Y tile (``y_dense_cost``:
    tc x d) and densified X tile (``x_dense_cost``: tr x d) fit ``max_bytes``."""
    budget = max(1, int(max_bytes) // itemsize)
    dy = d if y_dense_cost else 0
    dx = d if x_dense_cost else 0
    tr = min(nx, max(1, math.isqrt(budget)))
    tc = min(ny, max(1, (budget - tr * dx) // (tr + dy)))
    tr = min(nx, max(1, (budget - tc * dy) // max(tc + dx, 1)))
    return tr, tc


# Wide sparse data: at least this many features, and more than the rows on the other side of a product
WIDE_MIN_FEATURES = 4096


def densify_pays(d, n_other):
    """Whether a dense copy of a sparse row (``d`` values) costs no more than that row's part of a
    product against ``n_other`` rows (``n_other`` values), up to :data:`WIDE_MIN_FEATURES`: false for
    wide sparse data (text, hashed features), whose rows are then kept sparse."""
    return d <= max(int(n_other), WIDE_MIN_FEATURES)


def _density(be, X):
    """Stored entries over all entries of a CSR matrix (0 for an empty one)."""
    size = int(X.shape[0]) * int(X.shape[1])
    return int(X.nnz) / size if size else 0.0


def _gram(be, X, Y, spec, transform, x_sqnorm=None, y_sqnorm=None, dtype=None, max_bytes=DEFAULT_MAX_BYTES,
          densify_min_density=None):
    xp = be.xp
    if spec.kind == "precomputed":  # index points: a gather from the user's matrix (no product)
        return precomputed_gram(be, X, Y, spec, dtype)
    if Y is None:
        Y = X
        if y_sqnorm is None:
            y_sqnorm = x_sqnorm
    if X.shape[1] != Y.shape[1]:
        raise ValueError(f"X has {X.shape[1]} features but Y has {Y.shape[1]}")
    dtype = xp.dtype(dtype or xp.result_type(X.dtype, Y.dtype))
    if dtype not in (xp.float32, xp.float64):
        raise TypeError(f"gram blocks are float32 or float64, got {dtype}")
    nx, ny, d = X.shape[0], Y.shape[0], X.shape[1]
    if X.dtype != dtype:
        X = X.astype(dtype)
    if Y.dtype != dtype:
        Y = Y.astype(dtype)
    if spec.kind == "rbf":
        x_sqnorm = be.row_sqnorms(X, dtype) if x_sqnorm is None else xp.asarray(x_sqnorm, dtype=dtype)
        y_sqnorm = be.row_sqnorms(Y, dtype) if y_sqnorm is None else xp.asarray(y_sqnorm, dtype=dtype)
    out = xp.empty((nx, ny), dtype=dtype)
    x_sparse, y_sparse = be.issparse(X), be.issparse(Y)
    # Which sparse sides are densified tile by tile. A CSR @ dense product does one scalar
    # multiply-add per stored entry and output column, a dense product runs at BLAS speed: with
    # ``densify_min_density`` set, a side at least that dense is densified. Two sparse sides: Y is
    # densified (CSR @ dense is the fast sparse product) unless the data are wide (``densify_pays``):
    # then a dense Y row (d values) costs more to write than its row of the product (nx values), and
    # the tile is a sparse @ sparse product instead (3,000 x 1,000,000 CSR with 20 nonzeros per row:
    # SVC's decision_function took 9.7 s and 1 GB densifying 1,000,000-wide rows, 0.3 s and 72 MB
    # without).
    dense_enough = (lambda M: densify_min_density is not None and _density(be, M) >= densify_min_density)
    x_densify = x_sparse and dense_enough(X)
    y_densify = y_sparse and (dense_enough(Y) or (x_sparse and not x_densify and densify_pays(d, nx)))
    tr, tc = _tile_shape(nx, ny, d, dtype.itemsize, max_bytes, y_densify, x_densify)
    # one tile on the CPU: the product is written into ``out`` and transformed there in place (the same
    # BLAS call and values), instead of into a temporary the size of the output. Not for poly, whose
    # NumPy transform multiplies the output by the product repeatedly (it needs them apart)
    whole = not be.is_gpu and tr == nx and tc == ny and spec.kind != "poly"
    for c0 in range(0, ny, tc):
        c1 = min(ny, c0 + tc)
        # (a tile of all rows is the matrix itself: a slice of CSR copies it, every stored value)
        Yt = Y if c1 - c0 == ny else Y[c0:c1]
        if y_densify:
            Yt = Yt.toarray()
        yn = y_sqnorm[c0:c1] if y_sqnorm is not None else None
        for r0 in range(0, nx, tr):
            r1 = min(nx, r0 + tr)
            Xt = X if r1 - r0 == nx else X[r0:r1]
            if x_densify:
                Xt = Xt.toarray()
            if be.issparse(Yt) and be.issparse(Xt):  # wide sparse data: sparse @ sparse, then dense
                prod = be.dot(Xt, Yt.T.tocsr())
            elif be.issparse(Yt):  # dense X tile, sparse Y tile
                prod = be.dot(Yt, Xt.T).T
            elif whole and not be.issparse(Xt):
                prod = xp.matmul(Xt, Yt.T, out=out)
            else:
                prod = be.dot(Xt, Yt.T)
            xn = x_sqnorm[r0:r1] if x_sqnorm is not None else None
            transform(be, prod, out[r0:r1, c0:c1], xn, yn, spec)
    return out


_CPU_FUSED: dict = {}
_PARALLEL_MIN_ELEMS = 1 << 16  # below this, starting the thread pool costs more than it saves
# The parallel build runs one call at a time. Our own threads (n_jobs, prediction blocks) reach it together,
# and Numba's workqueue threading layer, the one it falls back to without TBB or OpenMP (e.g. macOS wheels
# without libomp), aborts the process on concurrent launches ("Concurrent access has been detected"):
# SVC(kernel="poly", gram_dtype="float64", decomposition="batched", n_jobs=2) on 6,000 x 10 did. Each call
# already occupies every core, so little is lost under the other layers.
_PARALLEL_LOCK = threading.Lock()


def _cpu_fused(parallel: bool):
    """The Numba twin of ``gram_transform`` (kernels/gram.cu): one pass over the tile that reads each
    dot product once and writes the gram value into its place in the output, instead of NumPy's three
    to four temporaries for the RBF distance and exponent. Rows run in parallel for large tiles."""
    fn = _CPU_FUSED.get(parallel)
    if fn is None:
        import math

        import numba

        # Explicit any-layout signatures: tiles and output views come in C, F and strided layouts,
        # and one compiled (and disk-cached) version per dtype serves them all.
        sigs = [f"void({t}[:, :], {t}[:, :], {t}[:], {t}[:], int64, {t}, {t}, int64)" for t in ("float64", "float32")]

        def fused(prod, dst, xn, yn, code, gamma, coef0, degree):
            nr, nc = prod.shape
            for r in numba.prange(nr):
                for c in range(nc):
                    v = prod[r, c]
                    if code == 1:
                        v = (gamma * v + coef0) ** degree
                    elif code == 2:
                        d = xn[r] + yn[c] - 2.0 * v
                        v = math.exp(-gamma * (d if d > 0.0 else 0.0))
                    elif code == 3:
                        v = math.tanh(gamma * v + coef0)
                    dst[r, c] = v

        # Numba's disk cache names a function's entries by its qualified name and line and keys them by
        # signature, not by the parallel flag: both builds shared one cache, so the build compiled first
        # served both (small tiles launched the thread pool, or large ones ran on one thread)
        fused.__qualname__ += "_parallel" if parallel else "_serial"
        fn = numba.njit(sigs, parallel=parallel, cache=True, nogil=True)(fused)
        _CPU_FUSED[parallel] = fn
    return fn


# Which CPU transform runs, from benchmarks/gram_transform.py (results in
# benchmarks/results/gram_transform_cpu.md; shared 2-core AVX-512 machine, NumPy 2.4, Numba 0.68).
# NumPy's exp and tanh are SIMD (AVX2/AVX-512) loops; Numba, without Intel's SVML, calls the scalar libm
# function per element. That outweighs the fused pass's saving in memory traffic for RBF and sigmoid on
# every measured tile from 1 x 10,000 to 4,096 x 16,384 (CPU time, geometric mean over the shapes: NumPy
# 5-8x faster in float32, 2.5x in float64; 1 x 1,000 tiles tie). Poly has no transcendental call: the
# fused pass wins (1.7-2x) once a float64 tile outgrows the caches (NumPy makes four passes over it);
# the two tie around 1M elements; NumPy wins below that and in float32. The machine was shared (the
# benchmark got about half a core), so a second Numba thread could not show its worth there; granting
# the parallel build perfect 2-thread scaling, NumPy still wins for rbf/sigmoid float32 and ties at worst
# for rbf float64, but large float32 poly tiles might then favour Numba: re-measure on free cores.
_POLY_NUMBA_MIN_ELEMS_F64 = 1 << 20  # 8 MB float64 tiles and up
CPU_TRANSFORM_RULE = ("linear: a copy. rbf and sigmoid: NumPy in place, every dtype and size. poly: NumPy "
                      f"in place, except float64 tiles of >= {_POLY_NUMBA_MIN_ELEMS_F64:,} elements: fused "
                      f"Numba (its parallel build from {_PARALLEL_MIN_ELEMS:,} elements).")


def _cpu_uses_numba(kind, dtype, size) -> bool:
    """:data:`CPU_TRANSFORM_RULE`: True where the fused Numba transform measured faster than NumPy's."""
    return kind == "poly" and dtype.itemsize == 8 and size >= _POLY_NUMBA_MIN_ELEMS_F64


def _transform_numpy(be, prod, dst, xn, yn, spec):
    """The gram function with NumPy ufuncs, in place on ``prod`` (overwritten), result into ``dst``.

    RBF: ``exp(-gamma * max(xn + yn - 2 prod, 0))``; poly: ``(gamma prod + coef0) ** degree`` by
    repeated multiplication; sigmoid: ``tanh(gamma prod + coef0)``.
    """
    np = be.xp
    T = dst.dtype.type
    if spec.kind == "rbf":
        prod *= T(-2.0)
        prod += xn[:, None]
        prod += yn[None, :]
        np.maximum(prod, T(0.0), out=prod)
        with np.errstate(over="ignore"):  # (-gamma d overflowing to -inf is exact here: exp gives the 0.0 it
            prod *= T(-spec.gamma)  # rounds to anyway; gamma=1e308 leaked "overflow encountered in multiply")
        np.exp(prod, out=dst)
        return
    prod *= T(spec.gamma)
    prod += T(spec.coef0)
    if spec.kind == "sigmoid":
        np.tanh(prod, out=dst)
    elif spec.degree > 8:
        np.power(prod, T(spec.degree), out=dst)
    else:
        np.copyto(dst, prod)
        for _ in range(spec.degree - 1):
            dst *= prod


def _transform_cpu(be, prod, dst, xn, yn, spec):
    """Write the gram values of product tile ``prod`` into ``dst``; ``prod`` is the tile's temporary
    product and may be overwritten. NumPy or fused Numba by :data:`CPU_TRANSFORM_RULE`."""
    np = be.xp
    if spec.kind == "linear":
        dst[...] = prod
        return
    prod = prod.astype(dst.dtype, copy=False)
    if xn is not None:
        xn, yn = xn.astype(dst.dtype, copy=False), yn.astype(dst.dtype, copy=False)
    if not _cpu_uses_numba(spec.kind, dst.dtype, prod.size):
        _transform_numpy(be, prod, dst, xn, yn, spec)
        return
    T = dst.dtype.type
    if xn is None:  # unused unless rbf; typed placeholders keep one compiled signature per dtype
        xn = yn = np.zeros(1, dtype=dst.dtype)
    parallel = prod.size >= _PARALLEL_MIN_ELEMS
    fn = _cpu_fused(parallel)
    with _PARALLEL_LOCK if parallel else contextlib.nullcontext():
        fn(prod, dst, xn, yn, spec.code, T(spec.gamma), T(spec.coef0), spec.degree)


def _transform_gpu(be, prod, dst, xn, yn, spec):
    import cupy as cp

    from ..cuda_source import ctype, get_kernel

    T = prod.dtype.type
    prod = cp.ascontiguousarray(prod)
    nrows, ncols = prod.shape
    if nrows == 0 or ncols == 0:
        return
    fn = get_kernel("gram.cu", f"gram_transform<{ctype(prod.dtype)}>", be.device_id)
    # the kernel indexes the norm vectors as dense arrays of the tile's type: a caller's strided or
    # differently typed norms (a view of a larger array) would be read wrongly through the raw pointer
    if xn is not None:
        xn = cp.ascontiguousarray(xn, dtype=prod.dtype)
        yn = cp.ascontiguousarray(yn, dtype=prod.dtype)
    dummy = prod  # never read unless rbf
    n = nrows * ncols
    threads = 256
    blocks = min(65535 * 8, (n + threads - 1) // threads)
    fn((blocks,), (threads,), (
        prod, dst, cp.int64(dst.strides[0] // dst.itemsize),
        xn if xn is not None else dummy, yn if yn is not None else dummy,
        cp.int64(nrows), cp.int64(ncols), cp.int32(spec.code),
        T(spec.gamma), T(spec.coef0), cp.int32(spec.degree),
    ))


# A CSR side of a CPU gram block at least this dense is densified tile by tile: SciPy's CSR @ dense
# product is one scalar multiply-add per stored entry and output column on one thread, against BLAS
# for dense tiles. Measured (benchmarks/results/predict_blocks_cpu.md, part 1: a 512 x 1,024 product,
# d = 22 to 2,000), CSR @ dense time over densify + dense @ dense: 0.3-0.7x at densities <= 0.02,
# 0.9-2.5x at 0.05, 1.1-4.8x at 0.1 (0.7-1.3x at d = 2,000 in three runs), 2.6-11.4x at 0.3.
CPU_DENSIFY_MIN_DENSITY = 0.1


def densify_for_gram(be, M, max_bytes=DEFAULT_MAX_BYTES):
    """``M`` as a dense array when gram blocks against it would densify its tiles anyway (a CSR matrix on
    the CPU at least :data:`CPU_DENSIFY_MIN_DENSITY` dense) and its dense form fits ``max_bytes``; else
    ``M`` itself. For an operand that many gram calls reuse (the support vectors in prediction), so that
    it is densified once instead of in every call."""
    if be.is_gpu or not be.issparse(M) or _density(be, M) < CPU_DENSIFY_MIN_DENSITY:
        return M
    if int(M.shape[0]) * int(M.shape[1]) * M.dtype.itemsize > max_bytes:
        return M
    return M.toarray()


@register_op("gram", "cpu")
def gram_cpu(be, X, Y, spec, *, x_sqnorm=None, y_sqnorm=None, dtype=None, max_bytes=DEFAULT_MAX_BYTES):
    """Gram block ``k(X[i], Y[j])`` of shape (len(X), len(Y)); ``Y=None`` means ``Y = X``.

    Parameters
    ----------
    X, Y : {ndarray, CSR matrix} of shape (nx, d) and (ny, d), on the backend's device.
    spec : GramSpec
    x_sqnorm, y_sqnorm : ndarray, optional
        Precomputed squared row norms (RBF only); computed when absent.
    dtype : float32 or float64, optional
        Output type; defaults to the inputs' result type.
    max_bytes : int
        Bound on any intermediate (a product tile, a densified sparse tile).
    """
    return _gram(be, X, Y, spec, _transform_cpu, x_sqnorm, y_sqnorm, dtype, max_bytes,
                 densify_min_density=CPU_DENSIFY_MIN_DENSITY)


@register_op("gram", "gpu")
def gram_gpu(be, X, Y, spec, *, x_sqnorm=None, y_sqnorm=None, dtype=None, max_bytes=DEFAULT_MAX_BYTES):
    """GPU twin of :func:`gram_cpu`; the transform runs in ``gram_transform`` (kernels/gram.cu)."""
    with be.device:
        return _gram(be, X, Y, spec, _transform_gpu, x_sqnorm, y_sqnorm, dtype, max_bytes)

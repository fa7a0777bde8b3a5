"""Fused op ``row_hash2``: order-free 64-bit hashes of every row of a dense or CSR matrix for two seeds
(duplicate finding), and ``rows_differ``.

The hash of a row is the sum modulo 2**64 of one mixed value per *nonzero* entry: the entry's float64 bit
pattern XOR a key made from its column and the seed, mixed by splitmix64's finalizer. Integer addition
wraps exactly and does not depend on order, so a dense row and the same row stored as CSR (any entry
order, explicit zeros included) hash alike, on any device; zeros and -0.0 contribute nothing; float32
values are hashed as the float64 they convert to. :mod:`gpusvm._dedupe` groups rows by two such hashes
and then compares the members entry by entry (the fused op ``rows_differ``, in this module too), so the
hash only has to make collisions rare.

* :func:`row_hash_xp`: the hash in array operations over ``xp`` (NumPy or CuPy), the reference and the
  GPU op (elementwise CuPy kernels and a prefix sum; the rows' hashes come back as one device array).
* CPU op: the same hash in one compiled pass over the entries (Numba), for two seeds at once (duplicate
  finding needs two; one pass costs 35-40% less than two). The array version makes about
  ten full-length uint64 temporaries per seed; on a9a (32,561 x 123 CSR, 451k entries) it took ~20 ms
  per seed, as long as a whole LinearSVC fit at small C, which ``deduplicate="auto"`` paid for every
  fit. Both give the same bits (tests).

``rows_differ`` compares given pairs of rows exactly. Its array version takes the rows out of a CSR matrix
by fancy indexing and subtracts them (two row copies and a sparse subtraction), which on phishing's
11,055 rows cost 2.4 ms of the 5 ms that ``deduplicate="auto"`` spent per fit; the CPU op walks the pairs
in one compiled pass.
"""

from __future__ import annotations

import numba
import numpy as np

from ..base import register_op

M1 = 0xBF58476D1CE4E5B9
M2 = 0x94D049BB133111EB
GOLDEN = 0x9E3779B97F4A7C15
_CHUNK = 1 << 22  # entries of a dense block hashed at once by the array version (32 MB of uint64 temporaries)


# ---- the array version (reference; GPU) ---------------------------------------------------------------
def _mix(xp, v):
    """splitmix64's finalizer on a uint64 array (wrapping arithmetic, as in C)."""
    v = v ^ (v >> xp.uint64(30))
    v = v * xp.uint64(M1)
    v = v ^ (v >> xp.uint64(27))
    v = v * xp.uint64(M2)
    return v ^ (v >> xp.uint64(31))


def _entry_hash(xp, values, columns, seed):
    """Mixed hash of each (column, value) entry; 0 for zero values."""
    bits = xp.ascontiguousarray(values.astype(xp.float64)).view(xp.uint64)
    key = _mix(xp, columns.astype(xp.uint64) * xp.uint64(GOLDEN) + xp.uint64(seed))
    h = _mix(xp, bits ^ key)
    return xp.where(values != 0, h, xp.uint64(0))


def row_sums(xp, entries, indptr, dtype):
    """Per-row sums of CSR-ordered ``entries`` in ``dtype`` by one prefix sum (integer dtypes wrap, so
    the sums are exact and order-free; no repeat/bincount: CuPy's repeat takes no array of counts)."""
    cs = xp.concatenate([xp.zeros(1, dtype=dtype), xp.cumsum(entries.astype(dtype, copy=False), dtype=dtype)])
    indptr = indptr.astype(xp.int64)
    return cs[indptr[1:]] - cs[indptr[:-1]]


def row_hash_xp(xp, X, seed, sparse):
    """Hash of every row of ``X`` (dense, or CSR when ``sparse``) with array operations over ``xp``."""
    n = int(X.shape[0])
    if sparse:
        return row_sums(xp, _entry_hash(xp, X.data, X.indices, seed), X.indptr, xp.uint64)
    d = int(X.shape[1])
    out = xp.empty(n, dtype=xp.uint64)
    cols = xp.arange(d, dtype=xp.uint64)
    step = max(1, _CHUNK // max(d, 1))
    for s0 in range(0, n, step):
        s1 = min(n, s0 + step)
        out[s0:s1] = _entry_hash(xp, X[s0:s1], cols[None, :], seed).sum(axis=1, dtype=xp.uint64)
    return out


# ---- the compiled CPU twin ----------------------------------------------------------------------------
_U30, _U27, _U31 = np.uint64(30), np.uint64(27), np.uint64(31)
_UM1, _UM2, _UGOLDEN = np.uint64(M1), np.uint64(M2), np.uint64(GOLDEN)


@numba.njit(inline="always")
def _mix1(v):
    v = v ^ (v >> _U30)
    v = v * _UM1
    v = v ^ (v >> _U27)
    v = v * _UM2
    return v ^ (v >> _U31)


@numba.njit(cache=True, nogil=True)
def _csr_hash2(values, bits, indices, indptr, seed1, seed2, out1, out2):
    # both seeds in one pass over the entries: 35-40% less time than two passes (phishing, a9a, w8a)
    for r in range(out1.shape[0]):
        acc1 = np.uint64(0)
        acc2 = np.uint64(0)
        for p in range(indptr[r], indptr[r + 1]):
            if values[p] != 0.0:
                col = np.uint64(indices[p]) * _UGOLDEN
                acc1 += _mix1(bits[p] ^ _mix1(col + seed1))
                acc2 += _mix1(bits[p] ^ _mix1(col + seed2))
        out1[r] = acc1
        out2[r] = acc2


@numba.njit(cache=True, nogil=True)
def _dense_hash2(values, bits, seed1, seed2, out1, out2):
    n, d = values.shape
    keys1 = np.empty(d, dtype=np.uint64)
    keys2 = np.empty(d, dtype=np.uint64)
    for c in range(d):
        keys1[c] = _mix1(np.uint64(c) * _UGOLDEN + seed1)
        keys2[c] = _mix1(np.uint64(c) * _UGOLDEN + seed2)
    for r in range(n):
        acc1 = np.uint64(0)
        acc2 = np.uint64(0)
        for c in range(d):
            if values[r, c] != 0.0:
                acc1 += _mix1(bits[r, c] ^ keys1[c])
                acc2 += _mix1(bits[r, c] ^ keys2[c])
        out1[r] = acc1
        out2[r] = acc2


@register_op("row_hash2", "cpu")
def row_hash2_cpu(be, X, seed1, seed2):
    """The hashes of every row of ``X`` (dense or CSR, host) for two seeds, in one compiled pass: a tuple of
    two uint64 arrays of shape (n,), the same bits as :func:`row_hash_xp` with ``seed1`` and with ``seed2``."""
    n = int(X.shape[0])
    out1 = np.empty(n, dtype=np.uint64)
    out2 = np.empty(n, dtype=np.uint64)
    seed1, seed2 = np.uint64(seed1), np.uint64(seed2)
    if be.issparse(X):
        values = np.ascontiguousarray(X.data, dtype=np.float64)
        _csr_hash2(values, values.view(np.uint64), np.ascontiguousarray(X.indices), np.ascontiguousarray(X.indptr),
                   seed1, seed2, out1, out2)
        return out1, out2
    values = np.asarray(X, dtype=np.float64)
    if not (values.flags.c_contiguous or values.flags.f_contiguous):
        values = np.ascontiguousarray(values)
    _dense_hash2(values, values.view(np.uint64), seed1, seed2, out1, out2)
    return out1, out2


@register_op("row_hash2", "gpu")
def row_hash2_gpu(be, X, seed1, seed2):
    """GPU version of :func:`row_hash2_cpu`: :func:`row_hash_xp` over CuPy for each seed, on the device."""
    with be.device:
        sparse = be.issparse(X)
        return row_hash_xp(be.xp, X, seed1, sparse), row_hash_xp(be.xp, X, seed2, sparse)


# ---- exact comparison of row pairs --------------------------------------------------------------------
def rows_differ_xp(be, X, a, b):
    """Host bool array: row ``a[k]`` of ``X`` differs from row ``b[k]`` (array operations over ``be.xp``;
    the reference and the GPU op)."""
    xp = be.xp
    ai, bi = be.asarray(a), be.asarray(b)
    if be.issparse(X):
        D = be.take_rows(X, ai) - be.take_rows(X, bi)
        return np.asarray(be.to_host(row_sums(xp, D.data != 0, D.indptr, xp.int64))) > 0
    out = np.empty(len(a), dtype=bool)
    step = max(1, _CHUNK // max(int(X.shape[1]), 1))
    for s0 in range(0, len(a), step):
        s1 = min(len(a), s0 + step)
        out[s0:s1] = np.asarray(be.to_host(xp.any(X[ai[s0:s1]] != X[bi[s0:s1]], axis=1)))
    return out


@numba.njit(cache=True, nogil=True)
def _csr_rows_differ(data, indices, indptr, a, b, out):
    # rows in canonical CSR (sorted, no repeated column): walk both, skipping explicit zeros
    for k in range(a.shape[0]):
        p, pe = indptr[a[k]], indptr[a[k] + 1]
        q, qe = indptr[b[k]], indptr[b[k] + 1]
        differ = False
        while True:
            while p < pe and data[p] == 0.0:
                p += 1
            while q < qe and data[q] == 0.0:
                q += 1
            if p == pe or q == qe:
                differ = p < pe or q < qe
                break
            if indices[p] != indices[q] or data[p] != data[q]:
                differ = True
                break
            p += 1
            q += 1
        out[k] = differ


@numba.njit(cache=True, nogil=True)
def _dense_rows_differ(X, a, b, out):
    d = X.shape[1]
    for k in range(a.shape[0]):
        i, j = a[k], b[k]
        differ = False
        for c in range(d):
            if X[i, c] != X[j, c]:
                differ = True
                break
        out[k] = differ


@register_op("rows_differ", "cpu")
def rows_differ_cpu(be, X, a, b):
    """Host bool array of shape (len(a),): row ``a[k]`` of ``X`` (dense or CSR, host) differs from row
    ``b[k]``, by exact (``!=``) comparison of the values, so ``0.0`` and ``-0.0`` are equal and explicit
    zeros count as zeros. One compiled pass over the pairs; a CSR matrix that is not in canonical form
    (unsorted or repeated column indices) goes to :func:`rows_differ_xp`."""
    a = np.ascontiguousarray(a, dtype=np.int64)
    b = np.ascontiguousarray(b, dtype=np.int64)
    out = np.empty(a.shape[0], dtype=np.bool_)
    if be.issparse(X):
        if not X.has_canonical_format:
            return rows_differ_xp(be, X, a, b)
        _csr_rows_differ(X.data, X.indices, X.indptr, a, b, out)
        return out
    _dense_rows_differ(np.asarray(X), a, b, out)
    return out


@register_op("rows_differ", "gpu")
def rows_differ_gpu(be, X, a, b):
    """GPU version of :func:`rows_differ_cpu`: :func:`rows_differ_xp` over CuPy (the answer comes to the host)."""
    with be.device:
        return rows_differ_xp(be, X, a, b)

"""One-vs-one outputs shared by the kernel estimators (SVC, DCSVC): decision values in scikit-learn's
shapes and LIBSVM's vote.

``dec`` holds one column per class pair (a, b), a < b in ``classes_`` order, in LIBSVM's sign (> 0
favours class a).
"""

from __future__ import annotations

import contextlib
import functools

import numba
import numpy as np

from ._parallel import single_blas_thread
from ._validation import to_input_library, to_numpy


def ovo_pair_rows(keep, y_idx, classes):
    """The binary problems of one-vs-one training: ``[(a, b, idx, yb), ...]`` for the class pairs a < b in
    LIBSVM's order, ``idx`` the rows (of ``keep``, the samples with positive weight) of class a then of
    class b, ``yb`` their labels (+1 for class a, as LIBSVM). Raises when a pair lacks one of its classes."""
    y_keep = y_idx[keep]
    by_class = [keep[y_keep == c] for c in range(len(classes))]  # once, not once per pair (O(n) each)
    out = []
    for a in range(len(classes)):
        for b in range(a + 1, len(classes)):
            if by_class[a].shape[0] == 0 or by_class[b].shape[0] == 0:
                ca, cb = classes[[a, b]].tolist()  # plain Python labels (NumPy 2 reprs its scalars as np.int64(1))
                raise ValueError(f"After dropping zero-weight samples, classes {ca!r} and {cb!r} "
                                 "do not both have samples with positive weight (sample_weight times the "
                                 "class's class_weight).")
            idx = np.concatenate([by_class[a], by_class[b]])
            na = by_class[a].shape[0]
            yb = np.empty(idx.shape[0])  # the rows of class a come first (np.full: 1.5 us more per pair)
            yb[:na] = 1.0
            yb[na:] = -1.0
            out.append((a, b, idx, yb))
    return out


# The pairs' coefficients over all support vectors (SVC._pair_coef, (n_pairs, n_SV)) are stored as a CSR matrix
# instead of a dense one when the dense one would take more than PAIR_COEF_SPARSE_MIN_BYTES and hold fewer than
# PAIR_COEF_SPARSE_MAX_DENSITY nonzeros (pair_coef_is_sparse). A pair's row is nonzero only on the support vectors
# of its two classes: with k balanced classes about 2 / k of it, and the dense matrix grows as k**2 n_SV (200 classes
# of 20 points: 585 MB; 1,000 classes of 30: ~120 GB). Its product with the Gram block (prediction), one
# thread, 2,000 to 350 rows a block: density 0.2 (10 classes) dense and CSR about even (0.9-1.1x), 0.1 (20 classes)
# CSR 1.4x faster, 0.067 (30 classes) 2.4-2.9x, 0.04 (50 classes) 5x, 0.02 (100 classes) 8-10x. The density limit
# keeps models of up to about 30 balanced classes dense, in the layout (and with the decision values, to the bit)
# of the code before; the size floor keeps small models dense whatever their density (their product is cheap).
PAIR_COEF_SPARSE_MIN_BYTES = 4 * 2**20
PAIR_COEF_SPARSE_MAX_DENSITY = 0.05


def pair_coef_is_sparse(n_pairs, n_sv, nnz) -> bool:
    """Whether a model's pair coefficients (``n_pairs`` x ``n_sv``, ``nnz`` nonzeros) are kept as a CSR
    matrix (see :data:`PAIR_COEF_SPARSE_MIN_BYTES`)."""
    size = int(n_pairs) * int(n_sv)
    return 8 * size > PAIR_COEF_SPARSE_MIN_BYTES and int(nnz) < PAIR_COEF_SPARSE_MAX_DENSITY * size


def pair_coef_matrix(pair, col, val, n_pairs, n_sv, sparse=None):
    """The pair coefficients (``n_pairs``, ``n_sv``) with ``val[i]`` at (``pair[i]``, ``col[i]``) (no position
    twice): a dense host array, or with ``sparse`` (None: :func:`pair_coef_is_sparse` of the count of nonzero
    values) a SciPy ``csr_matrix`` of the nonzero values, with sorted indices, never formed densely."""
    import scipy.sparse as sp

    val = np.asarray(val, dtype=np.float64)
    nz = val != 0
    if sparse is None:
        sparse = pair_coef_is_sparse(n_pairs, n_sv, int(np.count_nonzero(nz)))
    if not sparse:
        out = np.zeros((n_pairs, n_sv))
        out[pair, col] = val
        return out
    out = sp.csr_matrix((val[nz], (np.asarray(pair)[nz], np.asarray(col)[nz])), shape=(n_pairs, n_sv))
    out.sum_duplicates()  # (none: sorts the indices)
    return out


def pair_product(M, pair_coef):
    """``M @ pair_coef.T`` (dense (n, n_SV) times the pair coefficients): for CSR coefficients (SciPy or cupyx)
    the sparse product ``(pair_coef @ M.T).T``, dense."""
    if hasattr(pair_coef, "indptr"):
        return (pair_coef @ M.T).T
    return M @ pair_coef.T


def ovo_model_layout(y_idx, n_classes, pairs, pair_coef, pair_idx, pair_b):
    """LIBSVM's model layout from the solved one-vs-one problems.

    ``pairs[p] = (a, b)`` with the signed coefficients ``pair_coef[p]`` (alpha_i y_i, +1 for class a) of
    the rows ``pair_idx[p]`` and the bias ``pair_b[p]``. Returns ``(support, n_support, dual_coef,
    pair_coefs, intercept)``: the support vectors' row indices grouped by class (ascending within a
    class), their count per class (int32), LIBSVM's ``dual_coef`` of shape (n_classes - 1, n_SV) (an SV of
    class a keeps its coefficient of pair (a, b) in row b - 1, one of class b in row a), every pair's
    coefficients over all SVs (n_pairs, n_SV; a CSR matrix when :func:`pair_coef_is_sparse`, else dense), and
    the intercepts; with two classes ``dual_coef`` and ``intercept`` take scikit-learn's sign (decision > 0
    means ``classes_[1]``).
    """
    n = int(y_idx.shape[0])
    # every pair's rows at once (one scatter each below: within a pair the rows differ, and an SV's
    # dual_coef rows differ between its pairs, so no entry is written twice and the order is moot)
    sizes = [int(idx.shape[0]) for idx in pair_idx]
    ab = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    coef_all = np.concatenate([np.asarray(c, dtype=np.float64) for c in pair_coef]) if pairs else np.zeros(0)
    nz = coef_all != 0
    coef_all = coef_all[nz]
    rows_all = (np.concatenate(pair_idx) if pairs else np.zeros(0, dtype=np.int64))[nz]
    pair_all = np.repeat(np.arange(len(pairs)), sizes)[nz]
    is_sv = np.zeros(n, dtype=bool)
    is_sv[rows_all] = True
    sv_rows = np.flatnonzero(is_sv)  # ascending; a stable sort by class groups them, ascending within one
    sv_class = y_idx[sv_rows]
    support = sv_rows[np.argsort(sv_class, kind="stable")]
    n_support = np.bincount(sv_class, minlength=n_classes).astype(np.int32)
    pos = -np.ones(n, dtype=np.int64)
    pos[support] = np.arange(support.shape[0])
    dual = np.zeros((max(n_classes - 1, 1), support.shape[0]))
    cols = pos[rows_all]
    coefs = pair_coef_matrix(pair_all, cols, coef_all, len(pairs), support.shape[0])
    a, b = ab[pair_all, 0], ab[pair_all, 1]
    dual[np.where(y_idx[rows_all] == a, b - 1, a), cols] = coef_all
    intercept = np.array(pair_b)
    if n_classes == 2:
        dual = -dual
        intercept = -intercept
    return support, n_support, dual, coefs, intercept


def ovo_decision_function(dec, n_classes, shape, lib):
    """scikit-learn's decision_function from the pair values: (n,) for two classes (> 0 means
    ``classes_[1]``), else (n, n_classes) for ``shape="ovr"`` or the pair values for "ovo"; returned in
    the input's array library ``lib``."""
    if n_classes == 2:
        return to_input_library(-dec[:, 0], lib)
    if shape == "ovr":
        return to_input_library(_ovr_decision(to_numpy(dec), n_classes), lib)
    return to_input_library(dec, lib)


def _ovr_decision(d, k):
    """scikit-learn's ``_ovr_decision_function(d < 0, -d, k)`` to the bit: each class's votes plus the sum of
    its pairs' confidences squashed into (-1/3, 1/3), the sum taking its pairs in the same order (pair
    order) with the same operations, in compiled code (:func:`_ovr_rows`), row by row. Its loop over the
    k (k - 1) / 2 pairs, whose small operations were most of a short decision_function, was first replaced by
    k - 1 array steps over all classes at once (ten classes: 0.45 ms a call, 2.2 of 13 ms on digits' 1,797
    rows); their gathers of the pairs' columns still cost 0.5 s for 3,000 rows with 100 classes, against
    37 ms compiled (2 shared cores; ten classes, 20,000 rows: 20 -> 2.2 ms; one row: 65 -> 1.4 us)."""
    pairs, sign = _ovr_tables(k)
    out = np.empty((d.shape[0], k))
    _ovr_rows(np.ascontiguousarray(d, dtype=np.float64), pairs, sign, out)
    return out


@numba.njit(cache=True, nogil=True)
def _ovr_rows(d, pairs, sign, out):
    """``out[r, c]`` = votes + s / (3 (|s| + 1)) for class c and row r of ``d``, s the sum over c's pairs t of
    ``sign[c, t] * -d[r, pairs[c, t]]`` from 0.0 in pair order (scikit-learn's ``sum_of_confidences`` element
    by element: its ``s - x`` and ``s + x`` are ``s + (-1) x`` and ``s + 1 x`` to the bit, signed zeros too).
    The pair votes for c when c is its second class (sign +1) and d < 0, or c its first and not d < 0 (a NaN
    votes for the first class, as there); the test is branch-free: random signs mispredicted a branch there."""
    n = d.shape[0]
    k, km1 = pairs.shape
    for r in range(n):
        for c in range(k):
            v = 0.0
            s = 0.0
            for t in range(km1):
                x = d[r, pairs[c, t]]
                s = s + sign[c, t] * (-x)
                v += np.float64((x < 0.0) == (sign[c, t] > 0.0))
            out[r, c] = v + s / (3 * (abs(s) + 1))


def _read_only(*arrays):
    for a in arrays:
        a.flags.writeable = False
    return arrays


@functools.lru_cache(maxsize=64)
def _ovr_tables(k):
    """:func:`_ovr_decision`'s index tables for ``k`` classes, made once per class count (building them
    was most of a one-row decision_function with ten classes: 0.1 of 0.25 ms): class c's pairs (k, k - 1)
    and the sign its confidence takes in each (+1 where c is the pair's second class; read-only: shared)."""
    a, b = np.triu_indices(k, 1)  # the pairs a < b in the order of d's columns
    pairs = np.array([np.flatnonzero((a == c) | (b == c)) for c in range(k)], dtype=np.int64).reshape(k, k - 1)
    sign = np.where(b[pairs] == np.arange(k)[:, None], 1.0, -1.0)  # (second class: its confidence adds)
    return _read_only(pairs, sign)


# values of dec (rows x pairs) that ovo_predict votes on at once (its temporaries: about 11 bytes a value). With
# BLAS on one thread (_VOTE_ONE_THREAD_WORK), blocks of 2**15 to 2**17 were as fast as all rows at once or
# faster (3 to 100 classes, 2,000 to 200,000 rows)
_VOTE_BLOCK = 1 << 16
# ovo_predict counts the votes by a product with a (n_pairs, k) table up to this many classes, by a count of
# each pair's winner above: the table and the product grow as k**3 (k = 1,000: a 4 GB table, and 500 million
# multiply-adds per row), the count as k**2. Per block of rows the product was faster up to about 100 classes
# (ten: 0.2 against 1.2 ms), the count beyond (200 classes: 9x)
_VOTE_PRODUCT_MAX_CLASSES = 100
# multiply-adds (rows x pairs x classes) of the vote products above which they run with BLAS on one thread
# (OpenBLAS threads a product from 65,536 x GEMM_MULTITHREAD_THRESHOLD = 4 of them on)
_VOTE_ONE_THREAD_WORK = 1 << 18


@functools.lru_cache(maxsize=64)
def _vote_tables(k):
    """:func:`ovo_predict`'s tables for ``k`` classes, made once per class count: the pairs' classes a < b
    in the order of the decision columns, and their +1 (a) / -1 (b) columns (n_pairs, k), None above
    :data:`_VOTE_PRODUCT_MAX_CLASSES` classes; read-only."""
    a, b = np.triu_indices(k, 1)
    if k > _VOTE_PRODUCT_MAX_CLASSES:
        return (*_read_only(a, b), None)
    sign = np.zeros((a.shape[0], k))
    sign[np.arange(a.shape[0]), a] = 1.0
    sign[np.arange(a.shape[0]), b] = -1.0
    return _read_only(a, b, sign)


def ovo_predict(dec, classes, lib, tie_order=None):
    """LIBSVM's one-vs-one vote, in the input's array library. Ties go to the lower class index, or with
    ``tie_order`` (class indices, first preferred: a LIBSVM file's label order) to the class listed
    first there, as LIBSVM's vote in its label order. A pair value of exactly 0 votes for the pair's
    second class: the higher index, or with ``tie_order`` the class listed later there (LIBSVM votes
    ``dec > 0`` for the first label of the pair in its order, else for the second)."""
    d = to_numpy(dec)
    k = len(classes)
    rank = np.arange(k) if tie_order is None else np.argsort(np.asarray(tie_order))  # class -> place in order
    listed = None if tie_order is None else np.asarray(tie_order)
    a, b, sign = _vote_tables(k)  # the pairs a < b in the order of dec's columns, and their signs (or None)
    first = rank[a] < rank[b]  # (False: a flipped pair, a is LIBSVM's second)
    # class c's votes: its pairs as a that vote for a, plus its c pairs as b (with every a < c) that do not,
    # counted by one product with the pairs' +1 (a) / -1 (b) columns (whole numbers: exact in float64);
    # not a loop over the pairs, whose dozens of small operations per call were most of a one-row predict
    # with ten classes (45 pairs: 0.19 of 0.42 ms). In blocks of rows: the pair votes and their float64
    # copy for the product take 9+ bytes per value of dec, 1.35x dec at the peak for all rows at once
    # (ten classes, 200,000 rows: 93 MB beside the 69 MB dec, where the pair loop held 19 MB)
    idx = np.empty(d.shape[0], dtype=np.intp)
    step = max(1, _VOTE_BLOCK // max(int(a.shape[0]), 1))
    # BLAS on one thread for products that OpenBLAS would thread (M N K above 2**18): threaded, these short
    # products ran up to 100x slower on the shared 2-core machine (40 classes, 20,000 rows: 0.4-0.7 s in
    # blocks, 0.17-0.2 s at once, 0.055 s on one thread; 64 classes, 5,000 rows: 0.3-12.9 s against 0.07-0.1 s)
    one_thread = sign is not None and d.size * k > _VOTE_ONE_THREAD_WORK
    with single_blas_thread() if one_thread else contextlib.nullcontext():
        for s0 in range(0, d.shape[0], step):
            ds = d[s0:s0 + step]
            pos = np.where(first, ds > 0, ds >= 0)
            if sign is not None:
                votes = pos @ sign + np.arange(k)
            else:  # many classes: each row's count of the pairs each class wins (see _VOTE_PRODUCT_MAX_CLASSES)
                won = np.where(pos, a, b) + (np.arange(ds.shape[0]) * k)[:, None]
                votes = np.bincount(won.ravel(), minlength=ds.shape[0] * k).reshape(ds.shape[0], k)
            best = np.argmax(votes if listed is None else votes[:, listed], axis=1)
            idx[s0:s0 + step] = best if listed is None else listed[best]
    return to_input_library(classes[idx], lib)


def linear_pair_weights(be, pair_coef, sv, n_classes):
    """scikit-learn's ``coef_`` for the linear gram: the primal weights w of every class pair, one row per
    pair (n_classes * (n_classes - 1) / 2, n_features), such that ``X @ coef_.T + intercept_`` is the
    "ovo" decision function (with two classes, the one column of decision_function). ``pair_coef``
    (n_pairs, n_SV) holds each pair's signed coefficients over the support vectors ``sv`` in LIBSVM's
    sign (dense, or CSR when :func:`pair_coef_is_sparse`); with two classes the row is negated, as sklearn
    flips ``dual_coef_`` and ``intercept_``. A sparse ``sv`` gives a CSR matrix of its own type (sklearn
    returns CSR after a sparse fit); the array library is that of ``sv`` (NumPy or CuPy, on the model's
    backend ``be``), and on the CPU the result is read-only, as sklearn's (writing into it would not change
    the model)."""
    coef = -pair_coef if n_classes == 2 else pair_coef
    if be.issparse(coef):  # CSR pair coefficients (pair_coef_is_sparse): the sparse product, in sv's layout
        coef = coef @ sv  # (dense for dense sv)
        if be.issparse(coef):
            coef = type(sv)(coef)
            coef.eliminate_zeros()  # (the nonzeros, as the CSR of a dense product below)
    elif be.issparse(sv):
        coef = type(sv)((sv.T @ coef.T).T)  # CSC times dense: dense (n_pairs, n_features), then CSR
    else:
        coef = coef @ sv
    if not be.is_gpu:
        (coef.data if be.issparse(coef) else coef).flags.writeable = False
    return coef


def check_finite_model(dual, intercept, owner):
    """Raise when a fitted model's coefficients or intercepts (host arrays) are not finite, as sklearn's
    SVC does, instead of returning a model whose decisions are all NaN: the Gram values overflowed."""
    if np.all(np.isfinite(dual)) and np.all(np.isfinite(intercept)):
        return
    raise ValueError(f"The dual coefficients or intercepts of {owner} are not finite: the Gram values overflowed "
                     "(float32 Gram rows, the default gram_dtype, hold values up to 3.4e38, float64 ones up to "
                     "1.8e308; a 'linear' or 'poly' gram grows with the scale of X). Rescale X (e.g. with "
                     "sklearn.preprocessing.StandardScaler), or lower gamma / degree.")

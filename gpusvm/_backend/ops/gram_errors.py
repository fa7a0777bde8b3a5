"""Fused op ``sample_gram_errors``: how much float32 Gram values perturb a problem, measured on sample rows.

The measures are those of :func:`gpusvm._solvers._common.float32_gram_errors` (which picks the sample
and documents what they mean): for the sample ``S`` (m rows), the float64 Gram ``K`` and the float32
values ``K32`` a solver would store (``K`` rounded, or computed from float32 rows), with ``E = K32 - K``,
``A_ij = K_ii + K_jj - 2 K_ij`` and ``P_ij = max(|E_ii + E_jj - 2 E_ij|, |E_ii| + |E_jj|)``:

* the median of ``P_ij / A_ij`` over the pairs ``i < j`` with ``A_ij > 0``;
* with ``with_diag`` (RBF values computed from float32 rows), ``max |E_ii|`` over the median ``A_ij``;

both 0.0 when no pair has a positive curvature.

* :func:`errors_from_gram`: the measures in array code over ``xp`` (the GPU op, and the reference).
* CPU op: the sample Gram's upper triangle without the gram driver (:func:`sample_gram_cpu`)
  and one compiled pass for the error terms and the medians, each operation as the array code's (same
  order), so the same floats to the bit (tests/test_gram_precision.py); NumPy's dozen small temporaries
  cost 0.2 ms per binary problem, which a fit of scikit-learn's digits pays 45 times.
"""

from __future__ import annotations

import numba
import numpy as np

from ..base import register_op
from .gram import _transform_cpu


def sample_gram_cpu(be, S, spec, sqnorm=None, *, upper_only=False):
    """``gram_cpu(S, S, spec, x_sqnorm=sqnorm, y_sqnorm=sqnorm, dtype=float64)`` for a small dense ``S``
    (one tile; not precomputed), without the driver's checks and tiling: the same product (``S @ S.T``, or
    two float64 copies of ``S`` as :func:`~.gram._gram` makes of a float32 one) and the same transform, so
    the same values, for 60 us less per call (the check runs once per binary problem on 64 sample rows).

    ``upper_only``: the values on and above the diagonal, packed row by row into a vector of m (m + 1) / 2
    (the order of ``np.triu_indices(m)``); for RBF only their exponents go through ``np.exp`` (half of
    the transform's cost), computed elementwise as :func:`~.gram._transform_numpy` does (compiled, same
    order: :func:`_rbf_upper_args`).
    """
    X = Y = S
    if S.dtype != np.float64:  # _gram converts X and Y separately: two buffers, a general product
        X, Y = S.astype(np.float64), S.astype(np.float64)
    sq = None
    if spec.kind == "rbf":
        sq = be.row_sqnorms(X, np.float64) if sqnorm is None else np.asarray(sqnorm, dtype=np.float64)
    m = int(S.shape[0])
    if upper_only and spec.kind == "rbf":
        return np.exp(_rbf_upper_args(X @ Y.T, sq, np.float64(-spec.gamma)))
    out = np.empty((m, m))
    _transform_cpu(be, X @ Y.T, out, sq, sq, spec)
    return out[upper_indices(m)] if upper_only else out


_UPPER: dict = {}


def upper_indices(m):
    """``np.triu_indices(m)`` (on and above the diagonal, row by row), kept per ``m``."""
    iu = _UPPER.get(m)
    if iu is None:
        iu = _UPPER.setdefault(m, np.triu_indices(m))
    return iu


@numba.njit(cache=True, nogil=True, inline="always")
def _rbf_arg(prod_ij, sq_i, sq_j, neg_gamma):
    """One value of :func:`_rbf_upper_args`: ``-gamma * max(-2 prod_ij + sq_i + sq_j, 0)``, each operation as
    :func:`~.gram._transform_numpy`'s in place ufuncs (NaN kept by the max, as np.maximum)."""
    t = prod_ij * -2.0
    t = t + sq_i
    t = t + sq_j
    if not (t >= 0.0 or t != t):
        t = 0.0
    return t * neg_gamma


@numba.njit(cache=True, nogil=True)
def _rbf_upper_args(prod, sq, neg_gamma):
    """For :func:`sample_gram_cpu`'s RBF upper triangle: :func:`_rbf_arg` of each i <= j, packed row by row."""
    m = prod.shape[0]
    out = np.empty(m * (m + 1) // 2)
    k = 0
    for i in range(m):
        for j in range(i, m):
            out[k] = _rbf_arg(prod[i, j], sq[i], sq[j], neg_gamma)
            k += 1
    return out


def errors_from_gram(xp, K, K32, with_diag):
    """(median pair measure, diagonal measure) from the float64 sample Gram ``K`` (m x m) and its float32
    values ``K32`` (see the module); the diagonal measure only ``with_diag``, else 0.0."""
    m = int(K.shape[0])
    E = K32.astype(xp.float64) - K
    d, e = xp.diagonal(K), xp.diagonal(E)
    A = d[:, None] + d[None, :] - 2.0 * K
    P = xp.maximum(xp.abs(e[:, None] + e[None, :] - 2.0 * E), xp.abs(e)[:, None] + xp.abs(e)[None, :])
    iu = xp.triu(xp.ones((m, m), dtype=bool), 1) & (A > 0)
    # (P / A, A) of the pairs in iu with one boolean mask: on the GPU each mask reads its count on the host
    # (a sync), and so does every scalar read; the values (and so the medians) are those of P[iu] / A[iu]
    PA = xp.stack([P / xp.where(iu, A, 1.0), A], axis=-1)[iu]
    if int(PA.shape[0]) == 0:
        return 0.0, 0.0
    if not with_diag:
        return float(xp.median(PA[:, 0])), 0.0
    # the median hides a minority of rows whose own distance ||x||^2 + ||x||^2 - 2 x.x cancels in
    # float32: at gamma=1e6 on standardized data 34 of 200 diagonals read 0.15-0.9 for 1 (a problem
    # of other curvatures: the batched solve stopped 0.047 from the true KKT point, tol 1e-3)
    pair, e_max, a_median = xp.stack([xp.median(PA[:, 0]), xp.max(xp.abs(e)), xp.median(PA[:, 1])]).tolist()
    return float(pair), float(e_max) / float(a_median)


@numba.njit(cache=True, nogil=True)
def _pair_ratio(Kii, Kjj, Kij, ei, ej, Eij):
    """``(A, P / A)`` of one pair: its curvature ``A = K_ii + K_jj - 2 K_ij`` and the pair measure's ratio,
    ``P`` the larger of ``|E_ii + E_jj - 2 E_ij|`` and ``|E_ii| + |E_jj|`` (the errors ``E`` of the float32
    values; see the module). The ratio is meaningful only when ``A > 0``, which the callers test."""
    A = (Kii + Kjj) - 2.0 * Kij
    p1 = abs((ei + ej) - 2.0 * Eij)
    p2 = abs(ei) + abs(ej)
    P = p1 if (p1 >= p2 or p1 != p1) else p2  # np.maximum (NaN propagates)
    return A, P / A if A > 0.0 else 0.0


@numba.njit(cache=True, nogil=True)
def _errors_tail(K, K32, m, with_diag):
    """From ``K`` and ``K32`` as their upper triangles (i <= j) packed row by row (the order of
    ``np.triu_indices(m)``): ``(median P/A, median A, max |E_ii|)`` over the pairs i < j with A > 0, each
    operation as :func:`errors_from_gram`'s (NumPy's median: NaN when a ratio is NaN, else the middle
    value or the mean of the two), and the number of those pairs (the medians are NaN when there is
    none). ``median A`` only ``with_diag`` (else NaN)."""
    d = np.empty(m, dtype=np.int64)  # row i's diagonal value is at d[i]
    e = np.empty(m)
    e_max = 0.0
    for i in range(m):
        d[i] = i * (2 * m - i + 1) // 2
        e[i] = np.float64(K32[d[i]]) - K[d[i]]
        a = abs(e[i])
        if not a <= e_max:  # np.max: a NaN wins
            e_max = a if e_max == e_max else e_max
    ratio = np.empty(m * (m - 1) // 2)
    curv = np.empty(m * (m - 1) // 2)
    c = 0
    has_nan = False
    for i in range(m):
        di, ei = K[d[i]], e[i]
        for j in range(i + 1, m):
            k = d[i] + (j - i)
            A, r = _pair_ratio(di, K[d[j]], K[k], ei, e[j], np.float64(K32[k]) - K[k])
            if not A > 0.0:
                continue
            has_nan |= r != r
            ratio[c] = r
            curv[c] = A
            c += 1
    if c == 0:
        return np.nan, np.nan, e_max, c
    pair = np.nan if has_nan else np.median(ratio[:c])
    return pair, np.median(curv[:c]) if with_diag else np.nan, e_max, c


@numba.njit(cache=True, nogil=True)
def _pair_median_above(K, m, limit):
    """Whether :func:`_errors_tail`'s median pair measure for ``K`` and its float32 rounding ``K32`` (both
    packed as there) exceeds ``limit`` (False also when it is NaN or there is no pair), without the median:
    the ratios are those of :func:`_errors_tail` (``K32`` rounded here, as ``astype(np.float32)`` rounds);
    their median (NumPy's, as Numba's ``np.median``: the middle value, or ``(a + b) / 2`` of the two middle
    ones) is above ``limit`` exactly when more than half of them are, except when the two middle values
    straddle ``limit``, where it is computed from them (the largest ratio <= limit and the smallest above
    it). (Two middle values both above ``limit`` have a mean above it, both at most ``limit`` one at most
    it: rounding is monotone and doubling exact.)"""
    d = np.empty(m, dtype=np.int64)
    e = np.empty(m)
    for i in range(m):
        d[i] = i * (2 * m - i + 1) // 2
        e[i] = np.float64(np.float32(K[d[i]])) - K[d[i]]
    c = 0
    n_le = 0
    lo = -np.inf  # the largest ratio <= limit
    hi = np.inf  # the smallest ratio > limit
    for i in range(m):
        di, ei = K[d[i]], e[i]
        for j in range(i + 1, m):
            k = d[i] + (j - i)
            A, r = _pair_ratio(di, K[d[j]], K[k], ei, e[j], np.float64(np.float32(K[k])) - K[k])
            if not A > 0.0:
                continue
            if r != r:
                return False  # a NaN median: not above
            c += 1
            if r <= limit:
                n_le += 1
                if r > lo:
                    lo = r
            elif r < hi:
                hi = r
    if c == 0:
        return False
    half = c >> 1
    if c & 1:
        return n_le <= half  # the middle value (index half, 0-based) is above limit
    if n_le == half:  # values half - 1 (lo, <= limit) and half (hi, > limit)
        return (lo + hi) / 2 > limit
    return n_le < half


def _float32_values(be, S, spec, sq, computed_in, dtype):
    """The sample's float32 Gram computed from float32 rows (``computed_in="float32"``), else None."""
    if computed_in != "float32" or spec.kind == "precomputed":
        return None
    S32 = S.astype(dtype)
    return be.gram(S32, S32, spec, x_sqnorm=sq, y_sqnorm=sq, dtype=dtype)


@register_op("sample_gram_errors", "cpu")
def sample_gram_errors_cpu(be, S, spec, sq, computed_in, pair_limit=None):
    """The measures (pair, diagonal) of the sample ``S`` (host; ``sq``: its float64 squared norms for RBF,
    else None), the float32 values rounded from float64 ones (``computed_in="float64"``) or computed from
    float32 rows ("float32"); see the module.

    ``pair_limit``: the caller only compares the pair measure with it (``pair > pair_limit``); where the
    float32 values are rounded float64 ones, the pair measure returned is then ``inf`` when it exceeds
    ``pair_limit`` and 0.0 otherwise (NaN and no pair included), found without its median
    (:func:`_pair_median_above`)."""
    m = int(S.shape[0])
    if spec.kind == "precomputed" or be.issparse(S) or m * m * 8 > 2**20:
        K = be.gram(S, S, spec, x_sqnorm=sq, y_sqnorm=sq, dtype=np.float64)[upper_indices(m)]
    else:  # the same values without the driver's overhead, packed: the tail reads only i <= j
        K = sample_gram_cpu(be, S, spec, sq, upper_only=True)
    K32 = _float32_values(be, S, spec, sq, computed_in, np.float32)
    if K32 is None and pair_limit is not None:  # (no diagonal measure: that is for float32 rows only)
        return (np.inf if _pair_median_above(K, m, float(pair_limit)) else 0.0), 0.0
    K32 = K.astype(np.float32) if K32 is None else K32[upper_indices(m)]
    with_diag = computed_in == "float32" and spec.kind == "rbf"
    pair, a_median, e_max, n_pairs = _errors_tail(K, K32, m, with_diag)
    if n_pairs == 0:  # no pair with a positive curvature
        return 0.0, 0.0
    return float(pair), float(e_max / a_median) if with_diag else 0.0


@register_op("sample_gram_errors", "gpu")
def sample_gram_errors_gpu(be, S, spec, sq, computed_in, pair_limit=None):
    """GPU version of :func:`sample_gram_errors_cpu`: :func:`errors_from_gram` over CuPy (the measures
    themselves, whatever ``pair_limit``)."""
    xp = be.xp
    K = be.gram(S, S, spec, x_sqnorm=sq, y_sqnorm=sq, dtype=xp.float64)
    K32 = _float32_values(be, S, spec, sq, computed_in, xp.float32)
    return errors_from_gram(xp, K, K.astype(xp.float32) if K32 is None else K32,
                            computed_in == "float32" and spec.kind == "rbf")


#: :func:`_rbf_screen`'s certain answer holds for pair limits from this one up (see there)
RBF_SCREEN_MIN_LIMIT = 1e-5
_RBF_SCREEN_FAR = -0.00625  # (an exponent at most this: K_ij <= 0.99377)
_RBF_SCREEN_DIAG = -1e-9  # (diagonal exponents at least this: K_ii >= 1 - 1e-9)


@numba.njit(cache=True, nogil=True)
def _rbf_screen(prod, sq, neg_gamma):
    """Per sample ``p`` (``prod[p]``, ``sq[p]``, as :func:`_upper_many` takes them): whether its pair
    measure is certainly at most :data:`RBF_SCREEN_MIN_LIMIT`, so that the answer is float32 for any limit from
    that one up (False: not known, the values decide).

    Certain when every diagonal exponent (:func:`_rbf_arg`, the values the exact check exponentiates) is at
    least -1e-9 (NaN is not) and more than half of the m (m - 1) / 2 pairs have an exponent of at most
    -0.00625. Then with K = exp(exponent) (NumPy's exp, within a few ulp; the margins below are orders of
    magnitude wider): K_ii is in [1 - 1e-9, 1], which float32 rounds to 1, so |E_ii| <= 1e-9; every K_ij is in
    [0, 1], so |E_ij| <= 2^-25 (half a float32 ulp below 1), and P <= 2e-9 + 2^-24 < 6.2e-8 for every pair; a
    pair with exponent <= -0.00625 has K_ij <= 0.99377 and so A >= 2 (1 - 1e-9) - 2 * 0.99377 > 0.0124 > 0,
    its ratio P / A < 5e-6 < 1e-5. Those pairs are more than half of all pairs, so more than half of the c
    pairs with A > 0 have a ratio at most the limit: the median is at most it, or NaN
    (:func:`_pair_median_above` answers False both ways). The exact answer without exp and the median, and
    it stops counting once more than half are far (tests/test_small_pairwise.py checks it against them)."""
    P, m = prod.shape[0], prod.shape[1]
    sure = np.zeros(P, dtype=np.bool_)
    half = (m * (m - 1) // 2) // 2
    for p in range(P):
        diag_ok = True
        for i in range(m):
            diag_ok &= _rbf_arg(prod[p, i, i], sq[p, i], sq[p, i], neg_gamma) >= _RBF_SCREEN_DIAG
        if not diag_ok:
            continue
        n_far = 0
        for i in range(m):
            for j in range(i + 1, m):
                n_far += _rbf_arg(prod[p, i, j], sq[p, i], sq[p, j], neg_gamma) <= _RBF_SCREEN_FAR
            if n_far > half:
                sure[p] = True
                break
    return sure


@numba.njit(cache=True, nogil=True)
def _upper_many(prod, sq=None, neg_gamma=0.0):
    """The upper triangles (i <= j, row by row) of the matrices ``prod[p]``, one after the other in one vector;
    with the squared norms ``sq[p]`` of each sample, their RBF exponents instead (:func:`_rbf_upper_args` of each
    sample; Numba compiles the two forms apart, ``sq`` None or an array)."""
    P, m = prod.shape[0], prod.shape[1]
    out = np.empty(P * (m * (m + 1) // 2))
    k = 0
    for p in range(P):
        for i in range(m):
            for j in range(i, m):
                if sq is None:
                    out[k] = prod[p, i, j]
                else:
                    out[k] = _rbf_arg(prod[p, i, j], sq[p, i], sq[p, j], neg_gamma)
                k += 1
    return out


@numba.njit(cache=True, nogil=True)
def _pair_median_above_many(K, P, m, limit):
    """:func:`_pair_median_above` of each of the ``P`` packed triangles that ``K`` holds one after the other."""
    L = m * (m + 1) // 2
    out = np.empty(P, dtype=np.bool_)
    for p in range(P):
        out[p] = _pair_median_above(K[p * L:(p + 1) * L], m, limit)
    return out


_CHUNK = 32  # samples per step of float32_too_coarse_many


def float32_too_coarse_many(X, x_sqnorm, spec, rows, starts, limit):
    """For each problem p, the host rows ``rows[starts[p]:starts[p + 1]]`` of the dense float32 or float64 host
    ``X`` (RBF or linear ``spec``; ``x_sqnorm``: the float64 squared norms of X's rows, read for RBF): whether
    :func:`gpusvm._solvers._common.float32_gram_errors` with ``computed_in="float64"`` and ``pair_limit=limit``
    measures a pair error above ``limit`` (its diagonal measure is then 0.0), i.e. whether
    :func:`~gpusvm._solvers._common.resolve_gram_dtype` turns "float32" into "float64" for it. The same
    decision to the bit (tests/test_pair_batch.py): the same sample rows, products (NumPy's matmul of each
    sample with itself: BLAS's syrk, or gemm for two float64 copies of float32 rows), transform (np.exp of
    :func:`_rbf_upper_args`'s arguments; elementwise) and :func:`_pair_median_above`, the samples of one size
    stacked so that each step is one call for all of them instead of a dozen NumPy calls per problem (44 us
    of a class pair's fixed cost on 100 classes of 30 points; benchmarks/many_classes.py)."""
    starts = np.asarray(starts, dtype=np.int64)
    ns = np.diff(starts)
    ms = np.minimum(ns, 64)
    out = np.zeros(ns.shape[0], dtype=bool)
    for m in np.unique(ms).tolist():
        if m < 2:  # (no pair: float32)
            continue
        group = np.flatnonzero(ms == m)
        # in chunks whose products (m x m each) stay in the cache: 4,950 samples of 60 rows at once wrote
        # and read 140 MB of products, a third of the check's time
        for c0 in range(0, group.shape[0], _CHUNK):
            ps = group[c0:c0 + _CHUNK]
            # float32_gram_errors' sample of each: k (n - 1) // (m - 1), k < m
            idx = (np.arange(m, dtype=np.int64)[None, :] * (ns[ps, None] - 1)) // (m - 1)
            srows = rows[starts[ps, None] + idx]
            S = X[srows]  # (P, m, d)
            if S.dtype == np.float64:
                prod = S @ S.transpose(0, 2, 1)  # (each sample times its own transpose: syrk, as S @ S.T)
            else:
                prod = S.astype(np.float64) @ S.astype(np.float64).transpose(0, 2, 1)
            if spec.kind == "rbf":
                sq = np.ascontiguousarray(x_sqnorm[srows], dtype=np.float64)
                neg_gamma = np.float64(-spec.gamma)
                if limit >= RBF_SCREEN_MIN_LIMIT:  # (the certain ones are float32: out is False)
                    keep = np.flatnonzero(~_rbf_screen(prod, sq, neg_gamma))
                    if keep.shape[0] == 0:
                        continue
                    if keep.shape[0] < ps.shape[0]:
                        ps, prod, sq = ps[keep], prod[keep], sq[keep]
                K = np.exp(_upper_many(prod, sq, neg_gamma))
            else:
                K = _upper_many(prod)
            out[ps] = _pair_median_above_many(K, ps.shape[0], m, float(limit))
    return out

"""Fused op ``merge_search``: score every support vector as merge partner of one first candidate.

This is the costly part of budget maintenance in BSGD (Wang, Crammer and Vucetic, JMLR 13, 2012) and
the part that multi-merge (Qaadan and Glasmachers, "Multi-Merge Budget Maintenance for Stochastic
Gradient Descent SVM Training", arXiv:1806.10179) runs once per M-1 margin violations instead of once
per violation.

Merging two support vectors (x_i, a_i), (x_j, a_j) of the same sign with the Gaussian gram
k(x, y) = exp(-gamma ||x - y||^2) replaces them by one point z = h x_i + (1 - h) x_j, h in [0, 1].
With kappa = k(x_i, x_j) = exp(-gamma d2) the gram values of z are k(x_i, z) = kappa^((1-h)^2) and
k(x_j, z) = kappa^(h^2), and the best coefficient of z (the projection of a_i phi(x_i) + a_j phi(x_j)
onto phi(z)) is in closed form

    a_z(h) = a_i kappa^((1-h)^2) + a_j kappa^(h^2) = (a_i + a_j) s(h),
    s(h)   = m kappa^((1-h)^2) + (1 - m) kappa^(h^2),   m = a_i / (a_i + a_j) in (0, 1).

The weight degradation ||a_i phi(x_i) + a_j phi(x_j) - a_z phi(z)||^2 = a_i^2 + a_j^2 + 2 a_i a_j kappa
- a_z^2 is smallest where s(h) is largest; h is found by a golden-section search on [0, 1] with a fixed
number of iterations (so the CPU and the GPU evaluate exactly the same points).

Rules, checked against the published implementations (BudgetedSVM's bsgd.cpp by Wang et al.'s group;
the BSGD/BSCA code of Qaadan and Glasmachers, whose multi-merge paper builds on it), and the choices
made where they differ:

* first candidate: the SV of minimal |alpha| (all implementations);
* partners: only SVs with the same sign (label) as the first candidate are scored, as in Qaadan and
  Glasmachers' code (BudgetedSVM also scores opposite-sign SVs with h searched in [1, 6] or [-5, 0]);
  for same-sign pairs h in [0, 1] is the right interval. Others, and the first candidate itself, get
  degradation +inf;
* golden-section search on [0, 1] with ties moving the bracket left, stopped when the bracket is
  narrower than 0.01 as in Qaadan and Glasmachers' code ("standard GSS", tolerance 0.01; BudgetedSVM
  uses 2e-4): that is ``n_gss`` = 10 shrink steps (0.618^10 = 0.0081), a fixed count so the CPU and the
  GPU evaluate the same points; h = the bracket's midpoint (as both codes). Since h is near a
  stationary point, the degradation's error from the tolerance is second order. One addition: the
  endpoints h = 1 (z = x_i) and h = 0 (z = x_j) are compared with the midpoint and the best is kept.
  For far points (kappa small) s(h) has two modes near the endpoints and the bracket can close on the
  worse one or stop short of the endpoint; both end values are free (they only need kappa, which the
  degradation needs anyway);
* the squared distance is summed from coordinate differences (not from norms), which avoids
  cancellation for nearby points.

The CPU twin (:func:`merge_search_nb`, which the CPU training loop :mod:`gpusvm._backend.ops.bsgd`
calls too) runs the golden-section searches of up to ``GSS_BATCH`` candidates in lock step with
vectorized exponentials (:func:`golden_merge_batch`; measured against one :func:`golden_merge` per
candidate, :func:`merge_search_scalar_nb`, in benchmarks/results/merge_search_batch_cpu.md). The GPU
version runs ``merge_search`` of ``kernels/merge.cu``, one thread per candidate, and shares its device
functions (``kernels/merge.cuh``) with the GPU training loop.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..base import register_op

GOLDEN = 0.6180339887498949  # (sqrt(5) - 1) / 2
DEFAULT_N_GSS = 10  # bracket 0.618^10 = 0.0081: the authors' stopping rule, width < 0.01


@numba.njit(cache=True, fastmath={"reassoc", "contract"})
def sqdist(a, b):
    """||a - b||^2 of two 1-d rows. The only reassociated (SIMD) arithmetic of the CPU loops: summing the
    squares in any order lets LLVM vectorize it (2-3x faster margins); everything else stays IEEE-strict
    (the merge search relies on +inf)."""
    d2 = 0.0
    for k in range(a.shape[0]):
        u = a[k] - b[k]
        d2 += u * u
    return d2


# exp(v), v <= 0, in a form LLVM vectorizes (libm's exp is a scalar call without Intel SVML): v = k ln2 + r,
# |r| <= ln2 / 2, exp(r) by its Taylor polynomial of degree 13 (truncation < 1e-17), 2^k from the
# exponent bits. Within 1 ulp of math.exp over [-708, 0] (tests/test_budget.py); v < -708 is clamped
# (exp(-708) = 3e-308 instead of a subnormal or 0: no effect on a sum of gram values).
_LOG2E = 1.4426950408889634
_LN2_HI = 0.693145751953125  # 12 significant bits: k * _LN2_HI is exact for |k| <= 1022
_LN2_LO = 1.4286068203094173e-06  # ln 2 - _LN2_HI


@numba.njit(cache=True, fastmath={"contract"})
def exp_neg_vec(v, n, bits):
    """In place: v[:n] <- exp(v[:n]) for v <= 0 (see above); ``bits`` (int64, >= n) is scratch."""
    for j in range(n):
        x = v[j]
        if x < -708.0:
            x = -708.0
        kf = math.floor(x * _LOG2E + 0.5)
        r = (x - kf * _LN2_HI) - kf * _LN2_LO
        p = 1.0 / 6227020800.0
        p = p * r + 1.0 / 479001600.0
        p = p * r + 1.0 / 39916800.0
        p = p * r + 1.0 / 3628800.0
        p = p * r + 1.0 / 362880.0
        p = p * r + 1.0 / 40320.0
        p = p * r + 1.0 / 5040.0
        p = p * r + 1.0 / 720.0
        p = p * r + 1.0 / 120.0
        p = p * r + 1.0 / 24.0
        p = p * r + 1.0 / 6.0
        p = p * r + 0.5
        p = p * r + 1.0
        p = p * r + 1.0
        v[j] = p
        bits[j] = (np.int64(kf) + 1023) << 52
    scale = bits.view(np.float64)
    for j in range(n):
        v[j] *= scale[j]


@numba.njit(cache=True, inline="always")
def _s(h, m, gd2):
    # m * kappa^((1-h)^2) + (1-m) * kappa^(h^2), kappa = exp(-gd2), written with exp to stay accurate
    # when kappa underflows.
    u = 1.0 - h
    return m * math.exp(-gd2 * u * u) + (1.0 - m) * math.exp(-gd2 * h * h)


@numba.njit(cache=True)
def golden_merge(ai, aj, gd2, n_gss):
    """Merge (a_i, x_i), (a_j, x_j) with gamma * ||x_i - x_j||^2 = gd2 (a_i, a_j of the same sign).

    Golden-section search for the maximum of s(h) on [0, 1]: ``n_gss`` shrink steps (ties move the
    bracket left), h = the final bracket's midpoint; then h = 1 (z = x_i) and h = 0 (z = x_j) are
    compared with it (s(1) = m + (1 - m) kappa and s(0) = m kappa + 1 - m cost no extra exp) and the
    best of the three is kept: for far points s(h) is bimodal and the bracket may close on the
    worse mode. Returns (h, a_z, degradation): z = h x_i + (1 - h) x_j.
    """
    tot = ai + aj
    m = ai / tot
    a = 0.0
    b = 1.0
    c = b - GOLDEN * (b - a)
    d = a + GOLDEN * (b - a)
    fc = _s(c, m, gd2)
    fd = _s(d, m, gd2)
    for _ in range(n_gss):
        if fc >= fd:
            b = d
            d = c
            fd = fc
            c = b - GOLDEN * (b - a)
            fc = _s(c, m, gd2)
        else:
            a = c
            c = d
            fc = fd
            d = a + GOLDEN * (b - a)
            fd = _s(d, m, gd2)
    h = 0.5 * (a + b)
    sh = _s(h, m, gd2)
    kappa = math.exp(-gd2)
    s1 = m + (1.0 - m) * kappa
    s0 = m * kappa + (1.0 - m)
    if s1 > sh:
        h = 1.0
        sh = s1
    if s0 > sh:
        h = 0.0
        sh = s0
    return h, tot * sh, _degradation(ai, aj, gd2, h)


@numba.njit(cache=True, inline="always")
def _degradation(ai, aj, gd2, h):
    # deg = ai^2 + aj^2 + 2 ai aj kappa - az^2 with az = ai p + aj q (p = k(x_i, z), q = k(x_j, z)),
    # regrouped as ai^2 (1 - p^2) + aj^2 (1 - q^2) + 2 ai aj (kappa - p q) with expm1, so that no digits
    # cancel: the plain form subtracts terms of size aj^2 to get ai^2 (1 - kappa^2), and its last bits
    # then depend on how the compiler fuses the multiply-adds (CPU and GPU differ).
    u = 1.0 - h
    pq = math.exp(-gd2 * (u * u + h * h))
    deg = -(ai * ai * math.expm1(-2.0 * gd2 * u * u) + aj * aj * math.expm1(-2.0 * gd2 * h * h)) \
        + 2.0 * ai * aj * pq * math.expm1(-2.0 * gd2 * h * u)
    return deg if deg > 0.0 else 0.0


# ---- the golden-section searches of many pairs at once (the CPU merge search) ---------------------------
# golden_merge spends its time in 27 scalar libm exp calls (no SIMD exp in Numba without Intel SVML).
# golden_merge_batch runs the same search for up to GSS_BATCH pairs that share the first coefficient a_i
# in lock step: every bracket update is a select instead of a branch, and the two exponentials of each
# s(h) evaluation of all pairs go through exp_neg_vec (vectorized, within 1 ulp of libm). The brackets
# are computed with the same IEEE operations as golden_merge (no FMA contraction), and the degradation
# of the final h with libm as there. Where two compared s values are so close that the comparison could
# fall the other way than with libm's exp (_GSS_TIE), the pair is searched again by golden_merge, so the
# results are golden_merge's to the bit.
# Measured (benchmarks/results/merge_search_batch_cpu.md, searches on the final states of trained models):
# 1.2-2.5x faster than merge_search_scalar_nb; least on ijcnn1 (124 SVs, about 56 candidates per search).
GSS_BATCH = 128
# row offsets (in units of GSS_BATCH) in the float64 workspace; GSS_G, GSS_AJ (inputs: gamma * distance^2
# and a_j of each pair), GSS_H, GSS_DEG (outputs) are public: the greedy cascade fills and reads them
_W_V, _W_M, _W_A, _W_B, _W_C, _W_D, _W_FC, _W_FD, _W_K, _W_L, _W_T = 0, 4, 5, 6, 7, 8, 9, 10, 11, 12, 17
GSS_G, GSS_AJ, GSS_H, GSS_DEG = 13, 14, 15, 16
_W_ROWS = 18
# The batch's exponentials take arguments of at least -600: s values below e^-600 (far pairs) would
# otherwise become subnormal products, 10-100x slower on x86 (skin_nonskin: gamma d^2 in the thousands).
# It cannot change h: where the clamp matters every term of both compared s values is below e^-564
# (else it is lost in rounding), and then the endpoint check picks h = 0 or 1 (s(1), s(0) >= min(m,
# 1 - m), far above) in golden_merge and here alike.
_GSS_MIN_ARG = -600.0
# Two compared s values closer than this (relative) count as a tie: each s is within a few ulp of the
# scalar search's (exp_neg_vec is within 1 ulp of libm), so a comparison can only fall the other way
# there. Such pairs (m ~ 1/2: two never-merged SVs, whose coefficients are equal up to rounding) are
# searched again by the scalar golden_merge, so that the batch returns golden_merge's h and degradation
# to the bit.
_GSS_TIE = 4e-15
_GSS_TINY = 1e-250  # below: the clamped regime above (h is an endpoint either way)


@numba.njit(cache=True)
def gss_workspace():
    """Scratch for :func:`golden_merge_batch` / :func:`merge_search_nb`: (float64, int64) arrays."""
    return np.empty(_W_ROWS * GSS_BATCH), np.empty(5 * GSS_BATCH, dtype=np.int64)


@numba.njit(cache=True)
def _exp_rows(ws, iws, rows, n):
    # exp of ws[r * GSS_BATCH: r * GSS_BATCH + n] for the first ``rows`` rows of the workspace
    B = GSS_BATCH
    for r in range(rows):
        exp_neg_vec(ws[r * B:r * B + n], n, iws[r * B:r * B + n])


@numba.njit(cache=True)
def golden_merge_batch(n, ai, ws, iws, n_gss):
    """:func:`golden_merge` of the pairs (ai, aj[k]) with gamma * distance^2 gd2[k], k < n <= GSS_BATCH,
    vectorized across the pairs. Reads aj and gd2 from the workspace rows GSS_AJ and GSS_G; writes h and
    the degradation to rows GSS_H and GSS_DEG; returns how many pairs were near-ties searched again by
    golden_merge (see _GSS_TIE). All state lives in the one flat array ``ws`` at constant row offsets,
    so that LLVM can see that the rows do not overlap and vectorize the bracket updates."""
    B = GSS_BATCH
    a0 = 0.0
    b0 = 1.0
    c0 = b0 - GOLDEN * (b0 - a0)
    d0 = a0 + GOLDEN * (b0 - a0)
    uc = 1.0 - c0
    ud = 1.0 - d0
    for k in range(n):
        g = ws[GSS_G * B + k]
        ws[_W_M * B + k] = ai / (ai + ws[GSS_AJ * B + k])
        ws[k] = max(-g * uc * uc, _GSS_MIN_ARG)
        ws[B + k] = max(-g * c0 * c0, _GSS_MIN_ARG)
        ws[2 * B + k] = max(-g * ud * ud, _GSS_MIN_ARG)
        ws[3 * B + k] = max(-g * d0 * d0, _GSS_MIN_ARG)
    _exp_rows(ws, iws, 4, n)
    for k in range(n):
        m = ws[_W_M * B + k]
        ws[_W_A * B + k] = a0
        ws[_W_B * B + k] = b0
        ws[_W_C * B + k] = c0
        ws[_W_D * B + k] = d0
        ws[_W_FC * B + k] = m * ws[k] + (1.0 - m) * ws[B + k]
        ws[_W_FD * B + k] = m * ws[2 * B + k] + (1.0 - m) * ws[3 * B + k]
        ws[_W_T * B + k] = 0.0
    for _ in range(n_gss):
        # golden_merge's step for every pair: fc >= fd (ties: left) -> [a, d], new point c; else
        # [c, b], new point d. K keeps the surviving value, L which side the new point is on.
        for k in range(n):
            fc = ws[_W_FC * B + k]
            fd = ws[_W_FD * B + k]
            a = ws[_W_A * B + k]
            b = ws[_W_B * B + k]
            c = ws[_W_C * B + k]
            d = ws[_W_D * B + k]
            left = fc >= fd
            big = fc if left else fd
            tie = abs(fc - fd) <= _GSS_TIE * big and big > _GSS_TINY
            ws[_W_T * B + k] = 1.0 if tie else ws[_W_T * B + k]
            nb = d if left else b
            na = a if left else c
            xl = nb - GOLDEN * (nb - na)
            xr = na + GOLDEN * (nb - na)
            x = xl if left else xr
            ws[_W_A * B + k] = na
            ws[_W_B * B + k] = nb
            ws[_W_C * B + k] = x if left else d
            ws[_W_D * B + k] = c if left else x
            ws[_W_K * B + k] = fc if left else fd
            ws[_W_L * B + k] = 1.0 if left else 0.0
            g = ws[GSS_G * B + k]
            u = 1.0 - x
            ws[k] = max(-g * u * u, _GSS_MIN_ARG)
            ws[B + k] = max(-g * x * x, _GSS_MIN_ARG)
        _exp_rows(ws, iws, 2, n)
        for k in range(n):
            m = ws[_W_M * B + k]
            fx = m * ws[k] + (1.0 - m) * ws[B + k]
            keep = ws[_W_K * B + k]
            left = ws[_W_L * B + k] > 0.5
            ws[_W_FC * B + k] = fx if left else keep
            ws[_W_FD * B + k] = keep if left else fx
    for k in range(n):
        h = 0.5 * (ws[_W_A * B + k] + ws[_W_B * B + k])
        ws[GSS_H * B + k] = h
        g = ws[GSS_G * B + k]
        u = 1.0 - h
        ws[k] = max(-g * u * u, _GSS_MIN_ARG)
        ws[B + k] = max(-g * h * h, _GSS_MIN_ARG)
        ws[2 * B + k] = max(-g, _GSS_MIN_ARG)
    _exp_rows(ws, iws, 3, n)
    for k in range(n):  # the endpoints, as golden_merge
        m = ws[_W_M * B + k]
        sh = m * ws[k] + (1.0 - m) * ws[B + k]
        kappa = ws[2 * B + k]
        s1 = m + (1.0 - m) * kappa
        s0 = m * kappa + (1.0 - m)
        h = ws[GSS_H * B + k]
        top = max(sh, max(s1, s0))
        if top > _GSS_TINY and (abs(s1 - sh) <= _GSS_TIE * top or abs(s0 - sh) <= _GSS_TIE * top
                                or abs(s1 - s0) <= _GSS_TIE * top):
            ws[_W_T * B + k] = 1.0
        if s1 > sh:
            h = 1.0
            sh = s1
        if s0 > sh:
            h = 0.0
        ws[GSS_H * B + k] = h
    for k in range(n):
        ws[GSS_DEG * B + k] = _degradation(ai, ws[GSS_AJ * B + k], ws[GSS_G * B + k], ws[GSS_H * B + k])
    n_ties = 0
    for k in range(n):  # near-ties: the scalar search decides
        if ws[_W_T * B + k] > 0.5:
            h, _, dg = golden_merge(ai, ws[GSS_AJ * B + k], ws[GSS_G * B + k], n_gss)
            ws[GSS_H * B + k] = h
            ws[GSS_DEG * B + k] = dg
            n_ties += 1
    return n_ties


@numba.njit(cache=True)
def merge_search_nb(sv, alpha, n_sv, first, gamma, n_gss, deg, hs, ws, iws):
    """Fill ``deg[j]``, ``hs[j]`` (j < n_sv) for merging SV ``j`` into SV ``first``; see the module doc.
    The candidates' golden-section searches run GSS_BATCH at a time (:func:`golden_merge_batch`; ``ws``,
    ``iws`` from :func:`gss_workspace`)."""
    B = GSS_BATCH
    af = alpha[first]
    g = ws[GSS_G * B:(GSS_G + 1) * B]
    aj = ws[GSS_AJ * B:(GSS_AJ + 1) * B]
    hout = ws[GSS_H * B:(GSS_H + 1) * B]
    dout = ws[GSS_DEG * B:(GSS_DEG + 1) * B]
    idx = iws[4 * B:]
    n = 0
    for j in range(n_sv):
        a = alpha[j]
        if j == first or a * af <= 0.0:
            deg[j] = np.inf
            hs[j] = 0.0
        else:
            idx[n] = j
            g[n] = gamma * sqdist(sv[first], sv[j])
            aj[n] = a
            n += 1
        if n == B or (j == n_sv - 1 and n > 0):
            golden_merge_batch(n, af, ws, iws, n_gss)
            for k in range(n):
                deg[idx[k]] = dout[k]
                hs[idx[k]] = hout[k]
            n = 0


@numba.njit(cache=True)
def merge_search_scalar_nb(sv, alpha, n_sv, first, gamma, n_gss, deg, hs):
    """:func:`merge_search_nb` one candidate at a time with the scalar :func:`golden_merge` (libm exp):
    the reference the batched search is tested and timed against (benchmarks/merge_search_batch.py)."""
    af = alpha[first]
    for j in range(n_sv):
        aj = alpha[j]
        if j == first or aj * af <= 0.0:
            deg[j] = np.inf
            hs[j] = 0.0
            continue
        h, az, dg = golden_merge(af, aj, gamma * sqdist(sv[first], sv[j]), n_gss)
        deg[j] = dg
        hs[j] = h


@numba.njit(cache=True)
def smallest_k(deg, n, k, out):
    """Indices of the ``k`` smallest finite ``deg[:n]`` in increasing order (ties: lower index first)
    written to ``out``; returns how many were found (fewer when fewer are finite). Repeated argmin,
    the same rule as the GPU's block reductions. ``deg`` is left unchanged."""
    return smallest_k_one_heavy(deg, n, k, out, deg, np.inf)


@numba.njit(cache=True)
def smallest_k_one_heavy(deg, n, k, out, alpha, thr):
    """:func:`smallest_k`, except that at most one index j with |alpha[j]| > thr is taken: once one is,
    the others are passed over (merge="cascade-light"; thr = inf: no limit)."""
    found = 0
    heavy = False
    for r in range(k):
        best = -1
        bv = np.inf
        for j in range(n):
            v = deg[j]
            if v < bv and not (heavy and abs(alpha[j]) > thr):
                taken = False
                for q in range(found):
                    if out[q] == j:
                        taken = True
                        break
                if not taken:
                    bv = v
                    best = j
        if best < 0:
            break
        out[found] = best
        found += 1
        if abs(alpha[best]) > thr:
            heavy = True
    return found


@numba.njit(cache=True)
def argmin_abs(alpha, n):
    best = 0
    bv = abs(alpha[0])
    for j in range(1, n):
        v = abs(alpha[j])
        if v < bv:
            bv = v
            best = j
    return best


def _check(sv, alpha, n_sv, first):
    n_sv = int(n_sv)
    if not 0 < n_sv <= sv.shape[0] or alpha.shape[0] < n_sv:
        raise ValueError(f"n_sv={n_sv} does not fit sv of shape {sv.shape} and alpha of shape {alpha.shape}")
    first = int(first)
    if not 0 <= first < n_sv:
        raise ValueError(f"first={first} is not in [0, {n_sv})")
    return n_sv, first


@register_op("merge_search", "cpu")
def merge_search_cpu(be, sv, alpha, n_sv, first, gamma, *, n_gss=DEFAULT_N_GSS):
    """Score SVs ``0..n_sv-1`` as merge partners of SV ``first`` (Gaussian gram).

    Parameters
    ----------
    sv : ndarray of shape (capacity, n_features), float64
        Support vectors (rows beyond ``n_sv`` are ignored).
    alpha : ndarray of shape (capacity,), float64
        Signed coefficients.
    n_sv : int
    first : int
        The first merge candidate (BSGD: the SV of minimal |alpha|).
    gamma : float
    n_gss : int
        Golden-section iterations.

    Returns
    -------
    degradation : ndarray of shape (n_sv,)
        Weight degradation of merging each SV with ``first``; +inf for ``first`` itself and for SVs of
        the other sign.
    h : ndarray of shape (n_sv,)
        The merge point's coordinate: z = h * sv[first] + (1 - h) * sv[j].
    """
    n_sv, first = _check(sv, alpha, n_sv, first)
    sv = np.ascontiguousarray(sv, dtype=np.float64)
    alpha = np.ascontiguousarray(alpha, dtype=np.float64)
    deg = np.empty(n_sv)
    hs = np.empty(n_sv)
    ws, iws = gss_workspace()
    merge_search_nb(sv, alpha, n_sv, first, float(gamma), int(n_gss), deg, hs, ws, iws)
    return deg, hs


@register_op("merge_search", "gpu")
def merge_search_gpu(be, sv, alpha, n_sv, first, gamma, *, n_gss=DEFAULT_N_GSS):
    """GPU twin of :func:`merge_search_cpu`: ``merge_search<double>`` of kernels/merge.cu, one thread
    per candidate."""
    import cupy as cp

    from ..cuda_source import get_kernel

    n_sv, first = _check(sv, alpha, n_sv, first)
    with be.device:
        sv = cp.ascontiguousarray(cp.asarray(sv, dtype=cp.float64))
        alpha = cp.ascontiguousarray(cp.asarray(alpha, dtype=cp.float64))
        deg = cp.empty(n_sv, dtype=cp.float64)
        hs = cp.empty(n_sv, dtype=cp.float64)
        fn = get_kernel("merge.cu", "merge_search<double>", be.device_id)
        threads = 128
        blocks = (n_sv + threads - 1) // threads
        fn((blocks,), (threads,), (sv, alpha, cp.int32(n_sv), cp.int32(sv.shape[1]), cp.int32(first),
                                   cp.float64(gamma), cp.int32(n_gss), deg, hs))
    return deg, hs


@register_op("merge_partners", "cpu")
def merge_partners_cpu(be, degradation, k):
    """Indices of the ``k`` smallest finite degradations in increasing order (ties: lower index)."""
    deg = np.ascontiguousarray(degradation, dtype=np.float64)
    out = np.empty(int(k), dtype=np.int64)
    found = smallest_k(deg, deg.shape[0], int(k), out)
    return out[:found]


@register_op("merge_partners", "gpu")
def merge_partners_gpu(be, degradation, k):
    """GPU twin of :func:`merge_partners_cpu` (a stable sort; same order and tie rule)."""
    import cupy as cp

    with be.device:
        deg = cp.asarray(degradation)
        idx = cp.argsort(deg)[: int(k)]  # always stable in CuPy; older CuPy rejects kind=
        return idx[cp.isfinite(deg[idx])]

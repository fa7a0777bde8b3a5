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

The CPU twin is a Numba loop over candidates (:func:`merge_search_nb`), which the CPU training loop
(:mod:`gpusvm._backend.ops.bsgd`) calls too; the GPU version runs ``merge_search`` of
``kernels/merge.cu``, one thread per candidate, and shares its device functions (``kernels/merge.cuh``)
with the GPU training loop.
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
    az = tot * sh
    # deg = ai^2 + aj^2 + 2 ai aj kappa - az^2 with az = ai p + aj q (p = k(x_i, z), q = k(x_j, z)),
    # regrouped as ai^2 (1 - p^2) + aj^2 (1 - q^2) + 2 ai aj (kappa - p q) with expm1, so that no digits
    # cancel: the plain form subtracts terms of size aj^2 to get ai^2 (1 - kappa^2), and its last bits
    # then depend on how the compiler fuses the multiply-adds (CPU and GPU differ).
    u = 1.0 - h
    pq = math.exp(-gd2 * (u * u + h * h))
    deg = -(ai * ai * math.expm1(-2.0 * gd2 * u * u) + aj * aj * math.expm1(-2.0 * gd2 * h * h)) \
        + 2.0 * ai * aj * pq * math.expm1(-2.0 * gd2 * h * u)
    if deg < 0.0:
        deg = 0.0
    return h, az, deg


@numba.njit(cache=True)
def merge_search_nb(sv, alpha, n_sv, first, gamma, n_gss, deg, hs):
    """Fill ``deg[j]``, ``hs[j]`` (j < n_sv) for merging SV ``j`` into SV ``first``; see the module doc."""
    af = alpha[first]
    for j in range(n_sv):
        aj = alpha[j]
        if j == first or aj * af <= 0.0:
            deg[j] = np.inf
            hs[j] = 0.0
            continue
        d2 = sqdist(sv[first], sv[j])
        h, az, dg = golden_merge(af, aj, gamma * d2, n_gss)
        deg[j] = dg
        hs[j] = h


@numba.njit(cache=True)
def smallest_k(deg, n, k, out):
    """Indices of the ``k`` smallest finite ``deg[:n]`` in increasing order (ties: lower index first)
    written to ``out``; returns how many were found (fewer when fewer are finite). Repeated argmin,
    the same rule as the GPU's block reductions. ``deg`` is left unchanged."""
    found = 0
    for r in range(k):
        best = -1
        bv = np.inf
        for j in range(n):
            v = deg[j]
            if v < bv:
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
    merge_search_nb(sv, alpha, n_sv, first, float(gamma), int(n_gss), deg, hs)
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

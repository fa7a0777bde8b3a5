"""Fused op ``bsgd_train``: the whole budgeted SGD loop of one binary problem, compiled.

BSGD (Wang, Crammer and Vucetic, "Breaking the curse of kernelization: budgeted stochastic gradient
descent for large-scale SVM training", JMLR 13, 2012) on the Pegasos objective
lambda/2 ||w||^2 + 1/n sum_i max(0, 1 - y_i <w, phi(x_i)>), with multi-merge budget maintenance
(Qaadan and Glasmachers, arXiv:1806.10179). Step t (counted from 1 over all epochs), sample i = order[t-1]:

    f = sum_j alpha_j k(sv_j, x_i)                     (the model before the step)
    alpha <- (1 - 1/t) alpha                           (eta_t lambda = 1/t, eta_t = 1/(lambda t))
    if y_i f < 1: add sv x_i with alpha = y_i / (lambda t)
    if #SV > B:   budget maintenance (below)

Budget maintenance with M = n_merge: the first candidate is the SV of minimal |alpha| (lowest index on
ties); every other SV of the same sign is scored by the degradation of merging it with the first
(fused op ``merge_search``); the M-1 best partners (lowest degradation, lowest index on ties) are then

* "cascade" (MM-BSGD, Algorithm 1): merged one after the other in order of increasing degradation,
  z <- merge(z, partner) by golden-section search each time;
* "greedy" (ours): a cascade whose next partner is re-chosen each time: among a shortlist of
  the ``GREEDY_SHORTLIST * (M-1)`` best partners of the first candidate (from the same single search),
  the SV whose golden-section merge with the running z degrades least. Why: with a narrow Gaussian two
  distant points merge into (nearly) the one with the larger coefficient, so the plain cascade's later
  merges (the running z, near its first partner, with a partner chosen for its closeness to the first
  candidate) drop a large coefficient; re-choosing against z keeps losing small ones. Measured (7
  seeds, one epoch, CPU): phishing B=143 M=3 / 5: 91.9 / 91.9% (cascade) -> 93.8 / 93.8% (greedy) against
  94.5% at M=2; ijcnn1 B=124: 92.1 / 91.4% -> 95.6 / 94.8% against 95.2% (shortlist 2 (M-1): 92.7 /
  92.8% and 94.9 / 94.9%; 4 (M-1): 93.0 / 92.6% and 95.3 / 94.7%). It costs speed: up to
  GREEDY_SHORTLIST (M-1)^2 extra golden-section searches per maintenance, so at M=10 or small budgets it
  is slower than M=2 (benchmarks/results/budget_greedy_cpu.md);
* "cascade-light" (ours): the cascade, but among the partners at most one heavy SV (|alpha| >
  ``HEAVY_RATIO`` |alpha_first|, i.e. one that is itself a merge): a second heavy candidate is passed
  over for the next light one (``smallest_k_one_heavy`` of :mod:`.merge`). Why, measured on ijcnn1 B=124 M=3 (7 seeds):
  the cascade degraded the weight by 2.63 new-SV units alpha^2 per maintenance against 0.12 at M=2,
  most of it in the 12-21% of maintenances whose second merge joined two heavy SVs (10-28 units each,
  against 0.4-1 with a light second partner). Same single search, same M-1 partners where enough
  light ones exist; the search's cost is unchanged;
* "gradient" (MM-GD, Algorithm 2): merged all at once: z starts at the alpha-weighted mean of the M
  points and climbs g(z) = sum_i a_i k(x_i, z) (a_z = g(z) is the best coefficient and the degradation
  is ||w_M||^2 - g(z)^2) by gradient steps with the step size 1 / (2 gamma g(z)), i.e. the fixed-point
  ("mean-shift") update z <- sum_i a_i k(x_i, z) x_i / g(z), which increases g monotonically for
  same-sign coefficients; ``n_gd`` steps.

The merged point takes the first candidate's slot; each partner's slot is filled by the current last SV
(partners removed in decreasing slot order). When fewer than M-1 same-sign partners exist the available
ones are merged; with none the first candidate is removed (its degradation is alpha^2). The GPU kernel
(``kernels/bsgd.cu``) follows the same rules step for step.

Margins (the loop's cost outside budget maintenance: B gram values per step): the CPU loop keeps a
transposed copy of the SVs and their squared norms next to the row-major SVs (updated on every add,
merge and removal, O(d) each) and computes ||sv_j - x||^2 = ||sv_j||^2 + ||x||^2 - 2 <sv_j, x> with the dot
products accumulated over the nonzeros of x along contiguous columns, and the exponentials by a
vectorizable exp (within 1 ulp of libm). The result is the same f up to rounding; ``margin="rows"``
keeps the plain row-by-row form (coordinate differences, libm exp) for reference. The GPU loop has
both forms too (:func:`bsgd_train_gpu`); its default takes the columns from 32 features on.

Timing: CPU cycles (``llvm.readcyclecounter``) spent in budget maintenance and in the whole loop give
the merge-time fraction without leaving compiled code.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from ..base import register_op
# Numba's on-disk cache of this module's functions is keyed on THIS file only: after editing merge.py,
# delete gpusvm/_backend/ops/__pycache__/*.nb[ic] (or touch this file), or the loop keeps the old merge.
from .merge import (DEFAULT_N_GSS, GSS_AJ, GSS_BATCH, GSS_DEG, GSS_G, argmin_abs, exp_neg_vec, golden_merge,
                    golden_merge_batch, gss_workspace, merge_search_nb, smallest_k,
                    smallest_k_one_heavy, sqdist)

MERGE_CODES = {"cascade": 0, "gradient": 1, "greedy": 2, "cascade-light": 3}
GREEDY_SHORTLIST = 8  # merge="greedy": shortlisted partners per merged partner (see the module docstring)
# merge="cascade-light": at most one partner with |alpha| > HEAVY_RATIO |alpha_first| (smallest_k_one_heavy);
# kernels/bsgd.cu holds the same value (BSGD_HEAVY_RATIO)
HEAVY_RATIO = 1.5
GPU_COLUMNS_MIN_FEATURES = 32  # the GPU loop's margin="auto" takes the column form from here on


@intrinsic
def _cycles(typingctx):
    sig = types.uint64()

    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(ir.IntType(64), [])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.readcyclecounter")
        return builder.call(fn, [])

    return sig, codegen


@numba.njit(cache=True)
def _remove_partners(sv, alpha, n_sv, partners, found):
    # partners in decreasing slot order; fill each hole with the current last SV
    ps = np.sort(partners[:found])[::-1]
    d = sv.shape[1]
    for q in range(found):
        p = ps[q]
        last = n_sv - 1
        if p != last:
            for k in range(d):
                sv[p, k] = sv[last, k]
            alpha[p] = alpha[last]
        n_sv -= 1
    return n_sv


@numba.njit(cache=True)
def _merged_degradation(sv, alpha, first, partners, found, z, az, gamma):
    """||sum_p a_p phi(x_p) - a_z phi(z)||^2 over the merged points p (first and partners[:found]):
    the exact weight degradation of one maintenance step (diagnostics only: O(M^2 d))."""
    ww = 0.0
    g = 0.0
    for q in range(found + 1):
        p = first if q == 0 else partners[q - 1]
        g += alpha[p] * math.exp(-gamma * sqdist(sv[p], z))
        for r in range(found + 1):
            o = first if r == 0 else partners[r - 1]
            ww += alpha[p] * alpha[o] * math.exp(-gamma * sqdist(sv[p], sv[o]))
    v = ww - 2.0 * az * g + az * az
    return v if v > 0.0 else 0.0


@numba.njit(cache=True)
def _maintain(sv, alpha, n_sv, gamma, n_merge, merge_code, n_gss, n_gd, deg, hs, partners, z, zprev, w, track,
              ws, iws):
    """One budget maintenance step; returns the new number of SVs, (when ``track``) the exact weight
    degradation of the step (else 0), the first candidate's slot and the number of partners merged
    (the slots that changed are ``first`` and ``partners[:found]``, those below the new count)."""
    d = sv.shape[1]
    first = argmin_abs(alpha, n_sv)
    merge_search_nb(sv, alpha, n_sv, first, gamma, n_gss, deg, hs, ws, iws)
    # the M - 1 best partners; greedy: a shortlist of the GREEDY_SHORTLIST * (M - 1) best (as the kernel)
    n_pick = min(n_sv - 1, GREEDY_SHORTLIST * (n_merge - 1)) if merge_code == 2 else n_merge - 1
    cand = np.empty(max(1, n_pick), dtype=np.int64) if merge_code == 2 else partners
    if merge_code == 3:  # cascade-light: at most one heavy partner (see the module docstring)
        found = smallest_k_one_heavy(deg, n_sv, n_pick, cand, alpha, HEAVY_RATIO * abs(alpha[first]))
    else:
        found = smallest_k(deg, n_sv, n_pick, cand)
    if found == 0:  # no same-sign SV: remove the first candidate
        dg = alpha[first] * alpha[first] if track else 0.0
        last = n_sv - 1
        if first != last:
            for k in range(d):
                sv[first, k] = sv[last, k]
            alpha[first] = alpha[last]
        return n_sv - 1, dg, first, 0
    for k in range(d):
        z[k] = sv[first, k]
    az = alpha[first]
    if merge_code == 2:  # greedy cascade: each next partner re-chosen against the running z
        # each merge takes the shortlisted SV (cand[:found], from the one search) whose merge with the
        # running z degrades least
        n_cand = found
        used = np.zeros(n_cand, dtype=np.bool_)
        found = 0
        B = GSS_BATCH
        for q in range(n_merge - 1):
            best = -1
            best_deg = np.inf
            best_gd2 = 0.0
            c = 0
            while c < n_cand:  # the unused shortlisted SVs, GSS_BATCH golden-section searches at a time
                nb = 0
                while c < n_cand and nb < B:
                    if not used[c]:
                        iws[4 * B + nb] = c
                        ws[GSS_G * B + nb] = gamma * sqdist(z, sv[cand[c]])
                        ws[GSS_AJ * B + nb] = alpha[cand[c]]
                        nb += 1
                    c += 1
                if nb > 0:
                    golden_merge_batch(nb, az, ws, iws, n_gss)
                    for k in range(nb):
                        if ws[GSS_DEG * B + k] < best_deg:  # the first least degradation in shortlist order
                            best = iws[4 * B + k]
                            best_deg = ws[GSS_DEG * B + k]
                            best_gd2 = ws[GSS_G * B + k]
            if best < 0:
                break
            used[best] = True
            p = cand[best]
            # the chosen merge by the scalar search (the same h as the batch's; a_z is not among its outputs)
            h, az, _ = golden_merge(az, alpha[p], best_gd2, n_gss)
            for k in range(d):
                z[k] = h * z[k] + (1.0 - h) * sv[p, k]
            partners[found] = p
            found += 1
    elif merge_code == 0 or merge_code == 3:  # cascade (3: its partners by smallest_k_one_heavy)
        for q in range(found):
            p = partners[q]
            d2 = sqdist(z, sv[p])
            h, az_new, dg = golden_merge(az, alpha[p], gamma * d2, n_gss)
            for k in range(d):
                z[k] = h * z[k] + (1.0 - h) * sv[p, k]
            az = az_new
    else:  # gradient: the M points are first and partners[:found]
        tot = az
        for k in range(d):
            z[k] = az * z[k]
        for q in range(found):
            p = partners[q]
            tot += alpha[p]
            for k in range(d):
                z[k] += alpha[p] * sv[p, k]
        for k in range(d):
            z[k] /= tot
        for it in range(n_gd + 1):
            # weights a_i k(x_i, z) of the M points at the current z
            g = 0.0
            for q in range(found + 1):
                p = first if q == 0 else partners[q - 1]
                d2 = sqdist(z, sv[p])
                w[q] = alpha[p] * np.exp(-gamma * d2)
                g += w[q]
            norm = g
            if g == 0.0:
                # every a_i k(x_i, z) underflowed (a Gaussian narrow against the points' spacing: z starts at
                # their mean): the step z <- sum w_i x_i / sum w_i is the same with the weights taken relative
                # to the largest exponent, which does not underflow, instead of 0 / 0 (ZeroDivisionError
                # here, NaN SVs in the kernel). (An exact midpoint of equal coefficients stays a saddle of g.)
                emax = -np.inf
                for q in range(found + 1):
                    p = first if q == 0 else partners[q - 1]
                    w[q] = -gamma * sqdist(z, sv[p])
                    emax = max(emax, w[q])
                norm = 0.0
                for q in range(found + 1):
                    p = first if q == 0 else partners[q - 1]
                    w[q] = alpha[p] * np.exp(w[q] - emax)
                    norm += w[q]
                g = norm * np.exp(emax)
            if it == n_gd:
                break
            for k in range(d):
                zprev[k] = 0.0
            for q in range(found + 1):
                p = first if q == 0 else partners[q - 1]
                for k in range(d):
                    zprev[k] += w[q] * sv[p, k]
            for k in range(d):
                z[k] = zprev[k] / norm
        az = g
    dg = _merged_degradation(sv, alpha, first, partners, found, z, az, gamma) if track else 0.0
    for k in range(d):
        sv[first, k] = z[k]
    alpha[first] = az
    return _remove_partners(sv, alpha, n_sv, partners, found), dg, first, found


@numba.njit(cache=True)
def _set_column(svT, svsq, sv, j):
    """Copy row ``j`` of ``sv`` into column ``j`` of the transposed copy and refresh its squared norm."""
    q = 0.0
    for k in range(sv.shape[1]):
        v = sv[j, k]
        svT[k, j] = v
        q += v * v
    svsq[j] = q


@numba.njit(cache=True, fastmath={"reassoc", "contract"})
def _rbf_margin_from_dots(svsq, alpha, n_sv, xsq, gamma, dot, bits):
    """The column margins' end: f = sum_j alpha_j exp(-gamma max(||sv_j||^2 + ||x||^2 - 2 dot_j, 0)) from the
    dot products ``dot`` (overwritten), the exponentials vectorized (:func:`exp_neg_vec`)."""
    for j in range(n_sv):
        d2 = svsq[j] + xsq - 2.0 * dot[j]
        if d2 < 0.0:
            d2 = 0.0
        dot[j] = -gamma * d2
    exp_neg_vec(dot, n_sv, bits)
    f = 0.0
    for j in range(n_sv):
        f += alpha[j] * dot[j]
    return f


@numba.njit(cache=True, fastmath={"reassoc", "contract"})
def _margin_columns(svT, svsq, alpha, n_sv, xsq, idx, val, gamma, dot, bits):
    """f = sum_j alpha_j exp(-gamma ||sv_j - x||^2) with ||sv_j - x||^2 = ||sv_j||^2 + ||x||^2 - 2 <sv_j, x>,
    the dot products accumulated over the nonzeros (idx, val) of x along contiguous columns of the
    transposed SV matrix (vectorized over the SVs; a sparse x costs nnz(x) instead of d passes), the
    exponentials vectorized too (:func:`exp_neg_vec`)."""
    for j in range(n_sv):
        dot[j] = 0.0
    for q in range(idx.shape[0]):
        col = svT[idx[q]]
        v = val[q]
        for j in range(n_sv):
            dot[j] += col[j] * v
    return _rbf_margin_from_dots(svsq, alpha, n_sv, xsq, gamma, dot, bits)


@numba.njit(cache=True, fastmath={"reassoc", "contract"})
def _margin_dense(svT, svsq, alpha, n_sv, xsq, x, gamma, dot, bits):
    """:func:`_margin_columns` reading the nonzeros of a dense row ``x`` in place: the same products
    accumulated in the same order (zeros skipped), so the same f to the bit, without a CSR copy of X."""
    for j in range(n_sv):
        dot[j] = 0.0
    for k in range(x.shape[0]):
        v = x[k]
        if v != 0.0:
            col = svT[k]
            for j in range(n_sv):
                dot[j] += col[j] * v
    return _rbf_margin_from_dots(svsq, alpha, n_sv, xsq, gamma, dot, bits)


@numba.njit(cache=True, nogil=True)  # nogil: BudgetSVC(n_jobs=...) trains one-vs-rest problems in threads
def bsgd_train_nb(X, y, order, t0, lam, gamma, budget, n_merge, merge_code, n_gss, n_gd, sv, alpha, n_sv,
                  stats, track, use_cols, xptr, xidx, xval, xsq):
    """Run steps t0+1 .. t0+len(order); updates sv/alpha in place, returns n_sv.

    stats (float64, 5): [+]= margin violations, merges, cycles in maintenance, cycles in total, and (only
    when ``track``) the weight degradation of the maintenance steps, each step's in units of
    1 / (lambda t)^2 (the squared coefficient a new SV gets at that step t).

    ``use_cols``: compute the margins from a transposed copy of the SVs, their squared norms and the
    nonzeros of X given in CSR form (xptr, xidx, xval) with squared row norms xsq (see
    :func:`_margin_columns`), and copy new SVs from those nonzeros (X itself is then not read: only
    its number of columns); else row by row from coordinate differences of dense X. Only the rounding
    of f differs between the two. ``use_cols`` with an empty ``xptr``: the nonzeros are read from the
    rows of dense X in place (:func:`_margin_dense`, the same f and SVs to the bit as from its CSR form).
    """
    d = X.shape[1]
    cap = budget + 1
    deg = np.empty(cap)
    hs = np.empty(cap)
    partners = np.empty(max(n_merge - 1, 1), dtype=np.int64)
    z = np.empty(d)
    zprev = np.empty(d)
    w = np.empty(n_merge)
    ws, iws = gss_workspace()
    if use_cols:
        svT = np.empty((d, cap))
        svsq = np.empty(cap)
        dot = np.empty(cap)
        bits = np.empty(cap, dtype=np.int64)
        for j in range(n_sv):
            _set_column(svT, svsq, sv, j)
    else:
        svT = np.empty((1, 1))
        svsq = np.empty(1)
        dot = np.empty(1)
        bits = np.empty(1, dtype=np.int64)
    dense_rows = use_cols and xptr.shape[0] == 0
    c_start = _cycles()
    c_merge = 0
    viol = 0
    merges = 0
    wd = 0.0
    for s in range(order.shape[0]):
        i = order[s]
        t = t0 + s + 1
        if dense_rows:
            f = _margin_dense(svT, svsq, alpha, n_sv, xsq[i], X[i], gamma, dot, bits)
        elif use_cols:
            a = xptr[i]
            b = xptr[i + 1]
            f = _margin_columns(svT, svsq, alpha, n_sv, xsq[i], xidx[a:b], xval[a:b], gamma, dot, bits)
        else:
            f = 0.0
            xi = X[i]
            for j in range(n_sv):
                f += alpha[j] * np.exp(-gamma * sqdist(sv[j], xi))
        scale = 1.0 - 1.0 / t
        for j in range(n_sv):
            alpha[j] *= scale
        if y[i] * f < abs(y[i]):  # y_i f < 1 for |y_i| = w_i > 0; never for a zero weight
            viol += 1
            if dense_rows:  # the nonzeros of the row (a -0.0 is left out, as from the CSR form)
                for k in range(d):
                    v = X[i, k]
                    sv[n_sv, k] = v if v != 0.0 else 0.0
            elif use_cols:  # from the nonzeros (X may be a (0, d) placeholder for sparse input)
                for k in range(d):
                    sv[n_sv, k] = 0.0
                for p in range(xptr[i], xptr[i + 1]):
                    sv[n_sv, xidx[p]] = xval[p]
            else:
                for k in range(d):
                    sv[n_sv, k] = X[i, k]
            alpha[n_sv] = y[i] / (lam * t)
            if use_cols:
                _set_column(svT, svsq, sv, n_sv)
            n_sv += 1
            if n_sv > budget:
                c0 = _cycles()
                n_sv, dg, first, found = _maintain(sv, alpha, n_sv, gamma, n_merge, merge_code, n_gss, n_gd,
                                                   deg, hs, partners, z, zprev, w, track, ws, iws)
                if use_cols:  # the slots that changed: the merged point's and the refilled holes
                    if first < n_sv:
                        _set_column(svT, svsq, sv, first)
                    for q in range(found):
                        if partners[q] < n_sv:
                            _set_column(svT, svsq, sv, partners[q])
                c_merge += _cycles() - c0
                wd += dg * (lam * t) * (lam * t)
                merges += 1
    stats[0] += viol
    stats[1] += merges
    stats[2] += c_merge
    stats[3] += _cycles() - c_start
    stats[4] += wd
    return n_sv


@numba.njit(cache=True)
def _csr_of_dense(X):
    """The nonzeros of dense X in CSR form (ptr, idx, val) and its squared row norms, in one pass."""
    n, d = X.shape
    ptr = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        c = 0
        for k in range(d):
            if X[i, k] != 0.0:
                c += 1
        ptr[i + 1] = ptr[i] + c
    idx = np.empty(ptr[n], dtype=np.int64)
    val = np.empty(ptr[n])
    xsq = np.empty(n)
    for i in range(n):
        q = ptr[i]
        acc = 0.0
        for k in range(d):
            v = X[i, k]
            if v != 0.0:
                idx[q] = k
                val[q] = v
                acc += v * v
                q += 1
        xsq[i] = acc
    return ptr, idx, val, xsq


@numba.njit(cache=True)
def _sqnorms_of_dense(X):
    """Squared row norms of dense X summed over the nonzeros in column order: :func:`_csr_of_dense`'s
    ``xsq`` to the bit."""
    n, d = X.shape
    xsq = np.empty(n)
    for i in range(n):
        acc = 0.0
        for k in range(d):
            v = X[i, k]
            if v != 0.0:
                acc += v * v
        xsq[i] = acc
    return xsq


@register_op("bsgd_columns", "cpu")
def bsgd_columns_cpu(be, X, X_sparse=None):
    """The nonzeros of X in CSR form and its squared row norms, ``(ptr, idx, val, xsq)``: what the CPU
    loop's column margins read (``bsgd_train(..., columns=...)``). Built once per fit instead of once per
    epoch and class; from ``X_sparse`` (the same data as a SciPy sparse matrix) in O(nnz) when given.
    Both give the same arrays to the bit (nonzeros in column order, explicit zeros left out, norms summed
    in that order). ``X`` may itself be the SciPy sparse matrix.

    Dense X alone gives only ``xsq``, with empty ``ptr``, ``idx`` and ``val``: the loop then reads the
    nonzeros of X's rows in place (the same margins and SVs to the bit). Why: the CSR form of dense data
    holds an int64 index and a float64 value per entry, twice X's size (a 30 MB X cost 61 MB more)."""
    import scipy.sparse as sp

    if X_sparse is None and sp.issparse(X):
        X_sparse = X
    if X_sparse is None:
        e = np.zeros(0, dtype=np.int64)
        return e, e, np.zeros(0), _sqnorms_of_dense(np.ascontiguousarray(X, dtype=np.float64))

    A = sp.csr_matrix(X_sparse, dtype=np.float64, copy=True)
    A.sum_duplicates()
    A.sort_indices()
    A.eliminate_zeros()
    ptr, idx, val = A.indptr.astype(np.int64), A.indices.astype(np.int64), np.ascontiguousarray(A.data)
    return ptr, idx, val, be.dcd_row_sqnorms(A)  # one compiled pass, each row summed in stored order


@register_op("bsgd_columns", "gpu")
def bsgd_columns_gpu(be, X, X_sparse=None):
    """GPU twin of :func:`bsgd_columns_cpu`: ``(ptr, idx, val, xsq)`` of X on the device (nonzeros of each
    row in column order, int64 offsets and columns, float64 values, squared row norms). Built from the
    dense device copy the GPU loop reads anyway (``X_sparse`` is not needed there). None below
    :data:`GPU_COLUMNS_MIN_FEATURES` features, where the GPU loop's default margins read the rows."""
    if X.shape[1] < GPU_COLUMNS_MIN_FEATURES:
        return None
    with be.device:
        return _columns_of_dense_gpu(X.toarray() if be.issparse(X) else X)


def _columns_of_dense_gpu(X):
    """(ptr, idx, val, xsq) of dense device X (on the current device)."""
    import cupy as cp

    X = cp.ascontiguousarray(X, dtype=cp.float64)
    mask = X != 0
    ptr = cp.zeros(X.shape[0] + 1, dtype=cp.int64)
    ptr[1:] = cp.cumsum(mask.sum(axis=1, dtype=cp.int64))
    idx = cp.ascontiguousarray(cp.nonzero(mask)[1].astype(cp.int64))  # row-major: columns ascending
    val = cp.ascontiguousarray(X[mask])
    xsq = cp.ascontiguousarray((X * X).sum(axis=1))
    return ptr, idx, val, xsq


def _columns(X, margin, columns):
    """:func:`bsgd_columns_cpu` of dense X (its squared row norms), or None for the row-wise margins."""
    if margin not in ("auto", "rows", "columns"):
        raise ValueError(f"margin must be 'auto', 'rows' or 'columns'; got {margin!r}")
    if margin == "rows" or (X.size == 0 and columns is None):
        return None
    return bsgd_columns_cpu(None, X) if columns is None else columns


def _prep(be, X, y, order, budget, sv, alpha):
    xp = be.xp
    X = X if be.issparse(X) else xp.ascontiguousarray(X, dtype=xp.float64)
    y = xp.ascontiguousarray(y, dtype=xp.float64)
    order = xp.ascontiguousarray(order, dtype=xp.int64)
    d = X.shape[1]
    if sv is None:
        sv = xp.zeros((budget + 1, d), dtype=xp.float64)
        alpha = xp.zeros(budget + 1, dtype=xp.float64)
    return X, y, order, sv, alpha


@register_op("bsgd_train", "cpu")
def bsgd_train_cpu(be, X, y, order, *, t0, lam, gamma, budget, n_merge, merge, n_gss=DEFAULT_N_GSS, n_gd=10,
                   sv=None, alpha=None, n_sv=0, track_degradation=False, margin="auto", columns=None):
    """Run BSGD steps ``t0+1 .. t0+len(order)`` on one binary problem (see the module doc).

    Parameters
    ----------
    X : {ndarray, CSR matrix} of shape (n_samples, n_features)
        CSR input is read through its nonzeros only (``columns``), never densified, unless
        ``margin="rows"``: the support vectors are the only dense rows (``budget + 1`` of them).
    y : ndarray of shape (n_samples,)
        Signed sample weights ``y_i w_i`` (label y_i in {-1, +1}, weight w_i >= 0): a step on sample i
        is a margin violation when y_i f(x_i) < 1 and w_i > 0, and then adds x_i with
        alpha = y_i w_i / (lam t), the Pegasos step of the hinge term w_i max(0, 1 - y_i f(x_i)). Plain
        labels (all w_i = 1) are the unweighted problem.
    order : ndarray of shape (n_steps,), int
        Sample index of each step.
    t0 : int
        Steps done before (the step size of step t is 1 / (lam t)).
    lam, gamma : float
    budget, n_merge : int
    merge : {"cascade", "gradient"}
    sv, alpha, n_sv : state to continue from (``sv`` of shape (budget + 1, n_features)); fresh if None.
    track_degradation : bool
        Also compute the exact weight degradation of every maintenance step (diagnostics; costs
        O(M^2 d) per step, so off by default).
    margin : {"auto", "rows", "columns"}
        How the margins f(x_i) over the SVs are computed (the bulk of the loop's time outside budget
        maintenance): "rows" from coordinate differences, one SV row at a time; "columns" from the
        nonzeros of x_i against a transposed copy of the SVs and their squared norms (cost nnz(x_i)
        instead of d vectorized passes over the SVs, and vectorized exponentials). "auto" = "columns":
        measured faster on sparse and dense data alike (benchmarks/results/budget_table_cpu_notes.md).
        Both give the same f up to rounding; "rows" is the plain reference.
    columns : tuple, optional
        ``bsgd_columns(X)``, computed once by the caller for the column margins (else built here).

    Returns
    -------
    sv : ndarray of shape (budget + 1, n_features)
    alpha : ndarray of shape (budget + 1,)
    n_sv : int
        Rows ``:n_sv`` of ``sv``/``alpha`` hold the model.
    stats : dict
        violations, merges, merge_cycles, total_cycles, degradation (NaN unless ``track_degradation``).
    """
    X, y, order, sv, alpha = _prep(be, X, y, order, budget, sv, alpha)
    stats = np.zeros(5)
    if be.issparse(X):
        if margin == "rows":  # the row-wise reference reads dense rows
            X = np.ascontiguousarray(X.toarray(), dtype=np.float64)
        else:  # the loop reads only the nonzeros: no dense copy of X (n x d) is made
            if columns is None:
                columns = bsgd_columns_cpu(be, X)
            X = np.empty((0, X.shape[1]))
    cols = _columns(X, margin, columns)
    if cols is None:
        e_i, e_f = np.zeros(1, dtype=np.int64), np.zeros(1)
        cols = (e_i, e_i, e_f, e_f)
        use_cols = False
    else:
        use_cols = True
    n_sv = bsgd_train_nb(X, y, order, int(t0), float(lam), float(gamma), int(budget), int(n_merge),
                         MERGE_CODES[merge], int(n_gss), int(n_gd), sv, alpha, int(n_sv), stats,
                         bool(track_degradation), use_cols, *cols)
    return sv, alpha, int(n_sv), {"violations": int(stats[0]), "merges": int(stats[1]),
                                  "merge_cycles": float(stats[2]), "total_cycles": float(stats[3]),
                                  "degradation": float(stats[4]) if track_degradation else float("nan")}


def check_gpu_shared_memory(be, d, n_merge):
    """The GPU loop's kernel and the (dynamic, static) shared memory bytes its block needs for ``d``
    features; ``ValueError`` when they exceed the device's per-block limit (with the opt-in).

    Dynamic shared memory holds x and z (d doubles each), w (n_merge doubles) and partners (n_merge
    ints); the kernel's static reduction arrays come on top (both count against the per-block limit, and
    without the opt-in the dynamic part may use only 48 KiB minus the static part). BudgetSVC calls this
    before it densifies a sparse X on the device, so that wide data get this error, not an
    out-of-memory error from a dense copy the loop could never use."""
    import cupy as cp

    from ..cuda_source import get_kernel

    d, n_merge = int(d), int(n_merge)
    shmem = (2 * d + n_merge) * 8 + n_merge * 4
    fn = get_kernel("bsgd.cu", "bsgd_train<double>", be.device_id)
    static = int(fn.shared_size_bytes)
    limit = cp.cuda.Device(be.device_id).attributes.get("MaxSharedMemoryPerBlockOptin", 48 * 1024)
    if shmem + static > limit:
        raise ValueError(
            f"BudgetSVC on the GPU keeps the sample and the merged point in shared memory: "
            f"{d} features need {shmem + static} bytes, more than this device's {limit} bytes per block. "
            "Use device='cpu' for data with this many features.")
    return fn, shmem, static


@register_op("bsgd_train", "gpu")
def bsgd_train_gpu(be, X, y, order, *, t0, lam, gamma, budget, n_merge, merge, n_gss=DEFAULT_N_GSS, n_gd=10,
                   sv=None, alpha=None, n_sv=0, track_degradation=False, margin="auto", columns=None):
    """GPU twin of :func:`bsgd_train_cpu`: one persistent thread block runs every step of ``order``
    (``bsgd_train<double>`` in kernels/bsgd.cu), so there is no host round trip per sample; the host
    only reads the counters once at the end. ``track_degradation`` is not implemented on the GPU (the
    diagnostic comes back NaN).

    Margins: "rows" reads the SV rows (a thread per SV below 32 features, else a warp per SV);
    "columns" is the CPU twin's form, one thread per SV summing over the nonzeros of x_i down the
    columns of a transposed SV copy (coalesced across the threads) plus the squared norms; "auto" takes
    "columns" from :data:`GPU_COLUMNS_MIN_FEATURES` features on. Why: the first H100 run (at 747d92b,
    rows only) spent about 70 us per step on a9a (123 features, 14 nonzeros, B=569) against 2.6 us on
    ijcnn1 (22 features, B=248): a warp per SV walks its SVs one after the other, each waiting on global
    memory, while the column form needs nnz(x_i) coalesced loads per SV. (The column form's GPU speed
    is not measured yet.)"""
    import cupy as cp

    if margin not in ("auto", "rows", "columns"):
        raise ValueError(f"margin must be 'auto', 'rows' or 'columns'; got {margin!r}")
    with be.device:
        X, y, order, sv, alpha = _prep(be, X, y, order, budget, sv, alpha)
        if be.issparse(X):
            X = X.toarray()  # the block copies dense rows into shared memory
        # bsgd_train<double> reads X and writes sv / alpha through raw double pointers: _prep casts only
        # dense X, so a float32 CSR X (densified above) or a caller's float32 or strided sv / alpha would
        # be read as garbage. No copy when they already are contiguous float64 (the usual case).
        X = cp.ascontiguousarray(X, dtype=cp.float64)
        d = X.shape[1]
        cap = budget + 1
        if sv.ndim != 2 or int(sv.shape[1]) != d or int(sv.shape[0]) < cap or int(alpha.shape[0]) < cap:
            raise ValueError(f"bsgd_train: sv of shape ({cap}, {d}) and alpha of {cap} entries expected for "
                             f"budget={budget}, got {tuple(sv.shape)} and {tuple(alpha.shape)}")
        sv = cp.ascontiguousarray(sv, dtype=cp.float64)
        alpha = cp.ascontiguousarray(alpha, dtype=cp.float64)
        use_cols = margin == "columns" or (margin == "auto" and d >= GPU_COLUMNS_MIN_FEATURES)
        if use_cols:
            if columns is None:
                columns = _columns_of_dense_gpu(X)
            ptr, idx, val, xsq = (cp.ascontiguousarray(a, dtype=t) for a, t in
                                  zip(columns, (cp.int64, cp.int64, cp.float64, cp.float64)))
            svT = cp.zeros((d, cap), dtype=cp.float64)  # column j = SV j, kept in step with sv
            svT[:, :n_sv] = sv[:n_sv].T
            svsq = cp.zeros(cap, dtype=cp.float64)
            svsq[:n_sv] = (sv[:n_sv] * sv[:n_sv]).sum(axis=1)
        else:
            ptr = idx = cp.zeros(1, dtype=cp.int64)
            val = xsq = svT = svsq = cp.zeros(1, dtype=cp.float64)
        work_deg = cp.empty(cap, dtype=cp.float64)
        work_h = cp.empty(cap, dtype=cp.float64)
        state = cp.asarray([int(n_sv)], dtype=cp.int32)
        stats = cp.zeros(4, dtype=cp.uint64)
        threads = 256
        fn, shmem, static = check_gpu_shared_memory(be, d, n_merge)
        if shmem + static > 48 * 1024:
            fn.max_dynamic_shared_size_bytes = shmem
        fn((1,), (threads,), (
            X, y, order, cp.int64(order.shape[0]), cp.int64(t0), cp.int32(d),
            cp.float64(lam), cp.float64(gamma), cp.int32(budget), cp.int32(n_merge),
            cp.int32(MERGE_CODES[merge]), cp.int32(n_gss), cp.int32(n_gd),
            sv, alpha, state, work_deg, work_h, stats,
            ptr, idx, val, xsq, svT, svsq, cp.int32(use_cols),
        ), shared_mem=shmem)
        st = cp.asnumpy(stats)  # the only device-to-host copy of the run (it also synchronizes)
        n_sv_out = int(cp.asnumpy(state)[0])
    return sv, alpha, n_sv_out, {"violations": int(st[0]), "merges": int(st[1]),
                                 "merge_cycles": float(st[2]), "total_cycles": float(st[3]),
                                 "degradation": float("nan")}

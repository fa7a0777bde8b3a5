"""Fused op ``dcd_sweeps``: whole sweeps of dual coordinate descent for the linear SVM.

One call runs up to ``n_sweeps`` sweeps (outer iterations) of either

* the LIBLINEAR baseline (Hsieh et al. 2008; Algorithm 2 of Glasmachers & Dogan 2013): a random
  permutation of the active variables per sweep, shrinking against the previous sweep's ``v_max`` /
  ``v_min`` of the projected gradient, and a final pass over all variables before stopping; or
* AVSF (Glasmachers & Dogan 2013, Algorithms 3-5): a schedule of ``n`` coordinate visits per sweep
  drawn from learned preferences, the preference update after every step, and the ``canstop`` logic.

The problem solved is the dual of the L2-regularized hinge (or squared hinge) SVM with the bias as an
extra feature of constant value ``bias`` (regularized, as LIBLINEAR)::

    min_alpha 1/2 alpha^T (Q + diag(D)) alpha - sum(alpha),  0 <= alpha_i <= U_i,
    Q_ij = y_i y_j (<x_i, x_j> + bias^2)

with ``w = sum_i alpha_i y_i [x_i, bias]`` kept up to date (``w`` has ``d + 1`` entries, the last one
being the bias weight). All state lives in arrays the caller owns, so a solve can be split into calls
of a few sweeps each (the Python level sees sweeps only, and reads the state once per call):

``istate`` (int64): [active_size, sweeps done, coordinate visits, converged flag, canstop flag]
``fstate`` (float64): [v_max of the previous sweep, v_min of the previous sweep, AVSF reference gain,
AVSF preference sum, v_max - v_min of the last sweep]
``rng`` (uint64, 1): state of a SplitMix64 generator shared by the CPU twin and the CUDA kernel, so
both visit coordinates in the same order.

A "coordinate visit" is one evaluation of ``<w, x_i>`` (the cost unit of these methods); it is counted
for shrunk variables too, because their gradient must be computed before they are removed.

CPU: a Numba loop over dense rows or CSR rows (``cpu``). GPU: ``dcd_sweeps`` in ``kernels/dcd.cu``
runs the same sweeps in one thread block (see :mod:`gpusvm._solvers.dcd` for why).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..base import register_op

# AVSF constants (Glasmachers & Dogan 2013, Section 4; the same values as in the authors' Shark code).
AVSF_CHANGE_RATE = 0.2  # c = 1/5: learning rate of the log-preference
AVSF_PREF_MIN = 1.0 / 20.0
AVSF_PREF_MAX = 20.0
# Projected gradients below this are not acted on (LIBLINEAR's threshold).
PG_EPS = 1e-12

IS_ACTIVE, IS_SWEEPS, IS_UPDATES, IS_CONVERGED, IS_CANSTOP = range(5)
FS_PGMAX, FS_PGMIN, FS_GAIN, FS_PREFSUM, FS_GAP = range(5)
ISTATE_LEN, FSTATE_LEN = 5, 5

U64 = np.uint64
INV53 = 1.0 / 9007199254740992.0


@numba.njit(inline="always")
def _next(rng):
    # SplitMix64 (Steele, Lea & Flood 2014); identical in kernels/dcd.cu.
    z = rng[0] + U64(0x9E3779B97F4A7C15)
    rng[0] = z
    z = (z ^ (z >> U64(30))) * U64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> U64(27))) * U64(0x94D049BB133111EB)
    return z ^ (z >> U64(31))


@numba.njit(inline="always")
def _randint(rng, k):
    # uniform integer in [0, k) for 0 < k < 2**31 (multiply-shift on the top 31 bits)
    r = _next(rng) >> U64(33)
    return np.int64((r * U64(k)) >> U64(31))


@numba.njit(inline="always")
def _uniform(rng):
    return np.float64(_next(rng) >> U64(11)) * INV53


@numba.njit(inline="always")
def _row_dot(sparse, Xd, indptr, indices, data, i, w):
    s = 0.0
    if sparse:
        for p in range(indptr[i], indptr[i + 1]):
            s += data[p] * w[indices[p]]
    else:
        for j in range(Xd.shape[1]):
            s += Xd[i, j] * w[j]
    return s


@numba.njit(inline="always")
def _row_axpy(sparse, Xd, indptr, indices, data, i, coef, w):
    if sparse:
        for p in range(indptr[i], indptr[i + 1]):
            w[indices[p]] += coef * data[p]
    else:
        for j in range(Xd.shape[1]):
            w[j] += coef * Xd[i, j]


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _sweeps(sparse, Xd, indptr, indices, data, y, qd, upper, diag, bias, alpha, w, order, pref,
           fstate, istate, rng, n_sweeps, tol, avsf, shrinking):
    n = y.shape[0]
    dw = w.shape[0] - 1  # index of the bias weight
    inv_n = 1.0 / n
    for _ in range(n_sweeps):
        if istate[3] != 0:
            break
        if avsf:
            # Algorithm 4: n visits, variable i getting about n * p_i / sum(p) of them by sequential
            # randomized rounding, then a random order.
            psum = fstate[3]
            prefsum = 0.0
            pos = 0
            for i in range(n):
                p = pref[i]
                rem = n - pos
                if i == n - 1:
                    k = rem
                else:
                    num = float(rem) if psum < 1e-6 else min(float(rem), rem * p / psum)
                    k = np.int64(math.floor(num))
                    if _uniform(rng) < num - k:
                        k += 1
                    if k > rem:
                        k = rem
                for j in range(k):
                    order[pos + j] = i
                pos += k
                psum -= p
                prefsum += p
            fstate[3] = prefsum
            active = n
        else:
            active = istate[0]
        for s in range(active - 1):  # Fisher-Yates (LIBLINEAR's loop)
            j = s + _randint(rng, active - s)
            t = order[s]
            order[s] = order[j]
            order[j] = t
        pgmax_old = fstate[0]
        pgmin_old = fstate[1]
        pgmax_new = -np.inf
        pgmin_new = np.inf
        first = istate[1] == 0
        updates = istate[2]
        ref = fstate[2]
        prefsum = fstate[3]
        s = 0
        while s < active:
            i = order[s]
            yi = y[i]
            g = yi * (_row_dot(sparse, Xd, indptr, indices, data, i, w) + bias * w[dw]) - 1.0 \
                + diag[i] * alpha[i]
            updates += 1
            a = alpha[i]
            ub = upper[i]
            pg = 0.0
            if a == 0.0:
                if shrinking and g > pgmax_old:
                    active -= 1
                    order[s] = order[active]
                    order[active] = i
                    continue
                elif g < 0.0:
                    pg = g
            elif a >= ub:
                if shrinking and g < pgmin_old:
                    active -= 1
                    order[s] = order[active]
                    order[active] = i
                    continue
                elif g > 0.0:
                    pg = g
            else:
                pg = g
            if pg > pgmax_new:
                pgmax_new = pg
            if pg < pgmin_new:
                pgmin_new = pg
            gain = 0.0
            if abs(pg) > PG_EPS:
                q = qd[i]
                if q > 0.0:
                    na = min(max(a - g / q, 0.0), ub)
                else:  # empty row without bias (hinge only): the dual is linear in alpha_i
                    na = ub if g < 0.0 else 0.0
                delta = na - a
                if delta != 0.0:
                    alpha[i] = na
                    coef = delta * yi
                    _row_axpy(sparse, Xd, indptr, indices, data, i, coef, w)
                    w[dw] += coef * bias
                    gain = -(g * delta + 0.5 * q * delta * delta)
            if avsf:
                # Algorithm 5: move log p_i by c * (gain / reference - 1); the reference gain is the
                # mean gain of the first sweep, then an exponentially fading average (rate 1/n).
                if first:
                    ref += gain * inv_n
                else:
                    change = AVSF_CHANGE_RATE * (gain / ref - 1.0) if ref > 0.0 else 0.0
                    p_old = pref[i]
                    p_new = min(AVSF_PREF_MAX, max(AVSF_PREF_MIN, p_old * math.exp(change)))
                    pref[i] = p_new
                    prefsum += p_new - p_old
                    ref = (1.0 - inv_n) * ref + inv_n * gain
            s += 1
        istate[1] += 1
        istate[2] = updates
        fstate[2] = ref
        fstate[3] = prefsum
        gap = pgmax_new - pgmin_new
        fstate[4] = gap
        if avsf:
            if gap <= tol:
                if istate[4] != 0:
                    istate[3] = 1
                else:  # a uniform sweep decides whether we may stop
                    for i in range(n):
                        pref[i] = 1.0
                    fstate[3] = float(n)
                    istate[4] = 1
            else:
                istate[4] = 0
        else:
            if gap <= tol:
                if active == n:
                    istate[3] = 1
                else:  # unshrink everything and check again
                    active = n
                    fstate[0] = np.inf
                    fstate[1] = -np.inf
            else:
                fstate[0] = pgmax_new if pgmax_new > 0.0 else np.inf
                fstate[1] = pgmin_new if pgmin_new < 0.0 else -np.inf
            istate[0] = active
    return 0



def _cpu_arrays(be, X):
    """(sparse, Xd, indptr, indices, data) with one dtype set per element type (few Numba compiles)."""
    if be.issparse(X):
        dummy = np.zeros((0, 0), dtype=X.dtype)
        indices = X.indices.astype(np.int32, copy=False) if X.indices.dtype != np.int32 else X.indices
        indptr = X.indptr.astype(np.int64, copy=False)
        return True, dummy, indptr, indices, X.data
    Xd = np.ascontiguousarray(X)
    return False, Xd, np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, Xd.dtype)


@register_op("dcd_sweeps", "cpu")
def dcd_sweeps_cpu(be, X, y, qd, upper, diag, bias, alpha, w, order, pref, fstate, istate, rng,
                   n_sweeps, tol, *, avsf=False, shrinking=True):
    """Run up to ``n_sweeps`` sweeps of DCD (``avsf=False``) or AVSF (``avsf=True``), in place.

    Parameters
    ----------
    X : {ndarray, CSR matrix} of shape (n, d), float32 or float64 (CSR indices sorted)
    y : ndarray of shape (n,), float64 in {-1, +1}
    qd : ndarray of shape (n,), float64: ``||x_i||^2 + bias^2 + D_i`` (the dual Hessian's diagonal)
    upper, diag : ndarray of shape (n,), float64: box bounds ``U_i`` and ``D_i``
        (hinge: ``U_i = C_i, D_i = 0``; squared hinge: ``U_i = inf, D_i = 1 / (2 C_i)``)
    bias : float, value of the extra constant feature (0 for no bias)
    alpha : ndarray of shape (n,), float64, updated in place
    w : ndarray of shape (d + 1,), float64, ``sum alpha_i y_i [x_i, bias]``, updated in place
    order : ndarray of shape (n,), int64: the active set / schedule buffer (a permutation of
        ``arange(n)`` at the start for DCD), updated in place
    pref : ndarray of shape (n,), float64: AVSF preferences (ones at the start; unused by DCD)
    fstate, istate, rng : solver state, see the module docstring
    n_sweeps : int, most sweeps to run in this call (fewer when converged)
    tol : float, stop when ``v_max - v_min <= tol`` over a sweep of all variables
    avsf : bool, AVSF instead of the LIBLINEAR baseline
    shrinking : bool, LIBLINEAR shrinking (baseline only; AVSF never shrinks)
    """
    sparse, Xd, indptr, indices, data = _cpu_arrays(be, X)
    _sweeps(sparse, Xd, indptr, indices, data, y, qd, upper, diag, float(bias), alpha, w, order, pref,
           fstate, istate, rng, int(n_sweeps), float(tol), bool(avsf), bool(shrinking) and not avsf)


def _gpu_threads(be, X):
    """Threads of the single block: one warp for short rows, more for long (dense) rows."""
    n, d = X.shape
    avg = (X.nnz / max(n, 1)) if be.issparse(X) else d
    if avg <= 64:
        return 32
    if avg <= 512:
        return 128
    return 256


@register_op("dcd_sweeps", "gpu")
def dcd_sweeps_gpu(be, X, y, qd, upper, diag, bias, alpha, w, order, pref, fstate, istate, rng,
                   n_sweeps, tol, *, avsf=False, shrinking=True):
    """GPU twin of :func:`dcd_sweeps_cpu`: ``dcd_sweeps<T, SPARSE>`` of ``kernels/dcd.cu`` in one block."""
    import cupy as cp

    from ..cuda_source import ctype, get_kernel

    with be.device:
        sparse = be.issparse(X)
        if sparse:
            data = X.data
            indices = X.indices.astype(cp.int32, copy=False)
            indptr = X.indptr.astype(cp.int64, copy=False)
            Xd = data  # never read
            ldx = 0
        else:
            Xd = cp.ascontiguousarray(X)
            data = Xd
            indices = cp.zeros(1, cp.int32)
            indptr = cp.zeros(1, cp.int64)
            ldx = Xd.shape[1]
        name = f"dcd_sweeps<{ctype(Xd.dtype)}, {'true' if sparse else 'false'}>"
        fn = get_kernel("dcd.cu", name, be.device_id)
        fn((1,), (_gpu_threads(be, X),), (
            Xd, data, indices, indptr, cp.int64(ldx), cp.int64(X.shape[1]),
            y, qd, upper, diag, cp.float64(bias), alpha, w, order, pref, fstate, istate, rng,
            cp.int64(y.shape[0]), cp.int64(n_sweeps), cp.float64(tol),
            cp.int32(1 if avsf else 0), cp.int32(1 if (shrinking and not avsf) else 0),
        ))

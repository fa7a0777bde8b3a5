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

``istate`` (int64): [active_size, sweeps done, coordinate visits, converged flag, canstop flag], and
optionally (CPU twin only, for diagnostics) a 6th entry to which each sweep adds the number of visits
that moved ``alpha_i``
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
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

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
# Software prefetch distance (coordinate visits ahead). The random visiting order defeats the hardware
# prefetcher, and the data-dependent branches of each step (bounds, shrinking) flush the speculative
# loads of the next row: without prefetching, a visit of a short sparse row cost about twice as much in
# a random order as in storage order (a9a, bare step: 63 vs 30 ns per visit, 45 ns with this prefetch;
# distances 1-8 performed alike; the full DCD step: 73 -> 53 ns, CPU time on the shared 2-core machine).
PREFETCH_AHEAD = 2


@intrinsic
def _prefetch(typingctx, arr, idx):
    """``__builtin_prefetch(&arr[idx])`` (read, keep in all cache levels): a hint, never faults."""
    if not isinstance(arr, types.Array) or not isinstance(idx, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        aryty, idxty = signature.args
        ary = context.make_array(aryty)(context, builder, args[0])
        i = context.cast(builder, args[1], idxty, types.intp)
        ptr = builder.bitcast(builder.gep(ary.data, [i]), ir.IntType(8).as_pointer())
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [ptr.type, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        builder.call(fn, [ptr, ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return types.void(arr, idx), codegen


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


def _make_sweeps(SPARSE, AVSF):
    """Compile-time specialization of the sweep loop for (CSR or dense rows) x (DCD or AVSF).

    ``SPARSE`` and ``AVSF`` are closure constants, so Numba compiles four loops each free of the
    others' branches and state (measured: one loop with run-time flags for both cost 10-25% more per
    visit on a9a). The arithmetic and the random stream are the same in all four, and the iterates
    equal to the CUDA kernel's up to the order of floating-point sums (dense rows sum ``<w, x_i>`` in
    four partial sums, CSR rows in one, so dense and CSR input also differ in the last bits).
    """

    @numba.njit(cache=True, nogil=True, error_model="numpy")
    def sweeps(Xd, ldx, indptr, indices, data, y, qd, upper, diag, bias, alpha, w, order, pref,
               fstate, istate, rng, n_sweeps, tol, shrinking):
        n = y.shape[0]
        dw = w.shape[0] - 1  # index of the bias weight
        inv_n = 1.0 / n
        for _ in range(n_sweeps):
            if istate[3] != 0:
                break
            if AVSF:
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
            # the range of the sweep's projected gradients, 0 included (every one is 0 at the optimum):
            # LIBLINEAR's range of the visited values alone is 0 when they all violate alike (two
            # points, e.g. merged copies, both at pg = -2), and the solver stopped at a non-optimal w
            pgmax_new = 0.0
            pgmin_new = 0.0
            first = istate[1] == 0
            updates = istate[2]
            ref = fstate[2]
            prefsum = fstate[3]
            moves = 0
            s = 0
            while s < active:
                # Prefetch the row and alpha of the visit PREFETCH_AHEAD positions ahead, and the row
                # pointer of the visit after that. (Written out here: the same code in an inlined helper
                # function measured slower than no prefetching at all.)
                t = s + PREFETCH_AHEAD
                if t < active:
                    jn = order[t]
                    if SPARSE:
                        pn = indptr[jn]
                        _prefetch(data, pn)
                        _prefetch(indices, pn)
                        if t + PREFETCH_AHEAD < active:
                            _prefetch(indptr, order[t + PREFETCH_AHEAD])
                    else:
                        _prefetch(Xd, jn * ldx)
                    _prefetch(alpha, jn)
                i = order[s]
                yi = y[i]
                a = alpha[i]
                # Row i is read through slices indexed from 0: Numba tests every signed index for
                # wraparound (< 0), and only one the compiler can prove >= 0 (a loop counter from 0)
                # loses the test. Indexing the arrays themselves at base + j or p (of unknown sign)
                # kept a test per element, and made the dense w update below a gather (measured per
                # visit: phishing CSR 72 -> 57 ns, a9a 64 -> 48 ns, ijcnn1 dense 53 -> 43 ns).
                dot = 0.0
                if SPARSE:
                    p0 = indptr[i]
                    m = indptr[i + 1] - p0
                    xv = data[p0:p0 + m]
                    xi = indices[p0:p0 + m]
                    for k in range(m):
                        dot += xv[k] * w[xi[k]]
                else:  # Xd: dense rows flattened, row i at i * ldx
                    m = ldx
                    xv = Xd[i * ldx:i * ldx + ldx]
                    # four partial sums dot, s1, s2, s3 (elements k, k+1, k+2, k+3 of each block of
                    # four, the tail in dot) added as (dot + s1) + (s2 + s3): four independent chains
                    # of adds instead of one, which was latency-bound (~4 cycles per element), in a
                    # fixed order (no fastmath). Per visit: digits 58.6 -> 41.9 ns, breast_cancer
                    # 34.0 -> 27.4 ns. Not for CSR rows: their visits wait on the loads of w[xi[k]],
                    # and four sums measured no faster there (phishing, a9a, ijcnn1, w8a).
                    s1 = 0.0
                    s2 = 0.0
                    s3 = 0.0
                    m4 = m - (m & 3)
                    for k in range(0, m4, 4):
                        dot += xv[k] * w[k]
                        s1 += xv[k + 1] * w[k + 1]
                        s2 += xv[k + 2] * w[k + 2]
                        s3 += xv[k + 3] * w[k + 3]
                    for k in range(m4, m):
                        dot += xv[k] * w[k]
                    dot = (dot + s1) + (s2 + s3)
                g = yi * (dot + bias * w[dw]) - 1.0 + diag[i] * a
                updates += 1
                ub = upper[i]
                pg = 0.0
                if a == 0.0:
                    if shrinking and not AVSF and g > pgmax_old:
                        active -= 1
                        order[s] = order[active]
                        order[active] = i
                        continue
                    elif g < 0.0:
                        pg = g
                elif a >= ub:
                    if shrinking and not AVSF and g < pgmin_old:
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
                        moves += 1
                        coef = delta * yi
                        if SPARSE:
                            for k in range(m):
                                w[xi[k]] += coef * xv[k]
                        else:  # contiguous: vectorized
                            for k in range(m):
                                w[k] += coef * xv[k]
                        w[dw] += coef * bias
                        if AVSF:
                            gain = -(g * delta + 0.5 * q * delta * delta)
                if AVSF:
                    # Algorithm 5: move log p_i by c * (gain / reference - 1); the reference gain is
                    # the mean gain of the first sweep, then an exponentially fading average (rate 1/n).
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
            if istate.shape[0] > ISTATE_LEN:  # optional counter of the steps that moved alpha_i
                istate[ISTATE_LEN] += moves
            fstate[2] = ref
            fstate[3] = prefsum
            gap = pgmax_new - pgmin_new
            fstate[4] = gap
            if AVSF:
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

    return sweeps


# (sparse, avsf) -> compiled sweep loop
_SWEEPS = {(sp, av): _make_sweeps(sp, av) for sp in (False, True) for av in (False, True)}


def _cpu_arrays(be, X):
    """(sparse, Xd, ldx, indptr, indices, data) with one dtype set per element type (few Numba compiles).

    Dense rows are passed flattened (``Xd``, row ``i`` at ``i * ldx``). CSR indices are int32
    (:func:`gpusvm._solvers.dcd.dcd_linear` converts them once per solve); the row pointer is used as
    it comes (int32 or int64: SciPy keeps both index arrays in one dtype), so nothing is copied per call.
    """
    if be.issparse(X):
        dummy = np.zeros(0, dtype=X.dtype)
        indices = X.indices if X.indices.dtype == np.int32 else X.indices.astype(np.int32)
        indptr = X.indptr if X.indptr.dtype in (np.int32, np.int64) else X.indptr.astype(np.int64)
        return True, dummy, 0, indptr, indices, X.data
    Xd = np.ascontiguousarray(X)
    return False, Xd.reshape(-1), Xd.shape[1], np.zeros(1, np.int64), np.zeros(0, np.int32), \
        np.zeros(0, Xd.dtype)


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
    sparse, Xd, ldx, indptr, indices, data = _cpu_arrays(be, X)
    avsf = bool(avsf)
    _SWEEPS[sparse, avsf](Xd, np.int64(ldx), indptr, indices, data, y, qd, upper, diag, float(bias), alpha,
                          w, order, pref, fstate, istate, rng, int(n_sweeps), float(tol),
                          bool(shrinking) and not avsf)


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

    from . import check_raw_array

    n, d = int(y.shape[0]), int(X.shape[1])
    # w holds d + 1 weights: the kernel reads and writes the bias weight w[d] after the d feature weights
    for name, arr, dt, ln in (("y", y, cp.float64, n), ("qd", qd, cp.float64, n), ("upper", upper, cp.float64, n),
                              ("diag", diag, cp.float64, n), ("alpha", alpha, cp.float64, n),
                              ("w", w, cp.float64, d + 1), ("order", order, cp.int64, n),
                              ("pref", pref, cp.float64, n), ("fstate", fstate, cp.float64, FSTATE_LEN),
                              ("istate", istate, cp.int64, ISTATE_LEN), ("rng", rng, cp.uint64, 1)):
        check_raw_array(arr, dt, ln, "dcd_sweeps", name)
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
            Xd, data, indices, indptr, cp.int64(ldx), cp.int64(d),
            y, qd, upper, diag, cp.float64(bias), alpha, w, order, pref, fstate, istate, rng,
            cp.int64(n), cp.int64(n_sweeps), cp.float64(tol),
            cp.int32(1 if avsf else 0), cp.int32(1 if (shrinking and not avsf) else 0),
        ))


@numba.njit(cache=True, nogil=True)
def _csr_sqnorms(indptr, data, out):
    for i in range(out.shape[0]):
        s = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            v = np.float64(data[p])
            s += v * v
        out[i] = s


@register_op("dcd_row_sqnorms", "cpu")
def dcd_row_sqnorms_cpu(be, X):
    """Squared row norms of ``X`` (dense or CSR) in float64, shape (n,).

    One pass over the CSR data in compiled code: the generic ``be.row_sqnorms`` copies the matrix and
    sums through SciPy, which took longer than a whole DCD sweep on a9a (9 vs 2 ms).
    """
    if be.issparse(X):
        out = np.empty(X.shape[0], dtype=np.float64)
        _csr_sqnorms(X.indptr, X.data, out)
        return out
    return be.row_sqnorms(X, np.float64)


@register_op("dcd_row_sqnorms", "gpu")
def dcd_row_sqnorms_gpu(be, X):
    """GPU twin of :func:`dcd_row_sqnorms_cpu` (CuPy's sparse/dense reductions are already fused)."""
    import cupy as cp

    with be.device:
        return be.row_sqnorms(X, cp.float64)

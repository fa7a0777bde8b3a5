"""Fused ops of the batched working-set decomposition (:mod:`gpusvm._solvers.smo_batched`).

``local_smo``
    Solves the dual sub-problem restricted to a working set ``B`` of ``q <= 1024`` variables with SMO
    steps (second-order working-set selection of Fan, Chen and Lin, 2005, restricted to ``B``) or with
    planning-ahead SMO steps (Glasmachers, 2008). GPU: one CUDA thread block, one thread per variable
    (``local_smo`` in ``kernels/smo_local.cu``). CPU twin: the same algorithm, step for step, in Numba.

``grad_update_rows``
    ``G += y * (coef @ K_rows)`` for Gram rows ``K_rows`` (float32 or float64) accumulated in float64,
    skipping rows whose coefficient is zero. GPU: ``grad_update_rows`` in ``kernels/smo_local.cu``
    (one thread per column, coalesced reads of the rows); CPU twin: a Numba loop.

``take_block``
    ``M[rows][:, cols]``, a block of cached Gram rows (``rows``: slots of a cache's store, ``cols``: the
    working set), as a new array. CPU: a Numba loop, 3-4x NumPy's two-index gather
    ``M[rows[:, None], cols[None, :]]`` (400 x 400 out of a 5,000 x 10,000 float32 store: 0.7-1.2 ms
    against 4.2-4.7 ms); GPU: that gather in CuPy. The same values.

``take_blocks``
    The square blocks ``M[r][:, r]`` of many index sets ``r`` (consecutive runs of one index array), flat
    and row-major one after the other: the Gram blocks of :func:`gpusvm._solvers.segments.solve_segments`
    gathered from one Gram matrix. CPU: a Numba loop (435 blocks of 80 out of a 1,200 x 1,200 matrix, 2.8
    million values: 3.6 ms, where NumPy's vectorized index arithmetic took 41.5 ms, best of 5 on the 2-core
    machine); GPU: that arithmetic in CuPy, a few elementwise launches however many blocks. The same values.

The local algorithm (identical in both versions, so that the GPU test can compare them)
-----------------------------------------------------------------------------------------
Notation as in :mod:`gpusvm._solvers._common`: ``s_t = -y_t G_t``, ``I_up``, ``I_low``. A step on the pair
``(i, j)`` (``i`` in ``I_up``, ``j`` in ``I_low``) moves ``alpha_i += y_i t``, ``alpha_j -= y_j t``; along this
direction the dual objective changes by ``t b - a t^2 / 2`` with ``b = s_i - s_j`` and
``a = K_ii + K_jj - 2 K_ij``, and the gradient changes by ``G_k += y_k t (K_ik - K_jk)``.

1. ``i = argmax_{I_up} s``; stop when ``max_{I_up} s - min_{I_low} s <= eps_eff`` where
   ``eps_eff = max(eps, rel_eps * initial local gap)`` (ThunderSVM's and cuML's loose local solve: the
   outer loop re-selects soon anyway), or after ``max_steps`` steps.
2. ``j = argmax_{t in I_low, s_t < s_i} b_t^2 / a_t`` (WSS2; ``a_t <= 0`` replaced by 1e-12).
3. mode 0 (SMO): ``t = min(b / a, box limit)``.
   mode 1 (planning-ahead SMO, Glasmachers 2008), the rules of the pairwise solver
   (:mod:`gpusvm._backend.ops.smo_pairwise`; it has no shrinking here): right after a *free plain* SMO
   step (the Newton step on the previous working set was not clipped, so the gradient along it is ~0),
   take instead the step that is optimal when followed by Newton steps on the most recent working
   sets: the first component ``mu = [H^-1 g]_0`` of the Newton step of the 2-d (``pa_recent=2``: this
   pair and the previous one) or 3-d (``pa_recent=3``: and the one before) sub-problem, ``H_ab = v_a^T K v_b``,
   ``g_a = v_a^T s`` (``v = e_i - e_j`` in ``beta = y alpha`` coordinates). A 3-d plan falls back to the
   2-d plan, and that to the plain step, when ``H`` is nearly singular (``det <= 1e-8 * prod(diag)``)
   or ``mu`` is not strictly inside ``(0, box limit)``. Planning steps never follow each other.
   Right after a planning step the working-set selection is modified (the eta safeguard): with
   ``gain1`` the planning step's gain and ``g(B)`` the clipped Newton gain of a pair, the WSS2 pair is
   kept only when ``gain1 + g(WSS2) >= eta * (gain1 + max_partner g(B))`` (eta = 0.9); otherwise the
   best partner working set of the plan is taken. Then, as in the pairwise solver, the planning step's
   own working set is taken when the pair so chosen would leave the double step less than ``eta``
   times ``gain1 + g(B_plan)``, the gain of the plain SMO step on it (the step along it lands where
   that step would have): the double step never lowers the objective, also when the partners are
   clipped at the box (before, 1 to 5 double steps lost in the first 400 steps of a 100-point
   chess-board solved as one working set). The stopping test always uses the maximal violating pair.

Float discipline: alpha, G, s and all step arithmetic in float64; Gram values (float32 or float64) are
converted to float64 before use. The CUDA version uses round-to-nearest intrinsics (no FMA contraction)
for the expressions that decide the working set, so its choices match the CPU twin's.
"""

from __future__ import annotations

import numba
import numpy as np

from ..base import register_op
from .smo_pairwise import plan_mu2, plan_mu3  # PA-SMO's plan, shared with the pairwise loop

TAU = 1e-12
PA_ETA = 0.9
MAX_Q = 1024
_BATCHED_THREADS = 512  # local_smo_batched's __launch_bounds__

# The Numba twins are module-level functions: defined inside a function (as they were until the
# batched op), the on-disk cache missed in every new process (the closure's cells, other jitted
# functions, enter the cache key), so each process recompiled them for seconds.


@numba.njit(cache=True)
def _up(y, a, c):
    return (y > 0.0 and a < c) or (y < 0.0 and a > 0.0)


@numba.njit(cache=True)
def _low(y, a, c):
    return (y > 0.0 and a > 0.0) or (y < 0.0 and a < c)


@numba.njit(cache=True)
def _limit(yi, ai, ci, yj, aj, cj):
    # largest t >= 0 with alpha_i + y_i t and alpha_j - y_j t inside their boxes
    ui = ci - ai if yi > 0.0 else ai
    uj = aj if yj > 0.0 else cj - aj
    return ui, uj


@numba.njit(cache=True)
def _cross(K, i, j, p, r):
    # (e_i - e_j)^T K (e_p - e_r)
    return (np.float64(K[i, p]) - np.float64(K[i, r])) - (np.float64(K[j, p]) - np.float64(K[j, r]))


@numba.njit(cache=True)
def _curv(K, diag, u, v):
    a = (diag[u] + diag[v]) - 2.0 * np.float64(K[u, v])
    return a if a > 0.0 else TAU


@numba.njit(cache=True)
def _oriented(y, g, u, v):
    # the pair {u, v} in the order a step takes it: (i, j) with s_i >= s_j, s = -y g
    if -y[u] * g[u] >= -y[v] * g[v]:
        return u, v
    return v, u


@numba.njit(cache=True)
def _clipped_gain(K, diag, y, a, g, C, u, v):
    # gain of the clipped Newton step on the pair {u, v}, oriented so that b >= 0
    u, v = _oriented(y, g, u, v)
    b = -y[u] * g[u] - (-y[v] * g[v])
    ui, uj = _limit(y[u], a[u], C[u], y[v], a[v], C[v])
    ub = min(ui, uj)
    if not (b > 0.0) or not (ub > 0.0):
        return 0.0
    aa = _curv(K, diag, u, v)
    t = b / aa
    if t > ub:
        t = ub
    return t * b - 0.5 * aa * t * t


@numba.njit(cache=True)
def local_smo_core(K, y, a, g, C, diag, eps, rel_eps, max_steps, mode, pa_recent, eta):
    # the local solve; updates alpha ``a`` and the gradient ``g`` in place, returns (steps, gap)
    q = a.shape[0]
    hist_i = np.full(3, -1, np.int64)  # most recent first
    hist_j = np.full(3, -1, np.int64)
    n_hist = 0
    last_free = False  # the previous step was a plain SMO step that did not hit the box
    last_plan = False  # the previous step was a planning step
    n_partner = 0      # working sets it planned with (history slots 1..n_partner now)
    gain1 = 0.0        # gain of the previous step
    eps_eff = eps
    gap = 0.0
    steps = 0
    while True:
        # ---- maximal violating pair: i (and the gap) --------------------------------------
        m = -np.inf
        Mn = np.inf
        i = -1
        for t in range(q):
            st = -y[t] * g[t]
            if _up(y[t], a[t], C[t]) and st > m:
                m = st
                i = t
            if _low(y[t], a[t], C[t]) and st < Mn:
                Mn = st
        gap = m - Mn
        if steps == 0:
            eps_eff = max(eps, rel_eps * gap)
        if i < 0 or not (gap > eps_eff) or steps >= max_steps:
            break
        # ---- WSS2: j by second-order gain against i ----------------------------------------
        best = -np.inf
        j = -1
        Ki = K[i]
        for t in range(q):
            if _low(y[t], a[t], C[t]):
                st = -y[t] * g[t]
                b = m - st
                if b > 0.0:
                    aa = (diag[i] + diag[t]) - 2.0 * np.float64(Ki[t])
                    if aa <= 0.0:
                        aa = TAU
                    val = (b * b) / aa
                    if val > best:
                        best = val
                        j = t
        if j < 0:
            break
        # ---- PA-SMO: modified selection right after a planning step (eta safeguard) --------
        if mode == 1 and last_plan:
            gw = _clipped_gain(K, diag, y, a, g, C, i, j)
            pbest = -np.inf
            pu = -1
            pv = -1
            for h in range(1, 1 + n_partner):
                gr = _clipped_gain(K, diag, y, a, g, C, hist_i[h], hist_j[h])
                if gr > pbest:
                    pbest = gr
                    pu = hist_i[h]
                    pv = hist_j[h]
            g_ch = gw
            if pu >= 0 and pbest > 0.0 and gain1 + gw < eta * (gain1 + pbest):
                g_ch = pbest
                i, j = _oriented(y, g, pu, pv)
            # the planning step's own working set (slot 0): the step along it lands where the plain SMO
            # step would have, so that double step gains gain1 + g0 > 0; taken when the chosen pair's
            # would gain less than eta times that (partners clipped at the box cannot make up for a
            # planning step that lost)
            p0 = hist_i[0]
            r0 = hist_j[0]
            g0 = _clipped_gain(K, diag, y, a, g, C, p0, r0)
            if gain1 + g_ch < eta * (gain1 + g0):
                i, j = _oriented(y, g, p0, r0)
        # ---- the step --------------------------------------------------------------------
        si = -y[i] * g[i]
        sj = -y[j] * g[j]
        b = si - sj
        aa = _curv(K, diag, i, j)
        ui, uj = _limit(y[i], a[i], C[i], y[j], a[j], C[j])
        ub = min(ui, uj)
        planned = False
        t_step = 0.0
        npart = 0
        if (mode == 1 and last_free and not last_plan and n_hist > 0
                and not ((hist_i[0] == i and hist_j[0] == j) or (hist_i[0] == j and hist_j[0] == i))):
            p0 = hist_i[0]
            r0 = hist_j[0]
            H01 = _cross(K, i, j, p0, r0)
            H11 = _curv(K, diag, p0, r0)
            g0 = (-y[p0] * g[p0]) - (-y[r0] * g[r0])
            mu = 0.0
            if pa_recent == 3 and n_hist > 1:
                p1 = hist_i[1]
                r1 = hist_j[1]
                g1 = (-y[p1] * g[p1]) - (-y[r1] * g[r1])
                mu = plan_mu3(aa, H01, _cross(K, i, j, p1, r1), H11, _cross(K, p0, r0, p1, r1),
                              _curv(K, diag, p1, r1), b, g0, g1)
                if mu > 0.0 and mu < ub:
                    npart = 2
            if npart == 0:
                mu = plan_mu2(aa, H01, H11, b, g0)
                if mu > 0.0 and mu < ub:
                    npart = 1
            if npart > 0:
                t_step = mu
                planned = True
        if not planned:
            t_step = b / aa
            if t_step > ub:
                t_step = ub
        free = t_step < ub
        # ---- update alpha (exactly onto a bound when clipped) and the local gradient -------
        ai_new = a[i] + y[i] * t_step
        aj_new = a[j] - y[j] * t_step
        if not free:
            if t_step >= ui:
                ai_new = C[i] if y[i] > 0.0 else 0.0
            if t_step >= uj:
                aj_new = 0.0 if y[j] > 0.0 else C[j]
        a[i] = ai_new
        a[j] = aj_new
        Kj = K[j]
        Ki = K[i]
        for k in range(q):
            d = np.float64(Ki[k]) - np.float64(Kj[k])
            g[k] = g[k] + (y[k] * t_step) * d
        hist_i[2] = hist_i[1]
        hist_j[2] = hist_j[1]
        hist_i[1] = hist_i[0]
        hist_j[1] = hist_j[0]
        hist_i[0] = i
        hist_j[0] = j
        n_hist = min(n_hist + 1, 3)
        gain1 = t_step * b - 0.5 * aa * t_step * t_step
        last_plan = planned
        last_free = free and not planned
        n_partner = npart
        steps += 1
    return steps, gap


@numba.njit(cache=True)
def local_smo_nb(K, y, alpha0, G0, C, diag, eps, rel_eps, max_steps, mode, pa_recent, eta):
    a = alpha0.copy()
    g = G0.copy()
    steps, gap = local_smo_core(K, y, a, g, C, diag, eps, rel_eps, max_steps, mode, pa_recent, eta)
    return a, steps, gap


@numba.njit(cache=True)
def local_smo_batched_nb(Kflat, k_off, seg, y, alpha, G, C, diag, eps, max_steps, mode, pa_recent, eta,
                         out_steps, out_gap):
    # one segment after the other, each with the kernel's arithmetic (serial: DC-SVM runs this twin only
    # when asked to, the one-by-one SMO solves being faster on the CPU)
    for c in range(seg.shape[0] - 1):
        s0 = seg[c]
        q = seg[c + 1] - s0
        K = Kflat[k_off[c]:k_off[c] + q * q].reshape((q, q))
        ys = y[s0:s0 + q]
        a = alpha[s0:s0 + q]
        g = G[s0:s0 + q]
        for u in range(q):
            acc = 0.0
            for k in range(q):
                ak = a[k]
                if ak != 0.0:
                    acc = acc + (ys[k] * ak) * np.float64(K[k, u])
            g[u] = ys[u] * acc - 1.0
        steps, gap = local_smo_core(K, ys, a, g, C[s0:s0 + q], diag[s0:s0 + q], eps, 0.0, max_steps, mode,
                                    pa_recent, eta)
        out_steps[c] = steps
        out_gap[c] = gap


@numba.njit(cache=True)
def grad_update_rows_nb(G, y, K, rows, coef):
    # acc[col] += coef[k] K[rows[k], col] over the rows with coef != 0, in k order; four rows per pass over
    # acc, ((((acc + t0) + t1) + t2) + t3), the same additions in the same order as one row per pass (the
    # same values), with a quarter of the loads and stores of acc (2.5-3x faster for 400 rows of 32,561)
    n = K.shape[1]
    acc = np.zeros(n, np.float64)
    nz = np.empty(coef.shape[0], np.int64)
    m = 0
    for k in range(coef.shape[0]):
        if coef[k] != 0.0:
            nz[m] = k
            m += 1
    u = 0
    while u + 4 <= m:
        c0, c1, c2, c3 = coef[nz[u]], coef[nz[u + 1]], coef[nz[u + 2]], coef[nz[u + 3]]
        r0, r1, r2, r3 = K[rows[nz[u]]], K[rows[nz[u + 1]]], K[rows[nz[u + 2]]], K[rows[nz[u + 3]]]
        for col in range(n):
            acc[col] = (((acc[col] + c0 * np.float64(r0[col])) + c1 * np.float64(r1[col]))
                        + c2 * np.float64(r2[col])) + c3 * np.float64(r3[col])
        u += 4
    while u < m:
        c = coef[nz[u]]
        row = K[rows[nz[u]]]
        for col in range(n):
            acc[col] += c * np.float64(row[col])
        u += 1
    for col in range(n):
        G[col] += y[col] * acc[col]


def _check_q(q):
    if q < 1 or q > MAX_Q:
        raise ValueError(f"local_smo solves working sets of 1 to {MAX_Q} variables, got {q}")


@register_op("local_smo", "cpu")
def local_smo_cpu(be, K_BB, y_B, alpha_B, G_B, C_B, diag_B, eps, max_steps, mode=0, pa_recent=2,
                  *, rel_eps=0.1, eta=PA_ETA):
    """Solve the dual restricted to a working set by SMO (mode 0) or planning-ahead SMO (mode 1).

    Parameters
    ----------
    K_BB : ndarray of shape (q, q), float32 or float64
        Gram values of the working set (symmetric).
    y_B, alpha_B, G_B, C_B, diag_B : ndarray of shape (q,), float64
        Labels (+-1), current alpha, current gradient ``Q alpha - 1``, upper bounds, ``K_tt``.
    eps : float
        Absolute local tolerance; the local stop is ``gap <= max(eps, rel_eps * initial gap)``.
    max_steps : int
        Cap on SMO steps (negative or above 2**31 - 1: 2**31 - 1, the kernel's ``int``).
    mode : {0, 1}
        0: SMO with WSS2; 1: planning-ahead SMO.
    pa_recent : {2, 3}
        PA-SMO plans with the 2 or 3 most recent working sets (the current one included).

    Returns
    -------
    alpha_new : ndarray of shape (q,), float64
    n_steps : ndarray of shape (1,), int64
        SMO steps taken (an array so that the GPU version needs no host sync).
    gap : ndarray of shape (1,), float64
        Local gap at the last selection.
    """
    np = be.xp
    q = int(alpha_B.shape[0])
    _check_q(q)
    K = np.ascontiguousarray(K_BB)
    a, steps, gap = local_smo_nb(K, np.ascontiguousarray(y_B, dtype=np.float64),
                                 np.ascontiguousarray(alpha_B, dtype=np.float64),
                                 np.ascontiguousarray(G_B, dtype=np.float64),
                                 np.ascontiguousarray(C_B, dtype=np.float64),
                                 np.ascontiguousarray(diag_B, dtype=np.float64),
                                 float(eps), float(rel_eps), _steps_cap(max_steps), int(mode),
                                 int(min(max(pa_recent, 1), 3)), float(eta))
    return a, np.array([steps], dtype=np.int64), np.array([gap], dtype=np.float64)


_INT32_MAX = 2**31 - 1


def _steps_cap(max_steps):
    """``max_steps`` as the kernel's ``int`` parameter: negative means no cap; clipped to int32 (a larger
    value would overflow ``cp.int32`` instead of meaning "practically unlimited")."""
    m = int(max_steps)
    return _INT32_MAX if m < 0 or m > _INT32_MAX else m


def _threads_for(q):
    t = 32
    while t < q:
        t *= 2
    return t


@register_op("local_smo", "gpu")
def local_smo_gpu(be, K_BB, y_B, alpha_B, G_B, C_B, diag_B, eps, max_steps, mode=0, pa_recent=2,
                  *, rel_eps=0.1, eta=PA_ETA):
    """GPU twin of :func:`local_smo_cpu`: one thread block of ``local_smo`` (kernels/smo_local.cu)."""
    import cupy as cp

    from ..cuda_source import ctype, get_kernel

    q = int(alpha_B.shape[0])
    _check_q(q)
    if tuple(K_BB.shape) != (q, q):
        raise ValueError(f"local_smo needs a ({q}, {q}) K_BB for a working set of {q}, got shape {tuple(K_BB.shape)}")
    with be.device:
        K = cp.ascontiguousarray(K_BB)
        if K.dtype not in (cp.float32, cp.float64):
            K = K.astype(cp.float64)
        f64 = cp.float64
        y = cp.ascontiguousarray(y_B, dtype=f64)
        a_out = cp.array(alpha_B, dtype=f64, copy=True)
        G = cp.ascontiguousarray(G_B, dtype=f64)
        C = cp.ascontiguousarray(C_B, dtype=f64)
        d = cp.ascontiguousarray(diag_B, dtype=f64)
        steps = cp.zeros(1, dtype=cp.int64)
        gap = cp.zeros(1, dtype=f64)
        threads = _threads_for(q)
        # dynamic shared memory: alpha, G, y, C, diag in float64 per thread = 40 KB at 1,024 threads; with
        # the kernel's ~0.7 KB of static shared memory this stays under the 48 KB that needs no opt-in
        # (cudaFuncAttributeMaxDynamicSharedMemorySize)
        fn = get_kernel("smo_local.cu", f"local_smo<{ctype(K.dtype)}>", be.device_id)
        fn((1,), (threads,), (
            K, cp.int32(q), y, a_out, G, C, d, f64(float(eps)), f64(float(rel_eps)), cp.int32(_steps_cap(max_steps)),
            cp.int32(int(mode)), cp.int32(min(max(int(pa_recent), 1), 3)), f64(float(eta)), steps, gap,
        ), shared_mem=5 * 8 * threads)
    return a_out, steps, gap


def _segments(K_flat, k_off, seg, n):
    """Host int64 copies of the segment bounds and Gram offsets, checked against ``K_flat`` and ``n``."""
    seg = np.asarray(seg, dtype=np.int64).ravel()
    k_off = np.asarray(k_off, dtype=np.int64).ravel()
    nseg = int(seg.shape[0]) - 1
    if nseg < 0 or int(k_off.shape[0]) != nseg:
        raise ValueError(f"local_smo_batched needs seg of length n_segments + 1 and k_off of length n_segments, "
                         f"got {seg.shape[0]} and {k_off.shape[0]}")
    q = np.diff(seg)
    if nseg and (seg[0] != 0 or seg[-1] != n or np.any(q < 0)):
        raise ValueError(f"local_smo_batched: seg must rise from 0 to the {n} variables, got {seg[:3].tolist()}"
                         f"...{seg[-3:].tolist()}")
    if nseg and (np.any(k_off < 0) or np.any(k_off + q * q > int(K_flat.shape[0]))):
        raise ValueError("local_smo_batched: a segment's q x q Gram block at k_off runs past the end of K_flat "
                         f"({K_flat.shape[0]} values)")
    return k_off, seg, (int(q.max()) if nseg else 0)


@register_op("local_smo_batched", "cpu")
def local_smo_batched_cpu(be, K_flat, k_off, seg, y, alpha, C, diag, eps, max_steps, mode=0, pa_recent=2,
                          *, eta=PA_ETA, smem_q=None):
    """Solve many independent C-SVC duals (segments) exactly, each by the local solve of :func:`local_smo_cpu`.

    Segment ``c`` is the problem of the variables ``seg[c]:seg[c + 1]`` with the Gram block
    ``K_flat[k_off[c]:k_off[c] + q_c**2].reshape(q_c, q_c)`` (symmetric), its own equality constraint
    ``sum y alpha = 0`` and the start ``alpha``; its gradient ``G = Q alpha - 1`` is computed from that start
    (``G_u = y_u sum_k (y_k alpha_k) K[k, u] - 1``, zero alphas skipped) and the SMO (mode 0) or PA-SMO
    (mode 1) steps run to the gap ``eps`` (no relative loosening) or ``max_steps``. DC-SVM's cluster
    subproblems (:mod:`gpusvm._solvers.dcsvm`). GPU: ``local_smo_batched`` in kernels/smo_local.cu, one
    thread block per segment; CPU twin: the Numba solve, one segment after the other.

    Parameters
    ----------
    K_flat : ndarray of shape (total,), float32 or float64
        The segments' Gram blocks, each row-major.
    k_off : sequence of int, length n_segments (host)
    seg : sequence of int, length n_segments + 1 (host), from 0 to n
    y, alpha, C, diag : ndarray of shape (n,), float64
        Labels (+-1), starting alpha (feasible per segment), upper bounds, ``K_uu``.
    eps : float
    max_steps : int
        Per segment (negative: no cap).
    mode, pa_recent : as :func:`local_smo_cpu`
    smem_q : int, optional
        GPU only (where a segment's state lives; the same results either way); ignored here.

    Returns
    -------
    alpha : ndarray (n,), float64
    G : ndarray (n,), float64
        Each segment's gradient at its solution.
    steps : ndarray (n_segments,), int64
    gap : ndarray (n_segments,), float64
        Each segment's gap at its last selection.
    """
    np = be.xp
    n = int(y.shape[0])
    k_off, seg, _ = _segments(K_flat, k_off, seg, n)
    nseg = int(seg.shape[0]) - 1
    a = np.array(alpha, dtype=np.float64, copy=True)
    G = np.empty(n, dtype=np.float64)
    steps = np.zeros(nseg, dtype=np.int64)
    gap = np.zeros(nseg, dtype=np.float64)
    if nseg:
        K = np.ascontiguousarray(K_flat)
        if K.dtype not in (np.float32, np.float64):
            K = K.astype(np.float64)
        local_smo_batched_nb(K, k_off, seg, np.ascontiguousarray(y, dtype=np.float64), a, G,
                             np.ascontiguousarray(C, dtype=np.float64), np.ascontiguousarray(diag, dtype=np.float64),
                             float(eps), _steps_cap(max_steps), int(mode), int(min(max(pa_recent, 1), 3)),
                             float(eta), steps, gap)
    return a, G, steps, gap


@register_op("local_smo_batched", "gpu")
def local_smo_batched_gpu(be, K_flat, k_off, seg, y, alpha, C, diag, eps, max_steps, mode=0, pa_recent=2,
                          *, eta=PA_ETA, smem_q=None):
    """GPU twin of :func:`local_smo_batched_cpu`: one launch of ``local_smo_batched`` (kernels/smo_local.cu),
    one thread block per segment (up to 512 threads, the kernel's launch bound; a larger segment gives
    each thread several variables). Segments of at most ``smem_q`` variables (default: the largest
    segment, capped at 1,024) keep their state in shared memory, larger ones work in global memory.
    No host synchronization."""
    import cupy as cp

    from ..cuda_source import ctype, get_kernel

    n = int(y.shape[0])
    k_off, seg, qmax = _segments(K_flat, k_off, seg, n)
    nseg = int(seg.shape[0]) - 1
    f64 = cp.float64
    with be.device:
        a = cp.array(alpha, dtype=f64, copy=True)
        G = cp.empty(n, dtype=f64)
        steps = cp.zeros(nseg, dtype=cp.int64)
        gap = cp.zeros(nseg, dtype=f64)
        if nseg == 0:
            return a, G, steps, gap
        K = cp.ascontiguousarray(K_flat)
        if K.dtype not in (cp.float32, cp.float64):
            K = K.astype(f64)
        fn = get_kernel("smo_local.cu", f"local_smo_batched<{ctype(K.dtype)}>", be.device_id)
        threads = min(_BATCHED_THREADS, _threads_for(qmax))
        # segments of up to smem_q variables keep their state in shared memory: 5 doubles each, 40 KB at
        # MAX_Q, under the 48 KB that need no opt-in (with the kernel's ~0.7 KB of static shared memory)
        smem_q = min(qmax, MAX_Q) if smem_q is None else int(smem_q)
        fn((nseg,), (threads,), (
            K, cp.asarray(k_off), cp.asarray(seg), cp.ascontiguousarray(y, dtype=f64), a, G,
            cp.ascontiguousarray(C, dtype=f64), cp.ascontiguousarray(diag, dtype=f64), f64(float(eps)),
            cp.int32(_steps_cap(max_steps)), cp.int32(int(mode)), cp.int32(min(max(int(pa_recent), 1), 3)),
            f64(float(eta)), cp.int32(smem_q), steps, gap), shared_mem=5 * 8 * smem_q)
    return a, G, steps, gap


@numba.njit(cache=True)
def take_block_nb(M, rows, cols, out):
    for r in range(rows.shape[0]):
        src = M[rows[r]]
        for c in range(cols.shape[0]):
            out[r, c] = src[cols[c]]
    return out


@numba.njit(cache=True)
def take_blocks_nb(M, rows, sizes, out):
    s = 0
    o = 0
    for c in range(sizes.shape[0]):
        q = sizes[c]
        for u in range(q):
            src = M[rows[s + u]]
            for v in range(q):
                out[o + u * q + v] = src[rows[s + v]]
        s += q
        o += q * q
    return out


def _check_take(n, idx, what, op="take_block"):
    if idx.shape[0] and (int(idx.min()) < 0 or int(idx.max()) >= n):
        raise IndexError(f"{op}: {what} out of range [0, {n})")


@register_op("take_block", "cpu")
def take_block_cpu(be, M, rows, cols):
    """``M[rows][:, cols]`` as a new ``(len(rows), len(cols))`` array of ``M``'s type, without copying
    the rows out first (``M`` is typically a cache's store and ``rows`` slots in it).

    Parameters
    ----------
    M : ndarray of shape (m, n)
    rows, cols : int ndarray of shape (k,) and (l,)
        Indices into ``M``'s rows and columns, in ``[0, m)`` and ``[0, n)`` (no negative indices).
    """
    np = be.xp
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    cols = np.ascontiguousarray(cols, dtype=np.int64)
    _check_take(int(M.shape[0]), rows, "rows")
    _check_take(int(M.shape[1]), cols, "cols")
    out = np.empty((rows.shape[0], cols.shape[0]), dtype=M.dtype)
    return take_block_nb(M, rows, cols, out)


@register_op("take_block", "gpu")
def take_block_gpu(be, M, rows, cols):
    """GPU twin of :func:`take_block_cpu`: CuPy's gather ``M[rows[:, None], cols[None, :]]``."""
    with be.device:
        return M[rows[:, None], cols[None, :]]


def _check_blocks(M, rows, sizes):
    if int(M.shape[0]) != int(M.shape[1]):
        raise ValueError(f"take_blocks needs a square matrix, got shape {tuple(M.shape)}")
    if sum(sizes) != int(rows.shape[0]) or any(q < 0 for q in sizes):
        raise ValueError(f"take_blocks: the block sizes add up to {sum(sizes)}, not to the {rows.shape[0]} indices")
    return sum(q * q for q in sizes)


@register_op("take_blocks", "cpu")
def take_blocks_cpu(be, M, rows, sizes):
    """The blocks ``M[r][:, r]`` of the consecutive runs ``r`` of ``rows`` of lengths ``sizes``, flat.

    Parameters
    ----------
    M : ndarray of shape (n, n)
    rows : int ndarray of shape (sum(sizes),)
        The index sets one after the other, each in ``[0, n)``.
    sizes : sequence of int (host)

    Returns
    -------
    ndarray of shape (sum(q**2),) of ``M``'s type: block c row-major after block c - 1.
    """
    np = be.xp
    sizes = [int(q) for q in sizes]
    tot = _check_blocks(M, rows, sizes)
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    _check_take(int(M.shape[0]), rows, "rows", "take_blocks")
    out = np.empty(tot, dtype=M.dtype)
    return take_blocks_nb(np.ascontiguousarray(M), rows, np.asarray(sizes, dtype=np.int64), out)


@register_op("take_blocks", "gpu")
def take_blocks_gpu(be, M, rows, sizes):
    """GPU twin of :func:`take_blocks_cpu`: each value's block, row and column from its flat position in a
    few elementwise launches, then one gather (no launch per block)."""
    xp = be.xp
    sizes = [int(q) for q in sizes]
    tot = _check_blocks(M, rows, sizes)
    n = int(M.shape[0])
    with be.device:
        rows = rows.astype(xp.int64, copy=False)
        q = xp.asarray(sizes, dtype=xp.int64)
        qq = q * q
        seg_of = xp.repeat(xp.arange(len(sizes), dtype=xp.int64), [v * v for v in sizes])
        local = xp.arange(tot, dtype=xp.int64) - (xp.cumsum(qq) - qq)[seg_of]
        qs = q[seg_of]
        u = local // qs
        start = (xp.cumsum(q) - q)[seg_of]
        # (u, v) of each value, row-major: v = local - u q; its flat position in M is rows[u] n + rows[v]
        flat = rows[start + u] * n + rows[start + local - u * qs]
        return M.reshape(-1)[flat]


@register_op("grad_update_rows", "cpu")
def grad_update_rows_cpu(be, G, y, K_rows, coef, rows=None):
    """In place ``G += y * (coef @ K_rows[rows])``, accumulated in float64; rows with ``coef == 0`` skipped.

    Parameters
    ----------
    G : ndarray of shape (n,), float64 (updated in place, contiguous)
    y : ndarray of shape (n,), float64
    K_rows : ndarray of shape (m, n), float32 or float64
        Gram rows, e.g. the store of a :class:`~gpusvm._solvers.kernel_cache.GramRowCache`.
    coef : ndarray of shape (k,), float64
    rows : int ndarray of shape (k,), optional
        Which rows of ``K_rows`` the coefficients belong to (default: the first ``k``), so that the
        rows need not be copied out of a cache.
    """
    np = be.xp
    coef = np.ascontiguousarray(coef, dtype=np.float64)
    rows = np.arange(coef.shape[0], dtype=np.int64) if rows is None else np.ascontiguousarray(rows, dtype=np.int64)
    K = K_rows if K_rows.flags.c_contiguous else np.ascontiguousarray(K_rows)
    grad_update_rows_nb(G, np.ascontiguousarray(y, dtype=np.float64), K, rows, coef)
    return G


@register_op("grad_update_rows", "gpu")
def grad_update_rows_gpu(be, G, y, K_rows, coef, rows=None):
    """GPU twin of :func:`grad_update_rows_cpu` (``grad_update_rows`` in kernels/smo_local.cu)."""
    import cupy as cp

    from ..cuda_source import ctype, get_kernel

    # the kernel writes G through a raw pointer: a strided view or another dtype would be updated wrongly
    # (the CPU twin would still be right), so refuse it instead of copying (a copy would drop the update)
    if G.dtype != cp.float64 or not G.flags.c_contiguous:
        raise ValueError(f"grad_update_rows updates G in place: it must be a contiguous float64 array, got "
                         f"dtype {G.dtype}, contiguous={G.flags.c_contiguous}")
    with be.device:
        K = K_rows if K_rows.flags.c_contiguous else cp.ascontiguousarray(K_rows)
        if K.dtype not in (cp.float32, cp.float64):
            K = K.astype(cp.float64)
        c = cp.ascontiguousarray(coef, dtype=cp.float64)
        k, n = int(c.shape[0]), int(K.shape[1])
        if int(G.shape[0]) != n or int(y.shape[0]) != n:
            raise ValueError(f"grad_update_rows: G {tuple(G.shape)} and y {tuple(y.shape)} must have the "
                             f"{n} entries of a Gram row")
        if k == 0 or n == 0:
            return G
        r = cp.arange(k, dtype=cp.int64) if rows is None else cp.ascontiguousarray(rows, dtype=cp.int64)
        yy = cp.ascontiguousarray(y, dtype=cp.float64)
        fn = get_kernel("smo_local.cu", f"grad_update_rows<{ctype(K.dtype)}>", be.device_id)
        threads = 256
        blocks = min(65535, (n + threads - 1) // threads)
        fn((blocks,), (threads,), (K, cp.int64(n), r, c, cp.int32(k), yy, G, cp.int64(n)))
    return G

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
   mode 1 (planning-ahead SMO, Glasmachers 2008): when the previous step was free (did not hit the
   box), plan a double step: the current step on ``B_t = (i, j)`` followed by a step on the previous
   working set ``B_{t-1}``. Maximizing the objective over both step sizes (a 2 x 2 Newton system with
   ``w = v_t^T K v_{t-1}``) gives the planned first step
   ``mu = (a' b - w b') / (a a' - w^2)`` (``a', b'`` of ``B_{t-1}``; ``b' = 0`` right after a free
   plain step, so ``mu = b / (a - w^2 / a')``). ``mu`` is used only when the 2 x 2 system is positive
   definite, ``mu`` stays strictly inside the box, and the single step still gains (``0 < mu < 2 b / a``);
   otherwise the plain SMO step is taken.
   Right after a planned step the working-set selection is modified so that the double step can be
   completed: among the ``pa_recent`` (2 or 3) most recent working sets, the one with the largest
   second-order gain ``b^2 / a`` replaces the WSS2 pair when its gain is at least ``eta`` (0.9) times
   the WSS2 gain (the eta safeguard: every step keeps a fixed fraction of the WSS2 progress, which is
   what the convergence proof needs). The stopping test always uses the maximal violating pair.

Float discipline: alpha, G, s and all step arithmetic in float64; Gram values (float32 or float64) are
converted to float64 before use. The CUDA version uses round-to-nearest intrinsics (no FMA contraction)
for the expressions that decide the working set, so its choices match the CPU twin's.
"""

from __future__ import annotations

from ..base import register_op

TAU = 1e-12
PA_ETA = 0.9
MAX_Q = 1024

_NB = None


def _numba_impl():
    """Compile (once, cached on disk) the Numba twins; imported lazily to keep numba off import gpusvm."""
    global _NB
    if _NB is not None:
        return _NB
    import numba
    import numpy as np

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
    def local_smo_nb(K, y, alpha0, G0, C, diag, eps, rel_eps, max_steps, mode, pa_recent, eta):
        q = alpha0.shape[0]
        a = alpha0.copy()
        g = G0.copy()
        hist_i = np.full(3, -1, np.int64)
        hist_j = np.full(3, -1, np.int64)
        n_hist = 0
        prev_free = False
        planned_last = False
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
            # ---- PA-SMO: modified selection right after a planned step ------------------------
            if mode == 1 and planned_last:
                cbest = -np.inf
                cu = -1
                cv = -1
                for h in range(min(pa_recent, n_hist)):
                    u = hist_i[h]
                    v = hist_j[h]
                    su = -y[u] * g[u]
                    sv = -y[v] * g[v]
                    if su < sv:
                        u, v = v, u
                        su, sv = sv, su
                    b = su - sv
                    if b > 0.0 and _up(y[u], a[u], C[u]) and _low(y[v], a[v], C[v]):
                        aa = (diag[u] + diag[v]) - 2.0 * np.float64(K[u, v])
                        if aa <= 0.0:
                            aa = TAU
                        val = (b * b) / aa
                        if val > cbest:
                            cbest = val
                            cu = u
                            cv = v
                if cu >= 0 and cbest >= eta * best:
                    i = cu
                    j = cv
            # ---- the step --------------------------------------------------------------------
            si = -y[i] * g[i]
            sj = -y[j] * g[j]
            b = si - sj
            aa = (diag[i] + diag[j]) - 2.0 * np.float64(K[i, j])
            if aa <= 0.0:
                aa = TAU
            ui, uj = _limit(y[i], a[i], C[i], y[j], a[j], C[j])
            ub = min(ui, uj)
            planned = False
            t_step = 0.0
            if mode == 1 and prev_free and n_hist > 0:
                p = hist_i[0]
                r = hist_j[0]
                if not ((p == i and r == j) or (p == j and r == i)):
                    ap = (diag[p] + diag[r]) - 2.0 * np.float64(K[p, r])
                    w = (np.float64(K[i, p]) - np.float64(K[i, r])) - (np.float64(K[j, p]) - np.float64(K[j, r]))
                    bp = (-y[p] * g[p]) - (-y[r] * g[r])
                    det = aa * ap - w * w
                    if ap > TAU and det > 1e-10 * aa * ap:
                        mu = (ap * b - w * bp) / det
                        if mu > 0.0 and mu < ub and mu * aa < 2.0 * b:
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
            # history: most recent first
            hist_i[2] = hist_i[1]
            hist_j[2] = hist_j[1]
            hist_i[1] = hist_i[0]
            hist_j[1] = hist_j[0]
            hist_i[0] = i
            hist_j[0] = j
            n_hist = min(n_hist + 1, 3)
            prev_free = free
            planned_last = planned
            steps += 1
        return a, steps, gap

    @numba.njit(cache=True)
    def grad_update_rows_nb(G, y, K, coef):
        q, n = K.shape
        acc = np.zeros(n, np.float64)
        for k in range(q):
            c = coef[k]
            if c != 0.0:
                row = K[k]
                for col in range(n):
                    acc[col] += c * np.float64(row[col])
        for col in range(n):
            G[col] += y[col] * acc[col]

    _NB = (local_smo_nb, grad_update_rows_nb)
    return _NB


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
        Cap on SMO steps.
    mode : {0, 1}
        0: SMO with WSS2; 1: planning-ahead SMO.
    pa_recent : {2, 3}
        Number of most recent working sets the PA-SMO selection may reuse.

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
    local_smo_nb, _ = _numba_impl()
    K = np.ascontiguousarray(K_BB)
    a, steps, gap = local_smo_nb(K, np.ascontiguousarray(y_B, dtype=np.float64),
                                 np.ascontiguousarray(alpha_B, dtype=np.float64),
                                 np.ascontiguousarray(G_B, dtype=np.float64),
                                 np.ascontiguousarray(C_B, dtype=np.float64),
                                 np.ascontiguousarray(diag_B, dtype=np.float64),
                                 float(eps), float(rel_eps), int(max_steps), int(mode),
                                 int(min(max(pa_recent, 1), 3)), float(eta))
    return a, np.array([steps], dtype=np.int64), np.array([gap], dtype=np.float64)


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
        fn = get_kernel("smo_local.cu", f"local_smo<{ctype(K.dtype)}>", be.device_id)
        fn((1,), (threads,), (
            K, cp.int32(q), y, a_out, G, C, d, f64(eps), f64(rel_eps), cp.int32(max_steps),
            cp.int32(mode), cp.int32(min(max(pa_recent, 1), 3)), f64(eta), steps, gap,
        ), shared_mem=5 * 8 * threads)
    return a_out, steps, gap


@register_op("grad_update_rows", "cpu")
def grad_update_rows_cpu(be, G, y, K_rows, coef):
    """In place ``G += y * (coef @ K_rows)``, accumulated in float64; rows with ``coef == 0`` skipped.

    Parameters
    ----------
    G : ndarray of shape (n,), float64 (updated in place)
    y : ndarray of shape (n,), float64
    K_rows : ndarray of shape (k, n), float32 or float64
    coef : ndarray of shape (k,), float64
    """
    np = be.xp
    _, grad_update_rows_nb = _numba_impl()
    grad_update_rows_nb(G, np.ascontiguousarray(y, dtype=np.float64), np.ascontiguousarray(K_rows),
                        np.ascontiguousarray(coef, dtype=np.float64))
    return G


@register_op("grad_update_rows", "gpu")
def grad_update_rows_gpu(be, G, y, K_rows, coef):
    """GPU twin of :func:`grad_update_rows_cpu` (``grad_update_rows`` in kernels/smo_local.cu)."""
    import cupy as cp

    from ..cuda_source import ctype, get_kernel

    with be.device:
        K = cp.ascontiguousarray(K_rows)
        k, n = int(K.shape[0]), int(K.shape[1])
        if k == 0 or n == 0:
            return G
        c = cp.ascontiguousarray(coef, dtype=cp.float64)
        yy = cp.ascontiguousarray(y, dtype=cp.float64)
        fn = get_kernel("smo_local.cu", f"grad_update_rows<{ctype(K.dtype)}>", be.device_id)
        threads = 256
        blocks = min(65535, (n + threads - 1) // threads)
        fn((blocks,), (threads,), (K, cp.int64(n), c, cp.int32(k), yy, G, cp.int64(n)))
    return G

"""Fused ops of the ALFPGM solver (:mod:`gpusvm._solvers.alfpgm`): projected-gradient pieces and pWSS.

``box_momentum_step``
    One step of the fast projected gradient method (FPGM; Beck and Teboulle's FISTA, Nesterov's
    momentum) onto the box ``[lo, hi]``: ``x = clip(z - g / L, lo, hi)`` and the extrapolated point
    ``z' = x + beta (x - x_prev)``, both in one pass over memory. GPU: ``box_momentum_step`` in
    ``kernels/pgd.cu`` (grid-stride, one thread per element); CPU twin: NumPy.

``alfpgm_subproblem``
    The whole working-set subproblem of ALFPGM (subproblem (3) of Aregbesola and Griva), written for
    the displacement ``d = alpha_B - alpha_B^old``::

        min_d  1/2 d^T Q d + lin^T d   s.t.  y^T d = 0,  lo <= d <= hi

    (``Q = Q_BB``, ``lin = G_B``, ``lo = -alpha_B``, ``hi = C_B - alpha_B``; the equality is the
    paper's ``y_B^T alpha_B = -y_N^T alpha_N`` written for the change, which keeps its residual free of
    cancellation). GPU: ONE thread block of ``alfpgm_subproblem`` (kernels/pgd.cu), one thread per
    variable, ``Q`` read column-wise (coalesced; ``Q`` is symmetric) with the iterate in shared memory;
    the whole solve is one launch, so there is no host synchronization inside it at all. CPU twin: the
    same algorithm, step for step, in Numba.

``pwss_assign``
    The greedy pairing of pWSS: row ``k`` of a score matrix ``S`` (p x m; row k belongs to the k-th
    ``i``, column c to the c-th ``j`` candidate, ``+inf`` = not allowed) takes the column with the
    smallest score not taken by rows ``0..k-1`` (ties: the smallest column), so that every index is used
    at most once per working set. GPU: one thread block (a block-wide argmin per row); CPU twin: Numba.

The subproblem algorithm (identical in both versions; the GPU test compares them)
---------------------------------------------------------------------------------
With ``g(d) = y^T d`` and the augmented Lagrangian ``L_mu(d, lam) = 1/2 d^T Q d + lin^T d - lam g(d)
+ mu/2 g(d)^2``, whose gradient is ``Q d + lin + y (mu g(d) - lam)``:

1. ``Lip = max(safety * lambda_1(Q), max_t Q_tt) + mu * nb``: ``lambda_1`` from ``n_power`` power
   iterations started at ``v_t = 1 + sin(t + 1) / 2`` (normalized; not the constant vector, which is
   orthogonal to the top eigenvector when the working set holds duplicate points with opposite labels),
   an estimate from below, hence the safety factor (1.05 by default) and the floor ``max_t Q_tt``
   (itself a lower bound of ``lambda_1``); ``mu * nb = mu * ||y||^2`` is the largest eigenvalue of the
   penalty's Hessian ``mu y y^T``. (The issue
   and the paper write this term as ``p mu`` with ``p`` the number of working-set variables.)
2. Outer loop (augmented Lagrangian), at most ``max_outer`` times: run the inner loop from the current
   ``d``; then ``lam <- lam - mu g(d)``; stop when ``max(nu, |g(d)|) < eps``.
3. Inner loop (FPGM with step ``1 / Lip``), at most ``max_inner`` steps, the momentum restarted at each
   outer iteration (``t = 1``): ``x = clip(z - grad(z) / Lip, lo, hi)``,
   ``t' = (1 + sqrt(1 + 4 t^2)) / 2``, ``z = x + (t - 1) / t' (x - x_prev)``. With ``restart`` (off by default)
   the momentum is also reset (``t = 1``, so ``z = x``) whenever ``(z - x)^T (x - x_prev) > 0``: the
   gradient-based adaptive restart of O'Donoghue and Candes ("Adaptive restart for accelerated gradient
   schemes", 2015). Not in the paper; offered as an option (it did not reduce the
   FPGM steps on 2,000-row subsets of a9a and w8a). Every ``check_every``
   steps (and at the last one) ``nu(x, lam)``, the largest violation of the box optimality conditions
   of ``L_mu(., lam)`` at ``x``, is computed with the exact gradient at ``x``: ``|grad_t|`` for a free
   ``x_t``, ``max(0, -grad_t)`` at ``lo_t`` and ``max(0, grad_t)`` at ``hi_t``; the loop stops when
   ``nu < eps``.
4. Snap: with ``lam`` the final multiplier, every variable that one more projected-gradient step
   ``clip(x - (Q x + lin - y lam) / Lip, lo, hi)`` would put on a bound is set to that bound (a box
   constraint that FPGM approaches only asymptotically; without this, values like 1e-9 stay where
   the solution has 0 or C).
5. Feasibility: the result is projected onto ``{y^T d = 0} ∩ [lo, hi]`` moving only the variables
   strictly inside the box: ``d_t = clip(x_t - s y_t, lo_t, hi_t)`` for free ``t`` (variables at a bound
   stay there), the scalar ``s`` found by 100 bisection steps on the non-increasing
   ``phi(s) = y^T d(s)``. Only when the free variables cannot absorb the residual
   (``|phi| > 1e-12 (1 + max |x|, |lo|, |hi|)`` after the bisection) are all variables moved (the plain
   Euclidean projection). So the global equality ``y^T alpha = 0`` holds to rounding however loosely
   the subproblem was solved, and the move is of the order of the residual ``|g(d)| < eps``. Keeping
   bounded variables on their bounds matters: moving them off by ``s`` (tiny) leaves alphas like 1e-7
   that violate the KKT conditions of the full problem by a lot and are never cleaned up.

Counters (added to ``stats``, int64[4]): inner steps, outer iterations, inner loops that hit
``max_inner`` with ``nu >= eps``, subproblems whose outer loop hit ``max_outer`` without converging.
``info`` (float64[3]) receives ``nu`` and ``|g|`` of the last outer iteration and ``Lip``.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..base import register_op

MAX_NB = 1024  # one CUDA thread per working-set variable, one thread block
POWER_SAFETY = 1.05
BISECTION_STEPS = 100


@numba.njit(cache=True)
def _matvec(Q, v, out):
    # out = Q v with Q symmetric, read column-wise as the CUDA kernel does (same summation order)
    nb = v.shape[0]
    for t in range(nb):
        out[t] = 0.0
    for j in range(nb):
        vj = v[j]
        for t in range(nb):
            out[t] += np.float64(Q[j, t]) * vj
    return out


@numba.njit(cache=True)
def _ydot(y, v):
    s = 0.0
    for t in range(v.shape[0]):
        s += y[t] * v[t]
    return s


@numba.njit(cache=True)
def _nu(Q, lin, y, lo, hi, x, lam, mu, w):
    # largest violation of the box optimality conditions of L_mu(., lam) at x; also returns g(x)
    _matvec(Q, x, w)
    gx = _ydot(y, x)
    shift = mu * gx - lam
    nu = 0.0
    for t in range(x.shape[0]):
        gr = w[t] + lin[t] + y[t] * shift
        if x[t] <= lo[t]:
            v = -gr if gr < 0.0 else 0.0
        elif x[t] >= hi[t]:
            v = gr if gr > 0.0 else 0.0
        else:
            v = abs(gr)
        if v > nu:
            nu = v
    return nu, gx


@numba.njit(cache=True)
def subproblem_nb(Q, lin, y, lo, hi, lam0, mu, eps, max_inner, max_outer, check_every, n_power,
                  safety, restart, stats, info):
    nb = lin.shape[0]
    w = np.empty(nb)
    v = np.empty(nb)
    # ---- step size from power iterations on Q ---------------------------------------------
    s = 0.0
    for t in range(nb):
        v[t] = 1.0 + 0.5 * math.sin(t + 1.0)
        s += v[t] * v[t]
    s = math.sqrt(s)
    for t in range(nb):
        v[t] /= s
    est = 0.0
    dmax = 0.0
    for t in range(nb):
        dmax = max(dmax, np.float64(Q[t, t]))
    for _ in range(n_power):
        _matvec(Q, v, w)
        s = 0.0
        for t in range(nb):
            s += w[t] * w[t]
        nrm = math.sqrt(s)
        if not (nrm > 0.0):
            break
        est = nrm
        for t in range(nb):
            v[t] = w[t] / nrm
    lip = max(safety * est, dmax) + mu * nb
    if not (lip > 0.0):
        lip = 1.0
    inv_l = 1.0 / lip
    # ---- augmented Lagrangian outer loop, FPGM inner loop ---------------------------------
    x = np.zeros(nb)
    xp_ = np.zeros(nb)
    z = np.zeros(nb)
    lam = lam0
    nu = np.inf
    gx = 0.0
    n_inner = 0
    n_outer = 0
    inner_fail = 0
    outer_ok = False
    for _outer in range(max_outer):
        n_outer += 1
        for t in range(nb):
            xp_[t] = x[t]
            z[t] = x[t]
        tk = 1.0
        k = 0
        while k < max_inner:
            k += 1
            _matvec(Q, z, w)
            shift = mu * _ydot(y, z) - lam
            rs = 0.0
            for t in range(nb):
                gr = w[t] + lin[t] + y[t] * shift
                xn = z[t] - inv_l * gr
                if xn < lo[t]:
                    xn = lo[t]
                elif xn > hi[t]:
                    xn = hi[t]
                rs += (z[t] - xn) * (xn - xp_[t])
                v[t] = xn
            if restart and rs > 0.0:
                tk = 1.0  # adaptive restart: the momentum points uphill
            tn = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * tk * tk))
            beta = (tk - 1.0) / tn
            tk = tn
            for t in range(nb):
                xn = v[t]
                z[t] = xn + beta * (xn - xp_[t])
                xp_[t] = xn
            if k % check_every == 0 or k == max_inner:
                nu, gx = _nu(Q, lin, y, lo, hi, xp_, lam, mu, w)
                if nu < eps:
                    break
        n_inner += k
        if not (nu < eps):
            inner_fail += 1
        for t in range(nb):
            x[t] = xp_[t]
        lam = lam - mu * gx
        if max(nu, abs(gx)) < eps:
            outer_ok = True
            break
    # ---- snap: one projected-gradient step from x, at the final multiplier, decides the bounds --
    # grad L_mu(x, lam_old) = Q x + lin - y lam_new (gx was computed at x by the last check)
    _matvec(Q, x, w)
    for t in range(nb):
        gr = w[t] + lin[t] - y[t] * lam
        u = x[t] - inv_l * gr
        if x[t] > lo[t] and u <= lo[t]:
            x[t] = lo[t]
        elif x[t] < hi[t] and u >= hi[t]:
            x[t] = hi[t]
    # ---- projection onto {y^T d = 0} within the box, moving the free variables only ---------
    big = 0.0
    for t in range(nb):
        c = abs(x[t]) + max(abs(lo[t]), abs(hi[t]))
        if c > big:
            big = c
    d = np.empty(nb)
    for sweep in range(2):  # sweep 0: free variables only; sweep 1 (fallback): all variables
        a = -big - 1.0
        b = big + 1.0
        for _ in range(BISECTION_STEPS):
            s = 0.5 * (a + b)
            phi = 0.0
            for t in range(nb):
                u = x[t]
                if sweep == 1 or (lo[t] < u and u < hi[t]):
                    u = u - s * y[t]
                    if u < lo[t]:
                        u = lo[t]
                    elif u > hi[t]:
                        u = hi[t]
                phi += y[t] * u
            if phi > 0.0:
                a = s
            else:
                b = s
        s = 0.5 * (a + b)
        phi = 0.0
        for t in range(nb):
            u = x[t]
            if sweep == 1 or (lo[t] < u and u < hi[t]):
                u = u - s * y[t]
                if u < lo[t]:
                    u = lo[t]
                elif u > hi[t]:
                    u = hi[t]
            d[t] = u
            phi += y[t] * u
        if abs(phi) <= 1e-12 * (1.0 + big):
            break
    stats[0] += n_inner
    stats[1] += n_outer
    stats[2] += inner_fail
    stats[3] += 0 if outer_ok else 1
    info[0] = nu
    info[1] = abs(gx)
    info[2] = lip
    return d, lam


@numba.njit(cache=True)
def pwss_assign_nb(S):
    p, m = S.shape
    used = np.zeros(m, np.bool_)
    out = np.full(p, -1, np.int64)
    for k in range(p):
        best = np.inf
        bj = -1
        for c in range(m):
            if not used[c]:
                v = S[k, c]
                if v < best:
                    best = v
                    bj = c
        if bj >= 0:
            out[k] = bj
            used[bj] = True
    return out


@numba.njit(cache=True)
def pwss_pairs_nb(K, slots, cand, qi, qc, di, dc, ok_i, ok_c, tau):
    p = slots.shape[0]
    m = cand.shape[0]
    used = np.zeros(m, np.bool_)
    out = np.full(p, -1, np.int64)
    for k in range(p):
        if not ok_i[k]:
            continue
        row = K[slots[k]]
        q_k = qi[k]
        d_k = di[k]
        best = np.inf
        bj = -1
        for c in range(m):
            if used[c] or not ok_c[c]:
                continue
            b = q_k - qc[c]
            if not (b > 0.0):
                continue
            a = (d_k + dc[c]) - 2.0 * np.float64(row[cand[c]])
            if not (a > 0.0):
                a = tau
            v = -(b * b) / a
            if v < best:
                best = v
                bj = c
        if bj >= 0:
            out[k] = bj
            used[bj] = True
    return out


def _threads_for(nb):
    """Threads of the one-block launch: the power of two >= max(nb, 32); at most 1,024 (MAX_NB), the
    kernel's ``__launch_bounds__``, which a larger launch would exceed."""
    _check_nb(nb)
    t = 32
    while t < nb:
        t *= 2
    return t


def _check_nb(nb):
    if nb < 1 or nb > MAX_NB:
        raise ValueError(f"alfpgm_subproblem solves working sets of 1 to {MAX_NB} variables, got {nb}")


# ---- box_momentum_step ------------------------------------------------------------------------

@register_op("box_momentum_step", "cpu")
def box_momentum_step_cpu(be, z, g, x_prev, lo, hi, inv_L, beta, out_x=None, out_z=None):
    """One FPGM step onto a box: ``x = clip(z - inv_L * g, lo, hi)``, ``z' = x + beta (x - x_prev)``.

    Parameters
    ----------
    z, g, x_prev, lo, hi : ndarray of shape (m,), float32 or float64
        Extrapolated point, gradient at ``z``, previous iterate, box bounds.
    inv_L : float
        Step size ``1 / L``.
    beta : float
        Momentum coefficient ``(t_k - 1) / t_{k+1}``.
    out_x, out_z : ndarray of shape (m,), optional
        Output buffers; either may alias ``z`` or ``g``, but ``out_x`` must not alias ``x_prev``.

    Returns
    -------
    x, z_new : ndarray of shape (m,)
    """
    np = be.xp
    x = np.subtract(z, inv_L * g, out=out_x)
    np.clip(x, lo, hi, out=x)
    z_new = np.subtract(x, x_prev, out=out_z)
    z_new *= beta
    z_new += x
    return x, z_new


@register_op("box_momentum_step", "gpu")
def box_momentum_step_gpu(be, z, g, x_prev, lo, hi, inv_L, beta, out_x=None, out_z=None):
    """GPU twin of :func:`box_momentum_step_cpu` (``box_momentum_step`` in kernels/pgd.cu)."""
    import cupy as cp

    from ..cuda_source import ctype, get_kernel

    with be.device:
        dt = z.dtype
        args = [cp.ascontiguousarray(a, dtype=dt) for a in (z, g, x_prev, lo, hi)]
        m = int(z.shape[0])
        from . import check_raw_array

        x = cp.empty(m, dtype=dt) if out_x is None else out_x
        zn = cp.empty(m, dtype=dt) if out_z is None else out_z
        check_raw_array(x, dt, m, "box_momentum_step", "out_x")
        check_raw_array(zn, dt, m, "box_momentum_step", "out_z")
        if m == 0:
            return x, zn
        T = dt.type
        fn = get_kernel("pgd.cu", f"box_momentum_step<{ctype(dt)}>", be.device_id)
        threads = 256
        blocks = min(65535, (m + threads - 1) // threads)
        fn((blocks,), (threads,), (*args, T(inv_L), T(beta), x, zn, cp.int64(m)))
    return x, zn


# ---- alfpgm_subproblem ------------------------------------------------------------------------

@register_op("alfpgm_subproblem", "cpu")
def alfpgm_subproblem_cpu(be, Q, lin, y, lo, hi, lam, stats, info, *, mu, eps, max_inner, max_outer,
                          check_every=10, n_power=20, safety=POWER_SAFETY, restart=False):
    """Solve the ALFPGM working-set subproblem (see the module docstring).

    Parameters
    ----------
    Q : ndarray of shape (nb, nb), float32 or float64
        ``Q_BB = (y_B y_B^T) * K_BB`` (symmetric positive semi-definite), ``nb <= 1024``.
    lin, y, lo, hi : ndarray of shape (nb,), float64
        Gradient ``G_B`` of the dual at the current point, labels (+-1), and the box of the
        displacement (``lo <= 0 <= hi``).
    lam : ndarray of shape (1,), float64
        Multiplier of the equality; read as the start value and overwritten with the final one.
    stats : ndarray of shape (4,), int64
        Counters, incremented in place (see the module docstring).
    info : ndarray of shape (3,), float64
        Overwritten with (nu, |g(d)|, Lipschitz constant) of the last outer iteration.
    mu : float
        Augmented Lagrangian parameter.
    eps : float
        Tolerance of the inner stop (``nu < eps``) and of the outer stop (``max(nu, |g|) < eps``).
    max_inner, max_outer : int
        Iteration limits of the inner (FPGM) and outer (multiplier) loops.
    check_every : int
        The inner stopping test runs every ``check_every`` steps.
    n_power : int
        Power iterations for ``lambda_1(Q)``.
    safety : float
        Factor on the power-iteration estimate.
    restart : bool
        Adaptive (gradient) restart of the momentum.

    Returns
    -------
    d : ndarray of shape (nb,), float64
        The displacement, feasible: ``lo <= d <= hi`` and ``y^T d = 0`` to rounding.
    """
    np = be.xp
    nb = int(lin.shape[0])
    _check_nb(nb)
    f64 = np.float64
    d, lam_new = subproblem_nb(np.ascontiguousarray(Q), np.ascontiguousarray(lin, dtype=f64),
                               np.ascontiguousarray(y, dtype=f64), np.ascontiguousarray(lo, dtype=f64),
                               np.ascontiguousarray(hi, dtype=f64), float(lam[0]), float(mu), float(eps),
                               int(max_inner), int(max_outer), max(1, int(check_every)), int(n_power),
                               float(safety), bool(restart), stats, info)
    lam[0] = lam_new
    return d


@register_op("alfpgm_subproblem", "gpu")
def alfpgm_subproblem_gpu(be, Q, lin, y, lo, hi, lam, stats, info, *, mu, eps, max_inner, max_outer,
                          check_every=10, n_power=20, safety=POWER_SAFETY, restart=False):
    """GPU twin of :func:`alfpgm_subproblem_cpu`: one thread block of ``alfpgm_subproblem``
    (kernels/pgd.cu); no host synchronization (``lam``, ``stats`` and ``info`` stay on the device)."""
    import cupy as cp

    from ..cuda_source import ctype, get_kernel

    from . import check_raw_array

    nb = int(lin.shape[0])
    _check_nb(nb)
    check_raw_array(lam, cp.float64, 1, "alfpgm_subproblem", "lam")
    check_raw_array(stats, cp.int64, 4, "alfpgm_subproblem", "stats")
    check_raw_array(info, cp.float64, 3, "alfpgm_subproblem", "info")
    with be.device:
        Qc = cp.ascontiguousarray(Q)
        if Qc.dtype not in (cp.float32, cp.float64):
            Qc = Qc.astype(cp.float64)
        f64 = cp.float64
        vecs = [cp.ascontiguousarray(a, dtype=f64) for a in (lin, y, lo, hi)]
        d = cp.empty(nb, dtype=f64)
        threads = _threads_for(nb)
        fn = get_kernel("pgd.cu", f"alfpgm_subproblem<{ctype(Qc.dtype)}>", be.device_id)
        # shared: x, x_prev, z, w (4 * nb doubles) + reduction scratch (32 doubles)
        shared = (4 * nb + 32) * 8
        fn((1,), (threads,), (
            Qc, cp.int32(nb), *vecs, d, lam, f64(mu), f64(eps), cp.int32(max_inner),
            cp.int32(max_outer), cp.int32(max(1, int(check_every))), cp.int32(n_power), f64(safety),
            cp.int32(1 if restart else 0), stats, info,
        ), shared_mem=shared)
    return d


# ---- pwss_assign --------------------------------------------------------------------------------

@register_op("pwss_assign", "cpu")
def pwss_assign_cpu(be, S):
    """Greedy pairing: row ``k`` of ``S`` takes its smallest finite entry among columns no earlier row took.

    Parameters
    ----------
    S : ndarray of shape (p, m), float64
        Scores (``+inf``: pairing not allowed).

    Returns
    -------
    cols : ndarray of shape (p,), int64
        The column taken by each row, or -1 when none is left.
    """
    np = be.xp
    return pwss_assign_nb(np.ascontiguousarray(S, dtype=np.float64))


@register_op("pwss_assign", "gpu")
def pwss_assign_gpu(be, S):
    """GPU twin of :func:`pwss_assign_cpu` (``pwss_assign`` in kernels/pgd.cu, one thread block)."""
    import cupy as cp

    from ..cuda_source import get_kernel

    with be.device:
        Sc = cp.ascontiguousarray(S, dtype=cp.float64)
        p, m = int(Sc.shape[0]), int(Sc.shape[1])
        out = cp.full(p, -1, dtype=cp.int64)
        if p == 0 or m == 0:
            return out
        used = cp.zeros(m, dtype=cp.int32)
        fn = get_kernel("pgd.cu", "pwss_assign<double>", be.device_id)
        fn((1,), (1024,), (Sc, cp.int32(p), cp.int64(m), used, out))
    return out


# ---- pwss_pairs ---------------------------------------------------------------------------------

@register_op("pwss_pairs", "cpu")
def pwss_pairs_cpu(be, K, slots, cand, q_i, q_c, d_i, d_c, ok_i, ok_c, tau=1e-12):
    """pWSS pairing with the scores computed on the fly from Gram rows (no p x m score matrix).

    Row ``k`` (the k-th ``i``, in order) takes, among the candidate columns ``c`` no earlier row took,
    the one minimizing ``-b^2 / a`` with ``b = q_i[k] - q_c[c] > 0`` and
    ``a = d_i[k] + d_c[c] - 2 K[slots[k], cand[c]]`` (``a <= 0`` replaced by ``tau``); ties: the smallest
    ``c``. The same result as :func:`pwss_assign_cpu` on the explicit score matrix, without forming it
    (which cost 30-40% of a round on 5,000-row a9a).

    Parameters
    ----------
    K : ndarray of shape (r, n), float32 or float64
        Gram rows, e.g. the store of a GramRowCache.
    slots : int ndarray of shape (p,)
        Row of ``K`` of each ``i``.
    cand : int ndarray of shape (m,)
        Column (training index) of each ``j`` candidate.
    q_i, d_i : ndarray of shape (p,), float64
        ``-y G`` and ``K_ii`` of the ``i``.
    q_c, d_c : ndarray of shape (m,), float64
        The same for the candidates.
    ok_i, ok_c : bool ndarray of shape (p,) and (m,)
        Which rows / candidates may be used.
    tau : float

    Returns
    -------
    cols : ndarray of shape (p,), int64
        Index into ``cand`` taken by each row, or -1.
    """
    np = be.xp
    f64 = np.float64
    return pwss_pairs_nb(K if K.flags.c_contiguous else np.ascontiguousarray(K),
                         np.ascontiguousarray(slots, dtype=np.int64), np.ascontiguousarray(cand, dtype=np.int64),
                         np.ascontiguousarray(q_i, dtype=f64), np.ascontiguousarray(q_c, dtype=f64),
                         np.ascontiguousarray(d_i, dtype=f64), np.ascontiguousarray(d_c, dtype=f64),
                         np.ascontiguousarray(ok_i, dtype=np.bool_), np.ascontiguousarray(ok_c, dtype=np.bool_),
                         float(tau))


@register_op("pwss_pairs", "gpu")
def pwss_pairs_gpu(be, K, slots, cand, q_i, q_c, d_i, d_c, ok_i, ok_c, tau=1e-12):
    """GPU twin of :func:`pwss_pairs_cpu` (``pwss_pairs`` in kernels/pgd.cu, one thread block)."""
    import cupy as cp

    from ..cuda_source import ctype, get_kernel

    with be.device:
        Kc = K if K.flags.c_contiguous else cp.ascontiguousarray(K)
        if Kc.dtype not in (cp.float32, cp.float64):
            Kc = Kc.astype(cp.float64)
        p, m = int(slots.shape[0]), int(cand.shape[0])
        out = cp.full(p, -1, dtype=cp.int64)
        if p == 0 or m == 0:
            return out
        f64 = cp.float64
        used = cp.zeros(m, dtype=cp.int32)
        fn = get_kernel("pgd.cu", f"pwss_pairs<{ctype(Kc.dtype)}>", be.device_id)
        fn((1,), (1024,), (
            Kc, cp.int64(Kc.shape[1]), cp.ascontiguousarray(slots, dtype=cp.int64),
            cp.ascontiguousarray(cand, dtype=cp.int64), cp.ascontiguousarray(q_i, dtype=f64),
            cp.ascontiguousarray(q_c, dtype=f64), cp.ascontiguousarray(d_i, dtype=f64),
            cp.ascontiguousarray(d_c, dtype=f64), cp.ascontiguousarray(ok_i, dtype=cp.int8),
            cp.ascontiguousarray(ok_c, dtype=cp.int8), f64(tau), cp.int32(p), cp.int64(m), used, out))
    return out

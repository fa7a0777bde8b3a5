"""Fused op ``smo_pairwise`` (CPU only): the whole pair-at-a-time SMO loop of LIBSVM in Numba.

One call solves the binary C-SVC dual

    min_alpha  f(alpha) = 1/2 alpha^T Q alpha - sum(alpha),   Q_ij = y_i y_j k(x_i, x_j),
    s.t.       0 <= alpha_i <= C_i,  y^T alpha = 0,

with the algorithm of LIBSVM (Chang & Lin, "LIBSVM: a library for support vector machines", ACM TIST
2011), written here in our own words:

* second-order working-set selection WSS2 (Fan, Chen & Lin, "Working set selection using second order
  information for training support vector machines", JMLR 6, 2005): i maximises -y_t G_t over I_up,
  j minimises -b_it^2 / a_it over t in I_low with -y_t G_t < -y_i G_i, where
  a_it = K_ii + K_tt - 2 K_it (clipped at tau = 1e-12) and b_it = -y_i G_i + y_t G_t;
* the analytic two-variable update clipped to the box [0, C_i] x [0, C_j];
* shrinking with LIBSVM's rule (every min(n, 1000) steps), one unshrink with gradient reconstruction
  when the gap first falls below 10 * tol, and a final check on all variables;
* a Gram-row cache with a byte budget and least-recently-used eviction, kept inside Numba. Rows hold
  Q values (signed by the labels) for the active variables, in float32 as LIBSVM's Qfloat, or float64.
  Rows are computed in Numba from dense or CSR X for the linear, poly, rbf and sigmoid grams.

With ``planning=True`` it runs the planning-ahead SMO (PA-SMO) of Glasmachers ("The planning-ahead SMO
algorithm", 2008); see :func:`_solve` for what exactly is implemented.

The GPU has no twin of this op: on the GPU the batched decomposition (``smo_batched``) is used.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..base import register_op

TAU = 1e-12
PA_ETA = 0.9  # eta of the planning-ahead working-set safeguard (see _solve)
PA_COND = 1e-8  # planning needs det(H) > PA_COND * prod(diag(H)) (the plane is not degenerate)


# ---------------------------------------------------------------------------------------------------
# Gram values
# ---------------------------------------------------------------------------------------------------
@numba.njit(cache=True, inline="always")
def _gram_value(dot, sqi, sqj, code, gamma, coef0, degree):
    if code == 0:
        return dot
    if code == 1:
        base = gamma * dot + coef0
        r = 1.0
        for _ in range(degree):
            r *= base
        return r
    if code == 2:
        d = sqi + sqj - 2.0 * dot
        if d < 0.0:
            d = 0.0
        return math.exp(-gamma * d)
    return math.tanh(gamma * dot + coef0)


# reassoc lets LLVM vectorize the dense dot-product reductions (3.0 s -> 2.1 s on dense phishing);
# each dot product then sums in a different order, a rounding-level change.
@numba.njit(cache=True, fastmath={"reassoc"})
def _fill_q(i, out, act, k0, k1, sparse, Xd, indptr, indices, data, sq, y, code, gamma, coef0,
            degree, buf):
    """out[t] = y_i y_t k(x_i, x_t) for t = act[k0:k1] (other entries of ``out`` untouched)."""
    yi = y[i]
    sqi = sq[i]
    if sparse:
        for p in range(indptr[i], indptr[i + 1]):
            buf[indices[p]] = data[p]
        for k in range(k0, k1):
            t = act[k]
            s = 0.0
            for p in range(indptr[t], indptr[t + 1]):
                s += data[p] * buf[indices[p]]
            out[t] = yi * y[t] * _gram_value(s, sqi, sq[t], code, gamma, coef0, degree)
        for p in range(indptr[i], indptr[i + 1]):
            buf[indices[p]] = 0.0
    else:
        d = Xd.shape[1]
        xi = Xd[i]
        for k in range(k0, k1):
            t = act[k]
            xt = Xd[t]
            s = 0.0
            for f in range(d):
                s += xi[f] * xt[f]
            out[t] = yi * y[t] * _gram_value(s, sqi, sq[t], code, gamma, coef0, degree)


# ---------------------------------------------------------------------------------------------------
# LRU row cache (state in arrays so that it lives inside compiled code)
# ---------------------------------------------------------------------------------------------------
@numba.njit(cache=True)
def _get_row(i, protect, active_size, act, store, slot_of, owner, stamp, counters,
             sparse, Xd, indptr, indices, data, sq, y, code, gamma, coef0, degree, buf):
    """Slot of Q row ``i`` (valid on the active variables), computing it on a miss.

    ``counters``: [clock, n_used, hits, misses]. ``protect``: a slot that must not be evicted.
    """
    counters[0] += 1
    s = slot_of[i]
    if s >= 0:
        stamp[s] = counters[0]
        counters[2] += 1
        return s
    counters[3] += 1
    cap = store.shape[0]
    if counters[1] < cap:
        s = counters[1]
        counters[1] += 1
    else:
        best = -1
        bstamp = np.int64(2**62)
        for c in range(cap):
            if c != protect and stamp[c] < bstamp:
                bstamp = stamp[c]
                best = c
        s = best
        slot_of[owner[s]] = -1
    owner[s] = i
    slot_of[i] = s
    stamp[s] = counters[0]
    _fill_q(i, store[s], act, 0, active_size, sparse, Xd, indptr, indices, data, sq, y, code,
            gamma, coef0, degree, buf)
    return s


@numba.njit(cache=True)
def _clear_cache(slot_of, owner, counters):
    for c in range(counters[1]):
        if owner[c] >= 0:
            slot_of[owner[c]] = -1
        owner[c] = -1
    counters[1] = 0


# ---------------------------------------------------------------------------------------------------
# Helpers of the solver
# ---------------------------------------------------------------------------------------------------
@numba.njit(cache=True)
def _reconstruct(active_size, act, alpha, C, G, Gbar, tmp, sparse, Xd, indptr, indices, data, sq, y,
                 code, gamma, coef0, degree, buf):
    """Gradient of the inactive variables from G_bar and the free variables (LIBSVM's rule)."""
    n = alpha.shape[0]
    if active_size == n:
        return
    for k in range(active_size, n):
        t = act[k]
        G[t] = Gbar[t] - 1.0
    for k in range(active_size):
        i = act[k]
        if 0.0 < alpha[i] < C[i]:
            _fill_q(i, tmp, act, active_size, n, sparse, Xd, indptr, indices, data, sq, y, code,
                    gamma, coef0, degree, buf)
            a = alpha[i]
            for k2 in range(active_size, n):
                t = act[k2]
                G[t] += a * tmp[t]


@numba.njit(cache=True)
def _be_shrunk(t, gmax1, gmax2, alpha, C, G, y):
    if alpha[t] >= C[t]:
        if y[t] > 0:
            return -G[t] > gmax1
        return -G[t] > gmax2
    if alpha[t] <= 0.0:
        if y[t] > 0:
            return G[t] > gmax2
        return G[t] > gmax1
    return False


@numba.njit(cache=True)
def _pair_dir(p, q, y):
    """Coefficient of alpha_q in the feasible direction e_p + s e_q (y^T d = 0)."""
    return -y[p] * y[q]


@numba.njit(cache=True)
def _clipped_gain(p, q, a, alpha, C, G, y):
    """Gain (decrease of f) of the exact line search along e_p + s e_q, clipped to the box; and
    whether the Newton step is free (inside the box)."""
    s = _pair_dir(p, q, y)
    g = -(G[p] + s * G[q])
    if a <= 0.0:
        a = TAU
    mu = g / a
    lo = -alpha[p]
    hi = C[p] - alpha[p]
    if s > 0:
        lo2 = -alpha[q]
        hi2 = C[q] - alpha[q]
    else:
        lo2 = alpha[q] - C[q]
        hi2 = alpha[q]
    if lo2 > lo:
        lo = lo2
    if hi2 < hi:
        hi = hi2
    free = lo < mu < hi
    m = mu
    if m < lo:
        m = lo
    if m > hi:
        m = hi
    return m * g - 0.5 * a * m * m, free


# ---------------------------------------------------------------------------------------------------
# The solver
# ---------------------------------------------------------------------------------------------------
@numba.njit(cache=True)
def _solve(sparse, Xd, indptr, indices, data, sq, y, C, alpha, QD, code, gamma, coef0, degree,
           store, tol, max_iter, shrinking, planning, pa_recent, eta, verbose):
    """SMO (LIBSVM) or planning-ahead SMO on the binary C-SVC dual; ``alpha`` is updated in place.

    Planning-ahead SMO (Glasmachers 2008) as implemented here
    ---------------------------------------------------------
    Each step moves alpha along d = e_p + s e_q (s = -y_p y_q) for a working set {p, q}. After a
    *free* SMO step (the Newton step along d_prev was not clipped, so the gradient along d_prev is
    ~0), the next step does not take the Newton step along the WSS2 direction v; it takes the step mu
    that is optimal when followed by Newton steps along the most recent working sets: the first
    component of the Newton step of the 2-d (``pa_recent=2``: v and the previous direction) or 3-d
    (``pa_recent=3``: v and the two previous directions) sub-problem, mu = [H^-1 g]_0 with
    H_ab = d_a^T Q d_b and g_a = -d_a^T G. If alpha + mu v leaves or touches the box, or H is
    (nearly) singular, the plain SMO step is taken instead (a 3-d plan falls back to the 2-d plan
    first). A planning step is followed by the modified working-set selection: the candidates are
    the WSS2 pair and the planned partner working sets; with gain1 the gain of the planning step
    and g(B) the clipped Newton gain of candidate B, the WSS2 pair is kept only when
    gain1 + g(WSS2) >= eta * (gain1 + max_partner g(B)); otherwise the best partner is taken, which
    keeps the gain of the double step positive (eta = 0.9). Planning only happens right after a free
    SMO step, so planning steps never follow each other.

    Choices made here (the paper's text was not at hand while writing this; the rules above were
    rebuilt from its abstract ideas and should be checked against it): eta = 0.9; H counts as
    singular when det(H) <= 1e-8 * prod(diag(H)); "hits the box" means the planned alpha_i or alpha_j
    would reach or cross 0 or C (strictly inside is required); the planned step must go in the
    ascent direction of v (mu * g_v > 0); with ``pa_recent=3`` the partner candidates after a planning
    step are both earlier working sets, and the history is cleared whenever shrinking changes the
    active set (rows of shrunk variables are not kept up to date).
    """
    n = y.shape[0]
    G = np.empty(n)
    Gbar = np.zeros(n)
    tmp = np.zeros(n)
    dfeat = Xd.shape[1] if not sparse else 0
    nbuf = 1
    if sparse:
        nbuf = 1
        for p in range(indices.shape[0]):
            if indices[p] + 1 > nbuf:
                nbuf = indices[p] + 1
    buf = np.zeros(nbuf)
    act = np.arange(n)
    pos = np.arange(n)
    cap = store.shape[0]
    slot_of = -np.ones(n, dtype=np.int64)
    owner = -np.ones(cap, dtype=np.int64)
    stamp = np.zeros(cap, dtype=np.int64)
    counters = np.zeros(4, dtype=np.int64)  # clock, used, hits, misses
    active_size = n

    # ---- initial gradient (warm start: rows of the nonzero alphas) ----
    for t in range(n):
        G[t] = -1.0
    for i in range(n):
        if alpha[i] > 0.0:
            si = _get_row(i, -1, active_size, act, store, slot_of, owner, stamp, counters, sparse,
                          Xd, indptr, indices, data, sq, y, code, gamma, coef0, degree, buf)
            Qi = store[si]
            a = alpha[i]
            for t in range(n):
                G[t] += a * Qi[t]
            if alpha[i] >= C[i]:
                for t in range(n):
                    Gbar[t] += C[i] * Qi[t]

    # ---- planning-ahead state: history of the 3 most recent directions ----
    h_p = -np.ones(3, dtype=np.int64)
    h_q = -np.ones(3, dtype=np.int64)
    h_a = np.zeros(3)
    h_c = np.zeros(3)  # h_c[k] = d_k^T Q d_{k+1} (d_0 most recent)
    h_cv = np.zeros(3)  # cross terms of the current direction with the history
    last_free = False
    last_plan = False
    plan_gain1 = 0.0
    n_partner = 0
    part = np.zeros(2, dtype=np.int64)  # history slots (after the shift) of the planned partners
    n_plan = 0
    n_partner_taken = 0

    it = 0
    status = 0
    unshrunk = False
    counter = min(n, 1000) + 1
    while True:
        if max_iter >= 0 and it >= max_iter:
            status = 1
            break
        counter -= 1
        if counter == 0:
            counter = min(n, 1000)
            if shrinking:
                # ---- LIBSVM's do_shrinking ----
                gmax1 = -np.inf
                gmax2 = -np.inf
                for k in range(active_size):
                    t = act[k]
                    up = alpha[t] < C[t]
                    lowok = alpha[t] > 0.0
                    if y[t] > 0:
                        if up and -G[t] > gmax1:
                            gmax1 = -G[t]
                        if lowok and G[t] > gmax2:
                            gmax2 = G[t]
                    else:
                        if up and -G[t] > gmax2:
                            gmax2 = -G[t]
                        if lowok and G[t] > gmax1:
                            gmax1 = G[t]
                old_size = active_size
                if (not unshrunk) and gmax1 + gmax2 <= tol * 10.0:
                    unshrunk = True
                    _reconstruct(active_size, act, alpha, C, G, Gbar, tmp, sparse, Xd, indptr,
                                 indices, data, sq, y, code, gamma, coef0, degree, buf)
                    if active_size < n:
                        _clear_cache(slot_of, owner, counters)
                    active_size = n
                k = 0
                while k < active_size:
                    t = act[k]
                    if _be_shrunk(t, gmax1, gmax2, alpha, C, G, y):
                        active_size -= 1
                        while active_size > k:
                            u = act[active_size]
                            if not _be_shrunk(u, gmax1, gmax2, alpha, C, G, y):
                                act[k] = u
                                act[active_size] = t
                                pos[u] = k
                                pos[t] = active_size
                                break
                            active_size -= 1
                    k += 1
                if active_size != old_size:
                    h_p[:] = -1
                    last_free = False
                    last_plan = False

        # ---- WSS2 (Fan, Chen & Lin 2005) ----
        i = -1
        j = -1
        for attempt in range(2):
            gmax = -np.inf
            i = -1
            for k in range(active_size):
                t = act[k]
                if y[t] > 0:
                    if alpha[t] < C[t] and -G[t] >= gmax:
                        gmax = -G[t]
                        i = t
                else:
                    if alpha[t] > 0.0 and G[t] >= gmax:
                        gmax = G[t]
                        i = t
            j = -1
            gmax2 = -np.inf
            if i >= 0:
                si = _get_row(i, -1, active_size, act, store, slot_of, owner, stamp, counters,
                              sparse, Xd, indptr, indices, data, sq, y, code, gamma, coef0, degree,
                              buf)
                Qi = store[si]
                yi = y[i]
                QDi = QD[i]
                obj_min = np.inf
                for k in range(active_size):
                    t = act[k]
                    if y[t] > 0:
                        if alpha[t] > 0.0:
                            gd = gmax + G[t]
                            if G[t] >= gmax2:
                                gmax2 = G[t]
                            if gd > 0.0:
                                quad = QDi + QD[t] - 2.0 * yi * Qi[t]
                                if quad <= 0.0:
                                    quad = TAU
                                ob = -(gd * gd) / quad
                                if ob <= obj_min:
                                    j = t
                                    obj_min = ob
                    else:
                        if alpha[t] < C[t]:
                            gd = gmax - G[t]
                            if -G[t] >= gmax2:
                                gmax2 = -G[t]
                            if gd > 0.0:
                                quad = QDi + QD[t] + 2.0 * yi * Qi[t]
                                if quad <= 0.0:
                                    quad = TAU
                                ob = -(gd * gd) / quad
                                if ob <= obj_min:
                                    j = t
                                    obj_min = ob
            done = (i < 0) or (j < 0) or (gmax + gmax2 <= tol)
            if not done:
                break
            if attempt == 0 and active_size < n:
                # final check on all variables
                _reconstruct(active_size, act, alpha, C, G, Gbar, tmp, sparse, Xd, indptr, indices,
                             data, sq, y, code, gamma, coef0, degree, buf)
                _clear_cache(slot_of, owner, counters)
                active_size = n
                h_p[:] = -1
                last_free = False
                last_plan = False
                counter = 1
                continue
            i = -1
            break
        if i < 0:
            break

        it += 1

        # ---- planning-ahead: modified working-set selection after a planning step ----
        if planning and last_plan:
            gw, _ = _clipped_gain(i, j, QD[i] + QD[j] - 2.0 * y[i] * y[j] *
                                  store[slot_of[i]][j], alpha, C, G, y)
            best = -np.inf
            bp = -1
            bq = -1
            for r in range(n_partner):
                hp = h_p[part[r]]
                hq = h_q[part[r]]
                if hp < 0 or pos[hp] >= active_size or pos[hq] >= active_size:
                    continue
                gr, _ = _clipped_gain(hp, hq, h_a[part[r]], alpha, C, G, y)
                if gr > best:
                    best = gr
                    bp = hp
                    bq = hq
            if bp >= 0 and plan_gain1 + gw < eta * (plan_gain1 + best):
                i = bp
                j = bq
                n_partner_taken += 1

        si = _get_row(i, -1, active_size, act, store, slot_of, owner, stamp, counters, sparse, Xd,
                      indptr, indices, data, sq, y, code, gamma, coef0, degree, buf)
        sj = _get_row(j, si, active_size, act, store, slot_of, owner, stamp, counters, sparse, Xd,
                      indptr, indices, data, sq, y, code, gamma, coef0, degree, buf)
        Qi = store[si]
        Qj = store[sj]
        s = -y[i] * y[j]
        a_v = QD[i] + QD[j] + 2.0 * s * Qi[j]
        if a_v <= 0.0:
            a_v = TAU
        ai_old = alpha[i]
        aj_old = alpha[j]

        # cross terms d_v^T Q d_k with the history (rows i, j are valid on the active set)
        for r in range(3):
            hp = h_p[r]
            if hp >= 0 and pos[hp] < active_size and pos[h_q[r]] < active_size:
                hq = h_q[r]
                hs = -y[hp] * y[hq]
                h_cv[r] = (Qi[hp] + hs * Qi[hq]) + s * (Qj[hp] + hs * Qj[hq])
            else:
                h_cv[r] = np.nan

        took_plan = False
        gain_step = 0.0
        if planning and last_free and (not last_plan) and h_p[0] >= 0 and not np.isnan(h_cv[0]) \
                and not (h_p[0] == i and h_q[0] == j) and not (h_p[0] == j and h_q[0] == i):
            g_v = -(G[i] + s * G[j])
            mu = np.nan
            npart = 0
            # 3-d plan: v, d_0, d_1
            if pa_recent == 3 and h_p[1] >= 0 and not np.isnan(h_cv[1]) and not np.isnan(h_c[0]):
                p0 = h_p[0]
                q0 = h_q[0]
                p1 = h_p[1]
                q1 = h_q[1]
                g0 = -(G[p0] - y[p0] * y[q0] * G[q0])
                g1 = -(G[p1] - y[p1] * y[q1] * G[q1])
                H00 = a_v
                H01 = h_cv[0]
                H02 = h_cv[1]
                H11 = h_a[0]
                H12 = h_c[0]
                H22 = h_a[1]
                det = (H00 * (H11 * H22 - H12 * H12) - H01 * (H01 * H22 - H12 * H02)
                       + H02 * (H01 * H12 - H11 * H02))
                m2 = H00 * H11 - H01 * H01
                if m2 > PA_COND * H00 * H11 and det > PA_COND * H00 * H11 * H22:
                    # Cramer's rule for the first component
                    num = (g_v * (H11 * H22 - H12 * H12) - H01 * (g0 * H22 - H12 * g1)
                           + H02 * (g0 * H12 - H11 * g1))
                    mu = num / det
                    npart = 2
            if npart == 2:
                ok = mu * g_v > 0.0
                ni = ai_old + mu
                nj = aj_old + s * mu
                if not (ok and 0.0 < ni < C[i] and 0.0 < nj < C[j]):
                    npart = 0
            if npart == 0:
                p0 = h_p[0]
                q0 = h_q[0]
                g0 = -(G[p0] - y[p0] * y[q0] * G[q0])
                H00 = a_v
                H01 = h_cv[0]
                H11 = h_a[0]
                det = H00 * H11 - H01 * H01
                if det > PA_COND * H00 * H11:
                    mu = (H11 * g_v - H01 * g0) / det
                    ni = ai_old + mu
                    nj = aj_old + s * mu
                    if mu * g_v > 0.0 and 0.0 < ni < C[i] and 0.0 < nj < C[j]:
                        npart = 1
            if npart > 0:
                alpha[i] = ai_old + mu
                alpha[j] = aj_old + s * mu
                gain_step = mu * g_v - 0.5 * a_v * mu * mu
                took_plan = True
                n_plan += 1
                n_partner = npart
                # after the history shift below, the partners d_0, d_1 sit in slots 1, 2
                part[0] = 1
                part[1] = 2

        step_free = False
        if not took_plan:
            _, step_free = _clipped_gain(i, j, a_v, alpha, C, G, y)
            # ---- LIBSVM's analytic update ----
            Ci = C[i]
            Cj = C[j]
            if y[i] != y[j]:
                quad = QD[i] + QD[j] + 2.0 * Qi[j]
                if quad <= 0.0:
                    quad = TAU
                delta = (-G[i] - G[j]) / quad
                diff = alpha[i] - alpha[j]
                alpha[i] += delta
                alpha[j] += delta
                if diff > 0.0:
                    if alpha[j] < 0.0:
                        alpha[j] = 0.0
                        alpha[i] = diff
                else:
                    if alpha[i] < 0.0:
                        alpha[i] = 0.0
                        alpha[j] = -diff
                if diff > Ci - Cj:
                    if alpha[i] > Ci:
                        alpha[i] = Ci
                        alpha[j] = Ci - diff
                else:
                    if alpha[j] > Cj:
                        alpha[j] = Cj
                        alpha[i] = Cj + diff
            else:
                quad = QD[i] + QD[j] - 2.0 * Qi[j]
                if quad <= 0.0:
                    quad = TAU
                delta = (G[i] - G[j]) / quad
                ssum = alpha[i] + alpha[j]
                alpha[i] -= delta
                alpha[j] += delta
                if ssum > Ci:
                    if alpha[i] > Ci:
                        alpha[i] = Ci
                        alpha[j] = ssum - Ci
                else:
                    if alpha[j] < 0.0:
                        alpha[j] = 0.0
                        alpha[i] = ssum
                if ssum > Cj:
                    if alpha[j] > Cj:
                        alpha[j] = Cj
                        alpha[i] = ssum - Cj
                else:
                    if alpha[i] < 0.0:
                        alpha[i] = 0.0
                        alpha[j] = ssum
            if planning:
                mu_t = alpha[i] - ai_old
                g_v = -(G[i] + s * G[j])
                gain_step = mu_t * g_v - 0.5 * a_v * mu_t * mu_t

        # ---- gradient update on the active set ----
        dai = alpha[i] - ai_old
        daj = alpha[j] - aj_old
        for k in range(active_size):
            t = act[k]
            G[t] += Qi[t] * dai + Qj[t] * daj

        # ---- G_bar when a variable enters or leaves the upper bound ----
        for w in range(2):
            v = i if w == 0 else j
            old = ai_old if w == 0 else aj_old
            Qv = Qi if w == 0 else Qj
            was_up = old >= C[v]
            now_up = alpha[v] >= C[v]
            if was_up != now_up:
                sign = 1.0 if now_up else -1.0
                cv = sign * C[v]
                for k in range(active_size):
                    t = act[k]
                    Gbar[t] += cv * Qv[t]
                if active_size < n:
                    _fill_q(v, tmp, act, active_size, n, sparse, Xd, indptr, indices, data, sq, y,
                            code, gamma, coef0, degree, buf)
                    for k in range(active_size, n):
                        t = act[k]
                        Gbar[t] += cv * tmp[t]

        if planning:
            # shift the history; the new entry is this step's direction
            for r in range(2, 0, -1):
                h_p[r] = h_p[r - 1]
                h_q[r] = h_q[r - 1]
                h_a[r] = h_a[r - 1]
                h_c[r] = h_c[r - 1]
            h_p[0] = i
            h_q[0] = j
            h_a[0] = a_v
            h_c[0] = h_cv[0]
            last_plan = took_plan
            last_free = (not took_plan) and step_free
            plan_gain1 = gain_step

        if verbose and it % 10000 == 0:
            print("smo iter", it, "active", active_size, "gap", gmax + gmax2)

    if active_size < n:
        _reconstruct(active_size, act, alpha, C, G, Gbar, tmp, sparse, Xd, indptr, indices, data,
                     sq, y, code, gamma, coef0, degree, buf)
    return G, it, status, n_plan, n_partner_taken, counters[2], counters[3], dfeat


_CODES = {"linear": 0, "poly": 1, "rbf": 2, "sigmoid": 3}


def _prepare(X, spec, x_sqnorm):
    """Arrays for the compiled solver: dense float64 C-contiguous X, or the CSR triplet."""
    import scipy.sparse as sp

    if sp.issparse(X):
        X = X.tocsr()
        n, d = X.shape
        # few features and not very sparse (ijcnn1: 13 of 22 nonzero): the dense dot products
        # vectorize and beat the sparse ones; the dense copy is bounded to 256 MB
        if X.nnz * 3 >= n * d and n * d * 8 <= 256 * 2**20:
            X = X.toarray()
    if sp.issparse(X):
        sparse = True
        data = np.ascontiguousarray(X.data, dtype=np.float64)
        indices = np.ascontiguousarray(X.indices, dtype=np.int64)
        indptr = np.ascontiguousarray(X.indptr, dtype=np.int64)
        Xd = np.zeros((1, 1))
        sq = np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel()
    else:
        sparse = False
        Xd = np.ascontiguousarray(X, dtype=np.float64)
        data = np.zeros(1)
        indices = np.zeros(1, dtype=np.int64)
        indptr = np.zeros(2, dtype=np.int64)
        sq = np.einsum("ij,ij->i", Xd, Xd)
    return sparse, Xd, indptr, indices, data, sq


def _diag(sq, spec):
    if spec.kind == "linear":
        return sq.copy()
    if spec.kind == "poly":
        return (spec.gamma * sq + spec.coef0) ** spec.degree
    if spec.kind == "rbf":
        return np.ones_like(sq)
    return np.tanh(spec.gamma * sq + spec.coef0)


@register_op("smo_pairwise", "cpu")
def smo_pairwise_cpu(be, X, y, spec, C, *, tol=1e-3, max_iter=-1, cache_bytes=200 * 2**20, alpha0=None,
                     x_sqnorm=None, gram_dtype="float32", planning=False, pa_recent=2, shrinking=True,
                     verbose=0):
    """Solve the binary C-SVC dual with pair-at-a-time SMO (LIBSVM) or planning-ahead SMO.

    Parameters
    ----------
    X : {ndarray, CSR matrix} of shape (n, d)
    y : ndarray of shape (n,), values in {-1, +1}
    spec : GramSpec
    C : ndarray of shape (n,)
        Per-sample upper bounds (C times class and sample weights); C_i = 0 fixes alpha_i at 0.
    tol : float
        Stop when max_{I_up} -y G - min_{I_low} -y G <= tol.
    max_iter : int
        Limit on SMO steps; -1 for none.
    cache_bytes : int
        Byte budget of the Gram-row cache (at least two rows are always kept).
    alpha0 : ndarray of shape (n,), optional
        Feasible warm start; the gradient is computed from its nonzero entries.
    gram_dtype : {"float32", "float64"}
        Type of the cached Gram values (alpha and the gradient are always float64).
    planning : bool
        Planning-ahead SMO instead of plain SMO.
    pa_recent : {2, 3}
        Plan with the 2 or 3 most recent working sets (only with ``planning``).

    Returns
    -------
    dict with alpha (n,), G (n,) = Q alpha - 1, n_iter, converged, and counters (planning steps,
    cache hits/misses).
    """
    y = np.ascontiguousarray(y, dtype=np.float64)
    C = np.ascontiguousarray(C, dtype=np.float64)
    n = y.shape[0]
    sparse, Xd, indptr, indices, data, sq = _prepare(X, spec, x_sqnorm)
    QD = _diag(sq, spec)
    if alpha0 is None:
        alpha = np.zeros(n)
    else:
        alpha = np.clip(np.asarray(alpha0, dtype=np.float64), 0.0, C).copy()
    qdtype = np.float64 if str(np.dtype(gram_dtype)) == "float64" else np.float32
    row_bytes = max(1, n * np.dtype(qdtype).itemsize)
    cap = int(max(2, min(n, int(cache_bytes) // row_bytes)))
    store = np.empty((cap, n), dtype=qdtype)
    G, it, status, n_plan, n_partner, hits, misses, _ = _solve(
        sparse, Xd, indptr, indices, data, sq, y, C, alpha, QD, _CODES[spec.kind], float(spec.gamma),
        float(spec.coef0), int(spec.degree), store, float(tol), int(max_iter), bool(shrinking),
        bool(planning), int(pa_recent), PA_ETA, bool(verbose))
    return {
        "alpha": alpha, "G": G, "n_iter": int(it), "converged": status == 0,
        "info": {"planning_steps": int(n_plan), "partner_steps": int(n_partner),
                 "cache_hits": int(hits), "cache_misses": int(misses), "cache_rows": cap},
    }

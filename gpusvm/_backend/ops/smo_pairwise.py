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
  Q values (signed by the labels), in float32 as LIBSVM's Qfloat, or float64.

Memory layout (as LIBSVM's ``swap_index``): every per-variable array is indexed by *position*, and
shrinking physically swaps variables so that the active set is always the prefix ``0..active_size``.
``perm[k]`` is the training row at position k. Every loop of a step (selection, gradient update) runs
over a contiguous prefix, with no index gather. A cached row is valid on the prefix ``0..len`` of the
positions it was computed for; a swap exchanges the two entries in every cached row (or shortens the
row when only one of them was valid), so rows survive shrinking, and unshrinking only computes the
missing tail of a row instead of recomputing it. The inactive gradient is rebuilt with LIBSVM's two
loop orders (by inactive rows or by free rows, whichever touches fewer Gram values), through the
cache. Swaps made by one shrinking pass are applied to the cached rows in one pass per row.

Gram rows are computed in Numba. Dense X (and CSR X whose dense copy fits 256 MB) is kept
transposed (features x positions, swapped with the variables), so the dot products of one row are
one contiguous axpy sweep per nonzero feature of x_i, which LLVM vectorizes, and each dot product
sums its features in order; the RBF exponential is the vectorizable polynomial ``exp_neg_vec`` of
ops/merge.py (Numba's ``math.exp`` is one libm call per value: 6 ns against about 1 ns). Larger CSR X is
read through the permutation.

The axpy sweeps take the nonzero features of x_i four per pass over the dot products (the additions
still in feature order: the same bits as one feature at a time, tests/test_svc.py), which cut the
passes over the n-long dot-product buffer by four: rows 21% faster on ijcnn1 (22 features) and 14% on
a9a (123 features, 14 nonzero; 1.7x for the linear gram); whole cold SVC fits (process CPU seconds,
two runs each, same steps and objective to the bit) ijcnn1 4.8 / 5.6 -> 3.5-4.4 s, a9a 8.6 / 8.7 ->
6.4-7.9 s.

Why (profiled on dense phishing against sklearn's dense LIBSVM, which took 1.4 s of CPU time to our
2.1 s before these changes): half of our Gram values (26M of 54.5M) came from the gradient
reconstruction, which computed the inactive tails without the cache and then cleared it; the dense
dot products did not vectorize (Numba's negative-index wraparound blocked LLVM), and the exp was a
scalar libm call. Now 25M values, 12 ns instead of 30 ns each, 0.6 s in all.

Warm starts (DC-SVM's refine and top solves) compute the initial gradient from the rows of the nonzero
alphas. Those at the upper bound C go through a scratch row and only the free ones through the cache:
the steps mostly select free variables, and before, the cache started with the last rows the gradient
loop happened to compute (a9a: 1,610 rows of ~11k, mostly of bounded alphas). Full a9a, DCSVC top
solve without refine (two runs each, process CPU seconds, same warm start): 9.2 / 9.3 s, 790M Gram
values, 60.0k steps before; 6.1 / 6.8 s, 472M values, 51.4k steps after (of which ~380M are the
gradient itself). The step count moves with the gradient's summation order (60.0k vs 51.4k here); the
steps' own Gram values fell from ~410M to ~90M. After the refine solve (fewer bounded alphas change
at the top) it made no measurable difference (4.7 / 5.1 s against 4.6 / 6.7 s, 431M vs 416M values). Tried and
dropped: computing that gradient in blocks of 16 rows x tiles of 2,048 positions (each tile of X^T read
once per block): 0.80 s against 0.81 s for 2.4k rows of ijcnn1, 2.75 s against 2.69 s for 11k rows of
a9a, so the row loop is not bound by reading X^T (about 7 ns per Gram value either way).

The step's hot path passes no tuples of arrays. Numba increments and decrements the reference count
of every array an argument holds, tuple members included, on each call of a compiled function. The
row lookup and the working-set selection used to take the cache, X and scratch tuples (17 and 18
arrays), which cost about 100 reference-count updates per step. That was the whole per-step gap to
LIBSVM on small active sets. Now the selection (:func:`_select_i`, :func:`_select_j`) and the cache
hit (:func:`_cached_slot`) take plain arrays and are inlined; only a cache miss calls
:func:`_get_row`. The iterates are the same to the bit. Process CPU seconds (min of 5 fits; old code
and new in alternating processes, two rounds; sklearn measured in the same processes):

=========================  ===========  ===========  ===========
problem                    old          new          sklearn
=========================  ===========  ===========  ===========
chess 5k, C=1000 (SMO)     0.21-0.22    0.12         0.16
chess 5k, C=1000 (PA-SMO)  0.17         0.10         -
chess 10k, C=100 (SMO)     0.29-0.33    0.22         0.45-0.47
digits, 45 pairs (SMO)     0.029-0.030  0.022-0.023  0.023-0.027
=========================  ===========  ===========  ===========

On chess 5k the active set shrinks to about 42 variables, so the per-step overhead is what matters
there: 2.6 us per step before, 1.5 us now, against LIBSVM's 1.8 us.

The selection loops read one status byte per variable (``st``, :func:`_status`: bit 0 in I_up, bit 1
in I_low, bit 2 y > 0; the same comparisons as before, updated for i and j after each step and
swapped with the variables) instead of float64 alpha, C and y: the same steps and alphas to the bit.
Process CPU seconds, min of 3 fits after a warm-up, old and new code in alternating processes, then
the min over 2-4 rounds (2 shared cores, x86_64; same n_iter_ and objective_ to the bit), on
``benchmarks/smo_step_overhead.py``'s problems and 10k-row subsets (C=32; a9a gamma=0.008, ijcnn1
gamma=2); per step 6% (n = 120) to 26% (chess 5k) faster without shrinking:

===============================  ============  ============
problem (steps off / on)         no shrinking  shrinking
===============================  ============  ============
gauss-120x15 C=1e-3 (1.1M/1.7M)  1.05 -> 0.98  0.92 -> 0.87
gauss-120x15 C=3e-4 (0.3M/0.5M)  0.32 -> 0.30  0.28 -> 0.26
chess 5k C=1000 (65k/91k)        2.13 -> 1.58  0.22 -> 0.20
a9a 10k (16k/16k)                2.20 -> 1.84  1.10 -> 1.04
ijcnn1 10k (4.8k/4.9k)           0.36 -> 0.29  0.16 -> 0.15
===============================  ============  ============

With ``planning=True`` it runs the planning-ahead SMO (PA-SMO) of Glasmachers ("The planning-ahead SMO
algorithm", 2008); see :func:`_solve` for what exactly is implemented.

The GPU has no twin of this op: on the GPU the batched decomposition (``smo_batched``) is used.
"""

from __future__ import annotations

import numba
import numpy as np

from ..._gram import GRAM_CODES
from ..base import register_op, reserve_rows
# (Numba caches this module keyed on this file only: after editing exp_neg_vec in merge.py or free_yG in
# bias.py, delete ops/__pycache__/*.nb[ic] or touch this file.)
from .merge import exp_neg_vec  # vectorizable exp (x <= 0), within 1 ulp of libm's
from .bias import free_yG  # the free variables' y G of bias (one test, shared with its op)

TAU = 1e-12
PA_ETA = 0.9  # eta of the planning-ahead working-set safeguard (see _solve)
PA_COND = 1e-8  # planning needs det(H) > PA_COND * prod(diag(H)) (the plane is not degenerate)

# ---------------------------------------------------------------------------------------------------
# Gram rows
# ---------------------------------------------------------------------------------------------------
@numba.njit(cache=True)
def _fill_q(pi, out_full, k0, k1, gx, gk, ws):
    """out[k] = Q[pi, k] = y_pi y_k k(x_pi, x_k) for positions k in [k0, k1).

    gx = (XT, indptr, indices, data, perm, sqp, yp): dense X transposed (d, n) and swapped with the
    positions, or CSR X in training order (read through ``perm``); squared norms and labels by
    position; for a precomputed Gram matrix (code 4) data holds K row-major, indptr[0] its row length and
    indices the problem's rows of K, in training order (see :func:`_prepare_precomputed`).
    gk = (sparse, code, gamma, coef0, degree). ws = (dots, t1, t2, buf): float64 scratch of
    length n (t2 serves as int64 scratch) and a zeroed buffer of length d (CSR).
    Loops run over slices from 0 so that Numba can drop the negative-index checks and LLVM
    vectorizes them (10x on the 3-feature axpy sweeps, 2.5x on 22-68 features, measured).
    """
    XT, indptr, indices, data, perm, sqp_full, yp_full = gx
    sparse, code, gamma, coef0, degree = gk
    m = k1 - k0
    if m <= 0:
        return
    out = out_full[k0:k1]
    dots = ws[0][k0:k1]
    yp = yp_full[k0:k1]
    if code == 4:  # precomputed (_prepare_precomputed): data = K row-major, indices = the rows of K
        yi = yp_full[pi]
        base = indices[perm[pi]] * indptr[0]
        for k in range(m):
            out[k] = yi * yp[k] * data[base + indices[perm[k0 + k]]]
        return
    if sparse:
        buf = ws[3]
        i = perm[pi]
        for p in range(indptr[i], indptr[i + 1]):
            buf[indices[p]] = data[p]
        for k in range(m):
            t = perm[k0 + k]
            s = 0.0
            for p in range(indptr[t], indptr[t + 1]):
                s += data[p] * buf[indices[p]]
            dots[k] = s
        for p in range(indptr[i], indptr[i + 1]):
            buf[indices[p]] = 0.0
    else:
        for k in range(m):
            dots[k] = 0.0
        # the nonzero features of x_i four at a time: one pass over dots per four features instead of
        # one per feature, the additions still in feature order (the same bits as one at a time)
        n_feat = XT.shape[0]
        f = 0
        while f < n_feat:
            c = 0
            f0 = f1 = f2 = f3 = 0
            a0 = a1 = a2 = a3 = 0.0
            while f < n_feat and c < 4:
                a = XT[f, pi]
                if a != 0.0:
                    if c == 0:
                        f0, a0 = f, a
                    elif c == 1:
                        f1, a1 = f, a
                    elif c == 2:
                        f2, a2 = f, a
                    else:
                        f3, a3 = f, a
                    c += 1
                f += 1
            r0 = XT[f0, k0:k1]
            if c == 4:
                r1, r2, r3 = XT[f1, k0:k1], XT[f2, k0:k1], XT[f3, k0:k1]
                for k in range(m):
                    dots[k] = (((dots[k] + a0 * r0[k]) + a1 * r1[k]) + a2 * r2[k]) + a3 * r3[k]
            elif c == 3:
                r1, r2 = XT[f1, k0:k1], XT[f2, k0:k1]
                for k in range(m):
                    dots[k] = ((dots[k] + a0 * r0[k]) + a1 * r1[k]) + a2 * r2[k]
            elif c == 2:
                r1 = XT[f1, k0:k1]
                for k in range(m):
                    dots[k] = (dots[k] + a0 * r0[k]) + a1 * r1[k]
            elif c == 1:
                for k in range(m):
                    dots[k] += a0 * r0[k]
    yi = yp_full[pi]
    if code == 0:
        for k in range(m):
            out[k] = yi * yp[k] * dots[k]
    elif code == 2:
        sqi = sqp_full[pi]
        sqp = sqp_full[k0:k1]
        t1 = ws[1][k0:k1]
        for k in range(m):
            d = sqi + sqp[k] - 2.0 * dots[k]
            t1[k] = -gamma * (d if d > 0.0 else 0.0)
        exp_neg_vec(t1, m, ws[2].view(np.int64))
        for k in range(m):
            out[k] = yi * yp[k] * t1[k]
    elif code == 1:
        for k in range(m):
            base = gamma * dots[k] + coef0
            r = 1.0
            for _ in range(degree):
                r *= base
            out[k] = yi * yp[k] * r
    else:
        for k in range(m):
            out[k] = yi * yp[k] * np.tanh(gamma * dots[k] + coef0)


# ---------------------------------------------------------------------------------------------------
# LRU row cache (state in arrays so that it lives inside compiled code)
#   cache = (store, slot_of, owner, rlen, stamp, counters)
#   store[s, :rlen[s]] holds Q row owner[s] (a position) on positions 0..rlen[s];
#   slot_of[position] = slot or -1; counters = [clock, n_used, hits, misses, evaluated entries]
# ---------------------------------------------------------------------------------------------------
@numba.njit(cache=True, inline="always")
def _cached_slot(pi, length, slot_of, rlen, stamp, counters):
    """The hit path of :func:`_get_row` (which starts with it): the slot of Q row ``pi`` when
    the cache holds it on positions 0..length, else -1 (then call :func:`_get_row`, which counts the
    access). Separate so that the step's hot path can try it without passing tuples of arrays (see the
    module docstring)."""
    s = slot_of[pi]
    if s >= 0 and rlen[s] >= length:
        counters[0] += 1
        stamp[s] = counters[0]
        counters[2] += 1
    else:
        s = -1
    return s


@numba.njit(cache=True)
def _get_row(pi, length, protect, cache, gx, gk, ws):
    """Slot of Q row ``pi`` valid on positions 0..length, computing only what is missing.

    ``protect``: a slot that must not be evicted (-1: none).
    """
    store, slot_of, owner, rlen, stamp, counters = cache
    s = _cached_slot(pi, length, slot_of, rlen, stamp, counters)
    if s >= 0:
        return s
    counters[0] += 1
    s = slot_of[pi]
    if s >= 0:  # cached, but shorter than ``length``: extend it
        stamp[s] = counters[0]
        have = rlen[s]
    else:
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
        owner[s] = pi
        slot_of[pi] = s
        stamp[s] = counters[0]
        have = 0
    counters[3] += 1
    counters[4] += length - have
    _fill_q(pi, store[s], have, length, gx, gk, ws)
    rlen[s] = length
    return s


@numba.njit(cache=True)
def _cache_apply_swaps(cache, sw_i, sw_j, m):
    """Apply the position swaps (sw_i[r] < sw_j[r], r < m, in order) to every cached row: exchange the
    two entries where both are valid, shorten the row to sw_i[r] where only the first one is."""
    store, slot_of, owner, rlen, stamp, counters = cache
    for s in range(counters[1]):
        L = rlen[s]
        if owner[s] < 0 or L == 0:
            continue
        row = store[s]
        for r in range(m):
            a = sw_i[r]
            if L > a:
                b = sw_j[r]
                if L > b:
                    tmp = row[a]
                    row[a] = row[b]
                    row[b] = tmp
                else:
                    L = a
        rlen[s] = L


@numba.njit(cache=True)
def _row_tail(pi, k0, cache, scratch, gx, gk, ws):
    """Q row ``pi`` on positions ``k0..n`` in ``scratch`` (returned), outside the cache: what a cached
    row already holds there is copied, the rest computed. The gradient reconstruction reads only the
    inactive part of the free variables' rows; computing their active part too, and caching them,
    cost skin_nonskin (100k-row subset, cold) 18% of its Gram values and evicted the rows the steps
    were using (see :func:`_reconstruct`)."""
    store, slot_of, owner, rlen, stamp, counters = cache
    n = scratch.shape[0]
    have = k0
    s = slot_of[pi]
    if s >= 0 and rlen[s] > k0:
        have = rlen[s]
        row = store[s]
        for t in range(k0, have):
            scratch[t] = row[t]
    counters[4] += n - have
    _fill_q(pi, scratch, have, n, gx, gk, ws)
    return scratch


# ---------------------------------------------------------------------------------------------------
# Helpers of the solver (all indices are positions)
# ---------------------------------------------------------------------------------------------------
@numba.njit(cache=True)
def _swap(a, b, v):
    """Exchange positions a and b of the per-variable arrays ``v`` and of the cache's row map (the
    entries inside cached rows are exchanged later by :func:`_cache_apply_swaps`)."""
    alpha, G, Gbar, C, QD, st, gx, cache = v
    XT, indptr, indices, data, perm, sqp, yp = gx
    store, slot_of, owner, rlen, stamp, counters = cache
    alpha[a], alpha[b] = alpha[b], alpha[a]
    st[a], st[b] = st[b], st[a]
    G[a], G[b] = G[b], G[a]
    Gbar[a], Gbar[b] = Gbar[b], Gbar[a]
    C[a], C[b] = C[b], C[a]
    QD[a], QD[b] = QD[b], QD[a]
    perm[a], perm[b] = perm[b], perm[a]
    sqp[a], sqp[b] = sqp[b], sqp[a]
    yp[a], yp[b] = yp[b], yp[a]
    if XT.shape[1] == alpha.shape[0]:  # dense: the columns of X^T move with the variables
        for f in range(XT.shape[0]):
            XT[f, a], XT[f, b] = XT[f, b], XT[f, a]
    sa = slot_of[a]
    sb = slot_of[b]
    slot_of[a] = sb
    slot_of[b] = sa
    if sa >= 0:
        owner[sa] = b
    if sb >= 0:
        owner[sb] = a


@numba.njit(cache=True)
def _reconstruct(active_size, v, gk, ws, scratch):
    """Gradient of the inactive positions from G_bar and the free variables, by LIBSVM's rule: loop
    over the inactive rows (length ``active_size``) or over the free rows (their inactive part),
    whichever needs fewer Gram values. The inactive rows come from (and stay in) the cache. A free
    row is taken from the cache when it holds the row's active part (and is extended there); any
    other free row is completed in ``scratch`` from whatever prefix is cached, computing only its
    inactive part, and is not cached (:func:`_row_tail`).

    Measured on a 100k-row skin_nonskin subset (C=8, gamma=0.03, cold, 200 MB cache; 8.4k support
    vectors, nearly all free, so the free-row order is taken): the two reconstructions (the unshrink
    at gap < 10 tol and the final check) computed 2.45G of the solve's 5.34G Gram values when every
    free row was computed over all n positions and cached; with this rule the solve computes 4.35G
    values (the same 28,277 steps, the same alpha to the bit) and has 50k cache misses instead of 73k:
    41.3 / 38.3 -> 33.8 / 32.7 process CPU seconds (old and new code alternating, one machine, one
    session); full ijcnn1 317M -> 305M values, 3.85 / 3.42 -> 3.33 / 3.10 s; full a9a (few free
    support vectors) unchanged at 505M values, 8.80 / 7.97 -> 7.85 / 7.73 s. Also tried: re-cutting
    the cache into rows of the active length after shrinking (as LIBSVM's cache does, up to 2.7x more
    rows): 1% fewer Gram values there, and more on ijcnn1 and a9a, whose G_bar updates then recompute
    full rows the narrow cache cannot hold; dropped."""
    alpha, G, Gbar, C, QD, st, gx, cache = v
    store, slot_of, owner, rlen, stamp, counters = cache
    n = alpha.shape[0]
    if active_size == n:
        return
    for k in range(active_size, n):
        G[k] = Gbar[k] - 1.0
    nr_free = 0
    for k in range(active_size):
        if st[k] & 3 == 3:  # free
            nr_free += 1
    if nr_free * n > 2 * active_size * (n - active_size):
        for i in range(active_size, n):
            Qi = store[_get_row(i, active_size, -1, cache, gx, gk, ws)]
            g = G[i]
            for k in range(active_size):
                if st[k] & 3 == 3:
                    g += alpha[k] * Qi[k]
            G[i] = g
    else:
        for i in range(active_size):
            if st[i] & 3 == 3:
                s = slot_of[i]
                if s >= 0 and rlen[s] >= active_size:
                    Qi = store[_get_row(i, n, -1, cache, gx, gk, ws)]
                else:
                    Qi = _row_tail(i, active_size, cache, scratch, gx, gk, ws)
                a = alpha[i]
                for k in range(active_size, n):
                    G[k] += a * Qi[k]


@numba.njit(cache=True)
def _be_shrunk(t, gmax1, gmax2, alpha, C, G, y):
    # (reads alpha and C, not the status byte: C_t = 0 makes a variable both upper and lower, and
    # this order, upper first, is LIBSVM's; it runs once per min(n, 1000) steps)
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
def _shrink(active_size, unshrunk, tol, v, gk, ws, sw_i, sw_j, scratch):
    """LIBSVM's do_shrinking. Returns (new active size, unshrunk, whether any position moved)."""
    alpha, G, Gbar, C, QD, st, gx, cache = v
    y = gx[6]
    n = alpha.shape[0]
    gmax1 = -np.inf  # max over I_up of -y G
    gmax2 = -np.inf  # max over I_low of y G
    for t in range(active_size):
        yg = y[t] * G[t]
        if st[t] & 1:
            if -yg >= gmax1:
                gmax1 = -yg
        if st[t] & 2:
            if yg >= gmax2:
                gmax2 = yg
    if (not unshrunk) and gmax1 + gmax2 <= tol * 10.0:
        unshrunk = True
        _reconstruct(active_size, v, gk, ws, scratch)
        active_size = n
    m = 0
    k = 0
    while k < active_size:
        if _be_shrunk(k, gmax1, gmax2, alpha, C, G, y):
            active_size -= 1
            while active_size > k:
                if not _be_shrunk(active_size, gmax1, gmax2, alpha, C, G, y):
                    _swap(k, active_size, v)
                    sw_i[m] = k
                    sw_j[m] = active_size
                    m += 1
                    break
                active_size -= 1
        k += 1
    if m > 0:
        _cache_apply_swaps(cache, sw_i, sw_j, m)
    return active_size, unshrunk, m > 0


@numba.njit(cache=True, inline="always")
def _status(a, c, y):
    """The status byte of a variable (alpha a, bound c, label y): bit 0 = in I_up, bit 1 = in I_low
    (both: free), bit 2 = y > 0. The same comparisons as LIBSVM's upper/lower-bound tests."""
    if y > 0:
        return np.int8(4 | (1 if a < c else 0) | (2 if a > 0.0 else 0))
    return np.int8((1 if a > 0.0 else 0) | (2 if a < c else 0))


@numba.njit(cache=True, inline="always")
def _select_i(active_size, st, G):
    """First index of WSS2 on positions 0..active_size: i maximises -y_t G_t over I_up (-1: none);
    returns (i, that maximum)."""
    gmax = -np.inf
    i = -1
    for t in range(active_size):
        b = st[t]
        if b & 1:
            s = -G[t] if b & 4 else G[t]  # -y_t G_t (the same bits as the product with y_t = +-1)
            if s >= gmax:
                gmax = s
                i = t
    return i, gmax


@numba.njit(cache=True, inline="always")
def _select_j(active_size, i, gmax, store, si, st, G, QD):
    """Second index of WSS2 given i (its Q row in ``store[si]``, valid on the active set): j minimises
    -b_it^2 / a_it over I_low with -y_t G_t < gmax; returns (j, max over I_low of y_t G_t)."""
    j = -1
    gmax2 = -np.inf
    yi4 = st[i] & 4
    QDi = QD[i]
    obj_min = np.inf
    for t in range(active_size):
        b = st[t]
        if b & 2:
            yg = G[t] if b & 4 else -G[t]
            if yg >= gmax2:
                gmax2 = yg
            gd = gmax + yg
            if gd > 0.0:
                # QD_i + QD_t - 2 y_i y_t Q_it (a - (-b) is a + b to the bit)
                q2 = 2.0 * store[si, t]
                quad = QDi + QD[t] - q2 if (b & 4) == yi4 else QDi + QD[t] + q2
                if quad <= 0.0:
                    quad = TAU
                ob = -(gd * gd) / quad
                if ob <= obj_min:
                    j = t
                    obj_min = ob
    return j, gmax2


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


@numba.njit(cache=True, inline="always")
def _clip_sum(a, b, ssum, Ca):
    """One half of LIBSVM's clipping for y_i = y_j (a + b = ssum kept): a at most Ca, b at least 0."""
    if ssum > Ca:
        if a > Ca:
            return Ca, ssum - Ca
    elif b < 0.0:
        return ssum, 0.0
    return a, b


@numba.njit(cache=True, inline="always")
def _smo_update(i, j, Qij, alpha, C, G, QD, y):
    """LIBSVM's analytic two-variable update of alpha_i, alpha_j (in place)."""
    Ci = C[i]
    Cj = C[j]
    if y[i] != y[j]:
        quad = QD[i] + QD[j] + 2.0 * Qij
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
        quad = QD[i] + QD[j] - 2.0 * Qij
        if quad <= 0.0:
            quad = TAU
        delta = (G[i] - G[j]) / quad
        ssum = alpha[i] + alpha[j]
        alpha[i] -= delta
        alpha[j] += delta
        alpha[i], alpha[j] = _clip_sum(alpha[i], alpha[j], ssum, Ci)
        alpha[j], alpha[i] = _clip_sum(alpha[j], alpha[i], ssum, Cj)


# ---------------------------------------------------------------------------------------------------
# The solver
# ---------------------------------------------------------------------------------------------------
@numba.njit(cache=True, nogil=True)  # nogil: SVC(n_jobs=...) solves class pairs in threads
def _solve(gx, gk, C, alpha, QD, store, tol, max_iter, shrinking, planning, pa_recent, eta, verbose):
    """SMO (LIBSVM) or planning-ahead SMO on the binary C-SVC dual.

    ``gx``, ``C``, ``alpha`` and ``QD`` are permuted in place (positions); ``gx[4]`` (perm) maps
    them back. Returns (G by position, n_iter, status, planning steps, partner steps (modified selections other
    than the WSS2 pair), cache counters).

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
    gain1 + g(WSS2) >= eta * (gain1 + max_partner g(B)); otherwise the best partner is taken (eta = 0.9).
    When the pair so chosen would leave the double step a gain below eta * g_SMO, g_SMO = gain1 + g(B_plan)
    the gain that the plain SMO step on the planning step's own working set B_plan would have made, B_plan
    is taken instead: the line search along it returns to the plain SMO step's point. So the double step
    gains at least eta * g_SMO > 0, also when the partners are clipped at the box (the planning step
    alone can lower the objective; before this rule a clipped partner let double steps lower it, on a
    100-point chess-board at C=1000 from 1,650 to -38,764, tests/test_svc.py). Planning only happens
    right after a free SMO step, so planning steps never follow each other, and not right before a
    shrinking pass (which clears the history, so the step after it could not be selected as above).

    Choices made here (the paper's text was not at hand while writing this; the rules above were
    rebuilt from its abstract ideas and should be checked against it): eta = 0.9; H counts as
    singular when det(H) <= 1e-8 * prod(diag(H)); "hits the box" means the planned alpha_i or alpha_j
    would reach or cross 0 or C (strictly inside is required); the planned step must go in the
    ascent direction of v (mu * g_v > 0); with ``pa_recent=3`` the partner candidates after a planning
    step are both earlier working sets, and the history is cleared whenever shrinking moves or
    drops variables (history entries are positions, and rows of inactive variables are not kept up
    to date).
    """
    y = gx[6]
    n = y.shape[0]
    G = np.empty(n)
    Gbar = np.zeros(n)
    ws = (np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(gk[5]))
    gk5 = (gk[0], gk[1], gk[2], gk[3], gk[4])
    cap = store.shape[0]
    slot_of = -np.ones(n, dtype=np.int64)
    owner = -np.ones(cap, dtype=np.int64)
    rlen = np.zeros(cap, dtype=np.int64)
    stamp = np.zeros(cap, dtype=np.int64)
    counters = np.zeros(5, dtype=np.int64)  # clock, used, hits, misses, evaluated Q entries
    cache = (store, slot_of, owner, rlen, stamp, counters)
    st = np.empty(n, dtype=np.int8)  # status bytes by position (_status), kept with alpha
    for t in range(n):
        st[t] = _status(alpha[t], C[t], y[t])
    v = (alpha, G, Gbar, C, QD, st, gx, cache)
    sw_i = np.empty(n, dtype=np.int64)
    sw_j = np.empty(n, dtype=np.int64)
    active_size = n

    # ---- initial gradient (warm start: rows of the nonzero alphas) ----
    # Rows of alphas at the upper bound go through a scratch row, not the cache: the steps mostly pick
    # free variables, so the cache starts with (up to its capacity) the free ones' rows instead of
    # whichever rows the loop computed last (see the module docstring).
    for t in range(n):
        G[t] = -1.0
    scratch = np.empty(n, dtype=store.dtype)
    for i in range(n):
        if alpha[i] > 0.0 and alpha[i] >= C[i]:
            Qi = _row_tail(i, 0, cache, scratch, gx, gk5, ws)  # the cache is still empty here
            a = alpha[i]
            for t in range(n):
                G[t] += a * Qi[t]
                Gbar[t] += C[i] * Qi[t]
    for i in range(n):
        if alpha[i] > 0.0 and alpha[i] < C[i]:
            Qi = store[_get_row(i, n, -1, cache, gx, gk5, ws)]
            a = alpha[i]
            for t in range(n):
                G[t] += a * Qi[t]

    # ---- planning-ahead state: history of the 3 most recent directions (positions) ----
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
    gap = np.inf
    counter = min(n, 1000) + 1
    while True:
        if max_iter >= 0 and it >= max_iter:
            status = 1
            break
        counter -= 1
        if counter == 0:
            counter = min(n, 1000)
            if shrinking:
                old_size = active_size
                active_size, unshrunk, moved = _shrink(active_size, unshrunk, tol, v, gk5, ws, sw_i,
                                                       sw_j, scratch)
                if moved or active_size != old_size:
                    h_p[:] = -1
                    last_free = False
                    last_plan = False

        # WSS2 on the active set; when it is optimal there, the final check on all variables
        for attempt in range(2):
            i, gmax = _select_i(active_size, st, G)
            j = -1
            gmax2 = -np.inf
            if i >= 0:
                si = _cached_slot(i, active_size, slot_of, rlen, stamp, counters)
                if si < 0:
                    si = _get_row(i, active_size, -1, cache, gx, gk5, ws)
                j, gmax2 = _select_j(active_size, i, gmax, store, si, st, G, QD)
            gap = gmax + gmax2
            if i < 0 or j < 0 or gap < tol:
                i = -1
            if i >= 0 or active_size == n:
                break
            _reconstruct(active_size, v, gk5, ws, scratch)
            active_size = n
            h_p[:] = -1
            last_free = False
            last_plan = False
            counter = 1  # shrink at the next step
        if i < 0:
            break

        it += 1

        # ---- planning-ahead: modified working-set selection after a planning step ----
        if planning and last_plan:
            gw, _ = _clipped_gain(i, j, QD[i] + QD[j] - 2.0 * y[i] * y[j] * store[slot_of[i]][j],
                                  alpha, C, G, y)
            best = -np.inf
            bp = -1
            bq = -1
            for r in range(n_partner):
                hp = h_p[part[r]]
                hq = h_q[part[r]]
                if hp < 0 or hp >= active_size or hq >= active_size:
                    continue
                gr, _ = _clipped_gain(hp, hq, h_a[part[r]], alpha, C, G, y)
                if gr > best:
                    best = gr
                    bp = hp
                    bq = hq
            g_ch = gw
            other = False
            if bp >= 0 and plan_gain1 + gw < eta * (plan_gain1 + best):
                i, j, g_ch, other = bp, bq, best, True
            # the planning step's own working set (slot 0): its line search from here lands where the plain
            # SMO step would have, so the double step gains plan_gain1 + g0 > 0; taken when the chosen one's
            # double step would gain less than eta times that (a partner clipped at the box cannot make up
            # for the planning step's loss, and the double step could lower the objective)
            p0 = h_p[0]
            q0 = h_q[0]
            if p0 >= 0 and p0 < active_size and q0 < active_size:
                g0, _ = _clipped_gain(p0, q0, h_a[0], alpha, C, G, y)
                if plan_gain1 + g_ch < eta * (plan_gain1 + g0):
                    i, j, other = p0, q0, True
            if other:
                n_partner_taken += 1

        si = _cached_slot(i, active_size, slot_of, rlen, stamp, counters)
        if si < 0:
            si = _get_row(i, active_size, -1, cache, gx, gk5, ws)
        sj = _cached_slot(j, active_size, slot_of, rlen, stamp, counters)
        if sj < 0:
            sj = _get_row(j, active_size, si, cache, gx, gk5, ws)
        Qi = store[si]
        Qj = store[sj]
        s = -y[i] * y[j]
        a_v = QD[i] + QD[j] + 2.0 * s * Qi[j]
        if a_v <= 0.0:
            a_v = TAU
        ai_old = alpha[i]
        aj_old = alpha[j]

        took_plan = False
        gain_step = 0.0
        if planning:
            # cross terms d_v^T Q d_k with the history (rows i, j are valid on the active set)
            for r in range(3):
                hp = h_p[r]
                if hp >= 0 and hp < active_size and h_q[r] < active_size:
                    hq = h_q[r]
                    hs = -y[hp] * y[hq]
                    h_cv[r] = (Qi[hp] + hs * Qi[hq]) + s * (Qj[hp] + hs * Qj[hq])
                else:
                    h_cv[r] = np.nan
            # (no planning step right before a shrinking pass: it clears the history, and the next step
            # could not be selected with the planning step's working set among the candidates)
            if last_free and (not last_plan) and h_p[0] >= 0 and not np.isnan(h_cv[0]) \
                    and not (shrinking and counter == 1) \
                    and not (h_p[0] == i and h_q[0] == j) and not (h_p[0] == j and h_q[0] == i):
                mu, npart = _plan_step(i, j, s, a_v, alpha, C, G, y, h_p, h_q, h_a, h_c, h_cv,
                                       pa_recent)
                if npart > 0:
                    g_v = -(G[i] + s * G[j])
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
            if planning:
                _, step_free = _clipped_gain(i, j, a_v, alpha, C, G, y)
            _smo_update(i, j, Qi[j], alpha, C, G, QD, y)
            if planning:
                mu_t = alpha[i] - ai_old
                g_v = -(G[i] + s * G[j])
                gain_step = mu_t * g_v - 0.5 * a_v * mu_t * mu_t

        st[i] = _status(alpha[i], C[i], y[i])
        st[j] = _status(alpha[j], C[j], y[j])

        # ---- gradient update on the active set ----
        dai = alpha[i] - ai_old
        daj = alpha[j] - aj_old
        for t in range(active_size):
            G[t] += Qi[t] * dai + Qj[t] * daj

        # ---- G_bar when a variable enters or leaves the upper bound (full rows, via the cache) ----
        for w in range(2):
            p = i if w == 0 else j
            old = ai_old if w == 0 else aj_old
            if (old >= C[p]) != (alpha[p] >= C[p]):
                cp = C[p] if alpha[p] >= C[p] else -C[p]
                Qp = store[_get_row(p, n, -1, cache, gx, gk5, ws)]
                for t in range(n):
                    Gbar[t] += cp * Qp[t]

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
            print("smo iter", it, "active", active_size, "gap", gap)

    if active_size < n:
        _reconstruct(active_size, v, gk5, ws, scratch)
    return G, it, status, n_plan, n_partner_taken, counters


@numba.njit(cache=True, inline="always")
def plan_mu3(H00, H01, H02, H11, H12, H22, g_v, g0, g1):
    """PA-SMO's 3-d plan: the first component of the Newton step ``H^-1 g`` of the sub-problem on the
    directions (v, d_0, d_1), by Cramer's rule; NaN when H is nearly singular (then every acceptance
    test fails). Shared with the local solver (:mod:`gpusvm._backend.ops.local_smo`), whose CUDA twin
    evaluates the same expressions in the same order."""
    det = (H00 * (H11 * H22 - H12 * H12) - H01 * (H01 * H22 - H12 * H02)
           + H02 * (H01 * H12 - H11 * H02))
    m2 = H00 * H11 - H01 * H01
    if m2 > PA_COND * H00 * H11 and det > PA_COND * H00 * H11 * H22:
        num = (g_v * (H11 * H22 - H12 * H12) - H01 * (g0 * H22 - H12 * g1)
               + H02 * (g0 * H12 - H11 * g1))
        return num / det
    return np.nan


@numba.njit(cache=True, inline="always")
def plan_mu2(H00, H01, H11, g_v, g0):
    """PA-SMO's 2-d plan on (v, d_0), as :func:`plan_mu3`; NaN when H is nearly singular."""
    det = H00 * H11 - H01 * H01
    if det > PA_COND * H00 * H11:
        return (H11 * g_v - H01 * g0) / det
    return np.nan


@numba.njit(cache=True)
def _plan_step(i, j, s, a_v, alpha, C, G, y, h_p, h_q, h_a, h_c, h_cv, pa_recent):
    """The planning-ahead step mu along v = e_i + s e_j and the number of planned partners (0: take
    the plain SMO step): the first component of the Newton step of the 3-d (v, d_0, d_1) or 2-d
    (v, d_0) sub-problem, kept only when it moves in the ascent direction of v and stays strictly
    inside the box."""
    g_v = -(G[i] + s * G[j])
    ai = alpha[i]
    aj = alpha[j]
    p0 = h_p[0]
    q0 = h_q[0]
    g0 = -(G[p0] - y[p0] * y[q0] * G[q0])
    H00 = a_v
    H01 = h_cv[0]
    H11 = h_a[0]
    if pa_recent == 3 and h_p[1] >= 0 and not np.isnan(h_cv[1]) and not np.isnan(h_c[0]):
        p1 = h_p[1]
        q1 = h_q[1]
        g1 = -(G[p1] - y[p1] * y[q1] * G[q1])
        mu = plan_mu3(H00, H01, h_cv[1], H11, h_c[0], h_a[1], g_v, g0, g1)
        if mu * g_v > 0.0 and 0.0 < ai + mu < C[i] and 0.0 < aj + s * mu < C[j]:
            return mu, 2
    mu = plan_mu2(H00, H01, H11, g_v, g0)
    if mu * g_v > 0.0 and 0.0 < ai + mu < C[i] and 0.0 < aj + s * mu < C[j]:
        return mu, 1
    return 0.0, 0


_CODES = GRAM_CODES  # (GramSpec.code gives them; the tests build the solver's gk tuple from these)


_DENSE_MAX_BYTES = 256 * 2**20


# rows of dense X gathered / converted at a time while _prepare writes its transposed copy
_PREPARE_BLOCK_BYTES = 4 * 2**20


@numba.njit(cache=True, nogil=True)
def _transpose_into(blk, XT, j0):
    """``XT[:, j0:j0 + len(blk)] = blk.T`` row by row of ``blk`` (float64, C-contiguous): a copy, so the same
    values; 3x faster than NumPy's strided assignment for a class pair of digits (270 x 64: 11.5 -> 4 us)."""
    m, d = blk.shape
    for j in range(m):
        for k in range(d):
            XT[k, j0 + j] = blk[j, k]


def _prepare(X, dense_max_bytes=_DENSE_MAX_BYTES, rows=None):
    """The compiled solver's view of X (of ``X[rows]`` when ``rows`` is given): (sparse, XT, indptr,
    indices, data, sq, n_buf).

    Dense X, and CSR X whose dense copy fits 256 MB, becomes a float64 C-contiguous *transposed copy*
    (d, n) that the solver permutes in place; larger CSR X stays in training order (float64 data, int64
    indices). Dense X is transposed block by block (``rows`` gathered, float32 converted, a block at a
    time): its transposed copy is the only copy of X made here, so a caller that would copy the
    problem's rows out of a larger X (one-vs-one pairs, LIBSVM's class order) can pass ``rows`` instead.
    """
    import scipy.sparse as sp

    if sp.issparse(X):
        X = X.tocsr()
        if rows is not None:
            X, rows = X[np.asarray(rows, dtype=np.int64)], None  # (the size of its stored values)
        n, d = X.shape
        # A row of Q from dense X^T costs nnz(x_i) contiguous axpy sweeps over the positions (zero
        # features of x_i are skipped), from CSR one gather per stored value of every x_t: the dense
        # copy wins even for sparse data (measured: a9a 10k, 11% nonzero, 1.6-1.9 s -> 0.9 s; w8a 15k,
        # 4% nonzero, 0.82 -> 0.50 s; same steps and objective), so it is used whenever it fits
        if n * d * 8 <= dense_max_bytes:
            X = X.toarray()
    if sp.issparse(X):
        data = np.ascontiguousarray(X.data, dtype=np.float64)
        indices = np.ascontiguousarray(X.indices, dtype=np.int64)
        indptr = np.ascontiguousarray(X.indptr, dtype=np.int64)
        sq = np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel()
        n_buf = max(1, int(X.shape[1]))
        return True, np.zeros((1, 1)), indptr, indices, data, sq, n_buf
    X = np.asarray(X)
    if rows is not None:
        rows = np.asarray(rows, dtype=np.int64)
    n, d = (X.shape[0] if rows is None else rows.shape[0]), X.shape[1]
    XT = np.empty((d, n))  # always a copy: the solver swaps its columns
    sq = np.empty(n)
    step = max(8, _PREPARE_BLOCK_BYTES // max(8 * d, 1))
    for j0 in range(0, n, step):
        j1 = min(n, j0 + step)
        blk = X[j0:j1] if rows is None else np.take(X, rows[j0:j1], axis=0)
        blk = blk.astype(np.float64, copy=False)
        _transpose_into(blk, XT, j0)  # XT[:, j0:j1] = blk.T
        sq[j0:j1] = np.einsum("ij,ij->i", blk, blk)  # (row by row: the same sums as over all of X)
        del blk  # (before the next block is gathered)
    return False, XT, np.zeros(2, dtype=np.int64), np.zeros(1, dtype=np.int64), np.zeros(1), sq, 1


def _row_sqnorms(X):
    """The squared norms :func:`_prepare` gives the rows of dense ``X`` (float32 or float64): ``np.einsum`` over
    C-contiguous float64 blocks of rows, row by row the same sums whichever rows a block holds (the blocks of
    a problem's gathered rows there, of X's rows here). Not ``be.row_sqnorms``, which sums over X as laid
    out: over a Fortran-ordered X its sums differed in the last bit (blobs of 7 features)."""
    X = np.ascontiguousarray(X)
    n, d = X.shape
    sq = np.empty(n)
    step = max(8, _PREPARE_BLOCK_BYTES // max(8 * d, 1))
    for j0 in range(0, n, step):
        blk = X[j0:j0 + step].astype(np.float64, copy=False)
        sq[j0:j0 + blk.shape[0]] = np.einsum("ij,ij->i", blk, blk)
    return sq


def _prepare_precomputed(X, K):
    """The compiled solver's view of index points ``X`` (gpusvm._gram) into the precomputed Gram matrix
    ``K``, in :func:`_prepare`'s layout: "sparse" (nothing is swapped but ``perm``), data = K row-major
    (no copy when K is C-contiguous float64, as SVC stores it), indptr = [row length], indices = the
    problem's rows of K, and k(x, x) as the squared norms (what :func:`_diag` returns for code 4)."""
    K = np.ascontiguousarray(K, dtype=np.float64)
    rows = np.asarray(X[:, 0], dtype=np.int64)
    diag = np.ascontiguousarray(K[rows, rows], dtype=np.float64)
    return True, np.zeros((1, 1)), np.array([K.shape[1]], dtype=np.int64), rows, K.reshape(-1), diag, 1


def _diag(sq, spec):
    if spec.kind in ("linear", "precomputed"):  # (precomputed: sq holds k(x, x), _prepare_precomputed)
        return sq.copy()
    if spec.kind == "poly":
        return (spec.gamma * sq + spec.coef0) ** spec.degree
    if spec.kind == "rbf":
        return np.ones_like(sq)
    return np.tanh(spec.gamma * sq + spec.coef0)


@register_op("smo_pairwise", "cpu")
def smo_pairwise_cpu(be, X, y, spec, C, *, tol=1e-3, max_iter=-1, cache_bytes=200 * 2**20, alpha0=None,
                     x_sqnorm=None, gram_dtype="float32", planning=False, pa_recent=2, shrinking=True,
                     verbose=0, dense_max_bytes=None, rows=None):
    """Solve the binary C-SVC dual with pair-at-a-time SMO (LIBSVM) or planning-ahead SMO.

    Parameters
    ----------
    X : {ndarray, CSR matrix} of shape (n, d), or of shape (N, d) with ``rows``
    y : ndarray of shape (n,), values in {-1, +1}
    spec : GramSpec
    C : ndarray of shape (n,)
        Per-sample upper bounds (C times class and sample weights); C_i = 0 fixes alpha_i at 0.
    tol : float
        Stop when max_{I_up} -y G - min_{I_low} -y G < tol.
    max_iter : int
        Limit on SMO steps; -1 for none.
    cache_bytes : int
        Byte budget of the Gram-row cache (at least two rows are always kept; fewer than it allows when
        they cannot be reserved, see :func:`gpusvm._backend.base.reserve_rows`; ``info["cache_rows"]`` reports
        the rows kept).
    alpha0 : ndarray of shape (n,), optional
        Feasible warm start; the gradient is computed from its nonzero entries.
    x_sqnorm : ignored
        Squared row norms are computed here in float64 (accepted for the op's common signature).
    gram_dtype : {"float32", "float64"}
        Type of the cached Gram values (alpha and the gradient are always float64).
    planning : bool
        Planning-ahead SMO instead of plain SMO.
    pa_recent : {2, 3}
        Plan with the 2 or 3 most recent working sets (only with ``planning``).
    shrinking : bool
        LIBSVM's shrinking heuristic.
    dense_max_bytes : int, optional
        CSR X is copied to a dense transposed float64 array when that copy takes at most this many
        bytes (default 256 MB): its Gram rows are faster to compute, even for sparse data.
    rows : int array of shape (n,), optional
        Solve the problem of ``X[rows]`` (host indices) without forming that copy: dense X's rows are
        gathered into the solver's own transposed copy block by block (the same problem and solution
        to the bit as from ``X[rows]``).

    Returns
    -------
    dict with alpha (n,), G (n,) = Q alpha - 1, n_iter, converged, and ``info``: planning and
    partner steps, cache hits and misses (a row extended to a longer prefix counts as a miss), Gram
    values evaluated, cache capacity in rows and slots used.
    """
    n = int(np.shape(y)[0])
    yp = np.array(y, dtype=np.float64)  # copies: the solver permutes them
    Cp = np.array(C, dtype=np.float64)
    if spec.kind == "precomputed":
        if rows is not None:
            X = X[np.asarray(rows, dtype=np.int64)]  # (index points: one column)
        sparse, XT, indptr, indices, data, sq, n_buf = _prepare_precomputed(X, spec.matrix)
    else:
        sparse, XT, indptr, indices, data, sq, n_buf = _prepare(
            X, _DENSE_MAX_BYTES if dense_max_bytes is None else int(dense_max_bytes), rows=rows)
    QD = _diag(sq, spec)
    if alpha0 is None:
        alpha = np.zeros(n)
    else:
        alpha = np.clip(np.asarray(alpha0, dtype=np.float64), 0.0, Cp)
    perm = np.arange(n, dtype=np.int64)
    qdtype = np.float64 if np.dtype(gram_dtype) == np.float64 else np.float32  # (str(dtype) costs 20 us)
    row_bytes = max(1, n * np.dtype(qdtype).itemsize)
    store = reserve_rows(np, int(max(2, min(n, int(cache_bytes) // row_bytes))), n, qdtype, min_rows=2)
    cap = int(store.shape[0])
    gx = (XT, indptr, indices, data, perm, sq.copy(), yp)
    gk = (bool(sparse), spec.code, float(spec.gamma), float(spec.coef0), int(spec.degree),
          int(n_buf))
    Gp, it, status, n_plan, n_partner, counters = _solve(
        gx, gk, Cp, alpha, QD, store, float(tol), int(max_iter), bool(shrinking), bool(planning),
        int(pa_recent), PA_ETA, bool(verbose))
    alpha_out = np.empty(n)
    alpha_out[perm] = alpha
    G = np.empty(n)
    G[perm] = Gp
    return {
        "alpha": alpha_out, "G": G, "n_iter": int(it), "converged": status == 0,
        "info": {"planning_steps": int(n_plan), "partner_steps": int(n_partner),
                 "cache_hits": int(counters[2]), "cache_misses": int(counters[3]),
                 "gram_evaluations": int(counters[4]), "cache_rows": cap,
                 "cache_rows_used": int(counters[1])},
    }


# ---------------------------------------------------------------------------------------------------
# Many small problems in one call (one-vs-one SVC's class pairs)
# ---------------------------------------------------------------------------------------------------

@numba.njit(cache=True, nogil=True)
def _block_sum(a, lo, n):
    """:func:`_pairwise_sum` of at most 128 values: below 8 one after the other, else with 8 accumulators
    (the values after the last multiple of 8 added to their sum one by one)."""
    if n < 8:
        res = -0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    end = n - n % 8
    while i < end:
        k = lo + i
        r0 += a[k]
        r1 += a[k + 1]
        r2 += a[k + 2]
        r3 += a[k + 3]
        r4 += a[k + 4]
        r5 += a[k + 5]
        r6 += a[k + 6]
        r7 += a[k + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@numba.njit(cache=True, nogil=True)
def _pairwise_sum(a, lo, n):
    """NumPy's pairwise summation of ``a[lo:lo + n]`` (float64), the sum its add reduction of a contiguous
    float64 vector computes after its initial 0.0 (so ``np.sum(a[lo:lo + n]) == 0.0 + this``, to the bit,
    tests/test_pair_batch.py): blocks of up to 128 values by :func:`_block_sum`, longer runs as the sum of
    their two halves cut at a multiple of 8 (``left + right``). The recursion is walked with an explicit stack:
    Numba's cache does not take recursive functions (a process that loaded one from it crashed)."""
    if n <= 128:
        return _block_sum(a, lo, n)
    los = np.empty(64, dtype=np.int64)  # the frames: a run (start, length) and how far it is (0, 1, 2)
    lens = np.empty(64, dtype=np.int64)
    state = np.zeros(64, dtype=np.int64)
    vals = np.empty(64)  # the sums of the finished runs not yet added to their sibling
    los[0], lens[0] = lo, n
    top, nv = 0, 0
    while top >= 0:
        m = lens[top]
        if m <= 128:
            vals[nv] = _block_sum(a, los[top], m)
            nv += 1
            top -= 1
            continue
        half = m // 2
        half -= half % 8
        if state[top] == 2:  # both halves summed
            vals[nv - 2] = vals[nv - 2] + vals[nv - 1]
            nv -= 1
            top -= 1
            continue
        state[top] += 1
        first = state[top] == 1
        los[top + 1] = los[top] if first else los[top] + half
        lens[top + 1] = half if first else m - half
        state[top + 1] = 0
        top += 1
    return vals[0]


@numba.njit(cache=True, nogil=True)
def _bias_of(y, alpha, G, C):
    """:func:`gpusvm._solvers._common.bias` (margin ``BOUND_MARGIN`` = 1e-12) of one solved problem, each
    operation as there: the free variables' ``y G`` by :func:`~.bias.free_yG`'s test, NumPy's sum of them
    (:func:`_pairwise_sum`), else the midpoint of the bounds' min and max (NaN propagated as np.min/np.max)."""
    up, low = 1.0 - 1e-12, 1e-12
    n = y.shape[0]
    w, n_free = free_yG(y, alpha, G, C, up, low)
    if n_free > 0:
        return -((0.0 + _pairwise_sum(w, 0, n)) / np.float64(n_free))
    ub, lb = np.inf, -np.inf
    for t in range(n):
        if not C[t] > 0.0:
            continue
        at_up = alpha[t] >= C[t] * up
        at_low = alpha[t] <= C[t] * low
        pos = y[t] > 0.0
        v = y[t] * G[t]
        if (at_up and not pos) or (at_low and pos):
            if v < ub or v != v:
                ub = v if ub == ub else ub
        if (at_up and pos) or (at_low and not pos):
            if v > lb or v != v:
                lb = v if lb == lb else lb
    if not ub < np.inf:
        ub = lb
    if not lb > -np.inf:
        lb = ub
    return -(0.5 * ((ub + 0.0) + (lb + 0.0)))  # (a zero end as +0.0, as bias does: np.min's choice of zero varies)


@numba.njit(cache=True, nogil=True)
def _solve_pairs(X, sq_all, rows, starts, y, C, QD_all, use_qd, sel, store_type, max_iters, code, gamma, coef0,
                 degree, cache_bytes, tol, shrinking, planning, pa_recent, eta, alpha_out, G_out, n_iter, status, b,
                 sum_alpha):
    """:func:`smo_pairwise_cpu` and the bias of each of many problems on dense rows, as :func:`_prepare` and the
    op would: problem p is ``X[rows[starts[p]:starts[p + 1]]]`` (``X`` float32 or float64, C-contiguous: its rows
    are gathered into each problem's float64 transposed copy, no float64 copy of all of X is made; ``sq_all``: its
    rows' squared norms as :func:`_prepare` sums them) with labels, bounds, diagonal (``QD_all``, when
    ``use_qd``; else RBF's ones or linear's squared norms) and step limit its own, for the problems ``sel``,
    whose Gram values are of ``store_type``'s type (an empty array: one call per type, so that a fit compiles
    :func:`_solve` only for the types it uses, as the op does). Writes alpha and G in the problem's row order
    into ``alpha_out``, ``G_out`` (the same slices), and per problem the steps, the status (0: converged), the
    bias (:func:`_bias_of`) and ``np.sum(alpha)`` (to the bit)."""
    d = X.shape[1]
    indptr = np.zeros(2, dtype=np.int64)
    indices = np.zeros(1, dtype=np.int64)
    data = np.zeros(1)
    gk = (False, code, gamma, coef0, degree, 1)
    for p in sel:
        s = starts[p]
        n = starts[p + 1] - s
        XT = np.empty((d, n))
        sq = np.empty(n)
        for j in range(n):
            r = rows[s + j]
            for k in range(d):
                XT[k, j] = np.float64(X[r, k])
            sq[j] = sq_all[r]
        if use_qd:
            QD = QD_all[s:s + n].copy()
        elif code == 2:
            QD = np.ones(n)
        else:
            QD = sq.copy()
        yp = y[s:s + n].copy()
        Cp = C[s:s + n].copy()
        alpha = np.zeros(n)
        perm = np.arange(n)
        gx = (XT, indptr, indices, data, perm, sq.copy(), yp)
        # (the op's rows: reserve_rows(max(2, min(n, cache_bytes // row_bytes))), without its retry)
        store = np.empty((max(2, min(n, cache_bytes // max(1, n * store_type.itemsize))), n), dtype=store_type.dtype)
        Gp, it, st, _, _, _ = _solve(gx, gk, Cp, alpha, QD, store, tol, max_iters[p], shrinking, planning, pa_recent,
                                     eta, False)
        for k in range(n):
            alpha_out[s + perm[k]] = alpha[k]
            G_out[s + perm[k]] = Gp[k]
        n_iter[p] = it
        status[p] = st
        a, g = alpha_out[s:s + n], G_out[s:s + n]
        b[p] = _bias_of(y[s:s + n], a, g, C[s:s + n])
        sum_alpha[p] = 0.0 + _pairwise_sum(a, 0, n)

"""Batched working-set decomposition for the C-SVC dual (the GPU solver of :class:`gpusvm.SVC`).

Algorithm
---------
A decomposition method in the style of ThunderSVM (Wen et al., "ThunderSVM: A Fast SVM Library on GPUs
and CPUs", JMLR 19, 2018) and cuML's SMO solver (Vanek et al., "A GPU-Architecture Optimized
Hierarchical Decomposition Algorithm for Support Vector Machines", 2017), written over the backend:

* global state on the device: ``alpha`` (float64), ``G = Q alpha - 1`` (float64), ``y``, ``C``, the Gram
  diagonal;
* each round selects a working set ``B`` of ``q`` variables (at most 1,024):
  the maximal violating pair (the top of ``I_up`` and the bottom of ``I_low``) always, then half of the
  new variables from ``I_up`` with the largest ``-y G`` and half from ``I_low`` ranked by the
  second-order gain against the top ``I_up`` index (violators only: unlike ThunderSVM, no
  non-violating fillers, whose Gram rows cost as much and rarely move) (Fan, Chen and Lin, "Working Set Selection Using
  Second Order Information for Training SVM", JMLR 6, 2005), each index once. From the second round on,
  half of the previous working set is kept (those whose alpha moved in the last round first, then the
  most recently added), as ThunderSVM does to avoid oscillating working sets;
* the Gram rows ``K[B, :]`` come from :class:`~gpusvm._solvers.kernel_cache.GramRowCache` (all misses in
  one matrix product; stored as ``gram_dtype``; X converted to that type, and on the CPU densified, once
  per cache) and are used in place in the cache's store (only the ``q x q`` block ``K_BB`` is gathered,
  by ``be.take_block``); when the budget cannot hold ``q`` rows they are computed into a
  temporary block instead (on the GPU the budget is first raised to ``q`` rows when the device has
  room, see :func:`effective_cache_bytes`);
* the local sub-problem is solved by the fused op ``be.local_smo`` (SMO or planning-ahead SMO steps,
  Glasmachers, "The Planning-ahead SMO Algorithm", 2008; one CUDA thread block on the GPU, Numba on the
  CPU) to the loose local tolerance ``max(tol, 0.1 * local gap)`` or ``10 q`` steps, with curvatures from
  the diagonal of the stored rows ``K_BB`` (the values the gradient moves by, so that every step gains);
* the global gradient is updated with one matrix-vector product over the rows of ``B`` whose alpha
  moved (``be.grad_update_rows``, float64 accumulation);
* stop when ``max_{I_up} -y G - min_{I_low} -y G <= tol`` or after ``max_iter`` rounds, or, not
  converged (``info["stalled"]``), after a round that moved no alpha (it would repeat forever). On the GPU a
  round synchronizes with the host a few times (this gap, the one boolean mask that assembles ``B``,
  the cache's host-side bookkeeping of ``i`` and ``B``), never inside the local solve;
* float32 rows are stored as float64 when a sample shows float32 would perturb the problem (linear and
  polynomial grams far from the origin, :func:`~gpusvm._solvers._common.resolve_gram_dtype`); RBF rows
  of dense data far from the origin are computed from the centred data instead (:func:`centered_for_rbf`);
* with float32 Gram rows, the stop is certified in float64: the running gradient carries the rows'
  rounding (about 1e-7 of each value, summed over the support vectors with weights up to ``C``, as in
  LIBSVM's own float Gram cache), so once the gap closes ``G`` is recomputed from alpha with float64
  values (one ``n x n_sv`` Gram pass; on the CPU when it is at most 2**25 values or the solve computed
  at least n_sv Gram rows) and the gap is judged on it. If it is open, the decomposition goes on with
  float64 rows from there (``info["float64_polish"]``).
  Subsets of a9a and ijcnn1 at C = 32 and 1,000 and of phishing at C = 1,000 stopped with float64 gaps
  of 1.1 to 7.4 times tol, closed by 1-3 more rounds; at C = 1 and on w8a the check passed
  (``benchmarks/results/batched_certify_cpu.md``). At C = 1e10 with a duplicated point of the other
  label the float32 stop had a KKT gap of 447 and an intercept 14 off LIBSVM's. The objective and the
  intercept then come from that exact gradient. (Without the pass, after ``max_iter`` rounds or on the
  CPU where it does not apply, the objective alone is recomputed in float64: on the GPU, and on the CPU up to
  4,096 SVs.)

Because the maximal violating pair is in every working set and the local solver's first step is the
WSS2 step on it, every round makes at least the progress of one LIBSVM step, so the method converges
like SMO while doing up to ``10 q`` steps per round on data already in fast memory.

This module imports neither NumPy nor CuPy: everything goes through ``be``.
"""

from __future__ import annotations

import math
import time

from . import BinaryResult
from ._common import Float32StopCheck, bias, gradient_from_alpha, gram_diag, resolve_gram_dtype, up_low_masks

__all__ = ["solve_batched", "default_working_set_size", "effective_cache_bytes"]

MAX_WORKING_SET = 1024
_LOCAL_MODES = {"smo": 0, "pa-smo": 1}


def default_working_set_size(be, n: int) -> int:
    """The default ``q``: 1,024 on the GPU (one full thread block), 512 on the CPU (where the local
    solve is serial; 512 beat 256 and matched 1,024 on a9a and ijcnn1 subsets, see
    benchmarks/results/smo_decomposition_cpu.md), never more than ``n`` (rounded down to an even
    number, at least 2)."""
    q = MAX_WORKING_SET if be.is_gpu else 512
    q = min(q, int(n))
    q -= q % 2
    return max(q, 2)


def effective_cache_bytes(be, n: int, q: int, itemsize: int, cache_bytes: int) -> int:
    """The Gram-row cache budget the decomposition uses: ``cache_bytes``, raised on the GPU to hold the
    ``q`` rows of one working set when the device has room for them (at most half its free memory).

    Below ``q`` rows the rows of every working set are recomputed into a temporary ``q x n`` block each
    round (plus the Gram op's own ``q x n`` result), so a smaller budget saves no memory at the peak and
    repeats the Gram products: on a GPU, where the products dominate a round, that made the default
    ``cache_size=200`` (MB, sized for the CPU) recompute every row once ``n`` exceeds about 50,000
    (float32 rows, q = 1,024). The CPU keeps the budget as given (its memory is the user's to bound,
    and tests run the recomputing path there).
    """
    cache_bytes = int(cache_bytes)
    need = int(q) * int(n) * int(itemsize)
    if not be.is_gpu or cache_bytes >= need:
        return cache_bytes
    try:
        free = int(be.memory_info()[0])
    except Exception:  # no memory query: keep the user's budget
        return cache_bytes
    return need if need <= free // 2 else cache_bytes


def _top_k(xp, score, k, negated=False):
    """Indices of the ``k`` largest entries of ``score`` (unordered), and whether each is finite.
    ``negated``: ``score`` holds the negated scores (the same indices: the ``k`` smallest of it), which
    saves the negation when the caller can form them as cheaply."""
    n = int(score.shape[0])
    k = min(int(k), n)
    if k <= 0:
        return xp.zeros(0, dtype=xp.int64), xp.zeros(0, dtype=bool)
    if k == n:
        idx = xp.arange(n, dtype=xp.int64)
    else:
        idx = xp.argpartition(score if negated else -score, k - 1)[:k]
        if idx.dtype != xp.int64:  # (NumPy's and CuPy's are already: no copy)
            idx = idx.astype(xp.int64)
    return idx, (score[idx] < xp.inf) if negated else (score[idx] > -xp.inf)


def centered_for_rbf(be, X, x_sqnorm):
    """``(X, x_sqnorm)`` of dense ``X`` moved to its mean when its rows lie further from the origin than
    they spread (squared norm of the mean above the total variance); else unchanged.

    The float32 Gram rows compute ||x - z||^2 as ||x||^2 + ||z||^2 - 2 x.z, which cancels: for points near
    c with spread s, float32 keeps about 7 - log10(|c|^2 / s^2) of its seven digits. RBF values depend on differences
    only, so the centred copy (float64) gives the same problem with those digits kept: blobs shifted by
    1,000 (spread 1) had decision values 0.12 off LIBSVM's, 6.8 at 10,000 with 11 of 80 predictions
    wrong; now they agree to the solver's tolerance. Sparse X is left as is (centring would densify it).
    """
    xp = be.xp
    mu = xp.mean(X, axis=0, dtype=xp.float64)
    sq_mean = xp.mean(x_sqnorm)
    if sq_mean.dtype != xp.float64:
        sq_mean = sq_mean.astype(xp.float64)
    h = be.to_host(xp.stack([mu @ mu, sq_mean]))  # (one sync for both)
    mu_sq, sq_mean = float(h[0]), float(h[1])
    if not mu_sq > sq_mean - mu_sq:
        return X, x_sqnorm
    Xc = (X if X.dtype == xp.float64 else X.astype(xp.float64)) - mu  # (a new array either way)
    return Xc, be.row_sqnorms(Xc, xp.float64)


def solve_batched(be, X, y, spec, C, *, tol, max_iter, cache_bytes, alpha0=None, x_sqnorm=None, verbose=0,
                  random_state=None, local="smo", working_set_size=None, gram_dtype="float32", pa_recent=2,
                  **_ignored):
    """Solve the C-SVC dual by batched working-set decomposition (see the module docstring).

    Parameters
    ----------
    be : Backend
    X : {array, CSR matrix} of shape (n, d) on ``be``
    y : array of shape (n,), float64 in {-1, +1}, on ``be``
    spec : GramSpec
    C : array of shape (n,), float64, on ``be``
        Per-sample upper bounds.
    tol : float
        Stop when the maximal KKT violation gap is at most ``tol``.
    max_iter : int or None
        Maximal number of decomposition rounds (None or a negative value: no limit).
    cache_bytes : int
        Budget of the Gram-row cache.
    alpha0 : array of shape (n,), optional
        Feasible warm start.
    x_sqnorm : array of shape (n,), optional
        Squared row norms of X (RBF).
    verbose : int
        Print one line every ``max(1, 100 // verbose)`` rounds when > 0.
    random_state : ignored
        The method is deterministic.
    local : {"smo", "pa-smo"}
        Local solver: SMO with WSS2 steps, or planning-ahead SMO steps.
    working_set_size : int, optional
        ``q``, at most 1,024; default :func:`default_working_set_size`.
    gram_dtype : {"float32", "float64"}
        Type of the stored Gram rows (alpha and gradient are always float64).
    pa_recent : {2, 3}
        PA-SMO plans with the 2 or 3 most recent working sets (see :mod:`gpusvm._backend.ops.local_smo`).

    Returns
    -------
    BinaryResult
        ``n_iter`` counts decomposition rounds; ``info["inner_steps"]`` the local SMO steps in total.
    """
    xp = be.xp
    n = int(X.shape[0])
    if local not in _LOCAL_MODES:
        raise ValueError(f"The 'local' parameter must be one of {sorted(_LOCAL_MODES)}. Got {local!r} instead.")
    mode = _LOCAL_MODES[local]
    if str(gram_dtype) not in ("float32", "float64"):
        raise ValueError(f"The 'gram_dtype' parameter must be 'float32' or 'float64'. Got {gram_dtype!r} instead.")
    gdt = xp.float32 if str(gram_dtype) == "float32" else xp.float64
    if working_set_size is None:
        q = default_working_set_size(be, n)
    else:
        q = int(working_set_size)
        if q < 2 or q > MAX_WORKING_SET:
            raise ValueError(f"The 'working_set_size' parameter must be an int in the range [2, {MAX_WORKING_SET}]. "
                             f"Got {working_set_size!r} instead.")
        q = min(q, n)
    q = max(2, q - q % 2) if n >= 2 else n
    limit = math.inf if max_iter is None or int(max_iter) < 0 else int(max_iter)
    max_steps = 10 * q

    from .kernel_cache import GramRowCache  # noqa: E402 (keep module import light)

    t0 = time.perf_counter()
    y = xp.asarray(y, dtype=xp.float64)
    C = xp.asarray(C, dtype=xp.float64)
    if x_sqnorm is None and spec.kind == "rbf":
        x_sqnorm = be.row_sqnorms(X, xp.float64)
    if spec.kind == "rbf" and gdt == xp.float32 and not be.issparse(X):
        X, x_sqnorm = centered_for_rbf(be, X, x_sqnorm)
    # float32 rows that would perturb the problem (linear and poly grams far from the origin, which
    # centring does not change) are stored as float64 instead: see resolve_gram_dtype
    gram_dtype = resolve_gram_dtype(be, X, spec, x_sqnorm, gram_dtype, computed_in="float32", verbose=verbose)
    gdt = xp.float32 if gram_dtype == "float32" else xp.float64
    diag = gram_diag(be, X, spec, x_sqnorm)
    if alpha0 is None:
        alpha = xp.zeros(n, dtype=xp.float64)
        G = xp.full(n, -1.0, dtype=xp.float64)
    else:
        alpha = xp.array(alpha0, dtype=xp.float64, copy=True)
        G = gradient_from_alpha(be, X, y, alpha, spec, x_sqnorm=x_sqnorm, dtype=gdt)
    cache_bytes_asked = cache_bytes
    cache_bytes = effective_cache_bytes(be, n, q, xp.dtype(gdt).itemsize, cache_bytes)
    # (the cache converts X to the rows' type, and on the CPU densifies CSR X, once: not in every request)
    cache = GramRowCache(be, X, spec, cache_bytes=cache_bytes, dtype=gdt, x_sqnorm=x_sqnorm)

    inner = xp.zeros(1, dtype=xp.int64)
    # per solve, not per round: what the rounds would recompute unchanged
    neg_y = -y
    y_pos = y > 0
    yC = xp.stack([y, C])  # (one gather a round for y[B] and C[B])
    no_kept = xp.zeros(0, dtype=xp.int64)
    neg_pos = -xp.arange(q, dtype=xp.int64)  # the keep order's tie-break (its first nb, nb <= q)
    B_prev = None
    moved_prev = xp.ones(1, dtype=bool)  # (before the first round: "moved", so that it is not a stall)
    n_new_prev = 0
    rounds = 0
    converged = stalled = False
    gap = math.inf
    neg_inf = -xp.inf
    every = max(1, 100 // int(verbose)) if verbose else 0
    check = Float32StopCheck()
    while True:
        s = neg_y * G
        up, low = up_low_masks(be, y, alpha, C, pos=y_pos)
        s_up = xp.where(up, s, neg_inf)
        s_low = xp.where(low, s, xp.inf)
        i_top = xp.argmax(s_up)
        j_min = xp.argmin(s_low)
        m_top, m_low = s_up[i_top], s_low[j_min]
        # the extremes (the gap is their difference, taken on the host: the same float64 subtraction), how
        # many alphas the last round moved, i_top and j_min (host ints for the cache's bookkeeping and
        # for indexing without device index arrays), in the one sync of the check; stack converts the
        # count and the indices to float64, exactly
        h = be.to_host(xp.stack([m_top, m_low, xp.sum(moved_prev, dtype=xp.float64), i_top, j_min]))
        gap, n_moved, i_top_h, j_min_h = float(h[0] - h[1]), int(h[2]), int(h[3]), int(h[4])
        if verbose and rounds % every == 0:
            print(f"[smo_batched] round {rounds}: gap {gap:.6g}, q {q}")
        converged = not (gap > tol)
        if not converged and rounds >= limit:
            break
        # the local steps no longer change alpha (below its float64 resolution): every later round
        # would select the same working set and repeat this one, so stop (not converged) instead
        stalled = not converged and n_moved == 0
        if (converged or stalled) and check.applies(be, gdt, n, alpha, cache.misses):
            # Certify the float32 stop: the running gradient sums float32 rows, whose rounding (about
            # 1e-7 of each value, times C) it carries; at a large C that exceeds tol and the stop is no
            # KKT point of the problem. Recompute G from alpha with float64 values (one n x n_sv Gram
            # pass) and judge the gap on it; if it is open, go on with float64 rows from there.
            G, gap = check.exact_gradient(be, X, y, alpha, spec, x_sqnorm, C)
            converged, stalled = not (gap > tol), False
            if converged or rounds >= limit:
                break
            if verbose:
                print(f"[smo_batched] float64 gradient: gap {gap:.6g} > tol; continuing with float64 rows")
            check.switch(rounds, cache)
            gdt, gram_dtype = xp.float64, "float64"
            # drop the float32 rows before float64 ones are stored (the cache's store is the peak on the GPU)
            cache = K_src = K_BB = row_i = None
            cache_bytes = effective_cache_bytes(be, n, q, 8, cache_bytes_asked)
            cache = GramRowCache(be, X, spec, cache_bytes=cache_bytes, dtype=gdt, x_sqnorm=x_sqnorm)
            B_prev, moved_prev, n_new_prev = None, xp.ones(1, dtype=bool), 0
            continue
        if converged or stalled:
            break

        # ---- keep half of the previous working set --------------------------------------------
        taken = xp.zeros(n, dtype=bool)
        if B_prev is not None and q >= 4:
            nb = int(B_prev.shape[0])
            n_keep = min(q // 2, nb)
            # unique keys: moved first, then the most recently added (the last n_new_prev positions), then
            # position: (2 moved + newest) nb + pos, negated for the ascending sort (exact integers)
            neg_key = neg_pos[:nb] - xp.where(moved_prev, 2 * nb, 0)
            newest = neg_key[nb - n_new_prev:]
            xp.subtract(newest, nb, out=newest)
            kept = B_prev[xp.argsort(neg_key)[:n_keep]]
            taken[kept] = True
        else:
            kept = no_kept
        n_new = q - int(kept.shape[0])

        # ---- new variables: the maximal violating pair, top I_up by -yG, I_low by 2nd-order gain ------
        k_up = n_new // 2
        k_low = n_new - k_up
        # only violators: an I_up member must beat the bottom of I_low, an I_low member the top of I_up
        # (ThunderSVM fills up with non-violating variables; their rows cost as much and rarely move)
        # (up & (s > m_low) is s_up > m_low: s_up is -inf outside I_up)
        sc_up = xp.where(taken, neg_inf, xp.where(s_up > m_low, s_up, neg_inf))
        sc_up[i_top_h] = xp.where(taken[i_top_h], neg_inf, xp.inf)
        up_idx, up_ok = _top_k(xp, sc_up, k_up)
        # the indices are distinct; no boolean mask (a host sync on the GPU): the invalid ones write i_top,
        # which is taken by now (kept, or the first of up_idx)
        taken[xp.where(up_ok, up_idx, i_top_h)] = True
        row_i = cache.resident_row(i_top_h)  # (a view of the store: no device index array, no gather)
        row_i = (cache.rows([i_top_h])[0] if row_i is None else row_i).astype(xp.float64)
        b = m_top - s
        # the second-order gains b^2 / a of I_low members with b > 0 (s_low < m_top), negated as _top_k
        # ranks them: -a is formed as 2 K_i - (K_ii + K_jj), the same rounding as a (IEEE negation is
        # exact), so -gain = b^2 / -a bit for bit
        neg_a = 2.0 * row_i - (diag[i_top_h] + diag)
        neg_a = xp.where(neg_a < 0, neg_a, -1e-12)
        neg_gain = xp.where(taken, xp.inf, xp.where(s_low < m_top, b * b / neg_a, xp.inf))
        neg_gain[j_min_h] = xp.where(taken[j_min_h], xp.inf, neg_inf)
        low_idx, low_ok = _top_k(xp, neg_gain, k_low, negated=True)
        # the kept and candidate indices and which candidates are valid in one copy to the host, which
        # filters them: the cache's bookkeeping reads the working set there anyway, and a device boolean
        # mask would read its count first (two syncs a round on the GPU, one so); concatenate makes the
        # flags int64
        nk, nc = int(kept.shape[0]), int(up_idx.shape[0]) + int(low_idx.shape[0])
        h = be.to_host(xp.concatenate([kept, up_idx, low_idx, up_ok, low_ok]))
        new_h = h[nk:nk + nc][h[nk + nc:] != 0]
        B_list = h[:nk].tolist() + new_h.tolist()
        B = xp.asarray(B_list, dtype=xp.int64)
        n_new_prev = int(new_h.shape[0])

        # ---- Gram rows, local solve, global gradient update -------------------------------------
        # rows stay in the cache's store when the budget holds the working set (no q x n copies)
        slots = cache.resident(B_list)
        if slots is not None:
            # (the fused gather: a Numba loop on the CPU, 3-4x faster than NumPy's two-index gather; CuPy's on the GPU)
            K_src, K_BB = cache.store, be.take_block(cache.store, slots, B)
        else:
            K_src = cache.rows(B_list)
            K_BB = K_src[:, B]
        yCB = yC[:, B]
        yB, CB = yCB[0], yCB[1]
        aB = alpha[B]
        # curvatures from the stored values' own diagonal, not the float64 ``diag``: the gradient moves by
        # the stored rows, so a Newton step with a mixed curvature overshoots by their rounding of K_ii
        # (about 3,000 on poly values near 8e9 against curvatures of 1e3-1e4: steps that undo each other)
        dB = xp.diagonal(K_BB).astype(xp.float64)
        a_new, steps, _ = be.local_smo(K_BB, yB, aB, G[B], CB, dB, tol, max_steps, mode, pa_recent)
        inner += steps
        delta = a_new - aB
        alpha[B] = a_new
        be.grad_update_rows(G, y, K_src, delta * yB, slots)
        # (rows computed into a temporary block are released before the next round computes its own)
        K_src = K_BB = None
        B_prev = B
        moved_prev = delta != 0
        rounds += 1

    # the objective and the local steps read with the intercept's sums (one sync on the GPU, not three)
    obj = check.objective(be, X, y, alpha, G, spec, x_sqnorm, gdt, on_device=True)
    b_, (obj, inner_steps) = bias(be, y, alpha, G, C, also=(obj, inner[0].astype(xp.float64)))
    inner_steps = int(inner_steps)
    info = {
        "inner_steps": inner_steps,
        "rounds": rounds,
        "working_set_size": q,
        "local": local,
        "gram_dtype": str(gram_dtype),
        "gap": gap,
        "stalled": stalled,
        **check.info(cache),
        "cache_bytes": cache_bytes,
        "time_s": time.perf_counter() - t0,
    }
    if verbose:
        print(f"[smo_batched] done: {rounds} rounds, {inner_steps} local steps, gap {gap:.6g}, "
              f"objective {obj:.10g}, converged {converged}")
    return BinaryResult(alpha=alpha, b=b_, objective=obj, n_iter=rounds, converged=converged, gradient=G,
                        info=info)

"""Pieces shared by the binary dual solvers (SMO, batched SMO, ALFPGM, DC-SVM), written over ``be.xp``.

Notation follows LIBSVM: ``G = Q alpha - 1`` is the gradient of f(alpha) = 1/2 alpha^T Q alpha - sum(alpha)
(the dual objective to minimize; the reported objective is D = -f), ``-y G`` is the KKT score, and

    I_up  = {t : y_t = +1, alpha_t < C_t} U {t : y_t = -1, alpha_t > 0}
    I_low = {t : y_t = +1, alpha_t > 0}   U {t : y_t = -1, alpha_t < C_t}.

alpha is optimal within ``tol`` when max_{I_up} -y G - min_{I_low} -y G <= tol.
"""

from __future__ import annotations

import math


def gram_diag(be, X, spec, x_sqnorm=None):
    """k(x_i, x_i) for every row of ``X`` (float64), without forming any Gram block."""
    xp = be.xp
    n = X.shape[0]
    if spec.kind == "rbf":
        return xp.ones(n, dtype=xp.float64)
    if spec.kind == "precomputed":  # index points (gpusvm._gram)
        i = X[:, 0].astype(xp.int64)
        return spec.matrix[i, i].astype(xp.float64)
    sq = be.row_sqnorms(X, xp.float64) if x_sqnorm is None else xp.asarray(x_sqnorm, dtype=xp.float64)
    if spec.kind == "linear":
        return sq
    if spec.kind == "poly":
        diag = (spec.gamma * sq + spec.coef0) ** spec.degree
        # values beyond float64 (huge gamma or degree): the batched and ALFPGM solves then returned a zero
        # model (no step moved alpha) with only a ConvergenceWarning; sklearn raises on them ("not finite")
        if not bool(xp.isfinite(diag).all()):
            raise ValueError(f"The polynomial Gram values overflow float64: k(x, x) = (gamma ||x||^2 + coef0) ** "
                             f"degree is not finite for some rows (gamma={spec.gamma!r}, coef0={spec.coef0!r}, "
                             f"degree={spec.degree}). Rescale X (e.g. with sklearn.preprocessing.StandardScaler), "
                             "or lower gamma / degree.")
        return diag
    return xp.tanh(spec.gamma * sq + spec.coef0)


# LIBSVM's own step limit of a solve (svm.cpp: max(10,000,000, 100 l)), which its svm-train applies always and
# our solvers where max_iter=-1 asks for none: a pathological problem (a poly gram of data far from the origin)
# otherwise ran on for ever, each pair step still raising the objective a little
LIBSVM_MIN_STEPS = 10_000_000


def step_cap(max_iter, n) -> int:
    """``max_iter`` of a pair-at-a-time solve of ``n`` variables, with -1 (or None) as LIBSVM's limit
    max(10^7, 100 n)."""
    if max_iter is None or int(max_iter) < 0:
        return max(LIBSVM_MIN_STEPS, 100 * int(n))
    return int(max_iter)


def step_limit_text(max_iter) -> str:
    """How a ConvergenceWarning names the limit :func:`step_cap` applied for the estimator's ``max_iter``."""
    if max_iter is None or int(max_iter) < 0:
        return "LIBSVM's step limit max(10^7, 100 n), which max_iter=-1 keeps"
    return f"max_iter={max_iter}"


def early_stop_causes(n_unconverged, n_stalled, max_iter, tol) -> tuple[str, str]:
    """How a ConvergenceWarning tells the ``n_unconverged`` solves that stopped before ``tol`` apart: those that
    reached the step limit (:func:`step_limit_text`) and the ``n_stalled`` among them that stopped before any
    limit, their steps no longer moving alpha (``info["stalled"]``). Returns (the causes, the parameters to raise)."""
    capped = n_unconverged - n_stalled
    why = "; ".join(([f"{capped} at {step_limit_text(max_iter)}"] if capped else []) + (
        [f"{n_stalled} stalled: their steps stopped changing alpha (float64) before the KKT gap reached "
         f"tol={tol}"] if n_stalled else []))
    remedy = " or ".join((["max_iter"] if capped else []) + (["tol"] if n_stalled else []))
    return why, remedy


def up_low_masks(be, y, alpha, C, pos=None):
    """Boolean masks of I_up and I_low; ``pos``: ``y > 0`` when the caller keeps it (it does not change
    between a solver's rounds)."""
    xp = be.xp
    if pos is None:
        pos = y > 0
    below = alpha < C
    above = alpha > 0
    # (pos & below) | (~pos & above) and its mirror, in 2 ops instead of 7 (each a kernel launch on the GPU)
    return xp.where(pos, below, above), xp.where(pos, above, below)


def kkt_extremes(be, y, alpha, G, C):
    """(m, M) = (max over I_up, min over I_low) of -y G, as 0-d device arrays (no host sync).

    An empty set gives -inf / +inf.
    """
    xp = be.xp
    up, low = up_low_masks(be, y, alpha, C)
    s = -y * G
    m = xp.max(xp.where(up, s, -xp.inf))
    M = xp.min(xp.where(low, s, xp.inf))
    return m, M


def kkt_gap(be, y, alpha, G, C) -> float:
    """max_{I_up} -y G - min_{I_low} -y G as a Python float (one host sync)."""
    m, M = kkt_extremes(be, y, alpha, G, C)
    return float(m - M)


def dual_objective(be, alpha, G, *, on_device=False) -> float:
    """D(alpha) = sum(alpha) - 1/2 alpha^T Q alpha computed from G = Q alpha - 1; ``on_device``: as a 0-d
    array on ``be``, unread (to read with other values in one copy, e.g. :func:`bias`'s ``also``)."""
    xp = be.xp
    d = 0.5 * xp.sum(alpha) - 0.5 * xp.dot(alpha, G)
    return d if on_device else float(d)


#: The relative margin within which :func:`bias` counts an alpha as at its bound (0 or C_i)
BOUND_MARGIN = 1e-12


def bias(be, y, alpha, G, C, *, also=()):
    """The intercept b (decision f(x) = sum alpha_i y_i k(x_i, x) + b), computed as LIBSVM's rho = -b:
    the mean of y G over free variables, or the midpoint of the feasible interval when none is free.

    An alpha within a relative 1e-12 of a bound counts as at it; a variable with ``C_i = 0`` counts nowhere. A
    warm start (DC-SVM's levels, rescaled to feasibility) can leave an alpha at C (1 - 1e-16), and so can
    LIBSVM's pair update, which sets the second
    alpha from the first (``C_j + diff``): when both reach a bound in one step, one can land at C (1 - 1e-14)
    (the pair-at-a-time solver reproduces LIBSVM's alphas, this too); counted as free, that
    one variable would set b to an end of the interval of optimal intercepts, where LIBSVM leaves it (see
    SVC's ``intercept_``).

    ``also``: float64 0-d arrays on ``be`` to read in the same copy to the host (one GPU sync, not one
    each); then returns ``(b, [their values as floats])``.
    """
    xp = be.xp
    up, low = 1.0 - BOUND_MARGIN, BOUND_MARGIN
    # the count (exact in float64) and the sum in one copy to the host, not two scalar reads (GPU syncs);
    # one compiled pass on the CPU (the fused op free_sums)
    h = be.free_sums(y, alpha, G, C, up, low, also)
    extra = [float(v) for v in h[2:]]
    n_free = int(h[0])
    if n_free > 0:
        rho = float(h[1]) / n_free
    else:
        yG = y * G
        # a variable whose bound is 0 is fixed at 0 and bounds no intercept (SVC's cross-validation folds hold
        # their held-out rows so, gpusvm.svc.SVC._cv_decisions_together); at both ends it would bound both sides
        live = C > 0
        at_up = (alpha >= C * up) & live
        at_low = (alpha <= C * low) & live
        pos = y > 0
        ub_mask = (at_up & ~pos) | (at_low & pos)
        lb_mask = (at_up & pos) | (at_low & ~pos)
        h = be.to_host(xp.stack([xp.min(xp.where(ub_mask, yG, xp.inf)), xp.max(xp.where(lb_mask, yG, -xp.inf))]))
        ub, lb = float(h[0]), float(h[1])
        if not (ub < float("inf")):
            ub = lb
        if not (lb > -float("inf")):
            lb = ub
        # (+ 0.0: a zero end as +0.0. Which of several equal ends 0.0 and -0.0 np.min / np.max return is up to
        # their SIMD loops, and the sign of that zero set the sign of a zero intercept: -0.0 here, 0.0 in the
        # compiled pairs' _bias_of, which takes the first, for the same alpha and G)
        rho = 0.5 * ((ub + 0.0) + (lb + 0.0))
    return (-rho, extra) if also else -rho


def gradient_from_alpha(be, X, y, alpha, spec, *, x_sqnorm=None, max_bytes=None, dtype=None):
    """G = Q alpha - 1 from scratch, touching only the Gram columns of the nonzero alphas (warm starts).

    Computed as ``G[r] = y[r] * (K(X[r], X_sv) @ (alpha_sv * y_sv)) - 1`` over row blocks ``r`` of X, each
    block's ``len(r) x n_sv`` Gram tile, with its float64 copy (float32 values) or the Gram op's product tile
    (poly, CSR), bounded by ``max_bytes`` (default 64 MB; one block at a time), so the product is a
    contiguous matrix-vector product and no n_sv x n array (or its transposed float64 copy) is formed.
    ``dtype`` is the type of the Gram values (float32 halves the Gram cost); the products accumulate in
    float64.
    """
    xp = be.xp
    n = int(X.shape[0])
    G = xp.full(n, -1.0, dtype=xp.float64)
    sv = xp.nonzero(alpha > 0)[0]
    m = int(sv.shape[0])
    if m == 0:
        return G
    if x_sqnorm is None and spec.kind == "rbf":
        x_sqnorm = be.row_sqnorms(X, xp.float64)
    beta = (alpha[sv] * y[sv]).astype(xp.float64)
    Xs = be.take_rows(X, sv)
    sq_s = None if x_sqnorm is None else x_sqnorm[sv]
    itemsize = xp.dtype(dtype or xp.float64).itemsize
    budget = 64 * 2**20 if max_bytes is None else int(max_bytes)
    # A block row costs its Gram values plus, at the peak, the larger of the Gram op's separate product
    # tile (poly, whose transform needs it apart, and CSR products; other dense tiles are formed in place)
    # and the float64 copy of float32 values for the product (n = 30,000, 3,000 SVs: 193 MB peak for float32
    # values with the tile sized for the Gram values alone and the previous block alive, now 64 MB). At most
    # isqrt(budget / itemsize) rows, so that the Gram op (given the same budget) makes the block one tile
    # (its tiles are square-ish: a taller block would come as tiles plus the block)
    prod_tile = itemsize if spec.kind == "poly" or be.issparse(X) else 0
    row_bytes = m * (itemsize + max(prod_tile, 0 if itemsize == 8 else 8))
    rows = max(1, min(budget // row_bytes, math.isqrt(budget // itemsize)))
    for r0 in range(0, n, rows):
        r1 = min(n, r0 + rows)
        K = be.gram(X[r0:r1], Xs, spec, x_sqnorm=None if x_sqnorm is None else x_sqnorm[r0:r1],
                    y_sqnorm=sq_s, dtype=dtype, max_bytes=budget)
        G[r0:r1] += y[r0:r1] * (K.astype(xp.float64, copy=False) @ beta)
        K = None  # (released before the next block is computed, not after)
    return G


# The float64 gradient that checks a float32 stop costs an n x n_sv Gram pass: cheap on the GPU, not on the
# CPU. On the CPU it is done up to this many Gram values, or when the solve itself computed at least n_sv
# Gram rows (then the check at most doubles the Gram work: full a9a, C = 32, batched, q = 1,024, 2-core CPU:
# 27,734 rows in 25.5 CPU-s, the check 14.1 CPU-s for 11,380 SVs, and its gap was 1.7e-3, not the float32
# run's 9.9e-4). Otherwise the objective alone is recomputed in float64 (an n_sv x n_sv pass) up to
# EXACT_OBJECTIVE_MAX_SV_CPU SVs.
CERTIFY_MAX_ENTRIES_CPU = 2**25
EXACT_OBJECTIVE_MAX_SV_CPU = 4096


def exact_objective(be, X, y, alpha, spec, x_sqnorm, max_bytes=64 * 2**20, *, on_device=False):
    """D(alpha) = sum(alpha) - 1/2 beta^T K beta (beta = y alpha) with float64 Gram values over the
    support vectors, in row chunks of at most ``max_bytes``.

    With float32 Gram rows the running gradient carries their rounding (about 1e-6 relative in D on
    a9a); this makes the reported objective exactly that of the returned coefficients, at the cost of
    one pass over the n_sv x n_sv Gram matrix. ``on_device``: as a 0-d float64 array on ``be``, unread.
    """
    xp = be.xp
    sv = xp.nonzero(alpha > 0)[0]
    m = int(sv.shape[0])
    if m == 0:
        return xp.zeros((), dtype=xp.float64) if on_device else 0.0
    beta = alpha[sv] * y[sv]
    Xs = be.take_rows(X, sv)
    sq = None if x_sqnorm is None else xp.asarray(x_sqnorm, dtype=xp.float64)[sv]
    step = max(1, int(max_bytes) // (8 * m))
    quad = xp.zeros((), dtype=xp.float64)  # accumulated on the device: one host sync at the end
    for r0 in range(0, m, step):
        r1 = min(m, r0 + step)
        Kc = be.gram(be.take_rows(Xs, xp.arange(r0, r1)), Xs, spec,
                     x_sqnorm=None if sq is None else sq[r0:r1], y_sqnorm=sq, dtype=xp.float64)
        quad = quad + beta[r0:r1] @ (Kc @ beta)
    d = xp.sum(alpha) - 0.5 * quad
    return d if on_device else float(d)


class Float32StopCheck:
    """The float64 check of a decomposition's stop with float32 Gram rows (batched SMO, ALFPGM).

    The running gradient sums float32 rows, whose rounding (about 1e-7 of each value, weighted by alphas
    up to ``C``) it carries, so at a large ``C`` a float32 stop can be no KKT point of the problem. At such
    a stop (when :meth:`applies`) the solver recomputes ``G`` from alpha with float64 values
    (:meth:`exact_gradient`, one ``n x n_sv`` Gram pass) and judges the gap on it; if it is open, it goes
    on with float64 rows from there (:meth:`switch`). This object keeps what ``info`` reports of it.
    """

    def __init__(self):
        self.certified = self.polished = False
        self.float32_rounds = None  # rounds done with float32 rows before float64 rows took over
        self.stop_gap = None  # the gap of the float32 stop on the float64 gradient
        self.hits = self.misses = 0  # of the float32 rows' cache, once float64 rows take over

    @staticmethod
    def applies(be, gram_dtype, n, alpha, rows_computed=0) -> bool:
        """Whether a stop with rows of ``gram_dtype`` is checked: float32 rows, always on the GPU; on the
        CPU when the ``n x n_sv`` pass is at most :data:`CERTIFY_MAX_ENTRIES_CPU` values or the solve has
        computed at least ``n_sv`` Gram rows so far (``rows_computed``: its cache's misses)."""
        xp = be.xp
        if xp.dtype(gram_dtype) == xp.float64:
            return False
        if be.is_gpu:
            return True
        n_sv = int(xp.count_nonzero(alpha > 0))
        return int(n) * n_sv <= CERTIFY_MAX_ENTRIES_CPU or n_sv <= int(rows_computed)

    def exact_gradient(self, be, X, y, alpha, spec, x_sqnorm, C):
        """``(G, gap)``: the gradient from alpha with float64 Gram values, and its KKT gap."""
        G = gradient_from_alpha(be, X, y, alpha, spec, x_sqnorm=x_sqnorm, dtype=be.xp.float64)
        self.certified = True
        self.stop_gap = kkt_gap(be, y, alpha, G, C)
        return G, self.stop_gap

    def switch(self, rounds, cache):
        """Float64 rows take over after ``rounds`` rounds; ``cache`` (the float32 rows') is dropped."""
        self.polished, self.float32_rounds = True, rounds
        self.hits, self.misses = self.hits + cache.hits, self.misses + cache.misses

    def objective(self, be, X, y, alpha, G, spec, x_sqnorm, gram_dtype, *, on_device=False):
        """The objective to report: from ``G`` when it is exact (float64 rows, or a checked stop), else
        recomputed from float64 Gram values where affordable (on the GPU, on the CPU up to
        :data:`EXACT_OBJECTIVE_MAX_SV_CPU` SVs), so that it is that of the returned alpha. ``on_device``: as
        a 0-d float64 array on ``be``, unread."""
        xp = be.xp
        if xp.dtype(gram_dtype) != xp.float64 and not self.certified and (
                be.is_gpu or int(xp.count_nonzero(alpha > 0)) <= EXACT_OBJECTIVE_MAX_SV_CPU):
            return exact_objective(be, X, y, alpha, spec, x_sqnorm, on_device=on_device)
        return dual_objective(be, alpha, G, on_device=on_device)

    def info(self, cache) -> dict:
        return {"certified": self.certified, "float64_polish": self.polished,
                "float32_rounds": self.float32_rounds, "float32_stop_gap": self.stop_gap,
                "cache_hits": self.hits + cache.hits, "cache_misses": self.misses + cache.misses}


# Above this median relative perturbation of the pair curvatures (see float32_gram_error), float32 Gram
# values no longer describe the problem: the solvers then store float64 values instead.
FLOAT32_MAX_CURVATURE_ERROR = 1e-5
# Above this error of the worst RBF diagonal computed from float32 rows, over the median pair curvature
# (float32_gram_errors), the same. Measured with the batched solver (C=1, tol 1e-3; 200 standardized points,
# gamma 1e2 to 1e6), float32 against float64 rows: decision values apart by 7e-4 at 9.5e-5 (as float64's
# own distance to LIBSVM), 1.8e-3 at 9.5e-4, 5e-3 at 2.9e-3, 4.7e-2 at 0.43. Raw 0-255 pixel values
# (gamma=0.03, centred) measure 2.9e-5 (skin_nonskin; its float32 solve reached LIBSVM's objective to 3e-7
# on an H100) to 1.2e-4 (uniform pixels; same objective as float64 rows to 1e-8), and keep float32.
FLOAT32_MAX_DIAGONAL_ERROR = 5e-4


def float32_gram_error(be, X, spec, x_sqnorm=None, *, computed_in="float64", sample=64) -> float:
    """The median pair measure of :func:`float32_gram_errors`."""
    return float32_gram_errors(be, X, spec, x_sqnorm, computed_in=computed_in, sample=sample)[0]


def float32_gram_errors(be, X, spec, x_sqnorm=None, *, computed_in="float64", sample=64,
                        rows=None, pair_limit=None) -> tuple[float, float]:
    """How much float32 Gram values perturb the dual problem: (median over pairs, worst RBF diagonal).

    For the pairs ``(i, j)`` of ``sample`` evenly spaced rows, the curvature of a pair step is
    ``A_ij = K_ii + K_jj - 2 K_ij`` (float64); with ``E`` the error of the float32 values, the float32
    problem's curvature is off by ``|E_ii + E_jj - 2 E_ij|``, and a solver that takes curvatures from
    float64 diagonals (LIBSVM's QD) while moving the gradient by float32 rows overshoots by
    ``|E_ii| + |E_jj|``. Returned first: the median over pairs with ``A_ij > 0`` of the larger of the two,
    over ``A_ij`` (0.0 when no pair has a positive curvature). Second, for RBF values computed from float32
    rows (else 0.0): the largest ``|E_ii|`` over the median ``A_ij``, which the median misses when only
    some rows' own distances ``||x||^2 + ||x||^2 - 2 x.x`` cancel (huge gamma).

    The error is that of the float32 values a solver would store: ``computed_in="float64"`` (rounded
    float64 values, LIBSVM's Qfloat and the pair-at-a-time solver) or ``"float32"`` (values computed
    from float32 rows, as the batched decomposition's Gram op does). Data near the origin, scaled as
    usual, measure 1e-9 to 1e-6; linear and polynomial grams of points far from the origin lose the
    relative size of their curvatures: blobs of spread 1 shifted by 1,000 measure 1e-2, where LIBSVM's
    float cache ends at a dual objective below that of alpha = 0.

    64 rows (2,016 pairs) measured what 256 did on all of those data (same order of magnitude, same side of
    the threshold) at 0.5-1 ms on the CPU instead of 10-25 ms: it runs once per binary problem, and 256
    rows made a fit of scikit-learn's digits (45 class pairs) 7x slower.

    ``rows`` (host ints): measure the problem ``X[rows]`` (``x_sqnorm`` then is that problem's).
    ``pair_limit``: only ``pair > pair_limit`` is wanted (see the op ``sample_gram_errors``: the CPU may then
    return inf or 0.0 for the pair measure, on the same side of ``pair_limit``).
    """
    xp = be.xp
    n = int(X.shape[0]) if rows is None else int(rows.shape[0])
    m = min(n, int(sample))
    if m < 2:
        return 0.0, 0.0
    idx = (xp.arange(m, dtype=xp.int64) * (n - 1)) // (m - 1)  # evenly spaced: k (n - 1) // (m - 1)
    if rows is not None:  # (host ints: on the CPU idx is a host array too)
        rows = be.asarray(rows[be.to_host(idx)]) if be.is_gpu else rows[idx]
    S = be.take_rows(X, idx if rows is None else rows)
    sq = None
    if spec.kind == "rbf":
        sq = be.row_sqnorms(S, xp.float64) if x_sqnorm is None else xp.asarray(x_sqnorm, dtype=xp.float64)[idx]
    return be.sample_gram_errors(S, spec, sq, computed_in, pair_limit=pair_limit)


def _poly_bound_log(spec, max_sq):
    """log of ``(gamma max ||x||^2 + |coef0|) ** degree``, a bound of every polynomial Gram value (of the rows
    with squared norms up to ``max_sq``; Cauchy-Schwarz), which the largest diagonal value attains when
    ``coef0 >= 0``; -inf for a zero bound."""
    base = spec.gamma * max_sq + abs(spec.coef0)
    return spec.degree * math.log(base) if base > 0 else -math.inf


def resolve_gram_dtype(be, X, spec, x_sqnorm, gram_dtype, *, computed_in, verbose=0, rows=None) -> str:
    """The Gram value type a solver stores: ``gram_dtype``, except that "float32" becomes "float64" when
    :func:`float32_gram_errors` (``computed_in`` as there) exceed :data:`FLOAT32_MAX_CURVATURE_ERROR` (the
    median pair) or :data:`FLOAT32_MAX_DIAGONAL_ERROR` (the worst RBF diagonal; said on stdout with
    ``verbose``).

    The threshold sits two decades above what scaled data measure (at most 7e-7 on a9a, ijcnn1, w8a,
    phishing, skin_nonskin, digits) and below where float32 solutions drift: 200 blobs of spread 1.5
    shifted by 100 (1e-4 to 2e-4) ended with dual objectives up to 2e-4 and decision values up to 1e-2
    (relative) from the float64 solution; shifted by 300, 0.1 to 0.3 and up to 3.5.

    ``rows`` (host ints): decide for the problem ``X[rows]`` (``x_sqnorm`` then is that problem's).
    """
    if str(gram_dtype) != "float32":
        return str(gram_dtype)
    if spec.kind == "precomputed" and spec.matrix_max_abs > float(be.xp.finfo(be.xp.float32).max):
        # a given matrix beyond float32's range: its float32 rows held inf and the fit ended in "not finite"
        if verbose:
            print("Gram values stored as float64: the precomputed matrix exceeds float32's range", flush=True)
        return "float64"
    if computed_in == "float32" and spec.kind not in ("linear", "precomputed"):
        # a gram computed from float32 rows has intermediates up to 4 max ||x||^2 (the RBF distance
        # ||x||^2 + ||z||^2 - 2 x.z; x.z before gamma scales it): beyond float32's range they overflow
        # to inf or NaN (a zero or wrong model) where the float64 values are of order one. So do polynomial
        # values beyond float32's range (huge gamma or degree) that float64 holds: no ALFPGM step moved
        # alpha, which with max_iter=-1 never stopped; the batched solve stalled to its float64 rows
        xp = be.xp
        if x_sqnorm is not None:
            sq = xp.asarray(x_sqnorm, dtype=xp.float64)
        else:
            sq = be.row_sqnorms(X, xp.float64) if rows is None else be.row_sqnorms(X, xp.float64)[be.asarray(rows)]
        big = float(xp.finfo(xp.float32).max)
        top = float(xp.max(sq)) if int(sq.shape[0]) else 0.0
        if 4.0 * top > big or (spec.kind == "poly" and _poly_bound_log(spec, top) > math.log(big)):
            if verbose:
                print("Gram values stored as float64: float32 rows of this data overflow", flush=True)
            return "float64"
    pair, diag = float32_gram_errors(be, X, spec, x_sqnorm, computed_in=computed_in, rows=rows,
                                     pair_limit=FLOAT32_MAX_CURVATURE_ERROR)
    if not (pair > FLOAT32_MAX_CURVATURE_ERROR or diag > FLOAT32_MAX_DIAGONAL_ERROR):
        return "float32"  # (also when the measures are NaN: float32 values that overflow stay an error)
    if verbose:
        print("Gram values stored as float64: float32 ones would perturb this problem's curvatures", flush=True)
    return "float64"

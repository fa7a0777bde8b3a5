"""Binary solver "alfpgm": C-SVC dual by ALFPGM with pWSS working sets.

Algorithm
---------
Aregbesola and Griva, "A Fast Algorithm for Training Large Scale Support Vector Machines", Journal of
Computer and Communications 10 (2022) (pWSS, the MinMaxLimiter, subproblem (3) and the ALFPGM
algorithm), which builds on their "augmented Lagrangian fast projected gradient method" (ALFPGM) for
the SVM dual. A decomposition method: each round optimizes ``2 p`` variables (``p`` pairs) at once.

* Working set (pWSS). ``q_t = -y_t G_t`` (``G = Q alpha - 1``). Pairs ``(i, j)`` by the second-order
  rule: ``i`` in ``I_up`` taken in decreasing order of ``q_i``; its ``j`` minimizes ``-b_it^2 / a_it``
  over ``t`` in ``I_low`` with ``q_t < q_i`` (``b_it = q_i - q_t``, ``a_it = K_ii + K_tt - 2 K_it``,
  ``a <= 0`` replaced by 1e-12); each index at most once per working set (the greedy pairing is the
  fused op ``be.pwss_pairs``, which computes the scores from the cached Gram rows on the fly).
  ``min_alpha_check``: ``j`` is searched only among the first
  ``min_alpha_check`` entries of ``I_low`` sorted by increasing ``q`` (the most violating ones).
* MinMaxLimiter. A variable is left out of the selection when (a) it moved by less than
  ``delta_alpha`` the last time it was optimized, (b) it has been in ``min_alpha_opt`` working sets and
  sits at a bound (0 or C), or (c) it has been in ``max_alpha_opt`` working sets.
* Subproblem (3): the dual restricted to ``B``, the equality ``y_B^T alpha_B = -y_N^T alpha_N`` handled
  by the augmented Lagrangian ``L_mu(alpha, lambda)`` with the multiplier update
  ``lambda <- lambda - mu g(alpha)``; each inner minimization over the box ``[0, C]`` by the fast
  projected gradient method (FPGM, Beck and Teboulle's FISTA) with step ``1 / L``,
  ``L = lambda_1(Q_BB) + mu |B|`` (power iterations); inner stop ``nu(alpha, lambda) < eps``, outer stop
  ``max(nu, |g(alpha)|) < eps``. Fused op ``be.alfpgm_subproblem`` (one CUDA thread block on the GPU, a
  Numba loop on the CPU; see :mod:`gpusvm._backend.ops.pgd` for the exact iteration).
* Global update: ``G += Q[:, B] (alpha_B^new - alpha_B^old)``, one matrix-vector product with the Gram
  rows of ``B`` from the shared row cache. Shares the kernel-row cache (:class:`GramRowCache`) and the
  global gradient update (``be.grad_update_rows``) with the SMO solver.
* Stop when the KKT gap ``max_{I_up} q - min_{I_low} q <= tol``, the rule of LIBSVM and of our SMO, so
  the objective matches theirs; or after ``max_iter`` decompositions (``converged=False``).
* With float32 Gram rows (the default) the stop is certified in float64, as in the batched SMO
  (:mod:`gpusvm._solvers.smo_batched`): ``G`` sums float32 rows, whose rounding (about 1e-7 of each
  value, weighted by alphas up to ``C``) it carries, so at a large ``C`` the float32 stop was no KKT point
  and its objective not that of its alpha (subsets, RBF, tol 1e-3, C = 1,000: ijcnn1, 8,000 rows, a
  float64 gap of 5.3e-3 and an objective 2.57 above the optimum; a9a, 5,000 rows, 7.1e-3). At that stop
  the duplicates are merged (below), ``G`` is recomputed from alpha with float64 values (one ``n x n_sv`` Gram
  pass; on the CPU up to 2**25 values, or when the rounds computed at least n_sv Gram rows) and the gap judged
  on it; if it is open, the decomposition goes on from that ``G`` with a new cache of float64 rows, the
  limiter counters and the carried multiplier reset (``info``: ``certified``, ``float32_stop_gap``,
  ``float64_polish``, ``float32_rounds``). ijcnn1 then closed in 2 more rounds (gap 3.7e-4, 2.7 s against
  2.2 s), a9a in 219 after 3,843 (gap 9.5e-4, 86 s against 76 s; shared 2-core CPU). Without the pass
  (``max_iter``, or the CPU where it does not apply) the objective alone is recomputed in float64 (on the GPU,
  and on the CPU up to 4,096 SVs).

Details the paper leaves open, and what we chose (documented here so they can be revisited)
--------------------------------------------------------------------------------------------
* The first pair of every working set is the WSS2 pair of LIBSVM (``i`` = argmax of ``q`` over
  ``I_up``, ``j`` its second-order partner over all of ``I_low``), whatever the limiter says. With
  the safeguard below, every round makes at least half the progress of that LIBSVM step, which is
  what global convergence rests on; the limiter only shapes the other ``p - 1`` pairs.
* The limiter counters are reset (all variables allowed again) when the violation among the allowed
  variables (``max q`` over allowed ``I_up`` minus ``min q`` over allowed ``I_low``) falls below half
  of the true gap; "never more than ``max_alpha_opt`` times" hence holds between resets. Without the
  reset a long run excludes ever more variables and stalls.
* ``lambda`` is carried from one subproblem to the next when that subproblem's outer loop converged;
  otherwise (and in the first round) it starts at ``-(m_B + M_B) / 2`` with ``m_B = max q`` over
  ``I_up ∩ B`` and ``M_B = min q`` over ``I_low ∩ B`` (at the optimum the multiplier of the equality is
  LIBSVM's ``rho``, ``-q`` of every free variable). A multiplier left far off by a failed subproblem
  would otherwise make the next outer loops crawl (``lambda`` moves by ``mu |g|`` per outer step).
* The subproblem tolerance is ``eps = 0.1 * gap`` of the current round when ``inner_tol`` is None (a
  loose solve far from the optimum, a tight one near it: the next round re-selects anyway); a given
  ``inner_tol`` is used as is but never above ``0.25 * gap``, so that the WSS2 pair always moves.
* After each subproblem, the displacement is projected exactly onto ``y_B^T d = 0`` within the box,
  so the global equality constraint holds to rounding (the augmented Lagrangian meets it only to
  ``eps``).
* ``min_alpha_check=None`` searches all of ``I_low``.
* The FPGM momentum restarts at each outer iteration; ``nu`` is checked every ``check_every`` (10) inner
  steps. An adaptive restart (O'Donoghue and Candes 2015) is available as ``fpgm_restart=True`` but off
  by default: on 2,000-row subsets of a9a and w8a it did not reduce the FPGM steps.

* Working-set fill (not in the paper): when fewer than ``p`` violating pairs can be formed, the
  remaining ``2 (p - pairs)`` slots take the variables that violate most against the middle of the
  current violation range (free variables first). Near the optimum of hard problems only a handful of
  pairs exist, and rounds of one or two pairs through FPGM made a 1,000-point chess-board with
  ``C = 1000`` take 10,746 rounds (37 with the fill and the polish below).
* SMO polish and progress guarantee (not in the paper). The FPGM result is finished on ``B`` by at
  most ``|B|`` SMO steps (the fused op ``be.local_smo`` of the batched decomposition, second-order
  selection inside ``B``) down to the subproblem tolerance: its steps land exactly on the bounds and
  it mops up what a loose FPGM solve left. If the round then decreases the objective by less than
  half the LIBSVM step on the maximal violating pair (``i_star``, ``j_star``, both in ``B``), the
  round is redone by SMO on ``B`` from the old point, whose first step is that LIBSVM step; so every
  round makes at least half of one LIBSVM step's progress (the property LIBSVM's convergence proof
  rests on), whatever the FPGM loops did. ``info["fallbacks"]`` counts the redone rounds.
* Bounds. Before its feasibility projection the subproblem op snaps to a bound every variable that
  one more projected-gradient step (at the final multiplier) would put there, so no 1e-9 alphas are
  left where the gradient says 0 or C.
* Duplicates. Identical training points (same row, same label) have identical columns of ``Q``; a
  gradient method spreads their alpha mass evenly, SMO puts it on few. After convergence the mass of
  each group is moved onto as few members as the box allows (objective, ``y^T alpha`` and the
  decision function unchanged; ``G`` updated with their rows): phishing has many such groups
  (2,000-row subsets: the support vectors match LIBSVM's count after the same merge). With float32 rows
  the merge runs at the float32 stop, before the certification recomputes ``G`` (which the merge leaves
  unchanged in exact arithmetic), so the returned ``G`` is the float64 one of the returned alpha; after a
  float64 polish it runs again at the end, with float64 rows.

Non-convergence: the FPGM (inner) and augmented Lagrangian (outer) loops hitting ``max_inner_iter`` or
``max_outer_iter`` is normal while the decomposition goes on (the polish and the global stopping rule
take care of it): it is counted in ``info`` (``inner_limit_hits``, ``outer_limit_hits``) and printed
with ``verbose``, never warned. Only the solve as a whole stopping at ``max_iter`` without meeting the
KKT tolerance returns ``converged=False``, on which :class:`gpusvm.SVC` raises a
:class:`~sklearn.exceptions.ConvergenceWarning`.

Where the CPU time goes, and what was done about it (process CPU time, 5,000-row subsets, shared 2-core
machine, cProfile): on a9a (p = 156) the FPGM loops took ~1.4 s of ~4 s, Gram rows ~1 s, the p x n
score matrix of pWSS and its gather from the cache ~1.5 s. The scores are now computed on the fly from
the cached rows by the fused op ``be.pwss_pairs`` (its share fell to ~0.3 s); ``Q_BB`` is kept in
float32 (exact: ``y_s y_t = +-1``); Gram rows come from the shared :class:`GramRowCache` without
copies (``resident``). Tried without a clear gain (within the noise of the shared machine): a looser
FPGM tolerance (``0.3 gap``) with the SMO polish finishing, an FPGM cap of 200 steps, and restricting
the ``j`` candidates (``min_alpha_check`` 500 or 2,000). The FPGM matrix-vector products are the
irreducible part on the CPU (~500 steps of an ``nb x nb`` product per round on a9a). At full size on
the CPU (benchmarks/results/alfpgm_compare_cpu.md, process CPU time) ALFPGM matched LIBSVM's objective
to <= 2e-7 relative on a9a, ijcnn1, w8a and phishing but took 0.96-1.7x sklearn's CPU time and
8.9-12.9x our pairwise SMO's. Three costs were then cut with the same steps and values (alpha and G
bit-identical): ``be.gram`` converted (and densified) all of X for each Gram-row request, now once per cache;
the ``K_BB`` gather is a Numba loop (``be.take_block``); ``grad_update_rows`` adds four rows per pass. Full
a9a CSR 110 -> 88-92 CPU s (two pairs of single runs), 20,000 rows 41.0 -> 34.5 s (min of 3). A profile
after the first two (a9a CSR, full size, 2,353 rounds, 107,788 Gram rows computed for 32,561 points with the
200 MB cache): Gram rows 35%, pWSS 18%, FPGM 12%, gradient update 10%, cache bookkeeping and first touch of
the store 6%, float64 certification 6%. The rest is the method: every round needs its ``2 p`` rows at once
(mostly misses once the cache holds fewer rows than the support vectors), ``O(nb^2)`` FPGM steps and an
``O(p m)`` pairing.

On the GPU (not yet run: no device was available when this was written) the FPGM loops, the SMO
polish, the pWSS pairing and the gradient update are single kernels (one thread block for the
working-set ones); there is no host synchronization inside a subproblem. Each round makes a few small
host transfers: the (gap, limiter gap) pair, the candidate and pair counts, the fill size, the index
lists the Gram-row cache keeps on the host, and the progress check of the safeguard.

This module imports neither NumPy nor CuPy: everything goes through ``be``.
"""

from __future__ import annotations

import math
import numbers
import time

from .._backend.ops.gram import densify_pays
from . import BinaryResult, register_binary_solver
from ._common import Float32StopCheck, bias, gradient_from_alpha, gram_diag, resolve_gram_dtype, up_low_masks
from .smo_batched import effective_cache_bytes

__all__ = ["solve_alfpgm", "DEFAULT_N_PAIRS", "OPTIONS"]

# gram_dtype: SVC's parameter (and DCSVC's solver_options), which the solver never saw unless listed here
OPTIONS = ("n_pairs", "mu", "inner_tol", "delta_alpha", "min_alpha_opt", "max_alpha_opt", "min_alpha_check",
           "gram_dtype")

#: Default number of pairs ``p`` (``n_pairs=None``), chosen from the sweep in
#: benchmarks/results/alfpgm_sweep_cpu.md: the p with the lowest geometric mean, over a9a and ijcnn1
#: (full size, CPU), of the process CPU time relative to the fastest p of that data set (see
#: :func:`solve_alfpgm`).
DEFAULT_N_PAIRS = 200
#: With ``n_pairs=None``, ``p`` is halved (down to ``min(32, p_start)``) when a round's FPGM loops
#: take more than this many steps (see :func:`solve_alfpgm`, ``n_pairs``).
ROUND_STEPS_MAX = 2000
MAX_PAIRS = 512  # 2 p <= 1024 variables: one CUDA thread block solves the subproblem
TAU = 1e-12


def _check_int(value, name, low, high=None, allow_none=False):
    if value is None and allow_none:
        return None
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= low and (
        high is None or value <= high)
    if not ok:
        hi = "inf" if high is None else high
        raise ValueError(f"The {name!r} parameter of SVC must be an int in the range [{low}, {hi}]"
                         f"{' or None' if allow_none else ''}. Got {value!r} instead.")
    return int(value)


def _check_float(value, name, *, low=0.0, low_open=True, allow_none=False):
    if value is None and allow_none:
        return None
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(float(value)) and (
        float(value) > low if low_open else float(value) >= low)
    if not ok:
        br = "(" if low_open else "["
        raise ValueError(f"The {name!r} parameter of SVC must be a float in the range {br}{low}, inf)"
                         f"{' or None' if allow_none else ''}. Got {value!r} instead.")
    return float(value)


def _top(xp, key, k, largest=True):
    """Indices of the ``k`` largest (or smallest) entries of ``key``, in sorted order."""
    n = int(key.shape[0])
    k = min(int(k), n)
    if k <= 0:
        return xp.zeros(0, dtype=xp.int64)
    s = -key if largest else key
    idx = xp.arange(n, dtype=xp.int64) if k == n else xp.argpartition(s, k - 1)[:k].astype(xp.int64)
    # CuPy's argsort is always stable and older CuPy rejects the kind argument
    order = xp.argsort(s[idx], kind="stable") if xp.__name__ == "numpy" else xp.argsort(s[idx])
    return idx[order]


def _merge_duplicates(be, X, y, alpha, C, G, cache):
    """Move the alpha mass of identical training points (same row, same label) onto as few of them as
    possible, in place; return how many variables changed.

    Identical points have identical columns of ``Q``, so the objective, ``y^T alpha`` and ``G`` (in
    exact arithmetic) depend only on the group sum of their alphas: every split is optimal. A gradient
    method moves duplicates together and spreads the mass evenly over them, where an SMO step moves one
    pair at a time; filling the members one after the other up to their ``C`` (index order) leaves at
    most one free variable per group, the sparse solution that SMO tends to and that predicts faster.
    ``G`` is updated with the Gram rows of the moved variables, so it stays consistent with the cached
    rows (float32 or float64) it was summed from. Detection is exact (bytes of the row on the host, one
    copy of the support-vector rows); near duplicates are left alone.
    """
    xp = be.xp
    sv = xp.nonzero(alpha > 0)[0]
    sv_h = [int(i) for i in be.to_host(sv).tolist()]
    if len(sv_h) < 2:
        return 0
    Xs = be.to_host(be.take_rows(X, sv))
    y_h = be.to_host(y[sv]).tolist()
    if hasattr(Xs, "tocsr"):  # a SciPy matrix on the host (be.issparse asks about device matrices)
        Xs = Xs.tocsr()
        Xs.sort_indices()
        ptr, ind, dat = Xs.indptr, Xs.indices, Xs.data
        keys = [(y_h[k], ind[ptr[k]:ptr[k + 1]].tobytes(), dat[ptr[k]:ptr[k + 1]].tobytes())
                for k in range(len(sv_h))]
    else:
        keys = [(y_h[k], Xs[k].tobytes()) for k in range(len(sv_h))]
    groups = {}
    for k, key in enumerate(keys):
        groups.setdefault(key, []).append(k)
    groups = [g for g in groups.values() if len(g) > 1]
    if not groups:
        return 0
    members = [sv_h[k] for g in groups for k in g]
    idx = xp.asarray(members, dtype=xp.int64)
    a_h = be.to_host(alpha[idx]).tolist()
    c_h = be.to_host(C[idx]).tolist()
    new, pos = [], 0
    for g in groups:
        m = len(g)
        rest = sum(a_h[pos:pos + m])
        tiny = 1e-12 * rest  # rounding of the running sum: no member a hair below C or above 0
        for k in range(pos, pos + m):
            v = min(c_h[k], rest)
            if c_h[k] - v <= tiny:
                v = c_h[k]
            elif v <= tiny:
                v = 0.0
            new.append(v)
            rest -= v
        pos += m
    changed = [k for k in range(len(members)) if new[k] != a_h[k]]
    if not changed:
        return 0
    ch = idx[xp.asarray(changed, dtype=xp.int64)]
    a_new = xp.asarray([new[k] for k in changed], dtype=xp.float64)
    delta = a_new - alpha[ch]
    alpha[ch] = a_new
    be.grad_update_rows(G, y, cache.rows(ch), delta * y[ch])
    return len(changed)


@register_binary_solver("alfpgm", options=OPTIONS)
def solve_alfpgm(be, X, y, spec, C, *, tol, max_iter, cache_bytes, alpha0=None, x_sqnorm=None, verbose=0,
                 random_state=None, n_pairs=None, mu=0.1, inner_tol=None, delta_alpha=1e-6, min_alpha_opt=5,
                 max_alpha_opt=20, min_alpha_check=None, max_inner_iter=2000, max_outer_iter=100,
                 check_every=10, gram_dtype="float32", fpgm_restart=False, eps_factor=0.1):
    """Solve the C-SVC dual by ALFPGM with pWSS (Aregbesola and Griva, 2022); see the module docstring.

    Parameters
    ----------
    be : Backend
    X : {array, CSR matrix} of shape (n, d) on ``be``
    y : array of shape (n,), float64 in {-1, +1}, on ``be``
    spec : GramSpec
    C : array of shape (n,), float64, on ``be``
        Per-sample upper bounds.
    tol : float
        Stop when the KKT gap ``max_{I_up} -yG - min_{I_low} -yG`` is at most ``tol``.
    max_iter : int or None
        Maximal number of decompositions (working sets); None or negative: no limit.
    cache_bytes : int
        Budget of the Gram-row cache. On the GPU it is raised to hold the ``2 p`` rows of one working
        set when the device has room (``effective_cache_bytes`` of the batched SMO); the CPU keeps it.
    alpha0 : array of shape (n,), optional
        Feasible warm start.
    x_sqnorm : array of shape (n,), optional
        Squared row norms of X (RBF).
    verbose : int
        Print one line every ``max(1, 100 // verbose)`` decompositions when > 0.
    random_state : ignored
        The method is deterministic.
    n_pairs : int, optional
        ``p``, the number of pairs per working set (1 to 512). None: :data:`DEFAULT_N_PAIRS` (200), set
        from the full-size sweep over p in {8, 16, 32, 64, 100, 200} on a9a and ijcnn1
        (benchmarks/results/alfpgm_sweep_cpu.md, process CPU time, CPU, shared 2-core machine): p = 200
        was the fastest on a9a (54.4 s; 58.0-81.4 s for the other p) and 1.13x the fastest on ijcnn1
        (11.1 s; p = 100 9.8 s), the lowest geometric mean of the time relative to each data set's
        fastest p (1.06; p = 100 1.15, p = 64 1.16). Repeats of one point differed by up to ~1.5x there,
        so p = 64-200 are a tie on that machine; only p <= 16 is clearly slower (ijcnn1: 2.0-3.0x). The
        number of decompositions falls roughly as 1/p (a9a: 21,253 at p = 8, 714 at p = 200). Below
        6,400 rows the default is ``max(16, n // 32)`` instead (one observation: 2,000 rows of a9a took
        ~25 s at p = 200 and ~1 s at p = 64; scikit-learn's breast_cancer and digits 3 against 8, 569 and
        357 rows, took 0.05 s at p = 16 and 0.07-0.10 s at p = 8). The paper found 50 to 100 best; not
        yet measured on the GPU.
        With None, ``p`` also adapts (not in the paper): a round whose FPGM loops take more than
        :data:`ROUND_STEPS_MAX` (2,000) steps halves it, down to ``min(32, start)``. Ill-conditioned
        subproblems need ever more FPGM steps as the working set grows: on chess-boards (5,000 points,
        C = 1000, gamma = 10) a round took 17,000 steps at p = 200 and 1,050 at p = 32, and the fit 21 s
        against 0.65 s, while rounds on 5,000-row subsets of a9a, ijcnn1, w8a and phishing averaged 50 to
        550 steps at p = 200, where it stays (benchmarks/results/alfpgm_sweep_n5000_cpu.md). ``info``
        holds the start and final ``p`` (``n_pairs_start``, ``n_pairs``).
    mu : float
        Augmented Lagrangian parameter (> 0).
    inner_tol : float, optional
        Subproblem tolerance ``eps``; None: ``0.1 *`` the current KKT gap (capped at ``0.25 * gap``
        when given).
    delta_alpha : float
        MinMaxLimiter: leave out variables that moved by less than this when last optimized.
    min_alpha_opt : int
        MinMaxLimiter: after this many working sets, leave out variables at 0 or C.
    max_alpha_opt : int
        MinMaxLimiter: never use a variable in more than this many working sets (between resets).
    min_alpha_check : int, optional
        Search ``j`` only among the first ``min_alpha_check`` of ``I_low`` sorted by ``-yG``; None: all.
    max_inner_iter, max_outer_iter : int
        Limits of the FPGM (inner) and multiplier (outer) loops of each subproblem.
    check_every : int
        The inner stopping test runs every ``check_every`` FPGM steps.
    gram_dtype : {"float32", "float64"}
        Type of the cached Gram rows (alpha and the gradient are float64). A float32 stop is certified on
        the float64 gradient and, where its gap is open, finished with float64 rows (module docstring).
    fpgm_restart : bool
        Adaptive restart of the FPGM momentum (not in the paper; off by default).

    Returns
    -------
    BinaryResult
        ``n_iter`` counts decompositions; ``info`` holds ``inner_iters``, ``outer_iters``,
        ``inner_limit_hits``, ``outer_limit_hits``, ``pairs`` (pairs formed in total),
        ``limiter_resets``, ``gap``, ``gram_dtype`` (of the rows at the end), ``certified``,
        ``float32_stop_gap``, ``float64_polish``, ``float32_rounds``, cache counters and ``time_s``.
    """
    xp = be.xp
    n = int(X.shape[0])
    if n_pairs is None:
        # small problems: p = 200 costs O(p^2) per FPGM step for little gain (a9a, 2,000 rows: ~25 s at
        # p = 200 vs ~1 s at p = 64 in tests/test_alfpgm.py), so the default is also capped at n / 32
        p = min(DEFAULT_N_PAIRS, max(16, n // 32))
    else:
        p = _check_int(n_pairs, "n_pairs", 1, MAX_PAIRS)
    p = max(1, min(p, n // 2))
    p_start = p
    p_floor = min(32, p) if n_pairs is None else p  # an explicit n_pairs is kept
    mu = _check_float(mu, "mu")
    inner_tol = _check_float(inner_tol, "inner_tol", allow_none=True)
    delta_alpha = _check_float(delta_alpha, "delta_alpha", low_open=False)
    min_alpha_opt = _check_int(min_alpha_opt, "min_alpha_opt", 1)
    max_alpha_opt = _check_int(max_alpha_opt, "max_alpha_opt", 1)
    min_alpha_check = _check_int(min_alpha_check, "min_alpha_check", 1, allow_none=True)
    max_inner_iter = _check_int(max_inner_iter, "max_inner_iter", 1)
    max_outer_iter = _check_int(max_outer_iter, "max_outer_iter", 1)
    check_every = _check_int(check_every, "check_every", 1)
    if str(gram_dtype) not in ("float32", "float64"):
        raise ValueError(f"The 'gram_dtype' parameter must be one of ['float32', 'float64']. Got {gram_dtype!r} instead.")
    gdt = xp.float32 if str(gram_dtype) == "float32" else xp.float64
    limit = math.inf if max_iter is None or int(max_iter) < 0 else int(max_iter)

    from .kernel_cache import GramRowCache

    class _RowCache(GramRowCache):
        """The shared Gram-row cache, its rows computed from a DENSE copy of the requested rows when X
        is sparse: ``be.gram`` then takes its CSR @ dense path over X instead of densifying all of X
        for every request (w8a, 10,000 rows: the densify and the copy of the product were ~7 of 17 s).
        Not for wide sparse data (``densify_pays``: 3,000 x 1,000,000, 20 nonzeros per row, fit
        41 s and 1.4 GB with the dense rows), whose rows stay sparse (a sparse @ sparse product).

        The operand of the products is the base cache's ``_Xg``: X converted to the rows' type and, on
        the CPU, densified once per cache (see :class:`GramRowCache`), not in every request."""

        def _compute(self, idx_dev):
            Xg = self._Xg
            rows = be.take_rows(Xg, idx_dev)
            if be.issparse(rows) and densify_pays(int(rows.shape[1]), int(Xg.shape[0])):
                rows = be.to_dense(rows)
            return be.gram(rows, Xg, self.spec, x_sqnorm=None if self.x_sqnorm is None else self.x_sqnorm[idx_dev],
                           y_sqnorm=self.x_sqnorm, dtype=self.dtype)

    t0 = time.perf_counter()
    f64 = xp.float64
    y = xp.asarray(y, dtype=f64)
    C = xp.asarray(C, dtype=f64)
    if x_sqnorm is None and spec.kind == "rbf":
        x_sqnorm = be.row_sqnorms(X, f64)
    # float64 rows where float32 ones would perturb the problem (see resolve_gram_dtype)
    gram_dtype = resolve_gram_dtype(be, X, spec, x_sqnorm, gram_dtype, computed_in="float32")
    gdt = xp.float32 if gram_dtype == "float32" else f64
    diag = gram_diag(be, X, spec, x_sqnorm)
    if alpha0 is None:
        alpha = xp.zeros(n, dtype=f64)
        G = -xp.ones(n, dtype=f64)
    else:
        alpha = xp.array(alpha0, dtype=f64, copy=True)
        G = gradient_from_alpha(be, X, y, alpha, spec, x_sqnorm=x_sqnorm, dtype=gdt)
    # as the batched SMO: on the GPU the budget is raised (when the device has room) to hold the 2 p rows
    # of one working set, else every decomposition would recompute rows it needs at once
    cache_bytes_asked = cache_bytes
    cache_bytes = effective_cache_bytes(be, n, 2 * p, xp.dtype(gdt).itemsize, cache_bytes)
    cache = _RowCache(be, X, spec, cache_bytes=cache_bytes, dtype=gdt, x_sqnorm=x_sqnorm)

    count = xp.zeros(n, dtype=xp.int32)  # working sets each variable has been in (since the last reset)
    last_move = xp.full(n, xp.inf, dtype=f64)  # |change| the last time it was optimized
    lam = None
    lam_ok = None
    stats = xp.zeros(4, dtype=xp.int64)
    sub_info = xp.zeros(3, dtype=f64)
    polish_steps = xp.zeros(1, dtype=xp.int64)
    neg_inf, pos_inf = -xp.inf, xp.inf
    rounds = pairs_total = resets = fills = fallbacks = merged = steps_before = 0
    converged = False
    check = Float32StopCheck()
    gap = math.inf
    every = max(1, 100 // int(verbose)) if verbose else 0

    def gram_block(idx, cols):
        """K[idx][:, cols] (float32/64) and the row source for the gradient update, kept in the cache."""
        slots = cache.resident(idx)
        if slots is not None:
            return be.take_block(cache.store, slots, cols), cache.store, slots
        rows = cache.rows(idx)
        return rows[:, cols], rows, None

    while True:
        q = -y * G
        up, low = up_low_masks(be, y, alpha, C)
        s_up = xp.where(up, q, neg_inf)
        s_low = xp.where(low, q, pos_inf)
        i_star = xp.argmax(s_up)
        m_top = s_up[i_star]
        m_low = xp.min(s_low)
        # MinMaxLimiter: which variables the pairs may use; r_gap is the violation among the allowed
        at_bound = (alpha <= 0) | (alpha >= C)
        excl = (last_move < delta_alpha) | (count >= max_alpha_opt) | ((count >= min_alpha_opt) & at_bound)
        r_gap = xp.max(xp.where(up & ~excl, q, neg_inf)) - xp.min(xp.where(low & ~excl, q, pos_inf))
        gap, r_gap = (float(v) for v in be.to_host(xp.stack([m_top - m_low, r_gap])).tolist())  # one sync
        if verbose and rounds % every == 0:
            print(f"[alfpgm] round {rounds}: gap {gap:.6g}, pairs {pairs_total}")
        converged = not (gap > tol)
        if converged and check.applies(be, gdt, n, alpha, cache.misses):
            # Certify the float32 stop (as the batched SMO): G sums float32 rows, whose rounding (about
            # 1e-7 of each value, times C) it carries; at a large C that exceeds tol and the stop is no KKT
            # point of the problem. Merge the duplicates first (with the float32 rows: the exact G does not
            # change), then recompute G from alpha with float64 values (one n x n_sv Gram pass) and judge
            # the gap on it; if it is open, go on with float64 rows from there.
            merged += _merge_duplicates(be, X, y, alpha, C, G, cache)
            G, gap = check.exact_gradient(be, X, y, alpha, spec, x_sqnorm, C)
            converged = not (gap > tol)
            if converged or rounds >= limit:
                break
            if verbose:
                print(f"[alfpgm] float64 gradient: gap {gap:.6g} > tol; continuing with float64 rows")
            check.switch(rounds, cache)
            gdt, gram_dtype = f64, "float64"
            # drop the float32 rows before float64 ones are stored (the cache's store is the peak on the GPU)
            cache = K_i = K_src = K_BB = Q = None
            cache_bytes = effective_cache_bytes(be, n, 2 * p, 8, cache_bytes_asked)
            cache = _RowCache(be, X, spec, cache_bytes=cache_bytes, dtype=gdt, x_sqnorm=x_sqnorm)
            # the rounds start afresh from the exact G: limiter counters and the carried multiplier
            # belong to the float32 run (lambda came from the rounded gradient)
            count[...] = 0
            last_move[...] = pos_inf
            lam = lam_ok = None
            continue
        if converged or rounds >= limit:
            break

        # ---- the WSS2 pair (always in the working set) --------------------------------------
        row = cache.rows(i_star.reshape(1))[0].astype(f64)
        b = m_top - q
        a = diag[i_star] + diag - 2.0 * row
        a = xp.where(a > 0, a, TAU)
        j_star = xp.argmin(xp.where(low & (b > 0), -(b * b) / a, pos_inf))
        # gain of the LIBSVM step on (i_star, j_star): the least decrease a round must make
        t_lim = xp.minimum(xp.where(y[i_star] > 0, C[i_star] - alpha[i_star], alpha[i_star]),
                           xp.where(y[j_star] > 0, alpha[j_star], C[j_star] - alpha[j_star]))
        b_ij, a_ij = b[j_star], a[j_star]
        t_ij = xp.minimum(b_ij / a_ij, t_lim)
        pair_gain = t_ij * b_ij - 0.5 * a_ij * t_ij * t_ij

        # ---- pWSS with the MinMaxLimiter ---------------------------------------------------------
        # reset the limiter once it hides the violation: the gap among the allowed variables fell
        # below half of the true gap (then the extra pairs would be nearly useless)
        if not (r_gap >= 0.5 * gap):
            count[...] = 0
            excl[...] = False
            resets += 1
        last_move[...] = pos_inf  # "moved less than delta_alpha" leaves a variable out for one round
        excl[i_star] = False
        excl[j_star] = False
        key_up = xp.where(up & ~excl, q, neg_inf)
        key_up[j_star] = neg_inf
        key_up[i_star] = pos_inf
        i_idx = _top(xp, key_up, p, largest=True)  # i_star first
        valid_i = key_up[i_idx] > neg_inf
        # j candidates: allowed I_low with q_t < max q_i (only those can pair), the most violating first
        key_low = xp.where(low & ~excl & (q < m_top), q, pos_inf)
        key_low[i_idx] = pos_inf
        key_low[j_star] = neg_inf
        n_cand = int(xp.count_nonzero(key_low < pos_inf))
        if min_alpha_check is not None:
            n_cand = min(n_cand, min_alpha_check)
        cand = _top(xp, key_low, max(n_cand, 1), largest=False)  # j_star first
        valid_c = key_low[cand] < pos_inf
        slots_i = cache.resident(i_idx)
        K_i = cache.store
        if slots_i is None:  # the budget cannot hold the p rows at once
            K_i, slots_i = cache.rows(i_idx), xp.arange(int(i_idx.shape[0]), dtype=xp.int64)
        jpos = be.pwss_pairs(K_i, slots_i, cand, q[i_idx], q[cand], diag[i_idx], diag[cand], valid_i, valid_c,
                             TAU)
        ok = jpos >= 0
        n_ok = int(xp.count_nonzero(ok))
        B = xp.concatenate([i_idx[ok], cand[jpos[ok]]])
        pairs_total += n_ok
        if n_ok < p:
            # fill (not in the paper): fewer than p violating pairs exist near the optimum of hard
            # problems, and a working set of a few pairs makes a decomposition crawl (a 1,000-point
            # chess-board with C = 1000 took 10,746 rounds). The rest of the 2 p slots take the
            # variables that violate most against the middle of the current violation range
            # (free variables first), whatever the limiter says: they couple with the pairs.
            mid = 0.5 * (m_top + m_low)
            score = xp.maximum(xp.where(up, q - mid, neg_inf), xp.where(low, mid - q, neg_inf))
            score[B] = neg_inf
            extra = _top(xp, score, 2 * (p - n_ok), largest=True)
            extra = extra[score[extra] > neg_inf]
            if int(extra.shape[0]):
                B = xp.concatenate([B, extra])
                fills += 1
        nb = int(B.shape[0])

        # ---- subproblem (3) by ALFPGM ---------------------------------------------------------------
        K_BB, K_src, slots = gram_block(B, B)
        K_BB64 = K_BB.astype(f64)
        yB = y[B]
        # Q_BB in the type of the cached rows: y_s y_t = +-1, so float32 loses nothing, and the FPGM
        # matvecs read half the bytes
        Q = (yB[:, None] * yB[None, :]).astype(K_BB.dtype) * K_BB
        aB = alpha[B]
        CB = C[B]
        GB = G[B]
        eps = eps_factor * gap if inner_tol is None else min(inner_tol, 0.25 * gap)
        # multiplier: the last subproblem's when its outer loop converged, else the midpoint of the
        # working set's violation range (at the optimum lambda = rho = -q of the free variables)
        upB, lowB = up[B], low[B]
        qB = q[B]
        mid = -(xp.max(xp.where(upB, qB, neg_inf)) + xp.min(xp.where(lowB, qB, pos_inf))) / 2.0
        mid = xp.reshape(mid, (1,)).astype(f64)
        lam = mid if lam is None else xp.where(lam_ok, lam, mid)
        d = be.alfpgm_subproblem(Q, GB, yB, -aB, CB - aB, lam, stats, sub_info, mu=mu, eps=eps,
                                 max_inner=max_inner_iter, max_outer=max_outer_iter, check_every=check_every,
                                 restart=bool(fpgm_restart))
        lam_ok = xp.maximum(sub_info[0], sub_info[1]) < eps
        a_fp = xp.clip(aB + d, 0.0, CB)

        # ---- SMO polish on B (exact bounds, the rest of the subproblem's violations) -----------------
        # at most nb pair steps of O(nb) each, about the cost of one FPGM step; a step lands exactly
        # on a bound, so no 1e-9 alphas remain among the variables it moves
        G_fp = GB + yB * (K_BB64 @ (yB * (a_fp - aB)))
        diagB = xp.diagonal(K_BB64)  # the stored values' curvatures, as the batched SMO (its local_smo call)
        a_new, steps, _ = be.local_smo(K_BB, yB, a_fp, G_fp, CB, diagB, eps, nb, 0, rel_eps=0.0)
        polish_steps += steps
        # safeguard: the round must decrease f by at least half the LIBSVM step on (i_star, j_star)
        # (what global convergence rests on), and keep y^T alpha = 0 to rounding of the alphas it moves;
        # else redo the round by SMO from alpha_B. The subproblem's projection meets the equality only to
        # 1e-12 (1 + max |alpha_B|, C_B) absolute, coarse where the alphas are tiny against 1 and C (huge
        # Gram values: a poly gram with gamma=1e5 left y^T alpha at -1.2% of sum(alpha), an objective 4%
        # above the optimum; unscaled linear data, alphas ~1e-8, never converged)
        delta = a_new - aB
        u = yB * delta
        f_dec = -(xp.dot(GB, delta) + 0.5 * xp.dot(u, K_BB64 @ u))
        feasible = xp.abs(xp.sum(u)) <= 1e-12 * (xp.sum(xp.abs(delta)) + xp.sum(a_new))
        # one host sync: the progress test, and the FPGM steps so far (for the adaptive p)
        progress_ok, fpgm_steps = be.to_host(xp.stack([((f_dec >= 0.5 * pair_gain) & feasible).astype(xp.int64),
                                                       stats[0]])).tolist()
        if p > p_floor and fpgm_steps - steps_before > ROUND_STEPS_MAX:
            p = max(p_floor, p // 2)  # (the fills and the cache only ever need fewer rows)
        steps_before = fpgm_steps
        if not progress_ok:
            fallbacks += 1
            a_new, steps, _ = be.local_smo(K_BB, yB, aB, GB, CB, diagB, eps, max(nb, 2), 0, rel_eps=0.0)
            polish_steps += steps
            delta = a_new - aB
        alpha[B] = a_new
        be.grad_update_rows(G, y, K_src, delta * yB, slots)
        count[B] += 1
        last_move[B] = xp.abs(delta)
        rounds += 1

    if converged and not (check.certified and not check.polished):
        # (a certified float32 stop merged them before its float64 gradient); G is updated with the rows
        # of the cache's type, float64 ones after a float64 polish
        merged += _merge_duplicates(be, X, y, alpha, C, G, cache)
    st = [int(v) for v in be.to_host(stats).tolist()]
    # without a float64 gradient (max_iter, or the CPU where the check does not apply) the objective alone
    # comes from float64 Gram values, so that it is that of the returned alpha
    obj = check.objective(be, X, y, alpha, G, spec, x_sqnorm, gdt)
    b_ = bias(be, y, alpha, G, C)
    info = {
        "inner_iters": st[0],
        "outer_iters": st[1],
        "inner_limit_hits": st[2],
        "outer_limit_hits": st[3],
        "polish_steps": int(be.to_host(polish_steps)[0]),
        "fallbacks": fallbacks,
        "fills": fills,
        "duplicates_merged": merged,
        "pairs": pairs_total,
        "n_pairs": p,
        "n_pairs_start": p_start,
        "limiter_resets": resets,
        "gap": gap,
        "gram_dtype": str(gram_dtype),
        **check.info(cache),
        "time_s": time.perf_counter() - t0,
    }
    if verbose:
        print(f"[alfpgm] done: {rounds} decompositions, {pairs_total} pairs, {st[0]} FPGM steps "
              f"({st[2]} inner and {st[3]} outer loops at their limits), {info['polish_steps']} SMO polish "
              f"steps, {fallbacks} fallbacks, gap {gap:.6g}, objective {obj:.10g}, converged {converged}")
    return BinaryResult(alpha=alpha, b=b_, objective=obj, n_iter=rounds, converged=converged, gradient=G,
                        info=info)

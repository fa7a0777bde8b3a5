"""Linear SVM solvers: dual coordinate descent (LIBLINEAR) and adaptive variable selection frequencies.

Algorithms
----------
``method="dcd"``: dual coordinate descent for the L1-loss (hinge) and L2-loss (squared hinge) linear
SVM with shrinking, as in LIBLINEAR:

    C.-J. Hsieh, K.-W. Chang, C.-J. Lin, S. S. Keerthi, S. Sundararajan. "A Dual Coordinate Descent
    Method for Large-scale Linear SVM". ICML 2008.

It is Algorithm 2 of Glasmachers & Dogan (below): every sweep visits the active variables in a fresh
random order; a variable at a bound whose gradient lies beyond the previous sweep's extreme projected
gradient (``v_max`` / ``v_min``) leaves the active set; when ``v_max - v_min <= tol`` the active set is
reset to all variables and the solver stops only once a sweep over all of them also meets ``tol``. One
change to LIBLINEAR: ``v_max >= 0 >= v_min`` (the range of the sweep's projected gradients, 0 included).
LIBLINEAR's range of the visited values is 0 when all of them violate alike, as two rows of opposite
labels and equal x (e.g. copies merged by ``deduplicate``) both at ``pg = -2`` in a sweep, and it stopped
there with a wrong ``w`` (sklearn's LinearSVC too, on 2 such rows, for some seeds); the rule is otherwise
the same, since every sweep with a satisfied variable at a bound already holds a 0.

``method="avsf"``: adaptive variable selection frequencies,

    T. Glasmachers, Ü. Dogan. "Accelerated Linear SVM Training with Adaptive Variable Selection
    Frequencies". arXiv:1302.5608, 2013 (Algorithms 3-5); the same mechanism as "Accelerated
    Coordinate Descent with Adaptive Coordinate Frequencies", ACML 2013.

Every sweep makes ``n`` coordinate steps; variable ``i`` gets about ``n p_i / sum(p)`` of them
(Algorithm 4: sequential randomized rounding, then a random order). After each step the preference is
updated from the step's dual gain ``g`` against a reference gain ``r`` (Algorithm 5):
``p_i <- clip(p_i * exp(c (g / r - 1)), 1/20, 20)`` with ``c = 1/5``; ``r`` is the mean gain of the first
sweep and afterwards the fading average ``r <- (1 - 1/n) r + g / n``. There is no hard shrinking. A
sweep meeting ``tol`` may stop the solver only if it was a uniform sweep (``canstop``); otherwise all
preferences are reset to 1 and a uniform sweep follows.

Fidelity. The paper's text could not be retrieved (the stored copies hold only its abstract and first
page), so every rule was checked against the authors' two public implementations: Shark's
``QpBoxLinear`` (Glasmachers) and the ACF variant of LIBLINEAR's ``solve_l2r_l1l2_svc`` in LiblineaR.ACF
(Demircioglu, Glasmachers, Dogan). Both agree with ours on: ``c = 1/5``, preferences clipped to
``[1/20, 20]``, the reference gain being the first sweep's mean gain and then the fading average with
rate ``1/n``, preferences frozen during the first sweep, no shrinking, and the canstop logic (``canstop``
starts true). The gain of a step is the exact dual improvement (0 for a visit that does not move), as in
Shark; LiblineaR.ACF's formula, with its gradient of the opposite sign, amounts to the improvement plus
``q mu^2`` (3x the improvement for an unclipped step), which weights clipped steps relatively more.
Where the two differ we follow one of them: the stopping quantity is ``v_max - v_min`` of the projected
gradient over the sweep, as in the authors' LIBLINEAR version and the baseline, so ``tol`` means the same
for both methods (Shark stops on ``max |pg| < tol``); the schedule is Shark's sequential randomized
rounding with exactly ``n`` visits per sweep (the LIBLINEAR version carries the fractional parts from
sweep to sweep instead, so its sweeps have about ``n`` visits). One guard is ours: when the reference
gain is 0 (nothing left to gain, which needs every step of the first sweep to be null) preferences are
left unchanged instead of dividing by 0.

Measured behaviour (benchmarks/results/linear_avsf_diagnosis_cpu.md: dual objective, KKT violation of
every variable and preference mass against steps). The issue's target, AVSF with >= 5x fewer steps than
the baseline at C = 1000, is not met on a9a, and the data say why: on a9a (C = 100, 1000) AVSF needs as
many steps that move ``alpha`` as DCD (1.32e9 vs 1.35e9 at C = 1000), and in the end phase, with a few
hundred free variables left, about 40% of its steps go to the ~32,000 variables held at the preference
floor 1/20, which shrinking removes from the baseline's sweeps: 2.17e9 vs 1.40e9 steps in total. On w8a
(C = 100) AVSF does progress much faster (4.9x fewer steps to a relative dual accuracy of 1e-4; the
baseline's shrinking drops variables that still violate), but the stopping rule only fires once the few
remaining violators, which gain little per step and so hold 2.6-7% of the preference mass, are fixed:
AVSF stops at a 1e4x more accurate dual than the baseline, after about as many steps (5.40e8 vs 5.61e8).

Both stop after ``max_iter`` sweeps (``converged=False``) or a time budget (benchmarks only).

GPU design
----------
Coordinate descent is sequential by nature: each step reads ``w`` as left by the step before. We run
the exact algorithm of the CPU twin on the GPU in ONE persistent thread block (``kernels/dcd.cu``):
the threads share each row's inner product (block-wide reduction) and the update of ``w``; one thread
does the scalar work (the step, shrinking, the AVSF schedule and preferences), with the same
SplitMix64 random stream as the CPU. Reasons: (1) the iterates are the CPU twin's up to the order of
floating-point sums, so the GPU converges to the same solution by construction and is tested against
the CPU; (2) shrinking and AVSF's schedule are data-dependent and sequential, which asynchronous
many-block variants (PASSCoDe, Hsieh et al. 2015) would have to change; (3) a whole chunk of sweeps runs
in one launch, so the host reads the state once per chunk, never per step. The cost: one block uses a
small part of the device, and each coordinate step waits on block-wide reductions. Measured on an H100
(benchmarks/results/paper_nvidia-h100-80gb-hbm3, one run; the host a 16-core Xeon): one sweep took
13 ms on the GPU against 5.0 ms on the CPU for dense 8,000 x 300 rows (about 1.6 us per coordinate
step), 38 against 2.2 ms for a9a-like CSR rows (14 nonzeros), and whole fits were 8-17x slower than on
the CPU (a9a, ijcnn1, w8a), so ``LinearSVC(device="auto")`` keeps host data on the CPU for these
solvers. Asynchronous multi-block updates with atomics on ``w`` (PASSCoDe) are the next step for the
GPU (documented, not implemented).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

__all__ = ["LinearResult", "dcd_linear", "primal_objective", "dual_objective"]

LOSSES = ("hinge", "squared_hinge")
METHODS = ("dcd", "avsf")


@dataclass
class LinearResult:
    """What :func:`dcd_linear` returns (arrays stay on the solver's backend)."""

    w: Any  # (d,) float64 weights
    w_bias: float  # weight of the bias feature; the intercept is bias * w_bias
    alpha: Any  # (n,) float64 dual variables (0 for samples with C_i = 0)
    n_iter: int  # sweeps (outer iterations)
    n_updates: int  # coordinate visits (inner products <w, x_i> evaluated)
    converged: bool  # False when max_iter (or the time budget) stopped it
    objective: float  # primal objective at (w, w_bias)
    info: dict = field(default_factory=dict)  # gap of the last sweep, timings, time-budget flag


def _margins(be, X, w, w_bias, bias):
    return be.dot(X, w) + bias * w_bias


def primal_objective(be, X, y, C, w, w_bias, bias, loss="hinge"):
    """``1/2 (||w||^2 + w_bias^2) + sum_i C_i loss(y_i (<w, x_i> + bias w_bias))``."""
    xp = be.xp
    m = y * _margins(be, X, w, w_bias, bias)
    xi = xp.maximum(1.0 - m, 0.0)
    if loss == "squared_hinge":
        xi = xi * xi
    # xp.sum(C * xi), not xp.dot(C, xi) (nor xp.dot(w, w) for large d): NumPy hands a long dot product to a multithreaded BLAS, whose
    # idle threads took 8-25 ms to wake on a loaded 2-core machine (measured), more than a whole solve
    # at small C; the elementwise product and pairwise sum cost about 0.1 ms for a9a.
    return float(0.5 * (xp.sum(w * w) + w_bias * w_bias) + xp.sum(C * xi))


def dual_objective(be, alpha, w, w_bias, C, loss="hinge"):
    """``sum(alpha) - 1/2 ||w||^2 (- sum alpha_i^2 / (4 C_i) for the squared hinge)``, to be maximized."""
    xp = be.xp
    d = float(xp.sum(alpha) - 0.5 * (xp.sum(w * w) + w_bias * w_bias))
    if loss == "squared_hinge":
        pos = C > 0
        d -= float(xp.sum(xp.where(pos, alpha * alpha / (4.0 * xp.where(pos, C, 1.0)), 0.0)))
    return d


def dcd_linear(be, X, y, C, *, loss="hinge", method="dcd", tol=1e-4, max_iter=1000, bias=1.0,
               seed=0, chunk=None, max_seconds=None, clock=None, verbose=0):
    """Train a binary linear SVM by DCD (LIBLINEAR) or AVSF on backend ``be``.

    Parameters
    ----------
    be : Backend
    X : {ndarray, CSR matrix} of shape (n_samples, n_features) on ``be``, float32 or float64
    y : ndarray of shape (n_samples,), float64 in {-1, +1}, on ``be``
    C : ndarray of shape (n_samples,), float64 >= 0 on ``be``: per-sample cost (C times class and
        sample weights). Samples with ``C_i = 0`` are left out.
    loss : {"hinge", "squared_hinge"}
    method : {"dcd", "avsf"}
    tol : float > 0, stopping tolerance on ``v_max - v_min`` of the projected gradient
    max_iter : int, most sweeps
    bias : float >= 0, value of the constant extra feature (``intercept_scaling``; 0 = no intercept)
    seed : int, seed of the coordinate order
    chunk : int, sweeps per call of the fused op (the host reads the state once per chunk);
        default 50 on the CPU, 10 on the GPU
    max_seconds : float, optional time budget (benchmarks); checked between chunks
    clock : callable, optional, the clock of ``max_seconds`` (default ``time.perf_counter``, wall time;
        benchmarks on a shared machine pass ``time.process_time``)
    verbose : int

    Returns
    -------
    LinearResult
    """
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    xp = be.xp
    t0 = time.perf_counter()
    clock = clock or time.perf_counter
    c0 = clock()
    n_all, d = X.shape
    f64 = xp.float64
    y = xp.asarray(y, dtype=f64)
    C = xp.asarray(C, dtype=f64)
    keep = C > 0
    n_keep = int(xp.count_nonzero(keep))
    rows = None
    if n_keep < n_all:
        rows = xp.nonzero(keep)[0]
        Xs, ys, Cs = be.take_rows(X, rows), y[rows], C[rows]
    else:
        Xs, ys, Cs = X, y, C
    n = n_keep
    if be.issparse(Xs) and Xs.indices.dtype != xp.int32 and Xs.nnz < 2**31 - 1:
        # the sweep code reads int32 column indices; convert once here, not once per call
        Xs = type(Xs)((Xs.data, Xs.indices.astype(xp.int32), Xs.indptr), shape=Xs.shape)
    elif not be.issparse(Xs) and not Xs.flags.c_contiguous:
        # the sweeps read rows: make them contiguous once here, not once per call of the fused op
        Xs = xp.ascontiguousarray(Xs)
    w_full = xp.zeros(d + 1, dtype=f64)
    alpha_full = xp.zeros(n_all, dtype=f64)
    info = {"gap": 0.0, "time_limit_hit": False}
    if n == 0:
        obj = primal_objective(be, X, y, C, w_full[:d], 0.0, bias, loss)
        return LinearResult(w_full[:d], 0.0, alpha_full, 0, 0, True, obj, info)
    bias = float(bias)
    sq = be.dcd_row_sqnorms(Xs) + bias * bias
    if loss == "hinge":
        upper = Cs.copy()
        diag = xp.zeros(n, dtype=f64)
    else:
        upper = xp.full(n, math.inf, dtype=f64)
        diag = 0.5 / Cs
    qd = sq + diag
    alpha = xp.zeros(n, dtype=f64)
    w = w_full
    order = xp.arange(n, dtype=xp.int64)
    pref = xp.ones(n, dtype=f64)
    fstate = xp.asarray([math.inf, -math.inf, 0.0, float(n), math.inf], dtype=f64)
    istate = xp.asarray([n, 0, 0, 0, 1], dtype=xp.int64)
    rng = xp.asarray([int(seed) % (2**64)], dtype=xp.uint64)
    chunk = int(chunk or (10 if be.is_gpu else 50))
    avsf = method == "avsf"
    sweeps = updates = 0
    converged = False
    while sweeps < max_iter:
        k = min(chunk, max_iter - sweeps)
        be.dcd_sweeps(Xs, ys, qd, upper, diag, bias, alpha, w, order, pref, fstate, istate, rng,
                      k, tol, avsf=avsf, shrinking=True)
        st = be.to_host(istate)  # the one host read per chunk
        sweeps, updates, converged = int(st[1]), int(st[2]), bool(st[3])
        if verbose:
            gap = float(be.to_host(fstate)[4])
            print(f"[{method}] sweeps {sweeps} updates {updates} active {int(st[0])} gap {gap:.3g}")
        if converged:
            break
        if max_seconds is not None and clock() - c0 > max_seconds:
            info["time_limit_hit"] = True
            break
    be.sync()
    info["gap"] = float(be.to_host(fstate)[4])
    info["seconds"] = time.perf_counter() - t0
    if rows is not None:
        alpha_full[rows] = alpha
    else:
        alpha_full = alpha
    w_bias = float(w[d])
    obj = primal_objective(be, X, y, C, w[:d], w_bias, bias, loss)
    return LinearResult(w[:d], w_bias, alpha_full, sweeps, updates, converged, obj, info)

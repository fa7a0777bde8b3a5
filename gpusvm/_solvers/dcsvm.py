"""DC-SVM: the divide-and-conquer kernel SVM solver (levels, warm starts, refine, conquer).

Algorithm
---------
Hsieh, Si and Dhillon, "A Divide-and-Conquer Solver for Kernel Support Vector Machines", ICML 2014
(Algorithm 1, multilevel DC-SVM). With ``L = n_levels`` and ``k = n_clusters_per_level``:

1. for l = L, L-1, ..., 1 ("level l" has k**l clusters):

   * divide: two-step kernel k-means (:mod:`gpusvm._solvers.kernel_kmeans`) into k**l clusters. The
     finest level samples its m points uniformly; every later level samples them from the current
     support vectors (adaptive clustering);
   * conquer: solve the C-SVC dual of every cluster independently, each warm-started from the current
     alpha restricted to the cluster (zero at the finest level), with the binary solver named by
     ``solver`` (any registered one: "smo", "pa-smo", ...), to the loose tolerance ``sub_tol``;
   * the concatenated cluster solutions are the current alpha for the next level, and the clusters'
     local models are kept for early prediction (eq. (11): a point is classified by the local model
     of the cluster whose kernel k-means mean is nearest in feature space);

2. refine (optional): solve the problem restricted to the support vectors of level 1, warm-started,
   to ``sub_tol``;
3. top (level 0): solve the whole problem warm-started from that alpha. The top solve runs the same
   exact solver to ``tol``, so the final model is the exact SVM solution, bias included.

Where the time goes, and the choices made for it
------------------------------------------------
(CPU measurements with benchmarks/dcsvm_profile.py on full ijcnn1 and a9a; results in
benchmarks/results/dcsvm_cpu.md.) DC-SVM to the top pays for: kernel k-means at every level (an
``n x m`` Gram block to assign all points), the cluster solves, and a top-level solve whose warm start
needs the gradient ``Q alpha - 1`` (``n_sv x n`` Gram values) before its first step. It wins only when
the warm start removes more top-level work than the levels below cost. Hence:

* the subproblems and the refine solve are only warm starts: they are solved to ``sub_tol`` (the
  estimator's default ``max(tol, 0.1)``), which halved the time below the top with about the same
  top-level work;
* the k-means sample shrinks with the number of clusters (``max(500, 4 k^l)`` at level l unless
  ``sample_size`` is given), since the assignment is ``n x m`` Gram values per level (8 k^l before:
  the 256-cluster level's k-means took about twice as long for no measurable gain above it). The
  floor was 1,000: 500 halved the k-means of the 64- and 16-cluster levels (full ijcnn1, process CPU
  seconds, estimator defaults, seeds 0 and 1: whole fit 6.14 / 6.47 s with 1,000, 5.62 / 5.33 s with
  500; test accuracy of the 64-cluster early model 98.64 / 98.61% against 98.61 / 98.50%, final model
  the same). On a9a and a 60k skin_nonskin subset the levels below the top got cheaper as well
  (a9a 3.66 vs 2.91 s, skin 2.67 vs 2.45 s) but the top-level solve varied more than that between the
  runs; the a9a 64-cluster early model lost 0.26 points (84.47 vs 84.21%);
* levels that do not pay for themselves are skipped: a level below the top (or below the early-stop
  level; that one is always solved) whose clusters would average fewer than ``min_cluster_size``
  points (estimator default 1000; it was 500 until the measurements under ``max_sv_share`` in
  :class:`gpusvm.DCSVC`) is neither clustered nor solved, and on the way to the top a level
  of more than two clusters whose largest cluster holds more than ``max_cluster_share`` (default
  0.5) of the points is not solved. That level's kernel k-means runs on its sample first; when the
  sample's largest cluster already holds more than that share of the sample, the level is skipped
  before the ``n x m`` assignment of all points (on a 60k skin_nonskin subset the two skipped
  levels cost 0.07-0.08 CPU-s each instead of about 0.64 s in an earlier run; on full ijcnn1 level 1 cost 0.08 s
  instead of 0.67 s, same final model); otherwise the share is checked again on the assigned points. Profile of full ijcnn1 with the estimator defaults (k = 4, L = 4; single-threaded CPU
  seconds, one run each on a loaded machine): the 256-cluster level cost 0.6-1.1 s (mostly its
  k-means) and saved less above it; level 1 put 29k-36k of the 50k points into one cluster, whose
  solve (1.7-5.3 s) is a near copy of the top-level solve and saved it only 0.5-1.8 s. The lower
  levels' *early models* of skipped levels do not exist (``levels_`` marks them ``skipped``);
* on the way to the top, once a solved level leaves more than ``max_sv_share`` of the points as
  support vectors (estimator default 0.2), the levels between it and the top are skipped: their
  coarser clusters hold large parts of the final problem (full a9a: 37% after the 16-cluster level;
  the 4-cluster level then cost 1.5-1.7 CPU-s and saved the top 0.6-0.8 s). Measurements in
  :class:`gpusvm.DCSVC`'s docstring (``min_cluster_size``, ``max_sv_share``);
* the refine solve stays at ``sub_tol``: solving it to ``tol`` (``refine_tol``) cut the top-level
  SMO steps on ijcnn1 (22.6k to 8.1k) but not its time, which is dominated by the n_sv x n warm-start
  gradient and Gram-row misses, and on a9a it made the batched top slower (69 vs 38 rounds);
* the refine solve is skipped when the support vectors below the top are more than
  ``refine_max_share`` of the points (the estimator's ``refine="auto"``: 0.2). On full a9a (k = 4,
  L = 4; two runs each, process CPU seconds) level 1 left 11.7k support vectors of 32.6k points (36%):
  the refine then cost 2.8-3.5 s, a near copy of the top solve, and the top still took 54.8k SMO
  steps (54.1k without it) and more Gram values (599M against 479M), so the fit took 15.3 / 19.0 s
  with it and 10.7 / 12.2 s without (measured before the warm-start cache fix of the pairwise loop,
  4be7d82; after it, whole DCSVC fits, two runs each: 9.5 / 12.5 s with, 8.7 / 10.0 s without). On ijcnn1 (2.8k of 50k, 5.6%) it costs 0.2 s and saves the top
  2k steps and 44M Gram values (top 3.2 / 2.9 CPU-s with it, 3.7 / 3.9 s without; whole fit 5.7 /
  5.0 s with it, 5.6 / 6.2 s without: the k-means CPU time varied as much);
* the top solve has a floor that better warm starts do not lower: on full ijcnn1 (estimator
  defaults, process CPU seconds, one run each at 4be7d82) it took 3.0-3.1 s whether the levels below
  were solved to sub_tol 0.1 (22k top steps) or 1e-3 (9k steps); its warm-start gradient alone (2.4k
  rows x 50k, about 120M Gram values at ~7 ns each) took 1.0 s with max_iter=1, and 1,000 steps 1.7 s.
  Faster Gram values, not fewer steps, are what would move DC-SVM ahead of the cold solve on the CPU;
* on the CPU the refine and top solves run the solver's own CPU default, the pair-at-a-time loop,
  like the levels. (Until the loop got its dense transposed layout (dc3bdf1), a warm start with many
  nonzero alphas (a9a: 34%) switched to the batched decomposition, then 2x faster there; re-measured
  after (benchmarks/dcsvm_profile.py a9a --k 8 --levels 2, process CPU seconds, one run each), the
  batched refine + top took 5.0 + 11.6 s against 3.2 + 4.7 s for the loop, so the switch was
  dropped: a9a DC-SVM 18.1 -> 10.0 s, against 9.0 s for the cold loop. Also tried and dropped:
  forming the pairwise loop's warm-start gradient from Gram blocks and shrinking from the first
  step; 15-20% slower on the ijcnn1 and skin_nonskin top levels than the loop's own row gradient.);
* how much the warm start saves depends on the data: it is large when the gram is local relative to
  the clusters (ijcnn1, gamma = 2: 22k top-level SMO steps vs 31k cold) and small when it is wide
  (a9a, gamma = 0.008: cross-cluster terms matter; 55k vs 64k steps) or when many new support
  vectors appear at the top (skin_nonskin: 11k vs 14k steps). On a 60k skin_nonskin subset
  (process CPU seconds, one run each, the top solve timed alone from the recorded warm start): the
  warm start held 4.0k nonzero alphas against 6.4k final support vectors and its KKT gap was 2.45
  (a cold start's is 2), so the top still took 18.1k SMO steps and 1.90G Gram values against 22.3k
  steps and 2.06G cold (14.4 vs 16.6 s); the row cache holds 873 rows of 60k points, and nearly
  every step misses it in both. Why (benchmarks/dcsvm_skin_warmstart.py, full skin_nonskin, 44.9k
  distinct points, 64 clusters): nearly all of the 11.4k final support vectors are free, mostly of one
  class, lifting the decision value from the global bias to the margin across whole regions, and 53%
  of them lie in one-class clusters, whose alpha stays 0 (their own bias fits them). Neither extending
  every subproblem by its neighbours' points nor solving every cluster with the final bias fixed (an
  oracle) helps enough: the top still took 92% and 59% of the cold solve's steps, and even a warm
  start holding every final support vector (with the level's values) 54%;
* the top's warm-start gradient cannot reuse the levels' per-cluster gradients to any useful
  extent: only the within-cluster terms are known (a 1/k^l share of the n_sv x n values when the
  clusters are balanced), and the refine solve changes alpha on every support vector. It is 118M of
  the 288M Gram values of the ijcnn1 top (warm start of 2,353 nonzero alphas);
* tried and dropped: the top as a sequence of restricted solves on an active set (the nonzero
  alphas plus the points violating their KKT interval, the gradient over all n points kept up to
  date with Gram blocks of the changed alphas, stopped by the exact solver's KKT gap over all n).
  Short rows fit the cache, but the restricted solves took as many SMO steps as the whole problem
  and every round paid a |changed| x n gradient update: ijcnn1 top 3.8-5.3 s against 3.2 s for the
  one warm-started solve (cold 3.9 s); skin_nonskin 60k 21.7-23.7 s against 14.4 s (round 1 took
  56k of the 60k points as violators; capping the additions at |S| per round needed 7 rounds and
  40k steps).

Bias
----
The paper drops the bias so that any concatenation of cluster solutions is feasible. Here every
subproblem, at every level, is the same C-SVC *with* the bias (equality constraint
``sum_{i in cluster} y_i alpha_i = 0``) and is solved by the same solver as the top level; each local
model keeps its own bias, and early prediction uses it (``f_c(x) = sum_{i in c} alpha_i y_i k(x_i, x) +
b_c``). A concatenation of per-cluster solutions satisfies the global constraint, but when the data are
re-clustered at the next level a new cluster cuts across the old ones and its restriction of alpha in
general violates ``sum y alpha = 0``. Before every warm start we therefore apply a feasibility repair
(:func:`repair_feasibility`): within the new cluster, the alphas of the class with the larger sum are
scaled down by the ratio of the two sums. This keeps ``0 <= alpha <= C``, makes the equality hold, and
changes alpha as little as a uniform scaling can (the smaller class is left untouched). A cluster
holding a single class has only alpha = 0 as feasible point; it is not solved, its local model is the
constant decision ``f = +1`` or ``-1`` of that class.

Executors
---------
``executor=None`` solves the clusters one after the other on the backend ``be`` (on the GPU each
subproblem runs on the device; no host round trip other than the solver's own). With any
``concurrent.futures.Executor`` (a ``ThreadPoolExecutor``, a ``ProcessPoolExecutor``, or a
``dask.distributed`` client's ``client.get_executor()``) every cluster of a level becomes one task
that carries only picklable host data (NumPy arrays / SciPy CSR, the GramSpec, the solver's name and
options) and runs :func:`solve_subproblem_task`, which solves it on the worker's ``worker_device``
("cpu" by default). A task that raises stops the fit with a ``RuntimeError`` naming the level and the
cluster; the other tasks of the level are cancelled, and nothing waits on them.

Batched subproblems
-------------------
``batch=True`` (:class:`gpusvm.DCSVC`'s ``batch_subproblems``; "auto" turns it on on the GPU).
Solved one after the other, each cluster of a level costs the GPU solver's fixed costs: its rounds of
working-set selection, Gram rows and local solve, each a few launches and host synchronizations, so
a level of 16-256 small clusters is latency bound (session-12 measurements on an H100: DC-SVM to the
top slower than the cold solve on every data set, e.g. a9a 1.73 vs 1.08 s). With ``batch`` the
clusters of a level that hold both classes and at most ``batch_max_size`` points are solved together
(:func:`_solve_batched`): each one's ``|c| x |c|`` Gram block is formed once into one flat buffer, its
warm start repaired, and one launch of ``be.local_smo_batched`` (kernels/smo_local.cu, one thread
block per cluster, a thread owning several variables when the cluster exceeds the block) runs the
exact SMO or PA-SMO solve of every cluster to ``sub_tol``; bias, dual objective and decision values
per cluster come from the returned gradients in a few vectorized passes. Launches are split so that
their Gram blocks stay under ``batch_bytes``; one-class clusters and larger ones take the sequential
path. The subproblems and their warm starts are the same either way, so are the solutions up to the
solvers' tolerance (tests/test_dcsvm.py). On the CPU the batched path is slower (full ijcnn1 and
a9a, 16-cluster level, one run each: 0.75 vs 0.18 s and 0.81 vs 0.37 s wall): forming every whole
Gram block costs more than the pairwise loop's cached rows, so it is off there by default. On the GPU
it was first timed on an H200 at b542594, not yet against the one-by-one path.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from .._backend.base import is_device_oom
from .._parallel import map_problems, map_threads
from . import get_binary_solver
from ._common import resolve_gram_dtype
from .segments import BATCH_MODES, solve_segments
from .smo import ROWS_SOLVERS
from .kernel_kmeans import KernelClustering, assign_clusters, kernel_kmeans_sample

__all__ = ["LocalModels", "DCResult", "dcsvm_solve", "check_cluster_count", "too_few_for_clusters",
           "lowest_clustered_level", "repair_feasibility", "solve_subproblem_task", "local_decision", "batchable"]


@dataclass
class LocalModels:
    """The local models of one level (early prediction).

    clustering : KernelClustering of the level (nearest-cluster rule)
    sv_X : rows of the level's support vectors, grouped by cluster (on the backend)
    sv_sqnorm : their squared norms (RBF) or None
    sv_coef : (n_sv,) alpha_i y_i of those rows
    sv_index : (n_sv,) their row indices in the training data
    sv_starts : host list of k + 1 offsets: cluster c's SVs are ``sv_starts[c]:sv_starts[c + 1]``
    bias : host list of k local biases
    """

    level: int
    clustering: KernelClustering
    sv_X: Any
    sv_sqnorm: Any
    sv_coef: Any
    sv_index: Any
    sv_starts: list
    bias: list


@dataclass
class DCResult:
    """What :func:`dcsvm_solve` returns (arrays on the backend)."""

    alpha: Any  # (n,) final alpha (top level), or the concatenated alpha of the early-stop level
    b: float | None  # bias of the top-level model; None when stopped early
    objective: float | None  # dual objective of the top-level model; None when stopped early
    n_iter: int  # top-level solver iterations (0 when stopped early)
    converged: bool  # every solve of every level converged
    n_unconverged: int = 0  # the solves (clusters, refine, top) that stopped before their tol
    n_stalled: int = 0  # those of them that stalled (their steps stopped moving alpha) before any step limit
    levels: list = field(default_factory=list)  # one dict per level (see dcsvm_solve)
    models: dict = field(default_factory=dict)  # level -> LocalModels
    stopped_at: int = 0  # the last level solved (0 = top)


def repair_feasibility(be, y, alpha):
    """Scale the larger class's alphas down so that ``sum(y * alpha) = 0`` (no host sync).

    With ``P = sum_{y>0} alpha`` and ``N = sum_{y<0} alpha``, the positive alphas are multiplied by
    ``min(1, N / P)`` and the negative ones by ``min(1, P / N)``; 0 <= alpha <= C is kept. Sums that agree
    to rounding (relative 1e-12; two sums of the same values in another order differ by that much) are
    left as they are: scaling by 1 - 1e-15 would move alphas at C just below it, where the solver counts
    them as free, and its intercept would average over them instead of taking the middle of the
    interval of optimal ones (LIBSVM's rule when no variable is free).
    """
    xp = be.xp
    pos = y > 0
    P = xp.sum(xp.where(pos, alpha, 0.0))
    N = xp.sum(xp.where(pos, 0.0, alpha))
    close = xp.abs(P - N) <= 1e-12 * xp.maximum(P, N)
    rp = xp.where((P > N) & ~close, N / xp.where(P > 0, P, 1.0), 1.0)
    rn = xp.where((N > P) & ~close, P / xp.where(N > 0, N, 1.0), 1.0)
    return alpha * xp.where(pos, rp, rn)


def _solve_one(be, X, y, C, alpha0, spec, solver, tol, max_iter, cache_bytes, options, random_state, rows=None):
    """Solve one cluster's subproblem on ``be`` (of ``X[rows]`` with ``rows``, host ints, for the solvers
    of :data:`gpusvm._solvers.smo.ROWS_SOLVERS`); returns a dict (arrays on ``be``)."""
    xp = be.xp
    n = int(y.shape[0])
    n_pos = int(xp.count_nonzero(y > 0))
    if n_pos == 0 or n_pos == n:
        # one class: alpha = 0 is the only feasible point; the local model predicts that class
        return {"alpha": xp.zeros(n, dtype=xp.float64), "b": 1.0 if n_pos == n else -1.0,
                "objective": 0.0, "n_iter": 0, "converged": True, "decision": xp.full(n, 1.0 if n_pos else -1.0)}
    fn, _ = get_binary_solver(solver)
    a0 = None if alpha0 is None else repair_feasibility(be, y, alpha0)
    if a0 is not None and not bool(xp.any(a0 > 0)):
        a0 = None
    res = fn(be, X, y, spec, C, tol=tol, max_iter=max_iter, cache_bytes=cache_bytes, alpha0=a0,
             random_state=random_state, **options, **({} if rows is None else {"rows": rows}))
    dec = None
    if res.gradient is not None:
        # decision values on the cluster's own points: sum_j alpha_j y_j K_ij = y_i (G_i + 1)
        dec = y * (res.gradient + 1.0) + res.b
    return {"alpha": res.alpha, "b": float(res.b), "objective": float(res.objective),
            "n_iter": int(res.n_iter), "converged": bool(res.converged), "decision": dec,
            "stalled": bool(res.info.get("stalled", False))}


def solve_subproblem_task(task):
    """Executor task: solve one subproblem from host data on the worker's device; host results.

    ``task`` is a dict of picklable values: X (NumPy / SciPy CSR), y, C, alpha0 (or None), spec,
    solver, tol, max_iter, cache_bytes, options, random_state, device.
    """
    from .._backend import get_backend

    be = get_backend(task.get("device", "cpu"))
    X = be.asarray(task["X"])
    y = be.asarray(task["y"])
    C = be.asarray(task["C"])
    a0 = None if task["alpha0"] is None else be.asarray(task["alpha0"])
    out = _solve_one(be, X, y, C, a0, task["spec"], task["solver"], task["tol"], task["max_iter"],
                     task["cache_bytes"], task["options"], task["random_state"])
    out["alpha"] = be.to_host(out["alpha"])
    if out["decision"] is not None:
        out["decision"] = be.to_host(out["decision"])
    return out


def _subproblem_error(exc):
    """The type of the error that names the level and cluster of a subproblem that raised ``exc`` in this
    process: a ValueError stays one (a bad ``solver_options`` value, which the solver checks only when it
    runs: the top solve raises that ValueError itself when every level is skipped, so small and large data
    gave different types), anything else is a RuntimeError."""
    return ValueError if isinstance(exc, ValueError) else RuntimeError


def _task_result(be, out, size, level, c):
    """The result of cluster ``c``'s :func:`solve_subproblem_task` as an executor returned it, on ``be``.
    Anything else (not a dict with its keys, or an alpha that is not ``size`` finite values: an executor
    that returns its own objects) stops the fit with a ``RuntimeError`` naming the level and cluster; it
    raised a bare TypeError or KeyError from the line that read it, or went into the next level."""
    xp = be.xp
    try:
        alpha = be.asarray(out["alpha"], dtype=xp.float64)
        dec = out["decision"]
        dec = None if dec is None else be.asarray(dec, dtype=xp.float64)
        if alpha.shape != (size,) or (dec is not None and dec.shape != (size,)):
            raise ValueError(f"alpha of shape {alpha.shape} and decision of shape "
                             f"{None if dec is None else dec.shape} for {size} points")
        if not bool(xp.all(xp.isfinite(alpha))):
            raise ValueError("alpha holds values that are not finite")
        return {"alpha": alpha, "b": float(out["b"]), "objective": float(out["objective"]),
                "n_iter": int(out["n_iter"]), "converged": bool(out["converged"]), "decision": dec,
                "stalled": bool(out.get("stalled", False))}
    except Exception as exc:
        raise RuntimeError(f"DC-SVM subproblem of level {level}, cluster {c} ({size} points): the executor returned "
                           f"{type(out).__name__}, not the result of solve_subproblem_task (a dict of alpha, b, "
                           f"objective, n_iter, converged, decision): {exc!r}") from exc


# Early prediction on the CPU runs its Gram blocks in threads with single-threaded BLAS (local_decision), as
# SVC's CPU decision blocks do. Elements of one block: the cluster assignment's (rows x m float32 values, 8 MB)
# and a local model's (rows x the larger of its support vectors and the features, float64, 2 MB: 100k rows
# against 8 local models of ~450 support vectors, one thread, took 0.8 CPU-s with 2 MB blocks, 0.9-1.0 s
# with 8 MB, 1.1 s with 32 MB; the assignment's CPU time moved by less than the noise from 1 to 32 MB).
_CPU_ASSIGN_BLOCK_ELEMS = 2 * 2**20
_CPU_LOCAL_BLOCK_ELEMS = 2**18
# rows of one Gram block of a local model on the GPU
_GPU_LOCAL_ROWS = 4096


def local_decision(be, model: LocalModels, X, *, x_sqnorm=None, threads=1):
    """Early-prediction decision values (eq. (11) of the paper, with the local bias): each row of ``X``
    is scored by the local model of its nearest cluster. Returns (decision (n,), cluster (n,)).

    The rows are assigned in blocks (one Gram block against the whole k-means sample each), grouped by
    cluster with one sort, and every local model is evaluated on its own rows only, in blocks of rows
    (no copy of a cluster's rows beyond one block). On the CPU both kinds of blocks run in ``threads``
    threads with single-threaded BLAS (:func:`gpusvm._parallel.map_threads`; only from the
    main thread). Measured on 200k rows of 20 features, a model of 3 classes fitted on 20k rows (k=8,
    L=2, 500 sampled points per level; 2 shared cores, two interleaved runs each): level 1 took 6.8-7.4 s
    (13.5-14.7 CPU-s) and level 2 3.9-4.3 s (7.8-8.6) when the assignment ran 32 MB blocks with BLAS's own
    threads and the local models 4,096-row blocks one after the other; 3.7-4.1 s (7.2-7.9) and 2.3-2.5 s
    (4.4-4.8) so, the same predictions; the final model 12.8-16 s. On 1M rows: 37.5 and 21.8 s before,
    19.3 and 12.5 s so (one run each), the final model 64 s.
    """
    xp = be.xp
    n, d = int(X.shape[0]), int(X.shape[1])
    spec = model.clustering.spec
    if x_sqnorm is None and spec.kind == "rbf":
        x_sqnorm = be.row_sqnorms(X, xp.float64)
    cl = assign_clusters(be, model.clustering, X, x_sqnorm=x_sqnorm,
                         block_elems=None if be.is_gpu else _CPU_ASSIGN_BLOCK_ELEMS, threads=threads)
    k = model.clustering.n_clusters
    bias = xp.asarray(model.bias, dtype=xp.float64)
    out = bias[cl].astype(xp.float64)
    order = xp.argsort(cl * n + xp.arange(n))
    counts = be.to_host(xp.bincount(cl, minlength=k)).tolist()
    blocks = []  # (rows of the block, first and last support vector of its cluster)
    s0 = 0
    for c in range(k):
        cnt = int(counts[c])
        a, b = model.sv_starts[c], model.sv_starts[c + 1]
        if cnt and b > a:
            step = _GPU_LOCAL_ROWS if be.is_gpu else max(1, _CPU_LOCAL_BLOCK_ELEMS // max(b - a, d))
            blocks.extend((order[r0:min(s0 + cnt, r0 + step)], a, b) for r0 in range(s0, s0 + cnt, step))
        s0 += cnt

    def block(blk):
        rr, a, b = blk
        K = be.gram(be.take_rows(X, rr), model.sv_X[a:b], spec, x_sqnorm=None if x_sqnorm is None else x_sqnorm[rr],
                    y_sqnorm=None if model.sv_sqnorm is None else model.sv_sqnorm[a:b], dtype=xp.float64)
        out[rr] += K @ model.sv_coef[a:b]  # the blocks' rows are disjoint

    map_threads(block, blocks, 1 if be.is_gpu else threads)
    return out, cl


def lowest_clustered_level(n, n_levels, k, stop=0, min_cluster_size=0):
    """The finest level that :func:`dcsvm_solve` will cluster, or 0 when it clusters none.

    A level below the top (or below the early-stop level ``stop``, which is always clustered) whose
    clusters would average fewer than ``min_cluster_size`` points (``n < min_cluster_size * k**l``) is
    skipped without clustering, so it does not need ``k**l`` points.
    """
    for level in range(int(n_levels), max(int(stop), 1) - 1, -1):
        if level == stop or n >= min_cluster_size * k ** level:
            return level
    return 0


def too_few_for_clusters(n, n_levels, k, stop=0, min_cluster_size=0):
    """The finest level that will be clustered (:func:`lowest_clustered_level`) when it needs more
    clusters than the ``n`` points, else None."""
    low = lowest_clustered_level(n, n_levels, k, stop, min_cluster_size)
    return low if low and k ** low > n else None


def check_cluster_count(n, n_levels, k, stop=0, min_cluster_size=0, *, pair=None, n_rows=None):
    """Raise when the finest level that will be clustered (:func:`lowest_clustered_level`) needs more
    clusters than the ``n`` points; ``pair`` (two class labels) names the one-vs-one problem in the
    message, ``n_rows`` (the problem's rows when ``deduplicate`` merged them into ``n`` points) the
    merge."""
    low = too_few_for_clusters(n, n_levels, k, stop, min_cluster_size)
    if low is None:
        return
    merged = n_rows is not None and n_rows != n
    what = f"distinct training points (deduplicate merged the copies among its {n_rows} rows)" if merged else \
        "training samples"
    if pair is None:
        short = f"more than the {n} {what}"
    else:
        short = (f"but the class pair {pair[0]!r} / {pair[1]!r} has only {n} {what} (one-vs-one: each "
                 "pair of classes is divided on its own)")
    fix = "lower n_levels or n_clusters_per_level" + (", or deduplicate=False or 'auto'" if merged else "")
    raise ValueError(f"DCSVC with n_levels={n_levels} and n_clusters_per_level={k} needs {k ** low} clusters at "
                     f"level {low}, {short}; {fix}.")


def _check_sizes(n, n_levels, k, m, stop=0, min_cluster_size=0):
    # only the levels that will be clustered sample points (a level of too small clusters is skipped first)
    low = lowest_clustered_level(n, n_levels, k, stop, min_cluster_size)
    if low and m < k ** low:
        raise ValueError(
            f"The 'sample_size' parameter of DCSVC must be at least the number of clusters of the lowest "
            f"level that is clustered (n_clusters_per_level ** {low} = {k ** low}; levels of fewer than "
            f"min_cluster_size points per cluster are skipped). Got {m} instead.")
    check_cluster_count(n, n_levels, k, stop, min_cluster_size)


def batchable(solver) -> bool:
    """Whether the subproblems of ``solver`` can run through :func:`_solve_batched`: the SMO solvers,
    whose exact solve the batched local SMO performs (their options, shrinking, working-set size or the
    decomposition, change how a solver reaches the solution, not which; ``gram_dtype`` and ``pa_recent``
    are honoured)."""
    return solver in BATCH_MODES


def _solve_batched(be, X, y, C, alpha, idx, clusters, spec, *, solver, tol, max_iter, options, x_sqnorm,
                   max_bytes):
    """Solve the subproblems of ``clusters`` (indices into ``idx``) together with ``be.local_smo_batched``
    (:func:`gpusvm._solvers.segments.solve_segments`).

    Every cluster's Gram block is formed once (``gram_dtype`` of the solver options, float32 by default),
    its start is the current alpha restricted to it (after :func:`repair_feasibility`, per cluster), and
    all of them are solved in one launch of the batched local SMO (one thread block per cluster on the
    GPU; the CPU twin solves them one after the other), exactly, to ``tol``. Clusters are packed into
    launches whose Gram blocks hold at most ``max_bytes`` (a cluster larger than that alone gets its own).
    Returns ``{c: result dict}`` in :func:`_solve_one`'s format.
    """
    # float64 blocks where float32 ones would perturb the problem (see resolve_gram_dtype)
    gram_dtype = resolve_gram_dtype(be, X, spec, x_sqnorm, options.get("gram_dtype", "float32"), computed_in="float32")
    problems = []
    for c in clusters:
        ic = idx[c]
        yc = y[ic]
        problems.append((ic, yc, C[ic], repair_feasibility(be, yc, alpha[ic])))
    done = solve_segments(be, X, problems, spec, mode=BATCH_MODES[solver], tol=tol, max_iter=max_iter,
                          gram_dtype=gram_dtype, x_sqnorm=x_sqnorm, pa_recent=int(options.get("pa_recent", 2)),
                          max_bytes=max_bytes)
    out = {}
    for c, (_, yc, _, _), r in zip(clusters, problems, done):
        out[c] = {"alpha": r["alpha"], "b": r["b"], "objective": r["objective"], "n_iter": r["n_iter"],
                  "converged": r["converged"], "decision": yc * (r["G"] + 1.0) + r["b"]}
    return out


def _cluster_sizes(be, y, labels, k):
    """Host lists of each cluster's size and number of positive points, in one copy to the host."""
    xp = be.xp
    counts, n_pos = be.to_host(xp.stack([xp.bincount(labels, minlength=k).astype(xp.float64),
                                         xp.bincount(labels, weights=(y > 0).astype(xp.float64), minlength=k)]))
    return [int(v) for v in counts.tolist()], n_pos.tolist()


def _run_level(be, X, y, C, alpha, labels, k, spec, *, solver, tol, max_iter, cache_bytes, options,
               random_state, executor, worker_device, level, batch=None, x_sqnorm=None, cluster_jobs=None,
               cluster_sizes=None):
    """Solve the k subproblems of one level; returns (new alpha, per-cluster results, per-cluster row
    indices, number of clusters solved by the batched path). ``cluster_sizes``: :func:`_cluster_sizes` when the
    caller has them."""
    xp = be.xp
    n = int(y.shape[0])
    order = xp.argsort(labels * n + xp.arange(n))
    sizes, n_pos = _cluster_sizes(be, y, labels, k) if cluster_sizes is None else cluster_sizes
    starts = [0]
    for c in range(k):
        starts.append(starts[-1] + sizes[c])
    idx = [order[starts[c]:starts[c + 1]] for c in range(k)]
    results: list = [None] * k
    n_batched = 0
    if executor is None and batch is not None:
        # clusters of two classes and at most batch["max_size"] points: all in one batched solve
        take = [c for c in range(k) if 2 <= sizes[c] <= batch["max_size"] and 0 < n_pos[c] < sizes[c]]
        if take:
            try:
                done = _solve_batched(be, X, y, C, alpha, idx, take, spec, solver=solver, tol=tol,
                                      max_iter=max_iter, options=options, x_sqnorm=x_sqnorm,
                                      max_bytes=batch["max_bytes"])
            except Exception as exc:
                if is_device_oom(exc):  # DCSVC.fit turns it into a MemoryError that says what to lower
                    raise
                largest = max(sizes[c] for c in take)
                raise _subproblem_error(exc)(f"DC-SVM's batched subproblems failed at level {level} ({len(take)} "
                                             f"clusters of up to {largest} points): {exc!r}") from exc
            for c, r in done.items():
                results[c] = r
            n_batched = len(take)
    if executor is None:
        gather = solver in ROWS_SOLVERS  # (they copy the rows themselves where they need a copy)

        def solve(c):
            ic = idx[c]
            try:
                Xc, rows_c = (X, be.to_host(ic)) if gather else (be.take_rows(X, ic), None)
                return _solve_one(be, Xc, y[ic], C[ic], alpha[ic], spec, solver, tol, max_iter, cache_bytes,
                                  options, random_state, rows_c)
            except Exception as exc:
                raise _subproblem_error(exc)(f"DC-SVM subproblem failed at level {level}, cluster {c} "
                                             f"({starts[c + 1] - starts[c]} points): {exc!r}") from exc

        todo = [c for c in range(k) if starts[c + 1] > starts[c] and results[c] is None]
        # largest clusters first, so that threads do not end on one big subproblem
        todo.sort(key=lambda c: starts[c] - starts[c + 1])
        for c, r in zip(todo, map_problems(solve, todo, cluster_jobs, on_gpu=be.is_gpu)):
            results[c] = r
    else:
        futures = {}
        try:
            for c in range(k):
                if starts[c + 1] == starts[c]:
                    continue
                ic = idx[c]
                task = {"X": be.to_host(be.take_rows(X, ic)), "y": be.to_host(y[ic]), "C": be.to_host(C[ic]),
                        "alpha0": be.to_host(alpha[ic]), "spec": spec, "solver": solver, "tol": tol,
                        "max_iter": max_iter, "cache_bytes": cache_bytes, "options": dict(options),
                        "random_state": random_state, "device": worker_device}
                try:
                    futures[c] = executor.submit(solve_subproblem_task, task)
                except Exception as exc:
                    raise RuntimeError(f"DC-SVM could not submit the subproblem of level {level}, cluster {c} "
                                       f"to the executor: {exc!r}") from exc
            for c, fut in futures.items():
                try:
                    out = fut.result()
                except Exception as exc:
                    raise RuntimeError(f"DC-SVM subproblem failed at level {level}, cluster {c} "
                                       f"({starts[c + 1] - starts[c]} points) on the executor: {exc!r}") from exc
                results[c] = _task_result(be, out, starts[c + 1] - starts[c], level, c)
        except BaseException:
            for fut in futures.values():
                try:
                    fut.cancel()
                except Exception:  # an executor whose futures cannot be cancelled: nothing to wait on
                    pass
            raise
    new_alpha = xp.zeros(n, dtype=xp.float64)
    for c in range(k):
        if results[c] is not None:
            new_alpha[idx[c]] = results[c]["alpha"]
    return new_alpha, results, idx, n_batched


def _local_models(be, X, y, x_sqnorm, level, clustering, results, idx, alpha):
    xp = be.xp
    k = clustering.n_clusters
    solved = [c for c in range(k) if results[c] is not None]
    starts, biases = [0], []
    if solved:
        # the support vectors of every solved cluster, cluster by cluster, with one boolean mask and their
        # number per cluster in one copy (a mask per cluster read k counts on the host, k GPU syncs)
        rows = xp.concatenate([idx[c] for c in solved])
        seg = xp.repeat(xp.arange(len(solved)), [int(idx[c].shape[0]) for c in solved])
        is_sv = alpha[rows] > 0
        n_sv = be.to_host(xp.bincount(seg, weights=is_sv.astype(xp.float64), minlength=len(solved))).tolist()
        sv_index = rows[is_sv]
    else:
        n_sv, sv_index = [], xp.zeros(0, dtype=xp.int64)
    n_sv = dict(zip(solved, n_sv))
    for c in range(k):
        r = results[c]
        starts.append(starts[-1] + (int(n_sv[c]) if r is not None else 0))
        biases.append(r["b"] if r is not None else 0.0)
    return LocalModels(level=level, clustering=clustering, sv_X=be.take_rows(X, sv_index),
                       sv_sqnorm=None if x_sqnorm is None else x_sqnorm[sv_index],
                       sv_coef=alpha[sv_index] * y[sv_index], sv_index=sv_index, sv_starts=starts,
                       bias=biases)


# default kernel k-means sample at level l: max(_MIN_SAMPLE, _SAMPLE_PER_CLUSTER * k**l) points
_MIN_SAMPLE = 500
_SAMPLE_PER_CLUSTER = 4


def _skipped_level(level, n_clusters, reason, n_sv, **extra):
    """The ``levels`` record of a level below the top that was not solved (``skip_reason``: "small",
    "sv_share" or "dominant"); ``extra`` adds or overrides fields (the k-means time of a clustered one)."""
    rec = {"level": level, "n_clusters": n_clusters, "skipped": True, "skip_reason": reason,
           "time_cluster_s": 0.0, "time_solve_s": 0.0, "time_s": 0.0, "cpu_s": 0.0, "n_sv": n_sv,
           "objective": None, "n_iter": 0, "train_accuracy": None, "converged": True}
    rec.update(extra)
    return rec


def dcsvm_solve(be, X, y, spec, C, *, n_levels=4, n_clusters_per_level=4, sample_size=None,
                early_stop_level=None, refine=True, refine_max_share=1.0, solver="smo", tol=1e-3, sub_tol=None,
                refine_tol=None,
                max_cluster_share=1.0, min_cluster_size=0, max_sv_share=1.0, top_options=None, max_iter=-1,
                cache_bytes=200 * 2**20, options=None, executor=None, worker_device="cpu", rng=None,
                random_state=None, verbose=0, assign="center", batch=False, batch_max_size=4096,
                batch_bytes=2**30, cluster_jobs=None, rows=None, top_result=None):
    """Multilevel DC-SVM (Hsieh, Si and Dhillon, ICML 2014); see the module docstring.

    Parameters
    ----------
    be : Backend
    X : {array, CSR matrix} of shape (n, d) on ``be``
    y : array of shape (n,), float64 in {-1, +1}, on ``be``
    spec : GramSpec
    C : array of shape (n,), per-sample upper bounds, on ``be``
    n_levels : int
        L; the lowest level has ``n_clusters_per_level ** L`` clusters.
    n_clusters_per_level : int
        k.
    sample_size : int, optional
        m, the points clustered by kernel k-means at every level; default ``max(500, 4 * k ** l)``
        at level l, clipped to n.
    early_stop_level : int, optional
        Stop after this level (1..L) without the refine and top solves.
    refine : bool
        Solve on the union of level 1's support vectors before the top level.
    refine_max_share : float
        Skip that refine solve when the support vectors are more than this share of the n points
        (1.0: never skip); the skip is recorded in ``levels`` (see the module docstring).
    solver : str
        Registered binary solver for every subproblem and the top level.
    tol : float
        KKT tolerance of the top-level solve.
    sub_tol : float, optional
        KKT tolerance of the cluster subproblems and the refine solve (default ``tol``; never below
        ``tol``). These solutions are only warm starts, so :class:`gpusvm.DCSVC` solves them loosely.
    refine_tol : float, optional
        KKT tolerance of the refine solve (default ``sub_tol``; never below ``tol``).
    max_cluster_share : float
        When solving to the top, a level of more than two clusters whose largest cluster holds more
        than this share of the n points is clustered but not solved (1.0: never).
    min_cluster_size : int
        A level below the top / the early-stop level whose clusters would hold fewer than this many
        points on average (``n < min_cluster_size * k**l``) is neither clustered nor solved (0: never).
    max_sv_share : float
        When solving to the top, once a solved level leaves more than this share of the n points as
        support vectors, the levels between it and the top are skipped (1.0: never); see the module
        docstring.
    top_options : dict, optional
        Solver options for the top-level solve only (they override ``options`` there).
    max_iter, cache_bytes, random_state
        Passed to the binary solver (``max_iter`` per solve, -1 for no limit).
    options : dict, optional
        Extra keyword options of the binary solver.
    executor : concurrent.futures.Executor, optional
        Where the subproblems of the levels run (see the module docstring).
    worker_device : str
        ``device`` of the backend a worker solves its subproblem on.
    rng : numpy.random.Generator
        Host generator for the kernel k-means samples and seeds; None is fine where no level is clustered
        (:func:`lowest_clustered_level` 0: it is never read).
    verbose : int
    assign : {"center", "nearest"}
        How the second step of kernel k-means places every point (and early prediction every new
        point): nearest cluster mean in feature space (the paper) or the cluster of the nearest sampled
        point; see :func:`gpusvm._solvers.kernel_kmeans.assign_clusters`.
    batch : bool
        Solve the clusters of a level that have both classes and at most ``batch_max_size`` points
        together, with ``be.local_smo_batched`` (one thread block per cluster on the GPU), instead of one
        after the other with ``solver``; only without an ``executor`` and for the SMO solvers ("smo",
        "pa-smo"; :func:`batchable`), otherwise ignored. Same subproblems, solved exactly to ``sub_tol``
        from the same warm starts, so the same solutions up to the solvers' tolerance.
    batch_max_size : int
        Largest cluster the batched path takes (its ``q x q`` Gram block is formed whole).
    batch_bytes : int
        Gram bytes of one batched launch; more clusters are split over several launches.
    cluster_jobs : int, optional
        Threads that solve the clusters of a level at the same time on the CPU without an
        ``executor`` (joblib's convention, as ``n_jobs``; None: one). Each cluster is solved exactly as
        alone, so the result does not depend on it; the refine and top solves stay on one thread.
    rows : host int array of shape (n,), optional
        Solve the problem of ``X[rows]`` (``y`` and ``C`` are that problem's): the same result as from
        ``X[rows]``. The copy of those rows that the levels read is dropped before the top solve, which
        the SMO solvers ("smo", "pa-smo") then gather from ``X`` into their own transposed copy: the
        top solve does not hold two copies of the data (one-vs-one pairs and LIBSVM's class order make
        ``rows`` a permutation even for two classes).
    top_result : BinaryResult, optional
        The top-level solve from alpha = 0, made by the caller, for a problem that no level clusters
        (:func:`lowest_clustered_level` 0; :class:`gpusvm.DCSVC` solves such class pairs together, with
        :func:`gpusvm._solvers.segments.solve_segments`); used instead of solving the top here.

    Returns
    -------
    DCResult
        ``levels`` holds one dict per solved level, lowest first, then "refine" and the top (level 0):
        level, n_clusters, time_cluster_s, time_solve_s, time_s, n_sv, objective (sum of the clusters'
        dual objectives; the top's own objective for level 0), n_iter (sum over clusters),
        train_accuracy (of the level's early-prediction rule on the training points, where the solver
        returned its gradient), converged.
    """
    xp = be.xp
    X_all = X
    if rows is not None:
        X = be.select_rows(X_all, rows)  # the levels' and refine's copy; dropped before the top solve
    n = int(y.shape[0])
    k = int(n_clusters_per_level)
    L = int(n_levels)
    m = int(sample_size) if sample_size is not None else max(_MIN_SAMPLE, _SAMPLE_PER_CLUSTER * k ** L)
    stop = 0 if early_stop_level is None else int(early_stop_level)
    _check_sizes(n, L, k, m, stop, min_cluster_size)
    sub_tol = float(tol) if sub_tol is None else max(float(tol), float(sub_tol))
    refine_tol = sub_tol if refine_tol is None else max(float(tol), float(refine_tol))
    options = dict(options or {})
    x_sqnorm = be.row_sqnorms(X, xp.float64) if spec.kind == "rbf" else None
    batch_cfg = None
    if batch and executor is None and batchable(solver):
        batch_cfg = {"max_size": int(batch_max_size), "max_bytes": int(batch_bytes)}
    alpha = xp.zeros(n, dtype=xp.float64)
    levels, models = [], {}
    n_unconverged = n_stalled = 0  # (solves that stopped before tol; those that stalled)
    solved_any = False
    for level in range(L, stop - 1 if stop > 0 else 0, -1):
        t0 = time.perf_counter()
        c0 = time.process_time()
        kl = k ** level
        if level != stop and n < min_cluster_size * kl:
            # clusters of fewer than min_cluster_size points on average: such a level costs more (its
            # k-means assignment is n x m Gram values) than it saves above it. Never the early-stop level.
            levels.append(_skipped_level(level, kl, "small", 0))
            if verbose:
                print(f"[DC-SVM] level {level}: {kl} clusters of {n / kl:.0f} points on average: skipped")
            continue
        if solved_any and stop == 0 and max_sv_share < 1.0:
            n_sv_now = int(xp.count_nonzero(alpha > 0))
            if n_sv_now > max_sv_share * n:
                # most of the points already are support vectors: a coarser level's subproblems are
                # near copies of the top solve, which they would warm-start (see the module docstring)
                levels.append(_skipped_level(level, kl, "sv_share", n_sv_now))
                if verbose:
                    print(f"[DC-SVM] level {level}: {n_sv_now} of {n} points are support vectors "
                          f"(more than {max_sv_share:g}): skipped")
                continue
        cand = None if not solved_any else xp.nonzero(alpha > 0)[0]
        m_l = min(n, m if sample_size is not None else max(_MIN_SAMPLE, _SAMPLE_PER_CLUSTER * kl))
        clustering = kernel_kmeans_sample(be, X, spec, kl, m_l, rng, candidates=cand, x_sqnorm=x_sqnorm,
                                          assign=assign)
        m_s = int(clustering.sample_index.shape[0])
        largest_sample = max(clustering.starts[c + 1] - clustering.starts[c] for c in range(kl))
        # (of two clusters, one always holds half)
        dominant = stop == 0 and max_cluster_share < 1.0 and kl > 2
        labels, largest, sizes = None, None, None
        if not (dominant and largest_sample > max_cluster_share * m_s):
            labels = assign_clusters(be, clustering, X, x_sqnorm=x_sqnorm)
            sizes = _cluster_sizes(be, y, labels, kl)  # (read once, for the level's solves too)
            largest = max(sizes[0])
        be.sync()
        t1 = time.perf_counter()
        if labels is None or (dominant and largest > max_cluster_share * n):
            # this level's largest subproblem is most of the whole problem: solving it costs about as
            # much as the top-level solve it would warm-start (see the module docstring). Decided from
            # the k-means sample's cluster sizes before the n x m assignment when the sample shows it.
            levels.append(_skipped_level(
                level, kl, "dominant", int(xp.count_nonzero(alpha > 0)), largest_cluster=largest,
                largest_cluster_sample=f"{largest_sample}/{m_s}", time_cluster_s=t1 - t0,
                time_s=time.perf_counter() - t0, cpu_s=time.process_time() - c0, kmeans_iter=clustering.n_iter))
            if verbose:
                print(f"[DC-SVM] level {level}: {kl} clusters, largest {largest_sample} of the {m_s} sampled "
                      f"points ({largest} of {n} assigned): skipped")
            continue
        solved_any = True
        alpha, results, idx, n_batched = _run_level(
            be, X, y, C, alpha, labels, kl, spec, solver=solver, tol=sub_tol, max_iter=max_iter,
            cache_bytes=cache_bytes, options=options, random_state=random_state, executor=executor,
            worker_device=worker_device, level=level, batch=batch_cfg, x_sqnorm=x_sqnorm,
            cluster_jobs=cluster_jobs, cluster_sizes=sizes)
        be.sync()
        t2 = time.perf_counter()
        models[level] = _local_models(be, X, y, x_sqnorm, level, clustering, results, idx, alpha)
        solved = [r for r in results if r is not None]
        n_level = sum(not r["converged"] for r in solved)
        conv = n_level == 0
        n_unconverged += n_level
        n_stalled += sum(bool(r.get("stalled", False)) for r in solved)
        acc = None
        if all(r["decision"] is not None for r in solved):
            # summed on the device and read once (a read per cluster is a GPU sync per cluster)
            correct = sum(xp.count_nonzero((r["decision"] > 0) == (y[idx[c]] > 0))
                          for c, r in enumerate(results) if r is not None)
            acc = int(correct) / n
        info = {"level": level, "n_clusters": kl, "time_cluster_s": t1 - t0, "time_solve_s": t2 - t1,
                "time_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0,
                "n_sv": int(xp.count_nonzero(alpha > 0)),
                "objective": float(sum(r["objective"] for r in solved)),
                "n_iter": int(sum(r["n_iter"] for r in solved)), "train_accuracy": acc, "largest_cluster": largest,
                "largest_cluster_sample": f"{largest_sample}/{m_s}", "kmeans_iter": clustering.n_iter, "converged": conv,
                "n_batched": n_batched}
        levels.append(info)
        if verbose:
            print(f"[DC-SVM] level {level}: {kl} clusters, {info['n_sv']} SVs, "
                  f"obj {info['objective']:.6g}, {info['time_s']:.3f}s")
    if stop > 0:
        return DCResult(alpha=alpha, b=None, objective=None, n_iter=0, converged=n_unconverged == 0,
                        n_unconverged=n_unconverged, n_stalled=n_stalled, levels=levels, models=models,
                        stopped_at=stop)
    fn, _ = get_binary_solver(solver)
    if solved_any:  # (else alpha is 0, which the repair keeps: a problem too small for any level skips it)
        alpha = repair_feasibility(be, y, alpha)
    if refine:
        t0 = time.perf_counter()
        c0 = time.process_time()
        sv = xp.nonzero(alpha > 0)[0]
        n_sv = int(sv.shape[0])
        npos = int(xp.count_nonzero(y[sv] > 0)) if 0 < n_sv < n else 0
        # why the refine solve is skipped, if it is: "large", a refine problem that is most of the whole
        # one (it costs about what the top solve costs and saved nothing there, see the module docstring);
        # "no_sv", no support vectors below the top (every level skipped, or all alphas 0); "all_sv", every
        # point one (the refine problem would be the top one); "one_class" is only a guard (alpha is
        # feasible here, y^T alpha = 0, so its support vectors hold both classes)
        skip = ("large" if n_sv > refine_max_share * n else "no_sv" if n_sv == 0 else "all_sv" if n_sv == n
                else "one_class" if not 0 < npos < n_sv else None)
        if skip is not None:
            levels.append({"level": "refine", "n_clusters": 1, "n_points": n_sv, "skipped": True,
                           "skip_reason": skip, "time_s": time.perf_counter() - t0,
                           "cpu_s": time.process_time() - c0, "n_sv": n_sv, "objective": None, "n_iter": 0,
                           "converged": True})
            if verbose:
                print(f"[DC-SVM] refine: {n_sv} of {n} points are support vectors"
                      + (f" (more than {refine_max_share:g})" if skip == "large" else f" ({skip})") + ": skipped")
        else:
            ys = y[sv]
            a_sv = repair_feasibility(be, ys, alpha[sv])
            res = fn(be, be.take_rows(X, sv), ys, spec, C[sv], tol=refine_tol, max_iter=max_iter,
                     cache_bytes=cache_bytes, alpha0=a_sv,
                     x_sqnorm=None if x_sqnorm is None else x_sqnorm[sv], random_state=random_state,
                     **options)
            alpha = xp.zeros(n, dtype=xp.float64)
            alpha[sv] = res.alpha
            n_unconverged += not res.converged
            n_stalled += bool(res.info.get("stalled", False))
            be.sync()
            levels.append({"level": "refine", "n_clusters": 1, "n_points": n_sv,
                           "time_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0,
                           "n_sv": int(xp.count_nonzero(res.alpha > 0)),
                           "objective": float(res.objective), "n_iter": int(res.n_iter),
                           "converged": bool(res.converged), "solver_info": dict(res.info)})
    t0 = time.perf_counter()
    c0 = time.process_time()
    a0 = None  # (no level solved: alpha is 0, a cold start)
    if solved_any:
        a0 = repair_feasibility(be, y, alpha)
        a0 = a0 if bool(xp.any(a0 > 0)) else None
    top_kw = {**options, **dict(top_options or {})}
    if rows is not None and solver in ROWS_SOLVERS and X is not X_all:
        X, top_kw["rows"] = X_all, rows  # (the copy of the rows is freed here)
    if top_result is not None:
        if solved_any:  # (a caller's mistake: the top solve is a cold start only where nothing was solved)
            raise ValueError("dcsvm_solve: top_result is for problems that no level clusters")
        res = top_result
    else:
        res = fn(be, X, y, spec, C, tol=tol, max_iter=max_iter, cache_bytes=cache_bytes, alpha0=a0,
                 x_sqnorm=x_sqnorm, random_state=random_state, **top_kw)
    be.sync()
    n_unconverged += not res.converged
    n_stalled += bool(res.info.get("stalled", False))
    acc = None
    if res.gradient is not None:
        acc = int(xp.count_nonzero((y * (res.gradient + 1.0) + res.b > 0) == (y > 0))) / n
    levels.append({"level": 0, "n_clusters": 1, "time_s": time.perf_counter() - t0,
                   "cpu_s": time.process_time() - c0,
                   "n_sv": int(xp.count_nonzero(res.alpha > 0)), "objective": float(res.objective),
                   "n_iter": int(res.n_iter), "train_accuracy": acc, "converged": bool(res.converged),
                   "solver_info": dict(res.info)})
    if verbose:
        print(f"[DC-SVM] top: {levels[-1]['n_sv']} SVs, obj {res.objective:.6g}, {levels[-1]['time_s']:.3f}s")
    return DCResult(alpha=res.alpha, b=float(res.b), objective=float(res.objective), n_iter=int(res.n_iter),
                    converged=n_unconverged == 0, n_unconverged=n_unconverged, n_stalled=n_stalled, levels=levels,
                    models=models, stopped_at=0)

"""Divide-and-conquer kernel SVM: :class:`DCSVC`, scikit-learn compatible, on the CPU or the GPU."""

from __future__ import annotations

import functools
import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning, NotFittedError

from ._backend import array_library, get_backend, move_fitted
from ._backend.base import device_memory_guard, host_memory_guard, is_device_oom
from ._dedupe import check_mode as check_deduplicate
from ._dedupe import plan as plan_deduplication
from ._dedupe import reduce_problem
from ._gram import GramSpec
from ._ovo import (check_finite_model, linear_pair_weights, ovo_decision_function, ovo_model_layout, ovo_pair_rows,
                   ovo_predict)
from ._parallel import check_n_jobs, map_problems
from ._solvers._common import early_stop_causes
from ._solvers.smo_batched import MAX_WORKING_SET
from .svc import (_blocked_decision, _decision_threads, PredictCache, by_row_blocks, ovo_fit_setup,
                  predict_operands)
from ._validation import (check_auto_or_bool, check_class_weight, check_degree, check_gamma, check_options,
                          check_random_state_param, check_scalar, check_X, to_numpy)

# refine="auto": refine only when the support vectors below the top are at most this share of the points
_REFINE_AUTO_MAX_SHARE = 0.2

__all__ = ["DCSVC"]

_KERNELS = ("linear", "poly", "rbf", "sigmoid")


class DCSVC(ClassifierMixin, BaseEstimator):
    """Divide-and-conquer kernel SVM (DC-SVM) with early prediction.

    Hsieh, Si and Dhillon, "A Divide-and-Conquer Solver for Kernel Support Vector Machines", ICML
    2014. The training data are partitioned by two-step kernel k-means into ``k**l`` clusters at level
    ``l = n_levels, ..., 1`` (``k = n_clusters_per_level``); the C-SVC of every cluster is solved
    independently (warm-started from the level below), the concatenated solution warm-starts the next
    level, and the top level (level 0) solves the whole problem warm-started, so that the final model
    is the exact C-SVC solution (the same problem as :class:`gpusvm.SVC` and scikit-learn's SVC, to
    ``tol``). From the second level on, kernel k-means samples its points from the current support
    vectors (adaptive clustering). See :mod:`gpusvm._solvers.dcsvm` for the algorithm in detail.
    The "sigmoid" gram is not positive semi-definite, so its dual can have several KKT points, and
    the warm start decides which one the top solve reaches: in 7 of 24 small probes (C=2, coef0=0.5,
    gamma "scale"/"auto") it stopped at a lower objective than a cold :class:`gpusvm.SVC` fit (806.77
    against 808.30), with other predictions. The other grams have one optimal objective.

    **Bias.** Unlike the paper (which drops the bias), every subproblem is the C-SVC *with* bias,
    solved by the same exact solver as the top level; every local model keeps its own bias. When a
    level re-clusters the data, a new cluster's part of the previous alpha generally breaks
    ``sum(y * alpha) = 0``; before each warm start a feasibility repair scales down the alphas of the
    class with the larger sum so that the constraint holds (0 <= alpha <= C is kept). Clusters holding
    a single class are not solved (alpha = 0); their local model predicts that class.

    **Early prediction** (eq. (11) of the paper): after any level ``l``, a point is classified by the
    local model (support vectors, coefficients and bias) of the cluster whose kernel k-means mean is
    nearest in feature space (or, with ``assign="nearest"``, of the cluster of its nearest sampled
    point): ``predict(X, level=l)``. With ``early_stop_level`` set, training stops
    after that level and the early model is the fitted model (``early_model_``).

    **Multi-class**: one-vs-one (as LIBSVM and :class:`gpusvm.SVC`): one binary DC-SVM per pair of
    classes, each with its own clustering; votes decide, ties go to the lower class index. Fitted
    attributes follow LIBSVM's layout.

    **Executors**: with ``executor`` set (any ``concurrent.futures.Executor``; for dask use
    ``client.get_executor()``), the subproblems of every level are submitted as tasks carrying only
    host NumPy/SciPy data; each is solved on the worker's CPU backend when this estimator runs on the
    CPU, and on the worker's default backend (``device="auto"``) when it runs on the GPU. The refine
    and top-level solves always run in this process on this estimator's device. A failing task stops
    ``fit`` with a ``RuntimeError`` naming the level and cluster.

    **Speed** (CPU, benchmarks/results/dcsvm_cpu.md): the final model is exact, but the time to the top
    is close to a cold-start SMO solve at these sizes (50k points): k=8, L=2 (``n_clusters_per_level=8,
    n_levels=2``, still 64 clusters for early prediction) was faster than the defaults k=4, L=4 on all
    three measured data sets. The early model (``early_stop_level``) is where the large savings are.

    **GPU**: by default (``batch_subproblems="auto"``) the clusters of a level are solved together in
    one launch, one thread block per cluster (``batch_max_size`` bounds the clusters it takes; larger
    ones and the top level run the SVC solver's GPU path); see :mod:`gpusvm._solvers.dcsvm`. First
    timed on an H200 at b542594 (benchmarks/results/gpu_nvidia-h200_b542594), without a one-by-one run
    beside it.

    Parameters
    ----------
    C : float, default=1.0
        Regularization parameter, > 0.
    kernel : {"linear", "poly", "rbf", "sigmoid"}, default="rbf"
        The gram (SVM kernel) function; kernel k-means uses the same gram.
    degree : int, default=3
    gamma : {"scale", "auto"} or float, default="scale"
        As :class:`gpusvm.SVC`.
    coef0 : float, default=0.0
    n_levels : int, default=4
        Number of levels below the top; the lowest level has ``n_clusters_per_level ** n_levels``
        clusters, which must not exceed the number of training samples (of each class pair).
    n_clusters_per_level : int, default=4
        k >= 2: level l has k**l clusters.
    sample_size : int, default=None
        m, the number of points kernel k-means clusters at each level (the rest are assigned to the
        nearest mean). At least ``n_clusters_per_level ** n_levels``. None: ``max(500, 4 * k**l)`` at
        level l (k**l clusters), clipped to the number of samples: the assignment of all n points costs
        n x m Gram values per level, so levels with few clusters use a smaller sample (with the defaults
        1,024 points at the 256-cluster level, 500 at the others; 1,000 before, see
        :mod:`gpusvm._solvers.dcsvm` for the measurement).
    early_stop_level : int, default=None
        None: solve to the top (exact model). An int in [1, n_levels]: stop after that level and
        predict with its local models.
    refine : "auto" or bool, default="auto"
        True: before the top level, solve the problem restricted to the support vectors of the last
        solved level (warm start), so that the top level needs fewer steps. "auto": do so only when
        those support vectors are at most 20% of the points. Measured on full a9a (CPU, k=4, L=4, two
        runs each with benchmarks/dcsvm_profile.py): its 11.7k of 32.6k points (36%) made the refine
        a near copy of the top solve (2.8-3.5 CPU-s) that did not save a single top-level step (54.8k
        steps with it, 54.1k without), whole fit 15.3 / 19.0 s with it against 10.7 / 12.2 s without
        (after the SMO warm-start cache fix of 4be7d82: 9.5 / 12.5 s against 8.7 / 10.0 s);
        on ijcnn1 (5.6%) it costs 0.2 s and saves the top 2k steps and 0.5-1.0 s (skin_nonskin: 5%,
        0.1 s). A skipped refine is recorded in ``levels_`` with ``skipped=True`` and a ``skip_reason``:
        "large" (the "auto" rule), "no_sv" (no support vectors below the top, e.g. every level skipped)
        or "all_sv" (every point is one: the refine problem would be the top one).
    min_cluster_size : int, default=1000
        A level below the top (or below ``early_stop_level``, which is always solved) whose clusters
        would hold fewer than this many points on average (``n < min_cluster_size * k**l``, n the points of the class
        pair) is neither clustered nor solved: its subproblems are too small to pay for their kernel
        k-means (an n x m Gram block). With k = 4 this skips the 64-cluster level on full ijcnn1 (781
        points per cluster) and a9a (509), which cost 0.5-0.8 CPU-s and did not save the levels above
        it as much; skin_nonskin's (1,562 on a 100k subset) is still solved. Whole fits with the other
        defaults, process CPU seconds, two runs each (cold exact SVC in the same runs): ijcnn1 4.85 /
        4.28 with 500 against 3.29 / 3.05 with 1000 (cold 3.66 / 3.60); a9a (with ``max_sv_share``)
        7.52 / 7.95 against 6.15 / 6.78 (cold 7.25 / 7.69). Such a level is recorded in ``levels_``
        with ``skipped=True`` and has no early model; 0 solves every level. A skipped level does not
        need ``k**l`` points either: with the defaults, a class pair of fewer than 4,000 points is
        solved by the exact solver alone (every level is skipped), so ``DCSVC()`` fits small data
        sets (iris, digits) instead of asking for fewer levels.
    max_cluster_share : float, default=0.5
        In (0, 1]. When solving to the top (``early_stop_level=None``), a level whose largest cluster
        holds more than this share of the training points (and that has more than two clusters) is
        clustered but not solved (decided from the kernel k-means sample's cluster sizes before the
        other points are assigned, when the sample already shows it): its largest
        subproblem is most of the whole problem and costs about what the refine/top solve it would
        warm-start costs (ijcnn1, level 1: one cluster of 29k-36k of the 50k points). Such a level is
        recorded in ``levels_`` with ``skipped=True`` and has no early model. 1.0 solves every level.
    max_sv_share : float, default=0.2
        In (0, 1]. When solving to the top, once a solved level leaves more than this share of the
        points as support vectors, the levels between it and the top are skipped (recorded in
        ``levels_`` with ``skip_reason="sv_share"``); 1.0 solves every level. As with the refine rule,
        coarser clusters then hold large parts of the final problem and their solves are near copies
        of the top solve: on full a9a the 16-cluster level leaves 11.9k support vectors of 32.6k
        points (37%); the 4-cluster level above it cost 1.5-1.7 CPU-s and saved the top 0.6-0.8 s.
        Measured with ``min_cluster_size=1000``; with 500, the rule fired after the 64-cluster level
        and the top solve from that warm start took 9.3 CPU-s instead of 5.4-6.0 (whole fit 9.9 s
        against cold 7.3-7.7 s), which is why the two defaults go together.
    assign : {"center", "nearest"}, default="center"
        The second step of the two-step kernel k-means, which places every training point (and, in
        early prediction, every new point) into a cluster: "center" is the paper's rule, the cluster
        whose sample mean is nearest in feature space; "nearest" is the cluster of the nearest
        sampled point in feature space (for the RBF gram: in input space). With a narrow gram the
        mean rule sends every point with little kernel mass near the sample of its own region into
        the cluster with the smallest mean norm, the one whose sampled points are the most spread
        out: on a 100k-row skin_nonskin subset (gamma 0.03) the 64-cluster level had one cluster of
        36.8k points with "center" and of 16.8k with "nearest", whose level solve then took 1.5
        CPU-s instead of 4.3. That level also left fewer support vectors (2.6k against 4.9k), so
        the top solve took about as long, and the whole fit was no faster; see the README's DC-SVM
        results for the timed comparison. On ijcnn1 and a9a the two rules give clusters of similar
        sizes (largest of 64 from a uniform sample of 500: ijcnn1 2.5k / 2.6k points, a9a 1.8k / 2.3k
        with "center" / "nearest").
    tol : float, default=1e-3
        KKT tolerance of the top-level solve (the final model).
    sub_tol : float, default=None
        KKT tolerance of the cluster subproblems of every level and of the refine solve; never below
        ``tol``. None: ``max(tol, 0.1)``. Their solutions are only warm starts (and the early models),
        so they are solved loosely. Measured on full ijcnn1 and a9a (CPU, k=4, L=4, one run each
        with benchmarks/dcsvm_profile.py, during development): 0.1 instead of 0.01 took the whole fit
        from 12.9 s to 11.4 s (ijcnn1) and from 34.0 s to 25.8 s (a9a); the top level then needs more
        steps (ijcnn1: 23k instead of 14k) but the levels below cost less (and 1e-3 cost more still).
    solver : str, default="smo"
        A registered binary solver (``gpusvm._solvers.binary_solvers()``), used for every subproblem
        and for the top level.
    solver_options : dict, default=None
        Extra keyword options of that solver (e.g. ``{"gram_dtype": "float64"}``).
    cache_size : float, default=200
        Gram-row cache budget per solve, in MB.
    max_iter : int, default=-1
        Iteration limit of every solve (-1: none, except LIBSVM's own limit of max(10^7, 100 n) steps
        for the SMO solves, as in :class:`SVC`); reaching it gives a ``ConvergenceWarning``, which says
        whether the top-level solve (and so the model) still reached ``tol``, and tells solves that
        reached the limit from solves that stalled before it (their steps stopped changing alpha).
    batch_subproblems : {"auto", True, False}, default="auto"
        Solve the clusters of a level that hold both classes and at most ``batch_max_size`` points
        together, in one launch of the batched local SMO (``be.local_smo_batched``: one CUDA thread
        block per cluster, each cluster's Gram block formed once; on the CPU its Numba twin), instead
        of one after the other with ``solver``. Only for the SMO solvers ("smo", "pa-smo") and without
        an ``executor``; larger clusters still run one at a time. The subproblems and warm starts are
        the same and are solved to ``sub_tol`` either way. "auto": on the GPU (where one launch per
        cluster and round was the cost; not yet timed against one-by-one on a device), not on the CPU.
        With more than two classes it also solves the top problems of the class pairs that no level
        clusters (fewer than ``min_cluster_size`` points per cluster at every level: each is one cold
        solve) together, as :class:`SVC`'s ``batch_pairs`` does (float64 Gram blocks, to ``tol``; their
        ``levels_`` top records say ``"pair-batch"`` in ``solver_info``, count SMO steps in ``n_iter``, as
        ``max_iter`` then does, and leave the shared solve's time out of ``time_s``).
    batch_max_size : int, default=4096
        Largest cluster the batched path takes (its Gram block, ``batch_max_size**2`` float32 values
        with the default ``gram_dtype``, is formed whole).
    executor : concurrent.futures.Executor, default=None
        Where the subproblems run; None: in this process, one after the other. ``clone`` shares it with
        the clone; pickling leaves it out (the unpickled model has ``executor=None``). A
        ``concurrent.futures.ThreadPoolExecutor`` solves them in parallel in this process (the SMO
        loop releases the GIL); on full ijcnn1 (2 cores, one run) the solved 16-cluster level took 0.24-0.25 s
        wall with 2 threads against 0.32-0.62 s in process, the same model. The top-level solve, most of
        the fit, is one problem and gains nothing.
    class_weight : dict, "balanced" or None, default=None
        Multiply C of class c by ``class_weight[c]`` (times ``sample_weight``), as scikit-learn's SVC.
    decision_function_shape : {"ovr", "ovo"}, default="ovr"
        Shape of :meth:`decision_function` for more than two classes, as scikit-learn's SVC: "ovr"
        turns the one-vs-one values into one column per class (votes plus a confidence tie-break);
        "ovo" returns one column per class pair. Predictions are the one-vs-one vote either way.
    device : {"auto", "cpu", "gpu", "gpu:N"}, default="auto"
    random_state : int, numpy Generator/RandomState or None, default=None
        Seeds the kernel k-means samples and seeds; None draws the seed from NumPy's global random state
        (``np.random.seed``), as scikit-learn's estimators do. With more than two classes every class pair
        draws its own seed from it first (so a pair's clustering does not depend on the others).
    n_jobs : int, default=None
        Threads that solve the class pairs of a multi-class CPU fit at the same time, or, with two
        classes, the clusters of each level below the top (largest first; the refine and top solves run
        on one thread). joblib's convention: None means 1 (unless in a ``joblib.parallel_backend``
        context), -1 all cores. Every pair and every cluster is solved exactly as alone (a pair with its
        own seed), so the model does not depend on it; each thread keeps its own Gram-row caches of
        ``cache_size`` MB. On the 2-core machine: 8 classes, 8,000 x 20, k=4, L=2: 1.98 s wall with one
        thread, 1.07 s with two (benchmarks/results/threads_ovr_cpu.md); two classes, a 300,000-point
        chess-board with ``early_stop_level=2``: 11.5 s against 8.5 s (medians of 3); full ijcnn1 to the
        top: no gain (its levels took 0.3 of 3.3 s). With an ``executor`` the subproblems all go to it.
        A GPU fit uses no threads (its pairs run one after the other, its clusters batched: see
        ``batch_subproblems``).
    verbose : int, default=0
    deduplicate : {"auto", True, False}, default="auto"
        Merge equal training points of the same label before dividing, as :class:`gpusvm.SVC` does
        (exact: the top-level model is the SVM of all the points; the clusters, levels and early models
        are those of the distinct points). "auto" merges when the distinct (x, y) pairs are at most half
        of the rows, unless a class pair would then have fewer distinct points than the clusters of its
        finest clustered level (it then keeps the copies, which the levels can divide, as False does).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    class_weight_ : ndarray of shape (n_classes,)
        Multipliers of C per class (as :class:`SVC`'s).
    support_ : array of shape (n_SV,)
        Indices of the support vectors, grouped by class.
    support_vectors_ : {array, CSR matrix} of shape (n_SV, n_features)
        Read-only for NumPy from the first prediction on, as :class:`~gpusvm.SVC`'s (assign, do not edit).
    dual_coef_ : array of shape (n_classes - 1, n_SV)
        Signed coefficients in LIBSVM's layout (for two classes, > 0 pushes towards ``classes_[1]``).
    intercept_ : array of shape (n_classes * (n_classes - 1) / 2,)
        Biases of the top-level models; NaN when stopped early (the early model has one bias per
        cluster instead).
    coef_ : array or CSR matrix of shape (n_classes * (n_classes - 1) / 2, n_features)
        Primal weights of the top-level models, ``kernel="linear"`` only (as sklearn's SVC).
    n_support_ : ndarray of shape (n_classes,)
    objective_ : ndarray of shape (n_classes * (n_classes - 1) / 2,)
        Dual objective of each binary top-level model (NaN when stopped early).
    n_iter_ : ndarray of shape (n_classes * (n_classes - 1) / 2,)
        Top-level solver iterations of each binary problem.
    levels_ : list of dict
        Per level (lowest first, then "refine" and the top, level 0): level, n_clusters, time_s
        (and time_cluster_s, time_solve_s for the cluster levels), n_sv, objective (sum over the
        clusters), n_iter, train_accuracy of that level's model, converged, n_batched (clusters solved
        by the batched path, ``batch_subproblems``); with a "pair" key
        (class indices) for more than two classes.
    early_model_ : dict
        Present when ``early_stop_level`` is set: ``{"level": l, "n_clusters": k**l}``; predictions use
        that level's local models.
    fit_status_ : int
        0 when every solve converged, 1 otherwise (also when only a level below the top stopped early; see
        ``levels_[...]['converged']``).
    n_distinct_ : int or None
        Number of distinct (x, y) pairs (None with ``deduplicate=False``), as :class:`gpusvm.SVC`.
    shape_fit_ : tuple
        ``(n_samples, n_features)`` of the training data, as :class:`gpusvm.SVC`'s.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Column names of X when it was a data frame with string column names (as scikit-learn's
        estimators; absent otherwise).
    """

    def __init__(self, *, C=1.0, kernel="rbf", degree=3, gamma="scale", coef0=0.0, n_levels=4,
                 n_clusters_per_level=4, sample_size=None, early_stop_level=None, refine="auto", min_cluster_size=1000,
                 max_cluster_share=0.5, max_sv_share=0.2, assign="center",
                 tol=1e-3,
                 sub_tol=None,
                 solver="smo", solver_options=None, cache_size=200, max_iter=-1, executor=None,
                 batch_subproblems="auto", batch_max_size=4096,
                 class_weight=None, decision_function_shape="ovr", device="auto", random_state=None, verbose=0,
                 deduplicate="auto", n_jobs=None):
        self.C = C
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.n_levels = n_levels
        self.n_clusters_per_level = n_clusters_per_level
        self.sample_size = sample_size
        self.early_stop_level = early_stop_level
        self.refine = refine
        self.min_cluster_size = min_cluster_size
        self.max_cluster_share = max_cluster_share
        self.max_sv_share = max_sv_share
        self.assign = assign
        self.tol = tol
        self.sub_tol = sub_tol
        self.solver = solver
        self.solver_options = solver_options
        self.cache_size = cache_size
        self.max_iter = max_iter
        self.executor = executor
        self.batch_subproblems = batch_subproblems
        self.batch_max_size = batch_max_size
        self.class_weight = class_weight
        self.decision_function_shape = decision_function_shape
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self.deduplicate = deduplicate
        self.n_jobs = n_jobs

    # ------------------------------------------------------------------------------------------
    def _batch(self, be):
        """Whether the levels' subproblems go through the batched local SMO (``batch_subproblems``)."""
        if isinstance(self.batch_subproblems, str):  # "auto"
            return bool(be.is_gpu)
        return bool(self.batch_subproblems)

    def _solve_tops_together(self, be, X, spec, reduced, cluster_args):
        """The top-level solves of the class pairs that no level clusters (too small for
        ``min_cluster_size``), of at most ``batch_max_size`` points, solved together where the levels'
        clusters are (``batch_subproblems``, SMO solvers, no executor, solving to the top) by
        :func:`gpusvm.svc.solve_host_problems`: one launch instead of one decomposition per pair on the
        GPU, as :class:`gpusvm.SVC`'s ``batch_pairs``. Returns ``{pair number: BinaryResult}``."""
        from ._solvers.dcsvm import batchable, lowest_clustered_level
        from ._solvers.segments import BATCH_MODES
        from .svc import _segment_rows, solve_host_problems

        if not (self._batch(be) and batchable(self.solver) and self.executor is None
                and self.early_stop_level is None):
            return {}
        take = [p for p, (rows, _, _, _) in enumerate(reduced)
                if lowest_clustered_level(int(rows.shape[0]), *cluster_args) == 0
                and int(rows.shape[0]) <= int(self.batch_max_size)]
        if not take:
            return {}
        opts = dict(self.solver_options or {})
        try:
            rows_of = _segment_rows(be, X, be.row_sqnorms(X, be.xp.float64) if spec.kind == "rbf" else None, spec)
            done, _, _ = solve_host_problems(be, rows_of, spec, [reduced[p][:3] for p in take],
                                             mode=BATCH_MODES[self.solver], tol=float(self.tol),
                                             max_iter=int(self.max_iter), pa_recent=int(opts.get("pa_recent", 2)))
        except Exception as exc:
            if not (isinstance(self.batch_subproblems, str) and is_device_oom(exc)):
                raise
            # "auto" must not fail where the pairs one by one fit (as SVC's batch_pairs)
            warnings.warn("batch_subproblems='auto': the small class pairs' Gram blocks did not fit in the GPU's "
                          f"memory ({type(exc).__name__}); their top problems are solved one by one. Pass "
                          "batch_subproblems=False to skip the attempt.", UserWarning, stacklevel=3)
            return {}
        return dict(zip(take, done))

    def _validate_params(self):
        from ._solvers import get_binary_solver

        own = "DCSVC"
        check_scalar(self.C, "C", own, low=0.0, low_open=True)
        check_random_state_param(self.random_state, own, generator=True)
        check_options(self.kernel, "kernel", own, _KERNELS)
        check_options(self.decision_function_shape, "decision_function_shape", own, ("ovr", "ovo"))
        check_degree(self.degree, self.kernel, own)
        check_gamma(self.gamma, self.kernel, own)
        check_scalar(self.coef0, "coef0", own)
        check_scalar(self.n_levels, "n_levels", own, kind="int", low=1)
        check_scalar(self.n_clusters_per_level, "n_clusters_per_level", own, kind="int", low=2)
        check_scalar(self.sample_size, "sample_size", own, kind="int", low=1, allow_none=True)
        check_scalar(self.early_stop_level, "early_stop_level", own, kind="int", low=1, high=self.n_levels,
                     allow_none=True)
        check_auto_or_bool(self.refine, "refine", own)
        check_scalar(self.min_cluster_size, "min_cluster_size", own, kind="int", low=0)
        check_scalar(self.max_cluster_share, "max_cluster_share", own, low=0.0, high=1.0, low_open=True)
        check_scalar(self.max_sv_share, "max_sv_share", own, low=0.0, high=1.0, low_open=True)
        check_options(self.assign, "assign", own, ("center", "nearest"))
        check_class_weight(self.class_weight, own)
        check_scalar(self.tol, "tol", own, low=0.0, low_open=True)
        check_scalar(self.sub_tol, "sub_tol", own, low=0.0, low_open=True, allow_none=True)
        check_scalar(self.cache_size, "cache_size", own, low=0.0, low_open=True)
        if isinstance(self.max_iter, bool) or not isinstance(self.max_iter, numbers.Integral) or (
                self.max_iter < 1 and self.max_iter != -1):
            raise ValueError("The 'max_iter' parameter of DCSVC must be -1 or an int in the range [1, inf). "
                             f"Got {self.max_iter!r} instead.")
        if self.executor is not None and not callable(getattr(self.executor, "submit", None)):
            raise ValueError("The 'executor' parameter of DCSVC must be None or a concurrent.futures.Executor "
                             f"(an object with a submit method). Got {self.executor!r} instead.")
        if self.solver_options is not None and not isinstance(self.solver_options, dict):
            raise ValueError(f"The 'solver_options' parameter of DCSVC must be None or a dict. "
                             f"Got {self.solver_options!r} instead.")
        check_auto_or_bool(self.batch_subproblems, "batch_subproblems", own)
        check_scalar(self.batch_max_size, "batch_max_size", own, kind="int", low=2)
        check_deduplicate(self.deduplicate, "DCSVC")
        check_n_jobs(self.n_jobs, "DCSVC")
        # a bool is an int here, as in LinearSVC (True: 1); anything else used to reach int() in the first solve
        check_scalar(int(self.verbose) if isinstance(self.verbose, (bool, np.bool_)) else self.verbose, "verbose", own,
                     kind="int", low=0)
        if not isinstance(self.solver, str):
            raise ValueError(f"The 'solver' parameter of DCSVC must be a str. Got {self.solver!r} instead.")
        _, opts = get_binary_solver(self.solver)
        unknown = set(self.solver_options or {}) - set(opts)
        if unknown:
            raise ValueError(f"The 'solver_options' parameter of DCSVC has options {sorted(unknown)} that solver "
                             f"{self.solver!r} does not take; it takes {sorted(opts)}.")
        wss = (self.solver_options or {}).get("working_set_size")
        if wss is not None:  # checked at every fit, as SVC's, not only where a batched solve runs
            check_scalar(wss, "solver_options['working_set_size']", own, kind="int", low=2, high=MAX_WORKING_SET)

    def _gram_spec(self, gamma):
        return GramSpec(self.kernel, gamma=gamma, coef0=self.coef0, degree=self.degree)

    def _rng(self):
        rs = self.random_state
        if isinstance(rs, np.random.Generator):
            return rs, None
        if rs is None or isinstance(rs, np.random.RandomState):
            # None: NumPy's global RandomState, as scikit-learn's check_random_state (so np.random.seed
            # makes the fit reproducible, as it does LinearSVC's and BudgetSVC's)
            from sklearn.utils import check_random_state

            seed = int(check_random_state(rs).randint(2**31 - 1))
            return np.random.default_rng(seed), seed
        return np.random.default_rng(int(rs)), int(rs)

    # ------------------------------------------------------------------------------------------
    @device_memory_guard("DCSVC.fit", hint="lower cache_size (the MB of Gram rows each solve keeps on the "
                         "device), lower sample_size (kernel k-means holds sample_size x sample_size and "
                         "row-block x sample_size Gram blocks), lower batch_max_size (a batched level holds "
                         "its clusters' whole Gram blocks, up to 1 GiB per launch) or pass batch_subproblems=False")
    @host_memory_guard("DCSVC.fit", detail="Kernel k-means holds sample_size x sample_size float64 Gram values at "
                       "each level, for each class pair solved at once (the Gram-row caches keep fewer rows when "
                       "their budget cannot be reserved)",
                       hint="lower sample_size (None: max(500, 4 k**l) points at level l) or n_jobs")
    def fit(self, X, y, sample_weight=None):
        """Fit the DC-SVM (one binary DC-SVM per pair of classes).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            NumPy, SciPy sparse (CSR), CuPy or cupyx CSR.
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative per-sample multipliers of C; samples of weight 0 are left out.

        Returns
        -------
        self
        """
        from ._solvers.dcsvm import check_cluster_count, dcsvm_solve, lowest_clustered_level, too_few_for_clusters

        self._validate_params()
        if y is None:
            raise ValueError("DCSVC requires y to be passed, but the target y is None.")
        # X decides the device; labels and weights are read on the host from either library (string labels
        # cannot be CuPy arrays), as LinearSVC and BudgetSVC do
        be = get_backend(self.device, X)
        X = check_X(X, be, owner="DCSVC", estimator=self, reset=True)
        n, d = int(X.shape[0]), int(X.shape[1])
        classes, y_idx, cw, Cvec_all, keep, gamma = ovo_fit_setup(self, be, X, y, sample_weight, "DCSVC")
        spec = self._gram_spec(gamma)
        rng, seed = self._rng()
        group, n_groups = plan_deduplication(be, X, y_idx, self.deduplicate)
        n_classes = len(classes)
        problems = ovo_pair_rows(keep, y_idx, classes)
        pairs = [(a, b) for a, b, _, _ in problems]
        cache_bytes = int(float(self.cache_size) * 2**20)
        worker_device = "cpu" if not be.is_gpu else "auto"
        cluster_args = (int(self.n_levels), int(self.n_clusters_per_level),
                        0 if self.early_stop_level is None else int(self.early_stop_level), int(self.min_cluster_size))
        reduced = [reduce_problem(idx, yb, Cvec_all[idx], None if group is None else group[idx])
                   for _, _, idx, yb in problems]
        if group is not None and isinstance(self.deduplicate, str) and any(
                too_few_for_clusters(int(rows.shape[0]), *cluster_args) is not None for rows, _, _, _ in reduced):
            # "auto" is a speed-up: where merged copies leave fewer points than clusters, keep the copies
            group = None
            reduced = [reduce_problem(idx, yb, Cvec_all[idx], None) for _, _, idx, yb in problems]
        # name the problem before solving any: the pair, and the rows that deduplicate merged
        for (a, b, idx, _), (rows, _, _, _) in zip(problems, reduced):
            pair = tuple(classes[[a, b]].tolist()) if n_classes > 2 else None
            check_cluster_count(int(rows.shape[0]), *cluster_args, pair=pair, n_rows=int(idx.shape[0]))
        # one generator per pair (drawn in pair order), so that threads give the model of one thread;
        # a binary fit uses the estimator's generator itself
        # (a pair too small for any level (lowest_clustered_level 0) clusters nothing and draws nothing: its
        # seed is drawn all the same, but no generator made, 8 us each, 45 in a fit of digits)
        pair_rngs = [rng] if len(problems) == 1 else [
            np.random.default_rng(int(s)) if lowest_clustered_level(int(rows.shape[0]), *cluster_args) else None
            for s, (rows, _, _, _) in zip(rng.integers(0, 2**63 - 1, size=len(problems)), reduced)]

        tops = self._solve_tops_together(be, X, spec, reduced, cluster_args) if len(problems) > 1 else {}

        def solve_pair(p):
            rows, yr, Cr, undo = reduced[p]
            res = dcsvm_solve(
                be, X, be.asarray(yr), spec, be.asarray(Cr), rows=rows, n_levels=int(self.n_levels),
                n_clusters_per_level=int(self.n_clusters_per_level), sample_size=self.sample_size,
                early_stop_level=self.early_stop_level, refine=bool(self.refine),
                refine_max_share=_REFINE_AUTO_MAX_SHARE if isinstance(self.refine, str) else 1.0,
                max_cluster_share=float(self.max_cluster_share), min_cluster_size=int(self.min_cluster_size),
                max_sv_share=float(self.max_sv_share), solver=self.solver,
                tol=float(self.tol), sub_tol=max(float(self.tol), 0.1 if self.sub_tol is None else float(self.sub_tol)),
                max_iter=int(self.max_iter), cache_bytes=cache_bytes,
                options=self.solver_options, executor=self.executor, worker_device=worker_device, rng=pair_rngs[p],
                random_state=seed, verbose=int(self.verbose), assign=self.assign,
                batch=self._batch(be), batch_max_size=int(self.batch_max_size),
                cluster_jobs=self.n_jobs if len(problems) == 1 else 1, top_result=tops.get(p))
            return res, undo

        results = map_problems(solve_pair, range(len(problems)), self.n_jobs, on_gpu=be.is_gpu)
        levels, pair_coef, pair_idx, pair_b, n_iter, objective, models = [], [], [], [], [], [], []
        n_unconverged = n_stalled = 0  # (the solves that stopped before tol; those that stalled, as SVC counts)
        for (a, b, idx, yb), (res, undo) in zip(problems, results):
            for info in res.levels:
                if n_classes > 2:
                    info = {"pair": (a, b), **info}
                levels.append(info)
            pair_coef.append(undo(np.asarray(be.to_host(res.alpha), dtype=np.float64)) * yb)
            pair_idx.append(idx)
            pair_b.append(np.nan if res.b is None else float(res.b))
            n_iter.append(int(res.n_iter))
            objective.append(np.nan if res.objective is None else float(res.objective))
            n_unconverged += res.n_unconverged
            n_stalled += res.n_stalled
            models.append(res.models)

        # ---- LIBSVM's model layout, as gpusvm.SVC ----
        support, n_support, dual, coefs, intercept = ovo_model_layout(y_idx, n_classes, pairs, pair_coef,
                                                                      pair_idx, pair_b)
        # (the intercepts are NaN by design when the fit stopped early: no top-level model)
        check_finite_model(dual, intercept if self.early_stop_level is None else 0.0, "DCSVC")

        # the model's attributes only once it is solved: a fit that raised (too few points for the clusters,
        # Ctrl-C) kept the model before it, but with this data's gamma (as SVC)
        self._predict_cache = PredictCache()  # (gpusvm.svc.predict_operands)
        self._be_name = be.device_key
        self._gamma = gamma
        self.classes_ = classes
        self.class_weight_ = np.asarray(cw, dtype=np.float64)
        self.support_ = be.asarray(support.astype(np.int32))
        self.support_vectors_ = be.take_rows(X, be.asarray(support)) if support.shape[0] else X[:0]
        self.dual_coef_ = be.asarray(dual)
        self.intercept_ = be.asarray(intercept)
        self._pair_coef = be.asarray(coefs)
        self._pair_b = be.asarray(np.array(pair_b))
        self._level_models = models  # per pair: {level: LocalModels}
        self.n_support_ = n_support
        self.n_iter_ = np.array(n_iter, dtype=np.int32)
        self.objective_ = np.array(objective)
        self.levels_ = levels
        converged = n_unconverged == 0
        self.fit_status_ = 0 if converged else 1
        self.shape_fit_ = (n, d)
        self.n_features_in_ = d
        self.n_distinct_ = n_groups
        if self.early_stop_level is not None:
            self.early_model_ = {"level": int(self.early_stop_level),
                                 "n_clusters": int(self.n_clusters_per_level) ** int(self.early_stop_level)}
        elif hasattr(self, "early_model_"):
            del self.early_model_
        if not converged:
            top_done = self.early_stop_level is None and all(lv["converged"] for lv in levels if lv["level"] == 0)
            where, what = "", "the model is usable but not optimal"
            if top_done:
                # only solves below the top stopped early: they warm-start the top, which reached tol, so the
                # model is the exact one; the early predictions of those levels are what is unfinished
                where, what = " below the top level", ("the top-level solve converged, so the model is exact to tol, "
                                                       "but predict(X, level=...) uses unfinished local models")
            # (a stalled solve stopped before any limit: the limit is named only for those that reached it)
            why, remedy = early_stop_causes(n_unconverged, n_stalled, self.max_iter, self.tol)
            warnings.warn(f"{n_unconverged} DC-SVM solve(s){where} stopped before reaching tol={self.tol} ({why}; see "
                          f"levels_[...]['converged']); {what}. Raise {remedy}.",
                          ConvergenceWarning, stacklevel=2)
        return self

    # ------------------------------------------------------------------------------------------
    def _check_fitted(self):
        if not hasattr(self, "support_vectors_"):
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet. Call 'fit' with "
                                 "appropriate arguments before using this estimator.")

    def _model_backend(self):
        return get_backend(self._be_name)

    def _fitted_stop_level(self):
        """The ``early_stop_level`` of the fit (None: solved to the top), whatever ``set_params`` set since."""
        return self.early_model_["level"] if hasattr(self, "early_model_") else None

    def _resolve_level(self, level):
        stop = self._fitted_stop_level()
        if level is None:
            return 0 if stop is None else int(stop)
        fitted = set(self._level_models[0])
        for models in self._level_models[1:]:
            fitted &= set(models)
        avail = sorted(fitted) + ([0] if stop is None else [])
        if isinstance(level, bool) or not isinstance(level, numbers.Integral) or int(level) not in avail:
            # (a skipped refine solve is also in levels_; it is no level to predict with)
            recs = [lv for lv in self.levels_ if lv.get("skipped") and lv["level"] != "refine"]
            skipped = sorted({lv["level"] for lv in recs})
            reasons = {lv.get("skip_reason") for lv in recs}
            why = {"small": (f"clusters smaller than min_cluster_size={self.min_cluster_size} points on average",
                             "min_cluster_size=0"),
                   "dominant": (f"a largest cluster of more than max_cluster_share={self.max_cluster_share} of "
                                "the points", "max_cluster_share=1.0"),
                   "sv_share": (f"a lower level left more than max_sv_share={self.max_sv_share} of the points "
                                "as support vectors", "max_sv_share=1.0")}
            causes = [why[r] for r in ("small", "dominant", "sv_share") if r in reasons]
            note = (f" Levels {skipped} were not solved on the way to the top ("
                    + "; or ".join(c[0] for c in causes) + "; see levels_; set early_stop_level"
                    + (", or " + " and ".join(c[1] for c in causes) if causes else "")
                    + ", to keep every level)." if skipped else "")
            top = " (0 = the top, exact model)" if 0 in avail else ""
            raise ValueError(f"The 'level' parameter of DCSVC must be one of the fitted levels {sorted(avail)}"
                             f"{top}. Got {level!r} instead.{note}")
        return int(level)

    def _pair_decision(self, X, level, merge_rows=None):
        """(backend, OvO decision values (n, n_pairs) on the model's device, input library); ``merge_rows`` as
        :func:`gpusvm.svc._blocked_decision`'s (the top-level model's)."""
        from ._solvers.dcsvm import local_decision

        self._check_fitted()
        level = self._resolve_level(level)
        lib = array_library(X)
        be = self._model_backend()
        X = check_X(X, be, owner="DCSVC", estimator=self)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but DCSVC is expecting {self.n_features_in_} "
                             "features as input.")
        xp = be.xp
        spec = self._gram_spec(self._gamma)
        if level > 0:
            x_sq_g = be.row_sqnorms(X, xp.float64) if spec.kind == "rbf" else None
            n_pairs = len(self._level_models)
            dec = xp.empty((int(X.shape[0]), n_pairs), dtype=xp.float64)
            threads = 1 if be.is_gpu else _decision_threads()
            for p in range(n_pairs):
                dec[:, p], _ = local_decision(be, self._level_models[p][level], X, x_sqnorm=x_sq_g, threads=threads)
            return be, dec, lib
        sources = (self.support_vectors_, self._pair_coef)
        operands = predict_operands(self, be, sources, lambda: sources)
        dec = _blocked_decision(be, None, None, self._pair_b, X, spec, operands=operands, merge_rows=merge_rows)
        return be, dec, lib

    @property
    def coef_(self):
        """Primal weights of every class pair of the final (top-level) model when ``kernel="linear"``.

        ndarray of shape (n_classes * (n_classes - 1) / 2, n_features), a CSR matrix after a sparse fit;
        ``X @ coef_.T + intercept_`` is :meth:`decision_function` (level 0) with
        ``decision_function_shape="ovo"``, as sklearn's SVC. On the fit's device, read-only for NumPy.
        """
        if self.kernel != "linear":
            raise AttributeError("coef_ is only available when using a linear kernel")
        self._check_fitted()
        if self._fitted_stop_level() is not None:
            raise AttributeError(f"coef_ holds the top-level model's weights, but this DCSVC stopped at level "
                                 f"{self._fitted_stop_level()} (early_stop_level); its early model has one local "
                                 "model per cluster (early_model_). Refit with early_stop_level=None.")
        be = self._model_backend()
        return linear_pair_weights(be, self._pair_coef, self.support_vectors_, len(self.classes_))

    def decision_function(self, X, level=None):
        """Decision values of the final model, or of the local models of a level (early prediction).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        level : int, optional
            0: the top-level (exact) model; l in [1, n_levels]: early prediction with level l's local
            models (each point scored by its nearest cluster's model). None: the fitted model (level 0,
            or ``early_stop_level`` when set).

        Returns
        -------
        array of shape (n_samples,) for two classes (> 0 means ``classes_[1]``), else of shape
        (n_samples, n_classes) for ``decision_function_shape="ovr"`` or one-vs-one values of shape
        (n_samples, n_classes * (n_classes - 1) / 2) (> 0 favours the pair's first class) for "ovo", in
        the input's array library.
        """
        k = len(getattr(self, "classes_", ()))  # (unfitted: the block raises NotFittedError)
        block = functools.partial(self._decision_block, level=level)
        if self.decision_function_shape == "ovr" and k > 2:  # (n, k) out of (n, n_pairs): in blocks of rows
            return by_row_blocks(X, k, block)
        return block(X)

    def _decision_block(self, X, level=None, merge_rows=None):
        _, dec, lib = self._pair_decision(X, level, merge_rows)
        return ovo_decision_function(dec, len(self.classes_), self.decision_function_shape, lib)

    def predict(self, X, level=None):
        """Class labels (one-vs-one vote for more than two classes; ties go to the lower class index).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        level : int, optional
            As in :meth:`decision_function`.

        Returns
        -------
        array of shape (n_samples,), in the input's array library.
        """
        return by_row_blocks(X, len(getattr(self, "classes_", ())), functools.partial(self._predict_block, level=level))

    def _predict_block(self, X, level=None, merge_rows=None):
        _, dec, lib = self._pair_decision(X, level, merge_rows)
        return ovo_predict(dec, self.classes_, lib)

    def score(self, X, y, sample_weight=None, level=None):
        """Mean accuracy on (X, y) of the fitted model or of a level's early prediction."""
        from sklearn.metrics import accuracy_score

        sw = None if sample_weight is None else to_numpy(sample_weight)
        return accuracy_score(to_numpy(y), to_numpy(self.predict(X, level=level)), sample_weight=sw)

    def to_device(self, device):
        """Move a fitted model to ``device`` ("cpu", "gpu" or "gpu:N") and return it, as
        :meth:`gpusvm.SVC.to_device`: the final model's arrays and every level's local models (for
        ``predict(X, level=...)``) are copied there, and later predictions run there. A GPU model moved
        to the CPU pickles and predicts on a machine without CUDA."""
        self._check_fitted()
        self._predict_cache = PredictCache()
        return move_fitted(self, ("support_", "support_vectors_", "dual_coef_", "intercept_", "_pair_coef",
                                  "_pair_b", "_level_models"), device)

    def __sklearn_clone__(self):
        """``sklearn.base.clone`` (so GridSearchCV, cross_val_score): the clone shares the ``executor``, every
        other parameter is cloned as scikit-learn clones it. scikit-learn deep-copies parameters that are not
        estimators, which a thread or process pool or a dask client's executor does not allow. As scikit-learn's
        clone, the clone keeps the metadata requests (``set_fit_request``) and the ``set_output`` choice."""
        import copy

        from sklearn.base import clone

        params = self.get_params(deep=False)
        executor = params.pop("executor")
        twin = type(self)(executor=executor, **{key: clone(value, safe=False) for key, value in params.items()})
        for name in ("_metadata_request", "_sklearn_output_config"):
            if name in self.__dict__:
                setattr(twin, name, copy.deepcopy(self.__dict__[name]))
        return twin

    def __copy__(self):
        """``copy.copy`` keeps the ``executor``: it shares every attribute, as a shallow copy does. It went through
        :meth:`__getstate__`, which is for pickling, and so dropped the executor."""
        twin = type(self).__new__(type(self))
        twin.__dict__.update(self.__dict__)
        return twin

    def __deepcopy__(self, memo):
        """``copy.deepcopy`` shares the ``executor``, as :meth:`__sklearn_clone__` does, and deep-copies every other
        attribute. It went through :meth:`__getstate__`, which is for pickling, and so dropped the executor: a pool
        or a client is a resource to share, not state to copy (a thread pool cannot be deep-copied)."""
        import copy

        twin = type(self).__new__(type(self))
        memo[id(self)] = twin
        for key, value in self.__dict__.items():
            twin.__dict__[key] = value if key == "executor" else copy.deepcopy(value, memo)
        return twin

    def __getstate__(self):
        """Pickling leaves the ``executor`` out (a pool cannot be pickled): an unpickled model, or one sent to
        another process (GridSearchCV with n_jobs), has ``executor=None`` and fits in that process."""
        state = super().__getstate__()
        if state.get("executor") is not None:
            state = {**state, "executor": None}
        return state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

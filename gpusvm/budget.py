"""BudgetSVC: a Gaussian-kernel SVM trained by budgeted SGD with multi-merge budget maintenance."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ._backend import BUDGET_AUTO_GPU_MAX_FEATURES, array_library, get_backend
from ._backend.base import device_memory_guard, host_memory_guard
from ._gram import GramSpec, feature_variance, resolve_gamma
from ._parallel import check_n_jobs, map_problems
from ._solvers.bsgd import bsgd
from ._validation import (check_class_labels, check_class_weight, check_options, check_random_state_param,
                          check_scalar, check_X, class_indices, ovr_weights, to_input_library, to_numpy,
                          weights_per_sample)
from .svc import _blocked_decision, PredictCache, predict_operands

__all__ = ["BudgetSVC"]

_KERNELS = ("linear", "poly", "rbf", "sigmoid", "precomputed")


class BudgetSVC(ClassifierMixin, BaseEstimator):
    """Kernel SVM on a budget: BSGD (Pegasos steps) with multi-merge budget maintenance.

    Trains f(x) = sum_j alpha_j exp(-gamma ||sv_j - x||^2) by stochastic sub-gradient descent on the
    primal objective lambda/2 ||w||^2 + 1/n sum_i max(0, 1 - y_i f(x_i)), lambda = 1 / (n C) (each hinge
    term times the sample's weight with ``class_weight`` or ``sample_weight``), with step
    size eta_t = 1 / (lambda t) (Pegasos) and at most one new support vector per step (BSGD: Wang,
    Crammer, Vucetic, JMLR 2012). Whenever the model holds more than ``budget`` support vectors,
    ``n_merge`` of them are merged into one (Qaadan and Glasmachers, "Multi-Merge Budget Maintenance
    for Stochastic Gradient Descent SVM Training", 2018): the SV of smallest |alpha| and its
    ``n_merge - 1`` best same-sign partners, scored by the weight degradation of a pairwise merge whose
    position is found by golden-section search (stopped at bracket width < 0.01, as in the authors'
    code). See :mod:`gpusvm._solvers.bsgd` for the rules, how each was checked against the papers'
    published code, and the choices made.

    Multi-merge trades accuracy for speed where the Gaussian is narrow relative to the data spacing:
    the extra partners of a cascade carry large coefficients, so the weight lost per removed support
    vector grows with ``n_merge`` (measured in benchmarks/results/budget_degradation_cpu.md: e.g.
    ijcnn1, gamma=2, budget 124: 12x more degradation per removed SV at M=3 than at M=2; a9a,
    gamma=0.008: 2.3x, with no significant accuracy change).

    **Bias**: none, as in BSGD and multi-merge BSGD (the Gaussian gram's feature space makes it
    mostly unnecessary, and an unregularized bias with Pegasos' large early steps is unstable);
    ``intercept_`` is all zeros.

    **Multi-class**: one-vs-rest. One binary BSGD problem per class (that class +1, all others -1),
    each with its own budget and the same sample order; the class with the largest decision value
    wins. Two classes give one problem (``classes_[1]`` is the positive class).

    **Data**: float64. The support vectors are dense (``budget + 1`` rows of n_features: merged points
    are dense anyway). On the CPU, sparse (CSR) input is never densified: the loop computes each margin
    from the nonzeros of the row against a transposed copy of the support vectors, so sparse rows
    (a9a, w8a) cost their nonzeros, not n_features, per support vector, and a new support vector is
    copied from the nonzeros; memory is O(nnz + budget x n_features) (full w8a, budget 500: 14.2 MB
    traced peak, against 228 MB when w8a is densified first; benchmarks/results/sparse_memory_cpu.md).
    The GPU loop reads dense rows, so sparse input is densified on the device.

    Parameters
    ----------
    C : float, default=1.0
        Regularization: lambda = 1 / (n_samples * C). Must be > 0.
    kernel : {"rbf"}, default="rbf"
        Only the Gaussian (RBF) gram: merging support vectors needs it. Any other value raises.
    gamma : {"scale", "auto"} or float, default="scale"
        k(x, z) = exp(-gamma ||x - z||^2); "scale" = 1 / (n_features * X.var()), "auto" = 1 / n_features.
        For sparse X, ``X.var()`` is computed as scikit-learn does (mean of squares minus squared mean),
        which can differ from the dense value in the last bit; SGD with merging amplifies such a
        difference (decision values up to 1.5 apart on small random problems), so the same data as CSR and
        as a dense array give the same model only with a float ``gamma``.
    budget : int, default=500
        Most support vectors per binary problem; must be >= ``n_merge``. A budget above the number of
        SGD steps (``epochs`` x n_samples; each adds at most one) is never reached, and memory is sized
        by the steps then.
    n_merge : int, default=2
        M, the number of SVs merged into one at each budget maintenance (2 = classic BSGD). >= 2.
    merge : {"cascade", "cascade-light", "gradient", "greedy"}, default="cascade"
        "cascade" (MM-BSGD): merge the M-1 best partners one after the other, each by golden-section
        search. "gradient" (MM-GD): merge all M at once by gradient (fixed-point) steps on z. "greedy"
        (ours): a cascade that re-chooses each next partner against the running merged point
        among the 8 (M-1) best partners of the one search. A trade-off, not a better default: with
        narrow Gaussians at the 5% budgets it keeps M=3 and M=5 within 0.8 points of M=2's accuracy
        where "cascade" loses 2.6-3.8 (phishing B=143, ijcnn1 B=124), and on phishing still trains
        1.6x / 1.5x faster than M=2; but its shortlist merges cost most of multi-merge's speed-up
        elsewhere (ijcnn1 0.9x, a9a B=114 0.8-0.9x against cascade's 1.2-2.1x), and at the 1% budgets
        and M=10 it is no more accurate (benchmarks/results/budget_greedy_cpu.md, 7 seeds, one epoch).
        "cascade-light" (ours): the cascade with the same one search, except that at most one of the
        M-1 partners may be heavy (|alpha| > 1.5 |alpha| of the first candidate, i.e. a merged SV): the
        partners are ranked against the light first candidate only, so the plain cascade often merges
        two heavy neighbours of it with each other, which is where its accuracy goes at narrow
        Gaussians. Against M=2 at M=3 / 5 (7 seeds, one epoch): phishing B=143 -1.2 / -1.5 points
        (cascade -2.6 / -2.6), ijcnn1 B=124 -0.6 / -0.4 (-3.1 / -3.8), and 3-25% faster fits than
        "cascade" there (fewer margin violations); on a9a and w8a, where "cascade" keeps M=2's
        accuracy, within the seeds' spread of it (benchmarks/results/budget_cascade_light_cpu.md).
    epochs : int, default=1
        Passes over the data, each in a fresh random order. >= 1.
    class_weight : dict, "balanced" or None, default=None
        Multiply C of class c by ``class_weight[c]`` ("balanced": n_samples / (n_classes * count of c),
        the counts weighted by ``sample_weight`` when it is given). Sample i's hinge term is weighted by
        w_i = class_weight[y_i] * sample_weight_i: the objective is lambda/2 ||w||^2 + 1/n sum_i w_i
        max(0, 1 - y_i f(x_i)), so a violating sample enters with alpha = y_i w_i / (lambda t). In the
        one-vs-rest problem of class c only class c's samples carry its class weight, the rest their
        sample weights. Both rules as :class:`gpusvm.LinearSVC` and scikit-learn's LinearSVC (LIBLINEAR).
    random_state : int, RandomState instance or None, default=None
        Seeds the sample order (the same on CPU and GPU, so both devices follow the same sequence).
    device : {"auto", "cpu", "gpu", "gpu:N"}, default="auto"
        Where to train (see :func:`gpusvm.get_backend`). "auto" sends host data to the GPU only with
        fewer than 32 features: the GPU loop (one thread block) was faster than the CPU's on an H100 for
        3 and 22 features and 2-11x slower for 123 and 300; CuPy inputs stay on the GPU.
    n_jobs : int, default=None
        Threads that train the one-vs-rest problems of a multi-class CPU fit at the same time
        (joblib's convention: None means 1 unless in a ``joblib.parallel_backend`` context, -1 all
        cores). The compiled loop releases the GIL and each problem is trained exactly as alone, so the
        model does not depend on it (8 classes, 30,000 x 20, budget 200 on the 2-core machine: 1.33 s
        wall with one thread, 0.72 s with two; benchmarks/results/threads_ovr_cpu.md). A GPU fit trains
        the problems one after the other.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    support_vectors_ : ndarray of shape (n_SV, n_features)
        The merged support vectors of all binary problems, stacked. Read-only for NumPy from the first
        prediction on, as ``dual_coef_``: prediction keeps values derived from them (assign new arrays to
        change the model, do not edit them in place).
    dual_coef_ : ndarray of shape (n_problems, n_SV)
        Signed coefficient of each support vector in each binary problem (zero for the SVs of other
        problems); n_problems = 1 for two classes, else n_classes.
    intercept_ : ndarray of shape (n_problems,)
        Zeros (no bias; see above).
    n_support_ : ndarray of shape (n_problems,)
        Support vectors per binary problem.
    merge_time_fraction_ : float
        Share of the training loop's time spent in budget maintenance (first-candidate search, partner
        search, merging and removal), measured in CPU cycles (CPU) or SM clock cycles (GPU) inside the
        compiled loop, over the cycles of the whole loop (all binary problems together). With a
        fraction f at n_merge=2, no multi-merge can speed training up by more than 1 / (1 - f).
    n_merges_ : int
        Budget maintenance steps over all problems.
    n_violations_ : int
        Margin violations over all problems: the SGD steps that added a support vector (y_i f(x_i) < 1
        for a sample of positive weight). Without merges it is ``n_support_.sum()``.
    n_iter_ : int
        Epochs run (BSGD runs a fixed number of epochs; there is no convergence test to fail, so no
        ConvergenceWarning is raised).
    fit_time_ : float
        Wall-clock seconds of the solver calls in ``fit``.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Column names of X when it was a data frame with string column names (as scikit-learn's
        estimators; absent otherwise).
    """

    def __init__(self, *, C=1.0, kernel="rbf", gamma="scale", budget=500, n_merge=2, merge="cascade",
                 epochs=1, class_weight=None, random_state=None, device="auto", n_jobs=None):
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.budget = budget
        self.n_merge = n_merge
        self.merge = merge
        self.epochs = epochs
        self.class_weight = class_weight
        self.random_state = random_state
        self.device = device
        self.n_jobs = n_jobs

    # ------------------------------------------------------------------------------------------
    def _validate_params(self):
        name = type(self).__name__
        check_scalar(self.C, "C", name, low=0.0, low_open=True)
        check_random_state_param(self.random_state, name)
        if not isinstance(self.kernel, str) or self.kernel != "rbf":
            raise ValueError(
                f"The 'kernel' parameter of {name} must be 'rbf': merging support vectors needs the "
                f"Gaussian kernel. Got {self.kernel!r} instead."
            )
        if isinstance(self.gamma, str):
            check_options(self.gamma, "gamma", name, ("scale", "auto"))
        else:
            check_scalar(self.gamma, "gamma", name, low=0.0, low_open=True)
        check_scalar(self.n_merge, "n_merge", name, kind="int", low=2)
        check_scalar(self.budget, "budget", name, kind="int", low=2)
        if self.budget < self.n_merge:
            raise ValueError(
                f"The 'budget' parameter of {name} must be an int >= n_merge ({self.n_merge}): a "
                f"merge replaces n_merge support vectors by one. Got {self.budget!r} instead."
            )
        check_options(self.merge, "merge", name, ("cascade", "cascade-light", "gradient", "greedy"))
        check_scalar(self.epochs, "epochs", name, kind="int", low=1)
        check_class_weight(self.class_weight, name)
        check_n_jobs(self.n_jobs, name)

    @device_memory_guard("BudgetSVC.fit", hint="lower the budget (the device holds X whole in float64, "
                         "sparse X densified: float32 X does not help)")
    def fit(self, X, y, sample_weight=None):
        """Train on ``X``, ``y``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            NumPy/SciPy or CuPy/cupyx input.
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative multipliers of C per sample (times ``class_weight`` of the sample's class): a
            violating sample of weight w enters with w times the usual coefficient; weight 0 never
            becomes a support vector.

        Returns
        -------
        self
        """
        import time

        self._validate_params()
        name = type(self).__name__
        # "auto" moves host data to the GPU only for narrow data, where its one-block loop was measured
        # faster than the CPU's (see gpusvm._backend)
        shape = getattr(X, "shape", None)
        narrow = shape is not None and len(shape) == 2 and shape[1] < BUDGET_AUTO_GPU_MAX_FEATURES
        be = get_backend(self.device, X, auto_gpu=narrow)
        X = check_X(X, be, dtype=np.float64, owner=name, estimator=self, reset=True)
        if be.is_gpu:
            # refuse data too wide for the loop's shared memory before the dense copy below (n x d
            # float64 values), which could otherwise run out of memory first and blame the budget
            from ._backend.ops.bsgd import check_gpu_shared_memory

            with be.device:
                check_gpu_shared_memory(be, X.shape[1], int(self.n_merge))
            if be.issparse(X):
                X = X.toarray()  # the GPU loop reads dense rows; the CPU loop only the nonzeros of CSR X
        n, d = X.shape
        y = check_class_labels(y, n, owner=name)
        classes, y_idx = class_indices(y)
        if len(classes) < 2:
            raise ValueError(f"{name} needs samples of at least 2 classes in 'y'; got only one class: "
                             f"{classes.tolist()}.")
        _, class_w, sample_w = weights_per_sample(sample_weight, self.class_weight, classes, y, y_idx, owner=name,
                                                  weighted_balance=True, C=self.C)
        if isinstance(self.gamma, str):
            gamma = resolve_gamma(self.gamma, feature_variance(be, X), d)
        else:
            gamma = float(self.gamma)
        GramSpec("rbf", gamma)  # validates the resolved gamma
        rs = check_random_state(self.random_state)
        order = np.concatenate([rs.permutation(n) for _ in range(self.epochs)]).astype(np.int64)
        order = be.asarray(order)

        problems = [1] if len(classes) == 2 else list(range(len(classes)))
        columns = be.bsgd_columns(X)  # the CPU loop's sparse view of X, shared by all problems
        svs, coefs, info = [], [], {"violations": 0, "merges": 0, "merge_cycles": 0.0, "total_cycles": 0.0}

        def train(c):
            w = ovr_weights(sample_w, class_w, y_idx, c)
            yb = be.asarray(np.where(y_idx == c, w, -w))  # signed weights (see bsgd)
            return bsgd(be, X, yb, gamma=gamma, C=float(self.C), budget=int(self.budget), order=order,
                        n_merge=int(self.n_merge), merge=self.merge, epochs=int(self.epochs), columns=columns)

        t_start = time.perf_counter()
        # (a step adds at most one SV: bsgd caps the budget at the number of steps, so does this count)
        rows = min(int(self.budget), int(self.epochs) * n) + 1
        store = (f"Each one-vs-rest problem in training holds up to budget + 1 = {rows:,} dense support vectors of "
                 f"n_features = {d:,} float64 values ({rows * d * 8 / 2**30:.2f} GiB"
                 + ("" if be.is_gpu else ", and the CPU loop as much again for their transposed copy") + ")")
        with host_memory_guard(f"{name}.fit", detail=store,
                               hint="lower budget (the store grows with budget x n_features), lower n_jobs "
                                    "(problems trained at once), or reduce n_features"):
            results = map_problems(train, problems, self.n_jobs, on_gpu=be.is_gpu)
        for res in results:
            svs.append(np.asarray(be.to_host(res.support_vectors)))
            coefs.append(np.asarray(be.to_host(res.alpha)))
            for k in info:
                info[k] += res.info[k]
        be.sync()
        self.fit_time_ = time.perf_counter() - t_start

        n_sv = np.array([len(a) for a in coefs], dtype=np.int64)
        self._predict_cache = PredictCache()  # (gpusvm.svc.predict_operands)
        self.support_vectors_ = np.concatenate(svs, axis=0) if svs else np.zeros((0, d))
        dual = np.zeros((len(problems), int(n_sv.sum())))
        off = np.concatenate([[0], np.cumsum(n_sv)])
        for p, a in enumerate(coefs):
            dual[p, off[p]:off[p + 1]] = a
        self.dual_coef_ = dual
        self.intercept_ = np.zeros(len(problems))
        self.n_support_ = n_sv
        self.classes_ = classes
        self._gamma = gamma
        self.n_iter_ = int(self.epochs)
        self.n_merges_ = int(info["merges"])
        self.n_violations_ = int(info["violations"])
        tot = info["total_cycles"]
        self.merge_time_fraction_ = float(info["merge_cycles"] / tot) if tot > 0 else float("nan")
        self.n_features_in_ = d
        return self

    def decision_function(self, X):
        """Decision values.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,) for two classes (positive means ``classes_[1]``), else
        (n_samples, n_classes); in the input's array library.
        """
        check_is_fitted(self, "dual_coef_")
        name = type(self).__name__
        lib = array_library(X)
        be = get_backend(self.device, X)
        X = check_X(X, be, dtype=np.float64, owner=name, estimator=self)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {name} is expecting {self.n_features_in_} "
                             "features as input.")
        spec = GramSpec("rbf", self._gamma)
        sources = (self.support_vectors_, self.dual_coef_)
        operands = predict_operands(self, be, sources, lambda: (be.asarray(sources[0]), be.asarray(sources[1])))
        dec = _blocked_decision(be, None, None, be.asarray(self.intercept_), X, spec, operands=operands)
        if dec.shape[1] == 1:
            dec = dec[:, 0]
        return to_input_library(dec, lib)

    def predict(self, X):
        """Class labels of shape (n_samples,), in the input's array library."""
        dec = self.decision_function(X)
        d = to_numpy(dec)
        idx = (d > 0).astype(np.int64) if d.ndim == 1 else d.argmax(axis=1)
        return to_input_library(self.classes_[idx], array_library(dec))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # CSR input is read as CSR by the CPU loop (densified for the GPU's)
        return tags

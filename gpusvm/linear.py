"""LinearSVC: the linear SVM trained by dual coordinate descent (LIBLINEAR), AVSF or a primal Newton
method (squared hinge), on CPU or GPU; the L1-regularized squared hinge by coordinate descent (CDN)."""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ._backend import array_library, get_backend
from ._backend.base import device_memory_guard, host_memory_guard
from ._dedupe import check_mode as check_deduplicate
from ._dedupe import plan as plan_deduplication
from ._dedupe import reduce_rows
from ._parallel import check_n_jobs, map_problems
from ._solvers.dcd import LOSSES, METHODS, dcd_linear
from ._solvers.l1_linear import l1_linear
from ._solvers.newton_linear import newton_linear
from ._validation import (check_auto_or_bool, check_class_labels, check_class_weight, check_options,
                          check_random_state_param, check_scalar, check_X, class_indices, ovr_weights,
                          to_input_library, to_numpy, weights_per_sample)

__all__ = ["LinearSVC"]

SOLVERS = ("auto",) + METHODS + ("newton", "cdn")


class LinearSVC(ClassifierMixin, BaseEstimator):
    """Linear support vector classifier trained by dual coordinate descent or a primal Newton method.

    Solves, for each binary problem (one-vs-rest for more than two classes),

        min_w  1/2 ||w~||^2 + sum_i C_i loss(y_i <w~, x~_i>),   x~_i = [x_i, intercept_scaling]

    where the bias is the weight of an extra constant feature and is regularized, as in LIBLINEAR and
    scikit-learn's LinearSVC; ``C_i`` is ``C`` times the class weight and the sample weight. With
    ``penalty="l1"`` the regularizer is ``||w~||_1`` instead (squared hinge only, as scikit-learn), which
    gives sparse weights.

    Parameters
    ----------
    C : float > 0, default=1.0
        Cost of the loss term.
    loss : {"hinge", "squared_hinge"}, default="hinge"
        L1-loss (hinge, the subject of the AVSF paper) or L2-loss SVM. Note scikit-learn's default is
        "squared_hinge".
    tol : float > 0, default=1e-4
        Dual solvers: stop when the spread ``v_max - v_min`` of the dual projected gradient over a sweep
        of all variables is at most ``tol``. "newton": stop when the gradient norm has fallen to
        ``tol * max(min(n_pos, n_neg), 1) / n`` of its value at ``w = 0``. Both are LIBLINEAR's criteria,
        to which scikit-learn passes ``tol`` the same way.
    solver : {"auto", "dcd", "avsf", "newton", "cdn"}, default="auto"
        "dcd": LIBLINEAR's dual coordinate descent with shrinking (Hsieh et al. 2008). "avsf": adaptive
        variable selection frequencies (Glasmachers & Dogan 2013), proposed for large ``C``. "newton":
        the primal truncated Newton method of LIBLINEAR's primal solvers (squared hinge only;
        :mod:`gpusvm._solvers.newton_linear`), which scikit-learn's ``LinearSVC`` uses under its default
        ``dual="auto"`` when ``n_samples >= n_features``. "auto" chooses as scikit-learn does (see
        ``dual``): "newton" for the squared hinge when ``dual=False``, or ``dual="auto"`` and
        ``n_samples >= n_features``; "dcd" otherwise. Dual coordinate descent can be very slow on badly
        scaled data: on digits (pixels 0-16, C=1) both LIBLINEAR's and our dual solver stop at 1,000
        sweeps with twice the optimal objective, where the Newton method converges in about 20 steps.
        Of the dual solvers "auto" picks "dcd", because it needed fewer coordinate steps than "avsf" in
        most cells we measured (benchmarks/results/linear_table_cpu.md), including the large-C case
        AVSF is meant for: on full a9a at C=1000, tol=0.01, DCD converged after 1.40e9 steps and AVSF after 2.17e9
        (benchmarks/results/linear_avsf_diagnosis_cpu.md). There both make the same number of steps
        that move a dual variable, but the active set ends at a few hundred of the 32,561 variables:
        shrinking drops the rest, while AVSF's preference floor of 1/20 still spends about 40% of its
        steps on them. On w8a at C=100 AVSF reached a given accuracy up to 5x sooner, but its stopping
        rule ran on to a far more accurate solution, ending with as many steps as DCD. See
        :mod:`gpusvm._solvers.dcd`. "cdn": LIBLINEAR's coordinate descent with one-dimensional Newton
        steps and shrinking for ``penalty="l1"`` (the only solver for it, and "auto"'s choice there;
        :mod:`gpusvm._solvers.l1_linear`); ``tol`` then bounds the summed violation of the optimality
        conditions relative to the first sweep's (times ``max(min(n_pos, n_neg), 1) / n``, as LIBLINEAR).
        It runs on the CPU: a GPU fit copies X to the host for it and returns the weights as for any fit.
    fit_intercept : bool, default=True
    intercept_scaling : float > 0, default=1.0
        Value of the constant feature; ``intercept_ = intercept_scaling * w_bias``.
    class_weight : dict, "balanced" or None, default=None
        Multiplies ``C`` per class, as scikit-learn's LinearSVC (LIBLINEAR): with two classes every
        sample's C by its class's weight; in the one-vs-rest problem of class c, the samples of class c
        by ``class_weight[c]`` and the rest not at all. "balanced" counts the samples by their
        ``sample_weight``, also as scikit-learn's LinearSVC.
    max_iter : int >= 1, default=1000
        Most sweeps (outer iterations) per binary problem; a ``ConvergenceWarning`` is issued when it
        stops the solver.
    random_state : int, RandomState instance or None, default=None
        Seeds the order of coordinate visits.
    verbose : int or bool, default=0
        Print the solver's progress (> 0; True is 1).
    device : {"auto", "cpu", "gpu", "gpu:N"}, default="auto"
        Where to train; see :func:`gpusvm.get_backend`. "auto" sends host data to the GPU only for the
        "newton" solver: the dual solvers' GPU path (one thread block sweeping the coordinates in
        order) was 8-17x slower than the CPU's on an H100 (a9a, ijcnn1, w8a); CuPy inputs stay on the GPU.
    deduplicate : {"auto", True, False}, default="auto"
        Merge equal training points of the same label into one point with the summed ``C`` before
        training (exact for both losses: the optimal ``w`` is the same; only ``n_updates_`` changes).
        "auto" merges when the distinct (x, y) pairs are at most half of the rows (see
        :class:`gpusvm.SVC`).
    n_jobs : int, default=None
        Threads that solve the one-vs-rest problems of a multi-class CPU fit at the same time with the
        coordinate solvers ("dcd", "avsf", "cdn"; ours, scikit-learn's LinearSVC has no such parameter). joblib's
        convention: None means 1 unless in a ``joblib.parallel_backend`` context, -1 all cores. Each
        problem is solved exactly as alone (its own seed), so the model does not depend on it (8
        classes, 20,000 x 100 dense, C=1, 2 cores: 23.0 s with one thread, 12.1 s with two;
        benchmarks/results/threads_ovr_cpu.md). The "newton" solver ignores it: its matrix products
        already use BLAS's threads, and two problems at once were slower (40,000 x 100: 0.73-0.85 s
        against 1.09-1.31 s). A GPU fit solves the problems one after another.
    penalty : {"l2", "l1"}, default="l2"
        scikit-learn's parameter: "l1" minimizes ``||w~||_1 + sum_i C_i max(0, 1 - y_i <w~, x~_i>)^2``
        (``loss="squared_hinge"`` and ``dual=False`` or "auto", as scikit-learn; solver "cdn").
    dual : "auto" or bool, default="auto"
        scikit-learn's parameter, with its meaning: True solves the dual ("dcd" or "avsf"), False the
        primal ("newton", squared hinge only: with ``loss="hinge"`` it raises, as in scikit-learn), and
        "auto" the primal when the loss is the squared hinge and ``n_samples >= n_features``, else the
        dual. A ``solver`` that contradicts it raises.
    multi_class : {"ovr"}, default="ovr"
        scikit-learn's parameter; one-vs-rest only ("crammer_singer" raises).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (1, n_features) for two classes, else (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)
    n_iter_ : int
        Sweeps (dual solvers, "cdn") or Newton steps ("newton") of the longest binary problem (as
        scikit-learn's ``n_iter_``).
    n_updates_ : int
        Coordinate steps (inner products ``<w, x_i>`` evaluated) over all binary problems; for
        "newton", conjugate-gradient steps (Hessian-vector products); for "cdn", coordinate steps of
        the features.
    solver_ : str
        The solver that ran ("dcd", "avsf", "newton" or "cdn"; "auto" resolved).
    objective_ : ndarray of shape (1,) or (n_classes,)
        Primal objective of each binary problem at the solution.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Column names of X when it was a data frame with string column names (as scikit-learn's
        estimators; absent otherwise).
    n_distinct_ : int or None
        Number of distinct (x, y) pairs (None with ``deduplicate=False``).
    """

    def __init__(self, *, C=1.0, loss="hinge", tol=1e-4, solver="auto", fit_intercept=True,
                 intercept_scaling=1.0, class_weight=None, max_iter=1000, random_state=None, verbose=0,
                 device="auto", deduplicate="auto", penalty="l2", dual="auto", multi_class="ovr", n_jobs=None):
        self.C = C
        self.loss = loss
        self.tol = tol
        self.solver = solver
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.class_weight = class_weight
        self.max_iter = max_iter
        self.random_state = random_state
        self.verbose = verbose
        self.device = device
        self.deduplicate = deduplicate
        self.penalty = penalty
        self.dual = dual
        self.multi_class = multi_class
        self.n_jobs = n_jobs

    def _validate_params(self):
        name = type(self).__name__
        check_scalar(self.C, "C", name, low=0.0, low_open=True)
        check_random_state_param(self.random_state, name)
        check_options(self.loss, "loss", name, LOSSES)
        check_scalar(self.tol, "tol", name, low=0.0, low_open=True)
        check_options(self.solver, "solver", name, SOLVERS)
        if not isinstance(self.fit_intercept, (bool, np.bool_)):
            raise ValueError(f"The 'fit_intercept' parameter of {name} must be a bool. "
                             f"Got {self.fit_intercept!r} instead.")
        check_scalar(self.intercept_scaling, "intercept_scaling", name, low=0.0, low_open=True)
        if self.fit_intercept and not math.isfinite(float(self.intercept_scaling) * float(self.intercept_scaling)):
            # the constant feature enters every row norm squared: dcd then returned a zero model with only a
            # ConvergenceWarning, newton blamed C or the features, cdn overflowed (as X's values, check_X)
            raise ValueError(f"The 'intercept_scaling' parameter of {name} is {float(self.intercept_scaling):.3g}, "
                             "whose square overflows float64 (the constant feature enters every row norm "
                             "squared); use a smaller value.")
        check_scalar(self.max_iter, "max_iter", name, kind="int", low=1)
        # a bool is an int here, as in scikit-learn's LinearSVC (True: 1)
        check_scalar(int(self.verbose) if isinstance(self.verbose, bool) else self.verbose, "verbose", name,
                     kind="int", low=0)
        check_deduplicate(self.deduplicate, name)
        # scikit-learn's LinearSVC parameters, for drop-in use: only the problem solved here is accepted
        check_options(self.penalty, "penalty", name, ("l1", "l2"))
        check_options(self.multi_class, "multi_class", name, ("ovr",))
        check_auto_or_bool(self.dual, "dual", name)
        if self.penalty == "l1" or self.solver == "cdn":
            self._check_l1(name)
        elif self.dual is False or self.dual is np.False_:
            if self.loss == "hinge":
                raise ValueError("The combination of penalty='l2' and loss='hinge' is not supported when "
                                 "dual=False (as scikit-learn: the hinge loss is only solved in the dual).")
            if self.solver in METHODS:
                raise ValueError(f"solver={self.solver!r} solves the dual problem, but dual=False asks for the "
                                 "primal one; use solver='newton' or 'auto', or dual=True.")
        if self.solver == "newton":
            if self.loss == "hinge":
                raise ValueError("solver='newton' solves the primal problem of the squared hinge (the hinge loss "
                                 "is not differentiable); use loss='squared_hinge', or solver='dcd' or 'avsf'.")
            if self.dual is True or self.dual is np.True_:
                raise ValueError("solver='newton' solves the primal problem, but dual=True asks for the dual one; "
                                 "use solver='dcd', 'avsf' or 'auto', or dual=False or 'auto'.")
        check_class_weight(self.class_weight, name)
        check_n_jobs(self.n_jobs, name)

    def _check_l1(self, name):
        """The L1 problem's combinations, with scikit-learn's rules (squared hinge, primal)."""
        if self.penalty != "l1":
            raise ValueError("solver='cdn' solves the L1-regularized problem; use penalty='l1' (with "
                             "loss='squared_hinge'), or another solver for penalty='l2'.")
        if self.loss != "squared_hinge":
            raise ValueError("The combination of penalty='l1' and loss='hinge' is not supported (as scikit-learn); "
                             "use loss='squared_hinge' (note: our LinearSVC's default loss is 'hinge').")
        if self.dual is True or self.dual is np.True_:
            raise ValueError("The combination of penalty='l1' and loss='squared_hinge' is not supported when "
                             "dual=True (as scikit-learn); use dual=False or 'auto'.")
        if self.solver not in ("auto", "cdn"):
            raise ValueError(f"solver={self.solver!r} solves the L2-regularized problem; penalty='l1' is solved by "
                             "solver='cdn' (or 'auto').")

    @device_memory_guard("LinearSVC.fit", hint="pass float32 X, or CSR X for sparse data (X is copied to "
                         "the device whole)")
    def fit(self, X, y, sample_weight=None):
        """Fit the model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            NumPy/SciPy CSR or CuPy/cupyx CSR.
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
            Multiplies ``C`` per sample.

        Returns
        -------
        self : LinearSVC
        """
        self._validate_params()
        name = type(self).__name__
        # "auto" moves host data to the GPU only for the Newton solver: the dual solvers' GPU sweeps were
        # 8-17x slower than the CPU's on an H100 (see gpusvm._backend)
        shape = getattr(X, "shape", None)
        newton = shape is not None and len(shape) == 2 and self._resolve_solver(*shape) == "newton"
        be = get_backend(self.device, X, auto_gpu=newton)  # X decides (labels are read on the host), as SVC's
        X = check_X(X, be, owner=name, estimator=self, reset=True)
        n, d = X.shape
        y = check_class_labels(y, n, owner=name)
        classes, y_idx = class_indices(y)
        if len(classes) < 2:
            raise ValueError(f"{name} needs samples of at least 2 classes in the data; got only one class: "
                             f"{classes[:1].tolist()[0]!r}.")
        _, class_w, sample_w = weights_per_sample(sample_weight, self.class_weight, classes, y, y_idx, owner=name,
                                                  weighted_balance=True, C=self.C)
        group, n_groups = plan_deduplication(be, X, y_idx, self.deduplicate)
        if group is not None:
            # equal rows with the same label enter the dual only through the sum of their alphas: one row
            # with the summed C is the same problem (hinge: box [0, sum C_i]; squared hinge: the diagonal
            # term 1/(2 C_i) of copies sharing a sum is smallest at alpha_i ~ C_i, which is 1/(2 sum C_i));
            # copies share their label, so summing their sample weights sums their C_i in every problem
            first, _, sample_w = reduce_rows(group, sample_w)
            X = be.take_rows(X, be.asarray(first))
            y_idx = y_idx[first]
        solver = self._resolve_solver(n, d)
        bias = float(self.intercept_scaling) if self.fit_intercept else 0.0
        rs = check_random_state(self.random_state)
        base_seed = int(rs.randint(np.iinfo(np.int32).max))
        targets = [1] if len(classes) == 2 else list(range(len(classes)))
        # coef_ grows with n_classes x n_features: say so where it is allocated, not only NumPy's "Unable to
        # allocate"
        t = len(targets)
        guard = functools.partial(
            host_memory_guard, f"{name}.fit",
            detail=f"coef_ holds {'n_classes' if t > 1 else 'one row'} x n_features = {t:,} x {d:,} float64 values "
                   f"({t * d * 8 / 2**30:.2f} GiB), and each problem being solved one weight vector of n_features "
                   "values",
            hint="reduce n_features (feature selection, a smaller hashing space) or the classes per model (fit "
                 "groups of classes one-vs-rest separately)")
        with guard():
            coef = np.zeros((t, d))
        intercept = np.zeros(len(targets))
        objective = np.zeros(len(targets))
        n_iter, n_updates, at_max_iter, stalled = 0, 0, [], []

        def solve(k):
            yk = be.asarray(np.where(y_idx == targets[k], 1.0, -1.0))
            # C_i of this problem: C times the sample and class weights, as LIBLINEAR (ovr_weights)
            Ck = be.asarray(float(self.C) * ovr_weights(sample_w, class_w, y_idx, targets[k]), dtype=be.xp.float64)
            if solver == "cdn":
                res = l1_linear(be, X, yk, Ck, tol=float(self.tol), max_iter=int(self.max_iter), bias=bias,
                                seed=base_seed + k, verbose=int(self.verbose))
            elif solver == "newton":
                res = newton_linear(be, X, yk, Ck, tol=float(self.tol), max_iter=int(self.max_iter), bias=bias,
                                    verbose=int(self.verbose))
            else:
                res = dcd_linear(be, X, yk, Ck, loss=self.loss, method=solver, tol=float(self.tol),
                                 max_iter=int(self.max_iter), bias=bias, seed=base_seed + k, verbose=int(self.verbose))
            # w goes into its row of coef_ as soon as the problem is solved (each thread its own row), and the
            # result keeps neither w nor alpha: held until the last problem ended, they took n_classes x
            # (n_features + n_samples) values beside coef_
            coef[k] = be.to_host(res.w)
            return dataclasses.replace(res, w=None, alpha=None)

        # threads for the dual solvers' single-threaded loops only: the Newton solver's products already run
        # on BLAS's threads (measured slower in two threads: 0.73-0.85 -> 1.09-1.31 s, 8 classes, 40k x 100)
        with guard():
            results = map_problems(solve, range(len(targets)), self.n_jobs if solver != "newton" else 1,
                                   on_gpu=be.is_gpu)
        for k, (cls, res) in enumerate(zip(targets, results)):
            intercept[k] = bias * res.w_bias
            objective[k] = res.objective
            n_iter = max(n_iter, res.n_iter)
            n_updates += res.n_updates
            if not res.converged:
                (stalled if res.info.get("line_search_failed") else at_max_iter).append(cls)
        if at_max_iter or stalled:
            # each class with its own cause: one stalled problem must not hide that others only need more
            # iterations (a multi-class Newton fit can have both), nor the reverse
            steps = "Newton steps" if solver == "newton" else "sweeps"
            causes = []
            if at_max_iter:
                causes.append(f"class(es) {classes[at_max_iter].tolist()}: it reached max_iter={self.max_iter} "
                              f"{steps}; increase max_iter")
            if stalled:
                causes.append(f"class(es) {classes[stalled].tolist()}: its line search found no decrease, as happens "
                              "when rounding limits the accuracy (the model is the best point reached; a looser tol, "
                              "float64 X or standardized features help)")
            warnings.warn(
                f"{name} ({solver}) stopped before the tolerance tol={self.tol} for the problem(s) of "
                + "; and of ".join(causes) + ".",
                ConvergenceWarning,
            )
        self.classes_ = classes
        self.coef_ = coef
        self.intercept_ = intercept
        self.objective_ = objective
        self.n_iter_ = int(n_iter)
        self.n_updates_ = int(n_updates)
        self.n_features_in_ = d
        self.n_distinct_ = n_groups
        self.solver_ = solver
        return self

    def _resolve_solver(self, n_samples, n_features):
        """The solver to run: ``solver`` unless "auto", which follows scikit-learn's choice of the problem
        (``dual="auto"``: the primal for the squared hinge when ``n_samples >= n_features``)."""
        if self.solver != "auto":
            return self.solver
        if self.penalty == "l1":
            return "cdn"
        if self.loss != "squared_hinge" or self.dual is True or self.dual is np.True_:
            return "dcd"
        if self.dual == "auto" and n_samples < n_features:
            return "dcd"
        return "newton"

    def decision_function(self, X):
        """Signed distances to the hyperplane(s).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        scores : array of shape (n_samples,) for two classes, else (n_samples, n_classes), in the
            array library of ``X`` (computed on the GPU for CuPy input, on the CPU otherwise).
        """
        check_is_fitted(self, "coef_")
        lib = array_library(X)
        be = get_backend("auto" if lib == "cupy" else "cpu", X)
        # only X @ coef_ below: values whose squares overflow (refused by fit) are fine, as in sklearn
        X = check_X(X, be, owner=type(self).__name__, estimator=self, squares=False)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input.")
        b = be.asarray(self.intercept_, dtype=be.xp.float64)
        if hasattr(self.coef_, "toarray") and be.issparse(X) and not be.is_gpu:
            # after sparsify(), CSR X: a sparse product, as scikit-learn's. Densifying coef_ in every call (and
            # the product's C-ordered copy of its transpose) cost 305 MB for 1,000 rows of a 10-class model of
            # 2,000,000 features with 2,322 nonzero weights, where scikit-learn takes 8 MB
            scores = (X @ self.coef_.T.astype(np.float64)).toarray() + b
        else:
            coef = self.coef_.toarray() if hasattr(self.coef_, "toarray") else self.coef_  # after sparsify()
            W = be.asarray(coef.T, dtype=be.xp.float64)  # float64 scores for float32 X too, as sklearn
            scores = be.dot(X, W) + b
        return to_input_library(scores[:, 0] if scores.shape[1] == 1 else scores, lib)

    def sparsify(self):
        """Store ``coef_`` as a SciPy CSR matrix (as scikit-learn's linear models: worth it when most
        weights are zero, e.g. after ``penalty="l1"``); predictions are unchanged. Returns self."""
        import scipy.sparse as sp

        check_is_fitted(self, "coef_")
        self.coef_ = sp.csr_matrix(self.coef_)
        return self

    def densify(self):
        """Store ``coef_`` as a dense ndarray again (the default after fit). Returns self."""
        check_is_fitted(self, "coef_")
        if hasattr(self.coef_, "toarray"):
            self.coef_ = self.coef_.toarray()
        return self

    def predict(self, X):
        """Predicted class labels, shape (n_samples,), in the array library of ``X`` when numeric."""
        scores = self.decision_function(X)
        s = to_numpy(scores)
        idx = (s > 0).astype(np.int64) if s.ndim == 1 else np.argmax(s, axis=1)
        return to_input_library(self.classes_[idx], array_library(scores))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

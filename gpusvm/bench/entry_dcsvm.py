"""Benchmark rows of DCSVC: "dcsvc" (solved to the top: the exact SVM) and "dcsvc-early" (early
prediction with the 64-cluster level's local models; not the exact problem, so no objective check).

Both use the paper's setting (4 levels, 4 clusters per level, refine). On data sets too small for
4**4 clusters (the bundled sets, small chess-boards, the pairs of a multi-class problem) the number
of levels is lowered to the largest L <= 4 with 4**L <= n / 8 (n: the smallest class pair), and the
early row stops at level min(3, L); the fitted estimator's ``levels_`` records what ran.

The sizing depends on the training data, which ``make(params, device)`` does not see. It is therefore
done by :class:`SizedDCSVC`, a small meta-estimator whose parameters are the *upper bounds* (``max_levels``,
``early_level``) and which builds a fresh, fully parameterised :class:`~gpusvm.DCSVC` in ``fit``
(``estimator_``). No estimator changes its own parameters, so ``sklearn.base.clone`` and ``get_params``
round-trip (an earlier version set ``n_levels`` inside ``fit``, which broke scikit-learn's contract).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from ..dcsvm import DCSVC
from .objectives import sklearn_svc_objective
from .registry import BenchSolver, register

_K = 4
_LEVELS = 4
_EARLY = 3  # 4**3 = 64 clusters

# fitted attributes of the inner DCSVC that the harness / objectives read from the row's estimator
_FITTED = ("classes_", "support_", "support_vectors_", "dual_coef_", "intercept_", "n_support_", "n_iter_",
           "objective_", "levels_", "fit_status_", "n_features_in_", "_gamma")


def sized_levels(y, k=_K, max_levels=_LEVELS) -> int:
    """The largest ``L <= max_levels`` with ``k**L <= n / 8``, n the size of the smallest class pair
    (at least 1)."""
    yy = np.asarray(y.get() if hasattr(y, "get") else y)
    _, counts = np.unique(yy, return_counts=True)
    n_min = int(np.sort(counts)[:2].sum()) if counts.size > 1 else int(yy.shape[0])
    L = int(max_levels)
    while L > 1 and k ** L > n_min / 8:
        L -= 1
    return L


class SizedDCSVC(ClassifierMixin, BaseEstimator):
    """DCSVC with the number of levels sized to the training data (see the module docstring).

    Parameters
    ----------
    C, kernel, gamma, n_clusters_per_level, device, random_state
        Passed to :class:`~gpusvm.DCSVC`.
    max_levels : int, default=4
        Upper bound on ``n_levels``; ``fit`` uses :func:`sized_levels`.
    early_level : int or None, default=None
        None: solve to the top. Else ``early_stop_level = min(early_level, n_levels)``.

    Attributes
    ----------
    estimator_ : DCSVC
        The fitted inner estimator; its fitted attributes are mirrored on this object.
    """

    def __init__(self, *, C=1.0, kernel="rbf", gamma="scale", n_clusters_per_level=_K, max_levels=_LEVELS,
                 early_level=None, device="auto", random_state=None):
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.n_clusters_per_level = n_clusters_per_level
        self.max_levels = max_levels
        self.early_level = early_level
        self.device = device
        self.random_state = random_state

    @property
    def coef0(self):  # read by gram_spec_of (DCSVC's defaults)
        return 0.0

    @property
    def degree(self):
        return 3

    def fit(self, X, y, sample_weight=None):
        if y is None:
            raise ValueError("SizedDCSVC requires y to be passed, but the target y is None.")
        L = sized_levels(y, int(self.n_clusters_per_level), int(self.max_levels))
        early = None if self.early_level is None else min(int(self.early_level), L)
        est = DCSVC(C=self.C, kernel=self.kernel, gamma=self.gamma, n_levels=L,
                    n_clusters_per_level=self.n_clusters_per_level, early_stop_level=early, device=self.device,
                    random_state=self.random_state)
        est.fit(X, y, sample_weight)
        self.estimator_ = est
        for name in _FITTED:
            if hasattr(est, name):
                setattr(self, name, getattr(est, name))
        return self

    def decision_function(self, X):
        return self.estimator_.decision_function(X)

    def predict(self, X):
        return self.estimator_.predict(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


def _make(early):
    def make(params, device):
        return SizedDCSVC(C=params["C"], kernel=params.get("kernel", "rbf"), gamma=params.get("gamma", "scale"),
                          n_clusters_per_level=_K, max_levels=_LEVELS, early_level=_EARLY if early else None,
                          device=device, random_state=0)

    return make


# warmup_full: on the suites' 1,000-2,000-row warm-up subsets no level is solved (clusters below
# min_cluster_size), so the timed fit would be the first to run the levels' code (Numba cache loads on the CPU,
# CuPy compiles or cache loads on the GPU: benchmarks/results/warmup_coverage_cudasim.md)
register(BenchSolver(name="dcsvc", family="kernel", make=_make(False), objective=sklearn_svc_objective,
                     exact=True, warmup_full=True))
register(BenchSolver(name="dcsvc-early", family="kernel", make=_make(True), objective=None, exact=False,
                     warmup_full=True))

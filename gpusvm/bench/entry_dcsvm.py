"""Benchmark rows of DCSVC: "dcsvc" (solved to the top: the exact SVM) and "dcsvc-early" (early
prediction with the 64-cluster level's local models; not the exact problem, so no objective check).

Both use the paper's setting (4 levels, 4 clusters per level, refine). On data sets too small for
4**4 clusters (the bundled sets, small chess-boards, the pairs of a multi-class problem) the number
of levels is lowered to the largest L <= 4 with 4**L <= n / 8 (n: the smallest class pair), and the
early row stops at level min(3, L); the fitted estimator's ``levels_`` records what ran.
"""

from __future__ import annotations

import numpy as np

from ..dcsvm import DCSVC
from .objectives import sklearn_svc_objective
from .registry import BenchSolver, register

_K = 4
_LEVELS = 4
_EARLY = 3  # 4**3 = 64 clusters


class _SizedDCSVC(DCSVC):
    """DCSVC whose number of levels is lowered for small data (see the module docstring)."""

    def fit(self, X, y, sample_weight=None):
        yy = np.asarray(y.get() if hasattr(y, "get") else y)
        _, counts = np.unique(yy, return_counts=True)
        n_min = int(np.sort(counts)[:2].sum()) if counts.size > 1 else int(yy.shape[0])
        L = _LEVELS
        while L > 1 and _K ** L > n_min / 8:
            L -= 1
        self.n_levels = L
        if self.early_stop_level is not None:
            self.early_stop_level = min(_EARLY, L)
        return super().fit(X, y, sample_weight)


def _make(early):
    def make(params, device):
        return _SizedDCSVC(C=params["C"], kernel=params.get("kernel", "rbf"), gamma=params.get("gamma", "scale"),
                           n_levels=_LEVELS, n_clusters_per_level=_K, early_stop_level=_EARLY if early else None,
                           device=device, random_state=0)

    return make


register(BenchSolver(name="dcsvc", family="kernel", make=_make(False), objective=sklearn_svc_objective,
                     exact=True))
register(BenchSolver(name="dcsvc-early", family="kernel", make=_make(True), objective=None, exact=False))

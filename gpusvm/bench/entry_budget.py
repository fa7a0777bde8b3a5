"""Benchmark rows of BudgetSVC (budgeted SGD, not the exact SVM problem, so exact=False):

* "budget-bsgd": classic BSGD (n_merge=2, cascade);
* "budget-mm": multi-merge BSGD (n_merge=3, cascade), the paper's recommended fast setting.

The budget is sized at fit time to 10% of the training rows, capped at 500 and at least 10, so the
small default data sets still exercise budget maintenance; one epoch, random_state 0.
"""

from __future__ import annotations

from ..budget import BudgetSVC
from .registry import BenchSolver, register


class _SizedBudgetSVC(BudgetSVC):
    """BudgetSVC whose budget is 10% of the training rows (10 .. 500)."""

    def fit(self, X, y):
        self.budget = max(10, self.n_merge, min(500, X.shape[0] // 10))
        return super().fit(X, y)


def _make(n_merge):
    def make(params, device):
        return _SizedBudgetSVC(C=params["C"], kernel=params.get("kernel", "rbf"), gamma=params.get("gamma", "scale"),
                               n_merge=n_merge, merge="cascade", epochs=1, random_state=0, device=device)

    return make


register(BenchSolver(name="budget-bsgd", family="kernel", make=_make(2), objective=None, exact=False))
register(BenchSolver(name="budget-mm", family="kernel", make=_make(3), objective=None, exact=False))

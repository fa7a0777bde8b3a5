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
    """BudgetSVC whose budget is 10% of the training rows (10 .. 500), in ``budget_``; ``fit`` leaves the
    parameters alone (it set ``budget``, which broke scikit-learn's contract: clone and get_params saw the
    sized value), training a BudgetSVC of the sized budget whose fitted attributes it takes."""

    def fit(self, X, y, sample_weight=None):
        budget = max(10, self.n_merge, min(500, X.shape[0] // 10))
        params = self.get_params()
        fitted = BudgetSVC(**{**params, "budget": budget}).fit(X, y, sample_weight)
        self.__dict__.update({k: v for k, v in vars(fitted).items() if k not in params})
        self.budget_ = budget
        return self


def _make(n_merge):
    def make(params, device):
        return _SizedBudgetSVC(C=params["C"], kernel=params.get("kernel", "rbf"), gamma=params.get("gamma", "scale"),
                               n_merge=n_merge, merge="cascade", epochs=1, random_state=0, device=device)

    return make


register(BenchSolver(name="budget-bsgd", family="kernel", make=_make(2), objective=None, exact=False))
register(BenchSolver(name="budget-mm", family="kernel", make=_make(3), objective=None, exact=False))

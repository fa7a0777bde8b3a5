"""Benchmark rows of LinearSVC (family "linear", the exact problem of scikit-learn's LinearSVC):

* "linearsvc-dcd": LIBLINEAR's dual coordinate descent with shrinking (Hsieh et al. 2008);
* "linearsvc-avsf": adaptive variable selection frequencies (Glasmachers & Dogan 2013);
* "linearsvc-newton": the primal truncated Newton method (squared hinge only; what scikit-learn's
  LinearSVC runs under its default ``dual="auto"`` when n_samples >= n_features). The reference row
  stays LIBLINEAR's dual solver (``dual=True``), so on badly scaled data (digits) this row can reach a
  lower objective than the reference, which stops at max_iter.

All take the data set's ``C`` and ``loss`` and the suite's ``tol`` / ``max_iter`` (as the sklearn
reference does: tol 1e-4, max_iter 5000 by default), random_state 0. The objective is the primal
``1/2 (||w||^2 + (b / intercept_scaling)^2) + C sum loss`` computed on the host by
:func:`gpusvm.bench.objectives.sklearn_linear_objective` for ours and the reference alike.
"""

from __future__ import annotations

from ..linear import LinearSVC
from .objectives import sklearn_linear_objective
from .registry import BenchSolver, register


def _make(solver):
    def make(params, device):
        return LinearSVC(C=params["C"], loss=params.get("loss", "squared_hinge"), solver=solver,
                         tol=params.get("tol", 1e-4), max_iter=params.get("max_iter", 5000), random_state=0,
                         device=device)

    return make


register(BenchSolver(name="linearsvc-dcd", family="linear", make=_make("dcd"), objective=sklearn_linear_objective))
register(BenchSolver(name="linearsvc-avsf", family="linear", make=_make("avsf"), objective=sklearn_linear_objective))
register(BenchSolver(name="linearsvc-newton", family="linear", make=_make("newton"),
                     objective=sklearn_linear_objective))

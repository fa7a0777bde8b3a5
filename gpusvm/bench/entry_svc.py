"""Benchmark rows of SVC's exact solvers (the exact C-SVC problem, so exact=True):

* "svc-smo": LIBSVM's SMO with second-order working sets (pair-at-a-time in compiled code on the CPU,
  batched decomposition on the GPU);
* "svc-pa-smo": planning-ahead SMO (Glasmachers 2008), planning with the 2 most recent working sets.

The objective is the dual objective recomputed from the fitted model's LIBSVM layout
(:func:`gpusvm.bench.objectives.sklearn_svc_objective`: the sum of the one-vs-one binary duals), the
same function that scores the reference, so the two numbers are comparable. Defaults otherwise:
tol=1e-3, cache_size=200 MB, float32 Gram values (as LIBSVM).
"""

from __future__ import annotations

from ..svc import SVC
from .objectives import sklearn_svc_objective
from .registry import BenchSolver, register


def _make(solver):
    def make(params, device):
        return SVC(C=params["C"], kernel=params.get("kernel", "rbf"), gamma=params.get("gamma", "scale"),
                   solver=solver, device=device)

    return make


register(BenchSolver(name="svc-smo", family="kernel", make=_make("smo"), objective=sklearn_svc_objective,
                     exact=True))
register(BenchSolver(name="svc-pa-smo", family="kernel", make=_make("pa-smo"),
                     objective=sklearn_svc_objective, exact=True))

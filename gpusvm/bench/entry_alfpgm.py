"""Benchmark row "svc-alfpgm": SVC with the ALFPGM solver and pWSS working sets (Aregbesola and Griva).

It solves the exact C-SVC dual to the same KKT tolerance as LIBSVM (exact=True), so its dual objective
is compared with sklearn SVC's. Defaults: n_pairs=None (the sweep's choice), mu=0.1, tol=1e-3.
The estimator is imported inside ``make`` so that listing the registry stays cheap.
"""

from __future__ import annotations

from .objectives import sklearn_svc_objective
from .registry import BenchSolver, register


def _make(params, device):
    from ..svc import SVC

    return SVC(C=params["C"], kernel=params.get("kernel", "rbf"), gamma=params.get("gamma", "scale"),
               solver="alfpgm", device=device)


register(BenchSolver(name="svc-alfpgm", family="kernel", make=_make, objective=sklearn_svc_objective,
                     exact=True))

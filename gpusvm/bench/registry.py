"""Registry of benchmarked solvers: a solver adds its row(s) here without touching the harness.

Each solver issue adds a module ``gpusvm/bench/entry_<name>.py`` that calls :func:`register`; the
harness imports every ``entry_*`` module of this package on start.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class BenchSolver:
    """One benchmarked solver.

    name : row label, e.g. "svc-smo".
    family : "kernel" (reference: sklearn SVC) or "linear" (reference: sklearn LinearSVC).
    make : make(params, device) -> unfitted estimator; ``params`` holds the data set's
        hyperparameters (keys "C", "gamma", "kernel", plus anything the suite sets) and ``device``
        is "cpu" or "gpu".
    devices : devices it runs on.
    objective : optional objective(estimator, X, y) -> float (dual objective for kernel
        solvers, primal for linear), reported next to the reference's.
    exact : True when it solves the same problem as the reference (objective compared).
    """

    name: str
    family: str
    make: Callable[[dict, str], Any]
    devices: tuple[str, ...] = ("cpu", "gpu")
    objective: Callable[[Any, Any, Any], float] | None = None
    exact: bool = True


_REGISTRY: dict[str, BenchSolver] = {}


def register(solver: BenchSolver) -> BenchSolver:
    _REGISTRY[solver.name] = solver
    return solver


def solvers() -> dict[str, BenchSolver]:
    """All registered solvers, after importing every ``entry_*`` module of this package."""
    from .. import bench

    for info in pkgutil.iter_modules(bench.__path__):
        if info.name.startswith("entry_"):
            importlib.import_module(f"{bench.__name__}.{info.name}")
    return dict(sorted(_REGISTRY.items()))

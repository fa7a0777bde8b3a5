"""Registry of benchmarked solvers: a solver adds its row(s) here without touching the harness.

Each solver issue adds a module ``gpusvm/bench/entry_<name>.py`` that calls :func:`register`; the
harness imports every ``entry_*`` module of this package on start.
"""

from __future__ import annotations

import importlib
import pkgutil
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping


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
    params : optional hyperparameters merged over the data set's family parameters before ``make`` is
        called (e.g. ``{"loss": "hinge"}``); the row records the merged values, and the objective is
        compared with the reference's only where C, gamma, kernel and loss agree.
    datasets : optional names of the data sets to run on (default: every data set of its family).
    warmup_full : warm up on the whole training set on every device, whatever ``warmup_max`` says: for
        solvers whose code paths depend on the problem's size (DC-SVM solves no level on 2,000 rows, so a
        subset would leave its k-means and level code to be compiled or loaded inside the timed fit).
    """

    name: str
    family: str
    make: Callable[[dict, str], Any]
    devices: tuple[str, ...] = ("cpu", "gpu")
    objective: Callable[[Any, Any, Any], float] | None = None
    exact: bool = True
    params: Mapping[str, Any] = field(default_factory=dict)
    datasets: tuple[str, ...] | None = None
    warmup_full: bool = False


_REGISTRY: dict[str, BenchSolver] = {}
_IMPORT_ERRORS: dict[str, str] = {}


def register(solver: BenchSolver) -> BenchSolver:
    _REGISTRY[solver.name] = solver
    return solver


def solvers() -> dict[str, BenchSolver]:
    """All registered solvers, after importing every ``entry_*`` module of this package.

    An entry module that fails to import does not stop the others: it is skipped with a warning and
    its error is kept in :func:`import_errors` (the harness records it in its output).
    """
    from .. import bench

    for info in pkgutil.iter_modules(bench.__path__):
        if info.name.startswith("entry_"):
            name = f"{bench.__name__}.{info.name}"
            try:
                importlib.import_module(name)
            except Exception as exc:  # a broken entry must not take the whole benchmark down
                msg = f"{type(exc).__name__}: {exc}"
                if _IMPORT_ERRORS.get(name) != msg:
                    warnings.warn(f"benchmark entry {name} failed to import: {msg}", RuntimeWarning,
                                  stacklevel=2)
                _IMPORT_ERRORS[name] = msg
            else:
                _IMPORT_ERRORS.pop(name, None)
    return dict(sorted(_REGISTRY.items()))


def import_errors() -> dict[str, str]:
    """Entry modules that failed to import in the last :func:`solvers` call, with their errors."""
    return dict(_IMPORT_ERRORS)

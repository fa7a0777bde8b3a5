"""Solvers: pure functions over a backend ``be``; no module here imports numpy or cupy.

Binary kernel-SVM dual solvers (C-SVC with the bias) share one calling convention so that
:class:`gpusvm.SVC`, :class:`gpusvm.DCSVC` and the benchmark harness can use any of them::

    result = solver(be, X, y, spec, C, *, tol, max_iter, cache_bytes, alpha0=None, x_sqnorm=None,
                    verbose=0, random_state=None, **options)

``X``: (n, d) dense or CSR on ``be``; ``y``: (n,) float64 in {-1, +1} on ``be``; ``spec``: GramSpec;
``C``: (n,) float64 upper bounds on ``be`` (C times class and sample weights); ``alpha0``: optional
feasible warm start (0 <= alpha0 <= C, sum(y * alpha0) = 0); ``cache_bytes``: Gram-row cache budget.
The dual problem solved is

    max_alpha  D(alpha) = sum(alpha) - 1/2 alpha^T Q alpha,   Q_ij = y_i y_j k(x_i, x_j),
    s.t.       0 <= alpha_i <= C_i,  sum(y * alpha) = 0,

and decision values are f(x) = sum_i alpha_i y_i k(x_i, x) + b.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["BinaryResult", "register_binary_solver", "binary_solvers", "get_binary_solver"]


@dataclass
class BinaryResult:
    """What a binary dual solver returns (arrays stay on the solver's backend)."""

    alpha: Any  # (n,) float64, 0 <= alpha <= C
    b: float  # bias (intercept): f(x) = sum alpha_i y_i k(x_i, x) + b
    objective: float  # D(alpha) = sum(alpha) - 1/2 alpha^T Q alpha (to be maximized)
    n_iter: int  # solver iterations (SMO steps, or decomposition rounds; see the solver's doc)
    converged: bool  # False when max_iter stopped it
    gradient: Any = None  # optional (n,) float64: gradient of -D, i.e. Q alpha - 1
    info: dict = field(default_factory=dict)  # solver-specific counters (timings, rounds, ...)


@dataclass(frozen=True)
class _Entry:
    fn: Callable
    options: tuple[str, ...]  # SVC parameter names forwarded to the solver as keyword options


_BINARY: dict[str, _Entry] = {}


def register_binary_solver(name: str, options: tuple[str, ...] = ()):
    """Register ``fn`` as binary dual solver ``name``; ``options`` are the names of the estimator
    parameters it takes as keyword arguments (e.g. ("n_pairs", "mu") for ALFPGM)."""

    def deco(fn):
        _BINARY[name] = _Entry(fn, tuple(options))
        return fn

    return deco


_LOADED = False  # every solver module imported (as the backend's _discover_ops)


def _load_all() -> None:
    """Import every solver module (each registers its solvers), once: listing the package's files costs
    0.6 ms, which DC-SVM paid for every cluster and class pair (51 times, 33 ms, in a digits fit)."""
    global _LOADED
    if _LOADED:
        return
    import importlib
    import pkgutil

    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")
    _LOADED = True


def binary_solvers() -> dict[str, tuple[str, ...]]:
    """Registered binary solver names and the options each takes."""
    _load_all()
    return {k: v.options for k, v in sorted(_BINARY.items())}


def get_binary_solver(name: str):
    """(function, option names) of the registered binary solver ``name``."""
    _load_all()
    if name not in _BINARY:
        raise ValueError(f"The 'solver' parameter must be one of {sorted(_BINARY)}. Got {name!r} instead.")
    e = _BINARY[name]
    return e.fn, e.options

"""BSGD with multi-merge budget maintenance: a budgeted primal SGD solver for the Gaussian-kernel SVM.

Algorithms
----------
* BSGD: Z. Wang, K. Crammer, S. Vucetic, "Breaking the Curse of Kernelization: Budgeted Stochastic
  Gradient Descent for Large-Scale SVM Training", JMLR 13:3103-3131, 2012. Pegasos steps
  (S. Shalev-Shwartz et al., "Pegasos: primal estimated sub-gradient solver for SVM", ICML 2007) with
  eta_t = 1 / (lambda t), at most one new support vector per step (on a margin violation), and budget
  maintenance by merging two SVs whenever the model holds more than B of them.
* Multi-merge: S. Qaadan, T. Glasmachers, "Multi-Merge Budget Maintenance for Stochastic Gradient
  Descent SVM Training", arXiv:1806.10179, 2018. M SVs are merged into one at each maintenance, so the
  partner search runs once per M-1 margin violations: "cascade" (MM-BSGD, their Algorithm 1) merges the
  M-1 best partners of the first candidate one after the other, "gradient" (MM-GD, Algorithm 2) merges
  all M at once by gradient steps on the merged point z.

The problem is min_w lambda/2 ||w||^2 + 1/n sum_i max(0, 1 - y_i <w, phi(x_i)>) with lambda = 1 / (n C),
which is C-SVC without the bias (the Pegasos/BSGD formulation): no bias is learned, as in both papers.
The step-by-step rules (ties, fallbacks, the golden-section search) are documented in the fused ops
:mod:`gpusvm._backend.ops.bsgd` and :mod:`gpusvm._backend.ops.merge`, which run the loop compiled (Numba
on the CPU, one persistent CUDA thread block on the GPU).

Like every solver here this module is a pure function over a backend ``be`` and imports neither NumPy
nor CuPy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["BudgetResult", "bsgd"]


@dataclass
class BudgetResult:
    """What :func:`bsgd` returns (arrays on the solver's backend)."""

    support_vectors: Any  # (n_sv, n_features)
    alpha: Any  # (n_sv,), signed: f(x) = sum_j alpha_j k(sv_j, x)
    n_iter: int  # epochs run
    n_steps: int  # SGD steps (epochs * n_samples)
    info: dict = field(default_factory=dict)  # violations, merges, merge_cycles, total_cycles, degradation


def bsgd(be, X, y, *, gamma, C, budget, order, n_merge=2, merge="cascade", epochs=1, n_gss=10, n_gd=10,
         track_degradation=False):
    """Budgeted SGD (BSGD, Wang et al. 2012) with multi-merge (Qaadan & Glasmachers 2018), binary.

    Parameters
    ----------
    be : Backend
    X : array of shape (n_samples, n_features), dense float64 on ``be``
    y : array of shape (n_samples,), float64 in {-1, +1} on ``be``
    gamma : float
        Gaussian gram width: k(x, z) = exp(-gamma ||x - z||^2).
    C : float
        lambda = 1 / (n_samples C).
    budget : int
        Most support vectors the model holds (B >= n_merge).
    order : int array of shape (epochs * n_samples,) on ``be``
        Sample of each SGD step (the caller draws it, so CPU and GPU runs see the same sequence).
    n_merge : int
        M >= 2 SVs merged into one at each budget maintenance (2 = classic BSGD).
    merge : {"cascade", "gradient"}
    epochs : int
    n_gss : int
        Golden-section iterations per pairwise merge (10: bracket < 0.01, the stopping rule of Qaadan
        and Glasmachers' implementation).
    n_gd : int
        Gradient (fixed-point) steps of the "gradient" strategy.
    track_degradation : bool
        Diagnostics: also sum the exact weight degradation of every maintenance step (CPU only).

    Returns
    -------
    BudgetResult
    """
    n = X.shape[0]
    lam = 1.0 / (n * C)
    sv = alpha = None
    n_sv = 0
    info = {"violations": 0, "merges": 0, "merge_cycles": 0.0, "total_cycles": 0.0, "degradation": 0.0}
    for e in range(epochs):
        sv, alpha, n_sv, st = be.bsgd_train(
            X, y, order[e * n:(e + 1) * n], t0=e * n, lam=lam, gamma=gamma, budget=budget,
            n_merge=n_merge, merge=merge, n_gss=n_gss, n_gd=n_gd, sv=sv, alpha=alpha, n_sv=n_sv,
            track_degradation=track_degradation,
        )
        for k in info:
            info[k] += st[k]
    return BudgetResult(sv[:n_sv], alpha[:n_sv], n_iter=epochs, n_steps=epochs * n, info=info)

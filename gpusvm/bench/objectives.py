"""Objective values computed from a fitted model, so that every solver is compared on the same number.

Kernel C-SVC, dual (maximized)::

    D(alpha) = sum_i alpha_i - 1/2 sum_ij (alpha_i y_i) (alpha_j y_j) k(x_i, x_j)

computed from the signed dual coefficients ``coef_i = alpha_i y_i`` and the support vectors, so any model
that exposes LIBSVM's layout (``dual_coef_``, ``support_vectors_``, ``n_support_``: scikit-learn's SVC and
ours) gets the same value. For k > 2 classes (one-vs-one) the value reported is the SUM of the
k (k - 1) / 2 pairwise binary duals, each recovered from LIBSVM's multi-class ``dual_coef_`` layout.

Linear SVM, primal (minimized), as LIBLINEAR states it with the bias as an extra feature of value
``intercept_scaling`` (so the bias is regularized)::

    P(w, b) = 1/2 (||w||^2 + (b / intercept_scaling)^2) + C sum_i loss(y_i (w . x_i + b))

with ``loss(m) = max(0, 1 - m)`` ("hinge") or ``max(0, 1 - m)^2`` ("squared_hinge"). For k > 2 classes
(one-vs-rest) the value is the SUM of the k binary primals.

Everything here runs on the host (the CPU backend's ``gram`` op), outside the timed region.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._gram import GramSpec

__all__ = [
    "svc_dual_objective",
    "linear_primal_objective",
    "sklearn_svc_objective",
    "sklearn_linear_objective",
    "gram_spec_of",
]

_BLOCK_ROWS = 2048


def _host(a):
    """A NumPy array / SciPy CSR from a NumPy, SciPy, CuPy or cupyx object (objectives run on the host)."""
    if a is None:
        return None
    if hasattr(a, "get") and type(a).__module__.startswith(("cupy", "cupyx")):
        return a.get()
    return a


def _quad(sv, coef, spec):
    """``coef^T K coef`` over the rows of ``sv``, in row blocks so that memory stays bounded."""
    from .._backend import get_backend

    be = get_backend("cpu")
    n = sv.shape[0]
    if n == 0:
        return 0.0
    sqn = be.row_sqnorms(sv, np.float64) if spec.kind == "rbf" else None
    total = 0.0
    for r0 in range(0, n, _BLOCK_ROWS):
        r1 = min(n, r0 + _BLOCK_ROWS)
        K = be.gram(sv[r0:r1], sv, spec, x_sqnorm=None if sqn is None else sqn[r0:r1], y_sqnorm=sqn,
                    dtype=np.float64)
        total += float(coef[r0:r1] @ (K @ coef))
    return total


def svc_dual_objective(dual_coef, support_vectors, n_support, spec: GramSpec) -> float:
    """Dual objective of a C-SVC model in LIBSVM's layout (see the module docstring).

    Parameters
    ----------
    dual_coef : ndarray of shape (n_classes - 1, n_SV)
        Signed coefficients ``alpha_i y_i`` (scikit-learn's ``dual_coef_``).
    support_vectors : {ndarray, CSR matrix} of shape (n_SV, n_features)
        Support vectors grouped by class in class order (``support_vectors_``).
    n_support : ndarray of shape (n_classes,)
        Number of support vectors of each class (``n_support_``).
    spec : GramSpec
        The gram the model was trained with.

    Returns
    -------
    float
        D(alpha) for two classes; the sum of the pairwise one-vs-one duals for more.
    """
    coef = _host(dual_coef)
    coef = coef.toarray() if sp.issparse(coef) else coef  # sparse-trained SVC keeps a CSR dual_coef_
    coef = np.asarray(coef, dtype=np.float64)
    sv = _host(support_vectors)
    sv = sv.tocsr().astype(np.float64) if sp.issparse(sv) else np.asarray(sv, dtype=np.float64)
    n_support = np.asarray(_host(n_support), dtype=np.int64).ravel()
    coef = np.atleast_2d(coef)
    k = n_support.size
    if k <= 2:
        c = coef[0]
        return float(np.abs(c).sum() - 0.5 * _quad(sv, c, spec))
    start = np.concatenate([[0], np.cumsum(n_support)])
    total = 0.0
    for i in range(k):
        for j in range(i + 1, k):
            si = slice(start[i], start[i + 1])
            sj = slice(start[j], start[j + 1])
            # LIBSVM layout: for the pair (i, j), class i's SVs keep their coefficient in row j - 1 and
            # class j's SVs in row i.
            c = np.concatenate([coef[j - 1, si], coef[i, sj]])
            rows = np.r_[np.arange(start[i], start[i + 1]), np.arange(start[j], start[j + 1])]
            keep = c != 0
            c, rows = c[keep], rows[keep]
            total += float(np.abs(c).sum() - 0.5 * _quad(sv[rows], c, spec))
    return total


def linear_primal_objective(coef, intercept, X, y, classes, C, *, loss="squared_hinge",
                            fit_intercept=True, intercept_scaling=1.0) -> float:
    """Primal objective of a linear SVM (see the module docstring).

    Parameters
    ----------
    coef : ndarray of shape (1, n_features) for two classes, (n_classes, n_features) otherwise
    intercept : ndarray of shape (1,) or (n_classes,)
    X : {ndarray, CSR matrix} of shape (n_samples, n_features)
        The training data.
    y : ndarray of shape (n_samples,)
        Training labels, values in ``classes``.
    classes : ndarray of shape (n_classes,)
        Sorted class labels; for two classes ``classes[1]`` is the positive one.
    C : float
    loss : {"hinge", "squared_hinge"}
    fit_intercept : bool
        Whether the bias is part of the model (and regularized as an extra feature).
    intercept_scaling : float
        Value of the extra feature carrying the bias (LIBLINEAR's ``-B``).

    Returns
    -------
    float
        P(w, b) for two classes; the sum of the one-vs-rest primals for more.
    """
    if loss not in ("hinge", "squared_hinge"):
        raise ValueError(f"The 'loss' parameter must be one of ['hinge', 'squared_hinge']. Got {loss!r} instead.")
    W = np.atleast_2d(np.asarray(_host(coef), dtype=np.float64))
    b = np.asarray(_host(intercept), dtype=np.float64).ravel() if fit_intercept else np.zeros(W.shape[0])
    X = _host(X)
    y = np.asarray(_host(y)).ravel()
    classes = np.asarray(_host(classes)).ravel()
    margins = np.asarray(X @ W.T) + b[None, :]
    if W.shape[0] == 1:
        targets = [np.where(y == classes[-1], 1.0, -1.0)]
    else:
        targets = [np.where(y == c, 1.0, -1.0) for c in classes]
    total = 0.0
    for k, t in enumerate(targets):
        h = np.maximum(0.0, 1.0 - t * margins[:, k])
        data = (h * h).sum() if loss == "squared_hinge" else h.sum()
        reg = W[k] @ W[k] + ((b[k] / intercept_scaling) ** 2 if fit_intercept else 0.0)
        total += 0.5 * reg + C * data
    return float(total)


def gram_spec_of(est) -> GramSpec:
    """The GramSpec of a fitted SVC-like estimator: ``kernel``, the resolved gamma (``_gamma`` as
    scikit-learn stores it, else ``gamma_``, else a numeric ``gamma``), ``coef0`` and ``degree``."""
    gamma = getattr(est, "_gamma", None)
    if gamma is None:
        gamma = getattr(est, "gamma_", None)
    if gamma is None:
        gamma = est.gamma
    kernel = est.kernel
    return GramSpec(kernel, float(gamma), float(getattr(est, "coef0", 0.0)), int(getattr(est, "degree", 3)))


def sklearn_svc_objective(est, X=None, y=None) -> float:
    """Dual objective of a fitted SVC-like estimator (scikit-learn's SVC, or any estimator exposing
    ``dual_coef_``, ``support_vectors_``, ``n_support_`` and its gram parameters)."""
    return svc_dual_objective(est.dual_coef_, est.support_vectors_, est.n_support_, gram_spec_of(est))


def sklearn_linear_objective(est, X, y) -> float:
    """Primal objective of a fitted LinearSVC-like estimator on its training data ``X, y``."""
    return linear_primal_objective(
        est.coef_, est.intercept_, X, y, est.classes_, float(est.C),
        loss=getattr(est, "loss", "squared_hinge"),
        fit_intercept=bool(getattr(est, "fit_intercept", True)),
        intercept_scaling=float(getattr(est, "intercept_scaling", 1.0)),
    )

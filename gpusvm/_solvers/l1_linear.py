"""L1-regularized squared-hinge linear SVM: LinearSVC's ``penalty="l1"`` (LIBLINEAR's solver 5).

::

    min_w  ||w~||_1 + sum_i C_i max(0, 1 - y_i <w~, x~_i>)^2,    x~_i = [x_i, bias]

solved by coordinate descent with one-dimensional Newton steps and shrinking (the fused op ``l1r_cd``,
:mod:`gpusvm._backend.ops.l1r_cd`). Stopping rule as LIBLINEAR's for this solver, to which scikit-learn
passes ``tol`` unchanged: the sum over the features of the violation of the optimality conditions
falls to ``tol * max(min(n_pos, n_neg), 1) / n`` of its value in the first sweep.

The op exists on the CPU only: a coordinate step is a short reduction over one feature's column, and the
steps are sequential. A GPU backend copies X to the host, solves there and returns the weights on the
device.
"""

from __future__ import annotations

from .._backend import get_backend
from .dcd import LinearResult, _margins

__all__ = ["l1_linear", "l1_objective"]


def l1_objective(be, X, y, C, w, w_bias, bias):
    """``||w||_1 + |w_bias| + sum_i C_i max(0, 1 - y_i (<w, x_i> + bias w_bias))^2``."""
    xp = be.xp
    xi = xp.maximum(1.0 - y * _margins(be, X, w, w_bias, bias), 0.0)
    return float(xp.sum(xp.abs(w)) + abs(w_bias) + xp.sum(C * xi * xi))


def l1_linear(be, X, y, C, *, tol=1e-4, max_iter=1000, bias=1.0, seed=0, verbose=0):
    """Train one binary L1-regularized squared-hinge linear SVM on backend ``be``.

    Parameters
    ----------
    X : {array, CSR matrix} of shape (n, d) on ``be``
    y : array of shape (n,), values in {-1, +1}
    C : array of shape (n,)
        Per-sample costs (C times the class and sample weights).
    tol : float
        LIBLINEAR's tolerance (see the module docstring).
    max_iter : int
        Limit on sweeps over the features.
    bias : float
        Value of the constant feature that carries the bias (0: none).
    seed : int
        Seed of the random feature order.

    Returns
    -------
    LinearResult (``alpha`` is None: there is no dual here; ``n_updates`` counts coordinate steps).
    """
    xp = be.xp
    n = int(X.shape[0])
    n_pos = int(xp.count_nonzero(y > 0))
    eps = float(tol) * max(min(n_pos, n - n_pos), 1) / n
    host = be if not be.is_gpu else get_backend("cpu")
    res = host.l1r_cd(be.to_host(X) if be.is_gpu else X, be.to_host(y) if be.is_gpu else y,
                      be.to_host(C) if be.is_gpu else C, bias=float(bias), eps=eps, max_iter=int(max_iter),
                      seed=int(seed))
    w = be.asarray(res["w"])
    obj = l1_objective(be, X, y, C, w, res["w_bias"], float(bias))
    if verbose:
        print(f"[l1r_cd] sweeps={res['n_iter']} steps={res['n_steps']} objective={obj:.6g} "
              f"converged={res['converged']}")
    return LinearResult(w=w, w_bias=res["w_bias"], alpha=None, n_iter=res["n_iter"], n_updates=res["n_steps"],
                        converged=res["converged"], objective=obj,
                        info={"violation_sum": res["violation_sum"], "eps": eps})

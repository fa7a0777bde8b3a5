"""Primal truncated Newton method for the L2-loss (squared hinge) linear SVM: LinearSVC's "newton".

Problem
-------
With ``x~_i = [x_i, bias]`` (the bias as a regularized extra feature, as LIBLINEAR) and per-sample costs
``C_i``::

    min_w  f(w) = 1/2 ||w||^2 + sum_i C_i max(0, 1 - y_i <w, x~_i>)^2

``f`` is strictly convex and continuously differentiable, with gradient and generalized Hessian
(Mangasarian, "A finite Newton method for classification", 2002; Keerthi & DeCoste, JMLR 2005)::

    g(w) = w + 2 X~_I^T (C_I (z_I - y_I)),     H(w) = I + 2 X~_I^T diag(C_I) X~_I,

where ``z = X~ w`` and ``I = {i : y_i z_i < 1}`` are the points with a positive loss.

Why a primal solver
-------------------
Dual coordinate descent converges slowly when the data are badly scaled: on scikit-learn's digits
(pixel values 0-16, C = 1, one class against the rest) LIBLINEAR's dual solver and our "dcd" both stop
at ``max_iter`` = 1,000 sweeps with a primal objective about twice the optimum (36.1 and 33.1 against
17.4), and are still 50% above it after 20,000 sweeps. scikit-learn's ``LinearSVC`` avoids this because
its ``dual="auto"`` picks LIBLINEAR's primal Newton solver whenever ``n_samples >= n_features`` (for
the squared hinge), which reaches the optimum in a few dozen Newton steps. This module is that solver
for gpusvm, and ``LinearSVC`` makes the same choice.

Method
------
The line-search truncated Newton method of LIBLINEAR's primal solvers (Galli & Lin, "A study on
truncated Newton methods for linear classification", IEEE TNNLS 2021), in our own code:

1. the Newton direction ``s`` solves ``H s = -g`` approximately by preconditioned conjugate gradient,
   stopped when the residual falls below ``cg_tol * ||g||`` (or after ``max_cg`` products; a direction
   of descent is guaranteed either way). The preconditioner is LIBLINEAR's mixed diagonal
   ``(1 - a) + a diag(H)`` with ``a = 0.01`` (its ``X * X`` is a copy of a dense X; above 512 MB it is
   not made and CG runs unpreconditioned);
2. a backtracking line search (step 1, halved up to 20 times) accepts the first step with the Armijo
   decrease ``f(w + t s) <= f(w) + 0.01 t <g, s>``. ``X~ s`` is computed once per direction, so each
   trial costs O(n), not a pass over the data;
3. stop when ``||g|| <= tol * max(min(n_pos, n_neg), 1) / n * ||g(0)||``, LIBLINEAR's criterion for its
   primal classification solvers (scikit-learn passes ``tol`` to it unchanged), or after ``max_iter``
   Newton steps; at once, with ``w = 0``, when ``||g(0)||`` is within the rounding of its terms,
   ``n eps sum_i 2 C_i ||x~_i||`` (its terms cancel: w = 0 is the optimum, and the relative rule
   would chase rounding; for float32 X, ``g(0)`` is then recomputed with float64 products and
   compared with float64's ``eps``, since float32's bound also holds weak but real signals).

Each Hessian-vector product ``v + 2 X~_I^T (C_I X~_I v)`` is two passes over the rows in ``I``; when
``I`` holds at most half of the rows they are gathered once per Newton step so the products skip the
others. Everything is ``be.xp`` array math and matrix-vector products (BLAS / sparse products), so the
same code runs on the CPU and, with CuPy, on the GPU (cuBLAS / cuSPARSE); no custom kernel is needed.
"""

from __future__ import annotations

import math
import time

from .dcd import LinearResult, primal_objective

__all__ = ["newton_linear"]

_ARMIJO = 0.01
_MAX_LINESEARCH = 20
_PRECOND_MIX = 0.01
_PRECOND_MAX_BYTES = 512 * 2**20  # dense X: largest copy of X * X made for the preconditioner


def _matvec(be, X, v, bias, vb):
    """``X~ [v, vb]`` = ``X v + bias vb`` as float64 (products in X's dtype)."""
    xp = be.xp
    out = be.dot(X, v.astype(X.dtype, copy=False)).astype(xp.float64, copy=False)
    if bias:
        out = out + bias * vb
    return out


def _rmatvec(be, XT, u, bias):
    """``X~^T u`` split as (``X^T u``, ``bias * sum(u)``), float64."""
    xp = be.xp
    out = be.dot(XT, u.astype(XT.dtype, copy=False)).astype(xp.float64, copy=False)
    return out, (bias * float(u.sum()) if bias else 0.0)


def _rmatvec64(be, X, u, bias, block_bytes=256 * 2**20):
    """``X~^T u`` as :func:`_rmatvec`, but with float64 products for float32 ``X``: a block of rows at a
    time is cast (``block_bytes`` of dense float64 at most), so no float64 copy of the whole X is made."""
    xp = be.xp
    n, d = X.shape
    step = max(1, block_bytes // (8 * max(d, 1)))
    out = xp.zeros(d, dtype=xp.float64)
    for a in range(0, n, step):
        Xb = X[a:a + step].astype(xp.float64)
        out += be.dot(be.transpose(Xb), u[a:a + step])
    return out, (bias * float(xp.sum(u)) if bias else 0.0)


def newton_linear(be, X, y, C, *, tol=1e-4, max_iter=1000, bias=1.0, cg_tol=0.1, max_cg=None, verbose=0):
    """Train a binary L2-loss linear SVM in the primal by truncated Newton on backend ``be``.

    Parameters
    ----------
    be : Backend
    X : {ndarray, CSR matrix} of shape (n_samples, n_features) on ``be``, float32 or float64
    y : ndarray of shape (n_samples,), float64 in {-1, +1}, on ``be``
    C : ndarray of shape (n_samples,), float64 >= 0, on ``be``: per-sample costs
    tol : float > 0
        Relative gradient-norm tolerance (LIBLINEAR's, see the module docstring).
    max_iter : int
        Most Newton steps.
    bias : float >= 0
        Value of the constant extra feature (0: no intercept).
    cg_tol : float
        Relative residual at which conjugate gradient stops.
    max_cg : int, optional
        Most conjugate-gradient steps per Newton step (default: the number of unknowns).
    verbose : int

    Returns
    -------
    LinearResult
        ``n_iter`` counts Newton steps, ``n_updates`` Hessian-vector products (conjugate-gradient
        steps); ``alpha`` holds the dual variables recovered from the primal solution,
        ``alpha_i = 2 C_i max(0, 1 - y_i <w, x~_i>)``.
    """
    xp = be.xp
    t0 = time.perf_counter()
    n, d = X.shape
    f64 = xp.float64
    y = xp.asarray(y, dtype=f64)
    C = xp.asarray(C, dtype=f64)
    bias = float(bias)
    XT = be.transpose(X)
    w = xp.zeros(d, dtype=f64)
    wb = 0.0
    n_pos = int(xp.count_nonzero((y > 0) & (C > 0)))
    n_neg = int(xp.count_nonzero((y < 0) & (C > 0)))
    n_used = n_pos + n_neg
    eps = float(tol) * max(min(n_pos, n_neg), 1) / max(n_used, 1)
    max_cg = int(max_cg or (d + (1 if bias else 0)))
    # squared entries, for the diagonal of H (the preconditioner); a dense X larger than
    # _PRECOND_MAX_BYTES is not copied: conjugate gradient then runs unpreconditioned. In float64 for
    # float32 X too: float32 squares overflow from 1.8e19 on, and an infinite diagonal froze its
    # coordinates (max_iter steps to a model far from the optimum)
    if be.issparse(X):
        X2T = be.transpose(type(X)((xp.square(X.data, dtype=f64), X.indices, X.indptr), shape=X.shape))
    elif X.size * 8 <= _PRECOND_MAX_BYTES:
        X2T = xp.square(X, dtype=f64).T
    else:
        X2T = None

    z = xp.zeros(n, dtype=f64)  # X~ w

    def value(z_, wsq):
        xi = xp.maximum(1.0 - y * z_, 0.0)
        return 0.5 * wsq + float(xp.sum(C * xi * xi))

    f = value(z, 0.0)
    gnorm0 = None
    n_iter = n_cg = 0
    converged = False
    info = {"line_search_failed": False}
    while True:
        active = (y * z < 1.0) & (C > 0)
        dc_all = xp.where(active, 2.0 * C, 0.0)  # 2 C_i on the points with a positive loss, else 0
        u = dc_all * (z - y)
        gx, gb = _rmatvec(be, XT, u, bias)
        g = w + gx
        g_b = wb + gb
        gnorm = math.sqrt(float(xp.sum(g * g)) + g_b * g_b)
        if not math.isfinite(gnorm):
            # C times the squared hinge overflowed: "gnorm <= eps * gnorm0" would hold for inf and
            # return the zero model as converged
            raise ValueError(f"The primal Newton solver's gradient overflowed float64 (largest C_i "
                             f"{float(xp.max(C)):.3g}); lower C or scale the features.")
        if gnorm0 is None:
            gnorm0 = gnorm
            # g(0) = -sum_i 2 C_i y_i x~_i. When its terms cancel to their rounding (copies of points
            # with both labels) w = 0 is the optimum, and ||g|| <= eps ||g(0)|| could only be met by
            # chasing rounding (up to max_iter steps, then a ConvergenceWarning): stop at w = 0, as
            # LIBLINEAR does there
            terms = float(xp.sum(dc_all * xp.sqrt(be.row_sqnorms(X, f64) + bias * bias)))
            g0, eps_x = gnorm, float(xp.finfo(X.dtype).eps)
            if g0 <= n_used * eps_x * terms and X.dtype != f64:
                # float32 products bound the rounding only at n * 1.2e-7 of the terms: a balanced problem
                # with a real but weak signal fell below it (1e6 rows: accuracy 59% possible) and returned
                # w = 0 as converged. Decide with float64 products instead
                gx64, gb64 = _rmatvec64(be, X, u, bias)
                g0, eps_x = math.sqrt(float(xp.sum(gx64 * gx64)) + gb64 * gb64), float(xp.finfo(f64).eps)
            if g0 <= n_used * eps_x * terms:
                converged = True
                break
        if verbose:
            print(f"[newton] iter {n_iter} f {f:.10g} |g| {gnorm:.3g} active {int(xp.count_nonzero(active))} "
                  f"cg {n_cg}")
        if gnorm <= eps * gnorm0:
            converged = True
            break
        if n_iter >= max_iter:
            break
        # ---- Newton direction by preconditioned CG on H s = -g ----
        idx = xp.nonzero(active)[0]
        if 2 * int(idx.shape[0]) <= n:
            XI, DC = be.take_rows(X, idx), dc_all[idx]
            XIT = be.transpose(XI)
        else:  # most rows are active: mask instead of gathering
            XI, XIT, DC = X, XT, dc_all
        if X2T is not None:
            diag_x = be.dot(X2T, dc_all.astype(X2T.dtype, copy=False)).astype(f64, copy=False)
            diag_b = bias * bias * float(xp.sum(dc_all))
            M = (1.0 - _PRECOND_MIX) + _PRECOND_MIX * (1.0 + diag_x)
            Mb = (1.0 - _PRECOND_MIX) + _PRECOND_MIX * (1.0 + diag_b)
        else:
            M, Mb = xp.ones(d, dtype=f64), 1.0

        def hess(v, vb):
            t = DC * _matvec(be, XI, v, bias, vb)
            hx, hb = _rmatvec(be, XIT, t, bias)
            return v + hx, vb + hb

        s = xp.zeros(d, dtype=f64)
        sb = 0.0
        r, rb = -g, -g_b
        zr, zrb = r / M, rb / Mb
        p, pb = zr.copy(), zrb
        rz = float(xp.sum(r * zr)) + rb * zrb
        cg_stop = cg_tol * gnorm
        # the arrays' sum method in the steps below, the same reduction as xp.sum without NumPy's function
        # wrapper (about 2 us a call, 12% of the fit on digits, where a step is a few dozen small operations)
        for _ in range(max_cg):
            Hp, Hpb = hess(p, pb)
            n_cg += 1
            pHp = float((p * Hp).sum()) + pb * Hpb
            if not pHp > 0.0:
                break
            a = rz / pHp
            s = s + a * p
            sb += a * pb
            r = r - a * Hp
            rb -= a * Hpb
            if math.sqrt(float((r * r).sum()) + rb * rb) <= cg_stop:
                break
            zr, zrb = r / M, rb / Mb
            rz_new = float((r * zr).sum()) + rb * zrb
            beta = rz_new / rz
            rz = rz_new
            p = zr + beta * p
            pb = zrb + beta * pb
        # ---- backtracking line search (Armijo) along s ----
        gs = float(xp.sum(g * s)) + g_b * sb
        if not gs < 0.0:  # CG made no progress (H is positive definite, so only by rounding)
            info["line_search_failed"] = True
            break
        zs = _matvec(be, X, s, bias, sb)
        wsq = float(xp.sum(w * w)) + wb * wb
        ws = float(xp.sum(w * s)) + wb * sb
        ss = float(xp.sum(s * s)) + sb * sb
        step = 1.0
        for _ in range(_MAX_LINESEARCH):
            f_new = value(z + step * zs, wsq + 2.0 * step * ws + step * step * ss)
            if f_new <= f + _ARMIJO * step * gs:
                break
            step *= 0.5
        else:
            info["line_search_failed"] = True
            break
        w = w + step * s
        wb += step * sb
        z = z + step * zs
        f = f_new
        n_iter += 1
    info["gap"] = gnorm / gnorm0 if gnorm0 else 0.0
    info["seconds"] = time.perf_counter() - t0
    alpha = xp.where(C > 0, 2.0 * C * xp.maximum(1.0 - y * z, 0.0), 0.0)
    obj = primal_objective(be, X, y, C, w, wb, bias, "squared_hinge")
    return LinearResult(w, wb, alpha, n_iter, n_cg, converged, obj, info)

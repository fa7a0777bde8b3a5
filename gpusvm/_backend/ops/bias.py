"""Fused op ``free_sums``: the sums over the free variables that the intercept needs
(:func:`gpusvm._solvers._common.bias`), read to the host in one copy.

A variable is free when ``not (alpha >= C * up or alpha <= C * low)`` (``up``, ``low``: the bias's relative
margins at the bounds). The op returns the host float64 array ``[count of free, sum of y G over them, *also]``
(``also``: 0-d float64 arrays to read with them). CPU: one compiled pass (:func:`free_yG`) for float64
vectors, instead of a dozen NumPy calls of a few microseconds each, which a fit of many small class pairs
pays per pair (23 -> 6 us per binary problem); GPU: the array code, one copy to the host (one sync). Both
sum the same array with NumPy's or CuPy's sum, so the values are those of the array code.
"""

from __future__ import annotations

import numba
import numpy as np

from ..base import register_op


@numba.njit(cache=True, nogil=True)
def free_yG(y, alpha, G, C, up, low):
    """For :func:`gpusvm._solvers._common.bias` on the CPU: ``(where(free, y * G, 0.0), count of free)``,
    free meaning ``not (alpha >= C * up or alpha <= C * low)``, each operation as the array code's (so the
    same array, whose NumPy sum is then that of the array code)."""
    n = y.shape[0]
    w = np.empty(n)
    n_free = 0
    for t in range(n):
        if alpha[t] >= C[t] * up or alpha[t] <= C[t] * low:
            w[t] = 0.0
        else:
            w[t] = y[t] * G[t]
            n_free += 1
    return w, n_free


def free_mask(alpha, C, up, low):
    """The free variables as a boolean array (operators only: NumPy or CuPy), the array code that
    :func:`free_yG` compiles: not within the relative margins ``up``, ``low`` of a bound (C_i = 0: never free)."""
    return ~((alpha >= C * up) | (alpha <= C * low))


def _free_sums_xp(be, y, alpha, G, C, up, low, also):
    xp = be.xp
    free = free_mask(alpha, C, up, low)
    return be.to_host(xp.stack([xp.sum(free, dtype=xp.float64), xp.sum(xp.where(free, y * G, 0.0)), *also]))


@register_op("free_sums", "cpu")
def free_sums_cpu(be, y, alpha, G, C, up, low, also=()):
    """See the module: ``[count of free, sum of y G over them, *also]`` on the host (float64)."""
    vectors = (y, alpha, G, C)
    if all(type(a) is np.ndarray and a.dtype == np.float64 and a.ndim == 1 and a.shape == y.shape for a in vectors):
        w, n_free = free_yG(y, alpha, G, C, up, low)
        return np.array([n_free, np.sum(w), *[float(v) for v in also]], dtype=np.float64)
    return _free_sums_xp(be, y, alpha, G, C, up, low, also)


@register_op("free_sums", "gpu")
def free_sums_gpu(be, y, alpha, G, C, up, low, also=()):
    """GPU twin of :func:`free_sums_cpu`: the array code in CuPy, one copy to the host."""
    with be.device:
        return _free_sums_xp(be, y, alpha, G, C, up, low, also)

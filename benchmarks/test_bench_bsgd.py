"""Micro-benchmarks of the fused ``bsgd_train`` op (the whole BSGD loop of one binary problem): the two
margin forms on both devices.

    PYTHONPATH=. python -m pytest benchmarks/test_bench_bsgd.py -p no:cacheprovider --benchmark-only

Case: an a9a-like problem (4,000 rows, 123 binary features, 14 nonzeros per row), budget 500, M = 3,
one epoch. "rows": margins from the SV rows (GPU: a warp per SV); "columns": from the nonzeros of each
sample against a transposed SV copy (CPU: the default; GPU: one thread per SV, the default from 32
features on). GPU cases are skipped without a CUDA device; one untimed call compiles first (Numba /
NVRTC) and the device is synchronized inside the timed function. ``extra_info`` holds steps per second.
"""

from __future__ import annotations

import numpy as np
import pytest


def _problem(n=4000, d=123, nnz=14, seed=0):
    rng = np.random.default_rng(seed)
    X = np.zeros((n, d))
    for i in range(n):
        X[i, rng.choice(d, nnz, replace=False)] = 1.0
    w = rng.normal(size=d)
    y = np.where(X @ w + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y, rng.permutation(n)


@pytest.mark.parametrize("margin", ["rows", "columns"])
def test_bsgd_train(benchmark, bench_backend, margin):
    be = bench_backend
    X, y, order = _problem()
    n = X.shape[0]
    Xb, yb, ob = be.asarray(X), be.asarray(y), be.asarray(order)
    kw = dict(t0=0, lam=1.0 / (32 * n), gamma=0.008 * 8, budget=500, n_merge=3, merge="cascade",
              margin=margin)

    def run():
        out = be.bsgd_train(Xb, yb, ob, **kw)
        be.sync()
        return out

    run()  # compile outside the timing
    benchmark.group = "bsgd_train a9a-like 4000x123 B=500 M=3"
    benchmark.pedantic(run, rounds=5, iterations=1)
    if benchmark.stats is None:
        return
    benchmark.extra_info.update({"device": be.name, "margin": margin, "steps_per_s": n / benchmark.stats.stats.min})

"""Micro-benchmark of one DC-SVM level: its clusters solved one by one with the SMO solver, against all of
them in one batched launch (``be.local_smo_batched``, DCSVC's ``batch_subproblems``), on both devices.

    PYTHONPATH=. python -m pytest benchmarks/test_bench_dc_level.py -p no:cacheprovider --benchmark-only

Case: a 4x4 chess board of 16,000 points (C = 10, gamma = 0.5, float32 Gram values), cut into 16
clusters of about 1,000 points by the nearest of 16 random centres, every subproblem from alpha = 0 to
DCSVC's default sub_tol of 0.1. GPU cases are skipped without a CUDA device; one untimed call compiles
first (Numba / NVRTC) and the device is synchronized inside the timed function. ``extra_info`` holds the
summed SMO steps and the largest cluster.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpusvm._gram import GramSpec
from gpusvm._solvers.dcsvm import _run_level
from gpusvm.datasets import make_chessboard


def _level(n=16000, k=16, seed=0):
    X, y = make_chessboard(n_samples=n, random_state=seed)
    y = np.where(y == y.max(), 1.0, -1.0)
    rng = np.random.default_rng(seed)
    centres = X[rng.choice(n, k, replace=False)]
    labels = np.argmin(((X[:, None, :] - centres[None]) ** 2).sum(-1), axis=1)
    return X, y, labels


@pytest.mark.parametrize("batched", [False, True])
def test_dc_level(benchmark, bench_backend, batched):
    be = bench_backend
    X, y, labels = _level()
    k = int(labels.max()) + 1
    Xb, yb, lb = be.asarray(X), be.asarray(y), be.asarray(labels)
    Cb = be.asarray(np.full(len(y), 10.0))
    a0 = be.asarray(np.zeros(len(y)))
    sq = be.row_sqnorms(Xb, np.float64)
    kw = dict(solver="smo", tol=0.1, max_iter=-1, cache_bytes=200 * 2**20, options={}, random_state=0,
              executor=None, worker_device="cpu", level=2, x_sqnorm=sq,
              batch={"max_size": 4096, "max_bytes": 2**30} if batched else None)

    def run():
        out = _run_level(be, Xb, yb, Cb, a0, lb, k, GramSpec("rbf", 0.5), **kw)
        be.sync()
        return out

    _, results, _, n_batched = run()  # compile outside the timing
    benchmark.group = "DC-SVM level: 16 clusters of a 16,000-point chess board"
    benchmark.pedantic(run, rounds=3, iterations=1)
    if benchmark.stats is None:
        return
    benchmark.extra_info.update({"device": be.name, "batched": batched, "n_batched": n_batched,
                                 "steps": int(sum(r["n_iter"] for r in results if r is not None)),
                                 "largest_cluster": int(np.bincount(labels).max())})

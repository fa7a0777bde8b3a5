"""Micro-benchmark of the fused ``dcd_sweeps`` op: ONE coordinate sweep (n visits) of the linear SVM dual.

    PYTHONPATH=. python -m pytest benchmarks/test_bench_dcd.py -p no:cacheprovider --benchmark-only \
        --benchmark-timer=time.process_time --benchmark-min-rounds=10 \
        --benchmark-json=benchmarks/results/micro_dcd_cpu.json

The CPU result file was made with that command: process CPU time, not wall time, because the machine is
shared (in one wall-clock run the process got about 10% of a core and a dense sweep read 4.5 us per
visit; 0.6 us in CPU time). On a GPU use the default (wall) timer: the kernel's time is not CPU time.

Cases: DCD without shrinking (so every sweep visits all n variables) and AVSF (n visits by design), on
an a9a-like CSR matrix (32,561 x 123, 14 non-zeros per row) and a dense 8,000 x 300 matrix, float64,
C = 1. The state continues from call to call (a warm solver), which keeps the cost per sweep steady.
``extra_info`` holds nanoseconds per coordinate visit. GPU cases (one persistent block) are skipped
without a CUDA device; the device is synchronized inside the timed function.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp


def _data(kind):
    rng = np.random.default_rng(0)
    if kind == "csr":
        n, d, nnz = 32_561, 123, 14
        cols = np.stack([rng.choice(d, nnz, replace=False) for _ in range(n)])
        X = sp.csr_matrix((np.ones(n * nnz), cols.ravel(), np.arange(0, n * nnz + 1, nnz)), shape=(n, d))
        X.sort_indices()
        w = rng.normal(size=d)
    else:
        n, d = 8_000, 300
        X = rng.normal(size=(n, d))
        w = rng.normal(size=d) / math.sqrt(d)
    y = np.where(X @ w + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


def _state(be, X, y, C=1.0, bias=1.0):
    xp = be.xp
    n = X.shape[0]
    Xb = be.asarray(X)
    yb = be.asarray(y)
    qd = be.row_sqnorms(Xb, xp.float64) + bias * bias
    return dict(
        X=Xb, y=yb, qd=qd, upper=xp.full(n, C), diag=xp.zeros(n), bias=bias, alpha=xp.zeros(n),
        w=xp.zeros(X.shape[1] + 1), order=xp.arange(n, dtype=xp.int64), pref=xp.ones(n),
        fstate=xp.asarray([math.inf, -math.inf, 0.0, float(n), math.inf]),
        istate=xp.asarray([n, 0, 0, 0, 1], dtype=xp.int64), rng=xp.asarray([12345], dtype=xp.uint64),
    )


@pytest.mark.parametrize("kind", ["csr", "dense"])
@pytest.mark.parametrize("method", ["dcd", "avsf"])
def test_one_sweep(benchmark, bench_backend, kind, method):
    be = bench_backend
    X, y = _data(kind)
    st = _state(be, X, y)
    avsf = method == "avsf"

    def sweep():
        st["istate"][3] = 0  # never "converged": every call makes one full sweep
        be.dcd_sweeps(st["X"], st["y"], st["qd"], st["upper"], st["diag"], st["bias"], st["alpha"], st["w"],
                      st["order"], st["pref"], st["fstate"], st["istate"], st["rng"], 1, 0.0,
                      avsf=avsf, shrinking=False)
        be.sync()

    sweep()  # compile (Numba / NVRTC) and warm up outside the timing
    benchmark.group = f"dcd one sweep {kind} {be.name}"
    benchmark(sweep)
    n = X.shape[0]
    if benchmark.stats is None:  # --benchmark-disable: the sweep ran once, nothing was timed
        return
    benchmark.extra_info.update({"n": n, "d": X.shape[1], "device": be.device_name,
                                 "ns_per_visit": benchmark.stats.stats.min / n * 1e9})

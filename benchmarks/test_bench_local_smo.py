"""Micro-benchmarks of the batched decomposition's fused ops (pytest-benchmark).

    PYTHONPATH=. python -m pytest benchmarks/test_bench_local_smo.py --benchmark-only -p no:cacheprovider

* ``local_smo``: one local solve of a working set of q = 256 / 1024 variables (SMO and PA-SMO steps,
  float32 Gram values), from the same start each round;
* ``grad_update_rows``: G += y * (coef @ K_B) over q = 512 Gram rows of n = 50,000 columns with half
  of the coefficients zero (the rows whose alpha did not move), as in one decomposition round.

CPU always; the GPU cases are skipped without a CUDA device (and synchronize before the clock stops).
The Numba compilation happens in a warm-up call outside the timing.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpusvm import get_backend, gpu_status


def _backends():
    out = [pytest.param("cpu", id="cpu")]
    ok, why = gpu_status(0)
    out.append(pytest.param("gpu", id="gpu", marks=pytest.mark.skipif(not ok, reason=f"no CUDA device: {why}")))
    return out


def _subproblem(q, seed=0):
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(q, 8))
    sq = (Z * Z).sum(1)
    K = np.exp(-0.2 * np.maximum(sq[:, None] + sq[None, :] - 2 * Z @ Z.T, 0)).astype(np.float32)
    y = np.where(rng.random(q) < 0.5, 1.0, -1.0)
    C = np.full(q, 10.0)
    alpha = np.zeros(q)
    G = -np.ones(q) + 0.2 * rng.normal(size=q)  # stands for the rest of the problem
    return K, y, alpha, G, C, np.ones(q)


@pytest.mark.parametrize("device", _backends())
@pytest.mark.parametrize("mode", [0, 1], ids=["smo", "pa-smo"])
@pytest.mark.parametrize("q", [256, 1024])
def test_bench_local_smo(benchmark, device, mode, q):
    be = get_backend(device)
    args = [be.asarray(v) for v in _subproblem(q)]

    def run():
        out = be.local_smo(*args, 1e-3, 10 * q, mode, 2)
        be.sync()
        return out

    run()  # compile / load kernels outside the timing
    a_new, steps, _ = benchmark(run)
    benchmark.extra_info["steps"] = int(be.to_host(steps)[0])
    assert int(be.to_host(steps)[0]) > 0


@pytest.mark.parametrize("device", _backends())
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bench_grad_update_rows(benchmark, device, dtype):
    be = get_backend(device)
    rng = np.random.default_rng(1)
    k, n = 512, 50_000
    K = be.asarray(rng.random((k, n)).astype(dtype))
    coef = rng.normal(size=k)
    coef[::2] = 0.0
    coef = be.asarray(coef)
    y = be.asarray(np.where(rng.random(n) < 0.5, 1.0, -1.0))
    G = be.asarray(np.zeros(n))

    def run():
        be.grad_update_rows(G, y, K, coef)
        be.sync()

    run()
    benchmark(run)

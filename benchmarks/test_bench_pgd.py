"""Micro-benchmarks of ALFPGM's fused ops (pytest-benchmark).

    PYTHONPATH=. python -m pytest benchmarks/test_bench_pgd.py --benchmark-only -p no:cacheprovider

* ``box_momentum_step``: one FPGM step onto a box (projection + momentum) over m = 2 p variables
  (p = 64 and 512 pairs, as in a working set) and over m = 1,000,000 (memory bound), float64;
* ``alfpgm_subproblem``: one whole working-set subproblem (2 p = 128 variables, RBF gram), from the same
  start each round, to eps = 1e-3.

CPU always; the GPU cases are skipped without a CUDA device (fixture ``bench_backend``) and synchronize
before the clock stops. Numba compilation / kernel compilation happens in a warm-up call outside the
timing.
"""

from __future__ import annotations

import numpy as np
import pytest


def _step_args(be, m, seed=0):
    rng = np.random.default_rng(seed)
    z, g, xp_ = (rng.normal(size=m) for _ in range(3))
    lo, hi = -rng.random(m), rng.random(m)
    return [be.asarray(a) for a in (z, g, xp_, lo, hi)]


@pytest.mark.parametrize("m", [128, 1024, 1_000_000])
def test_bench_box_momentum_step(benchmark, bench_backend, m):
    be = bench_backend
    z, g, xp_, lo, hi = _step_args(be, m)
    out_x, out_z = be.xp.empty_like(z), be.xp.empty_like(z)

    def run():
        be.box_momentum_step(z, g, xp_, lo, hi, 0.01, 0.9, out_x=out_x, out_z=out_z)
        be.sync()

    run()  # warm-up (kernel compilation)
    benchmark(run)


def test_bench_alfpgm_subproblem(benchmark, bench_backend):
    be = bench_backend
    rng = np.random.default_rng(1)
    nb = 128
    Z = rng.normal(size=(nb, 6))
    sq = (Z * Z).sum(1)
    y = np.where(rng.random(nb) < 0.5, 1.0, -1.0)
    Q = (y[:, None] * y[None, :]) * np.exp(-0.3 * np.maximum(sq[:, None] + sq[None, :] - 2 * Z @ Z.T, 0))
    lin = -1.0 + 0.2 * rng.normal(size=nb)
    args = [be.asarray(a) for a in (Q, lin, y, np.zeros(nb), np.full(nb, 10.0))]

    def run():
        lam = be.asarray(np.zeros(1))
        stats = be.asarray(np.zeros(4, np.int64))
        info = be.asarray(np.zeros(3))
        be.alfpgm_subproblem(*args, lam, stats, info, mu=0.1, eps=1e-3, max_inner=2000, max_outer=100)
        be.sync()

    run()
    benchmark(run)

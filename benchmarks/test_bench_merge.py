"""Micro-benchmarks of the fused ``merge_search`` op (BSGD budget maintenance: one golden-section
search per candidate support vector).

    PYTHONPATH=. python -m pytest benchmarks/test_bench_merge.py -p no:cacheprovider --benchmark-only

Cases: budgets of 500 and 5,000 support vectors at d = 22 (ijcnn1-like) and d = 123 (a9a-like), 10
golden-section steps. CPU: the Numba twin; GPU (skipped without a CUDA device): kernels/merge.cu, one
thread per candidate, with the device synchronized inside the timed function and one untimed call
compiling the kernel first. ``extra_info`` holds candidates scored per second.
"""

from __future__ import annotations

import numpy as np
import pytest


def _model(n, d, seed=0):
    rng = np.random.default_rng(seed)
    sv = rng.random((n, d))
    alpha = rng.normal(size=n)
    return sv, alpha


@pytest.mark.parametrize("n", [500, 5000])
@pytest.mark.parametrize("d", [22, 123])
def test_merge_search(benchmark, bench_backend, n, d):
    be = bench_backend
    sv, alpha = _model(n, d)
    sv, alpha = be.asarray(sv), be.asarray(alpha)
    first = 0
    gamma = 1.0 / d

    def run():
        out = be.merge_search(sv, alpha, n, first, gamma)
        be.sync()
        return out

    run()  # compile (Numba / NVRTC) outside the timing
    benchmark.group = f"merge_search n={n} d={d}"
    benchmark(run)
    if benchmark.stats is None:  # --benchmark-disable: nothing was timed
        return
    benchmark.extra_info.update({"n": n, "d": d, "device": be.name,
                                 "candidates_per_s": n / benchmark.stats.stats.min})

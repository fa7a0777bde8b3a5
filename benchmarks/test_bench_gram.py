"""Micro-benchmarks of the fused ``gram`` op (a block of kernel values) next to a plain matrix product.

    PYTHONPATH=. python -m pytest benchmarks/test_bench_gram.py -p no:cacheprovider --benchmark-only

The Gram block ``K = exp(-gamma ||x_i - y_j||^2)`` costs one matrix product (2 n m d flops) plus an
elementwise pass over the n x m output; a good implementation runs close to the matrix product alone.
Each case is grouped with a ``matmul`` case of the same shapes (NumPy on the CPU, cupy.matmul on the
GPU) so pytest-benchmark prints them side by side; ``extra_info`` holds the throughput (Gram entries per
second and the product's GFLOP/s).

* CPU: 5,000 x 1,024 blocks (d = 22, 300; dense float64 and float32; CSR for d = 300 at 5% density).
  The elementwise transform alone (NumPy in place vs the fused Numba twin, which gram.py picks per
  kind, dtype and size) is measured over tile shapes by ``benchmarks/gram_transform.py``.
* GPU (skipped without a CUDA device): the 50,000 x 1,024 RBF block at d = 22 (ijcnn1-like) and
  d = 300 (w8a-like), float32 and float64, against cupy.matmul of the same shapes. The device is
  synchronized inside the timed function, and one untimed call compiles the kernel first.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from gpusvm import GramSpec, get_backend, gpu_status

M = 1024  # columns of the block (a working set's worth of Gram rows)
SPEC = GramSpec("rbf", gamma=0.1)


def _data(n, d, dtype, seed=0, density=None):
    rng = np.random.default_rng(seed)
    if density is None:
        X = rng.random((n, d)).astype(dtype)
        return X, X[:M].copy()
    X = sp.random(n, d, density=density, format="csr", random_state=seed, dtype=dtype)
    return X, X[:M].copy()


def _record(benchmark, n, m, d):
    if benchmark.stats is None:  # --benchmark-disable: nothing was timed
        return
    t = benchmark.stats.stats.min
    benchmark.extra_info.update({
        "n": n, "m": m, "d": d,
        "gram_entries_per_s": n * m / t,
        "product_gflops": 2.0 * n * m * d / t / 1e9,
    })


def _gpu_backend():
    ok, why = gpu_status(0)
    if not ok:
        pytest.skip(f"no CUDA device available: {why}")
    return get_backend("gpu")


# ---- CPU ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("d, density", [(22, None), (300, None), (300, 0.05)], ids=["d22", "d300", "d300-csr"])
@pytest.mark.parametrize("op", ["gram", "matmul"])
def test_cpu_gram_block(benchmark, op, d, density, dtype):
    n = 5_000
    be = get_backend("cpu")
    X, Y = _data(n, d, dtype, density=density)
    benchmark.group = f"cpu {n}x{M} d={d}{' csr' if density else ''} {np.dtype(dtype).name}"
    if op == "gram":
        xs, ys = be.row_sqnorms(X, dtype), be.row_sqnorms(Y, dtype)

        def run():
            return be.gram(X, Y, SPEC, x_sqnorm=xs, y_sqnorm=ys, dtype=dtype)
    else:
        Yt = Y.T.toarray() if density else np.ascontiguousarray(Y.T)

        def run():
            return np.asarray(X @ Yt)

    out = benchmark.pedantic(run, rounds=5, warmup_rounds=1)
    assert out.shape == (n, M) and out.dtype == dtype
    if op == "gram":
        assert np.all((out >= 0) & (out <= 1.0 + 1e-6))
    _record(benchmark, n, M, d)


# ---- GPU ------------------------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("d", [22, 300], ids=["d22", "d300"])
@pytest.mark.parametrize("op", ["gram", "matmul"])
def test_gpu_gram_block_50k(benchmark, op, d, dtype):
    be = _gpu_backend()
    import cupy as cp

    n = 50_000
    Xh, Yh = _data(n, d, dtype)
    X, Y = be.asarray(Xh), be.asarray(Yh)
    benchmark.group = f"gpu rbf {n}x{M} d={d} {np.dtype(dtype).name}"
    if op == "gram":
        xs, ys = be.row_sqnorms(X, dtype), be.row_sqnorms(Y, dtype)

        def run():
            out = be.gram(X, Y, SPEC, x_sqnorm=xs, y_sqnorm=ys, dtype=dtype)
            be.sync()
            return out
    else:
        Yt = cp.ascontiguousarray(Y.T)

        def run():
            out = cp.matmul(X, Yt)
            be.sync()
            return out

    run()  # compile the kernel / warm cuBLAS outside the timing
    out = benchmark.pedantic(run, rounds=20, warmup_rounds=2)
    assert out.shape == (n, M)
    if op == "gram":
        # spot check against the CPU twin on a slice (the op's correctness is tested in tests/)
        ref = get_backend("cpu").gram(Xh[:256], Yh, SPEC, dtype=np.float64)
        tol = 1e-4 if dtype == np.float32 else 1e-10
        np.testing.assert_allclose(be.to_host(out[:256]), ref, atol=tol)
    _record(benchmark, n, M, d)

"""Gram blocks against scikit-learn's pairwise kernels, on both backends, dense and CSR."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics.pairwise import pairwise_kernels

from gpusvm import GramSpec, get_backend
from conftest import traced_peak

KINDS = ["linear", "poly", "rbf", "sigmoid"]
SHAPES = [  # (nx, ny, d)
    (1, 7, 5),  # one row
    (9, 1, 5),  # one column
    (13, 11, 1),  # one feature
    (6, 8, 40),  # more features than rows
    (57, 43, 9),  # several tiles in both directions under the small budget
]


def _reference(X, Y, spec):
    kw = {"linear": {}, "rbf": {"gamma": spec.gamma},
          "sigmoid": {"gamma": spec.gamma, "coef0": spec.coef0},
          "poly": {"gamma": spec.gamma, "coef0": spec.coef0, "degree": spec.degree}}[spec.kind]
    return pairwise_kernels(np.asarray(X, np.float64), np.asarray(Y, np.float64), metric=spec.kind, **kw)


def _data(nx, ny, d, seed, density=None):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(nx, d))
    Y = rng.normal(size=(ny, d))
    if density is not None:
        X[rng.random(X.shape) > density] = 0
        Y[rng.random(Y.shape) > density] = 0
    return X, Y


def _on(be, A, fmt, dtype):
    A = A.astype(dtype)
    if fmt == "csr":
        A = sp.csr_matrix(A)
    elif fmt == "F":
        A = np.asfortranarray(A)
    return be.asarray(A)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("fmt", ["C", "F", "csr", "mixed", "csr-sparse", "mixed-sparse"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gram_matches_sklearn(backend, kind, shape, fmt, dtype):
    # density 0.5: the CPU densifies the CSR tiles (gram.CPU_DENSIFY_MIN_DENSITY); 0.05 ("-sparse"):
    # it multiplies CSR by dense
    nx, ny, d = shape
    density = None if fmt in ("C", "F") else (0.05 if fmt.endswith("-sparse") else 0.5)
    X, Y = _data(nx, ny, d, seed=nx * 100 + ny, density=density)
    spec = GramSpec(kind, gamma=0.7 / d, coef0=0.3, degree=3)
    ref = _reference(X, Y, spec)
    fmt = fmt.removesuffix("-sparse")
    Xb = _on(backend, X, "csr" if fmt == "mixed" else fmt, dtype)
    Yb = _on(backend, Y, "C" if fmt == "mixed" else fmt, dtype)
    # a budget of a few hundred bytes forces many tiles in both directions
    K = backend.to_host(backend.gram(Xb, Yb, spec, max_bytes=37 * np.dtype(dtype).itemsize))
    assert K.shape == (nx, ny) and K.dtype == dtype
    if dtype == np.float64:
        np.testing.assert_allclose(K, ref, rtol=1e-10, atol=1e-12)
    else:
        np.testing.assert_allclose(K, ref, rtol=1e-5, atol=1e-5 * max(1.0, np.abs(ref).max()))


@pytest.mark.parametrize("fmt", ["C", "csr"])
def test_gram_sparse_by_dense_and_dense_by_sparse(backend, fmt):
    X, Y = _data(20, 15, 30, seed=3, density=0.3)
    spec = GramSpec("rbf", gamma=0.05)
    ref = _reference(X, Y, spec)
    Xb = _on(backend, X, "C", np.float64)
    Yb = _on(backend, Y, "csr", np.float64)
    K = backend.to_host(backend.gram(Xb, Yb, spec, max_bytes=300))
    np.testing.assert_allclose(K, ref, rtol=1e-10)


def test_gram_symmetric_default_and_precomputed_norms(backend):
    X, _ = _data(31, 1, 6, seed=5)
    spec = GramSpec("rbf", gamma=0.4)
    Xb = backend.asarray(X)
    K = backend.gram(Xb, None, spec)
    sq = backend.row_sqnorms(Xb)
    K2 = backend.gram(Xb, Xb, spec, x_sqnorm=sq, y_sqnorm=sq, max_bytes=64)
    np.testing.assert_allclose(backend.to_host(K), _reference(X, X, spec), rtol=1e-10)
    np.testing.assert_allclose(backend.to_host(K2), backend.to_host(K), rtol=1e-12)
    # RBF distances are clipped at 0, so the diagonal never exceeds 1 and equals it to rounding
    diag = np.diag(backend.to_host(K))
    assert (diag <= 1.0).all()
    np.testing.assert_allclose(diag, 1.0, rtol=0, atol=1e-12)


def test_gram_output_dtype_and_feature_mismatch(backend):
    X, Y = _data(5, 4, 3, seed=1)
    spec = GramSpec("linear")
    K = backend.gram(backend.asarray(X), backend.asarray(Y), spec, dtype=np.float32)
    assert backend.to_host(K).dtype == np.float32
    with pytest.raises(ValueError, match="features"):
        backend.gram(backend.asarray(X), backend.asarray(Y[:, :2]), spec)


@pytest.mark.parametrize("xsp", [False, True])
def test_tile_shapes_respect_budget(xsp):
    from gpusvm._backend.ops.gram import _tile_shape

    for nx, ny, d, budget, ysp in [(1000, 1000, 10, 8000, False), (7, 100000, 50, 80000, True),
                                    (100000, 3, 1, 800, False), (5, 5, 1000, 8, True),
                                    (3000, 200, 40, 80000, True), (200, 3000, 40, 80000, False)]:
        tr, tc = _tile_shape(nx, ny, d, 8, budget, ysp, xsp)
        assert 1 <= tr <= nx and 1 <= tc <= ny
        elems = tr * tc + (tc * d if ysp else 0) + (tr * d if xsp else 0)
        # within budget unless a single row/column alone exceeds it
        assert elems * 8 <= budget or (tr == 1 and (tc == 1 or not ysp))
        if budget >= 80000:  # and a tile that is not needlessly small
            assert elems * 8 > budget // 4 or (tr == nx and tc == ny)


@pytest.mark.parametrize("density, dense_product", [(0.5, True), (0.02, False)])
def test_cpu_gram_densifies_dense_enough_csr(monkeypatch, density, dense_product):
    """A CSR side at least CPU_DENSIFY_MIN_DENSITY dense goes through BLAS as a dense tile; a sparser
    one through CSR @ dense (both sparse: Y is densified either way)."""
    from gpusvm._backend import get_backend
    from gpusvm._backend.ops.gram import CPU_DENSIFY_MIN_DENSITY, densify_for_gram

    assert 0.02 < CPU_DENSIFY_MIN_DENSITY <= 0.5
    be = get_backend("cpu")
    X, Y = _data(40, 30, 50, seed=7, density=density)
    seen = []
    real_dot = type(be).dot
    monkeypatch.setattr(type(be), "dot", lambda self, a, b: seen.append(sp.issparse(a)) or real_dot(self, a, b))
    spec = GramSpec("rbf", gamma=0.02)
    for A, B in [(sp.csr_matrix(X), sp.csr_matrix(Y)), (sp.csr_matrix(X), Y), (X, sp.csr_matrix(Y))]:
        seen.clear()
        K = be.gram(A, B, spec, max_bytes=2000)
        np.testing.assert_allclose(K, _reference(X, Y, spec), rtol=1e-10, atol=1e-14)
        assert len(seen) > 1 and (not any(seen) if dense_product else all(seen))
    Xs = sp.csr_matrix(X)
    assert isinstance(densify_for_gram(be, Xs), np.ndarray) == dense_product
    assert densify_for_gram(be, Xs, max_bytes=8) is Xs  # too large for the budget: kept sparse
    assert densify_for_gram(be, X) is X


@pytest.mark.parametrize("kwargs, param", [
    ({"kind": "laplacian"}, "kernel"),
    ({"kind": "rbf", "gamma": 0.0}, "gamma"),
    ({"kind": "rbf", "gamma": -1.0}, "gamma"),
    ({"kind": "rbf", "gamma": float("nan")}, "gamma"),
    ({"kind": "poly", "degree": 0}, "degree"),
    ({"kind": "poly", "degree": 2.5}, "degree"),
    ({"kind": "sigmoid", "coef0": float("inf")}, "coef0"),
])
def test_gram_spec_rejects_bad_hyperparameters(kwargs, param):
    with pytest.raises(ValueError, match=f"'{param}' parameter") as exc:
        GramSpec(**kwargs)
    bad = next(iter(kwargs.values())) if param == "kernel" else kwargs.get(param)
    assert repr(bad) in str(exc.value)


@pytest.mark.parametrize("kind", KINDS)
def test_gram_large_tile(backend, kind):
    # 300 x 300 = 90,000 values per tile: above the Numba twin's parallel threshold
    X, Y = _data(300, 300, 7, seed=11)
    spec = GramSpec(kind, gamma=0.1, coef0=0.2, degree=2)
    K = backend.to_host(backend.gram(backend.asarray(X), backend.asarray(Y), spec))
    np.testing.assert_allclose(K, _reference(X, Y, spec), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind", ["poly", "rbf", "sigmoid"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("rows", [3, 300])  # serial and parallel Numba builds
def test_cpu_transforms_agree(kind, dtype, rows):
    """Both CPU transforms (NumPy in place, fused Numba) give the gram values, whichever the rule picks;
    F-ordered products (dense x CSR tiles) and strided destinations included."""
    from gpusvm import get_backend
    from gpusvm._backend.ops.gram import _cpu_fused, _transform_numpy

    be = get_backend("cpu")
    X, Y = _data(rows, 301, 6, seed=rows)
    X, Y = X.astype(dtype), Y.astype(dtype)
    spec = GramSpec(kind, gamma=0.2, coef0=0.4, degree=3)
    ref = _reference(X, Y, spec)
    xn, yn = (X * X).sum(1), (Y * Y).sum(1)
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == np.float64 else dict(rtol=2e-4, atol=2e-5)
    for order in ("C", "F"):
        prod = np.asarray(X @ Y.T, order=order)
        out = np.full((rows, 400), -7.0, dtype=dtype)
        dst = out[:, 50:351]  # a strided view, as gram writes its tiles
        T = dst.dtype.type
        _cpu_fused(rows * 301 >= 1 << 16)(prod, dst, xn, yn, spec.code, T(spec.gamma), T(spec.coef0), spec.degree)
        np.testing.assert_allclose(dst, ref, **tol)
        dst[...] = 0
        _transform_numpy(be, prod.copy(order="A"), dst, xn, yn, spec)
        np.testing.assert_allclose(dst, ref, **tol)
        assert np.all(out[:, :50] == -7.0) and np.all(out[:, 351:] == -7.0)  # nothing outside the tile


def test_cpu_transform_rule_picks_numba_for_large_float64_poly():
    """The rule's one Numba case runs and is correct: a float64 poly tile of 2**20 elements."""
    from gpusvm import get_backend
    from gpusvm._backend.ops import gram as gram_op

    assert gram_op._cpu_uses_numba("poly", np.dtype(np.float64), 1 << 20)
    assert not gram_op._cpu_uses_numba("poly", np.dtype(np.float32), 1 << 20)
    assert not gram_op._cpu_uses_numba("rbf", np.dtype(np.float64), 1 << 24)
    be = get_backend("cpu")
    X, Y = _data(1024, 1024, 4, seed=5)
    spec = GramSpec("poly", gamma=0.3, coef0=0.5, degree=3)
    K = be.gram(X, Y, spec, dtype=np.float64)
    np.testing.assert_allclose(K, _reference(X, Y, spec), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("degree", [1, 2, 9])
def test_cpu_poly_degrees(degree):
    """NumPy's poly transform: repeated multiplication up to degree 8, np.power above."""
    from gpusvm import get_backend

    X, Y = _data(20, 30, 4, seed=degree)
    spec = GramSpec("poly", gamma=0.2, coef0=0.7, degree=degree)
    K = get_backend("cpu").gram(X, Y, spec)
    np.testing.assert_allclose(K, _reference(X, Y, spec), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind", ["linear", "rbf"])
def test_gram_of_wide_sparse_data_stays_sparse(backend, kind):
    """Both sides CSR and wide (d far above the rows and WIDE_MIN_FEATURES): a sparse @ sparse product
    (right values), not a dense copy of each 1,000,000-wide row (which took 1 GB in SVC's prediction)."""
    from gpusvm._backend.ops.gram import WIDE_MIN_FEATURES, densify_pays

    rng = np.random.default_rng(11)
    nx, ny, d, nnz = 60, 90, 1_000_000, 6
    assert not densify_pays(d, nx) and densify_pays(WIDE_MIN_FEATURES, 10) and densify_pays(5000, 6000)

    def wide(n):
        cols = rng.integers(0, 40, size=(n, nnz))
        cols[:, ::2] = rng.integers(0, d, size=(n, nnz // 2))
        return sp.csr_matrix((rng.normal(size=n * nnz), (np.repeat(np.arange(n), nnz), cols.ravel())), shape=(n, d))

    X, Y = wide(nx), wide(ny)
    spec = GramSpec(kind, gamma=0.3)
    used = np.union1d(X.indices, Y.indices)  # the reference on the columns that hold values
    ref = _reference(X[:, used].toarray(), Y[:, used].toarray(), spec)
    Xb, Yb = backend.asarray(X), backend.asarray(Y)
    K, peak = traced_peak(lambda: backend.to_host(backend.gram(Xb, Yb, spec, dtype=np.float64)))
    np.testing.assert_allclose(K, ref, rtol=1e-10, atol=1e-12)
    if not backend.is_gpu:  # (device memory is not traced)
        assert peak < 20 * 2**20, f"peak {peak / 2**20:.0f} MB"


def test_parallel_transform_from_threads_under_numba_workqueue_layer():
    """The parallel Numba transform (float64 poly tiles of 2**20 elements and more) is reached from our own
    threads (n_jobs, prediction blocks) at once; Numba's workqueue threading layer, its fallback without
    TBB or OpenMP, aborted the process on concurrent launches. The calls now take turns (a fresh process:
    the layer is fixed at the first parallel launch)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    code = ("import numpy as np\n"
            "from concurrent.futures import ThreadPoolExecutor\n"
            "from gpusvm import GramSpec, get_backend\n"
            "be = get_backend('cpu')\n"
            "rng = np.random.default_rng(0)\n"
            "A, B = rng.normal(size=(1100, 5)), rng.normal(size=(1000, 5))\n"
            "spec = GramSpec('poly', gamma=0.1, coef0=1.0, degree=3)\n"
            "ref = be.gram(A, B, spec, dtype=np.float64)\n"
            "with ThreadPoolExecutor(4) as ex:\n"
            "    outs = list(ex.map(lambda _: be.gram(A, B, spec, dtype=np.float64), range(24)))\n"
            "import numba\n"
            "assert numba.threading_layer() == 'workqueue'\n"
            "assert all(np.array_equal(o, ref) for o in outs)\n"
            "print('ok')\n")
    env = {**os.environ, "NUMBA_THREADING_LAYER": "workqueue"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.returncode == 0 and out.stdout.strip() == "ok", (out.returncode, out.stderr[-2000:])


def test_serial_and_parallel_transforms_keep_their_own_numba_cache():
    """Numba's disk cache keys a function's entries by signature, not by its parallel flag, and both builds
    of the fused transform came from one function: the build compiled first served both from the cache
    (small tiles launched the thread pool, or large tiles ran on one thread). Each process, the first one
    compiling and the second one loading from the cache, must run each build as built."""
    import subprocess
    import sys
    from pathlib import Path

    code = ("import numpy as np, numba\n"
            "import gpusvm._backend.ops.gram as G\n"
            "def layer():\n"
            "    try:\n"
            "        return numba.threading_layer()\n"
            "    except ValueError:\n"
            "        return None\n"
            "prod = np.ones((64, 64)); dst = np.empty_like(prod); xn = np.zeros(1)\n"
            "G._cpu_fused(False)(prod, dst, xn, xn, 1, 0.1, 1.0, 3)\n"
            "assert layer() is None, 'the serial build launched the thread pool'\n"
            "G._cpu_fused(True)(prod, dst, xn, xn, 1, 0.1, 1.0, 3)\n"
            "assert layer() is not None, 'the parallel build ran without the thread pool'\n"
            "print('ok')\n")
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                             cwd=Path(__file__).resolve().parents[1])
        assert out.returncode == 0 and out.stdout.strip() == "ok", (out.returncode, out.stderr[-2000:])


def test_feature_variance_of_dense_host_x_without_a_temporary_of_its_size():
    """gamma="scale"'s X.var() formed X - X.mean() whole (X's size in float64, twice float32 X's):
    SVC, BudgetSVC and DCSVC paid it at every fit. feature_variance now sums the squared deviations by
    NumPy's own pairwise splits over small blocks: X.var() to the bit, for C- and F-ordered float64 and
    float32 X, at a peak of a few blocks (20,000 x 200 float64: 1.00x -> 0.02x X's size)."""
    from gpusvm import get_backend
    from gpusvm._gram import feature_variance

    cpu = get_backend("cpu")
    rng = np.random.default_rng(4)
    X = rng.normal(size=(5000, 200)) * 3.0 + 7.3  # 8 MB
    for Z in (X, np.asfortranarray(X[:700, :50]), X[:900].astype(np.float32), X[:3, :5], X[:, :1] * 1e5,
              X.reshape(-1)[:200_009].reshape(-1, 1)):  # (blocks split unevenly)
        # (C order: F-ordered X as scikit-learn, which converts X to C order before X.var())
        assert feature_variance(cpu, Z) == float(np.ascontiguousarray(Z).var(dtype=np.float64))
    var, peak = traced_peak(lambda: feature_variance(cpu, X))
    assert peak < 0.1 * X.nbytes, f"peak {peak / X.nbytes:.2f}x X's size"
    strided = X[:, ::2]  # neither C- nor F-contiguous: X.var itself
    assert feature_variance(cpu, strided) == float(strided.var(dtype=np.float64))


def test_feature_variance_does_not_depend_on_the_memory_order_of_x():
    """gamma="scale" of F-ordered X (and of a data frame, which np.asarray often gives F-ordered) was
    NumPy's X.var() in memory order, an ulp away from the C-ordered X's in about a quarter of random
    problems, so the same data gave different models (BudgetSVC: decision values 5e-3 apart, after its
    merges amplified the ulp). It is now the C-ordered X.var(), as scikit-learn's SVC computes it."""
    import pandas as pd
    import scipy.sparse as sp

    from gpusvm import BudgetSVC, get_backend
    from gpusvm._gram import feature_variance

    cpu = get_backend("cpu")
    rng = np.random.default_rng(9)
    n, d, k = (int(v) for v in (rng.integers(30, 301), rng.integers(1, 21), rng.integers(2, 5)))
    X = rng.integers(-3, 4, size=(n, d)).astype(np.float64)  # (the fuzzer's case: 144 x 18, 4 classes)
    y = rng.integers(0, k, n)
    y[:k] = np.arange(k)
    assert feature_variance(cpu, np.asfortranarray(X)) == feature_variance(cpu, X) == float(X.var())
    for dtype in (np.float64, np.float32):
        for shape in ((3000, 70), (70_001, 3), (5, 40_000)):  # (several blocks, rows across block edges)
            Z = rng.normal(size=shape).astype(dtype) * 3.0 + 7.3
            want = float(Z.var(dtype=np.float64))
            assert feature_variance(cpu, np.asfortranarray(Z)) == feature_variance(cpu, Z) == want
    kw = dict(budget=20, random_state=0, device="cpu")
    ref = BudgetSVC(**kw).fit(X, y)
    for Z in (np.asfortranarray(X), pd.DataFrame(X), pd.DataFrame(X, columns=[f"f{j}" for j in range(d)])):
        m = BudgetSVC(**kw).fit(Z, y)
        np.testing.assert_array_equal(m.dual_coef_, ref.dual_coef_)
        np.testing.assert_array_equal(m.support_vectors_, ref.support_vectors_)
    assert feature_variance(cpu, sp.csr_matrix(X)) == pytest.approx(float(X.var()), rel=1e-14)


@pytest.mark.parametrize("kind", ["rbf", "linear", "sigmoid", "poly"])
def test_cpu_gram_of_one_tile_writes_the_product_into_its_output(kind):
    """A CPU gram block of one tile computes its product into the output and transforms it there, not
    into a temporary of the output's size: the traced peak of a 200 x 10,000 float64 block (16 MB) was
    2.0x its size, now 1.0x (SVC's decision_function on 20,000 x 200: 1.06x -> 0.54x X's size; DCSVC's
    k-means assignment on it: 2.54x -> 1.49x). The values are the product-then-transform ones to the
    bit (poly keeps its temporary: its NumPy transform needs the product apart)."""
    from gpusvm import get_backend
    from gpusvm._backend.ops.gram import _transform_cpu

    cpu = get_backend("cpu")
    rng = np.random.default_rng(9)
    A, B = rng.normal(size=(200, 30)), rng.normal(size=(10_000, 30))
    spec = GramSpec(kind, 0.05, coef0=0.5, degree=3)
    cpu.gram(A[:5], B[:5], spec)  # (compilation)
    K, peak = traced_peak(lambda: cpu.gram(A, B, spec, dtype=np.float64))
    ref = np.empty_like(K)
    norms = (np.einsum("ij,ij->i", A, A), np.einsum("ij,ij->i", B, B)) if kind == "rbf" else (None, None)
    _transform_cpu(cpu, A @ B.T, ref, *norms, spec)
    np.testing.assert_array_equal(K, ref)
    if kind != "poly":
        assert peak < 1.4 * K.nbytes, f"peak {peak / K.nbytes:.2f}x the block's size"


@pytest.mark.parametrize("kind", ["rbf", "poly", "linear", "sigmoid"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sample_gram_cpu_equals_the_gram_op(kind, dtype):
    """sample_gram_cpu (the float32 check's 64-row Gram without the driver) gives be.gram's float64 values
    to the bit, in full and as the packed upper triangle."""
    from gpusvm._backend.ops.gram_errors import sample_gram_cpu, upper_indices

    be = get_backend("cpu")
    S = np.random.default_rng(3).normal(size=(64, 7)).astype(dtype)
    spec = GramSpec(kind, 0.3, coef0=0.5, degree=3)
    sq = be.row_sqnorms(S, np.float64) if kind == "rbf" else None
    want = be.gram(S, S, spec, x_sqnorm=sq, y_sqnorm=sq, dtype=np.float64)
    np.testing.assert_array_equal(sample_gram_cpu(be, S, spec, sq), want)
    np.testing.assert_array_equal(sample_gram_cpu(be, S, spec, sq, upper_only=True), want[upper_indices(64)])


def test_gpu_puts_f_ordered_x_in_c_order_so_gamma_scale_is_the_c_ordered_ones(gpu_backend):
    """On the GPU, X.var() (gamma="scale") of an F-ordered X summed in memory order, an ulp away from
    the C-ordered X's (the CPU test above: 144 x 18); check_X now makes one C-ordered device copy."""
    from gpusvm import SVC
    from gpusvm._gram import feature_variance
    from gpusvm._validation import check_X

    rng = np.random.default_rng(9)
    n, d = (int(v) for v in (rng.integers(30, 301), rng.integers(1, 21)))
    X = rng.integers(-3, 4, size=(n, d)).astype(np.float64)
    XF = check_X(np.asfortranarray(X), gpu_backend)
    assert XF.flags.c_contiguous
    assert feature_variance(gpu_backend, XF) == feature_variance(gpu_backend, check_X(X, gpu_backend))
    assert feature_variance(gpu_backend, check_X(gpu_backend.xp.asfortranarray(gpu_backend.asarray(X)),
                                                 gpu_backend)) == feature_variance(gpu_backend, XF)
    y = (X[:, 0] + X[:, -1] > 0).astype(int)
    y[:2] = (0, 1)
    ref = SVC(device="gpu").fit(X, y)
    m = SVC(device="gpu").fit(np.asfortranarray(X), y)
    assert m._gamma == ref._gamma
    np.testing.assert_array_equal(gpu_backend.to_host(m.dual_coef_), gpu_backend.to_host(ref.dual_coef_))


def test_rbf_gram_of_a_huge_gamma_warns_of_no_overflow():
    """With gamma = 1e308 the RBF exponent -gamma d overflows to -inf for d > 1.8, which exp turns into the 0.0 it
    rounds to anyway: the gram is right, but NumPy's "overflow encountered in multiply" RuntimeWarning leaked to
    the user at every prediction (BudgetSVC, SVC). Now none; the values are exp's of the clipped exponents."""
    import warnings

    from gpusvm import BudgetSVC

    rng = np.random.default_rng(3)
    A, B = rng.normal(size=(20, 4)), rng.normal(size=(30, 4))
    cpu = get_backend("cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        K = cpu.gram(A, B, GramSpec("rbf", 1e308), dtype=np.float64)
        y = np.where(A[:, 0] > 0, 1, -1)
        BudgetSVC(gamma=1e308, budget=5, random_state=0, device="cpu").fit(A, y).predict(B)
    d = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
    assert np.all(K[d > 1e-300] == 0.0) and np.all(np.isfinite(K))

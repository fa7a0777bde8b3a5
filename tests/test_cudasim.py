"""The CPU emulator of the CUDA kernels (tests/cudasim) catches what it claims to catch.

These run in the default suite (they need g++, not a GPU, and do not install the stand-in CuPy); the GPU
tests themselves run on the emulator with ``GPUSVM_CUDASIM=1 python -m pytest -m gpu`` (see README).
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import cudasim

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not found (the emulator compiles with it)")

SRC = r"""
// gpusvm:instantiate block_sum<double>
template <typename T>
__global__ void block_sum(const T* x, long long n, T* out) {
    __shared__ T red[32];
    T v = 0;
    for (long long i = threadIdx.x; i < n; i += blockDim.x) v += x[i];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        T s = 0;
        for (int w = 0; w < (int)(blockDim.x + 31) / 32; ++w) s += red[w];
        out[blockIdx.x] = s;
    }
}

// neighbour read without a barrier between the write and the read: a race on a GPU
__global__ void racy_shift(const double* x, double* y) {
    extern __shared__ double buf[];
    buf[threadIdx.x] = x[threadIdx.x];
    y[threadIdx.x] = threadIdx.x > 0 ? buf[threadIdx.x - 1] : 0.0;
}

__global__ void fixed_shift(const double* x, double* y) {
    extern __shared__ double buf[];
    buf[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    y[threadIdx.x] = threadIdx.x > 0 ? buf[threadIdx.x - 1] : 0.0;
}

// half of the block waits at a barrier the other half never reaches
__global__ void divergent_barrier(double* y) {
    if (threadIdx.x < 16) __syncthreads();
    y[threadIdx.x] = 1.0;
}

// reads dynamic shared memory nobody wrote
__global__ void uninit_read(double* y) {
    extern __shared__ double buf[];
    y[threadIdx.x] = buf[threadIdx.x];
}

// accumulates into a static shared variable it never initialises (garbage on a GPU)
__global__ void uninit_static(double* y) {
    __shared__ double acc;
    if (threadIdx.x == 0) acc += 1.0;
    __syncthreads();
    y[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
"""
NAMES = ["block_sum<double>", "racy_shift", "fixed_shift", "divergent_barrier", "uninit_read", "uninit_static"]


@pytest.fixture(scope="module")
def mod():
    m = cudasim.RawModule(code=SRC, name_expressions=NAMES)
    m.compile()
    return m


def dev(a):
    return cudasim.asarray(a)


def test_block_reduction_with_shuffles_and_shared_memory(mod):
    x = np.random.default_rng(0).random(1000)
    out = dev(np.zeros(3))
    for threads in (32, 96, 256):
        mod.get_function("block_sum<double>")((3,), (threads,), (dev(x), np.int64(1000), out))
        np.testing.assert_allclose(out.get(), x.sum(), rtol=1e-12)


@pytest.mark.parametrize("order", ["forward", "reverse"])
def test_missing_barrier_shows_up_under_one_schedule_order(mod, monkeypatch, order):
    monkeypatch.setenv("GPUSVM_CUDASIM_ORDER", order)
    x = dev(np.arange(64, dtype=np.float64) + 1.0)
    want = np.concatenate([[0.0], np.arange(63) + 1.0])
    y = dev(np.zeros(64))
    mod.get_function("fixed_shift")((1,), (64,), (x, y), shared_mem=64 * 8)
    np.testing.assert_array_equal(y.get(), want)
    mod.get_function("racy_shift")((1,), (64,), (x, y), shared_mem=64 * 8)
    # forward order: thread t-1 ran before thread t and the race goes unseen; reverse: t reads the
    # 0xFF fill (NaN) that thread t-1 has not overwritten yet
    assert np.array_equal(y.get(), want) == (order == "forward")


def test_divergent_barrier_is_an_error(mod):
    with pytest.raises(RuntimeError, match="returned while others|deadlock"):
        mod.get_function("divergent_barrier")((1,), (32,), (dev(np.zeros(32)),))


def test_shared_memory_starts_as_nan_in_every_block(mod):
    y = dev(np.zeros(8))
    mod.get_function("uninit_read")((1,), (8,), (y,), shared_mem=8 * 8)
    assert np.isnan(y.get()).all()
    y = dev(np.zeros(3 * 8))
    mod.get_function("uninit_static")((3,), (8,), (y,))
    assert np.isnan(y.get()).all()


def test_launch_arguments_are_checked_against_the_signature(mod):
    k = mod.get_function("block_sum<double>")
    x, out = dev(np.ones(10)), dev(np.zeros(1))
    with pytest.raises(TypeError, match="takes long long but got int"):
        k((1,), (32,), (x, np.int32(10), out))  # int32 where the kernel reads 8 bytes
    with pytest.raises(TypeError, match="reads const double\\* but the array is float32"):
        k((1,), (32,), (dev(np.ones(10, np.float32)), np.int64(10), out))
    with pytest.raises(TypeError, match="NumPy \\(host\\) array"):
        k((1,), (32,), (np.ones(10), np.int64(10), out))
    with pytest.raises(TypeError, match="takes 3 arguments"):
        k((1,), (32,), (x, np.int64(10)))
    with pytest.raises(ValueError, match="invalid block"):
        k((1,), (2048,), (x, np.int64(10), out))
    with pytest.raises(ValueError, match="opt-in"):
        mod.get_function("racy_shift")((1,), (8,), (x, out), shared_mem=64 * 1024)


def test_device_arrays_refuse_to_mix_with_host_arrays():
    d = dev(np.ones(3))
    with pytest.raises(TypeError, match="mixes a NumPy"):
        d + np.ones(3)
    with pytest.raises(TypeError, match="mixes a NumPy"):
        np.concatenate([d, np.ones(3)])
    assert type(d + 1.0) is cudasim.ndarray and type(d.get()) is np.ndarray
    assert type(d.sum()) is not np.ndarray  # reductions to a scalar are fine either way


_OOB_SCRIPT = r"""
import os, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import cudasim
src = '''
// writes one element past the end of y
__global__ void off_by_one(double* y, long long n) { y[threadIdx.x + 1] = 1.0; (void)n; }
'''
m = cudasim.RawModule(code=src, name_expressions=["off_by_one"])
y = cudasim.asarray(np.zeros(32))
m.get_function("off_by_one")((1,), (32,), (y, np.int64(32)))
print("no error")
"""


def test_address_sanitizer_mode_catches_out_of_bounds_writes(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    asan = subprocess.run(["g++", "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    if not asan or not Path(asan).is_file():
        pytest.skip("libasan not found next to g++")
    env = dict(os.environ, GPUSVM_CUDASIM_ASAN="1", LD_PRELOAD=asan, ASAN_OPTIONS="detect_leaks=0",
               GPUSVM_CUDASIM_CACHE=str(tmp_path))
    script = tmp_path / "oob.py"
    script.write_text(_OOB_SCRIPT)
    res = subprocess.run([sys.executable, str(script), str(Path(cudasim.__file__).parents[1])], env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode != 0 and "no error" not in res.stdout
    assert "heap-buffer-overflow" in res.stderr


def test_device_sorts_are_stable_as_cupys():
    # CuPy's sorts are always stable; merge_partners relies on it (ties go to the lower index), and
    # NumPy's default quicksort, which the stand-in delegates to, does not keep that order
    x = np.random.default_rng(0).integers(0, 3, 5000).astype(float)
    stable = np.argsort(x, kind="stable")
    assert (np.argsort(x) != stable).any()  # what the stand-in must not do
    a = cudasim.asarray(x)
    np.testing.assert_array_equal(cudasim.asnumpy(cudasim._stable_argsort(a)), stable)
    np.testing.assert_array_equal(cudasim.asnumpy(a.argsort()), stable)
    with pytest.raises(ValueError, match="only takes kind=None or 'stable'"):
        cudasim._stable_argsort(a, kind="quicksort")


def test_stand_in_cupy_has_only_cupy14_names():
    # the stand-in forwards to NumPy, so a NumPy-only function would pass here and fail on a GPU
    cp = cudasim._make_modules()["cupy"]
    a = cp.asarray(np.arange(6.0))
    assert float(cp.sum(a)) == 15.0 and cp.float64 is np.float64 and cp.inf == np.inf
    for name in ("nanpercentile", "vecdot", "logspace_like", "linalg_norm"):  # NumPy has the first two
        with pytest.raises(AttributeError, match=rf"cudasim: cupy has no attribute {name} \(not in CuPy 14's API\)"):
            getattr(cp, name)
    assert not hasattr(cp, "__path__")  # not NumPy's: the stand-in is no package
    assert {"argpartition", "count_nonzero", "bincount", "asnumpy", "RawModule"} <= cudasim.TOP_LEVEL


def test_stand_in_cupy_refuses_numpy_only_keywords():
    cp = cudasim._make_modules()["cupy"]
    a = cp.asarray(np.array([3.0, 1.0, 2.0]))
    assert float(cp.max(a, axis=0)) == 3.0 and float(cp.maximum(a, 2.0, out=a)[1]) == 2.0
    with pytest.raises(TypeError, match="cupy.max\\(\\) got the keyword argument 'initial'"):
        cp.max(a, initial=0.0)
    with pytest.raises(TypeError, match="cupy.sum\\(\\) got the keyword argument 'where'"):
        cp.sum(a, where=a > 1)
    with pytest.raises(TypeError, match="cupy.exp\\(\\) got the keyword argument 'where'"):
        cp.exp(a, where=a > 1)  # CuPy ufuncs take out, dtype and casting only
    with pytest.raises(TypeError, match="cupy.isin\\(\\) got the keyword argument 'kind'"):
        cp.isin(a, a, kind="table")
    with pytest.raises(TypeError, match="cupy.ndarray.max\\(\\) got the keyword argument 'initial'"):
        a.max(initial=0.0)
    with pytest.raises(TypeError, match="cupy.ndarray.sum\\(\\) got the keyword argument 'where'"):
        a.sum(where=a > 1)
    assert float(a.sum(axis=0, dtype=np.float64)) == 7.0
    with pytest.raises(AttributeError, match="cupy.ndarray has no attribute resize"):
        a.resize(4)


def test_stand_in_cupy_joins_only_device_arrays():
    cp = cudasim._make_modules()["cupy"]
    a = cp.asarray(np.array([3.0, 1.0]))
    assert cp.concatenate([a, a]).shape == (4,) and cp.stack([a[0], a[1]]).shape == (2,)
    for join, parts in (("concatenate", [a, [1.0]]), ("stack", [a[0], 2.0]), ("vstack", [a, (1.0, 2.0)])):
        with pytest.raises(TypeError, match=f"cupy.{join} of something other than CuPy arrays"):
            getattr(cp, join)(parts)


def test_numpy_functions_on_device_arrays_go_through_cupy14():
    # CuPy's __array_function__ hands numpy.X(cupy array) to cupy.X with the same keywords
    cp = cudasim._make_modules()["cupy"]
    a = cp.asarray(np.array([3.0, 1.0, 2.0]))
    assert float(np.max(a)) == 3.0 and type(np.sort(a)) is cudasim.ndarray
    with pytest.raises(TypeError, match="cupy.max \\(as numpy.max\\)\\(\\) got the keyword argument 'initial'"):
        np.max(a, initial=0.0)
    with pytest.raises(TypeError, match="CuPy 14 has no cupy.nanpercentile"):
        np.nanpercentile(a, 50)

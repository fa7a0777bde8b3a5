"""Shared fixtures: one test body over both backends, and the LIBSVM data sets when present."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

if os.environ.get("GPUSVM_CUDASIM") == "1":  # GPU tests on the CPU emulator (tests/cudasim), no GPU needed
    from cudasim import install as _install_cudasim

    _install_cudasim()

from gpusvm import get_backend, gpu_status
from gpusvm.datasets import find_data_dir, load_svmlight


def _gpu_reason():
    ok, why = gpu_status(0)
    return None if ok else why


@pytest.fixture(params=["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def backend(request):
    """The backend to run on: "cpu" always, "gpu" when a CUDA device answers (skipped otherwise)."""
    if request.param == "gpu":
        why = _gpu_reason()
        if why:
            pytest.skip(f"no CUDA device available: {why}")
    return get_backend(request.param)


def pytest_collection_modifyitems(config, items):
    # a test that takes the gpu_backend fixture is a GPU test: mark it, so that `-m gpu` (the CI's
    # emulator step, run_gpu.sh) selects it with the tests of the backend fixture's "gpu" case
    for item in items:
        if "gpu_backend" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.gpu)


@pytest.fixture
def gpu_backend():
    """The GPU backend, or skip. Tests that take it are marked ``gpu`` (see above)."""
    why = _gpu_reason()
    if why:
        pytest.skip(f"no CUDA device available: {why}")
    return get_backend("gpu")


@pytest.fixture(scope="session")
def data_dir():
    """../shared/data (or $GPUSVM_DATA); skips the test when absent."""
    d = find_data_dir()
    if d is None:
        pytest.skip("LIBSVM data sets not found (../shared/data or $GPUSVM_DATA)")
    return d


@functools.lru_cache(maxsize=None)
def _load(path, n_features):
    return load_svmlight(path, n_features=n_features)



def traced_peak(fn):
    """``(fn(), peak)``: what ``fn`` returns and the peak of the host memory that ``tracemalloc`` traced
    while it ran, in bytes (NumPy's buffers are traced; device memory is not)."""
    import tracemalloc

    tracemalloc.start()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

# tests that cap a child process's address space (RLIMIT_AS) read its size from /proc: Linux only
needs_address_limit = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                         reason="an address-space limit (RLIMIT_AS) and /proc")

_ADDRESS_LIMIT_PRELUDE = (
    "import resource\n"
    "def limit_address_space(extra):\n"
    "    # cap the address space at its current size plus extra bytes (allocations beyond fail)\n"
    "    global _AS_BEFORE\n"
    "    vm = next(int(v.split()[1]) * 1024 for v in open('/proc/self/status') if v.startswith('VmSize'))\n"
    "    _AS_BEFORE = resource.getrlimit(resource.RLIMIT_AS)\n"
    "    resource.setrlimit(resource.RLIMIT_AS, (vm + extra, _AS_BEFORE[1]))\n"
    "def lift_address_limit():\n"
    "    resource.setrlimit(resource.RLIMIT_AS, _AS_BEFORE)\n"
    "def halfplane_problem(n):\n"
    "    # n noisy points in 2-d, labels by the sign of the first feature; an RBF spec and unit costs\n"
    "    import numpy as np\n"
    "    from gpusvm import GramSpec\n"
    "    rng = np.random.default_rng(0)\n"
    "    X = rng.normal(size=(n, 2))\n"
    "    y = np.where(X[:, 0] + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)\n"
    "    return X, y, GramSpec('rbf', gamma=0.5), np.ones(n)\n")


def run_under_address_limit(code, timeout=300):
    """Run ``code`` in a fresh Python process from the repository root, with ``limit_address_space(extra)``,
    ``lift_address_limit()`` and ``halfplane_problem(n)`` defined for it; return the
    ``subprocess.CompletedProcess`` (text output)."""
    return subprocess.run([sys.executable, "-c", _ADDRESS_LIMIT_PRELUDE + code], capture_output=True, text=True,
                          timeout=timeout, cwd=Path(__file__).resolve().parents[1])


def load_subset(data_dir, name, n, *, n_features=None, seed=0, dense=False):
    """A stratified random subset of ``n`` rows of LIBSVM file ``name`` (e.g. "a9a.xz")."""
    from sklearn.model_selection import train_test_split

    X, y = _load(str(data_dir / name), n_features)
    if n < X.shape[0]:
        X, _, y, _ = train_test_split(X, y, train_size=n, stratify=y, random_state=seed)
    return (X.toarray() if dense else X), y


@pytest.fixture(scope="session")
def rng():
    return np.random.default_rng(0)

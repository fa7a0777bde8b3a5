"""Backend selection, import hygiene, the fused-op registry and the CUDA source loader."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import gpusvm
from conftest import needs_address_limit, run_under_address_limit
from gpusvm import get_backend, gpu_status
from gpusvm._backend import AUTO_GPU_MIN_SAMPLES, array_library, registered_ops
from gpusvm._backend.cuda_source import declared_instantiations, kernel_files, kernel_source

ROOT = Path(__file__).resolve().parents[1]


def _fake_cupy_array():
    # array_library decides from the type's module, so a stand-in type from module "cupy" is enough
    # to exercise the mixed-input rule on a machine without CuPy.
    return type("ndarray", (), {"__module__": "cupy", "shape": (3, 2)})()


def test_import_does_not_import_cupy_or_numba():
    code = ("import sys, gpusvm; gpusvm.get_backend('cpu'); "
            "bad = [m for m in ('cupy', 'cupyx', 'numba') if m in sys.modules]; "
            "assert not bad, bad; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_cpu_backend_and_auto_on_small_numpy():
    be = get_backend("cpu")
    assert be.name == "cpu" and be.xp is np and not be.is_gpu
    X = np.zeros((10, 3))
    assert get_backend("auto", X).name == "cpu"
    assert get_backend(None, X).name == "cpu"


def test_auto_rule_threshold_is_documented():
    doc = sys.modules["gpusvm._backend"].__doc__
    assert "AUTO_GPU_MIN_SAMPLES" in doc and "20,000" in doc


def test_auto_uses_cpu_without_gpu_even_when_large():
    if gpu_status()[0]:
        pytest.skip("a GPU is present: auto picks it for large inputs")
    X = np.zeros((AUTO_GPU_MIN_SAMPLES, 1))
    assert get_backend("auto", X).name == "cpu"


def test_gpu_request_without_gpu_says_why():
    ok, why = gpu_status()
    if ok:
        pytest.skip("a GPU is present")
    with pytest.raises(RuntimeError, match="no GPU is usable") as exc:
        get_backend("gpu")
    assert why in str(exc.value)


@pytest.mark.parametrize("device", ["tpu", "gpu:x", 3, "cpu0"])
def test_bad_device_names(device):
    with pytest.raises(ValueError, match="'device' parameter"):
        get_backend(device)


def test_mixed_numpy_and_cupy_inputs_raise_type_error():
    X = np.zeros((3, 2))
    with pytest.raises(TypeError, match="NumPy/SciPy") as exc:
        get_backend("auto", X, _fake_cupy_array())
    assert "CuPy" in str(exc.value)
    with pytest.raises(TypeError):
        get_backend("cpu", sp.csr_matrix(X), _fake_cupy_array())


def test_array_library():
    assert array_library(None) is None
    assert array_library(np.zeros(2)) == "numpy"
    assert array_library(sp.csr_matrix((2, 2))) == "numpy"
    assert array_library([1, 2]) == "numpy"
    assert array_library(_fake_cupy_array()) == "cupy"


def test_every_fused_op_has_a_cpu_twin():
    ops = registered_ops()
    assert "gram" in ops
    for name, devices in ops.items():
        assert "cpu" in devices, f"fused op {name!r} has no CPU implementation"


def test_unknown_op_is_attribute_error():
    with pytest.raises(AttributeError, match="no_such_op"):
        get_backend("cpu").no_such_op


def test_row_sqnorms_dense_and_sparse():
    be = get_backend("cpu")
    X = np.arange(12.0).reshape(4, 3)
    np.testing.assert_allclose(be.row_sqnorms(X), (X ** 2).sum(1))
    np.testing.assert_allclose(be.row_sqnorms(sp.csr_matrix(X)), (X ** 2).sum(1))


# ---- CUDA sources -----------------------------------------------------------------------------

def test_every_kernel_file_declares_instantiations():
    files = kernel_files()
    assert "gram.cu" in files
    for f in files:
        names = declared_instantiations(f)
        src = kernel_source(f)
        for n in names:
            base = n.split("<")[0]
            decl = rf"__global__\s+(?:__launch_bounds__\([^)]*\)\s+)?void\s+(?:__launch_bounds__\([^)]*\)\s+)?{base}\s*\("
            assert re.search(decl, src), f"{f}: no kernel {base}"


def test_kernels_launched_with_large_literal_blocks_declare_launch_bounds():
    """A kernel launched with more than 256 threads per block needs ``__launch_bounds__`` at least that large:
    without it ptxas may give it more registers than such a block can have (64 at 1,024 threads), and the
    launch fails ("too many resources requested"), as alfpgm_subproblem's did; pwss_assign and pwss_pairs,
    launched with 1,024 threads, had none. Checked: each op function that asks for one kernel and launches
    it with a literal block size."""
    decl = re.compile(r"__global__\s+(?:__launch_bounds__\((\d+)[^)]*\)\s+)?void\s+"
                      r"(?:__launch_bounds__\((\d+)[^)]*\)\s+)?(\w+)\s*\(")
    bounds = {}
    for f in kernel_files():
        for a, b, name in decl.findall(kernel_source(f)):
            bounds[name] = int(a or b) if (a or b) else None
    asks = re.compile(r'get_kernel\(\s*"[\w.]+"\s*,\s*f?"(\w+)<')
    launch = re.compile(r"\bfn\(\s*\([^()]*\)\s*,\s*\((\d+),?\)")
    checked = []
    for py in (ROOT / "gpusvm" / "_backend" / "ops").glob("*.py"):
        for func in re.split(r"\n(?=def |@register_op)", py.read_text(encoding="utf-8")):
            names, sizes = set(asks.findall(func)), [int(t) for t in launch.findall(func)]
            if len(names) != 1 or not sizes or max(sizes) <= 256:
                continue
            (name,) = names
            checked.append(name)
            assert bounds[name] is not None and bounds[name] >= max(sizes), (
                f"{py.name}: {name} is launched with {max(sizes)} threads but declares "
                f"__launch_bounds__({bounds[name]})")
    assert {"pwss_assign", "pwss_pairs"} <= set(checked)


def test_every_kernel_python_asks_for_is_declared():
    pattern = re.compile(r'get_kernel\(\s*"([\w.]+)"\s*,\s*f?"(\w+)<')
    found = 0
    for py in (ROOT / "gpusvm").rglob("*.py"):
        for fname, kname in pattern.findall(py.read_text(encoding="utf-8")):
            found += 1
            assert fname in kernel_files(), f"{py.name} asks for missing file {fname}"
            decl = {d.split("<")[0] for d in declared_instantiations(fname)}
            assert kname in decl, f"{py.name} asks for {kname} which {fname} does not declare"
    assert found >= 1


def test_get_kernel_refuses_undeclared_names():
    from gpusvm._backend.cuda_source import get_kernel

    with pytest.raises(KeyError, match="does not declare"):
        get_kernel("gram.cu", "gram_transform<int>")


def test_includes_are_inlined():
    src = kernel_source("gram.cu")
    assert '#include "common.cuh"' not in src
    assert "gpusvm_gram_value" in src


# ---- GPU twins ----------------------------------------------------------------------------------

def test_gpu_gram_matches_cpu_twin(gpu_backend):
    from gpusvm import GramSpec

    cpu = get_backend("cpu")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 17))
    for kind in ("linear", "poly", "rbf", "sigmoid"):
        spec = GramSpec(kind, gamma=0.05, coef0=0.1, degree=2)
        for dtype, rtol in ((np.float64, 1e-12), (np.float32, 1e-5)):
            Kc = cpu.gram(X.astype(dtype), X[:50].astype(dtype), spec)
            Kg = gpu_backend.to_host(gpu_backend.gram(gpu_backend.asarray(X, dtype), gpu_backend.asarray(X[:50], dtype), spec))
            np.testing.assert_allclose(Kg, Kc, rtol=rtol, atol=rtol)


def test_gpu_backend_reports_device(gpu_backend):
    assert gpu_backend.is_gpu
    assert isinstance(gpu_backend.device_name, str) and gpu_backend.device_name
    assert gpusvm.get_backend("auto", gpu_backend.asarray(np.zeros((2, 2)))).is_gpu


def test_auto_rule_counts_rows_of_plain_lists(monkeypatch):
    """A nested list of >= AUTO_GPU_MIN_SAMPLES rows goes to the GPU as an array of that size would."""
    import gpusvm._backend as backend_mod

    sentinel = object()
    monkeypatch.setattr(backend_mod, "gpu_status", lambda dev_id=None: (True, ""))
    monkeypatch.setattr(backend_mod, "_gpu_backend", lambda dev_id: sentinel)
    n = backend_mod.AUTO_GPU_MIN_SAMPLES
    assert get_backend("auto", [[0.0, 1.0]] * n) is sentinel
    assert get_backend("auto", np.zeros((n, 2))) is sentinel
    assert get_backend("auto", [[0.0, 1.0]] * (n - 1)).name == "cpu"
    assert get_backend("auto", np.zeros((n - 1, 2))).name == "cpu"


def _fake_cupy_error(name, message):
    cls = type(name, (Exception,), {"__module__": "cupy.cuda.memory"})
    return cls(message)


class _FakeGpu(gpusvm._backend.base.Backend):
    name = "gpu"
    device_id = 3

    @property
    def device_name(self):
        return "Fake GPU"

    def memory_info(self):
        return 2 * 2**30, 80 * 2**30


def test_memory_guard_translates_device_oom():
    import gpusvm._backend.base as base

    be = _FakeGpu()
    with pytest.raises(MemoryError, match=r"SVC\.fit ran out of GPU memory on Fake GPU \(device 3; "
                                          r"2\.00 GiB free of 80\.00 GiB\).*lower cache_size"):
        with be.memory_guard("SVC.fit", hint="lower cache_size"):
            raise _fake_cupy_error("OutOfMemoryError", "Out of memory allocating 1,024 bytes")
    runtime = type("CUDARuntimeError", (Exception,), {"__module__": "cupy_backends.cuda.api.runtime"})
    assert base.is_device_oom(runtime("cudaErrorMemoryAllocation: out of memory"))
    assert not base.is_device_oom(runtime("cudaErrorInvalidValue: invalid argument"))
    assert not base.is_device_oom(MemoryError("host"))  # NumPy's own: not translated
    # other errors, and any error on the CPU backend, pass through unchanged
    with pytest.raises(ValueError, match="unrelated"):
        with be.memory_guard("SVC.fit"):
            raise ValueError("unrelated")
    from gpusvm._backend.numpy_backend import CPU

    err = _fake_cupy_error("OutOfMemoryError", "x")
    with pytest.raises(type(err)):
        with CPU.memory_guard("SVC.fit"):
            raise err


def test_device_memory_guard_as_decorator_without_backend():
    from gpusvm._backend.base import device_memory_guard

    @device_memory_guard("LinearSVC.fit", hint="use float32 input")
    def fit():
        raise _fake_cupy_error("OutOfMemoryError", "Out of memory allocating 8 bytes")

    with pytest.raises(MemoryError, match=r"LinearSVC\.fit ran out of GPU memory.*use float32 input; or fit "
                                          r"on device='cpu'"):
        fit()
    with pytest.raises(MemoryError):  # a fresh guard on every call
        fit()


def test_host_memory_guard_names_what_to_lower_and_keeps_numpy_message():
    from gpusvm._backend.base import device_memory_guard, host_memory_guard

    with pytest.raises(MemoryError, match=r"^BudgetSVC\.fit ran out of host memory: Unable to allocate 7\.47 GiB "
                                          r"\(numpy\)\. The store is big\. To fit, lower budget\.$") as info:
        with host_memory_guard("BudgetSVC.fit", hint="lower budget", detail="The store is big"):
            raise MemoryError("Unable to allocate 7.47 GiB (numpy)")
    assert str(info.value.__cause__) == "Unable to allocate 7.47 GiB (numpy)"
    # device out-of-memory errors are device_memory_guard's, and an explained error is not wrapped twice
    err = _fake_cupy_error("OutOfMemoryError", "x")
    with pytest.raises(type(err)):
        with host_memory_guard("SVC.fit", hint="h"):
            raise err

    @device_memory_guard("DCSVC.fit", hint="lower sample_size")
    @host_memory_guard("DCSVC.fit", hint="lower sample_size")
    def fit(exc):
        with host_memory_guard("inner", hint="h2"):
            raise exc

    with pytest.raises(MemoryError, match=r"^inner ran out of host memory: numpy\. To fit, h2\.$"):
        fit(MemoryError("numpy"))
    with pytest.raises(MemoryError, match=r"DCSVC\.fit ran out of GPU memory.*lower sample_size"):
        fit(_fake_cupy_error("OutOfMemoryError", "Out of memory allocating 8 bytes"))
    with pytest.raises(ValueError, match="unrelated"):
        fit(ValueError("unrelated"))


@needs_address_limit
def test_cpu_estimators_out_of_host_memory_name_the_parameter_to_lower():
    """A parameter-sized array that the host cannot allocate raised NumPy's bare "Unable to allocate 7.47
    GiB for an array with shape (501, 2000000)": BudgetSVC's support-vector store (budget x n_features),
    LinearSVC's coef_ (n_classes x n_features), DCSVC's kernel k-means sample Gram (sample_size**2). Each
    now says which estimator ran out, what holds how much, and what to lower, with NumPy's message kept."""
    code = (
        "import warnings\n"
        "import numpy as np, scipy.sparse as sp\n"
        "from gpusvm import BudgetSVC, DCSVC, LinearSVC\n"
        "warnings.simplefilter('ignore')\n"
        "rng = np.random.default_rng(0)\n"
        "def wide(n, d, k, ncls):\n"
        "    rows, cols = np.repeat(np.arange(n), k), rng.integers(0, d, n * k)\n"
        "    return sp.csr_matrix((rng.random(n * k), (rows, cols)), shape=(n, d)), np.arange(n) % ncls\n"
        "Xb, yb = wide(600, 2_000_000, 5, 2)\n"
        "Xl, yl = wide(200, 2_000_000, 5, 100)\n"
        "Xd = rng.normal(size=(16000, 2)); yd = (Xd[:, 0] > 0).astype(int)\n"
        "BudgetSVC(budget=50, device='cpu').fit(Xb[:100], yb[:100])  # (compiled before the limit)\n"
        "LinearSVC(device='cpu', max_iter=5).fit(Xl[:, :1000], yl)\n"
        "DCSVC(device='cpu', n_levels=1, sample_size=500).fit(Xd[:1000], yd[:1000])\n"
        "limit_address_space(2**30)\n"
        "for fit in (lambda: BudgetSVC(budget=500, device='cpu').fit(Xb, yb),\n"
        "            lambda: LinearSVC(device='cpu').fit(Xl, yl),\n"
        "            lambda: DCSVC(device='cpu', n_levels=1, sample_size=16000).fit(Xd, yd)):\n"
        "    try:\n"
        "        fit()\n"
        "        print('fitted')\n"
        "    except MemoryError as exc:\n"
        "        assert 'Unable to allocate' in str(exc.__cause__), repr(exc.__cause__)\n"
        "        print(exc)\n")
    out = run_under_address_limit(code)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 3, out.stdout
    assert re.match(r"BudgetSVC\.fit ran out of host memory: Unable to allocate 7\.47 GiB .*budget \+ 1 = 501 dense "
                    r"support vectors of n_features = 2,000,000 .*To fit, lower budget", lines[0]), lines[0]
    assert re.match(r"LinearSVC\.fit ran out of host memory: Unable to allocate 1\.49 GiB .*coef_ holds n_classes x "
                    r"n_features = 100 x 2,000,000 .*To fit, reduce n_features", lines[1]), lines[1]
    assert re.match(r"DCSVC\.fit ran out of host memory: Unable to allocate 1\.91 GiB .*sample_size x sample_size "
                    r".*To fit, lower sample_size", lines[2]), lines[2]


def test_auto_with_cupy_inputs_uses_the_device_holding_them(monkeypatch):
    """CuPy data on device 1 (or a cupyx matrix whose .data is there) selects gpu:1, not device 0."""
    import types

    import gpusvm._backend as backend_mod

    asked = []
    monkeypatch.setattr(backend_mod, "gpu_status", lambda dev_id=0: asked.append(dev_id) or (True, ""))
    monkeypatch.setattr(backend_mod, "_gpu_backend", lambda dev_id: ("gpu", dev_id))
    on1 = type("ndarray", (), {"__module__": "cupy", "device": types.SimpleNamespace(id=1), "shape": (3, 2)})()
    sparse_on2 = type("csr_matrix", (), {"__module__": "cupyx.scipy.sparse",
                                         "data": types.SimpleNamespace(device=types.SimpleNamespace(id=2)),
                                         "shape": (3, 2)})()
    assert get_backend("auto", on1) == ("gpu", 1)
    assert get_backend("auto", sparse_on2) == ("gpu", 2)
    assert get_backend("gpu:3", on1) == ("gpu", 3)  # an explicit device is used as given
    assert asked == [1, 2, 3]


def test_cupy_device_id_of_sparse_matrix_whose_device_raises():
    # cupyx.scipy.sparse matrices (CuPy 14) raise NotImplementedError from .device; their .data array
    # knows the device. Seen on an H100: LinearSVC.decision_function on a cupyx CSR matrix failed.
    from types import SimpleNamespace

    from gpusvm._backend import _cupy_device_id

    class SparseLike:
        data = SimpleNamespace(device=SimpleNamespace(id=3))

        @property
        def device(self):
            raise NotImplementedError

    assert _cupy_device_id(SparseLike()) == 3
    assert _cupy_device_id(SimpleNamespace(device=SimpleNamespace(id=2))) == 2
    assert _cupy_device_id(object()) == 0


def test_auto_gpu_false_keeps_large_host_inputs_on_cpu(monkeypatch):
    import gpusvm._backend as backend_mod

    sentinel = object()
    monkeypatch.setattr(backend_mod, "gpu_status", lambda dev=0: (True, ""))
    monkeypatch.setattr(backend_mod, "_gpu_backend", lambda dev: sentinel)
    X = np.zeros((AUTO_GPU_MIN_SAMPLES, 2))
    assert backend_mod.get_backend("auto", X) is sentinel
    assert backend_mod.get_backend("auto", X, auto_gpu=False).name == "cpu"
    assert backend_mod.get_backend("gpu", X, auto_gpu=False) is sentinel  # an explicit request wins


@pytest.mark.parametrize("kind, n_features, solver, expect", [
    ("linear", 5, "newton", True), ("linear", 5, "dcd", False), ("linear", 5, "avsf", False),
    ("linear", 5, "auto", True),  # squared hinge, n >= d: scikit-learn's primal choice
    ("budget", 22, None, True), ("budget", 123, None, False),
])
def test_estimators_ask_auto_for_gpu_only_where_it_was_measured_faster(monkeypatch, kind, n_features, solver,
                                                                       expect):
    import gpusvm.budget
    import gpusvm.linear
    from gpusvm import BudgetSVC, LinearSVC

    asked = []

    class Stop(Exception):
        pass

    def spy(device, *arrays, auto_gpu=True):
        asked.append(auto_gpu)
        raise Stop

    X = np.random.default_rng(0).random((40, n_features))
    y = np.arange(40) % 2
    if kind == "linear":
        monkeypatch.setattr(gpusvm.linear, "get_backend", spy)
        est = LinearSVC(solver=solver, loss="squared_hinge")
    else:
        monkeypatch.setattr(gpusvm.budget, "get_backend", spy)
        est = BudgetSVC(budget=10)
    with pytest.raises(Stop):
        est.fit(X, y)
    assert asked == [expect]


def test_cpu_models_take_cupyx_csr_and_both_backends_read_it_as_cupy_does(gpu_backend):
    """The CPU emulator's cupyx matrix is also a SciPy matrix (real CuPy's is not): the backends test for
    cupyx first, so that a CPU model's predict moves it to the host (DCSVC.decision_function on a cupyx CSR
    matrix raised in NumPy's bincount of device arrays) and the GPU backend keeps it as it is, as on a GPU."""
    import cupy as cp
    import cupyx.scipy.sparse as csp
    import scipy.sparse as sp

    from gpusvm import DCSVC, SVC

    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 4))
    X[rng.random(X.shape) < 0.4] = 0.0
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    Xd = csp.csr_matrix(sp.csr_matrix(X))
    host = gpusvm.get_backend("cpu").asarray(Xd)
    assert sp.issparse(host) and type(host.data) is np.ndarray
    assert gpusvm.get_backend("cpu").asarray(Xd, np.float32).dtype == np.float32
    assert gpu_backend.asarray(Xd) is Xd  # already on the device: no host round trip
    for est in (SVC(device="cpu"), DCSVC(device="cpu", n_levels=1, n_clusters_per_level=2, min_cluster_size=0,
                                         random_state=0)):
        est.fit(X, y)
        for level in ((None, 1) if isinstance(est, DCSVC) else (None,)):
            kw = {} if level is None else {"level": level}
            got = est.decision_function(Xd, **kw)
            assert isinstance(got, cp.ndarray)
            np.testing.assert_allclose(cp.asnumpy(got), est.decision_function(X, **kw), rtol=1e-12, atol=1e-12)

"""cudasim: gpusvm's GPU code paths on a machine without a GPU, for tests only.

:func:`install` puts a stand-in ``cupy`` (and ``cupyx.scipy.sparse``) into ``sys.modules``. Arrays are
NumPy arrays of a subclass that plays the CuPy array (its type's module is ``cupy``, so gpusvm's
``array_library`` sees device arrays); ordinary array math runs in NumPy. ``RawModule`` compiles the
CUDA C sources of ``kernels/`` with g++ against ``cudasim.h``, which runs every CUDA thread of a block as
a fiber on one host thread (see the header for what is and is not modelled), and ``RawKernel`` calls
them through ctypes.

What it checks that plain NumPy tests cannot:

* the CUDA kernels' logic, thread indexing, shared-memory use and warp/block reductions, against the
  NumPy twins (the same twin tests a GPU session runs);
* every launch's arguments against the kernel's C++ signature: an ``int`` passed where the kernel takes
  ``long long``, a float64 array where it reads ``float``, a host (NumPy) array, a missing argument;
* mixing host and device arrays in array math (``cupy_array + numpy_array``), which CuPy refuses;
* CuPy 14's API: the stand-in ``cupy`` has only the top-level names real CuPy 14 has, its functions, ufuncs
  and array methods only the keyword arguments CuPy 14 accepts (``cupy14_api``, generated from CuPy 14.2.0's
  sources); a NumPy-only name (``cupy.some_numpy_function``) or keyword (``where=``, ``initial=``,
  ``equal_nan=``) raises here as on a GPU, where plain forwarding to NumPy would have passed;
* barriers that not every thread reaches, threads that leave while others wait at ``__syncthreads``,
  dynamic shared memory read before it is written (filled with NaN bytes), dynamic shared memory over
  48 KB without the opt-in attribute.

Nothing here measures or stands for GPU behaviour: speed, the memory model, float rounding of the real
device (g++ contracts a*b+c into FMAs when the host has FMA, as nvcc does, but not in the same places)
and cuBLAS/cuSPARSE are not modelled. Set ``GPUSVM_CUDASIM_ORDER=reverse`` to run the threads of each
block in reverse order between barriers (a missing ``__syncthreads`` then changes results).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import types
from pathlib import Path

import numpy as np
import scipy.sparse as _sp

from .cupy14_api import FUNCTION_KWARGS, MATMUL_KWARGS, NDARRAY, NDARRAY_KWARGS, TOP_LEVEL, UFUNC_KWARGS

HEADER = Path(__file__).with_name("cudasim.h")
DEVICE_NAME = "cudasim (CPU emulation, not a GPU)"
_MAX_SHARED_DEFAULT = 48 * 1024
_MAX_SHARED_OPTIN = 227 * 1024

# --------------------------------------------------------------------------------------------------
# device arrays
# --------------------------------------------------------------------------------------------------


def _is_host(x) -> bool:
    return type(x) is np.ndarray and x.ndim > 0


def _walk(obj, depth=0):
    if isinstance(obj, (list, tuple)) and depth < 3:
        for o in obj:
            yield from _walk(o, depth + 1)
    else:
        yield obj


def _refuse_mixing(args, what):
    if any(_is_host(a) for a in _walk(args)):
        raise TypeError(f"cudasim: {what} mixes a NumPy (host) array with CuPy (device) arrays; "
                        "CuPy refuses this (move the array with cupy.asarray or .get() first)")


def _wrap(res):
    if type(res) is np.ndarray:
        return res.view(ndarray)
    if isinstance(res, tuple):
        return tuple(_wrap(r) for r in res)
    if isinstance(res, list):
        return [_wrap(r) for r in res]
    return res


def _unwrap(x):
    if isinstance(x, ndarray):
        return x.view(np.ndarray)
    if isinstance(x, (list, tuple)):
        return type(x)(_unwrap(v) for v in x)
    return x


class ndarray(np.ndarray):
    """A device array: a NumPy array that refuses to mix with host arrays, as CuPy's does."""

    def get(self, stream=None, order="C", out=None):
        host = np.array(self.view(np.ndarray), order=order, copy=True)
        if out is not None:
            out[...] = host
            return out
        return host

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        _refuse_mixing(inputs, f"numpy.{ufunc.__name__}")
        if out is not None:
            _refuse_mixing(out, f"the out= of numpy.{ufunc.__name__}")
            kwargs["out"] = tuple(_unwrap(o) for o in out)
        res = getattr(ufunc, method)(*(_unwrap(i) for i in inputs), **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return _wrap(res)

    def __array_function__(self, func, types_, args, kwargs):
        _refuse_mixing(args, f"numpy.{func.__name__}")
        if func.__module__ == "numpy":
            # CuPy's __array_function__ hands numpy.X(device array) to cupy.X, or NumPy raises TypeError
            if func.__name__ not in TOP_LEVEL:
                raise TypeError(f"cudasim: numpy.{func.__name__} of a CuPy array: CuPy 14 has no cupy."
                                f"{func.__name__} to hand it to (NumPy raises TypeError)")
            if func.__name__ in FUNCTION_KWARGS:
                _check_kwargs(f"cupy.{func.__name__} (as numpy.{func.__name__})", kwargs,
                              FUNCTION_KWARGS[func.__name__])
        _refuse_mixing(tuple(kwargs.values()), f"numpy.{func.__name__}")
        return _wrap(func(*_unwrap(args), **{k: _unwrap(v) for k, v in kwargs.items()}))

    # CuPy sorts are always stable (its only algorithm; kind accepts None or "stable" only); NumPy's
    # default quicksort is not, and code that relies on CuPy's tie order (merge_partners: ties go to
    # the lower index) must see it here
    def argsort(self, axis=-1, kind=None):
        return _stable_argsort(self, axis=axis, kind=kind)

    def sort(self, axis=-1, kind=None):
        _check_kind(kind, "sort")
        self.view(np.ndarray).sort(axis=axis, kind="stable")

    def get_pointer(self):  # CuPy's; used by the emulator's kernel launches instead of NumPy's ctypes
        return self.view(np.ndarray).ctypes.data


ndarray.__module__ = "cupy"


def _check_kwargs(what, kwargs, accepted):
    bad = [k for k in kwargs if k not in accepted]
    if bad:
        raise TypeError(f"cudasim: {what}() got the keyword argument {bad[0]!r}, which CuPy 14 does not take "
                        f"(it takes {', '.join(accepted) or 'none'})")


def _refused_attr(name):
    def get(self):
        raise AttributeError(f"cudasim: cupy.ndarray has no attribute {name} (not in CuPy 14's API)")
    return property(get)


def _checked_method(name, accepted):
    base = getattr(np.ndarray, name)

    def method(self, *args, **kwargs):
        _check_kwargs(f"cupy.ndarray.{name}", kwargs, accepted)
        return base(self, *args, **kwargs)
    method.__name__ = name
    return method


def _model_ndarray_api():
    """Give the device array CuPy 14's attribute set: NumPy-only attributes raise AttributeError, and the
    methods CuPy defines take only the keywords CuPy's take."""
    for name in dir(np.ndarray):
        if name.startswith("_") or name in NDARRAY or name in ndarray.__dict__:
            continue
        setattr(ndarray, name, _refused_attr(name))
    for name, accepted in NDARRAY_KWARGS.items():
        if accepted is None or name in ndarray.__dict__ or not callable(getattr(np.ndarray, name, None)):
            continue
        setattr(ndarray, name, _checked_method(name, accepted))


_model_ndarray_api()


def _check_kind(kind, what):
    if kind not in (None, "stable"):
        raise ValueError(f"cudasim: cupy.{what} only takes kind=None or 'stable' (CuPy sorts are stable), "
                         f"got {kind!r}")


def _stable_argsort(a, axis=-1, kind=None):
    _check_kind(kind, "argsort")
    _refuse_mixing((a,), "cupy.argsort")
    return _wrap(np.argsort(_unwrap(a), axis=axis, kind="stable"))


def _stable_sort(a, axis=-1, kind=None):
    _check_kind(kind, "sort")
    _refuse_mixing((a,), "cupy.sort")
    return _wrap(np.sort(_unwrap(a), axis=axis, kind="stable"))


def asarray(a, dtype=None, order=None):
    if isinstance(a, ndarray):
        return a if dtype is None or a.dtype == np.dtype(dtype) else a.astype(dtype)
    return np.array(a, dtype=dtype, order=order or "K", copy=True).view(ndarray)


def array(a, dtype=None, copy=True, order="K", ndmin=0):
    return np.array(_unwrap(a), dtype=dtype, copy=copy, order=order, ndmin=ndmin).view(ndarray)


def ascontiguousarray(a, dtype=None):
    if not isinstance(a, ndarray):
        raise TypeError("cudasim: cupy.ascontiguousarray of a host array (CuPy would refuse it)")
    return np.ascontiguousarray(a.view(np.ndarray), dtype=dtype).view(ndarray)


def asnumpy(a, stream=None, order="C", out=None):
    if isinstance(a, ndarray):
        return a.get(order=order, out=out)
    return np.asarray(a, order=order)


def get_array_module(*args):
    return sys.modules["cupy"] if any(isinstance(a, (ndarray, csr_matrix)) for a in args) else np


# --------------------------------------------------------------------------------------------------
# sparse
# --------------------------------------------------------------------------------------------------


class csr_matrix(_sp.csr_matrix):
    """A cupyx CSR matrix: SciPy's, with device-array index/data views and device results."""

    def __init__(self, arg1, shape=None, dtype=None, copy=False, **kwargs):
        if isinstance(arg1, tuple):
            arg1 = tuple(_unwrap(a) if not isinstance(a, tuple) else tuple(_unwrap(b) for b in a) for a in arg1)
        elif isinstance(arg1, ndarray):
            arg1 = arg1.view(np.ndarray)
        elif isinstance(arg1, np.ndarray):
            raise TypeError("cudasim: cupyx csr_matrix of a NumPy (host) array")
        elif _sp.issparse(arg1) and not isinstance(arg1, csr_matrix):
            copy = True  # host to device: a copy, as CuPy makes
        super().__init__(arg1, shape=shape, dtype=dtype, copy=copy, **kwargs)

    def get(self, stream=None):
        return _sp.csr_matrix((np.array(self.data), np.array(self.indices), np.array(self.indptr)),
                              shape=self.shape)

    def __getattribute__(self, name):
        v = super().__getattribute__(name)
        if name in ("data", "indices", "indptr") and type(v) is np.ndarray:
            # device views for gpusvm (kernel arguments); SciPy's own methods get the plain arrays
            caller = sys._getframe(1).f_globals.get("__name__", "")
            if not caller.startswith("scipy"):
                return v.view(ndarray)
        return v

    def __getitem__(self, key):
        if isinstance(key, tuple):
            if any(_is_host(k) for k in key):
                raise TypeError("cudasim: indexing a cupyx matrix with a NumPy (host) array")
            key = tuple(_unwrap(k) for k in key)
        else:
            if _is_host(key):
                raise TypeError("cudasim: indexing a cupyx matrix with a NumPy (host) array")
            key = _unwrap(key)
        res = super().__getitem__(key)
        if _sp.issparse(res) and not isinstance(res, csr_matrix):
            return csr_matrix(res.tocsr())
        return _wrap(res) if isinstance(res, np.ndarray) else res

    def toarray(self, order=None, out=None):
        return _wrap(_sp.csr_matrix.toarray(self.get(), order=order))

    def _host_other(self, other):
        if _is_host(other):
            raise TypeError("cudasim: a cupyx sparse product with a NumPy (host) array")
        return other.get() if isinstance(other, csr_matrix) else _unwrap(other)

    def dot(self, other):
        return self @ other

    def __matmul__(self, other):
        res = self.get() @ self._host_other(other)
        return csr_matrix(res) if _sp.issparse(res) else _wrap(np.asarray(res))

    def __rmatmul__(self, other):
        res = self._host_other(other) @ self.get()
        return csr_matrix(res) if _sp.issparse(res) else _wrap(np.asarray(res))

    def tocsr(self, copy=False):
        return self.copy() if copy else self

    def transpose(self, axes=None, copy=False):
        # cupyx gives a csc_matrix, which this stand-in does not model: the CSR of the transpose instead
        # (what gpusvm asks for with ``X.T.tocsr()``)
        return csr_matrix(self.get().transpose().tocsr())


csr_matrix.__module__ = "cupyx.scipy.sparse"


def issparse(x) -> bool:
    return isinstance(x, csr_matrix)


# --------------------------------------------------------------------------------------------------
# kernels
# --------------------------------------------------------------------------------------------------

_EXTERN_SHARED = re.compile(
    r"extern\s+__shared__\s+(?:__align__\(\s*\d+\s*\)\s+)?([A-Za-z_][\w ]*?)\s+(\w+)\s*\[\s*\]\s*;")
_CODES = {np.dtype(np.float32): 1, np.dtype(np.float64): 2, np.dtype(np.int32): 3, np.dtype(np.int64): 4,
          np.dtype(np.uint32): 5, np.dtype(np.uint64): 6, np.dtype(np.bool_): 7, np.dtype(np.int8): 8,
          np.dtype(np.uint8): 8, np.dtype(np.int16): 10, np.dtype(np.uint16): 10}
_CTYPES = {1: ctypes.c_float, 2: ctypes.c_double, 3: ctypes.c_int32, 4: ctypes.c_int64, 5: ctypes.c_uint32,
           6: ctypes.c_uint64, 7: ctypes.c_bool, 8: ctypes.c_int8, 10: ctypes.c_int16}
_NAMES = {1: "float", 2: "double", 3: "int", 4: "long long", 5: "unsigned int", 6: "unsigned long long",
          7: "bool", 8: "char", 9: "(other)", 10: "short"}


def _code_name(code):
    if code >= 100:
        const = "const " if code >= 1000 else ""
        return f"{const}{_NAMES[code % 100]}*"
    return _NAMES[code]


def _cache_dir() -> Path:
    d = Path(os.environ.get("GPUSVM_CUDASIM_CACHE", Path(tempfile.gettempdir()) / f"gpusvm-cudasim-{os.getuid()}"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def _host_flags():
    flags = ["-ffp-contract=fast"]
    try:
        cpu = Path("/proc/cpuinfo").read_text()
        if re.search(r"^flags\s*:.*\bfma\b", cpu, re.M):
            flags.append("-mfma")  # contract a*b+c into FMAs as nvcc does (not at the same places)
    except OSError:
        pass
    return flags


_STATIC_SHARED = re.compile(r"(?<!extern )__shared__\s+([^;{}()]*?)\s*;")
_IDENT = re.compile(r"[A-Za-z_]\w*")


def _static_shared(m):
    """``__shared__ T a[32], b;`` -> the static variables plus one registration per name, so that the
    launcher refills them with 0xFF bytes before every block (GPU shared memory starts as garbage)."""
    parts = [p.strip() for p in m.group(1).split(",")]
    head = parts[0].split("[")[0].split()
    names = [head[-1]] + [_IDENT.match(p).group(0) for p in parts[1:]]
    regs = " ".join(f"static const bool cudasim_reg_{n} = cudasim::register_shared(&{n}, sizeof({n}));"
                    for n in names)
    return f"static {m.group(1)}; {regs}"


def build(code: str, names) -> Path:
    """Compile ``code`` (a kernels/*.cu source with includes inlined) with launchers for ``names``."""
    src = _EXTERN_SHARED.sub(r"\1* \2 = reinterpret_cast<\1*>(cudasim::dyn_smem);", code)
    src = _STATIC_SHARED.sub(_static_shared, src)
    parts = [src, "\n// ---- cudasim launchers ----\n",
             'extern "C" const char* cudasim_error() { return cudasim::error_msg; }\n']
    for i, name in enumerate(names):
        parts.append(
            f"static void** cudasim_args_{i};\n"
            f"static void cudasim_body_{i}() {{ cudasim::call(&{name}, cudasim_args_{i}); }}\n"
            f'extern "C" int cudasim_launch_{i}(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,'
            f" unsigned bz, unsigned long long shmem, void** args, int mode) {{\n"
            f"    cudasim_args_{i} = args;\n"
            f"    return cudasim::launch(dim3(gx, gy, gz), dim3(bx, by, bz), shmem, cudasim_body_{i}, mode);\n}}\n"
            f'extern "C" int cudasim_sig_{i}(int* codes, int cap) {{ return cudasim::signature(&{name}, codes, cap); }}\n')
    full = "".join(parts)
    flags = ["-std=c++20", "-O1", "-fPIC", "-shared", "-w", "-U_FORTIFY_SOURCE", *_host_flags()]
    if os.environ.get("GPUSVM_CUDASIM_ASAN") == "1":  # bounds checks; needs LD_PRELOAD of libasan (README)
        flags += ["-fsanitize=address", "-fno-omit-frame-pointer"]
    key = hashlib.sha256((full + HEADER.read_text() + " ".join(flags)).encode()).hexdigest()[:24]
    so = _cache_dir() / f"k_{key}.so"
    if not so.exists():
        cpp = so.with_suffix(".cpp")
        cpp.write_text(full, encoding="utf-8")
        tmp = so.with_suffix(f".{os.getpid()}.tmp")
        cmd = ["g++", *flags, "-include", str(HEADER), "-o", str(tmp), str(cpp)]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise RuntimeError(f"cudasim: g++ failed:\n{' '.join(cmd)}\n{res.stderr[-6000:]}")
        os.replace(tmp, so)
    return so


class RawKernel:
    def __init__(self, lib, index, name):
        self._lib = lib
        self.name = name
        self._launch = getattr(lib, f"cudasim_launch_{index}")
        self._launch.restype = ctypes.c_int
        self._launch.argtypes = [ctypes.c_uint] * 6 + [ctypes.c_ulonglong, ctypes.c_void_p, ctypes.c_int]
        sig = getattr(lib, f"cudasim_sig_{index}")
        sig.restype = ctypes.c_int
        codes = (ctypes.c_int * 64)()
        n = sig(codes, 64)
        self.signature = [int(codes[k]) for k in range(n)]
        self.shared_size_bytes = 0  # static shared memory is not measured by the emulator
        self.max_dynamic_shared_size_bytes = _MAX_SHARED_DEFAULT
        self.max_threads_per_block = 1024
        self.num_regs = 32

    def _convert(self, k, code, a):
        where = f"cudasim: {self.name}: argument {k}"
        if code >= 100:
            if isinstance(a, np.ndarray) and not isinstance(a, ndarray):
                raise TypeError(f"{where} is a NumPy (host) array; CuPy refuses host arrays as kernel arguments")
            if not isinstance(a, ndarray):
                raise TypeError(f"{where}: the kernel takes {_code_name(code)}, got {type(a).__name__}")
            want = code % 100
            got = _CODES.get(a.dtype)
            if got != want:
                raise TypeError(f"{where}: the kernel reads {_code_name(code)} but the array is {a.dtype}")
            return ctypes.c_void_p(a.get_pointer()), a
        if isinstance(a, ndarray) or isinstance(a, np.ndarray):
            raise TypeError(f"{where}: the kernel takes the scalar {_code_name(code)}, got an array")
        if isinstance(a, (bool, np.bool_)):
            got = 7
        elif isinstance(a, np.generic):
            got = _CODES.get(a.dtype, 9)
        elif isinstance(a, int):
            got = 4  # CuPy passes a Python int as a 64-bit integer
        elif isinstance(a, float):
            got = 2
        else:
            raise TypeError(f"{where}: unsupported argument type {type(a).__name__}")
        if got != code:
            raise TypeError(f"{where}: the kernel takes {_code_name(code)} but got {_code_name(got)} "
                            f"({type(a).__name__}); on the GPU this reads the wrong bytes")
        return _CTYPES[code](a), None

    def __call__(self, grid, block, args, shared_mem=0, stream=None):
        grid = tuple(grid) + (1,) * (3 - len(tuple(grid)))
        block = tuple(block) + (1,) * (3 - len(tuple(block)))
        args = tuple(args)
        if len(args) != len(self.signature):
            raise TypeError(f"cudasim: {self.name} takes {len(self.signature)} arguments, got {len(args)}")
        if min(grid) < 1 or grid[0] > 2**31 - 1 or grid[1] > 65535 or grid[2] > 65535:
            raise ValueError(f"cudasim: {self.name}: invalid grid {grid}")
        nthreads = block[0] * block[1] * block[2]
        if min(block) < 1 or nthreads > 1024 or block[2] > 64:
            raise ValueError(f"cudasim: {self.name}: invalid block {block}")
        shared_mem = int(shared_mem)
        if shared_mem > max(_MAX_SHARED_DEFAULT, self.max_dynamic_shared_size_bytes) or shared_mem > _MAX_SHARED_OPTIN:
            raise ValueError(f"cudasim: {self.name}: {shared_mem} bytes of dynamic shared memory need the "
                             "max_dynamic_shared_size_bytes opt-in (and at most 227 KB)")
        keep, ptrs = [], (ctypes.c_void_p * max(1, len(args)))()
        for k, (code, a) in enumerate(zip(self.signature, args)):
            val, owner = self._convert(k, code, a)
            keep.append((val, owner))
            ptrs[k] = ctypes.cast(ctypes.pointer(val), ctypes.c_void_p)  # the kernel reads *(A*)args[k]
        mode = 1 if os.environ.get("GPUSVM_CUDASIM_ORDER", "forward") == "reverse" else 0
        rc = self._launch(*grid, *block, shared_mem, ctypes.cast(ptrs, ctypes.c_void_p), mode)
        if rc != 0:
            self._lib.cudasim_error.restype = ctypes.c_char_p
            raise RuntimeError(f"cudasim: {self.name}: {self._lib.cudasim_error().decode()}")


class RawModule:
    def __init__(self, code=None, path=None, options=(), backend="nvrtc", translate_cucomplex=False,
                 enable_cooperative_groups=False, name_expressions=None, jitify=False):
        self.code = code
        self.options = options
        self.names = list(name_expressions or [])
        self._lib = None
        self._kernels = {}

    def compile(self, log_stream=None):
        if self._lib is None:
            self._lib = ctypes.CDLL(str(build(self.code, self.names)))

    def get_function(self, name):
        self.compile()
        if name not in self.names:
            raise KeyError(f"cudasim: {name} is not among the module's name_expressions")
        if name not in self._kernels:
            self._kernels[name] = RawKernel(self._lib, self.names.index(name), name)
        return self._kernels[name]


# --------------------------------------------------------------------------------------------------
# cupy.cuda
# --------------------------------------------------------------------------------------------------


class OutOfMemoryError(MemoryError):
    pass


OutOfMemoryError.__module__ = "cupy.cuda.memory"


class Device:
    def __init__(self, device=None):
        self.id = 0 if device is None else int(device)
        if self.id != 0:
            raise RuntimeError("cudasim: only device 0 exists")
        self.attributes = {"MaxSharedMemoryPerBlockOptin": _MAX_SHARED_OPTIN, "MaxThreadsPerBlock": 1024,
                           "MultiProcessorCount": 4, "WarpSize": 32}
        self.compute_capability = "90"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def use(self):
        pass

    def synchronize(self):
        pass


def _props(i=0):
    return {"name": DEVICE_NAME.encode(), "totalGlobalMem": 4 * 2**30, "sharedMemPerBlock": _MAX_SHARED_DEFAULT,
            "sharedMemPerBlockOptin": _MAX_SHARED_OPTIN, "multiProcessorCount": 4, "maxThreadsPerBlock": 1024,
            "warpSize": 32, "major": 9, "minor": 0}


class _Pool:
    def free_all_blocks(self):
        pass

    def used_bytes(self):
        return 0

    def total_bytes(self):
        return 0

    def set_limit(self, size=None, fraction=None):
        pass


_POOL = _Pool()


# CuPy's joins take only CuPy arrays (_core/_routines_manipulation.pyx, concatenate_method; stack and the
# others go through it), where NumPy converts lists and scalars. NumPy scalars pass: the stand-in's reductions
# and scalar indexing give them where CuPy gives 0-d device arrays
_JOINS = frozenset({"concatenate", "stack", "hstack", "vstack", "column_stack", "dstack", "concat"})


def _make_modules():
    cupy = types.ModuleType("cupy")
    cupy.__doc__ = __doc__
    cupy.__cudasim__ = True
    cupy.__version__ = "14.2.0+cudasim"  # the API modelled (cupy14_api)
    for name in ("ndarray", "asarray", "array", "ascontiguousarray", "asnumpy", "get_array_module",
                 "RawKernel", "RawModule"):
        setattr(cupy, name, globals()[name])
    cupy.argsort = _stable_argsort
    cupy.sort = _stable_sort
    cupy.get_default_memory_pool = lambda: _POOL
    cupy.get_default_pinned_memory_pool = lambda: _POOL

    def _getattr(name):
        if name not in TOP_LEVEL:
            if name.startswith("__"):
                raise AttributeError(f"module 'cupy' has no attribute {name!r}")
            raise AttributeError(f"cudasim: cupy has no attribute {name} (not in CuPy 14's API)")
        obj = getattr(np, name, None)
        if obj is None:
            raise AttributeError(f"cudasim: cupy.{name} is in CuPy 14's API but not modelled by cudasim")
        if callable(obj) and not isinstance(obj, type):
            accepted = (MATMUL_KWARGS if name == "matmul" else UFUNC_KWARGS if isinstance(obj, np.ufunc)
                        else FUNCTION_KWARGS.get(name))

            def fn(*args, **kwargs):
                _refuse_mixing(args, f"cupy.{name}")
                if accepted is not None:
                    _check_kwargs(f"cupy.{name}", kwargs, accepted)
                if name in _JOINS and args and not all(isinstance(a, (ndarray, np.generic)) for a in args[0]):
                    raise TypeError(f"cudasim: cupy.{name} of something other than CuPy arrays (a list, a Python "
                                    "scalar); CuPy raises 'Only cupy arrays can be concatenated'")
                return _wrap(obj(*_unwrap(args), **{k: _unwrap(v) for k, v in kwargs.items()}))
            fn.__name__ = name
            return fn
        return obj

    cupy.__getattr__ = _getattr
    extra = [n for n, v in vars(cupy).items() if not n.startswith("__") and n not in TOP_LEVEL]
    assert not extra, f"cudasim: the stand-in cupy sets names CuPy 14 lacks: {extra}"
    cuda = types.ModuleType("cupy.cuda")
    runtime = types.ModuleType("cupy.cuda.runtime")
    memory = types.ModuleType("cupy.cuda.memory")
    memory.OutOfMemoryError = OutOfMemoryError
    runtime.getDeviceCount = lambda: 1
    runtime.getDeviceProperties = _props
    runtime.memGetInfo = lambda: (4 * 2**30, 4 * 2**30)
    runtime.runtimeGetVersion = lambda: 12000
    runtime.driverGetVersion = lambda: 12000
    runtime.setDevice = lambda i: None
    runtime.getDevice = lambda: 0
    cuda.Device = Device
    cuda.runtime = runtime
    cuda.memory = memory
    cuda.OutOfMemoryError = OutOfMemoryError
    cuda.is_available = lambda: True
    cupy.cuda = cuda
    cupyx = types.ModuleType("cupyx")
    scipy_m = types.ModuleType("cupyx.scipy")
    sparse = types.ModuleType("cupyx.scipy.sparse")
    sparse.csr_matrix = csr_matrix
    sparse.issparse = issparse
    sparse.isspmatrix_csr = issparse
    cupyx.scipy = scipy_m
    scipy_m.sparse = sparse
    return {"cupy": cupy, "cupy.cuda": cuda, "cupy.cuda.runtime": runtime, "cupy.cuda.memory": memory,
            "cupyx": cupyx, "cupyx.scipy": scipy_m, "cupyx.scipy.sparse": sparse}


def install():
    """Put the emulated ``cupy``/``cupyx`` into ``sys.modules`` (before gpusvm first imports CuPy)."""
    if "cupy" in sys.modules and not getattr(sys.modules["cupy"], "__cudasim__", False):
        raise RuntimeError("cudasim: the real CuPy is already imported")
    sys.modules.update(_make_modules())


def active() -> bool:
    return getattr(sys.modules.get("cupy"), "__cudasim__", False)

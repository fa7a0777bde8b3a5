"""Loading the CUDA C sources of ``kernels/`` and compiling them with ``cupy.RawModule``.

Each ``.cu`` file declares the template instantiations it offers in comment lines of the form::

    // gpusvm:instantiate gram_transform<float>
    // gpusvm:instantiate gram_transform<double>

Python asks for kernels by those exact names (:func:`get_kernel` refuses any other), CuPy compiles
the module with those ``name_expressions`` on first use (NVRTC; CuPy caches binaries on disk) and we
memoize the module per (device, file, defines). :func:`nvcc_check` compiles the same instantiations
with ``nvcc -ptx`` for given architectures: CI runs it, so a kernel that does not compile fails CI
even on a machine without a GPU.

Local ``#include "x.cuh"`` lines are inlined from the same folder, so the source needs no include path
(which a zipped or wheel-installed package may not have).
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

_INSTANTIATE = re.compile(r"^\s*//\s*gpusvm:instantiate\s+(.+?)\s*$", re.M)
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$', re.M)


def _kernels_dir():
    """The folder holding the ``.cu`` files: the installed ``gpusvm.kernels`` package, or the
    source checkout's top-level ``kernels/`` when running from the tree (``PYTHONPATH=.``)."""
    try:
        root = resources.files("gpusvm.kernels")
        if root.joinpath("gram.cu").is_file():
            return root
    except ModuleNotFoundError:
        pass
    return Path(__file__).resolve().parents[2] / "kernels"


def kernel_files() -> list[str]:
    """Names of every ``.cu`` file that ships with gpusvm."""
    root = _kernels_dir()
    return sorted(p.name for p in root.iterdir() if p.name.endswith(".cu"))


def _read(name: str) -> str:
    return _kernels_dir().joinpath(name).read_text(encoding="utf-8")


@functools.lru_cache(maxsize=None)
def kernel_source(filename: str) -> str:
    """The source of ``filename`` with local includes inlined (each at most once)."""
    seen: set[str] = set()

    def expand(text: str) -> str:
        def repl(m):
            inc = m.group(1)
            if inc in seen:
                return ""
            seen.add(inc)
            return expand(_read(inc))

        return _INCLUDE.sub(repl, text)

    return expand(_read(filename))


@functools.lru_cache(maxsize=None)
def declared_instantiations(filename: str) -> tuple[str, ...]:
    """The kernel names (with template arguments) that ``filename`` declares."""
    names = tuple(_INSTANTIATE.findall(_read(filename)))
    if not names:
        raise ValueError(f"{filename} declares no '// gpusvm:instantiate' lines")
    return names


@functools.lru_cache(maxsize=None)
def _module(device_id: int, filename: str, defines: tuple[tuple[str, str], ...]):
    import cupy as cp

    prefix = "".join(f"#define {k} {v}\n" for k, v in defines)
    with cp.cuda.Device(device_id):
        mod = cp.RawModule(
            code=prefix + kernel_source(filename),
            options=("--std=c++17",),
            name_expressions=list(declared_instantiations(filename)),
        )
        mod.compile()
    return mod


def get_kernel(filename: str, name: str, device_id: int = 0, defines: dict | None = None):
    """The compiled ``cupy.RawKernel`` for instantiation ``name`` of ``filename`` on ``device_id``.

    Compiles the file on first use (per device and set of ``defines``) and memoizes the module.
    """
    if name not in declared_instantiations(filename):
        raise KeyError(
            f"{filename} does not declare instantiation {name!r}; it declares "
            f"{list(declared_instantiations(filename))}"
        )
    return _kernel(int(device_id), filename, name, tuple(sorted((defines or {}).items())))


@functools.lru_cache(maxsize=None)
def _kernel(device_id: int, filename: str, name: str, defines: tuple[tuple[str, str], ...]):
    # fetched (loaded) with its device current, and memoized: one RawKernel per device and instantiation
    import cupy as cp

    mod = _module(device_id, filename, defines)
    with cp.cuda.Device(device_id):
        return mod.get_function(name)


def ctype(dtype) -> str:
    """The C type name for a NumPy dtype used as a template argument."""
    import numpy as np

    dt = np.dtype(dtype)
    names = {np.dtype(np.float32): "float", np.dtype(np.float64): "double",
             np.dtype(np.int32): "int", np.dtype(np.int64): "long long"}
    if dt not in names:
        raise TypeError(f"no CUDA kernel instantiation for dtype {dt}")
    return names[dt]


def nvcc_check(archs=("sm_80", "sm_90"), nvcc: str | None = None, files=None) -> list[str]:
    """Compile every declared instantiation of every kernel file with ``nvcc -ptx`` per arch.

    Returns the list of (file, arch) compiled; raises ``RuntimeError`` with nvcc's output on the
    first failure and ``FileNotFoundError`` when nvcc is absent.
    """
    nvcc = nvcc or shutil.which("nvcc")
    if nvcc is None:
        raise FileNotFoundError("nvcc not found on PATH")
    done = []
    with tempfile.TemporaryDirectory() as tmp:
        for fname in files or kernel_files():
            names = declared_instantiations(fname)
            src = Path(tmp, fname.replace(".cu", "_check.cu"))
            refs = ",\n    ".join(f"(void*)&{n}" for n in names)
            src.write_text(
                kernel_source(fname)
                + "\n// force the instantiations Python asks for\n"
                + f"void* gpusvm_instantiations[] = {{\n    {refs}\n}};\n",
                encoding="utf-8",
            )
            for arch in archs:
                out = Path(tmp, f"{fname}.{arch}.ptx")
                cmd = [nvcc, "-ptx", f"-arch={arch}", "-std=c++17", "-o", str(out), str(src)]
                res = subprocess.run(cmd, capture_output=True, text=True)
                if res.returncode != 0:
                    raise RuntimeError(
                        f"nvcc failed on {fname} for {arch}:\n{' '.join(cmd)}\n{res.stdout}{res.stderr}"
                    )
                done.append(f"{fname}:{arch}")
    return done


if __name__ == "__main__":  # python -m gpusvm._backend.cuda_source [arch ...]
    import sys

    archs = tuple(sys.argv[1:]) or ("sm_80", "sm_90")
    for item in nvcc_check(archs):
        print("compiled", item)

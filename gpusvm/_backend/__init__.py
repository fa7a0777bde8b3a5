"""Backend selection: one backend object per device, picked once from ``device=`` and the inputs.

Rule for ``device="auto"``
--------------------------
* any input is a CuPy array (or cupyx sparse matrix)  -> GPU, the device holding the first such input
  (the data already live there);
* otherwise the GPU is used when CuPy imports, a CUDA device answers, and the problem is large enough
  to pay off: the first input has at least :data:`AUTO_GPU_MIN_SAMPLES` rows (20,000). Below that the
  cost of moving data and launching kernels outweighs the gain for every solver we ship;
* otherwise the CPU.

A caller whose GPU path does not pay off for host inputs passes ``auto_gpu=False`` (CuPy inputs still go
to the GPU, where they already are). Measured on an H100 against the 16-core host's CPU
(benchmarks/results/paper_nvidia-h100-80gb-hbm3): LinearSVC's dual solvers ("dcd", "avsf": one
sequential coordinate sweep in one thread block) were 8-17x slower than on the CPU on a9a, ijcnn1 and
w8a; BudgetSVC's one-block loop was faster for 3 and 22 features (skin_nonskin, ijcnn1) and 2-11x slower
for 123 and 300 (a9a, w8a), so it asks for the GPU below :data:`BUDGET_AUTO_GPU_MAX_FEATURES` features
(measured with the GPU loop's row margins; its column margins for wide data are not measured yet).

``device="cpu"`` always gives the CPU backend (CuPy inputs are copied to the host by the estimator).
``device="gpu"`` (or ``"gpu:N"`` for device N) gives the GPU backend or raises ``RuntimeError`` saying why
no GPU is usable: CuPy is not installed, no CUDA device answers, or the driver reported an error.
Mixing NumPy/SciPy and CuPy inputs raises ``TypeError``.
"""

from __future__ import annotations

import functools

from .base import Backend, register_op, registered_ops

__all__ = [
    "AUTO_GPU_MIN_SAMPLES",
    "BUDGET_AUTO_GPU_MAX_FEATURES",
    "Backend",
    "array_library",
    "get_backend",
    "gpu_status",
    "move_arrays",
    "move_fitted",
    "register_op",
    "registered_ops",
]

AUTO_GPU_MIN_SAMPLES = 20_000
BUDGET_AUTO_GPU_MAX_FEATURES = 32  # the GPU BSGD loop's thread-per-SV margins (kernels/bsgd.cu) end here


def array_library(x) -> str | None:
    """'cupy' for CuPy arrays and cupyx sparse matrices, 'numpy' for anything else, None for None.

    Decided from the type's module so that CuPy is never imported to ask.
    """
    if x is None:
        return None
    mod = type(x).__module__ or ""
    if mod.startswith("cupy") or mod.startswith("cupyx"):
        return "cupy"
    return "numpy"


@functools.lru_cache(maxsize=None)
def gpu_status(device_id: int = 0) -> tuple[bool, str]:
    """(usable, reason): whether CUDA device ``device_id`` can be used through CuPy, and why not."""
    try:
        import cupy  # noqa: F401
    except Exception as exc:  # ImportError, or a broken CUDA toolkit install
        return False, (f"CuPy is not installed or failed to import ({exc}); install gpusvm[cuda12] "
                       "or gpusvm[cuda13]")
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return False, f"CUDA driver error while counting devices: {exc}"
    if n == 0:
        return False, "no CUDA device available"
    if device_id >= n:
        return False, f"CUDA device {device_id} requested but only {n} device(s) present"
    try:
        with cupy.cuda.Device(device_id):
            cupy.zeros(1).sum().item()
    except Exception as exc:
        return False, f"CUDA driver error on device {device_id}: {exc}"
    return True, ""


@functools.lru_cache(maxsize=None)
def _gpu_backend(device_id: int):
    from .cupy_backend import CupyBackend

    return CupyBackend(device_id)


def _parse_device(device) -> tuple[str, int]:
    if device is None:
        return "auto", 0
    if not isinstance(device, str):
        raise ValueError(f"The 'device' parameter must be 'auto', 'cpu', 'gpu' or 'gpu:N'. Got {device!r} instead.")
    d = device.strip().lower()
    if d in ("auto", "cpu"):
        return d, 0
    if d in ("gpu", "cuda"):
        return "gpu", 0
    for prefix in ("gpu:", "cuda:"):
        if d.startswith(prefix) and d[len(prefix):].isdigit():
            return "gpu", int(d[len(prefix):])
    raise ValueError(f"The 'device' parameter must be 'auto', 'cpu', 'gpu' or 'gpu:N'. Got {device!r} instead.")


def _n_rows(a) -> int:
    """Rows of ``a``: ``shape[0]`` for arrays and sparse matrices, ``len`` for lists and other sequences."""
    if a is None:
        return 0
    shape = getattr(a, "shape", None)
    if shape:
        return int(shape[0])
    try:
        return len(a)
    except TypeError:
        return 0


def _cupy_device_id(a) -> int:
    """The CUDA device holding CuPy array / cupyx sparse matrix ``a`` (0 when it does not say)."""
    for holder in (a, getattr(a, "data", None)):
        try:
            dev = getattr(holder, "device", None)
        except NotImplementedError:  # cupyx sparse matrices (CuPy 14) raise here: ask their .data
            continue
        if dev is not None and isinstance(getattr(dev, "id", None), int):
            return int(dev.id)
    return 0


def get_backend(device="auto", *arrays, auto_gpu: bool = True) -> Backend:
    """Return the backend for ``device`` ("auto", "cpu", "gpu" or "gpu:N") and the input ``arrays``.

    See the module docstring for the "auto" rule; ``auto_gpu=False`` keeps host inputs on the CPU under
    "auto". Raises ``TypeError`` for mixed NumPy/CuPy inputs and
    ``RuntimeError`` when "gpu" is asked for and no GPU is usable.
    """
    kind, dev_id = _parse_device(device)
    libs = {}
    for i, a in enumerate(arrays):
        lib = array_library(a)
        if lib is not None:
            libs.setdefault(lib, []).append(i)
    if len(libs) > 1:
        raise TypeError(
            "Mixed array libraries: inputs at positions "
            f"{libs['numpy']} are NumPy/SciPy and inputs at positions {libs['cupy']} are CuPy; "
            "pass all inputs from one library (use cupy.asarray or .get() to convert)."
        )
    if kind == "cpu":
        from .numpy_backend import CPU

        return CPU
    if kind == "gpu":
        ok, why = gpu_status(dev_id)
        if not ok:
            raise RuntimeError(f"device='gpu' was requested but no GPU is usable: {why}")
        return _gpu_backend(dev_id)
    # auto
    if "cupy" in libs:
        dev_id = _cupy_device_id(arrays[libs["cupy"][0]])  # where the data already are
        ok, why = gpu_status(dev_id)
        if not ok:
            raise RuntimeError(f"CuPy inputs were given but no GPU is usable: {why}")
        return _gpu_backend(dev_id)
    n = _n_rows(next((a for a in arrays if a is not None), None))
    if auto_gpu and n >= AUTO_GPU_MIN_SAMPLES and gpu_status(dev_id)[0]:
        return _gpu_backend(dev_id)
    from .numpy_backend import CPU

    return CPU


def move_arrays(obj, src, dst):
    """``obj`` with every array in it (NumPy / CuPy arrays, SciPy / cupyx sparse matrices) copied from
    backend ``src`` to backend ``dst``, through dataclasses (rebuilt with ``dataclasses.replace``), lists,
    tuples and dicts; anything else (numbers, strings, None) unchanged. What a fitted model's
    ``to_device`` uses for state nested in solver results."""
    import dataclasses

    import numpy as np

    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        fields = {f.name: move_arrays(getattr(obj, f.name), src, dst) for f in dataclasses.fields(obj) if f.init}
        return dataclasses.replace(obj, **fields)
    if isinstance(obj, dict):
        return {k: move_arrays(v, src, dst) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(move_arrays(v, src, dst) for v in obj)
    if isinstance(obj, np.ndarray) or array_library(obj) == "cupy" or src.issparse(obj):
        return dst.asarray(src.to_host(obj))
    return obj


def move_fitted(model, names, device):
    """``to_device`` of a fitted kernel model: its attributes ``names`` (arrays, or state holding them)
    copied from its backend (``model._be_name``, a :attr:`Backend.device_key`) to ``device``, which the
    model then records. Returns the model."""
    src, dst = get_backend(model._be_name), get_backend(device)
    for name in names:
        setattr(model, name, move_arrays(getattr(model, name), src, dst))
    model._be_name = dst.device_key
    return model

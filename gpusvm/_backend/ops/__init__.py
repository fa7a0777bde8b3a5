"""Fused backend ops. Each module registers a CPU twin and a GPU version of its ops with
:func:`gpusvm._backend.base.register_op`; modules are imported on first use of any op.

A module here must not import CuPy at top level (the GPU functions import it lazily)."""


def check_raw_array(a, dtype, length, op: str, name: str) -> None:
    """Refuse an array a GPU kernel reads or writes through a raw pointer unless it is a contiguous 1-d
    array of ``dtype`` with at least ``length`` entries (None: any length).

    CUDA kernels see only the pointer: a strided view, another dtype or a short array is read or
    written wrongly without any error, where the NumPy twin of the op would still be right.
    """
    import numpy as np

    want = np.dtype(dtype)
    shape = tuple(getattr(a, "shape", ()))
    ok = (getattr(a, "dtype", None) == want and len(shape) == 1 and bool(a.flags.c_contiguous)
          and (length is None or shape[0] >= int(length)))
    if not ok:
        got = getattr(a, "dtype", type(a).__name__)
        contiguous = bool(a.flags.c_contiguous) if hasattr(a, "flags") else None
        need = "" if length is None else f" of at least {int(length)} entries"
        raise ValueError(f"{op} on the GPU reads and writes {name} through a raw pointer: it must be a "
                         f"contiguous 1-d {want} device array{need}; got dtype {got}, shape {shape}, "
                         f"contiguous={contiguous}")

"""Fused backend ops. Each module registers a CPU twin and a GPU version of its ops with
:func:`gpusvm._backend.base.register_op`; modules are imported on first use of any op.

A module here must not import CuPy at top level (the GPU functions import it lazily)."""

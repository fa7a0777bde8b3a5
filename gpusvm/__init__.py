"""gpusvm: support vector machines trained fast on GPUs and correctly on CPUs.

Public names only; importing gpusvm never imports CuPy (the GPU backend is loaded when first used).
"""

from ._backend import get_backend, gpu_status
from ._gram import GramSpec

__version__ = "0.1.0"

__all__ = ["GramSpec", "get_backend", "gpu_status", "__version__"]

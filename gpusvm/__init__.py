"""gpusvm: support vector machines trained fast on GPUs and correctly on CPUs.

Estimators (scikit-learn compatible):

* :class:`SVC`: exact kernel C-SVC (SMO / planning-ahead SMO, batched decomposition on GPU, ALFPGM);
* :class:`LinearSVC`: linear SVM by dual coordinate descent (LIBLINEAR), AVSF or a primal Newton method
  (squared hinge); the L1-regularized one by coordinate descent (LIBLINEAR's CDN);
* :class:`BudgetSVC`: budgeted SGD kernel SVM with multi-merge budget maintenance;
* :class:`DCSVC`: divide-and-conquer kernel SVM.

:func:`save_libsvm_model` / :func:`load_libsvm_model` write and read LIBSVM model files; the
``gpusvm train`` / ``gpusvm predict`` commands take LIBSVM's svm-train / svm-predict options.

Importing gpusvm never imports CuPy, and the estimators are imported lazily on first access.
"""

from importlib import import_module

from ._backend import get_backend, gpu_status
from ._gram import GramSpec

__version__ = "0.1.0"

_LAZY = {
    "SVC": "gpusvm.svc",
    "LinearSVC": "gpusvm.linear",
    "BudgetSVC": "gpusvm.budget",
    "DCSVC": "gpusvm.dcsvm",
    "save_libsvm_model": "gpusvm.libsvm_io",
    "load_libsvm_model": "gpusvm.libsvm_io",
}

__all__ = ["GramSpec", "get_backend", "gpu_status", "__version__", *_LAZY]
# public submodules, imported on first attribute access (`import gpusvm; gpusvm.datasets.make_chessboard`
# raised AttributeError unless gpusvm.datasets had been imported already)
_SUBMODULES = ("datasets",)


def __getattr__(name):
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    if name in _SUBMODULES:
        return import_module(f"gpusvm.{name}")
    raise AttributeError(f"module 'gpusvm' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(_SUBMODULES))

"""Independent binary problems of one fit (class pairs, one-vs-rest problems) solved in threads.

The compiled solver loops release the GIL, so threads give real parallelism on the CPU without copying
the data; every problem is solved exactly as it would be alone, so the model does not depend on the
number of threads. A GPU fit runs the problems one after the other (one device, one stream).

While the threads run, BLAS is limited to one thread: the problems already occupy the cores, and
OpenBLAS's idle threads spin between calls. DCSVC's class pairs (kernel k-means Gram blocks between
the solves; 8 classes, 2 cores) gained 1.12x from two threads without the limit and 1.84x with it
(benchmarks/threads_ovr.py, one run each; benchmarks/results/threads_ovr_cpu.md has the latter).
"""

from __future__ import annotations

import contextlib
import numbers
import sys
import threading

from joblib import effective_n_jobs

# single_blas_thread's state: how many blocks are inside it, and the threadpoolctl limiter they share
_BLAS_LOCK = threading.Lock()
_BLAS_USERS = 0
_BLAS_LIMITER = None
# _blas_controller's cache: threadpoolctl's controller and the number of modules imported when it was built
_CONTROLLER = None
_CONTROLLER_MODULES = 0


def check_n_jobs(n_jobs, owner):
    """Validate an ``n_jobs`` hyperparameter: None or a nonzero int (joblib's convention)."""
    if n_jobs is not None and (isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral) or n_jobs == 0):
        raise ValueError(f"The 'n_jobs' parameter of {owner} must be None or a nonzero int. Got {n_jobs!r} instead.")


def _blas_controller():
    """threadpoolctl's controller of the process's thread pools (None before threadpoolctl 3.0), built again
    only when modules were imported since (a BLAS may have come with them), as threadpoolctl's own cache and
    scikit-learn's keep it: building one scans every loaded library, 2.2-2.5 ms here, which every CPU
    prediction in two or more blocks paid (SVC on digits: about a tenth of its decision_function)."""
    global _CONTROLLER, _CONTROLLER_MODULES
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # threadpoolctl < 3.0
        return None
    if _CONTROLLER is None or _CONTROLLER_MODULES != len(sys.modules):
        _CONTROLLER, _CONTROLLER_MODULES = ThreadpoolController(), len(sys.modules)
    return _CONTROLLER


@contextlib.contextmanager
def single_blas_thread():
    """BLAS limited to one thread while the block runs, restored when the last such block in the process
    ends. threadpoolctl's limit is process-wide: two fits with ``n_jobs`` in a caller's threads each
    saved the limit they found and restored it on leaving, so the one that entered second and left last
    restored the other's limit of one thread, and BLAS stayed single-threaded after both."""
    global _BLAS_USERS, _BLAS_LIMITER
    with _BLAS_LOCK:
        if _BLAS_USERS == 0:
            controller = _blas_controller()
            if controller is None:
                from threadpoolctl import threadpool_limits

                _BLAS_LIMITER = threadpool_limits(limits=1, user_api="blas")
            else:
                _BLAS_LIMITER = controller.limit(limits=1, user_api="blas")
        _BLAS_USERS += 1
    try:
        yield
    finally:
        with _BLAS_LOCK:
            _BLAS_USERS -= 1
            if _BLAS_USERS == 0:
                _BLAS_LIMITER.restore_original_limits()
                _BLAS_LIMITER = None


def map_problems(fn, items, n_jobs, *, on_gpu):
    """``[fn(item) for item in items]``, in up to ``n_jobs`` threads on the CPU (joblib's convention:
    None means 1 unless in a ``joblib.parallel_backend`` context, -1 all cores)."""
    return map_threads(fn, items, 1 if on_gpu else effective_n_jobs(n_jobs))


def map_threads(fn, items, threads):
    """``[fn(item) for item in items]`` in up to ``threads`` threads (a count; 1 or less: in this thread)
    with BLAS held to one thread while they run (:func:`single_blas_thread`)."""
    items = list(items)
    workers = max(1, min(len(items), int(threads)))
    if workers == 1:
        return [fn(item) for item in items]
    from concurrent.futures import ThreadPoolExecutor

    with single_blas_thread(), ThreadPoolExecutor(max_workers=workers) as ex:
        return list(ex.map(fn, items))

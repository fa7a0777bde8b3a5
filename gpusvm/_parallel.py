"""Independent binary problems of one fit (class pairs, one-vs-rest problems) solved in threads.

The compiled solver loops release the GIL, so threads give real parallelism on the CPU without copying
the data; every problem is solved exactly as it would be alone, so the model does not depend on the
number of threads. A GPU fit runs the problems one after the other (one device, one stream).
"""

from __future__ import annotations

import numbers

from joblib import effective_n_jobs


def check_n_jobs(n_jobs, owner):
    """Validate an ``n_jobs`` hyperparameter: None or a nonzero int (joblib's convention)."""
    if n_jobs is not None and (isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral) or n_jobs == 0):
        raise ValueError(f"The 'n_jobs' parameter of {owner} must be None or a nonzero int. Got {n_jobs!r} instead.")


def map_problems(fn, items, n_jobs, *, on_gpu):
    """``[fn(item) for item in items]``, in up to ``n_jobs`` threads on the CPU (joblib's convention:
    None means 1 unless in a ``joblib.parallel_backend`` context, -1 all cores)."""
    items = list(items)
    workers = 1 if on_gpu else max(1, min(len(items), effective_n_jobs(n_jobs)))
    if workers == 1:
        return [fn(item) for item in items]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=workers) as ex:
        return list(ex.map(fn, items))

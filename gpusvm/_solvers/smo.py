"""Binary solvers "smo" and "pa-smo": exact C-SVC dual by sequential minimal optimization.

* "smo": LIBSVM's algorithm (Chang & Lin, ACM TIST 2011) with second-order working-set selection
  (Fan, Chen & Lin, "Working set selection using second order information for training support
  vector machines", JMLR 6, 2005), shrinking and an LRU Gram-row cache; on the CPU it takes
  LIBSVM's steps (same step count and support vectors, see tests/test_svc.py).
* "pa-smo": planning-ahead SMO (Glasmachers, "The planning-ahead SMO algorithm", 2008), which after a
  free SMO step takes the step that is optimal when followed by steps on the 2 or 3 most recent
  working sets (option ``pa_recent``); see :mod:`gpusvm._backend.ops.smo_pairwise` for the details.

Where they run
--------------
On the GPU, or when ``decomposition="batched"``, both use the batched working-set decomposition
(:mod:`gpusvm._solvers.smo_batched`) whose local sub-problem solver does SMO or PA-SMO steps. On the
CPU with ``decomposition="pairwise"`` (the "auto" choice made by :func:`_auto_decomposition`) the
whole pair-at-a-time loop runs in compiled code (the fused op ``smo_pairwise``).

``n_iter`` counts SMO steps (pairwise) or decomposition rounds (batched).
"""

from __future__ import annotations

from . import BinaryResult, register_binary_solver
from ._common import bias, dual_objective, resolve_gram_dtype, step_cap

_OPTIONS = ("decomposition", "working_set_size", "gram_dtype", "pa_recent", "shrinking")
#: The binary solvers that take ``rows=`` (solve ``X[rows]`` without a copy of those rows; see solve_smo)
ROWS_SOLVERS = ("smo", "pa-smo")


def _auto_decomposition(be, n, d, spec) -> str:
    """The CPU decomposition for ``decomposition="auto"``: always "pairwise" (LIBSVM's algorithm).

    Rechecked at full size on the current code (benchmarks/results/smo_decomposition_recheck_cpu.md,
    process CPU seconds, pairwise vs batched): a9a 22.4 vs 16.7, ijcnn1 8.9 vs 14.2, phishing 3.4 vs 2.6
    but with 3,047 support vectors against LIBSVM's 2,852 (batched spreads alpha over duplicate rows).
    Batched does not beat pair-at-a-time SMO consistently, and the pairwise loop reproduces LIBSVM's
    solution (same support vectors) while already beating scikit-learn on all four data sets
    (benchmarks/results/svc_vs_sklearn_cpu.md), so it stays the CPU default. The earlier n >= 5,000
    rule was measured before the pairwise solver's dense-row and cache speed-ups
    (benchmarks/results/smo_decomposition_cpu.md). Since that recheck the pairwise op got faster
    again (LIBSVM's position layout with rows that survive unshrinking, vectorized Gram rows: 2.5-3.5x
    less CPU time on a9a 10k, w8a 15k, phishing and ijcnn1 15k, same steps), which widens the gap in its favour; the
    batched solver was not re-timed. ``decomposition="batched"`` still selects the batched method on
    the CPU; on the GPU it is always used.
    """
    return "pairwise"


def _check_common(decomposition, gram_dtype, pa_recent, shrinking):
    if decomposition not in ("auto", "pairwise", "batched"):
        raise ValueError("The 'decomposition' parameter must be one of ['auto', 'batched', 'pairwise']. "
                         f"Got {decomposition!r} instead.")
    if str(gram_dtype) not in ("float32", "float64"):
        raise ValueError(f"The 'gram_dtype' parameter must be one of ['float32', 'float64']. Got {gram_dtype!r} instead.")
    if pa_recent not in (2, 3) or isinstance(pa_recent, bool):
        raise ValueError(f"The 'pa_recent' parameter must be one of [2, 3]. Got {pa_recent!r} instead.")
    if shrinking not in (True, False):  # a bool, NumPy's included
        raise ValueError(f"The 'shrinking' parameter must be a bool. Got {shrinking!r} instead.")


def _solve(local, be, X, y, spec, C, *, tol, max_iter, cache_bytes, alpha0=None, x_sqnorm=None,
           verbose=0, random_state=None, decomposition="auto", working_set_size=None,
           gram_dtype="float32", pa_recent=2, shrinking=True, rows=None):
    _check_common(decomposition, gram_dtype, pa_recent, shrinking)
    n = int(X.shape[0]) if rows is None else int(rows.shape[0])
    d = int(X.shape[1])
    if decomposition == "auto" and not be.is_gpu:
        decomposition = _auto_decomposition(be, n, d, spec)
    if rows is not None and (be.is_gpu or decomposition == "batched"):
        X, rows = be.select_rows(X, rows), None  # (the batched decomposition reads the problem's rows)
    if be.is_gpu or decomposition == "batched":
        from .smo_batched import solve_batched

        return solve_batched(be, X, y, spec, C, tol=tol, max_iter=max_iter, cache_bytes=cache_bytes,
                             alpha0=alpha0, x_sqnorm=x_sqnorm, verbose=verbose,
                             random_state=random_state, local=local,
                             working_set_size=working_set_size, gram_dtype=gram_dtype,
                             pa_recent=pa_recent)
    # float64 values where float32 ones would perturb the problem (data far from the origin, see
    # resolve_gram_dtype); the batched decomposition decides after its own centring
    gram_dtype = resolve_gram_dtype(be, X, spec, x_sqnorm, gram_dtype, computed_in="float64", verbose=verbose,
                                    rows=rows)
    out = be.smo_pairwise(X, y, spec, C, tol=tol, max_iter=step_cap(max_iter, n), cache_bytes=cache_bytes,
                          alpha0=alpha0, x_sqnorm=x_sqnorm, gram_dtype=gram_dtype,
                          planning=(local == "pa-smo"), pa_recent=pa_recent, shrinking=bool(shrinking),
                          verbose=verbose, rows=rows)
    alpha, G = out["alpha"], out["G"]
    info = dict(out["info"])
    info["decomposition"] = "pairwise"
    info["gram_dtype"] = gram_dtype
    b, objective = bias(be, y, alpha, G, C), dual_objective(be, alpha, G)
    if verbose:  # LIBSVM's summary (obj in its minimization form, rho = -b)
        n_sv = int(be.xp.count_nonzero(alpha > 0))
        n_bsv = int(be.xp.count_nonzero((alpha > 0) & (alpha >= C)))
        print(f"optimization finished, #iter = {out['n_iter']}\nobj = {-objective:.6f}, rho = {-b:.6f}\n"
              f"nSV = {n_sv}, nBSV = {n_bsv}", flush=True)
    return BinaryResult(alpha=alpha, b=b, objective=objective,
                        n_iter=out["n_iter"], converged=out["converged"], gradient=G, info=info)


@register_binary_solver("smo", options=_OPTIONS)
def solve_smo(be, X, y, spec, C, *, tol, max_iter, cache_bytes, alpha0=None, x_sqnorm=None, verbose=0,
              random_state=None, decomposition="auto", working_set_size=None, gram_dtype="float32",
              pa_recent=2, shrinking=True, rows=None):
    """SMO with second-order working-set selection (LIBSVM; Fan, Chen & Lin, JMLR 2005).

    Parameters
    ----------
    be : Backend
    X : {array, CSR matrix} of shape (n, d) on ``be``
    y : array of shape (n,), float64 in {-1, +1}
    spec : GramSpec
    C : array of shape (n,), per-sample upper bounds
    tol, max_iter, cache_bytes, alpha0, x_sqnorm, verbose, random_state
        See :mod:`gpusvm._solvers`.
    decomposition : {"auto", "pairwise", "batched"}
    working_set_size : int, optional
        Working-set size q of the batched decomposition.
    gram_dtype : {"float32", "float64"}
        Type of the stored Gram values.
    pa_recent : {2, 3}
        Unused by plain SMO (accepted so that the options of "smo" and "pa-smo" agree).
    shrinking : bool
        LIBSVM's shrinking heuristic in the pair-at-a-time loop (the CPU default). It changes the
        path, not the solution. The batched decomposition (always used on the GPU) has no shrinking:
        it selects its working set from all variables every round, and ignores this option.
    rows : host int array of shape (n,), optional
        Solve the problem of ``X[rows]`` (``X`` then has any number of rows; ``y``, ``C``, ``alpha0`` and
        ``x_sqnorm`` are the problem's): the pair-at-a-time loop gathers the rows into its own
        transposed copy instead of a copy of ``X[rows]`` being made first (the same solution to the bit).

    Returns
    -------
    BinaryResult
    """
    return _solve("smo", be, X, y, spec, C, tol=tol, max_iter=max_iter, cache_bytes=cache_bytes,
                  alpha0=alpha0, x_sqnorm=x_sqnorm, verbose=verbose, random_state=random_state,
                  decomposition=decomposition, working_set_size=working_set_size,
                  gram_dtype=gram_dtype, pa_recent=pa_recent, shrinking=shrinking, rows=rows)


@register_binary_solver("pa-smo", options=_OPTIONS)
def solve_pa_smo(be, X, y, spec, C, *, tol, max_iter, cache_bytes, alpha0=None, x_sqnorm=None,
                 verbose=0, random_state=None, decomposition="auto", working_set_size=None,
                 gram_dtype="float32", pa_recent=2, shrinking=True, rows=None):
    """Planning-ahead SMO (Glasmachers, "The planning-ahead SMO algorithm", 2008).

    Same parameters (``rows`` included) and result as :func:`solve_smo`; ``pa_recent`` (2 or 3) is the number of most
    recent working sets the planning step is computed with (the current one included).
    """
    return _solve("pa-smo", be, X, y, spec, C, tol=tol, max_iter=max_iter, cache_bytes=cache_bytes,
                  alpha0=alpha0, x_sqnorm=x_sqnorm, verbose=verbose, random_state=random_state,
                  decomposition=decomposition, working_set_size=working_set_size,
                  gram_dtype=gram_dtype, pa_recent=pa_recent, shrinking=shrinking, rows=rows)


#: The largest problems (rows) :func:`solve_small_pairwise` takes: its Gram-row stores (at most n x n values)
#: are allocated in compiled code, without :func:`gpusvm._backend.base.reserve_rows`' retry with fewer rows;
#: above a few hundred rows a problem's own solve outweighs the fixed cost that this saves anyway
SMALL_PAIRWISE_MAX_ROWS = 2048


def small_pairwise_applies(be, X, spec, decomposition="auto", verbose=0) -> bool:
    """Whether :func:`solve_small_pairwise` can solve problems on ``X``: the CPU's pair-at-a-time decomposition
    on dense float32 or float64 rows (not precomputed), without verbose output."""
    import numpy as np

    return (not be.is_gpu and type(X) is np.ndarray and X.ndim == 2 and X.dtype in (np.float32, np.float64)
            and spec.kind in ("linear", "poly", "rbf", "sigmoid") and decomposition in ("auto", "pairwise")
            and not verbose)


def small_pairwise_prepare(X):
    """What :func:`solve_small_pairwise` reads of the dense host ``X`` for every problem: ``X`` C-contiguous,
    and its rows' squared norms as the op's ``_prepare`` sums them (the solver's; ``x_sqnorm`` stays the float32
    check's)."""
    import numpy as np

    from .._backend.ops.smo_pairwise import _row_sqnorms

    Xc = np.ascontiguousarray(X)
    return Xc, _row_sqnorms(Xc)


def solve_small_pairwise(local, be, X, x_sqnorm, spec, problems, *, tol, max_iter, cache_bytes,
                         decomposition="auto", working_set_size=None, gram_dtype="float32", pa_recent=2,
                         shrinking=True, prepared=None):
    """:func:`solve_smo` (``local="smo"``) or :func:`solve_pa_smo` (``"pa-smo"``) of each problem
    ``(rows, y, C)`` of ``problems`` (host arrays; at most :data:`SMALL_PAIRWISE_MAX_ROWS` rows each) with
    ``rows=`` on the dense host ``X`` (``x_sqnorm``: the float64 squared norms of all of X's rows, as
    ``be.row_sqnorms(X, np.float64)``, passed as ``x_sqnorm[rows]`` to the per-problem solve; only its float32
    check reads them, the op sums its own), where :func:`small_pairwise_applies`; returns their BinaryResults,
    the same to the bit (tests/test_small_pairwise.py).

    For one-vs-one SVC with many small classes, whose class pairs each paid about 100 us of fixed cost
    around a compiled solve of 20-30 us (the float32 check, the op's wrapper and copies, the bias): the
    float32 decisions of all problems are made together (:func:`~gpusvm._backend.ops.gram_errors.
    float32_too_coarse_many` for RBF and linear grams; poly and sigmoid ones each as :func:`resolve_gram_dtype`),
    then one compiled call (:func:`~gpusvm._backend.ops.smo_pairwise._solve_pairs`) gathers each problem's
    rows, solves it and computes its bias; only the objective's dot product is left to NumPy, per problem.
    ``prepared``: :func:`small_pairwise_prepare` of ``X``, for callers that split the problems over threads
    (computed here when None).
    """
    import numpy as np

    from .._backend.ops.gram_errors import float32_too_coarse_many
    from .._backend.ops.smo_pairwise import PA_ETA, _diag, _solve_pairs
    from .._gram import GRAM_CODES
    from ._common import FLOAT32_MAX_CURVATURE_ERROR

    _check_common(decomposition, gram_dtype, pa_recent, shrinking)
    if not problems:
        return []
    rs, ys, cs = zip(*problems)
    rows = np.concatenate(rs).astype(np.int64, copy=False)
    y = np.concatenate(ys).astype(np.float64, copy=False)
    C = np.concatenate(cs).astype(np.float64, copy=False)
    sizes = np.array([r.shape[0] for r in rs], dtype=np.int64)
    starts = np.zeros(sizes.shape[0] + 1, dtype=np.int64)
    np.cumsum(sizes, out=starts[1:])
    sq = np.asarray(x_sqnorm, dtype=np.float64)  # (the float32 check's, as resolve_gram_dtype gets them)
    Xc, sq_op = small_pairwise_prepare(X) if prepared is None else prepared
    if str(gram_dtype) == "float64":
        f64 = np.ones(len(problems), dtype=bool)
    elif spec.kind in ("rbf", "linear"):
        f64 = float32_too_coarse_many(X, sq, spec, rows, starts, FLOAT32_MAX_CURVATURE_ERROR)
    else:
        f64 = np.array([resolve_gram_dtype(be, X, spec, sq[r], gram_dtype, computed_in="float64", rows=r) == "float64"
                        for r, _, _ in problems], dtype=bool)
    use_qd = spec.kind in ("poly", "sigmoid")  # (their diagonals by NumPy's power and tanh, as the op takes them)
    QD = np.concatenate([_diag(sq_op[r], spec) for r in rs]) if use_qd else np.zeros(1)
    # step_cap of each: LIBSVM's max(10^7, 100 n) where max_iter asks for no limit
    max_iters = np.maximum(step_cap(-1, 0), 100 * sizes) if max_iter is None or int(max_iter) < 0 else (
        np.full(len(problems), int(max_iter), dtype=np.int64))
    n_all, P = int(rows.shape[0]), len(problems)
    alpha, G = np.empty(n_all), np.empty(n_all)
    n_iter, status = np.empty(P, dtype=np.int64), np.empty(P, dtype=np.int64)
    b, sum_alpha = np.empty(P), np.empty(P)
    # (an int64 for the compiled call: a budget beyond it, cache_size >= 2**43 MB, raised OverflowError there; every
    # such budget holds all n rows, as the op's Python arithmetic gives)
    cache_bytes = min(int(cache_bytes), np.iinfo(np.int64).max)
    for dtype in (np.float32, np.float64):  # (one call per Gram value type; see _solve_pairs)
        sel = np.flatnonzero(f64 == (dtype == np.float64))
        if sel.shape[0]:
            _solve_pairs(Xc, sq_op, rows, starts, y, C, QD, use_qd, sel, np.empty(0, dtype=dtype), max_iters,
                         GRAM_CODES[spec.kind], float(spec.gamma), float(spec.coef0), int(spec.degree),
                         int(cache_bytes), float(tol), bool(shrinking), local == "pa-smo", int(pa_recent), PA_ETA,
                         alpha, G, n_iter, status, b, sum_alpha)
    out = []
    bounds, sums, biases = starts.tolist(), sum_alpha.tolist(), b.tolist()
    steps, converged, types = n_iter.tolist(), (status == 0).tolist(), f64.tolist()
    dot = np.dot
    for p in range(P):
        s, e = bounds[p], bounds[p + 1]
        a, g = alpha[s:e], G[s:e]
        objective = 0.5 * sums[p] - 0.5 * float(dot(a, g))  # (dual_objective's operations, in float64)
        out.append(BinaryResult(alpha=a, b=biases[p], objective=objective, n_iter=steps[p], converged=converged[p],
                                gradient=g, info={"decomposition": "pairwise",
                                                  "gram_dtype": "float64" if types[p] else "float32"}))
    return out

"""Exact kernel C-SVC: :class:`SVC`, scikit-learn compatible, on the CPU or the GPU."""

from __future__ import annotations

import functools
import math
import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.utils.metaestimators import available_if

from ._backend import array_library, get_backend, move_fitted
from ._backend.base import device_memory_guard, is_device_oom
from ._backend.ops.gram import densify_for_gram
from ._dedupe import check_mode as check_deduplicate
from ._dedupe import plan as plan_deduplication
from ._dedupe import merge_equal_rows, reduce_problem
from ._gram import GramSpec, feature_variance, index_points, resolve_gamma
from ._ovo import (check_finite_model, linear_pair_weights, ovo_decision_function, ovo_model_layout, ovo_pair_rows,
                   ovo_predict, pair_product)
from ._parallel import check_n_jobs, effective_n_jobs, map_problems, map_threads
from ._platt import ovo_probabilities, sigmoid_train
from ._solvers._common import early_stop_causes
from ._solvers.smo import (ROWS_SOLVERS, SMALL_PAIRWISE_MAX_ROWS, small_pairwise_applies, small_pairwise_prepare,
                           solve_small_pairwise)
from ._solvers.segments import BATCH_MODES
from ._solvers.smo_batched import MAX_WORKING_SET
from ._validation import (check_auto_or_bool, check_class_labels, check_class_weight, check_degree, check_gamma,
                          check_options, check_random_state_param, check_scalar, check_X, class_indices,
                          to_input_library, to_numpy, weights_per_sample)

__all__ = ["SVC"]

_KERNELS = ("linear", "poly", "rbf", "sigmoid", "precomputed")
#: Largest class pair (points after copies are merged) that ``SVC(batch_pairs=...)`` solves in the batch, as
#: DCSVC's default ``batch_max_size`` (its float64 Gram block: 128 MiB)
PAIR_BATCH_MAX_SIZE = 4096


def _host(be, x):
    return np.asarray(be.to_host(x))


def _as_csr_matrix(m):
    """A SciPy ``csr_array`` as ``csr_matrix`` (sklearn's type for a sparse fit); anything else (a
    ``csr_matrix``, a cupyx CSR matrix) unchanged."""
    import scipy.sparse as sp

    return sp.csr_matrix(m) if sp.issparse(m) and not sp.isspmatrix(m) else m


def _full_pattern_csr(dense):
    """``dense`` (2-d, host) as a SciPy ``csr_matrix`` storing every entry, zeros included: the layout
    of sklearn's ``dual_coef_`` after a sparse fit (each row holds one coefficient per support vector)."""
    import scipy.sparse as sp

    rows, cols = dense.shape
    indices = np.tile(np.arange(cols, dtype=np.int32), rows)
    indptr = np.arange(rows + 1, dtype=np.int32) * cols
    return sp.csr_matrix((np.ascontiguousarray(dense, dtype=np.float64).ravel(), indices, indptr),
                         shape=(rows, cols))


# Gram block size of _blocked_decision per device. On the CPU the block (SV x rows) should stay in a
# core's caches between the gram transform's passes and the product with the coefficients, yet hold
# enough rows for an efficient matrix product: with the blocks in threads (below), 8 MB was the fastest
# or within 0.03 s of it among 2-64 MB on ijcnn1, a9a and w8a, CSR and dense
# (benchmarks/results/predict_blocks_cpu.md; 64 MB, the size before, was 1.3-2.1x slower in the same threads). On the GPU
# large blocks keep the launches few.
DECISION_BLOCK_BYTES = {"cpu": 8 * 2**20, "gpu": 64 * 2**20}
# CPU blocks run in this many threads (None: every usable core), each with single-threaded BLAS: NumPy's
# gram transform (the exponentials) is single-threaded, and a multi-threaded BLAS spins between the
# small products. 1: one block after the other with the BLAS's own threads (the code before).
DECISION_THREADS = None


# _blocked_decision merges equal support vectors (merge_equal_rows: exact) when it predicts at least
# this many rows. Models trained without merging duplicate points keep copies among their support
# vectors (a9a 27%, w8a 23%, phishing 15%, ijcnn1 none; benchmarks/results/predict_merge_cpu.md).
# Finding them hashes the support vectors once per call, about 2 us per support vector against about
# 17 ns per support vector and predicted row (a9a): at 2,048 rows at most ~6% when there are no copies.
MERGE_SV_MIN_ROWS = 2048
#: Bound on the one-vs-one decision values (rows x class pairs, float64) that ``predict`` and an "ovr"
#: ``decision_function`` hold at once: above it they take consecutive blocks of rows (100 classes, 4,950 pairs:
#: 1,694 rows a block). All rows at once took 40 KB a row with 100 classes (100,000 rows: 4 GB) and 159 KB with
#: 200 before the vote, which needs one row's values at a time.
PREDICT_BLOCK_BYTES = 64 * 2**20


def by_row_blocks(X, n_classes, block):
    """``block(X, merge_rows=None)`` (a label or decision array of the rows of ``X``, in the input's array
    library), or when the one-vs-one decision values of all rows of ``X`` would exceed
    :data:`PREDICT_BLOCK_BYTES`, ``block`` of consecutive row blocks of ``X`` joined on the host and returned in
    the input's library. The blocks get the whole ``X``'s ``merge_rows`` choice (:data:`MERGE_SV_MIN_ROWS`), so
    each row's values are those of the call with all rows up to the rounding of the matrix products, whose
    BLAS kernels depend on the number of rows (as between any two calls on different numbers of rows, and
    between :func:`_blocked_decision`'s own blocks: digits, 37-row blocks, 7.8e-15 apart)."""
    from sklearn.utils.validation import _num_samples

    step = max(1, PREDICT_BLOCK_BYTES // (8 * max(1, n_classes * (n_classes - 1) // 2)))
    try:
        n = _num_samples(X)
    except TypeError:  # (not array-like: block's input validation says so)
        n = 0
    if n <= step:
        return block(X)
    merge = n >= MERGE_SV_MIN_ROWS
    if hasattr(X, "tocsr") and getattr(X, "format", "csr") != "csr":
        # COO, DIA and BSR matrices (SciPy's or cupyx's) cannot be sliced by rows: their CSR form, as check_X
        # converts any sparse X (one conversion here, not one per block)
        X = X.tocsr()
    elif not hasattr(X, "__getitem__") and hasattr(X, "__array__"):  # (an array-like that only converts)
        X = np.asarray(X)
    rows = X.iloc if hasattr(X, "iloc") else X  # (a DataFrame's rows by position)
    parts = [to_numpy(block(rows[s:s + step], merge_rows=merge)) for s in range(0, n, step)]
    return to_input_library(np.concatenate(parts), array_library(X))


# Model-only operands of _blocked_decision kept on a fitted estimator (_SVOperands, predict_operands): a
# gram-ready copy of the support vectors (densified, float64) is kept only up to this many bytes; a larger
# one is made again in every call, as before (its gram costs far more than the copy then).
PREDICT_CACHE_MAX_BYTES = 64 * 2**20
_UNSET = object()


def _nbytes(M):
    return int(M.data.nbytes + M.indices.nbytes + M.indptr.nbytes) if hasattr(M, "indptr") else int(M.nbytes)


class _SVOperands:
    """What :func:`_blocked_decision` derives from the model alone: the support vectors ``SV`` and their
    coefficients ``coef`` (p, n_SV; dense, or CSR for many classes: gpusvm._ovo.pair_coef_is_sparse) on one
    backend, with, built at first use, the support vectors' squared norms (RBF), their gram-ready form
    (:func:`densify_for_gram`, float64) and the merge of their equal rows
    (:func:`gpusvm._dedupe.merge_equal_rows`). Built anew for one call, or kept on a fitted estimator by
    :func:`predict_operands`, so that a served model (many small predictions) does not redo them in every call
    (a one-row decision_function of SVC on 6,000 a9a rows, CSR: 0.31 ms, 0.12 ms without them). The values are
    those of the computation per call, to the bit.

    ``sources``: the estimator's own arrays (attributes) the operands were built from, kept to key them
    by identity (see :meth:`matches`)."""

    def __init__(self, be, SV, coef, *, sv_sqnorm=None, sources=()):
        self.device_key = be.device_key
        self.sources = tuple(sources)
        self.SV = SV
        self.coef = coef
        self.n_sv = int(SV.shape[0])
        self._sqnorm = sv_sqnorm
        self._gram_sv = None
        self._merged = _UNSET

    def matches(self, be, sources) -> bool:
        """Whether these operands are those of arrays ``sources`` on ``be``: the very same objects (a
        re-fit, ``to_device`` or an array assigned by hand sets new ones; arrays changed in place are
        not detected)."""
        return (self.device_key == be.device_key and len(sources) == len(self.sources)
                and all(a is b for a, b in zip(sources, self.sources)))

    def sqnorm(self, be):
        """The support vectors' squared norms in float64."""
        if self._sqnorm is None:
            self._sqnorm = be.row_sqnorms(self.SV, be.xp.float64)
        return self._sqnorm

    def gram_sv(self, be):
        """The support vectors as the gram reads them: densified when that pays, in float64."""
        M = self._gram_sv
        if M is None:
            M = _gram_operand(be, self.SV)
            if M is self.SV or _nbytes(M) <= PREDICT_CACHE_MAX_BYTES:
                self._gram_sv = M
        return M

    def merged(self, be):
        """:func:`gpusvm._dedupe.merge_equal_rows` of the support vectors: None when no two are equal,
        else (kept rows, merged coefficients), both on ``be``."""
        if self._merged is _UNSET:
            merged = merge_equal_rows(be, self.SV, self.coef)
            if merged is not None:
                keep, coef = merged
                merged = (be.asarray(keep), be.asarray(coef))
            self._merged = merged
        return self._merged


def _gram_operand(be, M):
    """``M`` as a float64 operand of gram blocks: densified once when every block would densify it
    (:func:`densify_for_gram`), and converted to float64 once instead of in every block's gram call (the
    same values: the gram converts its operands to the block's dtype)."""
    M = densify_for_gram(be, M)
    return M if M.dtype == be.xp.float64 else M.astype(be.xp.float64)


class PredictCache:
    """A fitted estimator's box for its prediction cache (:class:`_SVOperands`), ``est._predict_cache``: set
    empty by a fit, ``to_device`` and the LIBSVM model reader, filled by the first prediction
    (:func:`predict_operands`) and refilled when the model's arrays change. The box stays, so a prediction
    leaves the estimator's ``__dict__`` as it was (scikit-learn's ``check_dict_unchanged``). It pickles and
    deep-copies empty: a pickle does not carry the support vectors twice, and an unpickled model rebuilds
    the cache at its first prediction. Shallow copies of an estimator share it, as they share its arrays."""

    __slots__ = ("operands",)

    def __init__(self):
        self.operands = None

    def __reduce__(self):
        return (PredictCache, ())

    def __repr__(self):
        return f"PredictCache({'empty' if self.operands is None else 'filled'})"


def predict_operands(est, be, sources, build):
    """The :class:`_SVOperands` of the fitted estimator ``est`` for its arrays ``sources`` (e.g.
    ``support_vectors_`` and the coefficients) on ``be``, kept in its :class:`PredictCache`; built by
    ``build()``, which returns ``(SV, coef)`` on ``be``, when there are none or they were built from other
    arrays (a model whose ``support_vectors_`` were assigned by hand) or for another device.

    Dense NumPy ``sources`` are made read-only when the operands are built from them: the operands (the
    squared norms above all) would not follow an edit in place, and prediction would then mix the edited
    vectors with the old norms. An edit in place now raises NumPy's "assignment destination is read-only";
    assigning new arrays changes the model. (CuPy arrays and the arrays of a CSR matrix have no such flag;
    the estimators' docstrings say to assign, not edit.)"""
    box = est.__dict__.get("_predict_cache")
    if box is None:  # (a model pickled before the cache existed, or put together by hand)
        box = est._predict_cache = PredictCache()
    ops = box.operands
    if ops is None or not ops.matches(be, sources):
        SV, coef = build()
        ops = box.operands = _SVOperands(be, SV, coef, sources=sources)
        for src in sources:
            if type(src) is np.ndarray:
                src.flags.writeable = False
    return ops


def _blocked_decision(be, SV, coef, b, X, spec, *, sv_sqnorm=None, x_sqnorm=None, block_bytes=None,
                      merge_rows=None, operands=None):
    """Decision values ``coef @ K(SV, X) + b`` of shape (len(X), len(b)) on ``be``, the Gram values
    computed in blocks of at most ``block_bytes`` (default :data:`DECISION_BLOCK_BYTES` of the device;
    ``coef``: (p, n_SV), dense or CSR, ``b``: (p,)). ``merge_rows``: first merge equal rows of ``SV``
    (:func:`gpusvm._dedupe.merge_equal_rows`); None: when ``X`` has at least :data:`MERGE_SV_MIN_ROWS`
    rows. ``sv_sqnorm``, ``x_sqnorm``: the rows' squared norms in float64 (RBF only; computed when
    None). ``operands``: the model's :class:`_SVOperands` (kept by :func:`predict_operands`), which
    then stand for ``SV``, ``coef`` and ``sv_sqnorm``."""
    xp = be.xp
    if operands is None:
        operands = _SVOperands(be, SV, coef, sv_sqnorm=sv_sqnorm)
    rbf = spec.kind == "rbf"
    n = int(X.shape[0])
    n_sv = operands.n_sv
    dec = xp.empty((n, int(b.shape[0])), dtype=xp.float64)
    if block_bytes is None:
        block_bytes = DECISION_BLOCK_BYTES["gpu" if be.is_gpu else "cpu"]
    if merge_rows is None:
        merge_rows = n >= MERGE_SV_MIN_ROWS
    merged = operands.merged(be) if merge_rows and n_sv > 1 else None
    if merged is not None:
        keep, coef = merged
        SV = _gram_operand(be, be.take_rows(operands.SV, keep))
        sv_sqnorm = operands.sqnorm(be)[keep] if rbf else None
        n_sv = int(keep.shape[0])
    else:
        SV, coef, sv_sqnorm = operands.gram_sv(be), operands.coef, operands.sqnorm(be) if rbf else None
    if rbf and x_sqnorm is None:
        x_sqnorm = be.row_sqnorms(X, xp.float64)
    if n_sv == 0:  # no support vectors, or merged copies whose coefficients cancel
        dec[...] = b[None, :]
        return dec
    step = max(1, int(block_bytes) // (8 * n_sv))
    starts = range(0, n, step)

    def block(s0):
        s1 = min(n, s0 + step)
        Xb = X if s1 - s0 == n else X[s0:s1]  # (one block: X itself, not a copy of CSR X)
        K = be.gram(SV, Xb, spec, x_sqnorm=sv_sqnorm, y_sqnorm=None if x_sqnorm is None else x_sqnorm[s0:s1],
                    dtype=xp.float64)
        dec[s0:s1] = (coef @ K).T + b[None, :]

    # (one block: no threads, and no count of the cores, which costs 50 us a call in joblib's cpu_count)
    map_threads(block, starts, 1 if be.is_gpu or len(starts) == 1 else _decision_threads())
    return dec


def _decision_threads():
    """Threads of a CPU :func:`_blocked_decision`: :data:`DECISION_THREADS`, or joblib's count of usable
    cores when it is None; 1 outside the main thread (threadpoolctl's limit is process-wide, so it is
    set from one thread only: a caller's threads, e.g. ``SVC(n_jobs=...)``'s, predict block by block)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return 1
    if DECISION_THREADS is not None:
        return int(DECISION_THREADS)
    from joblib import cpu_count

    return cpu_count()


def _cv_folds(perm, yb, n_folds):
    """LIBSVM's cross-validation folds of one class pair (``svm_binary_svc_probability``): the permutation
    ``perm`` of its rows cut into ``n_folds`` consecutive parts; yields ``(test, train, const)`` per non-empty
    part, ``const`` None where the training rows hold both classes, else the decision value the held-out
    rows get (+1 or -1 for a training part of one class, 0 for none)."""
    n_b = int(yb.shape[0])
    for i in range(n_folds):
        lo, hi = i * n_b // n_folds, (i + 1) * n_b // n_folds
        test, train = perm[lo:hi], np.concatenate([perm[:lo], perm[hi:]])
        if test.shape[0] == 0:
            continue
        n_pos = int(np.count_nonzero(yb[train] > 0))
        const = None
        if n_pos == 0 or n_pos == train.shape[0]:
            const = 0.0 if train.shape[0] == 0 else (1.0 if n_pos > 0 else -1.0)
        yield test, train, const


def _segment_rows(be, X, x_sqnorm, spec):
    """What :func:`solve_host_problems` forms its Gram blocks from: ``(X, squared norms or None)``, dense RBF
    rows far from the origin centred first (their values depend on differences only; see
    :func:`gpusvm._solvers.smo_batched.centered_for_rbf`)."""
    from ._solvers.smo_batched import centered_for_rbf

    if spec.kind != "rbf":
        return X, None
    if be.issparse(X):
        return X, x_sqnorm
    return centered_for_rbf(be, X, x_sqnorm)


def solve_host_problems(be, rows_of, spec, problems, *, mode, tol, max_iter, pa_recent, keys=None):
    """Solve the binary problems ``problems`` (host ``(rows, y, C)`` each, from alpha = 0) with
    :func:`gpusvm._solvers.segments.solve_segments` and float64 Gram blocks; ``rows_of`` from
    :func:`_segment_rows`; problems of the same ``keys`` entry share their Gram block. Returns each
    problem's :class:`~gpusvm._solvers.BinaryResult` (``n_iter`` in SMO steps, ``gradient`` over its rows),
    the labels on the device and each problem's (size, end) in them."""
    from ._solvers import BinaryResult
    from ._solvers.segments import solve_segments

    Xg, sq = rows_of
    sizes = [int(v[0].shape[0]) for v in problems]
    ends = np.cumsum(sizes).tolist()
    # every problem's rows, labels and bounds in one copy each to the device; the problems are views of them
    rows_d, y_d, C_d = (be.asarray(np.concatenate([v[j] for v in problems])) for j in range(3))
    keys = [None] * len(problems) if keys is None else keys
    done = solve_segments(be, Xg, [(rows_d[e - q:e], y_d[e - q:e], C_d[e - q:e], None, key)
                                   for q, e, key in zip(sizes, ends, keys)],
                          spec, mode=mode, tol=tol, max_iter=max_iter, gram_dtype="float64", x_sqnorm=sq,
                          pa_recent=pa_recent)
    results = [BinaryResult(alpha=r["alpha"], b=r["b"], objective=r["objective"], n_iter=r["n_iter"],
                            converged=r["converged"], gradient=r["G"],
                            info={"decomposition": "pair-batch", "gram_dtype": "float64"}) for r in done]
    return results, y_d, list(zip(sizes, ends))


def _callable_gram(kernel, A, B, n_a, n_b, where):
    """``kernel(A, B)`` of a callable kernel, which must return finite values of shape (n_a, n_b): an
    array of any library, a sparse matrix (densified, as sklearn does) or nested lists."""
    K = kernel(A, B)
    if hasattr(K, "toarray"):
        K = K.toarray()
    if not hasattr(K, "shape"):
        K = np.asarray(K, dtype=np.float64)
    shape = tuple(int(v) for v in K.shape)
    if shape != (n_a, n_b):
        raise ValueError(f"The kernel callable must return the Gram values of shape {(n_a, n_b)} {where}; "
                         f"it returned {type(K).__name__} of shape {shape}.")
    # (methods only, so this holds for NumPy and CuPy alike: NaN and inf fail the test; reductions, where
    # abs(K) < inf made an n_a x n_b float copy of K beside it)
    if K.dtype.kind not in "biuf" or (K.size and not (bool(K.max() < math.inf) and bool(K.min() > -math.inf))):
        raise ValueError(f"The kernel callable returned values that are not finite real numbers {where} "
                         f"(dtype {K.dtype}); it must return the Gram values.")
    return K


# asymmetry of a training Gram matrix (relative to its largest value) beyond which fit refuses it: far above
# what rounding leaves (a float32 X @ X.T of 10,000 features: ~1e-6), far below what made the solvers run on
# for ever (an upper triangle of ones added to a linear gram; 10% on an RBF one: ALFPGM 200,000 rounds)
_ASYMMETRY_MAX = 1e-4


def _check_precomputed(be, K, n):
    """kernel="precomputed": the training Gram matrix must be dense and square (sklearn's messages)."""
    if be.issparse(K):
        raise TypeError("Sparse precomputed kernels are not supported.")
    if int(K.shape[1]) != n:
        raise ValueError(f"Precomputed matrix must be a square matrix. Input is a {n}x{int(K.shape[1])} matrix.")


def _check_symmetric(be, spec, source):
    """A training Gram matrix (``spec.matrix``; ``source``: "precomputed" or "callable") must be symmetric:
    checked in row blocks (no n x n copy); scikit-learn does not check, and its solver never returns on one
    that is far from symmetric, as ours did."""
    xp, K = be.xp, spec.matrix
    n = int(K.shape[0])
    scale = spec.matrix_max_abs
    worst, step = 0.0, max(1, (1 << 22) // max(n, 1))
    for i in range(0, n, step):
        worst = max(worst, float(xp.max(xp.abs(K[i:i + step, :] - K[:, i:i + step].T))))
    if worst > _ASYMMETRY_MAX * scale:
        what = "The precomputed Gram matrix" if source == "precomputed" else "The Gram matrix of the kernel callable"
        raise ValueError(f"{what} is not symmetric: max |K - K.T| = {worst:.3g} with max |K| = {scale:.3g}. A Gram "
                         "matrix k(x_i, x_j) is symmetric, and the solvers need it to be (they may never converge "
                         "otherwise); the dual problem only sees (K + K.T) / 2, so pass that if it is what you mean.")


def ovo_fit_setup(est, be, X, y, sample_weight, owner):
    """What one-vs-one fits (:class:`SVC`, :class:`gpusvm.DCSVC`) read from the labels, the weights and X before
    solving: ``(classes, y_idx, class weights per class, C per sample, the rows of positive C, gamma)``. Raises
    for fewer than two classes; gamma is resolved as scikit-learn does, from all of X (zero-weight rows too)."""
    n, d = int(X.shape[0]), int(X.shape[1])
    y = check_class_labels(y, n, owner=owner)
    classes, y_idx = class_indices(y)
    if len(classes) < 2:
        raise ValueError(f"The number of classes has to be greater than one; got {len(classes)} class "
                         f"({owner} cannot train on a single class).")
    w, cw, _ = weights_per_sample(sample_weight, est.class_weight, classes, y, y_idx, owner=owner, C=est.C)
    Cvec_all = float(est.C) * w
    if isinstance(est.gamma, str):
        gamma = resolve_gamma(est.gamma, feature_variance(be, X), d, used=est.kernel in ("rbf", "poly", "sigmoid"))
    else:
        gamma = float(est.gamma)
    return classes, y_idx, cw, Cvec_all, np.flatnonzero(Cvec_all > 0), gamma


class SVC(ClassifierMixin, BaseEstimator):
    """C-support vector classification with an exact dual solver, on the CPU or the GPU.

    Solves the same problem as :class:`sklearn.svm.SVC` (LIBSVM's C-SVC): for each pair of classes
    (one-vs-one, as LIBSVM), the dual

        max_alpha  sum(alpha) - 1/2 alpha^T Q alpha,   Q_ij = y_i y_j k(x_i, x_j),
        s.t.       0 <= alpha_i <= C_i,  y^T alpha = 0,

    with ``C_i = C * class_weight[y_i] * sample_weight_i``.

    Parameters
    ----------
    C : float, default=1.0
        Regularization parameter, > 0.
    kernel : {"linear", "poly", "rbf", "sigmoid", "precomputed"} or callable, default="rbf"
        The gram (SVM kernel) function. "precomputed" (as sklearn): X is the Gram matrix of the training
        points, of shape (n_samples, n_samples), dense, and :meth:`predict` takes the Gram values
        between the new and the training points, of shape (n_new, n_samples). Every solver and device
        takes it (the solvers see each point as its row of the matrix, gpusvm._gram), duplicate points
        are not merged, and ``support_vectors_`` is empty as in sklearn (``support_`` names the
        columns that prediction reads). A callable, as sklearn: ``kernel(A, B)`` returns the Gram
        values between the rows of A and B, shape (len(A), len(B)); fit calls it once on the training
        data and solves that matrix as "precomputed"; X may then be anything the callable takes
        (strings, graphs: it is only indexed), the support vectors' rows are kept (``_X_sv``) and
        prediction calls ``kernel(X, those rows)``; ``support_vectors_`` is empty as in sklearn.
    degree : int, default=3
        Degree of the "poly" gram.
    gamma : {"scale", "auto"} or float, default="scale"
        Gram coefficient: "scale" = 1 / (n_features * X.var()), "auto" = 1 / n_features (as sklearn;
        X.var() is the variance of all entries, zeros included for sparse X).
    coef0 : float, default=0.0
        Independent term of the "poly" and "sigmoid" grams.
    tol : float, default=1e-3
        Stop when the maximal KKT violation gap falls below ``tol``.
    solver : str, default="smo"
        A registered binary dual solver: "smo" (LIBSVM's SMO with second-order working sets),
        "pa-smo" (planning-ahead SMO), "alfpgm", ...
    cache_size : float, default=200
        Gram-row cache budget in MB (per binary problem).
    max_iter : int, default=-1
        Iteration limit per binary problem (the solver's unit; -1: none, except that the pair-at-a-time
        SMO loop stops at LIBSVM's own limit of max(10^7, 100 n) steps, n the problem's size, as
        svm-train does). Reaching it gives a ``ConvergenceWarning`` and a usable model.
    class_weight : dict or "balanced", default=None
        Multiply C of class c by ``class_weight[c]``.
    decision_function_shape : {"ovr", "ovo"}, default="ovr"
        Shape of :meth:`decision_function` for more than two classes, as sklearn.
    probability : bool, default=False
        Enable :meth:`predict_proba` and :meth:`predict_log_proba`, as sklearn / LIBSVM ``-b 1``: every
        class pair's decision values are cross-validated (5 folds, 5 extra fits per pair) and a Platt
        sigmoid is fitted to them; more than two classes are coupled by Wu, Lin and Weng's method
        (:mod:`gpusvm._platt`). As in sklearn, the probabilities come from that separate calibration and
        may disagree with :meth:`predict` near the boundary. With two classes the sigmoid's value is the
        probability, as in LIBSVM's ``svm-predict -b 1`` (checked with 3.24 and 3.37); scikit-learn's
        bundled LIBSVM runs the coupling iteration on the two classes too, which stops at a tolerance and
        moves its values by up to about 3e-3 from the sigmoid's. The string "deprecated" (scikit-learn
        1.9's default, which deprecates the parameter there) means False, so that
        ``SVC(**sklearn.svm.SVC().get_params())`` works; ours is not deprecated.
    device : {"auto", "cpu", "gpu", "gpu:N"}, default="auto"
        Where to fit; see :func:`gpusvm.get_backend`.
    random_state : int, RandomState or None
        Passed to solvers that use randomness, and the folds of ``probability=True``.
    verbose : bool, default=False
    decomposition : {"auto", "pairwise", "batched"}, default="auto"
        SMO variants on the CPU: pair-at-a-time loop or batched working-set decomposition (always
        batched on the GPU). Other solvers ("alfpgm") ignore it, with a ``UserWarning`` when it is
        not "auto".
    working_set_size : int, optional
        Working-set size of the batched decomposition, 2 to 1,024.
    gram_dtype : {"float32", "float64"}, default="float32"
        Type of the stored Gram values (alpha and the gradient are always float64). "float32" halves the
        cache's memory, as LIBSVM's float cache does, and is promoted to "float64" for a problem that
        float32 values cannot describe: when, on a sample of 64 rows, their rounding moves the median
        pair curvature ``K_ii + K_jj - 2 K_ij`` by more than 1e-5 of itself (linear and polynomial grams of
        data far from the origin; scaled data measure 1e-9 to 1e-6). There LIBSVM's solution drifts: on
        200 blobs shifted by 300 with a cubic gram, scikit-learn's SVC ends 3.7% below the optimal dual
        objective, its decision values off by 8% of their range (tests/test_gram_precision.py). The batched
        decomposition and ALFPGM, which compute values from float32 rows, also promote when the worst RBF
        diagonal of the sample is off by more than 5e-4 of the median curvature (huge gamma) and when
        float32 rows would overflow (squared norms beyond a quarter of float32's range, or polynomial
        values beyond float32's range; values beyond float64's are an error). The batched
        decomposition checks its float32 stop on the gradient recomputed with float64 values and, where
        the gap is still open (at large C), finishes with float64 rows (on the CPU when the check's
        ``n x n_SV`` Gram pass is at most 2**25 values or the solve computed at least n_SV Gram rows).
    pa_recent : {2, 3}, default=2
        Planning-ahead SMO plans with the 2 or 3 most recent working sets.
    n_pairs, mu, inner_tol, delta_alpha, min_alpha_opt, max_alpha_opt, min_alpha_check
        Options of the "alfpgm" solver (see its documentation).
    deduplicate : {"auto", True, False}, default="auto"
        Merge training points that are equal and have the same label into one point whose bound is the
        sum of theirs, solve the smaller dual, and split each merged alpha back over the copies (each
        copy in training order up to its own ``C_i``). This is exact: the dual objective, the bias and
        the decision function are those of the problem with every copy (:mod:`gpusvm._dedupe`); only
        the split of alpha over copies, hence ``support_``, is one of the equally optimal ones (LIBSVM's
        depends on its working-set order). "auto" merges when the distinct (x, y) pairs are at most half
        of the rows (skin_nonskin, 23% distinct: cold fit 4.66x faster on the CPU); True always merges
        (a9a 1.72x, w8a 2.25x, phishing 1.40x faster; benchmarks/results/dedupe_cpu.md); False never
        merges. Only an unmerged fit has LIBSVM's support vectors (up to the tolerance).
    shrinking : bool, default=True
        LIBSVM's shrinking heuristic (as sklearn), in the pair-at-a-time SMO loop of "smo" and "pa-smo"
        (the CPU default). It changes the path, not the solution. The batched decomposition (always
        used on the GPU) and "alfpgm" have no shrinking and ignore it.
    break_ties : bool, default=False
        As sklearn: with ``decision_function_shape="ovr"`` and more than two classes, :meth:`predict`
        returns the class of the largest :meth:`decision_function` value instead of LIBSVM's
        one-vs-one vote. Must be False with ``decision_function_shape="ovo"``. Slower to predict.
    n_jobs : int, default=None
        Threads that solve the class pairs of a multi-class CPU fit (and their ``probability``
        cross-validation) at the same time; joblib's convention: None means 1 (unless in a
        ``joblib.parallel_backend`` context), -1 all cores. The solvers release the GIL, and every
        pair is solved exactly as alone, so the model does not depend on it. Each thread keeps its own
        Gram-row cache of ``cache_size`` MB. A GPU fit solves the pairs one after the other, or together
        (``batch_pairs``).
    batch_pairs : {"auto", True, False}, default="auto"
        Solve the class pairs of the SMO solvers ("smo", "pa-smo") together: every pair of at most
        :data:`PAIR_BATCH_MAX_SIZE` (4,096) points, after copies are merged, gets its whole Gram block
        (float64, whatever ``gram_dtype`` says: the blocks are small, and the solve then needs no float64
        check of a float32 stop) and is solved exactly, to ``tol``, by SMO (or PA-SMO) steps with LIBSVM's
        working-set rule and no shrinking, every pair in one launch of the batched local SMO: one CUDA
        thread block per pair (:mod:`gpusvm._solvers.segments`, the same launch as DCSVC's clusters).
        One after the other, each small pair pays the GPU decomposition's fixed costs, its rounds of
        launches and host synchronizations (digits, 45 pairs of about 360 points, on an H200: 0.76 s
        against 0.027 s on the host's CPU). "auto" turns it on for GPU fits of more than two classes;
        True also for two classes and on the CPU, where the compiled twin solves the pairs one after the
        other without the pair-at-a-time loop's shrinking and cache (slower there; for tests). With
        ``probability`` the five cross-validation folds of those pairs are solved together too (a
        fold is its pair's problem with the held-out rows' bounds set to 0). Larger pairs and the other
        solvers are solved one by one.
        The solution is the same up to ``tol`` (for the "sigmoid" gram, and precomputed or callable grams
        that are not positive semidefinite, the dual is not convex, and the two paths can end at
        different solutions that both meet ``tol``, as any two solvers can); ``n_iter_`` of a batched pair
        counts its SMO steps, and ``max_iter`` caps them as in the pair-at-a-time loop. A batched pair
        does not use ``decomposition``, ``working_set_size``, ``gram_dtype`` or ``shrinking``, which shape
        the one-by-one solves (pass False to have them). When the pairs' Gram blocks (up to 1 GiB per
        launch) do not fit in the GPU's memory, "auto" warns and solves the pairs one by one; True
        raises the memory error.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    class_weight_ : ndarray of shape (n_classes,)
        Multipliers of C per class.
    support_ : ndarray of shape (n_SV,)
        Indices of the support vectors in the training data, grouped by class.
    support_vectors_ : {ndarray, CSR matrix} of shape (n_SV, n_features)
        Dense after a dense fit; a CSR matrix (``scipy.sparse.csr_matrix``, or
        ``cupyx.scipy.sparse.csr_matrix`` after a GPU fit) after a sparse fit, as sklearn. Rows of X as
        given: float32 after a float32 fit (sklearn converts X to float64 first), float64 otherwise;
        decision values are float64 either way. Prediction keeps values derived from them (squared
        norms): a NumPy array becomes read-only at the first prediction; to change the model, assign a
        new array rather than editing it in place (which CuPy and CSR arrays would not refuse).
    dual_coef_ : {ndarray, CSR matrix} of shape (n_classes - 1, n_SV)
        LIBSVM's one-vs-one layout (as sklearn). After a sparse fit a CSR matrix of the same types as
        ``support_vectors_`` that stores every entry, zeros included (sklearn's layout).
    intercept_ : ndarray of shape (n_classes * (n_classes - 1) / 2,)
        As LIBSVM's: the mean of ``-y_i G_i`` over the free support vectors, or the midpoint of the
        interval of optimal intercepts when none is free. An alpha within a relative 1e-12 of a bound
        counts as at it. LIBSVM counts such an alpha as free (its update can leave one at ``C_i (1 -
        1e-14)``, and the CPU solver reproduces its alphas), and then takes that alpha's end of the
        interval: where every support vector is at a bound (small C, class or sample weights) the two
        intercepts can differ by much of the interval, both optimal (the same dual solution), and so can
        the predictions near the boundary (a poly fit with "balanced" class weights: -1.0 against
        -3.6e-5, the interval [-1.0, 1.0]).
    coef_ : {ndarray, CSR matrix} of shape (n_classes * (n_classes - 1) / 2, n_features)
        Primal weights of every class pair, ``kernel="linear"`` only (as sklearn); CSR after a sparse
        fit.
    n_support_ : ndarray of shape (n_classes,)
    n_iter_ : ndarray of shape (n_classes * (n_classes - 1) / 2,)
        Solver iterations per binary problem.
    objective_ : ndarray of shape (n_classes * (n_classes - 1) / 2,)
        Dual objective per binary problem. The pair-at-a-time loop (the CPU's "smo" and "pa-smo") reports
        it as LIBSVM reports ``obj``: from its running gradient, which with float32 Gram values carries
        their rounding, summed over every step. Recomputed from the returned ``dual_coef_`` in float64 it
        differed by at most 7e-7 relative on 8,000-row prefixes of a9a, ijcnn1, w8a and phishing (C and
        gamma of issue #3), but by 3e-5 on 60 noisy points with C=1e10 and gamma=1 (66,071 steps, the
        same alphas as scikit-learn's: 116060.593 against 116057.116); ``gram_dtype="float64"`` reports
        that of its coefficients (116057.123 against 116057.123 there). After very long solves the drift
        also moves the stop: 300 centred points, linear gram, C=1e6, stopped after 261 million steps with
        coefficients whose objective is 1.9% below the optimum and a reported one 7.1% above it (float64
        values: the optimum, 57,990,123.5, after 833 million steps). Use float64 values at such C. The
        batched decomposition and "alfpgm" recompute it with float64 values where affordable (see
        ``gram_dtype``).
    fit_status_ : int
        0 when every binary problem converged, 1 otherwise.
    n_distinct_ : int or None
        Number of distinct (x, y) pairs among the training points, counted when ``deduplicate`` is not
        False (None otherwise, and for a precomputed or callable gram, whose points are never merged).
        Copies were merged when it is below ``n_samples`` and, for "auto", at most half of it.
    probA_, probB_ : ndarray of shape (n_classes * (n_classes - 1) / 2,)
        Platt sigmoid of each class pair, P(first class | f) = 1 / (1 + exp(probA_ f + probB_)), f the
        pair's decision value in LIBSVM's sign (> 0 favours the first class); empty when
        ``probability=False``.
    shape_fit_ : tuple
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Column names of X when it was a data frame with string column names (as scikit-learn's
        estimators; absent otherwise).

    Notes
    -----
    Fitted attributes stay on the device of the fit: ``support_vectors_``, ``dual_coef_``,
    ``intercept_`` and ``support_`` are CuPy arrays after a GPU fit; ``classes_``, ``n_support_``,
    ``n_iter_`` and ``objective_`` are always NumPy. :meth:`to_device` moves a fitted model
    ("cpu" or "gpu") and returns it (sparse attributes stay sparse: SciPy CSR on the CPU, cupyx CSR
    on the GPU). Predictions come back in the input's array library.

    A model fitted on sparse X predicts on dense X and the other way round (the gram is the same
    either way). sklearn accepts the first and raises for the second ("cannot use sparse input in
    'SVC' trained on dense data"); we accept both.
    """

    def __init__(self, *, C=1.0, kernel="rbf", degree=3, gamma="scale", coef0=0.0, tol=1e-3,
                 solver="smo", cache_size=200, max_iter=-1, class_weight=None,
                 decision_function_shape="ovr", probability=False, device="auto", random_state=None,
                 verbose=False, decomposition="auto", working_set_size=None, gram_dtype="float32", pa_recent=2,
                 n_pairs=None, mu=0.1, inner_tol=None, delta_alpha=1e-6, min_alpha_opt=5,
                 max_alpha_opt=20, min_alpha_check=None, deduplicate="auto", shrinking=True, break_ties=False,
                 n_jobs=None, batch_pairs="auto"):
        self.C = C
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.tol = tol
        self.solver = solver
        self.cache_size = cache_size
        self.max_iter = max_iter
        self.class_weight = class_weight
        self.decision_function_shape = decision_function_shape
        self.probability = probability
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self.decomposition = decomposition
        self.working_set_size = working_set_size
        self.gram_dtype = gram_dtype
        self.pa_recent = pa_recent
        self.n_pairs = n_pairs
        self.mu = mu
        self.inner_tol = inner_tol
        self.delta_alpha = delta_alpha
        self.min_alpha_opt = min_alpha_opt
        self.max_alpha_opt = max_alpha_opt
        self.min_alpha_check = min_alpha_check
        self.deduplicate = deduplicate
        self.shrinking = shrinking
        self.break_ties = break_ties
        self.n_jobs = n_jobs
        self.batch_pairs = batch_pairs

    # ------------------------------------------------------------------------------------------
    def _validate_params(self):
        from ._solvers import get_binary_solver

        check_scalar(self.C, "C", "SVC", low=0.0, low_open=True)
        check_random_state_param(self.random_state, "SVC")
        if not callable(self.kernel):
            check_options(self.kernel, "kernel", "SVC", _KERNELS)
        check_degree(self.degree, self.kernel, "SVC")
        check_gamma(self.gamma, self.kernel, "SVC")
        check_scalar(self.coef0, "coef0", "SVC")
        check_scalar(self.tol, "tol", "SVC", low=0.0, low_open=True)
        check_scalar(self.cache_size, "cache_size", "SVC", low=0.0, low_open=True)
        if isinstance(self.max_iter, bool) or not isinstance(self.max_iter, numbers.Integral) or (
                self.max_iter < 1 and self.max_iter != -1):
            raise ValueError("The 'max_iter' parameter of SVC must be -1 or an int in the range [1, inf). "
                             f"Got {self.max_iter!r} instead.")
        check_options(self.decision_function_shape, "decision_function_shape", "SVC", ("ovr", "ovo"))
        # "deprecated": scikit-learn 1.9's default (its SVC deprecates probability), so that our SVC takes
        # the parameters of theirs (SVC(**sklearn_svc.get_params())); it means False, as there
        if not isinstance(self.probability, (bool, np.bool_)) and not (
                isinstance(self.probability, str) and self.probability == "deprecated"):
            raise ValueError(f"The 'probability' parameter of SVC must be a bool. Got {self.probability!r} instead.")
        check_options(self.decomposition, "decomposition", "SVC", ("auto", "pairwise", "batched"))
        check_options(str(self.gram_dtype), "gram_dtype", "SVC", ("float32", "float64"))
        if self.pa_recent not in (2, 3) or isinstance(self.pa_recent, bool):
            raise ValueError(f"The 'pa_recent' parameter of SVC must be one of [2, 3]. Got {self.pa_recent!r} instead.")
        if self.working_set_size is not None:  # (checked at every fit, not only where a batched solve runs)
            check_scalar(self.working_set_size, "working_set_size", "SVC", kind="int", low=2, high=MAX_WORKING_SET)
        check_class_weight(self.class_weight, "SVC")
        check_deduplicate(self.deduplicate, "SVC")
        check_n_jobs(self.n_jobs, "SVC")
        check_auto_or_bool(self.batch_pairs, "batch_pairs", "SVC")
        for name in ("shrinking", "break_ties"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ValueError(f"The '{name}' parameter of SVC must be a bool. Got {getattr(self, name)!r} instead.")
        if not isinstance(self.solver, str):
            raise ValueError(f"The 'solver' parameter of SVC must be a str. Got {self.solver!r} instead.")
        solver = get_binary_solver(self.solver)
        if self.decomposition != "auto" and "decomposition" not in solver[1]:
            # a warning, not an error: the fit is the solver's correct one, and a grid over solver keeps working
            warnings.warn(f"decomposition={self.decomposition!r} applies to the SMO solvers ('smo', 'pa-smo') "
                          f"only; solver={self.solver!r} ignores it.", UserWarning, stacklevel=4)
        if (not isinstance(self.batch_pairs, str) and bool(self.batch_pairs)  # (True or NumPy's True)
                and self.solver not in BATCH_MODES):  # (a warning for the same reason)
            warnings.warn(f"batch_pairs=True applies to the SMO solvers ('smo', 'pa-smo') only; "
                          f"solver={self.solver!r} solves the pairs one by one.", UserWarning, stacklevel=4)
        return solver

    def _gram_spec(self, gamma, matrix=None):
        kind = "precomputed" if callable(self.kernel) else self.kernel
        return GramSpec(kind, gamma=gamma, coef0=self.coef0, degree=self.degree, matrix=matrix)

    # ------------------------------------------------------------------------------------------
    @device_memory_guard("SVC.fit", hint="lower cache_size (the MB of Gram rows kept on the device), "
                         "pass batch_pairs=False (a multi-class fit then holds one pair's rows at a time, not "
                         "up to 1 GiB of the pairs' Gram blocks), pass float32 X, or use BudgetSVC / DCSVC, "
                         "whose memory does not grow with the square of the number of training points")
    def fit(self, X, y, sample_weight=None):
        """Fit the one-vs-one SVC.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            NumPy, SciPy sparse (CSR), CuPy or cupyx CSR; the (n_samples, n_samples) Gram matrix for
            ``kernel="precomputed"``; anything the callable takes for a callable kernel.
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative per-sample multipliers of C; samples of weight 0 are left out.

        Returns
        -------
        self
        """
        solver_fn, solver_opts = self._validate_params()
        if y is None:
            raise ValueError("SVC requires y to be passed, but the target y is None.")
        X_raw = X
        if callable(self.kernel):  # the callable's Gram matrix, then solved as precomputed
            from sklearn.utils.validation import _num_samples

            n_raw = _num_samples(X)
            X = _callable_gram(self.kernel, X, X, n_raw, n_raw, "on the training data (kernel(X, X))")
        # X decides the device; labels and weights are read on the host from either library (string labels
        # cannot be CuPy arrays), as LinearSVC and BudgetSVC do
        be = get_backend(self.device, X)
        X = check_X(X, be, owner="SVC", estimator=self, reset=True, gram=self.kernel == "precomputed")
        n, d = int(X.shape[0]), int(X.shape[1])
        precomputed = self.kernel == "precomputed" or callable(self.kernel)
        if precomputed:
            _check_precomputed(be, X, n)
        classes, y_idx, cw, Cvec_all, keep, gamma = ovo_fit_setup(self, be, X, y, sample_weight, "SVC")

        xp = be.xp
        if precomputed:  # the solvers see every point as its row of the matrix (gpusvm._gram)
            spec = self._gram_spec(gamma, matrix=xp.ascontiguousarray(X, dtype=xp.float64))
            X = index_points(be, n)
        else:
            spec = self._gram_spec(gamma)
        x_sqnorm = be.row_sqnorms(X, xp.float64)
        group, n_groups = plan_deduplication(be, X, y_idx, False if precomputed else self.deduplicate)
        n_classes = len(classes)
        cache_bytes = int(float(self.cache_size) * 2**20)
        opts = {name: getattr(self, name) for name in solver_opts}
        pair_alpha, pair_idx, pair_b, n_iter, objective, converged = [], [], [], [], [], []
        stalled = 0  # binary problems whose solver stopped moving before reaching tol
        prob_a, prob_b = [], []
        problems = ovo_pair_rows(keep, y_idx, classes)
        if precomputed:  # (after the label and weight checks, whose messages scikit-learn's checks expect)
            _check_symmetric(be, spec, "precomputed" if self.kernel == "precomputed" else "callable")
        pairs = [(a, b) for a, b, _, _ in problems]
        tasks = [(idx, yb, None if group is None else group[idx]) for _, _, idx, yb in problems]
        if self._probability():  # the folds of every pair, drawn in pair order (as one pair after the other)
            from sklearn.utils import check_random_state

            rs = check_random_state(self.random_state)
            perms = [rs.permutation(t[0].shape[0]) for t in tasks]

        together, cv_together = {}, {}
        if self._batch_pairs(be, len(pairs)):
            # (the rows the Gram blocks are formed from: made when a problem is batched, once)
            rows_of = functools.lru_cache(maxsize=1)(lambda: _segment_rows(be, X, x_sqnorm, spec))
            try:
                together = self._solve_pairs_together(be, rows_of, spec, tasks, Cvec_all)
                if self._probability():
                    cv_together = self._cv_decisions_together(be, rows_of, spec, tasks, Cvec_all, perms)
            except Exception as exc:
                if not (isinstance(self.batch_pairs, str) and is_device_oom(exc)):
                    raise
                # "auto" must not fail where the pairs one by one fit: their Gram blocks did not
                together, cv_together = {}, {}
                rows_of = None  # (drops a centred copy of X)
                warnings.warn("batch_pairs='auto': the class pairs' Gram blocks did not fit in the GPU's memory "
                              f"({type(exc).__name__}); the pairs are solved one by one. Pass batch_pairs=False to "
                              "skip the attempt.", UserWarning, stacklevel=2)

        if not together and self.solver in ROWS_SOLVERS and small_pairwise_applies(
                be, X, spec, opts.get("decomposition", "auto"), self.verbose):
            together = self._solve_small_pairs(be, X, x_sqnorm, spec, tasks, Cvec_all, opts, cache_bytes)

        def solve_pair(p):
            idx, yb, groups = tasks[p]
            if p in together:
                alpha, res = together[p]
            else:
                alpha, res = self._solve_rows(be, X, idx, yb, Cvec_all[idx], groups, x_sqnorm, spec, solver_fn,
                                              opts, cache_bytes, verbose=int(bool(self.verbose)))
            f = cv_together.get(p)
            if self._probability() and f is None:
                f = self._cv_decisions(be, be.select_rows(X, idx), yb, Cvec_all[idx], x_sqnorm[be.asarray(idx)],
                                       spec, solver_fn, opts, cache_bytes, perms[p], groups)
            return alpha, res, f

        results = map_problems(solve_pair, range(len(pairs)), self.n_jobs, on_gpu=be.is_gpu)
        for (idx, yb, _), (alpha, res, f) in zip(tasks, results):
            pair_alpha.append(alpha * yb)  # signed coefficients
            pair_idx.append(idx)
            pair_b.append(float(res.b))
            n_iter.append(int(res.n_iter))
            objective.append(float(res.objective))
            converged.append(bool(res.converged))
            stalled += bool(res.info.get("stalled", False))
            if self._probability():
                pa, pb = sigmoid_train(f, yb)
                prob_a.append(pa)
                prob_b.append(pb)

        # ---- LIBSVM's model layout: SVs grouped by class, dual_coef_ (n_classes - 1, n_SV) ----
        support, n_support, dual, coefs, intercept = ovo_model_layout(y_idx, n_classes, pairs, pair_alpha,
                                                                      pair_idx, pair_b)
        check_finite_model(dual, intercept, "SVC")

        # the model's attributes only once it is solved: a fit that raised (a class pair left without
        # positive weights, Ctrl-C) kept the model before it, but with this data's gamma
        self._be_name = be.device_key
        self._gamma = gamma
        self.classes_ = classes
        self.class_weight_ = np.asarray(cw, dtype=np.float64)
        self.support_ = be.asarray(support.astype(np.int32))
        sv = be.take_rows(X, be.asarray(support)) if support.shape[0] else X[:0]
        if precomputed:  # as sklearn: no vectors; prediction reads the columns support_ of its matrix
            sv = xp.empty((0, 0), dtype=xp.float64)
        # state of an earlier fit that this one does not set: a callable's training rows, the LIBSVM label
        # order of a model read from a file or trained by `gpusvm train` (votes, coupling, saving), and the
        # prediction cache of the model before (predict_operands)
        for name in ("_X_sv", "_label_order"):
            self.__dict__.pop(name, None)
        self._predict_cache = PredictCache()
        if callable(self.kernel):  # the training rows that prediction passes to the callable
            import scipy.sparse as sp
            from sklearn.utils import _safe_indexing

            rows = X_raw
            if sp.issparse(rows):  # COO, DIA, BSR cannot be indexed by rows (TypeError): their CSR can
                rows = rows.tocsr()
            elif not hasattr(rows, "__getitem__") and hasattr(rows, "__array__"):  # array-likes, as sklearn takes
                rows = np.asarray(rows)
            self._X_sv = _safe_indexing(rows, support)
        if be.issparse(X):  # as sklearn: a sparse fit keeps CSR support vectors and a CSR dual_coef_
            sv = _as_csr_matrix(sv)
            dual = _full_pattern_csr(dual)  # be.asarray below moves it to the fit device (cupyx CSR)
        self.support_vectors_ = sv
        self.dual_coef_ = be.asarray(dual)
        self.intercept_ = be.asarray(intercept)
        self._pair_coef = be.asarray(coefs)
        self._pair_b = be.asarray(np.array(pair_b))
        self.n_support_ = n_support
        self.n_iter_ = np.array(n_iter, dtype=np.int32)
        self.objective_ = np.array(objective)
        self.fit_status_ = 0 if all(converged) else 1
        self.probA_ = np.array(prob_a, dtype=np.float64)
        self.probB_ = np.array(prob_b, dtype=np.float64)
        self.shape_fit_ = (n, d)
        self.n_features_in_ = d
        if callable(self.kernel):  # as sklearn: X is the callable's business (no feature count)
            self.shape_fit_ = tuple(getattr(X_raw, "shape", (n,)))
            del self.n_features_in_
        self.n_distinct_ = n_groups
        if not all(converged):
            # (a stalled problem stopped before any limit: the limit is named only for those that reached it)
            why, remedy = early_stop_causes(converged.count(False), stalled, self.max_iter, self.tol)
            warnings.warn(f"Solver terminated early on {converged.count(False)} of {len(converged)} binary "
                          f"problem(s) ({why}). The model is usable but not optimal. Raise {remedy} or preprocess "
                          "the data (e.g. StandardScaler).", ConvergenceWarning, stacklevel=2)
        return self

    def _solve_rows(self, be, X, rows, yb, C, groups, x_sqnorm, spec, solver_fn, opts, cache_bytes, verbose=0):
        """Solve the binary dual on rows ``rows`` (host indices into ``X``) of ``X``; returns (alpha over
        ``rows`` on the host, the solver's result). With ``groups`` (host, the duplicate group of each
        row), copies are merged first and alpha is split back over them (:mod:`gpusvm._dedupe`)."""
        rows, yb, C, undo = reduce_problem(rows, yb, C, groups)
        if self.solver in ROWS_SOLVERS:
            # the pair-at-a-time loop gathers the rows into its own transposed copy: no copy of X[rows]
            # (LIBSVM's class order makes rows a permutation even for two classes) beside it; the batched
            # decomposition (the GPU's) copies them itself
            Xp, kw = X, {"rows": rows}
        else:
            Xp, kw = be.select_rows(X, rows), {}
        res = solver_fn(be, Xp, be.asarray(yb), spec, be.asarray(C), tol=float(self.tol),
                        max_iter=int(self.max_iter), cache_bytes=cache_bytes, alpha0=None,
                        x_sqnorm=x_sqnorm[be.asarray(rows)], verbose=verbose, random_state=self.random_state,
                        **opts, **kw)
        alpha = undo(_host(be, res.alpha).astype(np.float64))
        return alpha, res

    def _solve_small_pairs(self, be, X, x_sqnorm, spec, tasks, Cvec_all, opts, cache_bytes):
        """The class pairs of ``tasks`` of at most :data:`SMALL_PAIRWISE_MAX_ROWS` rows (after copies are merged)
        solved by :func:`solve_small_pairwise` (the CPU's pair-at-a-time solver, dense rows): ``{pair number:
        (alpha over its rows on the host, BinaryResult)}``, as :meth:`_solve_rows` returns for one pair, to the
        bit. With ``n_jobs``, the pairs in that many contiguous chunks, one call per thread."""
        reduced = {}
        for p, (idx, yb, groups) in enumerate(tasks):
            rows, yr, Cr, undo = reduce_problem(idx, yb, Cvec_all[idx], groups)
            if rows.shape[0] <= SMALL_PAIRWISE_MAX_ROWS:
                reduced[p] = (rows, yr, Cr, undo)
        keys = list(reduced)
        if not keys:
            return {}
        threads = max(1, min(len(keys), effective_n_jobs(self.n_jobs)))
        chunks = [keys[k * len(keys) // threads:(k + 1) * len(keys) // threads] for k in range(threads)]
        # (X's contiguous copy and norms once, not once per thread)
        kw = dict(tol=float(self.tol), max_iter=int(self.max_iter), cache_bytes=cache_bytes,
                  prepared=small_pairwise_prepare(X), **opts)
        solved = map_threads(lambda ps: solve_small_pairwise(self.solver, be, X, x_sqnorm, spec,
                                                             [reduced[p][:3] for p in ps], **kw), chunks, threads)
        out = {}
        for ps, results in zip(chunks, solved):
            for p, res in zip(ps, results):
                out[p] = (reduced[p][3](res.alpha), res)  # (host float64 already)
        return out

    def _batch_pairs(self, be, n_pairs) -> bool:
        """Whether this fit solves its class pairs together (``batch_pairs``)."""
        if self.solver not in BATCH_MODES:
            return False
        if isinstance(self.batch_pairs, str):  # "auto"
            return be.is_gpu and n_pairs > 1
        return bool(self.batch_pairs)

    def _segments(self, be, rows_of, spec, problems, keys=None):
        """:func:`solve_host_problems` with this estimator's solver, tol, max_iter and pa_recent; ``rows_of()``
        gives what :func:`_segment_rows` returns."""
        return solve_host_problems(be, rows_of(), spec, problems, mode=BATCH_MODES[self.solver], tol=float(self.tol),
                                   max_iter=int(self.max_iter), pa_recent=int(self.pa_recent), keys=keys)

    def _solve_pairs_together(self, be, rows_of, spec, tasks, Cvec_all):
        """Solve the class pairs of ``tasks`` that hold at most :data:`PAIR_BATCH_MAX_SIZE` points (after
        copies are merged) together (:meth:`_segments`); returns ``{pair number: (alpha over its rows on the
        host, BinaryResult)}``, as :meth:`_solve_rows` returns for one pair."""
        reduced = {}
        for p, (idx, yb, groups) in enumerate(tasks):
            rows, yr, Cr, undo = reduce_problem(idx, yb, Cvec_all[idx], groups)
            if rows.shape[0] <= PAIR_BATCH_MAX_SIZE:
                reduced[p] = (rows, yr, Cr, undo)
        if not reduced:
            return {}
        done, _, spans = self._segments(be, rows_of, spec, [v[:3] for v in reduced.values()])
        alphas = _host(be, be.xp.concatenate([res.alpha for res in done])).astype(np.float64)  # (one copy)
        out = {}
        for (p, (_, _, Cr, undo)), res, (q, e) in zip(reduced.items(), done, spans):
            alpha = alphas[e - q:e]
            if self.verbose:  # LIBSVM's summary (obj in its minimization form, rho = -b)
                n_sv = int(np.count_nonzero(alpha > 0))
                n_bsv = int(np.count_nonzero((alpha > 0) & (alpha >= Cr)))
                print(f"optimization finished, #iter = {res.n_iter}\nobj = {-res.objective:.6f}, "
                      f"rho = {-res.b:.6f}\nnSV = {n_sv}, nBSV = {n_bsv}", flush=True)
            out[p] = (undo(alpha), res)
        return out

    def _cv_decisions_together(self, be, rows_of, spec, tasks, Cvec_all, perms, n_folds=5):
        """:meth:`_cv_decisions` of every class pair of at most :data:`PAIR_BATCH_MAX_SIZE` points, the folds
        of all of them solved together (:meth:`_segments`); returns ``{pair number: the cross-validated
        decision values of its rows}``.

        A fold's problem is its pair's with the bounds of the held-out rows set to 0: their alphas stay 0
        (they are in neither working-set side), so it is the problem of the training rows alone, and the
        gradient it returns over all of the pair's rows gives the held-out rows' decision values
        ``y (G + 1) + b`` without another Gram product. Copies are not merged here (a fold may hold some
        copies of a point and not others); the solution is the same up to ``tol``."""
        out, problems, folds = {}, [], []
        for p, (idx, yb, _) in enumerate(tasks):
            n_b = int(yb.shape[0])
            if n_b > PAIR_BATCH_MAX_SIZE:
                continue
            dec = np.zeros(n_b)
            out[p] = dec
            for test, train, const in _cv_folds(perms[p], yb, n_folds):
                if const is not None:
                    dec[test] = const
                    continue
                Cf = Cvec_all[idx].copy()
                Cf[test] = 0.0
                problems.append((idx, yb, Cf))
                folds.append((p, test))
        if not problems:
            return out
        # (the folds of a pair share its Gram block)
        done, y_d, spans = self._segments(be, rows_of, spec, problems, keys=[p for p, _ in folds])
        # every fold's decision values on its pair's rows, in one copy to the host
        dec_all = _host(be, be.xp.concatenate([y_d[e - q:e] * (res.gradient + 1.0) + res.b
                                               for res, (q, e) in zip(done, spans)]))
        for (p, test), (q, e) in zip(folds, spans):
            out[p][test] = dec_all[e - q:e][test]
        return out

    def _cv_decisions(self, be, Xb, yb, Cb, x_sq, spec, solver_fn, opts, cache_bytes, perm, groups=None,
                      n_folds=5):
        """Cross-validated decision values of one class pair for Platt scaling, as LIBSVM's
        ``svm_binary_svc_probability``: the random permutation ``perm`` of the pair's rows cut into 5
        folds; a fold whose training part holds one class only gets +1 or -1."""
        dec = np.zeros(yb.shape[0])
        for test, train, const in _cv_folds(perm, yb, n_folds):
            if const is not None:
                dec[test] = const
                continue
            alpha, res = self._solve_rows(be, Xb, train, yb[train], Cb[train],
                                          None if groups is None else groups[train], x_sq, spec, solver_fn,
                                          opts, cache_bytes)
            coef = alpha * yb[train]
            nz = np.flatnonzero(coef)
            sv, te = be.asarray(train[nz]), be.asarray(test)
            f = _blocked_decision(be, be.take_rows(Xb, sv), be.asarray(coef[nz][None, :]),
                                  be.asarray(np.array([float(res.b)])), be.take_rows(Xb, te), spec,
                                  sv_sqnorm=x_sq[sv], x_sqnorm=x_sq[te])
            dec[test] = _host(be, f)[:, 0]
        return dec

    # ------------------------------------------------------------------------------------------
    def _check_fitted(self):
        if not hasattr(self, "support_vectors_"):
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet. Call 'fit' with "
                                 "appropriate arguments before using this estimator.")

    def _model_backend(self):
        return get_backend(self._be_name)

    def _pair_decision(self, X, merge_rows=None):
        """(backend, OvO decision values (n, n_pairs) on the model's device, input library); ``merge_rows`` as
        :func:`_blocked_decision`'s."""
        self._check_fitted()
        if callable(self.kernel):
            from sklearn.utils.validation import _num_samples

            n_sv = int(self._pair_coef.shape[1])
            X = _callable_gram(self.kernel, X, self._X_sv, _num_samples(X), n_sv,
                               "between the new points and the support vectors (kernel(X, support rows))")
        lib = array_library(X)
        be = self._model_backend()
        X = check_X(X, be, owner="SVC", estimator=self, gram=self.kernel == "precomputed")
        xp = be.xp
        if callable(self.kernel):  # the callable's values against the support vectors
            return be, pair_product(X.astype(xp.float64, copy=False), self._pair_coef) + self._pair_b[None, :], lib
        if X.shape[1] != self.n_features_in_:
            hint = (" (kernel='precomputed': X holds the Gram values between the new points and the "
                    f"{self.n_features_in_} training points)" if self.kernel == "precomputed" else "")
            raise ValueError(f"X has {X.shape[1]} features, but SVC is expecting {self.n_features_in_} "
                             f"features as input.{hint}")
        if self.kernel == "precomputed":  # X holds the Gram values against the training points
            cols = X[:, self.support_.astype(xp.int64)]
            # (the column take is already a copy: float64 values are not copied again)
            dec = pair_product((be.to_dense(cols) if be.issparse(cols) else cols).astype(xp.float64, copy=False),
                               self._pair_coef)
            return be, dec + self._pair_b[None, :], lib
        sources = (self.support_vectors_, self._pair_coef)
        operands = predict_operands(self, be, sources, lambda: sources)
        dec = _blocked_decision(be, None, None, self._pair_b, X, self._gram_spec(self._gamma), operands=operands,
                                merge_rows=merge_rows)
        return be, dec, lib

    @property
    def coef_(self):
        """Primal weights of every class pair when ``kernel="linear"`` (as sklearn's SVC).

        ndarray of shape (n_classes * (n_classes - 1) / 2, n_features), a CSR matrix after a sparse fit;
        ``X @ coef_.T + intercept_`` is :meth:`decision_function` with ``decision_function_shape="ovo"``
        (the one column of it for two classes). On the fit's device, and read-only for NumPy.
        """
        if self.kernel != "linear":
            raise AttributeError("coef_ is only available when using a linear kernel")
        self._check_fitted()
        be = self._model_backend()
        return linear_pair_weights(be, self._pair_coef, self.support_vectors_, len(self.classes_))

    def decision_function(self, X):
        """Decision values.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,) for two classes (> 0 means ``classes_[1]``), else
        (n_samples, n_classes) for "ovr" or (n_samples, n_classes * (n_classes - 1) / 2) for "ovo",
        in the input's array library.
        """
        k = len(getattr(self, "classes_", ()))  # (unfitted: the block raises NotFittedError)
        if self.decision_function_shape == "ovr" and k > 2:  # (n, k) out of (n, n_pairs): in blocks of rows
            return by_row_blocks(X, k, self._decision_block)
        return self._decision_block(X)

    def _decision_block(self, X, merge_rows=None):
        _, dec, lib = self._pair_decision(X, merge_rows)
        return ovo_decision_function(dec, len(self.classes_), self.decision_function_shape, lib)

    def predict(self, X):
        """Class labels by LIBSVM's one-vs-one vote (ties go to the lower class index, or for a model read
        from a LIBSVM file to the label listed first there, as LIBSVM's; see ``break_ties``).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,), in the input's array library.
        """
        self._check_fitted()
        if self.break_ties and self.decision_function_shape == "ovo":
            raise ValueError("break_ties must be False when decision_function_shape is 'ovo'.")
        return by_row_blocks(X, len(self.classes_), self._predict_block)

    def _predict_block(self, X, merge_rows=None):
        _, dec, lib = self._pair_decision(X, merge_rows)
        if self.break_ties and len(self.classes_) > 2:
            ovr = to_numpy(ovo_decision_function(dec, len(self.classes_), "ovr", lib))
            return to_input_library(self.classes_[np.argmax(ovr, axis=1)], lib)
        return ovo_predict(dec, self.classes_, lib, getattr(self, "_label_order", None))

    def _probability(self) -> bool:
        """The ``probability`` setting as a bool (scikit-learn's default string "deprecated" is False)."""
        return not isinstance(self.probability, str) and bool(self.probability)

    def _check_proba(self):
        if not self._probability():
            raise AttributeError("predict_proba is not available when probability=False (fit with "
                                 "SVC(probability=True)).")
        return True

    @available_if(_check_proba)
    def predict_proba(self, X):
        """Class probabilities (Platt scaling per class pair, pairwise coupling; see ``probability``).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes), columns in ``classes_`` order, in the input's array
        library.
        """
        return by_row_blocks(X, len(getattr(self, "classes_", ())), self._proba_block)

    def _proba_block(self, X, merge_rows=None):
        _, dec, lib = self._pair_decision(X, merge_rows)
        if self.probA_.shape[0] != dec.shape[1]:
            raise NotFittedError("This SVC was fitted with probability=False; refit it with probability=True "
                                 "to use predict_proba.")
        order = getattr(self, "_label_order", None)  # LIBSVM's label order (see ovo_probabilities)
        return to_input_library(ovo_probabilities(to_numpy(dec), self.probA_, self.probB_, order), lib)

    @available_if(_check_proba)
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`."""
        p = self.predict_proba(X)
        lib = array_library(p)
        return to_input_library(np.log(to_numpy(p)), lib)

    def score(self, X, y, sample_weight=None):
        """Mean accuracy on (X, y)."""
        from sklearn.metrics import accuracy_score

        sw = None if sample_weight is None else to_numpy(sample_weight)
        return accuracy_score(to_numpy(y), to_numpy(self.predict(X)), sample_weight=sw)

    def to_device(self, device):
        """Move a fitted model to ``device`` ("cpu", "gpu" or "gpu:N") and return it.

        ``support_vectors_``, ``support_``, ``dual_coef_``, ``intercept_`` (and internal arrays) are
        copied to the device; later predictions run there.
        """
        self._check_fitted()
        names = ["support_", "support_vectors_", "dual_coef_", "intercept_", "_pair_coef", "_pair_b"]
        # a callable kernel's training rows, which prediction passes to it next to X: numeric arrays move
        # with the model (a GPU model's rows in a CPU pickle, and mixed arrays for the callable, before);
        # other data (strings, lists) stays as it is
        if getattr(getattr(getattr(self, "_X_sv", None), "dtype", None), "kind", "O") in "biuf":
            names.append("_X_sv")
        self._predict_cache = PredictCache()
        return move_fitted(self, tuple(names), device)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # as sklearn: with kernel="precomputed" X is a dense Gram matrix, which cross-validation cuts by
        # rows and columns
        tags.input_tags.sparse = self.kernel != "precomputed"
        tags.input_tags.pairwise = self.kernel == "precomputed"
        return tags

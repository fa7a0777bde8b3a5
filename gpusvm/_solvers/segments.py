"""Many small, independent C-SVC duals solved together: one launch of ``be.local_smo_batched`` per chunk.

One after the other, each small binary problem costs the GPU decomposition's fixed costs: its rounds of
working-set selection, Gram rows and local solve, each a few launches and host synchronizations, which
dwarf the arithmetic of a problem of a few hundred points. Two callers have many such problems at once:

* :mod:`gpusvm._solvers.dcsvm`, the clusters of one DC-SVM level (warm-started);
* :class:`gpusvm.SVC`, the class pairs of a one-vs-one fit (cold).

:func:`solve_segments` forms each problem's whole Gram block once into one flat buffer (a segment) and
runs the exact SMO or PA-SMO solve of every segment to ``tol`` in one launch of the fused op
``local_smo_batched`` (kernels/smo_local.cu: one CUDA thread block per segment, a thread owning several
variables when the segment exceeds the block; the CPU twin solves the segments one after the other).
Intercepts, dual objectives and step counts of all segments then come to the host in one copy.

This module imports neither NumPy nor CuPy: everything goes through ``be``.
"""

from __future__ import annotations

from .._backend.ops.bias import free_mask
from ._common import BOUND_MARGIN, bias, step_cap

__all__ = ["BATCH_MODES", "DEFAULT_MAX_BYTES", "solve_segments"]

#: The binary solvers whose exact solve the batched local SMO performs, and its ``mode`` for each
BATCH_MODES = {"smo": 0, "pa-smo": 1}
#: Default bound on the Gram blocks of one launch (bytes)
DEFAULT_MAX_BYTES = 2**30
#: Launches whose blocks hold at least as many values as the whole Gram matrix of ``X`` and at most this many
#: take their blocks from that matrix, computed once (see :func:`_blocks_from_one_gram`)
ONE_GRAM_MAX_VALUES = 2**23


def segment_free_sums(be, y, alpha, G, C, seg_id, nb):
    """The (2, nb) device array of each segment's number of free variables (float64) and sum of y G over them,
    for :func:`segment_bias` (all segments in one pass).

    Free as :func:`gpusvm._solvers._common.bias` (the op ``free_sums``) counts it: not within a relative
    ``BOUND_MARGIN`` of a bound. A free SMO step can leave an alpha at ``C (1 - 2**-52)``; counted as free,
    that one variable set the intercept to an end of the interval of optimal intercepts, not to its
    midpoint where ``bias`` and LIBSVM put it (a class pair's decision values 0.88 apart)."""
    xp = be.xp
    free = free_mask(alpha, C, 1.0 - BOUND_MARGIN, BOUND_MARGIN)
    return xp.stack([xp.bincount(seg_id, weights=free.astype(xp.float64), minlength=nb),
                     xp.bincount(seg_id, weights=xp.where(free, y * G, 0.0), minlength=nb)])


def segment_bias(be, y, alpha, G, C, sizes, starts, n_free, s_free):
    """Per-segment intercepts, as :func:`gpusvm._solvers._common.bias` computes each: the mean of y G over a
    segment's free variables (``n_free`` and ``s_free``, host lists from :func:`segment_free_sums`), or that
    function itself for a segment without."""
    out = []
    for c in range(len(sizes)):
        if n_free[c] > 0:
            out.append(-s_free[c] / n_free[c])
        else:
            a, b = starts[c], starts[c] + sizes[c]
            out.append(float(bias(be, y[a:b], alpha[a:b], G[a:b], C[a:b])))
    return out


def _chunks(sizes, keys, itemsize, max_bytes):
    """Consecutive runs of problem numbers whose Gram blocks hold at most ``max_bytes`` together (a problem
    larger than that alone gets its own); a block shared by problems of the same key counts once."""
    chunks, cur, cur_bytes, seen = [], [], 0, set()
    for p, (q, key) in enumerate(zip(sizes, keys)):
        nbytes = 0 if key in seen else q * q * itemsize
        # (a problem whose block the chunk holds adds nothing: it stays even where that block alone is over
        # max_bytes, else each such problem got a launch and a copy of the block of its own)
        if cur and nbytes and cur_bytes + nbytes > max_bytes:
            chunks.append(cur)
            cur, cur_bytes, seen = [], 0, set()
            nbytes = q * q * itemsize
        cur.append(p)
        cur_bytes += nbytes
        seen.add(key)
    if cur:
        chunks.append(cur)
    return chunks


def _blocks_from_one_gram(be, X, rows, sizes, spec, x_sqnorm, gdt, *, diag_rows=None):
    """The flat Gram blocks of the problems whose rows are ``rows`` (their concatenation, on ``be``) of
    ``sizes``, gathered from the whole Gram matrix of ``X`` in one pass, and the Gram diagonal (float64) at
    ``diag_rows`` (default ``rows``).

    Per problem, a block costs about ten array ops (the rows gathered, the product, the transform, the copy
    into the flat buffer, the diagonal): on the GPU, launches that dwarf the arithmetic of a block of a few
    hundred points. One-vs-one class pairs cover every row of ``X`` k - 1 times, so their blocks hold
    2 (k - 1) / k times as many values as ``K(X, X)`` itself: one product and the fused op ``take_blocks``
    (one gather on the GPU) do the same. The values are those of the per-problem products up to the rounding
    of the matrix product (a different blocking of the same sums).
    """
    xp = be.xp
    K = be.gram(X, X, spec, x_sqnorm=x_sqnorm, y_sqnorm=x_sqnorm, dtype=gdt)
    return be.take_blocks(K, rows, sizes), xp.diagonal(K)[rows if diag_rows is None else diag_rows].astype(xp.float64)


def solve_segments(be, X, problems, spec, *, mode, tol, max_iter, gram_dtype, x_sqnorm=None, pa_recent=2,
                   max_bytes=DEFAULT_MAX_BYTES):
    """Solve the binary duals ``problems`` exactly, to ``tol``, with ``be.local_smo_batched``.

    Parameters
    ----------
    be : Backend
    X : dense or CSR matrix on ``be`` (index points for a precomputed gram)
    problems : list of (rows, y, C, alpha0) or (rows, y, C, alpha0, key)
        Each problem's rows of ``X`` (int array on ``be``), labels (+-1, float64), upper bounds and a
        feasible start (0 <= alpha0 <= C, sum(y alpha0) = 0), all on ``be``, or None for alpha0 = 0;
        each holds both labels. Problems of the same (hashable, not None) ``key`` have the same rows and
        share one Gram block in a launch (SVC's cross-validation folds of one class pair).
    spec : GramSpec
    mode : int
        :data:`BATCH_MODES`' value: 0 SMO, 1 planning-ahead SMO.
    tol : float
        Each problem's stop: its maximal violating pair's gap at most ``tol``.
    max_iter : int
        Step cap per problem; -1 (or None) is LIBSVM's limit for the largest problem of a launch
        (:func:`gpusvm._solvers._common.step_cap`).
    gram_dtype : {"float32", "float64"}
        Type of the stored Gram blocks (the solve's alpha and gradient are float64 either way).
    x_sqnorm : array (n,) float64 on ``be``, optional
        Squared row norms of ``X`` (for the RBF gram).
    pa_recent : {2, 3}
    max_bytes : int
        Bound on the Gram blocks of one launch.

    Returns
    -------
    list of dict, one per problem, with ``alpha`` and ``G`` (the gradient ``Q alpha - 1``; arrays on
    ``be``), ``b``, ``objective`` (dual), ``n_iter`` (SMO steps), ``converged`` (below the step cap).
    """
    xp = be.xp
    gdt = xp.float64 if str(gram_dtype) == "float64" else xp.float32
    itemsize = 8 if gdt == xp.float64 else 4
    sizes_all = [int(p[1].shape[0]) for p in problems]
    # (a problem without a key has a block of its own)
    keys_all = [p[4] if len(p) > 4 and p[4] is not None else ("own", i) for i, p in enumerate(problems)]
    out = [None] * len(problems)
    for chunk in _chunks(sizes_all, keys_all, itemsize, max_bytes):
        sizes = [sizes_all[p] for p in chunk]
        starts = [0]
        for q in sizes[:-1]:
            starts.append(starts[-1] + q)
        seg = starts + [starts[-1] + sizes[-1]]
        # one block per key: its offset in K_flat, and the problems that own a block (the first of each key)
        where, k_off, owners, tot = {}, [], [], 0
        for p, q in zip(chunk, sizes):
            key = keys_all[p]
            if key not in where:
                where[key] = tot
                owners.append(p)
                tot += q * q
            k_off.append(where[key])
        n_x = int(X.shape[0])
        if len(owners) > 1 and n_x * n_x <= tot <= ONE_GRAM_MAX_VALUES:  # (class pairs, not DC-SVM's clusters)
            K_flat, diag = _blocks_from_one_gram(be, X, xp.concatenate([problems[p][0] for p in owners]),
                                                 [sizes_all[p] for p in owners], spec, x_sqnorm, gdt,
                                                 diag_rows=xp.concatenate([problems[p][0] for p in chunk]))
        else:
            K_flat = xp.empty(tot, dtype=gdt)
            block_diag = {}
            for p in owners:
                ic, q, off = problems[p][0], sizes_all[p], where[keys_all[p]]
                Xc = be.take_rows(X, ic)
                sq = None if x_sqnorm is None else x_sqnorm[ic]
                Kc = be.gram(Xc, Xc, spec, x_sqnorm=sq, y_sqnorm=sq, dtype=gdt)
                K_flat[off:off + q * q] = Kc.reshape(-1)
                block_diag[keys_all[p]] = xp.diagonal(Kc).astype(xp.float64)
            diag = xp.concatenate([block_diag[keys_all[p]] for p in chunk])
        yb = xp.concatenate([problems[p][1] for p in chunk])
        Cb = xp.concatenate([problems[p][2] for p in chunk])
        if all(problems[p][3] is None for p in chunk):
            a0 = xp.zeros(seg[-1], dtype=xp.float64)
        else:
            a0 = xp.concatenate([xp.zeros(q, dtype=xp.float64) if problems[p][3] is None else problems[p][3]
                                 for p, q in zip(chunk, sizes)])
        cap = step_cap(max_iter, max(sizes))  # (-1: LIBSVM's limit for the largest problem)
        a, G, steps, _gap = be.local_smo_batched(K_flat, k_off, seg, yb, a0, Cb, diag, float(tol), cap, mode,
                                                 int(pa_recent))
        del K_flat
        seg_id = xp.repeat(xp.arange(len(chunk)), sizes)
        # the segments' free counts and sums (their intercepts), objectives and steps in one copy to the host
        # (four GPU syncs apart; the steps are exact in float64)
        n_free, s_free, obj, steps_h = be.to_host(xp.concatenate([
            segment_free_sums(be, yb, a, G, Cb, seg_id, len(chunk)),
            xp.stack([xp.bincount(seg_id, weights=0.5 * a - 0.5 * a * G, minlength=len(chunk)),
                      steps.astype(xp.float64)])])).tolist()
        b = segment_bias(be, yb, a, G, Cb, sizes, starts, n_free, s_free)
        for j, p in enumerate(chunk):
            lo, hi = seg[j], seg[j + 1]
            out[p] = {"alpha": a[lo:hi], "G": G[lo:hi], "b": b[j], "objective": float(obj[j]),
                      "n_iter": int(steps_h[j]), "converged": int(steps_h[j]) < cap}
    return out

"""Exact merging of duplicate training points for the C-SVC dual (``SVC(deduplicate=...)``).

Why it is exact
---------------
If rows ``i`` and ``j`` of X are equal and ``y_i = y_j``, rows ``i`` and ``j`` of ``Q`` are equal, so the
dual objective ``sum(alpha) - 1/2 alpha^T Q alpha`` and the constraint ``y^T alpha = 0`` depend on
``alpha_i`` and ``alpha_j`` only through their sum. The problem with the two points replaced by one
point of bound ``C_i + C_j`` therefore has the same optimal value, and every solution ``beta`` of it
gives a solution of the original problem by splitting ``beta`` over the copies (here: filling them in
training order, each up to its own ``C_i``; see :func:`expand_alpha`). The gradient of a merged point is
the gradient of each of its copies, and a merged point is below its bound exactly when one of its copies
is, so the solver's KKT gap, its stopping rule and the bias are those of the original problem: the
decision function and the dual objective are the exact SVM's (the split of alpha over the copies, and so
``support_``, is one of the many optimal ones; LIBSVM's own split depends on its working-set order).

Data sets with many repeated rows gain the most: skin_nonskin has 51,444 distinct (x, y) among 245,057
rows, w8a 34,780 of 49,749, phishing 5,849 of 11,055, a9a 26,008 of 32,561; ijcnn1 has none.

Finding the copies
------------------
The hashes are the fused op ``row_hash2`` (:mod:`gpusvm._backend.ops.rowhash`: one compiled pass on the
CPU for both seeds, array operations on the GPU, the same bits), so a GPU fit hashes its rows on the device and only two
``n``-long hash arrays come to the host:

* two 64-bit hashes per row, each the sum modulo 2**64 of a mixed value per *nonzero* entry (the entry's
  float64 bit pattern mixed with its column index by the splitmix64 finalizer). Integer addition is
  exact and order-free, so a dense row and the same row stored as CSR hash alike, whatever the
  summation order of the device's reduction; zeros (and -0.0) contribute nothing;
* rows with equal (label, hash 1, hash 2) form a candidate group; its first row in training order is the
  representative (found on the host with a hash table);
* every other member is compared with its representative entry by entry (``!=``; the fused op
  ``rows_differ``, on the device of ``X``), so a hash collision can never merge two different rows: a
  member that differs becomes a group of its own.
"""

from __future__ import annotations

import numba
import numpy as np

from ._backend.ops.rowhash import GOLDEN, M2

__all__ = ["check_mode", "duplicate_groups", "reduce_rows", "expand_alpha", "plan", "reduce_problem",
           "merge_equal_rows", "AUTO_MAX_DISTINCT_SHARE"]

# deduplicate="auto" merges copies when the distinct (x, y) pairs are at most this share of the rows.
# Merging was faster on every data set with copies (benchmarks/results/dedupe_cpu.md, cold SVC, CPU:
# skin_nonskin, 23% distinct, 4.66x; phishing 58%: 1.40x; w8a 72%: 2.25x; a9a 80%: 1.72x) but the split
# of alpha over copies is not LIBSVM's (support vectors -9% to -0.5% there), so "auto" keeps LIBSVM's
# support vectors unless merging at least halves the problem; True always merges.
AUTO_MAX_DISTINCT_SHARE = 0.5

_SEEDS = (0x243F6A8885A308D3, 0x13198A2E03707344)
_UGOLDEN, _UM2, _USEED1 = np.uint64(GOLDEN), np.uint64(M2), np.uint64(_SEEDS[1])


def _hash_pair(be, X):
    """The two hashes of every row that :func:`duplicate_groups` groups by (fused op ``row_hash2``: one
    pass for both seeds on the CPU), as host arrays."""
    h1, h2 = be.row_hash2(X, *_SEEDS)
    return np.asarray(be.to_host(h1)), np.asarray(be.to_host(h2))


@numba.njit(cache=True, nogil=True)
def _first_of_equal_triples(h1, h2, lab, rep):
    # open addressing with linear probing over a table of >= 2n slots; the slot comes from all three
    # keys mixed, so rows that agree in h1 alone (a weak hash) still spread over the table
    n = h1.shape[0]
    size = 1
    while size < 2 * n:
        size *= 2
    mask = np.uint64(size - 1)
    table = np.full(size, -1, dtype=np.int64)
    for i in range(n):
        k = h1[i] ^ (h2[i] * _UGOLDEN) ^ ((lab[i] + _USEED1) * _UM2)
        k ^= k >> np.uint64(29)
        s = np.int64(k & mask)
        while True:
            j = table[s]
            if j < 0:
                table[s] = i
                rep[i] = i
                break
            if h1[j] == h1[i] and h2[j] == h2[i] and lab[j] == lab[i]:
                rep[i] = j
                break
            s = (s + 1) & (size - 1)


def _candidate_representatives(h1, h2, labels):
    """For each row, the first row (in training order) with the same (label, h1, h2).

    One pass over the rows with a hash table (compiled): the first row of each (label, h1, h2) triple
    enters the table, every later row finds it there. (It replaced a sort of the rows by key, which
    took 0.5-3.6 ms on phishing, a9a and w8a against 0.1-0.3 ms for the table.)
    """
    h1 = np.ascontiguousarray(h1, dtype=np.uint64)
    h2 = np.ascontiguousarray(h2, dtype=np.uint64)
    lab = np.ascontiguousarray(labels, dtype=np.float64).view(np.uint64)
    rep = np.empty(h1.shape[0], dtype=np.int64)
    _first_of_equal_triples(h1, h2, lab, rep)
    return rep


def duplicate_groups(be, X, labels):
    """Group the rows of ``X`` that are equal and have the same label.

    Parameters
    ----------
    be : Backend
    X : dense or CSR matrix of shape (n_samples, n_features) on ``be``
    labels : host int array of shape (n_samples,)

    Returns
    -------
    group : host int64 array of shape (n_samples,)
        Group number of each row; rows in one group are equal and share their label. Groups are
        numbered in the order of their first row.
    n_groups : int
    """
    n = int(X.shape[0])
    labels = np.asarray(labels)
    if n == 0:
        return np.zeros(0, dtype=np.int64), 0
    h1, h2 = _hash_pair(be, X)
    rep = _candidate_representatives(h1, h2, labels)
    members = np.flatnonzero(rep != np.arange(n))
    if members.size:
        bad = members[be.rows_differ(X, members, rep[members])]
        rep[bad] = bad  # a hash collision: the row keeps a group of its own
    # number the groups by their representative's position
    is_rep = rep == np.arange(n)
    number = np.cumsum(is_rep) - 1
    return number[rep].astype(np.int64), int(is_rep.sum())


def reduce_rows(group, C):
    """Merge the rows of one problem by group.

    Parameters
    ----------
    group : host int array of shape (m,)
        Group number of each row of the problem (rows of one group are copies of each other).
    C : host float array of shape (m,)
        Upper bound of each row's alpha.

    Returns
    -------
    first : int array of shape (m_red,)
        Position of each merged row's first copy, ascending (the merged problem keeps the rows'
        order).
    inverse : int array of shape (m,)
        Merged row of each row.
    C_red : float array of shape (m_red,)
        Bound of each merged row, the sum of its copies' bounds.
    """
    _, first, inverse = np.unique(np.asarray(group), return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.shape[0])
    inverse = rank[inverse.ravel()]
    C_red = np.bincount(inverse, weights=np.asarray(C, dtype=np.float64), minlength=order.shape[0])
    return first[order], inverse, C_red


def expand_alpha(beta, inverse, C):
    """Split merged alphas over the copies: each copy, in row order, takes up to its own bound.

    ``alpha[k] = clip(beta[inverse[k]] - (bounds of the earlier copies of its group), 0, C[k])``, so the
    copies' alphas sum to ``beta`` and each stays in ``[0, C[k]]``; at most one copy per group is strictly
    between its bounds. Rounding of the bound sums is not left behind: a copy within 1e-12 of the group's
    alpha of its bound is put on it, and a remainder below that is dropped rather than kept as a support
    vector.
    """
    beta = np.asarray(beta, dtype=np.float64)
    C = np.asarray(C, dtype=np.float64)
    inverse = np.asarray(inverse)
    order = np.argsort(inverse, kind="stable")
    g = inverse[order]
    Cs = C[order]
    before = np.cumsum(Cs) - Cs  # bounds of all earlier rows in this order
    start = np.ones(g.shape[0], dtype=bool)
    start[1:] = g[1:] != g[:-1]
    base = before[start][np.cumsum(start) - 1]  # ... minus those of earlier groups
    rest = beta[g] - (before - base)
    a = np.clip(rest, 0.0, Cs)
    tiny = 1e-12 * np.abs(beta[g])
    hair = (a < Cs) & (Cs - rest <= tiny)  # a rounding hair below its bound
    a[hair] = Cs[hair]
    a[rest <= tiny] = 0.0
    alpha = np.empty_like(a)
    alpha[order] = a
    return alpha


def check_mode(value, owner):
    """Validate an estimator's ``deduplicate`` parameter (a bool or "auto")."""
    if not (isinstance(value, (bool, np.bool_)) or (isinstance(value, str) and value == "auto")):
        raise ValueError(f"The 'deduplicate' parameter of {owner} must be a bool or 'auto'. Got {value!r} instead.")


def plan(be, X, labels, mode):
    """The duplicate groups to merge for ``deduplicate=mode`` (True, False or "auto").

    Returns ``(group, n_groups)``: ``group`` is None when nothing is merged (``mode`` False, no copies,
    or "auto" with more than :data:`AUTO_MAX_DISTINCT_SHARE` of the rows distinct); ``n_groups`` is the
    number of distinct (x, y) pairs, or None when they were not counted (``mode`` False).
    """
    auto = isinstance(mode, str)
    if not auto and not mode:
        return None, None
    group, n_groups = duplicate_groups(be, X, labels)
    n = int(X.shape[0])
    if n_groups == n or (auto and n_groups > AUTO_MAX_DISTINCT_SHARE * n):
        return None, n_groups
    return group, n_groups


def reduce_problem(rows, y, C, groups):
    """One binary problem on ``rows`` (host indices), labels ``y`` and bounds ``C``, with copies merged.

    Returns ``(rows, y, C, undo)``: the merged problem's rows, labels and bounds (unchanged when
    ``groups`` is None or holds no copies) and ``undo(alpha)``, which maps the merged problem's alpha
    (host) back to one alpha per original row (:func:`expand_alpha`).
    """
    if groups is None:
        return rows, y, C, lambda alpha: alpha
    first, inverse, C_red = reduce_rows(groups, C)
    if first.shape[0] == rows.shape[0]:
        return rows, y, C, lambda alpha: alpha
    return rows[first], y[first], C_red, lambda alpha: expand_alpha(alpha, inverse, C)


def merge_equal_rows(be, X, coef):
    """Merge equal rows of an expansion ``coef @ k(X, .)`` (prediction with support vectors ``X``).

    ``sum_j coef[:, j] k(x_j, z)`` is unchanged when the columns of ``coef`` of equal rows of ``X`` are
    added up and one copy of the row is kept, whatever the rows' labels (copies with opposite labels
    partly cancel); a row whose summed column is exactly zero is dropped.

    Parameters
    ----------
    be : Backend
    X : dense or CSR matrix of shape (n, n_features) on ``be``
    coef : array of shape (p, n) (host or ``be``), or a CSR matrix (SciPy or cupyx)

    Returns
    -------
    None when no two rows are equal; else ``(keep, coef_merged)``: host int64 indices of the kept rows
    (each group's first row, ascending) and the host float64 array of shape (p, len(keep)) (a SciPy CSR
    matrix for CSR ``coef``).
    """
    n = int(X.shape[0])
    group, n_groups = duplicate_groups(be, X, np.zeros(n, dtype=np.int64))
    if n_groups == n:
        return None
    _, first = np.unique(group, return_index=True)  # groups are numbered in order of their first row
    if hasattr(coef, "indptr"):  # CSR coefficients (a many-class model's, gpusvm._ovo.pair_coef_is_sparse): CSR out
        import scipy.sparse as sp

        c = sp.csr_matrix(be.to_host(coef) if be.issparse(coef) else coef, dtype=np.float64)
        # each group's columns summed by a product with the rows' (n, n_groups) group indicator
        merged = (c @ sp.csr_matrix((np.ones(n), (np.arange(n), group)), shape=(n, n_groups))).tocsr()
        merged.eliminate_zeros()
        keep = np.flatnonzero(np.bincount(merged.indices, minlength=n_groups))
        out = merged[:, keep].tocsr()
        out.sort_indices()
        return first[keep].astype(np.int64), out
    c = np.asarray(be.to_host(coef), dtype=np.float64).reshape(-1, n)
    merged = np.zeros((n_groups, c.shape[0]))
    np.add.at(merged, group, c.T)
    keep = np.flatnonzero(np.any(merged != 0.0, axis=1))
    return first[keep].astype(np.int64), np.ascontiguousarray(merged[keep].T)

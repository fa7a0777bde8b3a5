"""Merging duplicate training points (gpusvm._dedupe, SVC/DCSVC(deduplicate=...)): exact, and the
same groups on every backend."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import gpusvm
from gpusvm import _dedupe
from gpusvm._backend import get_backend

CPU = get_backend("cpu")


def _with_copies(rng, n=120, d=6, copies=3, discrete=True):
    """n base rows (a few with conflicting labels), each repeated 1..copies times, shuffled."""
    X = rng.integers(-2, 3, size=(n, d)).astype(np.float64) if discrete else rng.normal(size=(n, d))
    X[rng.random((n, d)) < 0.4] = 0.0
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=n) > 0).astype(int)
    reps = rng.integers(1, copies + 1, size=n)
    Xr, yr = np.repeat(X, reps, axis=0), np.repeat(y, reps)
    flip = rng.random(yr.shape[0]) < 0.05  # a copy with the other label is not the same point
    yr = np.where(flip, 1 - yr, yr)
    p = rng.permutation(yr.shape[0])
    return Xr[p], yr[p]


def _reference_groups(X, y):
    """Groups by exact (row, label) equality, numbered by first occurrence."""
    Xd = X.toarray() if sp.issparse(X) else X
    Z = np.column_stack([Xd + 0.0, y])  # + 0.0: -0.0 and 0.0 are the same point
    _, first, inv = np.unique(Z, axis=0, return_index=True, return_inverse=True)
    rank = np.empty_like(first)
    rank[np.argsort(first)] = np.arange(first.shape[0])
    return rank[inv.ravel()]


def _row_hash(be, X, seed):
    """The hash of every row of X for one seed (the fused op row_hash2 computes two seeds at once)."""
    return be.row_hash2(X, seed, seed)[0]


def test_row_hashes_same_for_dense_csr_dtype_and_signed_zero(rng):
    X = rng.normal(size=(50, 7))
    X[rng.random(X.shape) < 0.5] = 0.0
    h = _row_hash(CPU, X, 1)
    Xz = X.copy()
    Xz[Xz == 0] = -0.0
    np.testing.assert_array_equal(_row_hash(CPU, Xz, 1), h)
    np.testing.assert_array_equal(_row_hash(CPU, sp.csr_matrix(X), 1), h)
    # explicit zeros stored in the CSR pattern do not change a row's hash
    full = sp.csr_matrix((X.ravel(), np.tile(np.arange(7), 50), np.arange(51) * 7), shape=X.shape)
    assert full.nnz == X.size
    np.testing.assert_array_equal(_row_hash(CPU, full, 1), h)
    X32 = X.astype(np.float32)
    np.testing.assert_array_equal(_row_hash(CPU, X32, 1),
                                  _row_hash(CPU, X32.astype(np.float64), 1))
    # a different seed, a changed value or a moved value change the hash
    assert np.all(_row_hash(CPU, X, 2) != h)
    X2 = X.copy()
    X2[3, 2] = np.nextafter(X2[3, 2], 1.0)
    assert _row_hash(CPU, X2, 1)[3] != h[3]
    X3 = X.copy()
    X3[4] = np.roll(X3[4], 1)
    assert _row_hash(CPU, X3, 1)[4] != h[4] or np.all(X3[4] == X[4])


def test_compiled_row_hash_equals_the_array_version(rng):
    """The CPU ops (one Numba pass; row_hash2: two seeds in one pass) give the bits of row_hash_xp (the GPU's
    array version) on dense C and F order, float32, -0.0, empty rows, and CSR with unsorted indices and
    explicit zeros."""
    from gpusvm._backend.ops.rowhash import row_hash_xp

    X = rng.normal(size=(80, 11)) * 1e3
    X[rng.random(X.shape) < 0.6] = 0.0
    X[5] = 0.0
    X[7][X[7] == 0] = -0.0
    S = sp.csr_matrix(X)
    perm = sp.csr_matrix((S.data.copy(), S.indices.copy(), S.indptr.copy()), shape=S.shape)
    for r in range(perm.shape[0]):  # reverse each row's entries: same row, another storage order
        a, b = perm.indptr[r], perm.indptr[r + 1]
        perm.indices[a:b], perm.data[a:b] = perm.indices[a:b][::-1].copy(), perm.data[a:b][::-1].copy()
    full = sp.csr_matrix((X.ravel(), np.tile(np.arange(11), 80), np.arange(81) * 11), shape=X.shape)
    cases = [(X, False), (np.asfortranarray(X), False), (X[:, ::2], False), (X.astype(np.float32), False),
             (S, True), (perm, True), (full, True), (sp.csr_matrix(X.astype(np.float32)), True)]
    for seed in _dedupe._SEEDS:
        ref = row_hash_xp(np, X, seed, False)
        for A, sparse in cases:
            got = _row_hash(CPU, A, seed)
            assert got.dtype == np.uint64
            np.testing.assert_array_equal(got, row_hash_xp(np, A, seed, sparse))
            if A.shape == X.shape and not (getattr(A, "dtype", None) == np.float32):
                np.testing.assert_array_equal(got, ref)
    for A, sparse in cases:  # the two-seed pass that duplicate finding uses
        for got, seed in zip(CPU.row_hash2(A, *_dedupe._SEEDS), _dedupe._SEEDS):
            np.testing.assert_array_equal(got, row_hash_xp(np, A, seed, sparse))


def test_compiled_rows_differ_equals_the_array_version(rng):
    """The CPU op rows_differ (one Numba pass) answers as rows_differ_xp (the GPU's array version): values
    compared with ``!=`` (-0.0 equals 0.0), explicit zeros as zeros, on dense C and F order, float32, and
    CSR in canonical and non-canonical form."""
    from gpusvm._backend.ops.rowhash import rows_differ_xp

    base = rng.integers(-1, 2, size=(30, 7)).astype(np.float64)
    X = base[rng.integers(0, 30, size=300)]  # many equal pairs
    X[rng.random(X.shape) < 0.02] *= -0.0 if rng.random() < 0.5 else 1.0
    X[11] = -0.0
    X[12] = 0.0
    X[13, 3] += 1e-300  # differs from its twin by one ulp-sized value
    S = sp.csr_matrix(X)
    zeros = sp.csr_matrix((X.ravel(), np.tile(np.arange(7), 300), np.arange(301) * 7), shape=X.shape)
    assert zeros.has_canonical_format and zeros.nnz > S.nnz  # explicit zeros stored
    perm = zeros.copy()
    for r in range(perm.shape[0]):
        a, b = perm.indptr[r], perm.indptr[r + 1]
        perm.indices[a:b], perm.data[a:b] = perm.indices[a:b][::-1].copy(), perm.data[a:b][::-1].copy()
    perm.has_sorted_indices = False
    # even rows store every entry (zeros too), odd rows only their nonzeros: equal rows stored both ways
    keep = (X != 0) | (np.arange(300)[:, None] % 2 == 0)
    mixed = sp.csr_matrix((X[keep], np.nonzero(keep)[1], np.concatenate([[0], np.cumsum(keep.sum(1))])),
                          shape=X.shape)
    assert mixed.has_canonical_format
    a = np.concatenate([rng.integers(0, 300, size=2000), [11, 12, 13, 5]])
    b = np.concatenate([rng.integers(0, 300, size=2000), [12, 11, 13, 5]])
    expect = np.any(X[a] != X[b], axis=1)
    assert 0 < expect.sum() < expect.size and not expect[-4] and not expect[-1]
    for A in (X, np.asfortranarray(X), X.astype(np.float32), S, zeros, mixed, perm,
              sp.csr_matrix(X.astype(np.float32))):
        got = CPU.rows_differ(A, a, b)
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(got, expect)
        np.testing.assert_array_equal(rows_differ_xp(CPU, A, a, b), expect)
    assert CPU.rows_differ(X, a[:0], b[:0]).shape == (0,)


@pytest.mark.parametrize("case", ["consistent", "h2 differs", "all h1 equal"])
def test_candidate_representatives_are_first_rows_of_equal_triples(rng, case):
    # "consistent": h2 follows from (label, h1), the one-key sort decides; otherwise rows of equal sort
    # key differ in h2 and the exact lexsort takes over
    n = 500
    h1 = rng.integers(0, 1 if case == "all h1 equal" else 200, size=n).astype(np.uint64)
    labels = rng.integers(0, 3, size=n)
    h2 = (h1 * np.uint64(7) + labels.astype(np.uint64) if case == "consistent"
          else rng.integers(0, 40, size=n).astype(np.uint64))
    first = {}
    expect = np.array([first.setdefault((int(a), int(b), int(c)), i) for i, (a, b, c) in enumerate(zip(labels, h1, h2))])
    np.testing.assert_array_equal(_dedupe._candidate_representatives(h1, h2, labels), expect)


@pytest.mark.parametrize("sparse", [False, True])
def test_duplicate_groups_match_exact_grouping(rng, sparse):
    X, y = _with_copies(rng)
    Xb = sp.csr_matrix(X) if sparse else X
    group, n_groups = _dedupe.duplicate_groups(CPU, Xb, y)
    ref = _reference_groups(X, y)
    np.testing.assert_array_equal(group, ref)
    assert n_groups == ref.max() + 1 < X.shape[0]


@pytest.mark.parametrize("sparse", [False, True])
def test_hash_collisions_never_merge_different_rows(rng, monkeypatch, sparse):
    X, y = _with_copies(rng)
    zeros = np.zeros(X.shape[0], dtype=np.uint64)
    monkeypatch.setattr(_dedupe, "_hash_pair", lambda be, X: (zeros, zeros))
    group, _ = _dedupe.duplicate_groups(CPU, sp.csr_matrix(X) if sparse else X, y)
    # every row now collides with every other of its label; only the exact comparison separates them
    for g in np.unique(group):
        members = np.flatnonzero(group == g)
        assert np.all(X[members] == X[members[0]]) and np.all(y[members] == y[members[0]])
    # rows that differ from their collision group's first row keep a group of their own, so the
    # grouping is finer than (or equal to) the exact one, never coarser
    ref = _reference_groups(X, y)
    for g in np.unique(group):
        assert np.unique(ref[group == g]).shape[0] == 1


def test_reduce_and_expand_keep_bounds_and_sums(rng):
    group = np.array([0, 1, 0, 2, 1, 0, 3])
    C = np.array([1.0, 2.0, 0.5, 1.0, 2.0, 3.0, 1.0])
    first, inverse, C_red = _dedupe.reduce_rows(group, C)
    np.testing.assert_array_equal(first, [0, 1, 3, 6])
    np.testing.assert_array_equal(inverse, [0, 1, 0, 2, 1, 0, 3])
    np.testing.assert_allclose(C_red, [4.5, 4.0, 1.0, 1.0])
    for beta in ([0.0, 0.0, 0.0, 0.0], [1.2, 4.0, 0.3, 1.0], [4.5, 2.5, 1.0, 0.0], [3.0, 1.0, 0.0, 0.7]):
        beta = np.asarray(beta)
        alpha = _dedupe.expand_alpha(beta, inverse, C)
        assert np.all(alpha >= 0) and np.all(alpha <= C)
        np.testing.assert_allclose(np.bincount(inverse, weights=alpha), beta, atol=1e-15)
        for g in range(4):  # copies fill in row order: at most one copy strictly inside its box
            a, c = alpha[inverse == g], C[inverse == g]
            assert np.count_nonzero((a > 0) & (a < c)) <= 1
            nz = np.flatnonzero(a > 0)
            assert nz.shape[0] == 0 or np.all(a[: nz[-1]] == c[: nz[-1]])
    # rounding in the sum of bounds leaves no tiny extra support vector, and no copy a hair below C
    C3 = np.array([0.1, 0.2, 0.3])
    alpha = _dedupe.expand_alpha(np.array([0.1 + 0.2]), np.zeros(3, dtype=int), C3)
    assert alpha[0] == 0.1 and alpha[1] == 0.2 and alpha[2] == 0.0
    C4 = np.array([0.514, 0.516, 0.755])  # sum - (0.514 + 0.516) is 1.1e-16 below 0.755
    alpha = _dedupe.expand_alpha(np.array([C4.sum()]), np.zeros(3, dtype=int), C4)
    np.testing.assert_array_equal(alpha, C4)


def _obj(X, y, coef, gamma):
    from sklearn.metrics.pairwise import rbf_kernel

    a = np.abs(coef)
    return a.sum() - 0.5 * coef @ rbf_kernel(X, X, gamma=gamma) @ coef


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("solver", ["smo", "pa-smo", "alfpgm"])
def test_svc_merged_problem_is_the_exact_svm(rng, sparse, solver):
    X, y = _with_copies(rng, n=150)
    sw = rng.uniform(0.2, 2.0, size=y.shape[0])
    Xb = sp.csr_matrix(X) if sparse else X
    kw = dict(C=5.0, gamma=0.3, tol=1e-5, solver=solver, device="cpu", class_weight={0: 1.0, 1: 1.7},
              gram_dtype="float64")
    plain = gpusvm.SVC(deduplicate=False, **kw).fit(Xb, y, sample_weight=sw)
    merged = gpusvm.SVC(deduplicate=True, **kw).fit(Xb, y, sample_weight=sw)
    assert plain.n_distinct_ is None and merged.n_distinct_ == _reference_groups(X, y).max() + 1
    assert merged.n_iter_[0] > 0
    np.testing.assert_allclose(merged.objective_, plain.objective_, rtol=1e-7)
    np.testing.assert_allclose(merged.decision_function(X), plain.decision_function(X), atol=1e-3)
    np.testing.assert_allclose(merged.intercept_, plain.intercept_, atol=1e-3)
    # the split alpha is feasible for the problem with every copy, and its objective is the solver's
    Ci = 5.0 * np.where(y == 1, 1.7, 1.0) * sw
    dual = merged.dual_coef_.toarray() if sp.issparse(merged.dual_coef_) else np.asarray(merged.dual_coef_)
    sup = np.asarray(merged.support_)
    coef = np.zeros(y.shape[0])
    coef[sup] = dual[0]
    assert np.all(np.abs(coef) <= Ci * (1 + 1e-12))
    assert abs(coef.sum()) < 1e-9 * np.abs(coef).sum()  # y^T alpha = 0 (coef = y alpha)
    # (ALFPGM's objective comes from its incrementally updated gradient: a little drift)
    np.testing.assert_allclose(_obj(X, y, coef, 0.3), merged.objective_[0], rtol=1e-7 if solver == "alfpgm" else 1e-9)
    # and the same points as LIBSVM's solution would need at most: every copy group of the merged
    # solution has at most one copy strictly inside its box
    assert merged.n_support_.sum() <= plain.n_support_.sum() + 1


def test_svc_auto_merges_only_many_copies(rng):
    X, y = _with_copies(rng, n=100, copies=1, discrete=False)  # no copies: nothing to merge
    a = gpusvm.SVC(C=2.0, gamma=0.5, device="cpu").fit(X, y)
    b = gpusvm.SVC(C=2.0, gamma=0.5, device="cpu", deduplicate=False).fit(X, y)
    assert a.n_distinct_ == X.shape[0]
    np.testing.assert_array_equal(np.asarray(a.support_), np.asarray(b.support_))
    Xc = np.vstack([X[:70], X[:70], X[:70]])  # 70 distinct of 210: merged
    yc = np.concatenate([y[:70]] * 3)
    m = gpusvm.SVC(C=2.0, gamma=0.5, device="cpu").fit(Xc, yc)
    p = gpusvm.SVC(C=2.0, gamma=0.5, device="cpu", deduplicate=False).fit(Xc, yc)
    assert m.n_distinct_ == 70
    coef = np.zeros(210)
    coef[np.asarray(m.support_)] = np.asarray(m.dual_coef_)[0]
    for i in range(70):  # copies i, i + 70, i + 140 are filled in that order, each up to C
        a = np.abs(coef[[i, i + 70, i + 140]])
        assert (a[1] == 0 or a[0] == 2.0) and (a[2] == 0 or a[1] == 2.0)
    np.testing.assert_allclose(m.objective_, p.objective_, rtol=1e-6)
    Xh = np.vstack([X, X[:60]])  # 100 distinct of 160 (> half): "auto" leaves it alone
    yh = np.concatenate([y, y[:60]])
    h = gpusvm.SVC(C=2.0, gamma=0.5, device="cpu").fit(Xh, yh)
    hp = gpusvm.SVC(C=2.0, gamma=0.5, device="cpu", deduplicate=False).fit(Xh, yh)
    assert h.n_distinct_ == 100
    np.testing.assert_array_equal(np.asarray(h.support_), np.asarray(hp.support_))


def test_svc_multiclass_and_probability_with_copies():
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X, y = X[:400], y[:400]
    X3, y3 = np.vstack([X, X, X]), np.concatenate([y, y, y])
    plain = gpusvm.SVC(C=10, gamma=0.001, device="cpu", deduplicate=False).fit(X3, y3)
    merged = gpusvm.SVC(C=10, gamma=0.001, device="cpu", probability=True, random_state=0).fit(X3, y3)
    assert merged.n_distinct_ == len(np.unique(np.column_stack([X, y]), axis=0))
    np.testing.assert_allclose(merged.objective_, plain.objective_, rtol=1e-6)
    assert np.mean(merged.predict(X) == plain.predict(X)) == 1.0
    P = merged.predict_proba(X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert np.mean(P.argmax(axis=1) == y) > 0.95


def test_dcsvc_merged_top_is_the_exact_svm(rng):
    X, y = _with_copies(rng, n=300, copies=4)
    kw = dict(C=4.0, gamma=0.3, n_levels=1, n_clusters_per_level=2, min_cluster_size=0, device="cpu",
              random_state=0)
    plain = gpusvm.DCSVC(deduplicate=False, **kw).fit(X, y)
    merged = gpusvm.DCSVC(deduplicate=True, **kw).fit(X, y)
    ref = gpusvm.SVC(C=4.0, gamma=0.3, device="cpu", deduplicate=False).fit(X, y)
    assert merged.n_distinct_ < X.shape[0]
    np.testing.assert_allclose(merged.objective_, ref.objective_, rtol=1e-5)
    np.testing.assert_allclose(plain.objective_, ref.objective_, rtol=1e-5)
    np.testing.assert_allclose(merged.decision_function(X), ref.decision_function(X), atol=5e-3)
    assert np.mean(merged.predict(X, level=1) == y) > 0.6  # the early model of the merged points


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
@pytest.mark.parametrize("sparse", [False, True])
def test_linearsvc_merged_problem_has_the_same_solution(rng, loss, sparse):
    X, y = _with_copies(rng, n=200, copies=4)
    y = np.where(rng.random(y.shape[0]) < 0.3, 2, y)  # three classes (one-vs-rest)
    sw = rng.uniform(0.5, 2.0, size=y.shape[0])
    Xb = sp.csr_matrix(X) if sparse else X
    kw = dict(C=3.0, loss=loss, tol=1e-6, max_iter=100000, device="cpu", random_state=0)
    plain = gpusvm.LinearSVC(deduplicate=False, **kw).fit(Xb, y, sample_weight=sw)
    merged = gpusvm.LinearSVC(deduplicate=True, **kw).fit(Xb, y, sample_weight=sw)
    assert plain.n_distinct_ is None and merged.n_distinct_ == _reference_groups(X, y).max() + 1
    # the primal objective of every binary problem is the same problem's: same optimum, same w
    np.testing.assert_allclose(merged.objective_, plain.objective_, rtol=1e-7)
    np.testing.assert_allclose(merged.coef_, plain.coef_, atol=1e-4)
    np.testing.assert_allclose(merged.intercept_, plain.intercept_, atol=1e-4)


def test_numpy_false_does_not_merge(rng):
    X, y = _with_copies(rng)
    m = gpusvm.SVC(C=1.0, gamma=0.5, device="cpu", deduplicate=np.False_).fit(X, y)
    assert m.n_distinct_ is None
    assert _dedupe.plan(CPU, X, y, np.True_)[0] is not None


@pytest.mark.parametrize("est", [gpusvm.SVC, gpusvm.DCSVC, gpusvm.LinearSVC])
@pytest.mark.parametrize("bad", ["yes", 2, None])
def test_bad_deduplicate_value(est, bad):
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    with pytest.raises(ValueError, match="'deduplicate' parameter of .* must be a bool or 'auto'"):
        est(deduplicate=bad, device="cpu").fit(X, [0, 0, 1, 1])


@pytest.mark.parametrize("sparse", [False, True])
def test_merge_equal_rows_sums_coefficients_and_drops_cancelled_rows(rng, sparse):
    X, _ = _with_copies(rng, n=60, copies=3)
    n = X.shape[0]
    X = np.vstack([X, X[0]])  # row 0 has at least one copy
    n += 1
    coef = rng.normal(size=(3, n))
    groups = _reference_groups(X, np.zeros(n))
    rows = np.flatnonzero(groups == groups[0])
    coef[:, rows] = 0.0
    coef[:, rows[0]], coef[:, rows[1]] = 0.75, -0.75  # row 0's group cancels exactly: it is dropped
    Xh = sp.csr_matrix(X) if sparse else X
    keep, cm = _dedupe.merge_equal_rows(CPU, Xh, coef)
    assert keep.dtype == np.int64 and cm.shape == (3, keep.shape[0])
    assert np.all(np.diff(keep) > 0) and 0 not in keep
    # the kept rows are distinct, each its group's first row, with the group's summed coefficients
    assert len(set(groups[keep])) == keep.shape[0]
    for g, j in zip(groups[keep], keep):
        assert j == np.flatnonzero(groups == g)[0]
        np.testing.assert_allclose(cm[:, list(keep).index(j)], coef[:, groups == g].sum(axis=1), rtol=1e-12)
    assert set(groups) - set(groups[keep]) == {groups[0]}  # only the cancelled group went
    # the expansion is unchanged
    Z = rng.normal(size=(25, X.shape[1]))
    K = np.exp(-0.3 * ((X[:, None, :] - Z[None]) ** 2).sum(-1))
    Kk = np.exp(-0.3 * ((X[keep][:, None, :] - Z[None]) ** 2).sum(-1))
    np.testing.assert_allclose(cm @ Kk, coef @ K, rtol=1e-10, atol=1e-12)
    # no copies: None
    assert _dedupe.merge_equal_rows(CPU, rng.normal(size=(10, 3)), np.ones((1, 10))) is None


@pytest.mark.parametrize("sparse", [False, True])
def test_prediction_merges_equal_support_vectors(rng, sparse):
    """A model trained without merging keeps copies among its support vectors; its decision values are
    the same with and without merging them at prediction (multi-class: one coefficient row per pair)."""
    from gpusvm.svc import _blocked_decision

    X, y = _with_copies(rng, n=150, copies=3)
    y = np.where(X[:, 2] > 1, 2, y)  # three classes
    Xh = sp.csr_matrix(X) if sparse else X
    m = gpusvm.SVC(C=5.0, gamma=0.5, deduplicate=False, device="cpu").fit(Xh, y)
    SV = m.support_vectors_
    assert _dedupe.duplicate_groups(CPU, SV, np.zeros(SV.shape[0]))[1] < SV.shape[0]
    args = (CPU, SV, m._pair_coef, m._pair_b, Xh, m._gram_spec(m._gamma))
    kw = dict(sv_sqnorm=CPU.row_sqnorms(SV, np.float64), x_sqnorm=CPU.row_sqnorms(Xh, np.float64))
    plain = _blocked_decision(*args, **kw, merge_rows=False)
    merged = _blocked_decision(*args, **kw, merge_rows=True)
    np.testing.assert_allclose(merged, plain, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(m.decision_function(np.vstack([X] * 8)[: 1100] if not sparse
                                                    else sp.vstack([Xh] * 8)[: 1100]),
                               m.decision_function(Xh)[np.arange(1100) % X.shape[0]], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("sparse", [False, True])
def test_gpu_groups_match_cpu(gpu_backend, rng, sparse):
    X, y = _with_copies(rng, n=200)
    Xh = sp.csr_matrix(X) if sparse else X
    Xg = gpu_backend.asarray(Xh)
    for seed in (1, 2):
        np.testing.assert_array_equal(np.asarray(gpu_backend.to_host(_row_hash(gpu_backend, Xg, seed))),
                                      _row_hash(CPU, Xh, seed))
    for hg, hc in zip(gpu_backend.row_hash2(Xg, 1, 2), CPU.row_hash2(Xh, 1, 2)):
        np.testing.assert_array_equal(np.asarray(gpu_backend.to_host(hg)), hc)
    g_gpu, n_gpu = _dedupe.duplicate_groups(gpu_backend, Xg, y)
    g_cpu, n_cpu = _dedupe.duplicate_groups(CPU, Xh, y)
    np.testing.assert_array_equal(g_gpu, g_cpu)
    assert n_gpu == n_cpu


@pytest.mark.parametrize("sparse", [False, True])
def test_gpu_merge_equal_rows_matches_cpu(gpu_backend, rng, sparse):
    X, _ = _with_copies(rng, n=200)
    coef = rng.normal(size=(2, X.shape[0]))
    Xh = sp.csr_matrix(X) if sparse else X
    keep_c, cm_c = _dedupe.merge_equal_rows(CPU, Xh, coef)
    keep_g, cm_g = _dedupe.merge_equal_rows(gpu_backend, gpu_backend.asarray(Xh), gpu_backend.asarray(coef))
    np.testing.assert_array_equal(keep_g, keep_c)
    np.testing.assert_allclose(cm_g, cm_c, rtol=1e-12)
    # and the blocked decision that uses it, on the model's device
    from gpusvm import GramSpec
    from gpusvm.svc import _blocked_decision

    spec = GramSpec("rbf", gamma=0.3)
    Z = rng.normal(size=(50, X.shape[1]))
    outs = []
    for be, A, c, Zb in [(CPU, Xh, coef, Z), (gpu_backend, gpu_backend.asarray(Xh), gpu_backend.asarray(coef),
                                              gpu_backend.asarray(Z))]:
        b = be.asarray(np.array([0.1, -0.2]))
        d = _blocked_decision(be, A, c, b, Zb, spec, sv_sqnorm=be.row_sqnorms(A, np.float64),
                              x_sqnorm=be.row_sqnorms(Zb, np.float64), merge_rows=True)
        outs.append(np.asarray(be.to_host(d)))
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("sparse", [False, True])
def test_gpu_fits_with_copies_match_cpu(gpu_backend, rng, sparse):
    X, y = _with_copies(rng, n=120, copies=4)
    Xh = sp.csr_matrix(X) if sparse else X
    Xg, yg = gpu_backend.asarray(Xh), gpu_backend.asarray(y)
    for make in (lambda dev: gpusvm.SVC(C=3.0, gamma=0.4, tol=1e-5, gram_dtype="float64", device=dev),
                 lambda dev: gpusvm.LinearSVC(C=3.0, tol=1e-6, max_iter=100000, device=dev, random_state=0)):
        cpu = make("cpu").set_params(deduplicate=True).fit(Xh, y)
        gpu = make("gpu").set_params(deduplicate=True).fit(Xg, yg)
        assert gpu.n_distinct_ == cpu.n_distinct_ < X.shape[0]
        np.testing.assert_allclose(gpu.objective_, cpu.objective_, rtol=1e-6)
        dg = np.asarray(gpu_backend.to_host(gpu.decision_function(Xg)))
        np.testing.assert_allclose(dg, cpu.decision_function(Xh), atol=2e-3)

"""SVC(batch_pairs=...): the class pairs of a one-vs-one fit solved together (gpusvm._solvers.segments).

On the CPU the compiled twin of the batched local SMO runs (the GPU's kernel in the GPU tests); the
solution must be the one of the pairs solved one by one, up to ``tol``, and a KKT point of each pair's
dual to ``tol`` in float64."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.svm import SVC as SkSVC

import gpusvm._solvers.segments as segments
import gpusvm.svc as svc_module
from gpusvm import GramSpec, get_backend
from gpusvm._solvers._common import kkt_gap
from gpusvm.datasets import load_bundled
from gpusvm.svc import SVC

CPU = get_backend("cpu")


@pytest.fixture
def spy(monkeypatch):
    """The sizes of the problems each call of solve_segments received."""
    calls = []
    real = segments.solve_segments

    def wrapped(be, X, problems, spec, **kw):
        calls.append([int(p[1].shape[0]) for p in problems])
        return real(be, X, problems, spec, **kw)

    monkeypatch.setattr(segments, "solve_segments", wrapped)
    return calls


def _digits(n=600):
    X, y = load_bundled("digits")
    return X[:n], y[:n]


def _pair_gaps(m, X, y, C, spec):
    """The float64 KKT gap of every class pair's dual at the fitted coefficients (m._pair_coef, m._pair_b)."""
    classes = m.classes_
    coef_all = np.asarray(m._pair_coef)
    sv = np.asarray(m.support_)
    gaps = []
    p = 0
    for a in range(len(classes)):
        for b in range(a + 1, len(classes)):
            rows = np.flatnonzero((y == classes[a]) | (y == classes[b]))
            yb = np.where(y[rows] == classes[a], 1.0, -1.0)
            coef = np.zeros(X.shape[0])
            coef[sv] = coef_all[p]
            alpha = coef[rows] * yb
            K = CPU.gram(X[rows], X[rows], spec, dtype=np.float64)
            G = yb * (K @ (alpha * yb)) - 1.0
            gaps.append(kkt_gap(CPU, yb, alpha, G, np.full(rows.shape[0], C)))
            p += 1
    return np.array(gaps)


@pytest.mark.parametrize("solver", ["smo", "pa-smo"])
@pytest.mark.parametrize("kernel, kw", [("rbf", {"gamma": 0.02}), ("poly", {"gamma": 0.01, "degree": 2}),
                                        ("linear", {})])
def test_pairs_together_solve_every_pair_to_tol(solver, kernel, kw, spy):
    X, y = _digits()
    C = 3.0
    one = SVC(C=C, kernel=kernel, solver=solver, device="cpu", decision_function_shape="ovo", **kw).fit(X, y)
    assert spy == []  # "auto" on the CPU: one by one
    m = SVC(C=C, kernel=kernel, solver=solver, device="cpu", decision_function_shape="ovo", batch_pairs=True,
            **kw).fit(X, y)
    assert len(spy) == 1 and len(spy[0]) == 45  # every pair in one call
    spec = GramSpec(kernel, gamma=kw.get("gamma", 0.0), degree=kw.get("degree", 3), coef0=0.0)
    assert _pair_gaps(m, X, y, C, spec).max() <= 1e-3 * (1 + 1e-6)
    np.testing.assert_allclose(m.objective_, one.objective_, rtol=1e-5)
    # two solutions to the same tolerance: decision values a few tol apart
    np.testing.assert_allclose(m.decision_function(X), one.decision_function(X), atol=1e-2)
    assert np.mean(m.predict(X) == one.predict(X)) >= 0.995
    assert m.fit_status_ == 0 and m.n_iter_.shape == (45,) and (m.n_iter_ > 0).all()


def test_pairs_together_agree_with_sklearn_on_digits():
    X, y = load_bundled("digits")
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    m = SVC(C=10.0, gamma=0.02, device="cpu", batch_pairs=True).fit(Xtr, ytr)
    ref = SkSVC(C=10.0, gamma=0.02).fit(Xtr, ytr)
    assert np.mean(m.predict(Xte) == ref.predict(Xte)) >= 0.995
    assert abs(m.support_.shape[0] - ref.support_.shape[0]) <= 0.02 * ref.support_.shape[0]


def test_pairs_together_with_weights_copies_and_two_classes(spy):
    X, y = load_bundled("breast_cancer")
    X = X / X.max(axis=0)
    X = np.vstack([X, X[:50]])  # copies (merged with deduplicate=True, split back)
    y = np.concatenate([y, y[:50]])
    sw = np.random.default_rng(0).uniform(0.2, 3.0, size=len(y))
    sw[:10] = 0.0
    kw = dict(C=5.0, gamma=0.5, class_weight={0: 2.0, 1: 0.5}, deduplicate=True, device="cpu")
    one = SVC(**kw).fit(X, y, sample_weight=sw)
    m = SVC(batch_pairs=True, **kw).fit(X, y, sample_weight=sw)
    assert spy == [[np.unique(np.c_[X[10:], y[10:]], axis=0).shape[0]]]  # two classes, merged copies
    ref = SkSVC(C=5.0, gamma=0.5, class_weight={0: 2.0, 1: 0.5}).fit(X, y, sample_weight=sw)
    np.testing.assert_allclose(m.decision_function(X), ref.decision_function(X), atol=5e-3)
    np.testing.assert_allclose(m.decision_function(X), one.decision_function(X), atol=5e-3)
    assert m.objective_[0] == pytest.approx(one.objective_[0], rel=1e-5)
    assert not np.isin(np.arange(10), m.support_).any()  # zero weight: never a support vector


def test_pairs_together_with_a_precomputed_gram():
    X, y = _digits(300)
    K = CPU.gram(X, X, GramSpec("rbf", gamma=0.02), dtype=np.float64)
    a = SVC(kernel="precomputed", device="cpu", batch_pairs=True).fit(K, y)
    b = SVC(gamma=0.02, device="cpu", batch_pairs=True).fit(X, y)
    # (the fit on X takes its RBF values from centred rows: last bits apart, so two paths to the same tol)
    assert abs(a.support_.shape[0] - b.support_.shape[0]) <= 0.02 * b.support_.shape[0]
    np.testing.assert_allclose(a.decision_function(K), b.decision_function(X), atol=1e-2)
    np.testing.assert_allclose(a.objective_, b.objective_, rtol=1e-5)


def test_pairs_together_take_rbf_values_of_data_far_from_the_origin_from_centred_rows():
    X, y = _digits(300)
    X = X / 16.0
    near = SVC(gamma=0.5, device="cpu", batch_pairs=True).fit(X, y)
    far = SVC(gamma=0.5, device="cpu", batch_pairs=True).fit(X + 1e4, y)  # float64 would cancel 8 digits
    np.testing.assert_allclose(far.decision_function(X + 1e4), near.decision_function(X), atol=1e-6)


def test_pairs_above_the_size_limit_are_solved_one_by_one(spy, monkeypatch):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(260, 5))
    y = np.repeat([0, 1, 2], [40, 40, 180])
    X[:, 0] += y
    monkeypatch.setattr(svc_module, "PAIR_BATCH_MAX_SIZE", 100)
    m = SVC(device="cpu", batch_pairs=True, decision_function_shape="ovo").fit(X, y)
    assert spy == [[80]]  # the pair (0, 1); (0, 2) and (1, 2) hold 220 points
    one = SVC(device="cpu", decision_function_shape="ovo").fit(X, y)
    # the large pairs took the one-by-one solve: the same steps and intercepts to the bit
    np.testing.assert_array_equal(m.n_iter_[1:], one.n_iter_[1:])
    np.testing.assert_array_equal(m.intercept_[1:], one.intercept_[1:])
    np.testing.assert_allclose(m.decision_function(X), one.decision_function(X), atol=5e-3)


@pytest.mark.parametrize("solver", ["smo", "pa-smo"])
def test_pairs_together_max_iter_warns_and_model_is_usable(solver):
    X, y = _digits(300)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        m = SVC(max_iter=5, solver=solver, device="cpu", batch_pairs=True).fit(X, y)
    assert m.fit_status_ == 1 and (m.n_iter_ == 5).all()
    assert np.mean(m.predict(X) == y) > 0.3
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        assert SVC(device="cpu", batch_pairs=True).fit(X, y).fit_status_ == 0


def test_batch_pairs_parameter_checks(spy):
    X, y = _digits(200)
    with pytest.raises(ValueError, match="'batch_pairs' parameter of SVC must be 'auto' or a bool"):
        SVC(batch_pairs="yes", device="cpu").fit(X, y)
    for flag in (True, np.True_):  # (NumPy's True is accepted as True, and warned about as True)
        with pytest.warns(UserWarning, match="batch_pairs=True applies to the SMO solvers"):
            SVC(batch_pairs=flag, solver="alfpgm", device="cpu").fit(X, y)
    assert spy == []


def test_cross_validation_folds_of_probability_solved_together(spy):
    X, y = _digits(400)
    X = X / 16.0
    X, y = np.vstack([X, X[:1] + 0.05]), np.append(y, 10)  # an 11th class of one point: one-class folds
    one = SVC(probability=True, random_state=0, device="cpu").fit(X, y)
    m = SVC(probability=True, random_state=0, device="cpu", batch_pairs=True).fit(X, y)
    assert [len(c) for c in spy] == [55, 5 * 55 - 10]  # the pairs, then their folds (not the one-class ones)
    # the sigmoids are fitted to decision values a few tol apart; those of the pairs with the one-point
    # class (one positive among about 40 points) move most, and are left to predict_proba below
    many = np.array([b != 10 for a in range(11) for b in range(a + 1, 11)])
    np.testing.assert_allclose(m.probA_[many], one.probA_[many], rtol=5e-2, atol=1e-2)
    np.testing.assert_allclose(m.probB_[many], one.probB_[many], rtol=5e-2, atol=1e-2)
    np.testing.assert_allclose(m.predict_proba(X), one.predict_proba(X), atol=1e-2)


def test_cross_validation_folds_together_give_the_decisions_of_one_by_one(monkeypatch):
    """Folds of three training points (no free support vector): the held-out rows, bound 0 in the batched
    fold, were taken by the intercept's interval as at both bounds, which moved it (a decision -0.437 where
    the one-by-one fold gives 0.149, a Platt slope 60.5 against -2.3)."""
    rng = np.random.default_rng(0)
    rng.normal(size=(600, 5))  # (the draws before those of the case that showed it)
    X, y = rng.normal(size=(10, 3)), np.repeat(np.arange(5), 2)
    got = {False: [], True: []}
    real = svc_module.sigmoid_train
    for together in (False, True):
        monkeypatch.setattr(svc_module, "sigmoid_train", lambda f, yb, k=together: (got[k].append(f.copy()),
                                                                                  real(f, yb))[1])
        SVC(probability=True, batch_pairs=together, random_state=0, device="cpu").fit(X, y)
    assert len(got[True]) == len(got[False]) == 10
    for a, b in zip(got[False], got[True]):
        np.testing.assert_allclose(b, a, atol=1e-6)


def test_bias_ignores_variables_bounded_at_zero():
    from gpusvm._solvers._common import bias

    rng = np.random.default_rng(1)
    y = np.where(rng.random(12) < 0.5, 1.0, -1.0)
    C = np.full(12, 2.0)
    alpha = np.where(rng.random(12) < 0.5, 0.0, 2.0)  # every variable at a bound: the interval's midpoint
    G = rng.normal(size=12)
    b = bias(CPU, y, alpha, G, C)
    fixed = np.r_[y, 1.0, -1.0], np.r_[alpha, 0.0, 0.0], np.r_[G, 50.0, -50.0], np.r_[C, 0.0, 0.0]
    assert bias(CPU, *fixed) == b


def test_pairs_together_print_libsvms_summary_per_pair(capsys):
    X, y = _digits(200)
    SVC(device="cpu", batch_pairs=True, verbose=True).fit(X, y)
    assert capsys.readouterr().out.count("optimization finished, #iter = ") == 45


# ---------------------------------------------------------------------------------------------------
# GPU (skips without a CUDA device)
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("solver", ["smo", "pa-smo"])
def test_gpu_solves_the_pairs_together_as_the_cpu_twin(gpu_backend, solver, spy):
    X, y = _digits(500)
    X = X / 16.0
    gpu = SVC(C=3.0, solver=solver, device="gpu", decision_function_shape="ovo").fit(X, y)
    assert len(spy) == 1 and len(spy[0]) == 45  # "auto": together on the GPU
    cpu = SVC(C=3.0, solver=solver, device="cpu", decision_function_shape="ovo", batch_pairs=True).fit(X, y)
    # (the GPU's Gram values differ from the CPU's in the last bits: two paths to the same tol)
    np.testing.assert_allclose(gpu.objective_, cpu.objective_, rtol=1e-5)
    np.testing.assert_allclose(gpu.decision_function(X), cpu.decision_function(X), atol=1e-2)
    ref = SkSVC(C=3.0, decision_function_shape="ovo").fit(X, y)
    assert np.mean(gpu.predict(X) == ref.predict(X)) >= 0.995
    gp = SVC(C=3.0, solver=solver, device="gpu", probability=True, random_state=0).fit(X[:300], y[:300])
    cp_ = SVC(C=3.0, solver=solver, device="cpu", probability=True, random_state=0, batch_pairs=True).fit(
        X[:300], y[:300])
    np.testing.assert_allclose(gp.predict_proba(X), cp_.predict_proba(X), atol=1e-2)
    calls = len(spy)
    two = SVC(C=3.0, solver=solver, device="gpu").fit(X[y < 2], y[y < 2])  # "auto": one pair, not batched
    assert len(spy) == calls and two.fit_status_ == 0


@pytest.mark.parametrize("form", ["csr", "float32", "precomputed"])
def test_gpu_pairs_together_take_every_input_form(gpu_backend, form):
    import scipy.sparse as sp

    X, y = _digits(300)
    X = X / 16.0
    ref = SVC(gamma=0.5, device="cpu", decision_function_shape="ovo").fit(X, y)
    A, P, kw = {"csr": (sp.csr_matrix(X), X, {"gamma": 0.5}), "float32": (X.astype(np.float32), X, {"gamma": 0.5}),
                "precomputed": (None, None, {"kernel": "precomputed"})}[form]
    if form == "precomputed":
        A = P = CPU.gram(X, X, GramSpec("rbf", gamma=0.5), dtype=np.float64)
    m = SVC(device="gpu", decision_function_shape="ovo", **kw).fit(A, y)
    assert m.fit_status_ == 0
    np.testing.assert_allclose(m.decision_function(P), ref.decision_function(X), atol=1e-2)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("kernel", ["rbf", "poly"])
def test_blocks_gathered_from_one_gram_are_the_blocks(sparse, kernel, backend):
    import scipy.sparse as sp

    be = backend
    rng = np.random.default_rng(4)
    X = rng.normal(size=(90, 6))
    Xb = be.asarray(sp.csr_matrix(X) if sparse else X)
    spec = GramSpec(kernel, gamma=0.3, degree=2, coef0=1.0)
    sq = be.row_sqnorms(Xb, np.float64)
    sets = [rng.choice(90, size=q, replace=False) for q in (30, 1, 57, 12)]
    K_flat, diag = segments._blocks_from_one_gram(be, Xb, be.asarray(np.concatenate(sets)), [len(s) for s in sets],
                                                  spec, sq, np.float64)
    K_flat, diag = be.to_host(K_flat), be.to_host(diag)
    off = 0
    for s in sets:
        K = CPU.gram(X[s], X[s], spec, dtype=np.float64)
        np.testing.assert_allclose(K_flat[off:off + len(s) ** 2].reshape(len(s), len(s)), K, rtol=1e-12, atol=1e-12)
        off += len(s) ** 2
    np.testing.assert_allclose(diag, np.concatenate([np.diagonal(CPU.gram(X[s], X[s], spec, dtype=np.float64))
                                                     for s in sets]), rtol=1e-12)


def test_problems_of_one_key_share_their_gram_block(backend, monkeypatch):
    be = backend
    rng = np.random.default_rng(5)
    X = rng.normal(size=(70, 4))
    rows = rng.choice(70, size=40, replace=False)
    y = np.where(X[rows, 0] + 0.3 * rng.normal(size=40) > 0, 1.0, -1.0)
    Cs = [np.full(40, 2.0) for _ in range(3)]
    Cs[1][:8] = 0.0  # (folds: held-out rows at bound 0)
    Cs[2][8:16] = 0.0
    spec = GramSpec("rbf", gamma=0.5)
    sq = be.row_sqnorms(be.asarray(X), np.float64)
    sizes = []
    real = be.local_smo_batched

    def spy(K_flat, *args, **kw):
        sizes.append(int(K_flat.shape[0]))
        return real(K_flat, *args, **kw)

    monkeypatch.setitem(vars(be), "local_smo_batched", spy)  # (the op itself; undone by removing the entry)
    res = {}
    for keyed in (False, True):
        probs = [(be.asarray(rows), be.asarray(y), be.asarray(C), None, 7 if keyed else None) for C in Cs]
        res[keyed] = segments.solve_segments(be, be.asarray(X), probs, spec, mode=0, tol=1e-3, max_iter=-1,
                                             gram_dtype="float64", x_sqnorm=sq)
    assert sizes == [3 * 40 * 40, 40 * 40]
    for a, b in zip(res[False], res[True]):
        np.testing.assert_array_equal(be.to_host(a["alpha"]), be.to_host(b["alpha"]))
        assert a["b"] == b["b"] and a["objective"] == b["objective"] and a["n_iter"] == b["n_iter"]
    assert not be.to_host(res[True][1]["alpha"])[:8].any()  # bound 0: held at 0
    # the launch's byte budget counts a shared block once: three problems of one key in one launch
    sizes.clear()
    probs = [(be.asarray(rows), be.asarray(y), be.asarray(C), None, 7) for C in Cs]
    segments.solve_segments(be, be.asarray(X), probs, spec, mode=0, tol=1e-3, max_iter=-1, gram_dtype="float64",
                            x_sqnorm=sq, max_bytes=40 * 40 * 8)
    assert sizes == [40 * 40]


def test_problems_of_one_key_share_a_block_larger_than_the_launch_budget():
    """A key's block over max_bytes alone: its problems still go in one launch with one copy of it (the chunker
    split them, one launch and one Gram block per problem), and a new key after it still starts a new one."""
    assert segments._chunks([40, 40, 40], [7, 7, 7], 8, 40 * 40 * 8 - 1) == [[0, 1, 2]]
    assert segments._chunks([40, 40, 30, 40], [7, 7, 8, 7], 8, 40 * 40 * 8 - 1) == [[0, 1], [2], [3]]
    assert segments._chunks([10, 40, 40], [6, 7, 7], 8, 40 * 40 * 8 - 1) == [[0], [1, 2]]


def test_dcsvc_solves_the_tops_of_pairs_no_level_clusters_together(spy):
    """DCSVC's class pairs too small for any level (min_cluster_size) are each one cold top solve: with
    batch_subproblems they are solved together, as SVC's batch_pairs."""
    from gpusvm import DCSVC

    X, y = _digits(400)
    X = X / 16.0
    kw = dict(C=3.0, min_cluster_size=50, random_state=0, device="cpu", decision_function_shape="ovo")
    one = DCSVC(batch_subproblems=False, **kw).fit(X, y)
    assert spy == []
    m = DCSVC(batch_subproblems=True, **kw).fit(X, y)
    assert [len(c) for c in spy] == [45]
    np.testing.assert_allclose(m.objective_, one.objective_, rtol=1e-5)
    np.testing.assert_allclose(m.decision_function(X), one.decision_function(X), atol=1e-2)
    tops = [lv for lv in m.levels_ if lv["level"] == 0]
    assert len(tops) == 45 and all(lv["solver_info"]["decomposition"] == "pair-batch" for lv in tops)
    assert all(lv["converged"] and lv["train_accuracy"] is not None for lv in tops)
    # a pair that a level clusters keeps its own levels and top solve
    spy.clear()
    DCSVC(batch_subproblems=True, **{**kw, "min_cluster_size": 10, "n_levels": 1, "n_clusters_per_level": 2}).fit(X, y)
    assert all(len(c) != 45 for c in spy)


def test_gpu_dcsvc_solves_small_pairs_together(gpu_backend, spy):
    from gpusvm import DCSVC

    X, y = _digits(300)
    X = X / 16.0
    gpu = DCSVC(C=3.0, random_state=0, device="gpu", decision_function_shape="ovo").fit(X, y)
    assert [len(c) for c in spy] == [45]  # "auto" batches on the GPU; digits' pairs are too small for levels
    cpu = DCSVC(C=3.0, random_state=0, device="cpu", decision_function_shape="ovo").fit(X, y)
    np.testing.assert_allclose(gpu.objective_, cpu.objective_, rtol=1e-5)
    np.testing.assert_allclose(gpu.decision_function(X), cpu.decision_function(X), atol=1e-2)


def test_segment_bias_counts_an_alpha_a_hair_below_c_at_the_bound():
    """A free SMO step can leave an alpha at C (1 - 2**-52): segment_bias took it as free and so the intercept
    from its y G alone, an end of the interval of optimal intercepts, where bias (and LIBSVM) take the
    midpoint."""
    y = np.array([1.0, 1.0, -1.0, -1.0])
    C = np.full(4, 0.005)
    alpha = np.array([0.005 * (1 - 2.0**-52), 0.0, 0.005, 0.0])
    G = np.array([-0.9, -0.2, -1.3, 0.4])
    sizes, starts = [4], [0]
    n_free, s_free = segments.segment_free_sums(CPU, y, alpha, G, C, np.zeros(4, dtype=np.int64), 1).tolist()
    from gpusvm._solvers._common import bias

    assert n_free == [0.0]
    assert segments.segment_bias(CPU, y, alpha, G, C, sizes, starts, n_free, s_free) == [bias(CPU, y, alpha, G, C)]


def test_pairs_together_take_the_midpoint_intercept_when_no_alpha_is_free():
    """26 points, every alpha at a bound but one left at C (1 - 2**-52) by the batched solve: its intercept
    was 0.946 (an end of the optimal interval) where the pair solved alone gives 0.045 (the midpoint)."""
    rng = np.random.default_rng(31)
    n, k, d = int(rng.integers(6, 120)), int(rng.integers(2, 6)), int(rng.integers(1, 4))
    X = rng.normal(size=(n, d)) * rng.choice([0.01, 1, 30])
    y = rng.integers(0, k, n)
    rng.random(), rng.choice(3), rng.choice(3), rng.random()
    sw = rng.choice([0, 1e-6, 1, 5], size=n, p=[0.15, 0.1, 0.6, 0.15])
    keep = ((y == 1) | (y == 2)) & (sw > 0)
    X, y, sw = X[keep], y[keep], sw[keep]
    kw = dict(kernel="poly", degree=2, C=1e-3, solver="pa-smo", device="cpu")
    one = SVC(**kw).fit(X, y, sample_weight=sw)
    m = SVC(batch_pairs=True, **kw).fit(X, y, sample_weight=sw)
    np.testing.assert_allclose(m.intercept_, one.intercept_, atol=1e-6)
    np.testing.assert_allclose(m.decision_function(X), one.decision_function(X), atol=1e-6)


def _fake_device_oom():
    """An exception that gpusvm takes for CuPy's out-of-memory error (matched by module and name)."""
    return type("OutOfMemoryError", (MemoryError,), {"__module__": "cupy.cuda.memory"})("out of memory allocating")


@pytest.mark.parametrize("name", ["SVC", "DCSVC"])
def test_gpu_auto_batch_out_of_memory_falls_back_to_one_by_one(gpu_backend, monkeypatch, name):
    import gpusvm

    def no_room(*args, **kw):
        raise _fake_device_oom()

    monkeypatch.setattr(segments, "solve_segments", no_room)
    X, y = _digits(200)
    X = X / 16.0
    param = "batch_pairs" if name == "SVC" else "batch_subproblems"
    make = getattr(gpusvm, name)
    with pytest.warns(UserWarning, match=f"{param}='auto': the .*did not fit in the GPU's memory"):
        m = make(device="gpu", random_state=0, decision_function_shape="ovo").fit(X, y)
    ref = make(device="gpu", random_state=0, decision_function_shape="ovo", **{param: False}).fit(X, y)
    np.testing.assert_array_equal(m.decision_function(X), ref.decision_function(X))
    with pytest.raises(MemoryError):  # asked for explicitly: the error (with its hint), no silent fallback
        make(device="gpu", random_state=0, **{param: True}).fit(X, y)

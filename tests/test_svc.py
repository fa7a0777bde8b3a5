"""SVC and the SMO / planning-ahead SMO solvers, checked against scikit-learn's SVC (LIBSVM)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.model_selection import train_test_split
from sklearn.svm import SVC as SkSVC
from sklearn.utils.estimator_checks import parametrize_with_checks

from conftest import load_subset, needs_address_limit, run_under_address_limit, traced_peak
from gpusvm import GramSpec, get_backend
from gpusvm._solvers import get_binary_solver
from gpusvm._solvers._common import gradient_from_alpha, kkt_gap
from gpusvm.datasets import load_bundled, make_chessboard
from gpusvm.svc import SVC

CPU = get_backend("cpu")


def sklearn_dual_objective(model, X):
    """D = sum(alpha) - 1/2 a^T Q a from a fitted binary sklearn SVC (alpha = |dual_coef_|)."""
    coef = model.dual_coef_
    coef = np.asarray(coef.toarray() if sp.issparse(coef) else coef).ravel()
    sv = X[model.support_]
    spec = GramSpec(model.kernel, gamma=model._gamma, coef0=model.coef0, degree=model.degree)
    K = CPU.gram(sv, sv, spec, dtype=np.float64)
    return float(np.abs(coef).sum() - 0.5 * coef @ K @ coef)


# ---------------------------------------------------------------------------------------------------
# scikit-learn's estimator contract
# ---------------------------------------------------------------------------------------------------
_XFAIL = {
    "check_sample_weight_equivalence_on_dense_data":
        "as sklearn's own SVC (it xfails this check too): gamma='scale' depends on the repeated rows",
    "check_sample_weight_equivalence_on_sparse_data":
        "as sklearn's own SVC (it xfails this check too): gamma='scale' depends on the repeated rows",
}


@parametrize_with_checks([SVC(device="cpu"), SVC(kernel="precomputed", device="cpu"),
                          SVC(batch_pairs=True, device="cpu")],
                         expected_failed_checks=lambda est: _XFAIL)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


# ---------------------------------------------------------------------------------------------------
# Agreement with LIBSVM on the benchmark data sets (subsets)
# ---------------------------------------------------------------------------------------------------
DATASETS = {
    # name: (train file, test file or None, C, gamma, n_features)
    "a9a": ("a9a.xz", "a9a.t.xz", 32.0, 0.008, 123),
    "ijcnn1": ("ijcnn1.xz", "ijcnn1.t.xz", 32.0, 2.0, 22),
    "w8a": ("w8a.xz", None, 8.0, 0.03, 300),
    "phishing": ("phishing.xz", None, 8.0, 8.0, 68),
}
N_TRAIN = {"a9a": 2000, "ijcnn1": 2500, "w8a": 2500, "phishing": 2000}
N_TEST = 5000


def _split(data_dir, name):
    train, test, C, gamma, nf = DATASETS[name]
    if test is not None:
        Xtr, ytr = load_subset(data_dir, train, N_TRAIN[name], n_features=nf)
        Xte, yte = load_subset(data_dir, test, N_TEST, n_features=nf, seed=1)
    else:
        X, y = load_subset(data_dir, train, 10**9, n_features=nf)
        Xa, Xb, ya, yb = train_test_split(X, y, test_size=0.2, stratify=y, random_state=0)
        Xtr, _, ytr, _ = train_test_split(Xa, ya, train_size=N_TRAIN[name], stratify=ya, random_state=0)
        Xte, yte = Xb[:N_TEST], yb[:N_TEST]
    return Xtr, ytr, Xte, yte, C, gamma


@pytest.mark.data
@pytest.mark.parametrize("name", list(DATASETS))
def test_matches_libsvm_on_data(data_dir, name):
    Xtr, ytr, Xte, yte, C, gamma = _split(data_dir, name)
    ref = SkSVC(C=C, gamma=gamma).fit(Xtr, ytr)
    d_ref = sklearn_dual_objective(ref, Xtr)
    acc_ref = ref.score(Xte, yte)
    for solver in ("smo", "pa-smo"):
        m = SVC(C=C, gamma=gamma, solver=solver, device="cpu").fit(Xtr, ytr)
        assert abs(m.objective_[0] - d_ref) <= 1e-3 * abs(d_ref), (solver, m.objective_[0], d_ref)
        assert abs(m.score(Xte, yte) - acc_ref) <= 1e-3 + 1e-12, solver
        assert abs(len(m.support_) - len(ref.support_)) <= 0.02 * len(ref.support_), solver
        # the reported objective is the objective of the returned coefficients
        assert abs(sklearn_dual_objective(m, Xtr) - m.objective_[0]) <= 1e-6 * abs(d_ref)


def test_smo_reproduces_libsvm_path():
    """Same working sets, same clipping: the iteration count and coefficients equal LIBSVM's."""
    X, y = load_bundled("breast_cancer")
    for kernel in ("rbf", "linear", "poly", "sigmoid"):
        kw = dict(C=2.0, kernel=kernel, gamma=0.03, coef0=0.5 if kernel == "poly" else -1.0)
        m = SVC(device="cpu", **kw).fit(X, y)
        ref = SkSVC(**kw).fit(X, y)
        assert m.n_iter_[0] == ref.n_iter_[0], kernel
        np.testing.assert_array_equal(m.support_, ref.support_)
        np.testing.assert_allclose(m.dual_coef_, ref.dual_coef_, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(m.intercept_, ref.intercept_, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(m.decision_function(X), ref.decision_function(X), rtol=1e-6, atol=1e-7)
        assert abs(m.objective_[0] - sklearn_dual_objective(ref, X)) <= 1e-6 * abs(m.objective_[0])


def test_shrinking_false_follows_libsvm_without_shrinking():
    """SVC(shrinking=False) runs LIBSVM's unshrunk path: sklearn's SVC(shrinking=False) iteration count
    and coefficients; the solution is the shrinking fit's."""
    X, y = load_bundled("breast_cancer")
    kw = dict(C=2.0, gamma=0.03)
    m = SVC(device="cpu", shrinking=False, **kw).fit(X, y)
    ref = SkSVC(shrinking=False, **kw).fit(X, y)
    assert m.n_iter_[0] == ref.n_iter_[0]
    np.testing.assert_array_equal(m.support_, ref.support_)
    np.testing.assert_allclose(m.dual_coef_, ref.dual_coef_, rtol=1e-6, atol=1e-8)
    shrunk = SVC(device="cpu", **kw).fit(X, y)
    assert m.objective_[0] == pytest.approx(shrunk.objective_[0], rel=1e-6)
    for solver in ("pa-smo", "alfpgm"):  # pa-smo honours it, alfpgm (no shrinking) ignores it
        a = SVC(device="cpu", solver=solver, shrinking=False, **kw).fit(X, y)
        assert a.objective_[0] == pytest.approx(shrunk.objective_[0], rel=1e-4)
    with pytest.raises(ValueError, match="'shrinking' parameter of SVC must be a bool"):
        SVC(shrinking="no").fit(X, y)


def test_blocked_decision_threads(monkeypatch):
    """CPU blocks in threads (BLAS single-threaded meanwhile, restored after) give the serial values; a
    call from another thread runs its blocks one after the other."""
    import threading

    from threadpoolctl import threadpool_info

    import gpusvm.svc as svc_mod

    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 30))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    m = SVC(C=3.0, gamma=0.05, device="cpu").fit(X, y)
    Z = rng.normal(size=(3000, 30))
    monkeypatch.setattr(svc_mod, "DECISION_BLOCK_BYTES", {"cpu": 8 * 40 * m.support_vectors_.shape[0], "gpu": 1})
    monkeypatch.setattr(svc_mod, "DECISION_THREADS", 1)
    serial = m.decision_function(Z)
    before = [i["num_threads"] for i in threadpool_info()]
    monkeypatch.setattr(svc_mod, "DECISION_THREADS", 4)
    threaded = m.decision_function(Z)
    assert [i["num_threads"] for i in threadpool_info()] == before
    np.testing.assert_allclose(threaded, serial, rtol=1e-12, atol=1e-12)
    assert svc_mod._decision_threads() == 4
    out = {}
    t = threading.Thread(target=lambda: out.update(n=svc_mod._decision_threads(), d=m.decision_function(Z)))
    t.start()
    t.join()
    assert out["n"] == 1
    np.testing.assert_allclose(out["d"], serial, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("solver", ["smo", "alfpgm"])
def test_n_jobs_solves_pairs_in_threads_with_the_same_model(solver, monkeypatch):
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X, y = X[:500] / 16.0, y[:500]
    kw = dict(C=10.0, gamma=0.05, device="cpu", solver=solver, probability=True, random_state=0)
    one = SVC(**kw).fit(X, y)
    threads = set()
    real = SVC._solve_rows
    import threading

    import time

    def solve_rows(self, *a, **k):
        if not threads:
            time.sleep(0.05)  # a busy machine may start the pool's next thread late: the first must not take all
        threads.add(threading.get_ident())
        return real(self, *a, **k)

    monkeypatch.setattr(SVC, "_solve_rows", solve_rows)
    many = SVC(**kw, n_jobs=3).fit(X, y)
    assert len(threads) > 1  # the pairs did run in several threads
    for attr in ("support_", "dual_coef_", "intercept_", "n_iter_", "objective_", "probA_", "probB_", "_pair_coef"):
        np.testing.assert_array_equal(getattr(many, attr), getattr(one, attr))
    np.testing.assert_array_equal(many.predict_proba(X), one.predict_proba(X))
    for bad in (0, 1.5, True):
        with pytest.raises(ValueError, match="'n_jobs' parameter of SVC must be None or a nonzero int"):
            SVC(n_jobs=bad).fit(X, y)


def test_map_problems_limits_blas_to_one_thread_while_its_threads_run():
    """Threads of independent problems share the cores with BLAS's own threads (OpenBLAS's spin between
    calls): while map_problems runs more than one thread, BLAS gets one; with one thread it is untouched."""
    from threadpoolctl import threadpool_info, threadpool_limits

    from gpusvm._parallel import map_problems

    def blas_threads(_):
        return sorted({i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"})

    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads(None)
        if not before or before == [1]:
            pytest.skip(f"no BLAS whose thread count threadpoolctl can set here ({before})")
        assert map_problems(blas_threads, range(4), 2, on_gpu=False) == [[1]] * 4
        assert blas_threads(None) == before  # restored afterwards
        assert map_problems(blas_threads, range(2), 1, on_gpu=False) == [before] * 2


def test_map_problems_in_overlapping_caller_threads_restore_blas(monkeypatch):
    """Two fits with n_jobs in a caller's threads overlap: the first enters, the second enters, the first
    leaves, then the second. Each used to save the process-wide BLAS limit it found and restore it on
    leaving, so the second restored the first's limit of one thread and BLAS stayed single-threaded after
    both (seen with real fits in a ThreadPoolExecutor). threadpoolctl is replaced by a stand-in that keeps
    the process-wide count, because OpenBLAS does not always report a count set from another thread."""
    import threading
    from types import SimpleNamespace

    import gpusvm._parallel as parallel
    from gpusvm._parallel import map_problems

    blas = {"threads": 2}

    class Limits:  # threadpoolctl.threadpool_limits on one process-wide BLAS count
        def __init__(self, limits, user_api):
            self.saved, blas["threads"] = blas["threads"], limits

        def restore_original_limits(self):
            blas["threads"] = self.saved

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.restore_original_limits()

    monkeypatch.setattr(parallel, "_blas_controller", lambda: SimpleNamespace(limit=Limits))
    inside = {name: threading.Barrier(3) for name in "ab"}
    leave = {name: threading.Event() for name in "ab"}

    def work(name):
        def fn(_):
            inside[name].wait(timeout=10)
            leave[name].wait(timeout=10)
        return lambda: map_problems(fn, range(2), 2, on_gpu=False)

    threads = {name: threading.Thread(target=work(name)) for name in "ab"}
    threads["a"].start()
    inside["a"].wait(timeout=10)
    threads["b"].start()
    inside["b"].wait(timeout=10)
    assert blas["threads"] == 1
    leave["a"].set()
    threads["a"].join(timeout=10)
    assert blas["threads"] == 1  # b's threads still run
    leave["b"].set()
    threads["b"].join(timeout=10)
    assert blas["threads"] == 2


def test_blas_controller_is_built_once_until_modules_are_imported(monkeypatch):
    """Building threadpoolctl's controller scans every loaded library (about 2.5 ms, paid by every CPU
    prediction in two or more blocks): it is kept, and built again only after an import."""
    import sys

    import gpusvm._parallel as parallel

    first = parallel._blas_controller()
    if first is None:
        pytest.skip("threadpoolctl < 3.0 has no ThreadpoolController")
    assert parallel._blas_controller() is first
    monkeypatch.setitem(sys.modules, "gpusvm_test_new_module", None)
    assert parallel._blas_controller() is not first


@pytest.mark.parametrize("k", [2, 3, 6, 120])
def test_ovo_predict_counts_libsvms_votes(k):
    """The vote of every pair (a, b) counted at once is LIBSVM's loop over the pairs: dec > 0 votes for a,
    else for b; with a label order in which b comes first, dec >= 0 for a; ties to the first in order."""
    from gpusvm._ovo import ovo_predict

    rng = np.random.default_rng(k)
    dec = rng.choice([-1.0, -0.0, 0.0, 0.5, 2.0], size=(200, k * (k - 1) // 2))
    classes = np.arange(k) * 10
    for order in (None, rng.permutation(k)):
        rank = np.arange(k) if order is None else np.argsort(order)
        votes = np.zeros((200, k), dtype=np.int64)
        p = 0
        for a in range(k):
            for b in range(a + 1, k):
                first = rank[a] < rank[b]
                win_a = dec[:, p] > 0 if first else dec[:, p] >= 0
                votes[np.arange(200), np.where(win_a, a, b)] += 1
                p += 1
        listed = np.arange(k) if order is None else order
        expect = classes[listed[np.argmax(votes[:, listed], axis=1)]]
        np.testing.assert_array_equal(ovo_predict(dec, classes, "numpy", order), expect)


def test_ovo_predict_votes_in_blocks_of_rows(monkeypatch):
    """The vote holds the temporaries of a block of rows, not of all: counted at once, the pair votes and
    their float64 copy for the product took 1.35x the decision values at the peak (ten classes, 200,000
    rows: 93 MB beside the 69 MB of dec, where the loop over the pairs held 19 MB). Blocks give the labels
    of one pass over all rows, with and without a label order."""
    from gpusvm import _ovo

    rng = np.random.default_rng(0)
    k = 10
    dec = rng.choice([-1.0, -0.0, 0.0, 0.5, 2.0], size=(100_000, k * (k - 1) // 2))
    classes = np.arange(k) * 10
    _ovo.ovo_predict(dec[:3], classes, "numpy")
    _, peak = traced_peak(lambda: _ovo.ovo_predict(dec, classes, "numpy"))
    assert peak < dec.nbytes / 4
    for order in (None, rng.permutation(k)):
        monkeypatch.setattr(_ovo, "_VOTE_BLOCK", 10**9)  # all rows in one block
        whole = _ovo.ovo_predict(dec[:1000], classes, "numpy", order)
        monkeypatch.setattr(_ovo, "_VOTE_BLOCK", 7 * dec.shape[1])  # blocks of 7 rows, the last one shorter
        np.testing.assert_array_equal(_ovo.ovo_predict(dec[:1000], classes, "numpy", order), whole)


def test_ovo_predict_with_many_classes_counts_winners_without_a_pairs_by_classes_table():
    """Above _VOTE_PRODUCT_MAX_CLASSES classes the vote counts each pair's winner: the product's table of the
    pairs' +1 / -1 columns is n_pairs x k (k = 300: 107 MB for a two-row prediction, k = 1,000: 4 GB) and its
    work k**3 per row. (Votes against LIBSVM's loop: test_ovo_predict_counts_libsvms_votes, k = 120.)"""
    from gpusvm import _ovo

    k = 300
    dec = np.random.default_rng(0).normal(size=(2, k * (k - 1) // 2))
    _ovo._vote_tables.cache_clear()
    labels, peak = traced_peak(lambda: _ovo.ovo_predict(dec, np.arange(k), "numpy"))
    assert peak < 20 * 2**20
    assert labels.shape == (2,)


def test_ovo_predict_products_run_with_blas_on_one_thread(monkeypatch):
    """Threaded, OpenBLAS ran the vote's short products up to 100x slower on the shared 2-core machine (64
    classes, 5,000 rows: up to 12.9 s against 0.07 s on one thread): products OpenBLAS would thread run
    inside single_blas_thread; a one-row prediction's does not pay for the limit."""
    import contextlib

    from gpusvm import _ovo

    entered = []
    real = _ovo.single_blas_thread

    @contextlib.contextmanager
    def spy():
        entered.append(True)
        with real():
            yield

    monkeypatch.setattr(_ovo, "single_blas_thread", spy)
    k = 10
    dec = np.random.default_rng(0).normal(size=(2000, k * (k - 1) // 2))
    many = _ovo.ovo_predict(dec, np.arange(k), "numpy")
    assert entered == [True]
    assert _ovo.ovo_predict(dec[:1], np.arange(k), "numpy")[0] == many[0]
    assert entered == [True]


@pytest.mark.parametrize("k", [3, 4, 10, 37])
def test_ovr_decision_is_sklearns_to_the_bit(k):
    """decision_function_shape="ovr" counts votes and sums confidences class by class in scikit-learn's order,
    so its values are those of sklearn's _ovr_decision_function bit for bit (zeros, signed zeros and NaN
    votes too; compiled, row by row)."""
    try:
        from sklearn.utils.multiclass import _ovr_decision_function
    except ImportError:  # a private helper: nothing to compare with
        pytest.skip("scikit-learn has no _ovr_decision_function")
    from gpusvm._ovo import _ovr_decision

    rng = np.random.default_rng(k)
    dec = rng.standard_normal((300, k * (k - 1) // 2)) * 10.0 ** rng.integers(-8, 8, size=(300, k * (k - 1) // 2))
    dec[rng.random(dec.shape) < 0.1] = 0.0
    dec[rng.random(dec.shape) < 0.1] = -0.0
    dec[rng.random(dec.shape) < 0.01] = np.nan  # (votes for the pair's first class there)
    ref = _ovr_decision_function(dec < 0, -dec, k)
    got = _ovr_decision(dec, k)
    nan = np.isnan(ref)  # (a NaN's sign bit is not compared)
    assert nan.any() and np.array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan].view(np.int64), ref[~nan].view(np.int64))


def test_takes_the_parameters_of_sklearns_svc():
    """scikit-learn 1.9 deprecates SVC's probability and makes the string "deprecated" its default, so
    SVC(**sklearn_svc.get_params()), the drop-in use, raised "must be a bool". It means False here too."""
    params = SkSVC().get_params()
    m = SVC(device="cpu", **params)
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    ref = SkSVC(**params).fit(X, y)
    m.fit(X, y)
    np.testing.assert_array_equal(m.predict(X), ref.predict(X))
    np.testing.assert_allclose(m.decision_function(X), ref.decision_function(X), atol=1e-6)
    assert not hasattr(m, "predict_proba")
    with pytest.raises(ValueError, match="'probability' parameter of SVC must be a bool"):
        SVC(probability="yes").fit(X, y)


def test_break_ties_as_sklearn():
    from sklearn.datasets import make_blobs

    X, y = make_blobs(n_samples=90, centers=3, random_state=0, cluster_std=2.0)
    kw = dict(C=1.0, gamma=0.5)
    m = SVC(device="cpu", break_ties=True, **kw).fit(X, y)
    ref = SkSVC(break_ties=True, **kw).fit(X, y)
    grid = np.random.default_rng(0).uniform(X.min(0) - 3, X.max(0) + 3, size=(3000, 2))
    np.testing.assert_array_equal(m.predict(grid), ref.predict(grid))
    np.testing.assert_array_equal(m.predict(grid), m.classes_[np.argmax(m.decision_function(grid), axis=1)])
    plain = SVC(device="cpu", **kw).fit(X, y)
    assert np.any(plain.predict(grid) != m.predict(grid))  # three-way vote ties, broken differently (4 here)
    # two classes: nothing to break
    b = (y > 0).astype(int)
    np.testing.assert_array_equal(SVC(device="cpu", break_ties=True).fit(X, b).predict(grid),
                                  SVC(device="cpu").fit(X, b).predict(grid))
    with pytest.raises(ValueError, match="break_ties must be False when decision_function_shape is 'ovo'"):
        SVC(device="cpu", break_ties=True, decision_function_shape="ovo").fit(X, y).predict(X)
    with pytest.raises(ValueError, match="'break_ties' parameter of SVC must be a bool"):
        SVC(break_ties=1).fit(X, y)


@pytest.mark.parametrize("solver", ["smo", "pa-smo"])
@pytest.mark.parametrize("kernel", ["linear", "poly", "rbf", "sigmoid"])
def test_all_grams_against_sklearn(kernel, solver):
    X, y = load_bundled("breast_cancer")
    kw = dict(C=1.5, kernel=kernel, gamma=0.05, coef0=1.0 if kernel == "poly" else -0.5, degree=2)
    m = SVC(device="cpu", solver=solver, **kw).fit(X, y)
    ref = SkSVC(**kw).fit(X, y)
    d_ref = sklearn_dual_objective(ref, X)
    assert abs(m.objective_[0] - d_ref) <= 1e-3 * abs(d_ref)
    assert np.mean(m.predict(X) == ref.predict(X)) >= 0.99


def test_dense_and_csr_give_the_same_model():
    X, y = load_bundled("breast_cancer")
    Xs = sp.csr_matrix(np.where(np.abs(X) < 0.5, 0.0, X))
    for solver in ("smo", "pa-smo"):
        a = SVC(C=4.0, gamma=0.1, solver=solver, device="cpu").fit(Xs.toarray(), y)
        b = SVC(C=4.0, gamma=0.1, solver=solver, device="cpu").fit(Xs, y)
        np.testing.assert_array_equal(a.support_, b.support_)
        assert sp.issparse(b.dual_coef_)  # sklearn's layout after a sparse fit
        np.testing.assert_allclose(a.dual_coef_, b.dual_coef_.toarray(), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(a.decision_function(Xs), b.decision_function(Xs.toarray()), atol=1e-9)
        assert sp.issparse(b.support_vectors_)


@pytest.mark.parametrize("density", [0.6, 0.03])
def test_blocked_decision_does_not_depend_on_the_block_size(density):
    """Decision values in blocks of one row up to all rows, with CSR support vectors the CPU densifies
    (density 0.6) or multiplies as CSR (0.03), against sklearn's on the same model."""
    from gpusvm._backend import get_backend
    from gpusvm.svc import DECISION_BLOCK_BYTES, _blocked_decision

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 40)) * (rng.random((300, 40)) < density)
    y = (X[:, :5].sum(axis=1) + 0.3 * rng.normal(size=300) > 0).astype(int)
    Xs = sp.csr_matrix(X)
    m = SVC(C=2.0, gamma=0.05, device="cpu").fit(Xs, y)
    ref = SkSVC(C=2.0, gamma=0.05).fit(Xs, y)
    be = get_backend("cpu")
    SV, coef, b = m.support_vectors_, m._pair_coef, m._pair_b
    spec = m._gram_spec(m._gamma)
    sv_sq, x_sq = be.row_sqnorms(SV, np.float64), be.row_sqnorms(Xs, np.float64)
    n_sv = SV.shape[0]
    outs = [_blocked_decision(be, SV, coef, b, Xs, spec, sv_sqnorm=sv_sq, x_sqnorm=x_sq, block_bytes=nb)
            for nb in (1, 8 * n_sv * 7, 8 * n_sv * 300, None)]
    from sklearn.metrics.pairwise import rbf_kernel

    direct = (coef @ rbf_kernel(SV.toarray(), X, gamma=0.05)).T + b[None, :]
    for out in outs:
        np.testing.assert_allclose(out, direct, rtol=1e-10, atol=1e-12)
    # and the model's decision values are LIBSVM's
    np.testing.assert_allclose(m.decision_function(Xs), ref.decision_function(Xs), rtol=1e-6, atol=1e-6)
    assert DECISION_BLOCK_BYTES["cpu"] < DECISION_BLOCK_BYTES["gpu"]


@pytest.mark.parametrize("solver", ["smo", "pa-smo"])
@pytest.mark.parametrize("shape", ["ovr", "ovo"])
def test_digits_multiclass_agrees_with_sklearn(solver, shape):
    X, y = load_bundled("digits")
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    m = SVC(C=10.0, gamma=0.02, solver=solver, decision_function_shape=shape, device="cpu").fit(Xtr, ytr)
    ref = SkSVC(C=10.0, gamma=0.02, decision_function_shape=shape).fit(Xtr, ytr)
    assert np.mean(m.predict(Xte) == ref.predict(Xte)) >= 0.995
    dec, dref = m.decision_function(Xte), ref.decision_function(Xte)
    assert dec.shape == dref.shape
    assert m.dual_coef_.shape == ref.dual_coef_.shape and m.intercept_.shape == ref.intercept_.shape
    np.testing.assert_array_equal(m.n_support_, ref.n_support_) if solver == "smo" else None
    if solver == "smo":  # same algorithm, same order of the data: LIBSVM's model exactly
        np.testing.assert_array_equal(m.support_, ref.support_)
        np.testing.assert_allclose(m.dual_coef_, ref.dual_coef_, rtol=1e-6, atol=1e-8)
        if shape == "ovo":
            np.testing.assert_allclose(dec, dref, rtol=1e-6, atol=1e-6)
    assert len(m.n_iter_) == len(m.objective_) == 45


def test_weights_against_sklearn():
    X, y = load_bundled("breast_cancer")
    sw = np.random.default_rng(0).uniform(0.2, 3.0, size=len(y))
    sw[:20] = 0.0
    cw = {0: 2.0, 1: 0.5}
    m = SVC(C=2.0, class_weight=cw, device="cpu").fit(X, y, sample_weight=sw)
    ref = SkSVC(C=2.0, class_weight=cw).fit(X, y, sample_weight=sw)
    # sklearn's support_ indexes the rows left after dropping zero weights; ours the original rows
    np.testing.assert_array_equal(m.support_, ref.support_ + 20)
    np.testing.assert_array_equal(m.support_vectors_, ref.support_vectors_)
    np.testing.assert_allclose(m.decision_function(X), ref.decision_function(X), rtol=1e-5, atol=1e-6)
    assert not np.isin(np.arange(20), m.support_).any()  # zero weight: never a support vector
    mb = SVC(C=2.0, class_weight="balanced", device="cpu").fit(X, y)
    rb = SkSVC(C=2.0, class_weight="balanced").fit(X, y)
    np.testing.assert_allclose(mb.decision_function(X), rb.decision_function(X), rtol=1e-5, atol=1e-6)
    # a class left without weight is named as the user wrote it (not NumPy 2's "np.int64(3)")
    y4, sw4 = np.arange(len(y)) % 4 + 1, np.ones(len(y))
    sw4[y4 == 3] = 0.0
    with pytest.raises(ValueError, match=r"classes 1 and 3 do not both have samples with positive weight"):
        SVC(device="cpu").fit(X, y4, sample_weight=sw4)


def test_gamma_scale_and_auto_as_sklearn():
    X, y = load_bundled("breast_cancer", scale=False)
    Xs = sp.csr_matrix(X[:200])
    for g in ("scale", "auto"):
        for Xin in (X[:200], Xs):
            m = SVC(gamma=g, device="cpu").fit(Xin, y[:200])
            ref = SkSVC(gamma=g).fit(Xin, y[:200])
            assert m._gamma == pytest.approx(ref._gamma, rel=1e-12)


@pytest.mark.parametrize("sparse", [False, True])
def test_gamma_scale_of_float32_data_is_accumulated_in_float64(sparse):
    """sklearn converts float32 X to float64 before X.var(); dense float32 X.var() overflowed from values
    of about 1.8e19 on (gamma='scale' refused: "X.var() = inf"), though the same data as float64 or CSR fit."""
    rng = np.random.default_rng(0)
    X = (rng.normal(size=(60, 4)) * 1e20).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    Xin = sp.csr_matrix(X) if sparse else X
    m = SVC(device="cpu").fit(Xin, y)
    assert m._gamma == pytest.approx(SkSVC().fit(Xin, y)._gamma, rel=1e-12)
    assert m._gamma == pytest.approx(SVC(device="cpu").fit(X.astype(np.float64), y)._gamma, rel=1e-12)


# ---------------------------------------------------------------------------------------------------
# The solvers themselves
# ---------------------------------------------------------------------------------------------------
def _binary_problem(n=400, seed=0):
    X, y = make_chessboard(n, random_state=seed)
    return X * 4, y


@pytest.mark.parametrize("name", ["smo", "pa-smo"])
def test_solver_result_is_kkt_optimal_and_consistent(name):
    X, y = _binary_problem()
    spec = GramSpec("rbf", gamma=0.5)
    C = np.full(len(y), 10.0)
    C[::7] = 3.0  # per-sample bounds
    fn, _ = get_binary_solver(name)
    r = fn(CPU, X, y, spec, C, tol=1e-4, max_iter=-1, cache_bytes=2**20, gram_dtype="float64")
    assert r.converged
    assert np.all(r.alpha >= 0) and np.all(r.alpha <= C)
    assert abs(np.dot(y, r.alpha)) < 1e-9 * max(1.0, r.alpha.sum())
    G = gradient_from_alpha(CPU, X, y, r.alpha, spec, dtype=np.float64)
    np.testing.assert_allclose(r.gradient, G, atol=1e-8)
    assert kkt_gap(CPU, y, r.alpha, G, C) <= 1e-4 + 1e-9
    assert r.objective == pytest.approx(0.5 * r.alpha.sum() - 0.5 * r.alpha @ G, rel=1e-12)


def test_cache_budget_and_shrinking_do_not_change_the_solution():
    X, y = _binary_problem(500, seed=3)
    spec = GramSpec("rbf", gamma=0.5)
    C = np.full(len(y), 100.0)
    big = CPU.smo_pairwise(X, y, spec, C, tol=1e-3, cache_bytes=2**30)
    tiny = CPU.smo_pairwise(X, y, spec, C, tol=1e-3, cache_bytes=1)  # two rows: constant eviction
    assert tiny["info"]["cache_rows"] == 2 and tiny["info"]["cache_misses"] > big["info"]["cache_misses"]
    np.testing.assert_array_equal(big["alpha"], tiny["alpha"])  # the cache only changes speed
    noshrink = CPU.smo_pairwise(X, y, spec, C, tol=1e-3, cache_bytes=2**30, shrinking=False)
    d = lambda o: 0.5 * o["alpha"].sum() - 0.5 * o["alpha"] @ o["G"]  # noqa: E731
    assert d(noshrink) == pytest.approx(d(big), rel=1e-4)



@needs_address_limit
def test_cache_budget_beyond_what_can_be_reserved_keeps_fewer_rows():
    """The pairwise solver reserves its whole cache store up front (LIBSVM allocates each row as it is
    computed): ``SVC(cache_size=20000)`` on full ijcnn1 under a 6 GB address-space limit raised "Unable
    to allocate 9.31 GiB for an array with shape (49990, 49990)", where scikit-learn's SVC fit in 0.9 GB.
    A store that cannot be reserved now keeps fewer rows: the same solution, only slower."""
    code = (
        "import numpy as np\n"
        "from gpusvm import get_backend\n"
        "cpu = get_backend('cpu')\n"
        "n = 12000\n"
        "X, y, spec, C = halfplane_problem(n)\n"
        "cpu.smo_pairwise(X[:200], y[:200], spec, C[:200], cache_bytes=1)  # (compiled before the limit)\n"
        "limit_address_space(2**29)  # 512 MB more; the store is 576 MB\n"
        "got = cpu.smo_pairwise(X, y, spec, C, cache_bytes=2**40)\n"
        "lift_address_limit()\n"
        "ref = cpu.smo_pairwise(X, y, spec, C, cache_bytes=2**40)\n"
        "assert ref['info']['cache_rows'] == n and 2 <= got['info']['cache_rows'] < n, got['info']\n"
        "assert got['converged'] and np.array_equal(got['alpha'], ref['alpha'])\n"
        "print('ok')\n")
    out = run_under_address_limit(code)
    assert out.returncode == 0 and out.stdout.strip() == "ok", (out.returncode, out.stderr[-2000:])


def test_shrinking_follows_libsvm_on_dense_and_csr():
    """With shrinking active (n = 3,000 > 1,000 steps between shrinks) the position-swapping solver
    takes LIBSVM's steps: same step count (up to rounding-level ties), support set and objective."""
    from sklearn.datasets import make_classification

    X, y = make_classification(3000, 10, n_informative=6, flip_y=0.05, random_state=0)
    for Xin in (X, sp.csr_matrix(np.where(np.abs(X) < 0.3, 0.0, X))):
        ref = SkSVC(C=10.0, gamma=0.2).fit(Xin, y)
        m = SVC(C=10.0, gamma=0.2, device="cpu").fit(Xin, y)
        assert abs(int(m.n_iter_[0]) - int(ref.n_iter_[0])) <= 0.01 * ref.n_iter_[0]
        assert abs(len(m.support_) - len(ref.support_)) <= 0.01 * len(ref.support_)
        d_ref = sklearn_dual_objective(ref, Xin)
        assert abs(m.objective_[0] - d_ref) <= 1e-6 * abs(d_ref)
        np.testing.assert_allclose(m.decision_function(Xin), ref.decision_function(Xin), atol=2e-3)


@pytest.mark.parametrize("dense", [True, False])
def test_gradient_reconstruction_from_uncached_rows_is_exact(dense):
    """n = 3,000 shrinks every 1,000 steps and reconstructs the inactive gradient (once at gap < 10 tol
    and in the final check). With a cache of two rows, the free rows it reads are completed outside
    the cache from their cached prefix (only their inactive part computed); with room for every row,
    they are extended in the cache. Same alpha and gradient to the bit, fewer Gram values than the
    old rule's bound (every free row over all n positions, twice)."""
    X, y = _binary_problem(3000, seed=5)
    if not dense:
        X = sp.csr_matrix(np.where(X < 1.0, 0.0, X))
    spec = GramSpec("rbf", gamma=0.5)
    C = np.full(len(y), 100.0)
    kw = {} if dense else {"dense_max_bytes": 0}
    big = CPU.smo_pairwise(X, y, spec, C, tol=1e-3, cache_bytes=2**30, **kw)
    tiny = CPU.smo_pairwise(X, y, spec, C, tol=1e-3, cache_bytes=1, **kw)
    assert tiny["info"]["cache_rows"] == 2 and big["n_iter"] > 2000
    np.testing.assert_array_equal(tiny["alpha"], big["alpha"])
    np.testing.assert_array_equal(tiny["G"], big["G"])
    n_free = int(np.count_nonzero((big["alpha"] > 0) & (big["alpha"] < C)))
    assert tiny["info"]["gram_evaluations"] < 2 * big["n_iter"] * len(y) + 2 * n_free * len(y)


@pytest.mark.parametrize("dense", [True, False])
def test_cached_rows_survive_shrinking(dense):
    """With room for every row, no Gram value is computed twice: rows kept through shrinking and
    unshrinking are only extended by their missing tail, and the gradient reconstruction reads
    them from the cache (the earlier solver recomputed them: 54.5M values against 25.2M now on dense
    phishing)."""
    X, y = _binary_problem(3000, seed=5)
    if not dense:
        X = sp.csr_matrix(np.where(X < 1.0, 0.0, X))
    spec = GramSpec("rbf", gamma=0.5)
    C = np.full(len(y), 100.0)
    kw = {} if dense else {"dense_max_bytes": 0}  # the CSR kernel
    out = CPU.smo_pairwise(X, y, spec, C, tol=1e-3, cache_bytes=2**30, **kw)
    info = out["info"]
    n = len(y)
    assert info["cache_rows"] == n and out["converged"]
    assert 0 < info["gram_evaluations"] <= n * info["cache_rows_used"]
    # the same solution without shrinking
    ref = CPU.smo_pairwise(X, y, spec, C, tol=1e-3, cache_bytes=2**30, shrinking=False, **kw)
    d = lambda o: o["alpha"].sum() - 0.5 * o["alpha"] @ (o["G"] + 1.0)  # noqa: E731
    assert d(out) == pytest.approx(d(ref), rel=1e-5)


@pytest.mark.parametrize("dense", [True, False])
@pytest.mark.parametrize("kernel", ["linear", "poly", "rbf", "sigmoid"])
def test_pairwise_gram_rows_match_gram(kernel, dense):
    """The op's Gram rows (positions permuted, a sub-range of positions) against ``be.gram``."""
    from gpusvm._backend.ops.smo_pairwise import _CODES, _fill_q, _prepare

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 7)) * (rng.random((300, 7)) < 0.4)
    y = np.where(rng.random(300) < 0.5, -1.0, 1.0)
    spec = GramSpec(kernel, gamma=0.3 if kernel == "rbf" else 0.05, coef0=0.5, degree=3)
    # CSR input takes the dense kernel when its dense copy fits the bound, the CSR kernel otherwise
    sparse, XT, indptr, indices, data, sq, n_buf = _prepare(sp.csr_matrix(X),
                                                            dense_max_bytes=2**30 if dense else 0)
    assert sparse == (not dense)
    perm = rng.permutation(300)
    if dense:
        XT = np.ascontiguousarray(XT[:, perm])  # the solver keeps dense columns in position order
    gx = (XT, indptr, indices, data, perm, sq[perm].copy(), y[perm].copy())
    gk = (sparse, _CODES[kernel], float(spec.gamma), float(spec.coef0), int(spec.degree))
    ws = (np.zeros(300), np.zeros(300), np.zeros(300), np.zeros(n_buf))
    K = CPU.gram(X, X, spec, dtype=np.float64)
    out = np.full(300, np.nan)
    for pi in (0, 17, 299):
        _fill_q(pi, out, 40, 260, gx, gk, ws)
        i = perm[pi]
        ref = y[i] * y[perm[40:260]] * K[i, perm[40:260]]
        np.testing.assert_allclose(out[40:260], ref, rtol=1e-12, atol=1e-14)
        assert np.isnan(out[:40]).all() and np.isnan(out[260:]).all()

def test_pairwise_gram_rows_sum_the_features_in_order():
    """The dense row kernel goes over the nonzero features of x_i four per pass, but adds them to each
    dot product in feature order: the same bits as one feature at a time (linear gram, float64 rows)."""
    from gpusvm._backend.ops.smo_pairwise import _CODES, _fill_q, _prepare

    rng = np.random.default_rng(3)
    X = rng.normal(size=(500, 23)) * (rng.random((500, 23)) < 0.5)  # 0..23 nonzeros per row: every remainder
    y = np.where(rng.random(500) < 0.5, -1.0, 1.0)
    sparse, XT, indptr, indices, data, sq, n_buf = _prepare(X)
    gx = (XT, indptr, indices, data, np.arange(500), sq, y)
    gk = (sparse, _CODES["linear"], 1.0, 0.0, 3)
    ws = (np.zeros(500), np.zeros(500), np.zeros(500), np.zeros(n_buf))
    out = np.empty(500)
    counts = set()
    for i in range(0, 500, 7):
        _fill_q(i, out, 0, 500, gx, gk, ws)
        dots = np.zeros(500)
        for f in np.flatnonzero(X[i]):
            dots = dots + X[i, f] * X[:, f]
        counts.add(np.count_nonzero(X[i]) % 4)
        np.testing.assert_array_equal(out, y[i] * y * dots)
    assert counts == {0, 1, 2, 3}


@pytest.mark.parametrize("name", ["smo", "pa-smo"])
def test_warm_start(name):
    X, y = _binary_problem(400, seed=1)
    spec = GramSpec("rbf", gamma=0.5)
    C = np.full(len(y), 10.0)
    fn, _ = get_binary_solver(name)
    cold = fn(CPU, X, y, spec, C, tol=1e-3, max_iter=-1, cache_bytes=2**24)
    warm = fn(CPU, X, y, spec, C, tol=1e-3, max_iter=-1, cache_bytes=2**24, alpha0=cold.alpha)
    assert warm.n_iter <= 2 and warm.objective == pytest.approx(cold.objective, rel=1e-6)
    # from a feasible half-way point (DC-SVM's use): same optimum
    half = fn(CPU, X, y, spec, C, tol=1e-3, max_iter=cold.n_iter // 3, cache_bytes=2**24)
    assert not half.converged
    rest = fn(CPU, X, y, spec, C, tol=1e-3, max_iter=-1, cache_bytes=2**24, alpha0=half.alpha)
    assert rest.converged and rest.objective == pytest.approx(cold.objective, rel=1e-4)


def test_warm_start_caches_only_the_rows_of_free_alphas():
    """The warm-start gradient reads the rows of alphas at C through a scratch row, so the cache starts
    with the free alphas' rows (which the steps select), not with whichever rows were computed last."""
    X, y = _binary_problem(400, seed=1)
    spec = GramSpec("rbf", gamma=0.5)
    C = np.full(len(y), 0.5)  # small C: most support vectors at the bound
    fn, _ = get_binary_solver("smo")
    cold = fn(CPU, X, y, spec, C, tol=1e-3, max_iter=-1, cache_bytes=2**24)
    n_free = int(np.count_nonzero((cold.alpha > 0) & (cold.alpha < 0.5)))
    n_bound = int(np.count_nonzero(cold.alpha >= 0.5))
    assert n_bound > n_free > 0
    warm = fn(CPU, X, y, spec, C, tol=1e-3, max_iter=-1, cache_bytes=2**24, alpha0=cold.alpha)
    info = warm.info
    assert info["decomposition"] == "pairwise" and info["cache_rows"] >= 400
    # every nonzero row was evaluated once for the gradient, only the free ones were cached
    assert info["gram_evaluations"] >= (n_free + n_bound) * 400
    assert info["cache_rows_used"] <= n_free + 2 * warm.n_iter
    assert warm.objective == pytest.approx(cold.objective, rel=1e-6)
    np.testing.assert_allclose(warm.gradient, cold.gradient, atol=1e-4)


def test_float64_gram_matches_float32():
    X, y = load_bundled("breast_cancer")
    a = SVC(C=5.0, gram_dtype="float32", device="cpu").fit(X, y)
    b = SVC(C=5.0, gram_dtype="float64", device="cpu").fit(X, y)
    assert a.objective_[0] == pytest.approx(b.objective_[0], rel=1e-4)


@pytest.mark.parametrize("pa_recent", [2, 3])
def test_pasmo_fewer_iterations_never_worse_on_chessboard(pa_recent):
    """Planning-ahead SMO on the chess-board (C=1e6, gamma=0.5): fewer SMO steps on average and an
    objective that is never worse (up to 1e-6 relative; both stop at the same KKT tolerance)."""
    spec = GramSpec("rbf", gamma=0.5)
    smo, _ = get_binary_solver("smo")
    pa, _ = get_binary_solver("pa-smo")
    it_smo, it_pa = [], []
    for seed in range(4):
        X, y = make_chessboard(150, random_state=seed)
        X = X * 4  # tiles of side 1, as in the paper's chess-board
        C = np.full(len(y), 1e6)
        kw = dict(tol=1e-3, max_iter=-1, cache_bytes=2**24, gram_dtype="float64", pa_recent=pa_recent)
        r0 = smo(CPU, X, y, spec, C, **kw)
        r1 = pa(CPU, X, y, spec, C, **kw)
        assert r0.converged and r1.converged
        assert r1.objective >= r0.objective - 1e-6 * abs(r0.objective)
        assert r1.info["planning_steps"] > 0
        it_smo.append(r0.n_iter)
        it_pa.append(r1.n_iter)
    assert np.mean(it_pa) < np.mean(it_smo)


def _dups_linear_problem():
    """120 copies of 8 points (a fifth with flipped labels), the problem of the shrinking case below."""
    rng = np.random.default_rng(2)
    B = rng.normal(size=(8, 3))
    yb = np.where(rng.random(8) < 0.5, 1.0, -1.0)
    idx = rng.integers(0, 8, 120)
    X, y = B[idx].copy(), yb[idx].copy()
    y[rng.random(120) < 0.2] *= -1
    return X, y


@pytest.mark.parametrize("case, pa_recent, shrinking, steps", [
    ("chess", 2, True, 242), ("chess", 3, False, 45), ("dups", 2, True, 122)])
def test_pasmo_double_step_never_lowers_the_objective(case, pa_recent, shrinking, steps):
    """A planning step may lower the dual objective; with the step after it (the modified selection) it must
    not. Before the safeguard that offers the planning step's own working set, partners clipped at the box
    lost: chess-board (C=1000) step 240 (D 7,632 -> 6,178 -> 7,414), 3-d plans step 42 (1,650 -> -47,649
    -> -38,764); and a planning step right before a shrinking pass (which clears the history) had no
    modified selection after it (duplicates, linear, C=1e5, step 120). Each step's state is the solve
    stopped there by max_iter (the path is deterministic)."""
    if case == "chess":
        X, y = make_chessboard(100, random_state=0)
        X, C, spec = X * 4, 1000.0, GramSpec("rbf", gamma=0.5)
    else:
        (X, y), C, spec = _dups_linear_problem(), 1e5, GramSpec("linear")
    pa, _ = get_binary_solver("pa-smo")
    Cv = np.full(len(y), C)
    kw = dict(tol=1e-3, cache_bytes=2**24, gram_dtype="float64", pa_recent=pa_recent, shrinking=shrinking)
    D, plans = [0.0], [0]
    for k in range(1, steps + 1):
        r = pa(CPU, X, y, spec, Cv, max_iter=k, **kw)
        D.append(r.objective)
        plans.append(r.info["planning_steps"])
    planned = [k for k in range(1, steps) if plans[k] > plans[k - 1]]
    assert len(planned) > 20
    for k in planned:  # the double step k, k + 1 from the state after step k - 1
        assert D[k + 1] >= D[k - 1] - 1e-12 * abs(D[k - 1]), (k, D[k - 1], D[k], D[k + 1])


def test_batched_decomposition_is_dispatched_on_cpu():
    """decomposition="batched" routes "smo"/"pa-smo" to the batched solver (same optimum)."""
    X, y = load_bundled("breast_cancer")
    for solver in ("smo", "pa-smo"):
        pw = SVC(C=10.0, gamma=0.02, solver=solver, decomposition="pairwise", device="cpu").fit(X, y)
        bt = SVC(C=10.0, gamma=0.02, solver=solver, decomposition="batched", device="cpu").fit(X, y)
        assert bt.objective_[0] == pytest.approx(pw.objective_[0], rel=1e-4)
        assert bt.n_iter_[0] < pw.n_iter_[0]  # rounds, not SMO steps


# ---------------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------------
def test_bad_input_errors():
    X, y = load_bundled("breast_cancer")
    with pytest.raises(ValueError, match="one class|greater than one"):
        SVC().fit(X, np.zeros(len(y)))
    with pytest.raises(ValueError, match="sample_weight"):
        SVC().fit(X, y, sample_weight=np.ones(len(y) - 1))
    with pytest.raises(ValueError, match="negative"):
        SVC().fit(X, y, sample_weight=-np.ones(len(y)))
    for C in (0.0, -1.0):
        with pytest.raises(ValueError, match=r"The 'C' parameter of SVC must be a float in the range \(0.0, inf\)"):
            SVC(C=C).fit(X, y)
    with pytest.raises(NotFittedError):
        SVC().predict(X)
    m = SVC(device="cpu").fit(X, y)
    with pytest.raises(ValueError, match="X has 29 features, but SVC is expecting 30 features"):
        m.predict(X[:, :29])
    with pytest.raises(ValueError, match="solver"):
        SVC(solver="nope").fit(X, y)
    with pytest.raises(ValueError, match="pa_recent"):
        SVC(pa_recent=4).fit(X, y)
    with pytest.raises(ValueError, match="Precomputed matrix must be a square matrix. Input is a 569x30 matrix"):
        SVC(kernel="precomputed").fit(X, y)
    with pytest.raises(ValueError, match="The 'kernel' parameter of SVC must be one of"):
        SVC(kernel="laplacian").fit(X, y)


@pytest.mark.parametrize("name", ["SVC", "DCSVC"])
def test_overflowing_gram_raises_instead_of_a_nan_model(name):
    """Linear gram values of X * 1e20 overflow the float32 Gram rows: sklearn raises ("not finite"), and
    so do we, naming the cause, instead of returning NaN intercepts with fit_status_ 0."""
    import gpusvm

    X = np.random.default_rng(0).normal(size=(100, 3))
    y = (X[:, 0] > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's overflow warnings on the way
        with pytest.raises(ValueError, match="not finite: the Gram values overflowed"):
            getattr(gpusvm, name)(kernel="linear", device="cpu").fit(X * 1e20, y)


@pytest.mark.parametrize("solver", ["smo", "pa-smo"])
def test_max_iter_warns_and_model_is_usable(solver):
    X, y = load_bundled("breast_cancer")
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        m = SVC(max_iter=5, solver=solver, device="cpu").fit(X, y)
    assert m.fit_status_ == 1 and m.n_iter_[0] == 5
    assert m.predict(X).shape == y.shape and np.mean(m.predict(X) == y) > 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        assert SVC(device="cpu").fit(X, y).fit_status_ == 0


def test_to_device_cpu_roundtrip_and_output_library():
    X, y = load_bundled("breast_cancer")
    m = SVC(device="cpu").fit(X, y)
    d0 = m.decision_function(X)
    assert isinstance(d0, np.ndarray)
    assert m.to_device("cpu") is m
    np.testing.assert_array_equal(m.decision_function(X), d0)


# ---------------------------------------------------------------------------------------------------
# GPU (skips without a CUDA device)
# ---------------------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("solver", ["smo", "pa-smo"])
def test_gpu_fit_matches_cpu(gpu_backend, solver):
    import cupy as cp

    X, y = load_bundled("breast_cancer")
    cpu = SVC(C=4.0, gamma=0.05, solver=solver, device="cpu").fit(X, y)
    gpu = SVC(C=4.0, gamma=0.05, solver=solver, device="gpu").fit(X, y)
    assert gpu.objective_[0] == pytest.approx(cpu.objective_[0], rel=1e-3)
    d_np = gpu.decision_function(X)
    assert isinstance(d_np, np.ndarray)
    d_cp = gpu.decision_function(cp.asarray(X))
    assert isinstance(d_cp, cp.ndarray)
    assert np.mean(np.sign(d_np) == np.sign(cpu.decision_function(X))) >= 0.99
    gpu.to_device("cpu")
    np.testing.assert_allclose(gpu.decision_function(X), d_np, atol=1e-8)


def _linear_gram(A, B):
    return A @ B.T


@pytest.mark.gpu
def test_gpu_callable_model_moves_its_rows_and_labels_stay_on_the_host(gpu_backend):
    """to_device moves a callable kernel's training rows (_X_sv) with the model: they stayed CuPy, so the
    "CPU" model's pickle held CuPy arrays and predict passed the callable NumPy and CuPy arrays (TypeError).
    X alone picks the device: NumPy labels (strings cannot be CuPy) with CuPy X were refused as mixed
    libraries by SVC and DCSVC, not by LinearSVC and BudgetSVC."""
    import pickle

    import cupy as cp

    from gpusvm import DCSVC

    rng = np.random.default_rng(11)
    X = rng.normal(size=(90, 4))
    y = np.array(["a", "b", "c"])[rng.integers(0, 3, 90)]
    X[:, 0] += (y == "b") * 2.0
    gpu = SVC(kernel=_linear_gram, device="gpu").fit(cp.asarray(X), y)
    expected = gpu.predict(cp.asarray(X))
    assert isinstance(expected, np.ndarray) and expected.dtype.kind == "U"  # string classes come back on the host
    blob = pickle.dumps(gpu.to_device("cpu"))
    assert b"cupy" not in blob
    np.testing.assert_array_equal(pickle.loads(blob).predict(X), expected)
    host = SVC(kernel=_linear_gram, device="cpu").fit(X, y)
    np.testing.assert_array_equal(SVC(kernel=_linear_gram, device="cpu").fit(X, y).to_device("gpu").predict(
        cp.asarray(X)), host.predict(X))
    dc = DCSVC(n_levels=1, n_clusters_per_level=2, min_cluster_size=0, device="gpu").fit(cp.asarray(X), y)
    assert set(dc.classes_) == {"a", "b", "c"}

@pytest.mark.parametrize("make", [
    pytest.param(lambda: SVC(gamma=0.2, device="cpu"), id="smo"),
    pytest.param(lambda: SVC(gamma=0.2, solver="alfpgm", device="cpu"), id="alfpgm"),
    pytest.param(lambda: SVC(gamma=0.2, decomposition="batched", device="cpu"), id="batched"),
])
def test_wide_sparse_data_fit_and_predict_without_dense_rows(make):
    """Text-like data (1,000,000 features, 10 nonzeros per row): training and prediction keep the rows
    sparse (a dense 1,000,000-wide row is 8 MB) and agree with the fit on the used columns alone."""
    rng = np.random.default_rng(2)
    n, d, nnz = 400, 1_000_000, 10
    cols = rng.integers(0, 60, size=(n, nnz))
    cols[:, ::2] = rng.integers(60, d, size=(n, nnz // 2))
    X = sp.csr_matrix((rng.random(n * nnz) + 0.5, (np.repeat(np.arange(n), nnz), cols.ravel())), shape=(n, d))
    X.sum_duplicates()
    y = np.where(np.asarray(X[:, :30].sum(1)).ravel() > np.asarray(X[:, 30:60].sum(1)).ravel(), 1, 0)
    used = np.unique(X.indices)

    def fit_and_score():
        model = make().fit(X, y)
        return model, model.decision_function(X)

    (wide, dec), peak = traced_peak(fit_and_score)
    narrow = make().fit(X[:, used], y)
    np.testing.assert_allclose(dec, narrow.decision_function(X[:, used]), rtol=1e-6, atol=1e-6)
    assert peak < 100 * 2**20, f"peak {peak / 2**20:.0f} MB"


def test_cpu_fit_does_not_copy_the_problems_rows(monkeypatch):
    """A binary CPU fit copied all of X into LIBSVM's class order and the pairwise solver then made its own
    transposed copy: 2.2-2.6x X's size traced on 20,000 x 200. The solver now gathers the rows itself
    (rows=), 1.2x, with the same model to the bit as from the copy (three classes, probability too)."""
    import gpusvm.svc as svc_module
    from conftest import traced_peak

    rng = np.random.default_rng(0)
    X = rng.normal(size=(6000, 400))  # (2.1x before, 1.25x now)
    y = (X[:, 0] + 0.5 * rng.normal(size=6000) > 0).astype(int)
    fit = lambda: SVC(device="cpu", max_iter=300, cache_size=1).fit(X, y)  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        SVC(device="cpu", max_iter=5).fit(X[:200], y[:200])  # compile and load outside the traced fit
        got, peak = traced_peak(fit)
        assert peak < 1.6 * X.nbytes
        y3 = np.digitize(X[:, 1], [-0.5, 0.5])[:900]
        got3 = SVC(device="cpu", probability=True, random_state=0).fit(X[:900], y3)
        monkeypatch.setattr(svc_module, "ROWS_SOLVERS", ())
        want, want3 = fit(), SVC(device="cpu", probability=True, random_state=0).fit(X[:900], y3)
    for a, b in ((got, want), (got3, want3)):
        np.testing.assert_array_equal(a.support_, b.support_)
        np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)
        np.testing.assert_array_equal(a.intercept_, b.intercept_)
    np.testing.assert_array_equal(got3.probA_, want3.probA_)


@pytest.mark.parametrize("params", [{}, {"decomposition": "batched"}, {"solver": "alfpgm"}],
                         ids=["pairwise", "batched", "alfpgm"])
def test_poly_gram_beyond_float64_raises(params):
    """(gamma ||x||^2 + coef0) ** degree beyond float64 (gamma=1e80, degree 5): sklearn raises ("not
    finite") and so did our pairwise SMO, but the batched and ALFPGM solves returned a model without support
    vectors, with only a ConvergenceWarning (or none: max_iter=-1 never stopped ALFPGM's)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's overflow warnings on the way
        with pytest.raises(ValueError, match="overflow"):
            SVC(kernel="poly", gamma=1e80, degree=5, coef0=1.0, device="cpu", max_iter=1000, **params).fit(X, y)


@pytest.mark.parametrize("params", [{"decomposition": "batched"}, {"solver": "alfpgm"}])
def test_poly_values_beyond_float32_are_stored_as_float64(params):
    """Poly values (gamma=1e8, degree 5: up to 1e43) overflow float32 but not float64. ALFPGM never moved
    alpha on the inf rows (with max_iter=-1 it never stopped; with a limit it returned no support vectors);
    such values are now stored as float64 from the start, and the model is the float64 one."""
    from sklearn.datasets import make_classification

    X, y = make_classification(30, 5, random_state=0)
    kw = dict(kernel="poly", gamma=1e8, degree=5, coef0=1.0, device="cpu", max_iter=2000)
    ref = SVC(gram_dtype="float64", **kw).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        m = SVC(**kw, **params).fit(X, y)
    assert m.fit_status_ == 0 and m.n_support_.sum() > 0
    np.testing.assert_allclose(m.objective_, ref.objective_, rtol=1e-5)
    np.testing.assert_allclose(m.decision_function(X), ref.decision_function(X), rtol=1e-2, atol=1e-2)


def test_default_max_iter_stops_at_libsvm_step_limit():
    """max_iter=-1 ran for ever on a poly gram of data far from the origin (each pair step still raising the
    objective a little, 3e7 steps and on; scikit-learn stops after 1.5e6 at a negative dual objective). The
    pair-at-a-time loop now stops at LIBSVM's own limit max(10^7, 100 n), as svm-train, with a warning."""
    X = np.random.RandomState(0).normal(loc=100, size=(100, 2))
    y = np.random.RandomState(0).randint(0, 2, 100)
    with pytest.warns(ConvergenceWarning, match=r"LIBSVM's step limit max\(10\^7, 100 n\), which max_iter=-1"):
        clf = SVC(kernel="poly", device="cpu").fit(X, y)
    assert clf.n_iter_.tolist() == [10**7]
    assert clf.objective_[0] > 0  # usable: a feasible point that improved on alpha = 0
    assert np.isfinite(clf.decision_function(X)).all()


def test_failed_refit_leaves_the_earlier_model_as_it_was():
    # the second fit resolves gamma="scale" from its own data and then raises (a class pair has no sample
    # of positive weight): the first model must predict as before, not with the second data's gamma
    X, y = load_bundled("breast_cancer")
    m = SVC(device="cpu").fit(X, y)
    before = m.decision_function(X[:20])
    y2 = np.where(np.arange(len(y)) < 5, 2, y)
    with pytest.raises(ValueError, match="positive weight"):
        m.fit(X * 10, y2, sample_weight=np.r_[np.zeros(5), np.ones(len(y) - 5)])
    np.testing.assert_array_equal(m.decision_function(X[:20]), before)


@pytest.mark.parametrize("q", [1025, 4096, 1, 64.0, True])
def test_working_set_size_is_checked_at_every_fit(q):
    """working_set_size over 1,024 was refused only where a batched decomposition ran (on the GPU, or
    decomposition="batched"): the CPU's default pair-at-a-time fit took SVC(working_set_size=4096) silently,
    and the same estimator then raised on the GPU. It is checked at fit, as scikit-learn checks its parameters."""
    X, y = load_bundled("breast_cancer")
    with pytest.raises(ValueError, match=r"The 'working_set_size' parameter of SVC must be an int in the range "
                                         r"\[2, 1024\]\. Got"):
        SVC(device="cpu", working_set_size=q).fit(X[:60], y[:60])
    SVC(device="cpu", working_set_size=1024).fit(X[:60], y[:60])


@pytest.mark.parametrize("decomposition", ["batched", "pairwise"])
def test_decomposition_with_alfpgm_warns_that_it_is_ignored(decomposition):
    """solver="alfpgm" takes no decomposition: SVC(solver="alfpgm", decomposition="batched") fitted ALFPGM's
    model without a word. The fit stays the same (the solver's correct model); a UserWarning names both
    parameters. The default "auto" and the SMO solvers do not warn."""
    X, y = load_bundled("breast_cancer")
    X, y = X[:80], y[:80]
    with pytest.warns(UserWarning, match=f"decomposition='{decomposition}' applies to the SMO solvers .* "
                                         "solver='alfpgm' ignores it"):
        m = SVC(device="cpu", solver="alfpgm", decomposition=decomposition).fit(X, y)
    ref = SVC(device="cpu", solver="alfpgm").fit(X, y)
    np.testing.assert_array_equal(m.dual_coef_, ref.dual_coef_)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SVC(device="cpu", solver="alfpgm").fit(X, y)
        SVC(device="cpu", solver="pa-smo", decomposition=decomposition).fit(X, y)

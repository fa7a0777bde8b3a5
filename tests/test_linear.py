"""LinearSVC (DCD and AVSF) against scikit-learn's LinearSVC (LIBLINEAR) on primal objectives.

Objectives are compared, not accuracies: the primal objective of any (w, b) is an upper bound on the
optimum, and the dual objective of our alpha is a lower bound, so P(ours) - D(ours) certifies how far
we are from the optimum whatever LIBLINEAR reached.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC as SkLinearSVC

from conftest import load_subset
from gpusvm import LinearSVC, get_backend
from gpusvm._solvers.dcd import dcd_linear, dual_objective, primal_objective

CPU = get_backend("cpu")
DATASETS = ["a9a", "w8a", "ijcnn1", "phishing"]
N_SUB = 1000


def _pm1(y):
    return np.where(y == y.max(), 1.0, -1.0)


@functools.lru_cache(maxsize=None)
def _subset(data_dir, name):
    X, y = load_subset(data_dir, f"{name}.xz", N_SUB, seed=0)
    X = sp.csr_matrix(X)
    X.indices = X.indices.astype(np.int32)
    X.indptr = X.indptr.astype(np.int32)
    return X, _pm1(y)


@functools.lru_cache(maxsize=None)
def _sk_objective(data_dir, name, C, loss="hinge"):
    X, y = _subset(data_dir, name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        sk = SkLinearSVC(loss=loss, dual=True, C=C, tol=1e-6, max_iter=300_000, random_state=0).fit(X, y)
    return primal_objective(CPU, X, y, np.full(X.shape[0], C), sk.coef_[0], float(sk.intercept_[0]), 1.0, loss)


def _cases():
    # C = 100 needs 10^4-10^6 sweeps on the a9a, ijcnn1 and phishing subsets (LIBLINEAR too: sklearn
    # stops at its 300k iterations on a9a): those run with -m slow.
    for name in DATASETS:
        for C in (0.01, 1.0, 100.0):
            marks = [pytest.mark.slow] if (C == 100.0 and name != "w8a") else []
            yield pytest.param(name, C, marks=marks, id=f"{name}-C{C:g}")


@pytest.mark.data
@pytest.mark.parametrize("solver", ["dcd", "avsf"])
@pytest.mark.parametrize("name, C", list(_cases()))
def test_primal_objective_matches_liblinear(data_dir, name, C, solver):
    X, y = _subset(data_dir, name)
    ref = _sk_objective(data_dir, name, C)
    m = LinearSVC(C=C, solver=solver, tol=1e-4, max_iter=2_000_000, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m.fit(X, y)
    ours = primal_objective(CPU, X, y, np.full(X.shape[0], C), m.coef_[0], float(m.intercept_[0]), 1.0)
    assert ours == pytest.approx(m.objective_[0], rel=1e-12)
    assert abs(ours - ref) <= 1e-3 * ref, (ours, ref)


@pytest.mark.data
@pytest.mark.parametrize("solver", ["dcd", "avsf"])
def test_duality_gap_certifies_solution(data_dir, solver):
    X, y = _subset(data_dir, "a9a")
    C = np.full(X.shape[0], 1.0)
    r = dcd_linear(CPU, X, y, C, method=solver, tol=1e-4, max_iter=100_000, seed=3)
    assert r.converged
    D = dual_objective(CPU, r.alpha, r.w, r.w_bias, C)
    assert 0 <= r.objective - D <= 1e-4 * r.objective
    assert np.all(r.alpha >= 0) and np.all(r.alpha <= C)
    # w is kept equal to sum alpha_i y_i [x_i, 1] along the way
    np.testing.assert_allclose(X.T @ (r.alpha * y), r.w, atol=1e-8)
    assert r.w_bias == pytest.approx(float(np.sum(r.alpha * y)), abs=1e-8)


@pytest.mark.parametrize("solver", ["dcd", "avsf"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_csr_and_dense_give_the_same_model(solver, dtype):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 20))
    X[rng.random(X.shape) < 0.6] = 0.0
    X = X.astype(dtype)
    y = np.where(X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=300) > 0, 1, 0)
    kw = dict(C=2.0, solver=solver, tol=1e-5, max_iter=50_000, random_state=7)
    dense = LinearSVC(**kw).fit(X, y)
    csr = LinearSVC(**kw).fit(sp.csr_matrix(X), y)
    assert dense.n_updates_ == csr.n_updates_
    np.testing.assert_allclose(csr.coef_, dense.coef_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(csr.intercept_, dense.intercept_, rtol=1e-10, atol=1e-12)
    # the models are equal; the prediction products (BLAS vs sparse) round differently in float32
    rtol = 1e-8 if dtype == np.float64 else 1e-4
    np.testing.assert_allclose(csr.decision_function(sp.csr_matrix(X)), dense.decision_function(X),
                               rtol=rtol, atol=rtol)


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
@pytest.mark.parametrize("solver", ["dcd", "avsf"])
def test_multiclass_ovr_matches_liblinear(solver, loss):
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    m = LinearSVC(C=1.0, loss=loss, solver=solver, tol=1e-6, max_iter=200_000, random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        sk = SkLinearSVC(C=1.0, loss=loss, dual=True, tol=1e-8, max_iter=1_000_000, random_state=0).fit(X, y)
    assert m.coef_.shape == sk.coef_.shape == (3, 4)
    for k in range(3):
        yk = np.where(y == k, 1.0, -1.0)
        C = np.full(len(y), 1.0)
        ref = primal_objective(CPU, X, yk, C, sk.coef_[k], float(sk.intercept_[k]), 1.0, loss)
        assert m.objective_[k] == pytest.approx(ref, rel=1e-4)
    np.testing.assert_allclose(m.decision_function(X), sk.decision_function(X), atol=2e-3)
    np.testing.assert_array_equal(m.classes_, sk.classes_)


@pytest.mark.parametrize("solver", ["dcd", "avsf"])
def test_binary_class_weight_matches_liblinear(solver):
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    cw = {0: 3.0, 1: 0.5}
    m = LinearSVC(C=0.1, class_weight=cw, solver=solver, tol=1e-6, max_iter=200_000, random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        sk = SkLinearSVC(C=0.1, loss="hinge", class_weight=cw, tol=1e-8, max_iter=1_000_000,
                         random_state=0).fit(X, y)
    Ci = 0.1 * np.where(y == 0, 3.0, 0.5)
    ref = primal_objective(CPU, X, _pm1(y), Ci, sk.coef_[0], float(sk.intercept_[0]), 1.0)
    assert m.objective_[0] == pytest.approx(ref, rel=1e-4)
    assert m.decision_function(X).shape == (len(y),)


@pytest.mark.parametrize("cw", [{0: 1.0, 1: 5.0, 2: 0.5}, "balanced"])
@pytest.mark.parametrize("weighted", [False, True])
def test_multiclass_class_weight_matches_liblinear(cw, weighted):
    """One-vs-rest problems weight as LIBLINEAR: class c's weight on class c's samples in its problem, the
    rest unweighted, and "balanced" counts samples by their sample weights. Until session 16 every sample
    carried its own class weight in every problem: 0.5-1.0 off scikit-learn's coefficients on iris."""
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    X, y = X[:135], y[:135]  # unequal classes, so "balanced" is not all ones
    sw = np.random.default_rng(5).uniform(0.2, 2.0, size=len(y)) if weighted else None
    kw = dict(C=1.0, class_weight=cw, tol=1e-10, max_iter=2_000_000)
    m = LinearSVC(**kw, random_state=0, device="cpu").fit(X, y, sample_weight=sw)
    sk = SkLinearSVC(loss="hinge", dual=True, **kw).fit(X, y, sample_weight=sw)
    np.testing.assert_allclose(m.coef_, sk.coef_, atol=1e-7)
    np.testing.assert_allclose(m.intercept_, sk.intercept_, atol=1e-7)


def test_zero_sample_weight_equals_dropping_samples():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(200, 5))
    y = (X[:, 0] > 0).astype(int)
    sw = np.ones(200)
    sw[:50] = 0.0
    a = LinearSVC(C=1.0, tol=1e-6, max_iter=100_000, random_state=0).fit(X, y, sample_weight=sw)
    b = LinearSVC(C=1.0, tol=1e-6, max_iter=100_000, random_state=0).fit(X[50:], y[50:])
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-12)
    np.testing.assert_allclose(a.intercept_, b.intercept_, rtol=1e-12)


@pytest.mark.parametrize("solver", ["dcd", "avsf"])
@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_equal_rows_of_opposite_labels_reach_the_optimum(solver, loss):
    """Rows that all equal one x with labels half 0, half 1: the optimum is w = 0, b = 0. Merged by
    deduplicate into two rows, both dual variables violated alike (pg = -2) in a sweep, and the sweep's
    range of projected gradients, 0 without 0 in it, stopped the solver at w = +-0.25 x (LIBLINEAR's
    rule; sklearn's LinearSVC on the two rows stops there for some seeds too)."""
    X = np.ones((10, 3))
    y = np.arange(10) % 2
    opt = LinearSVC(solver=solver, loss=loss, deduplicate=False, tol=1e-8, max_iter=10_000, random_state=0)
    opt = opt.fit(X, y).objective_[0]
    for seed in range(4):
        for dedupe in (True, False):
            m = LinearSVC(solver=solver, loss=loss, deduplicate=dedupe, random_state=seed).fit(X, y)
            np.testing.assert_allclose(m.coef_, 0.0, atol=1e-3)
            np.testing.assert_allclose(m.intercept_, 0.0, atol=1e-3)
            assert m.objective_[0] <= opt + 1e-3
        m = LinearSVC(solver=solver, loss=loss, random_state=seed).fit(X[:2], y[:2])
        np.testing.assert_allclose(m.coef_, 0.0, atol=1e-3)


def test_newton_stops_at_zero_when_the_gradient_terms_cancel():
    """Every point twice, once per label: the optimum is w = 0, where the gradient is a sum of terms
    that cancel to rounding. The Newton solver's relative rule ||g|| <= tol ||g(0)|| chased that
    rounding up to max_iter steps and warned; it now stops at w = 0 at once, as scikit-learn's."""
    rng = np.random.RandomState(0)
    for _ in range(3):
        X = rng.randn(8, 3) * 10
        y = (X[:, 0] > 0).astype(int)
        perm = rng.permutation(16)
        X2, y2 = np.vstack([X, X])[perm], np.r_[y, 1 - y][perm]
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            m = LinearSVC(loss="squared_hinge", solver="newton", dual=False).fit(X2, y2)
        assert m.n_iter_ == 0
        np.testing.assert_array_equal(m.coef_, 0.0)
        np.testing.assert_array_equal(m.intercept_, 0.0)
        sk = SkLinearSVC(dual=False).fit(X2, y2)
        np.testing.assert_allclose(m.decision_function(X2), sk.decision_function(X2), atol=1e-12)



def test_newton_float32_weak_signal_is_not_taken_for_cancelling_terms():
    """The stop at w = 0 above compared ||g(0)|| with n eps of X's dtype times its terms: for float32 X that
    is 0.012 of them at 100,000 rows, and a balanced problem with a weak but real signal returned w = 0 as
    converged (1e6 rows: 50% accuracy where 59% is reached). float32 X is now decided on float64 products;
    float32 copies of points with both labels still stop at w = 0."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100_000, 5))
    y = (0.02 * X[:, 0] + rng.normal(size=len(X)) > 0).astype(int)
    ref = LinearSVC(loss="squared_hinge", dual=False, device="cpu").fit(X, y)
    m = LinearSVC(loss="squared_hinge", dual=False, device="cpu").fit(X.astype(np.float32), y)
    assert m.n_iter_ > 0
    np.testing.assert_allclose(m.coef_, ref.coef_, rtol=1e-4, atol=1e-7)
    assert m.objective_[0] == pytest.approx(ref.objective_[0], rel=1e-9)
    X2, y2 = np.vstack([X[:500], X[:500]]).astype(np.float32), np.r_[y[:500], 1 - y[:500]]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        z = LinearSVC(loss="squared_hinge", dual=False, device="cpu").fit(X2, y2)
    assert z.n_iter_ == 0
    np.testing.assert_array_equal(z.coef_, 0.0)


def test_no_intercept_and_intercept_scaling():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(150, 4)) + 1.0
    y = (X[:, 0] + X[:, 1] > 2).astype(int)
    m = LinearSVC(fit_intercept=False, tol=1e-6, max_iter=100_000).fit(X, y)
    np.testing.assert_array_equal(m.intercept_, [0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        sk = SkLinearSVC(loss="hinge", fit_intercept=True, intercept_scaling=5.0, tol=1e-8,
                         max_iter=1_000_000).fit(X, y)
    m5 = LinearSVC(intercept_scaling=5.0, tol=1e-6, max_iter=100_000, random_state=0).fit(X, y)
    C = np.ones(len(y))
    ref = primal_objective(CPU, X, _pm1(y), C, sk.coef_[0], float(sk.intercept_[0]) / 5.0, 5.0)
    assert m5.objective_[0] == pytest.approx(ref, rel=1e-4)


@pytest.mark.parametrize("solver", ["dcd", "avsf", "newton"])
def test_threads_give_the_same_one_vs_rest_model(solver):
    """n_jobs solves the one-vs-rest problems in threads (the dual solvers; newton ignores it): the same
    model (each problem its own seed)."""
    rng = np.random.default_rng(12)
    X = rng.normal(size=(600, 15))
    y = np.argmax(X[:, :4] + 0.5 * rng.normal(size=(600, 4)), axis=1)
    loss = "squared_hinge" if solver == "newton" else "hinge"
    kw = dict(C=0.5, loss=loss, solver=solver, tol=1e-3, max_iter=5000, random_state=0, device="cpu")
    one = LinearSVC(**kw).fit(X, y)
    two = LinearSVC(n_jobs=2, **kw).fit(X, y)
    np.testing.assert_array_equal(two.coef_, one.coef_)
    np.testing.assert_array_equal(two.intercept_, one.intercept_)
    assert two.n_updates_ == one.n_updates_ and two.n_iter_ == one.n_iter_
    with pytest.raises(ValueError, match="'n_jobs' parameter of LinearSVC must be None or a nonzero int"):
        LinearSVC(n_jobs=0).fit(X, y)


def test_convergence_warning_at_max_iter():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 10))
    y = (X[:, 0] + rng.normal(size=300) > 0).astype(int)
    for solver in ("dcd", "avsf"):
        with pytest.warns(ConvergenceWarning, match=r"class\(es\) \[1\]: it reached max_iter=2"):  # the label as written
            m = LinearSVC(C=100.0, solver=solver, tol=1e-8, max_iter=2).fit(X, y)
        assert m.n_iter_ == 2
        assert m.n_updates_ > 0



def test_overflow_is_an_error_and_verbose_takes_a_bool(capsys):
    """A C so large that C times the squared hinge overflows used to stop the Newton solver at once with a
    zero model reported as converged (the stop test holds for an infinite gradient); now it says so.
    verbose=True is 1, as in scikit-learn (it was refused as not an int)."""
    rng = np.random.default_rng(6)
    X = rng.normal(size=(200, 5))
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(ValueError, match="gradient overflowed float64 .*lower C"):
        with np.errstate(over="ignore"):
            LinearSVC(loss="squared_hinge", dual=False, C=1e200, device="cpu").fit(X, y)
    ref = LinearSVC(random_state=0, device="cpu").fit(X, y)
    loud = LinearSVC(random_state=0, device="cpu", verbose=True).fit(X, y)
    np.testing.assert_array_equal(loud.coef_, ref.coef_)
    assert capsys.readouterr().out  # it printed its progress
    with pytest.raises(ValueError, match="'verbose' parameter of LinearSVC must be an int"):
        LinearSVC(verbose=-1).fit(X, y)


@pytest.mark.parametrize("sparse", [False, True])
def test_newton_preconditioner_of_float32_data_does_not_overflow(sparse):
    """The primal Newton solver's preconditioner squared float32 X in float32: values from 1.8e19 on gave
    an infinite diagonal, froze those coordinates, and the fit ran max_iter steps to a model far from the
    optimum (objective 2.5x the float64 input's). Now the same model as float64 X."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 5)) * 1e20
    y = (X[:, 0] + 0.8e20 * rng.normal(size=60) > 0).astype(int)
    X32 = X.astype(np.float32)
    ref = LinearSVC(loss="squared_hinge", dual=False, device="cpu").fit(X32.astype(np.float64), y)
    got = LinearSVC(loss="squared_hinge", dual=False, device="cpu").fit(sp.csr_matrix(X32) if sparse else X32, y)
    assert got.n_iter_ < 100
    np.testing.assert_allclose(got.objective_, ref.objective_, rtol=1e-6)
    np.testing.assert_allclose(got.decision_function(X32), ref.decision_function(X32), atol=1e-5)

def test_random_state_reproducible_and_counts():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(200, 6))
    y = (X[:, 0] - X[:, 2] > 0).astype(int)
    a = LinearSVC(random_state=11, solver="avsf").fit(X, y)
    b = LinearSVC(random_state=11, solver="avsf").fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.n_iter_ == b.n_iter_ and a.n_updates_ == b.n_updates_
    assert a.n_updates_ == a.n_iter_ * 200  # AVSF: n coordinate steps per sweep, one binary problem
    c = LinearSVC(random_state=11, solver="dcd").fit(X, y)
    assert c.n_updates_ <= c.n_iter_ * 200  # shrinking visits fewer


def test_class_weight_none_equals_unit_weights():
    # fit skips sklearn's compute_class_weight when class_weight is None; unit weights must agree exactly
    rng = np.random.default_rng(7)
    X = rng.normal(size=(150, 5))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=150) > 0, "b", "a")
    a = LinearSVC(C=0.5, tol=1e-5, random_state=3).fit(X, y)
    b = LinearSVC(C=0.5, tol=1e-5, random_state=3, class_weight={"a": 1.0, "b": 1.0}).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)


def test_fortran_ordered_dense_gives_the_same_model():
    # dcd_linear makes non-C-contiguous dense input contiguous once per solve (the sweeps read rows)
    rng = np.random.default_rng(9)
    X = rng.normal(size=(200, 7))
    y = (X[:, 1] - X[:, 3] + 0.5 * rng.normal(size=200) > 0).astype(int)
    a = LinearSVC(C=0.5, tol=1e-4, max_iter=100_000, random_state=4).fit(X, y)
    b = LinearSVC(C=0.5, tol=1e-4, max_iter=100_000, random_state=4).fit(np.asfortranarray(X), y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.n_updates_ == b.n_updates_


@pytest.mark.parametrize("avsf", [False, True])
def test_sweep_op_counts_moving_visits(avsf):
    # istate[5] (optional) counts the visits that changed alpha_i: after the first sweep from alpha = 0
    # (every variable visited once by DCD), exactly the nonzero alphas moved
    rng = np.random.default_rng(8)
    n, d = 120, 6
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + rng.normal(size=n) > 0, 1.0, -1.0)
    alpha, w = np.zeros(n), np.zeros(d + 1)
    qd = (X * X).sum(axis=1) + 1.0
    fstate = np.array([np.inf, -np.inf, 0.0, float(n), np.inf])
    istate = np.array([n, 0, 0, 0, 1, 0], dtype=np.int64)
    CPU.dcd_sweeps(X, y, qd, np.full(n, 0.1), np.zeros(n), 1.0, alpha, w, np.arange(n), np.ones(n), fstate,
                   istate, np.array([5], dtype=np.uint64), 1, 1e-3, avsf=avsf)
    assert istate[2] == n
    if not avsf:
        assert istate[5] == np.count_nonzero(alpha)
    assert 0 < istate[5] <= istate[2]
    np.testing.assert_allclose(w[:d], X.T @ (alpha * y), atol=1e-12)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"C": -1}, r"The 'C' parameter of LinearSVC must be a float in the range \(0.0, inf\). Got -1 instead."),
        ({"tol": 0}, r"'tol' parameter of LinearSVC"),
        ({"loss": "log"}, r"The 'loss' parameter of LinearSVC must be one of"),
        ({"solver": "sag"}, r"The 'solver' parameter of LinearSVC must be one of "
                            r"\['auto', 'avsf', 'cdn', 'dcd', 'newton'\]"),
        ({"solver": "newton", "loss": "hinge"}, "solver='newton' solves the primal problem of the squared hinge"),
        ({"solver": "newton", "loss": "squared_hinge", "dual": True}, "but dual=True asks for the dual one"),
        ({"solver": "dcd", "loss": "squared_hinge", "dual": False}, "but dual=False asks for the primal one"),
        ({"solver": "avsf", "loss": "squared_hinge", "dual": False}, "but dual=False asks for the primal one"),
        ({"max_iter": 0}, r"The 'max_iter' parameter of LinearSVC must be an int"),
        ({"intercept_scaling": 0.0}, r"'intercept_scaling' parameter"),
        ({"intercept_scaling": 1e155}, r"'intercept_scaling' parameter of LinearSVC is 1e\+155, whose square "
                                       "overflows"),
        ({"class_weight": "auto"}, r"'class_weight' parameter of LinearSVC"),
        ({"fit_intercept": "yes"}, r"'fit_intercept' parameter of LinearSVC must be a bool"),
        ({"penalty": "l0"}, r"The 'penalty' parameter of LinearSVC must be one of \['l1', 'l2'\]. Got 'l0'"),
        ({"penalty": "l1"}, r"penalty='l1' and loss='hinge' is not supported .*our LinearSVC's default loss is"),
        ({"penalty": "l1", "loss": "squared_hinge", "dual": True}, "penalty='l1' and loss='squared_hinge' is not "
                                                                   "supported when dual=True"),
        ({"penalty": "l1", "loss": "squared_hinge", "solver": "newton"}, "penalty='l1' is solved by solver='cdn'"),
        ({"solver": "cdn", "loss": "squared_hinge"}, "solver='cdn' solves the L1-regularized problem"),
        ({"multi_class": "crammer_singer"}, r"The 'multi_class' parameter of LinearSVC must be one of \['ovr'\]"),
        ({"dual": "yes"}, r"The 'dual' parameter of LinearSVC must be 'auto' or a bool"),
        ({"dual": False}, r"loss='hinge' is not supported when dual=False"),
    ],
)
def test_parameter_validation(params, match):
    X = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    y = np.array([0, 1, 1, 0])
    with pytest.raises(ValueError, match=match):
        LinearSVC(**params).fit(X, y)


def test_sklearn_drop_in_parameters():
    """penalty="l2" and multi_class="ovr" are the default problem. ``dual`` chooses the problem as in
    scikit-learn: True the dual (dcd), False the primal (newton), "auto" the primal for the squared hinge
    when n_samples >= n_features. With the squared hinge all of them give the same (unique) w."""
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    kw = dict(C=0.5, loss="squared_hinge", tol=1e-7, max_iter=100_000, random_state=0)
    base = LinearSVC(**kw).fit(X, y)
    assert base.solver_ == "newton"  # 150 samples >= 4 features
    m = LinearSVC(**kw, penalty="l2", multi_class="ovr").fit(X, y)
    np.testing.assert_array_equal(m.coef_, base.coef_)
    sk = SkLinearSVC(C=0.5, loss="squared_hinge", dual=False, tol=1e-10, max_iter=100_000).fit(X, y)
    for dual, solver in ((True, "dcd"), (False, "newton"), (np.False_, "newton"), ("auto", "newton")):
        m = LinearSVC(**kw, dual=dual).fit(X, y)
        assert m.solver_ == solver
        np.testing.assert_allclose(m.coef_, sk.coef_, rtol=1e-3, atol=1e-4)
    # fewer samples than features: "auto" takes the dual, as scikit-learn
    Xw = np.random.default_rng(5).normal(size=(20, 40))
    yw = np.repeat([0, 1], 10)
    assert LinearSVC(**kw).fit(Xw, yw).solver_ == "dcd"
    assert LinearSVC(**kw, dual=False).fit(Xw, yw).solver_ == "newton"
    assert LinearSVC(C=0.5).fit(X, y).solver_ == "dcd"  # the hinge loss is solved in the dual only


def test_input_errors_and_predict_shapes():
    X = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    with pytest.raises(ValueError, match=r"at least 2 classes in the data; got only one class: 0\.$"):
        LinearSVC().fit(X, np.zeros(4, dtype=int))
    m = LinearSVC().fit(X, np.array(["a", "b", "b", "a"]))
    assert m.predict(X).dtype.kind == "U"
    with pytest.raises(ValueError, match="expecting 2 features"):
        m.predict(np.ones((2, 3)))


# dual coordinate descent / primal Newton / L1 coordinate descent
@pytest.mark.parametrize("loss, penalty", [("hinge", "l2"), ("squared_hinge", "l2"), ("squared_hinge", "l1")])
def test_sklearn_estimator_checks(loss, penalty):
    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        # As for scikit-learn's own LinearSVC: an iterative solver stopped at a tolerance does not give
        # weighted and repeated samples identical decisions to 1e-7.
        why = "solution accurate to the solver tolerance, not to 1e-7 (as sklearn's LinearSVC)"
        check_estimator(
            LinearSVC(loss=loss, penalty=penalty, max_iter=5000, device="cpu"),
            expected_failed_checks={
                "check_sample_weight_equivalence_on_dense_data": why,
                "check_sample_weight_equivalence_on_sparse_data": why,
            },
        )


def _twin_problem(seed, n, sparse):
    """A half-sparse binary problem as host input (dense or CSR) and the same on the device."""
    import cupy as cp
    import cupyx.scipy.sparse as csp

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 30))
    X[rng.random(X.shape) < 0.5] = 0.0
    y = np.where(X[:, 0] - X[:, 3] + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    Xc = sp.csr_matrix(X) if sparse else X
    return Xc, y, (csp.csr_matrix(Xc) if sparse else cp.asarray(X))


@pytest.mark.gpu
@pytest.mark.parametrize("solver", ["dcd", "avsf"])
@pytest.mark.parametrize("sparse", [False, True])
def test_gpu_matches_cpu_twin(gpu_backend, solver, sparse):
    import cupy as cp

    Xc, y, Xg = _twin_problem(6, 400, sparse)
    C = np.full(400, 1.0)
    cpu = dcd_linear(CPU, Xc, y, C, method=solver, tol=1e-6, max_iter=100_000, seed=9)
    gpu = dcd_linear(gpu_backend, Xg, cp.asarray(y), cp.asarray(C), method=solver, tol=1e-6,
                     max_iter=100_000, seed=9)
    assert gpu.converged
    assert gpu.objective == pytest.approx(cpu.objective, rel=1e-6)
    np.testing.assert_allclose(cp.asnumpy(gpu.w), cpu.w, rtol=1e-4, atol=1e-6)
    # the estimator on CuPy input returns CuPy decisions
    m = LinearSVC(solver=solver, device="gpu", random_state=0).fit(Xg, cp.asarray(y))
    assert isinstance(m.decision_function(Xg), cp.ndarray)


@pytest.mark.gpu
def test_gpu_multiclass_class_weights_match_cpu(gpu_backend):
    """The one-vs-rest problems' per-problem C (class weight on the problem's own class only) on the GPU."""
    import cupy as cp
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    X, y = X[:135], y[:135]
    sw = np.random.default_rng(6).uniform(0.2, 2.0, size=len(y))
    kw = dict(C=1.0, class_weight="balanced", tol=1e-8, max_iter=200_000, random_state=0)
    cpu = LinearSVC(device="cpu", **kw).fit(X, y, sample_weight=sw)
    gpu = LinearSVC(device="gpu", **kw).fit(cp.asarray(X), cp.asarray(y), sample_weight=cp.asarray(sw))
    np.testing.assert_allclose(gpu.coef_, cpu.coef_, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gpu.intercept_, cpu.intercept_, rtol=1e-5, atol=1e-6)


# ---- solver="newton": the primal truncated Newton method (squared hinge) --------------------------------

@functools.lru_cache(maxsize=None)
def _sk_primal_objective(data_dir, name, C):
    X, y = _subset(data_dir, name)
    sk = SkLinearSVC(loss="squared_hinge", dual=False, C=C, tol=1e-8, max_iter=10_000).fit(X, y)
    return primal_objective(CPU, X, y, np.full(X.shape[0], C), sk.coef_[0], float(sk.intercept_[0]), 1.0,
                            "squared_hinge")


@pytest.mark.data
@pytest.mark.parametrize("C", [0.01, 1.0, 100.0])
@pytest.mark.parametrize("name", DATASETS)
def test_newton_primal_objective_matches_liblinear(data_dir, name, C):
    """The squared-hinge optimum of LIBLINEAR's primal solver (tight tolerance), at every C of the issue;
    C = 100 needs no -m slow here: the Newton method's work does not grow with C as the dual's does."""
    X, y = _subset(data_dir, name)
    ref = _sk_primal_objective(data_dir, name, C)
    m = LinearSVC(C=C, loss="squared_hinge", solver="newton", tol=1e-6, device="cpu").fit(X, y)
    ours = primal_objective(CPU, X, y, np.full(X.shape[0], C), m.coef_[0], float(m.intercept_[0]), 1.0,
                            "squared_hinge")
    assert ours == pytest.approx(m.objective_[0], rel=1e-12)
    assert abs(ours - ref) <= 1e-3 * ref, (ours, ref)
    assert m.n_iter_ < 100


def test_newton_solves_badly_scaled_data_where_dual_descent_stalls():
    """digits (pixels 0-16), class 1 against the rest, C = 1: both LIBLINEAR's dual solver and ours stop at
    1,000 sweeps with about twice the optimum; the Newton method (the choice of dual="auto", as in
    scikit-learn) reaches LIBLINEAR's primal optimum, and its recovered dual variables certify it."""
    from sklearn.datasets import load_digits

    from gpusvm._solvers.newton_linear import newton_linear

    X, y = load_digits(return_X_y=True)
    yb = np.where(y == 1, 1.0, -1.0)
    C = np.ones(len(yb))
    sk = SkLinearSVC(C=1.0, dual=False, tol=1e-8, max_iter=10_000).fit(X, yb)
    ref = primal_objective(CPU, X, yb, C, sk.coef_[0], float(sk.intercept_[0]), 1.0, "squared_hinge")
    m = LinearSVC(C=1.0, loss="squared_hinge", tol=1e-6, device="cpu").fit(X, yb)
    assert m.solver_ == "newton"
    assert m.objective_[0] == pytest.approx(ref, rel=1e-6)
    with pytest.warns(ConvergenceWarning, match=r"\(dcd\) stopped .* max_iter=1000 sweeps"):
        d = LinearSVC(C=1.0, loss="squared_hinge", solver="dcd", random_state=0, device="cpu").fit(X, yb)
    assert d.objective_[0] > 1.5 * ref
    r = newton_linear(CPU, X, yb, C, tol=1e-8)
    assert r.converged
    # alpha_i = 2 C_i xi_i: w - sum alpha_i y_i x~_i is the gradient, and the dual objective of the
    # recovered alpha (at its own w) closes the gap
    w_a = X.T @ (r.alpha * yb)
    wb_a = float(np.sum(r.alpha * yb))
    assert np.sqrt(np.sum((r.w - w_a) ** 2) + (r.w_bias - wb_a) ** 2) <= 1e-4 * np.sqrt(np.sum(w_a ** 2) + wb_a ** 2)
    D = dual_objective(CPU, r.alpha, w_a, wb_a, C, "squared_hinge")
    assert 0 <= r.objective - D <= 1e-6 * r.objective


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_newton_csr_dense_weights_and_no_intercept(dtype):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(400, 25))
    X[rng.random(X.shape) < 0.6] = 0.0
    X = X.astype(dtype)
    y = np.where(X[:, 0] + X[:, 1] - X[:, 2] + 0.5 * rng.normal(size=400) > 0, 1, 0)
    sw = rng.uniform(0.0, 2.0, size=400)
    sw[:30] = 0.0
    for kw in ({}, {"class_weight": {0: 2.0, 1: 0.5}}, {"fit_intercept": False}, {"intercept_scaling": 3.0}):
        dense = LinearSVC(C=0.7, loss="squared_hinge", solver="newton", tol=1e-8, device="cpu", **kw).fit(
            X, y, sample_weight=sw)
        csr = LinearSVC(C=0.7, loss="squared_hinge", solver="newton", tol=1e-8, device="cpu", **kw).fit(
            sp.csr_matrix(X), y, sample_weight=sw)
        sk = SkLinearSVC(C=0.7, loss="squared_hinge", dual=False, tol=1e-10, max_iter=10_000, **kw).fit(
            X.astype(np.float64), y, sample_weight=sw)
        tol = 1e-6 if dtype == np.float64 else 1e-4
        np.testing.assert_allclose(csr.coef_, dense.coef_, rtol=tol, atol=tol)
        np.testing.assert_allclose(dense.coef_, sk.coef_, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(dense.intercept_, sk.intercept_, rtol=1e-4, atol=1e-5)


def test_newton_max_iter_warns_and_multiclass_matches_liblinear():
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    with pytest.warns(ConvergenceWarning, match=r"\(newton\) stopped .* max_iter=1 Newton steps"):
        LinearSVC(loss="squared_hinge", solver="newton", max_iter=1, device="cpu").fit(X, y)
    # a tolerance below what float32 products resolve: the line search stops it, and says so
    with pytest.warns(ConvergenceWarning, match="line search found no decrease"):
        m = LinearSVC(loss="squared_hinge", tol=1e-15, device="cpu").fit(X.astype(np.float32), y)
    assert np.all(np.isfinite(m.coef_)) and m.score(X, y) > 0.9
    m = LinearSVC(C=2.0, loss="squared_hinge", tol=1e-8, device="cpu").fit(X, y)
    sk = SkLinearSVC(C=2.0, loss="squared_hinge", dual=False, tol=1e-10, max_iter=10_000).fit(X, y)
    assert m.solver_ == "newton" and m.coef_.shape == (3, 4)
    np.testing.assert_allclose(m.decision_function(X), sk.decision_function(X), atol=1e-4)


def test_convergence_warning_names_each_cause():
    # float32 data at a tol below its rounding: the line search stalls one problem after about 12 Newton
    # steps while another needs 37; at max_iter=25 the warning must say both, not blame the line search
    # for a problem that only needed more steps (it did, when any problem had stalled)
    rng = np.random.default_rng(0)
    X = (rng.standard_normal((150, 20)) * 10 ** rng.uniform(-1.5, 1.5, 20)).astype(np.float32)
    y = np.argmax(X[:, :3] + rng.standard_normal((150, 3)), 1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        LinearSVC(loss="squared_hinge", solver="newton", C=100.0, tol=1e-12, max_iter=25, device="cpu").fit(X, y)
    msgs = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert len(msgs) == 1
    assert "it reached max_iter=25 Newton steps" in msgs[0] and "line search found no decrease" in msgs[0]


@pytest.mark.gpu
@pytest.mark.parametrize("sparse", [False, True])
def test_newton_gpu_matches_cpu(gpu_backend, sparse):
    import cupy as cp

    from gpusvm._solvers.newton_linear import newton_linear

    Xc, y, Xg = _twin_problem(7, 500, sparse)
    C = np.full(500, 2.0)
    cpu = newton_linear(CPU, Xc, y, C, tol=1e-8)
    gpu = newton_linear(gpu_backend, Xg, cp.asarray(y), cp.asarray(C), tol=1e-8)
    assert gpu.converged and cpu.converged
    assert gpu.objective == pytest.approx(cpu.objective, rel=1e-9)
    np.testing.assert_allclose(cp.asnumpy(gpu.w), cpu.w, rtol=1e-6, atol=1e-8)
    m = LinearSVC(loss="squared_hinge", device="gpu").fit(Xg, cp.asarray(y))
    assert m.solver_ == "newton" and isinstance(m.decision_function(Xg), cp.ndarray)


# ---- penalty="l1": coordinate descent with Newton steps (LIBLINEAR's solver 5) -----------------------------

def _l1_objective(X, y01, C, coef, intercept):
    from gpusvm._solvers.l1_linear import l1_objective

    y = _pm1(y01) if set(np.unique(y01)) != {-1.0, 1.0} else y01
    return l1_objective(CPU, X, y, np.full(X.shape[0], C), coef, float(intercept), 1.0)


@pytest.mark.parametrize("C", [0.01, 1.0, 10.0])  # (at C = 100 neither converges in 100,000 sweeps)
def test_l1_penalty_matches_liblinear_on_breast_cancer(C):
    """The L1-regularized squared-hinge optimum of LIBLINEAR (tight tolerance) and the same zero weights."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.preprocessing import StandardScaler

    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    kw = dict(penalty="l1", loss="squared_hinge", dual=False, C=C, tol=1e-7, max_iter=100_000)
    sk = SkLinearSVC(**kw, random_state=0).fit(X, y)
    m = LinearSVC(**kw, random_state=0, device="cpu").fit(X, y)
    assert m.solver_ == "cdn"
    ref = _l1_objective(X, y, C, sk.coef_[0], sk.intercept_[0])
    ours = _l1_objective(X, y, C, m.coef_[0], m.intercept_[0])
    assert ours == pytest.approx(m.objective_[0], rel=1e-12)
    assert abs(ours - ref) <= 1e-6 * ref, (ours, ref)
    np.testing.assert_array_equal(m.coef_ == 0, sk.coef_ == 0)
    assert 0 < np.count_nonzero(m.coef_) < X.shape[1]  # the L1 penalty's sparse weights


@pytest.mark.data
@pytest.mark.parametrize("C", [0.01, 1.0])
@pytest.mark.parametrize("name", DATASETS)
def test_l1_penalty_objective_matches_liblinear(data_dir, name, C):
    """Issue #5's data sets (subsets): the L1 objective within 1e-3 of LIBLINEAR's at sklearn's defaults,
    CSR and dense input giving the same model."""
    X, y = _subset(data_dir, name)
    kw = dict(penalty="l1", loss="squared_hinge", dual=False, C=C, tol=1e-4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        sk = SkLinearSVC(**kw, max_iter=10_000, random_state=0).fit(X, y)
    m = LinearSVC(**kw, max_iter=10_000, random_state=1, device="cpu").fit(X, y)
    ref = _l1_objective(X, y, C, sk.coef_[0], sk.intercept_[0])
    assert abs(m.objective_[0] - ref) <= 1e-3 * ref, (m.objective_[0], ref)
    d = LinearSVC(**kw, max_iter=10_000, random_state=1, device="cpu").fit(X.toarray(), y)
    np.testing.assert_array_equal(d.coef_, m.coef_)


def test_l1_penalty_multiclass_weights_and_warning():
    """One-vs-rest with class and sample weights as LIBLINEAR's; max_iter stops it with a warning."""
    from sklearn.datasets import load_iris
    from sklearn.preprocessing import StandardScaler

    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    sw = np.random.default_rng(3).uniform(0.5, 2.0, len(y))
    kw = dict(penalty="l1", loss="squared_hinge", dual=False, C=0.3, tol=1e-8, max_iter=100_000,
              class_weight={0: 3.0, 2: 0.5})
    sk = SkLinearSVC(**kw, random_state=0).fit(X, y, sample_weight=sw)
    m = LinearSVC(**kw, random_state=0, device="cpu").fit(X, y, sample_weight=sw)
    np.testing.assert_allclose(m.coef_, sk.coef_, rtol=0, atol=1e-4)
    np.testing.assert_allclose(m.intercept_, sk.intercept_, rtol=0, atol=1e-4)
    with pytest.warns(ConvergenceWarning, match=r"\(cdn\) stopped .* max_iter=2 sweeps"):
        LinearSVC(penalty="l1", loss="squared_hinge", C=100.0, max_iter=2, device="cpu").fit(X, y)



def test_l1_seeds_of_neighbouring_classes_give_unrelated_orders():
    """The CDN loop's generator state is the seed mixed by splitmix64's finalizer: the state seed * GOLDEN + 1
    made seed s + 1 draw seed s's numbers one step later, so one-vs-rest's problems (seeds base + k) swept
    the features in nearly the same orders."""
    from gpusvm._backend.ops.dcd import _next
    from gpusvm._backend.ops.l1r_cd import seed_state

    def draws(seed, k=6):
        state = seed_state(seed)
        return [int(_next(state)) for _ in range(k)]

    for s in (0, 1, 7, 2**40):
        a, b = draws(s), draws(s + 1)
        assert not set(a) & set(b)  # no shared draws, shifted or not
        assert draws(s) == a  # deterministic

def test_float32_input_gives_float64_decisions():
    """As sklearn: the scores are float64 for float32 X too (the weights are not rounded to float32)."""
    X = np.random.default_rng(1).normal(size=(60, 4))
    y = (X[:, 0] > 0).astype(int)
    m = LinearSVC(device="cpu", random_state=0).fit(X, y)
    dec = m.decision_function(X.astype(np.float32))
    assert dec.dtype == np.float64
    np.testing.assert_allclose(dec, X.astype(np.float32).astype(np.float64) @ m.coef_[0] + m.intercept_[0],
                               rtol=1e-12)


def test_predicts_on_values_whose_squares_overflow():
    """Prediction is X @ coef_ only: values whose squares overflow float64 (which fit refuses, as its row
    norms square them) are predicted as sklearn's LinearSVC does, not refused with the fit's message."""
    X = np.random.default_rng(1).normal(size=(60, 4))
    y = (X[:, 0] > 0).astype(int)
    m = LinearSVC(device="cpu", random_state=0).fit(X, y)
    for Z in (X * 1e160, sp.csr_matrix(X * 1e160)):
        np.testing.assert_allclose(m.decision_function(Z), (X * 1e160) @ m.coef_[0] + m.intercept_[0], rtol=1e-12)
        np.testing.assert_array_equal(m.predict(Z), m.predict(X))
    with pytest.raises(ValueError, match="whose squares overflow"):
        LinearSVC(device="cpu").fit(X * 1e160, y)


def test_sparsify_and_densify_keep_predictions():
    """scikit-learn's SparseCoefMixin methods: CSR coef_ after sparsify(), dense after densify(), the
    same decisions either way."""
    from sklearn.datasets import load_iris

    from sklearn.preprocessing import StandardScaler

    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    m = LinearSVC(penalty="l1", loss="squared_hinge", C=0.05, random_state=0, device="cpu").fit(X, y)
    dense, dec = m.coef_.copy(), m.decision_function(X)
    assert np.count_nonzero(dense) < dense.size
    assert m.sparsify() is m and sp.issparse(m.coef_) and m.coef_.nnz == np.count_nonzero(dense)
    np.testing.assert_array_equal(m.decision_function(X), dec)
    assert m.densify() is m and isinstance(m.coef_, np.ndarray)
    np.testing.assert_array_equal(m.coef_, dense)


def test_sparse_coef_after_sparsify_is_not_densified_to_predict_csr_rows():
    """After sparsify(), decision_function densified coef_ in every call (and the CSR product copied its
    transpose to C order): 1,000 rows of a 10-class, 2,000,000-feature L1 model with 2,322 nonzero weights
    took 305 MB traced, scikit-learn's 8 MB. CSR rows now meet the sparse coef_ in a sparse product."""
    from conftest import traced_peak

    rng = np.random.default_rng(2)
    n, d, nnz = 300, 400_000, 10
    X = sp.csr_matrix((rng.normal(size=n * nnz), rng.integers(0, d, n * nnz), np.arange(n + 1) * nnz),
                      shape=(n, d))
    X.sum_duplicates()
    y = np.digitize(X @ rng.normal(size=d), [-1.0, 1.0])
    m = LinearSVC(penalty="l1", loss="squared_hinge", C=0.5, device="cpu").fit(X, y)
    dense_bytes = m.coef_.nbytes  # 3 x 400,000 float64: 9.6 MB
    dec = m.decision_function(X)
    m.sparsify()
    got, peak = traced_peak(lambda: m.decision_function(X))
    np.testing.assert_array_equal(got, dec)
    np.testing.assert_array_equal(m.decision_function(X.astype(np.float32)), m.densify().decision_function(
        X.astype(np.float32)))
    assert peak < 0.5 * dense_bytes, f"peak {peak / dense_bytes:.2f}x the dense coef_"


@pytest.mark.parametrize("solver,n_jobs", [("dcd", 1), ("avsf", 2)])
def test_fit_holds_coef_once_not_every_problems_weights_beside_it(solver, n_jobs):
    """Every one-vs-rest problem's result (w, and alpha) was kept until the last problem ended and only then
    copied into coef_: 12 classes of 200,000 features traced 2.09x coef_'s bytes at the peak. Each w now
    goes into its row when its problem ends (1.17x with one thread, 1.26x with two)."""
    from conftest import traced_peak

    rng = np.random.default_rng(3)
    n, d, nnz, k = 400, 200_000, 8, 12
    X = sp.csr_matrix((rng.normal(size=n * nnz), rng.integers(0, d, n * nnz), np.arange(n + 1) * nnz),
                      shape=(n, d))
    X.sum_duplicates()
    y = np.arange(n) % k
    kw = dict(C=1.0, solver=solver, n_jobs=n_jobs, random_state=0)
    LinearSVC(**kw).fit(X[:40], y[:40])  # compiled loops loaded before tracing
    m, peak = traced_peak(lambda: LinearSVC(**kw).fit(X, y))
    assert m.coef_.shape == (k, d)
    assert peak < 1.5 * m.coef_.nbytes, f"peak {peak / m.coef_.nbytes:.2f}x coef_"


@pytest.mark.gpu
def test_gpu_l1_penalty_matches_cpu(gpu_backend):
    """A GPU fit of penalty="l1" (solved on the host): the CPU's model, weights as for any fit."""
    import cupy as cp

    X, y, Xg = _twin_problem(9, 300, sparse=True)
    kw = dict(penalty="l1", loss="squared_hinge", C=0.5, tol=1e-6, random_state=4)
    cpu = LinearSVC(**kw, device="cpu").fit(X, y)
    gpu = LinearSVC(**kw, device="gpu").fit(Xg, cp.asarray(y))
    np.testing.assert_array_equal(gpu.coef_, cpu.coef_)
    assert isinstance(gpu.predict(Xg), cp.ndarray)


def test_gpu_sweep_op_refuses_w_without_the_bias_weight(gpu_backend):
    """dcd_sweeps' kernel reads and writes w[d] (the bias weight): a w of only d entries must be refused,
    not written one past its end."""
    import cupy as cp

    rng = np.random.default_rng(3)
    n, d = 50, 4
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    qd = cp.asarray((X * X).sum(axis=1) + 1.0)
    fstate = cp.asarray([np.inf, -np.inf, 0.0, float(n), np.inf])
    istate = cp.asarray(np.array([n, 0, 0, 0, 1], dtype=np.int64))
    args = (cp.asarray(X), cp.asarray(y), qd, cp.full(n, 0.1), cp.zeros(n), 1.0, cp.zeros(n))
    tail = (cp.arange(n, dtype=cp.int64), cp.ones(n), fstate, istate, cp.asarray(np.array([5], dtype=np.uint64)),
            1, 1e-3)
    with pytest.raises(ValueError, match=r"w .*at least 5 entries"):
        gpu_backend.dcd_sweeps(*args, cp.zeros(d), *tail)
    w = cp.zeros(d + 1)
    gpu_backend.dcd_sweeps(*args, w, *tail)
    assert float(cp.abs(w).sum()) > 0.0

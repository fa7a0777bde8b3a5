"""Input validation: clear errors naming the problem."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

from gpusvm import get_backend
from gpusvm._validation import (check_options, check_sample_weight, check_scalar, check_X, check_y, class_indices,
                                weights_per_sample)

CPU = get_backend("cpu")


@pytest.mark.parametrize("X, match", [
    (np.array([[1.0, np.nan]]), "NaN"),
    (np.array([[1.0, np.inf]]), "infinity"),
    (sp.csr_matrix(np.array([[0.0, np.nan]])), "NaN"),
    ([[1.0, 2.0], [3.0]], "ragged"),
    (np.zeros((0, 3)), "0 sample\\(s\\)"),
    (np.zeros((3, 0)), "0 feature\\(s\\)"),
    (np.zeros(3), "Expected 2D array, got 1D array"),
    (np.float64(1.0), "Expected 2D array, got scalar array"),
    (np.array([["a", "b"]]), "numeric"),
    (np.array([[1 + 2j]]), "Complex data not supported"),
    (np.array([[1.0, "x"]], dtype=object), "non-numeric"),
    (None, "Expected 2D array"),
    (np.array([[1e200, 1.0]]), "values up to 1e\\+200, whose squares overflow"),
    (sp.csr_matrix(np.array([[0.0, -1e160]])), "squares overflow"),
])
def test_check_X_rejects(X, match):
    with pytest.raises(ValueError, match=match) as exc:
        check_X(X, CPU, owner="SVC")
    assert "'X'" in str(exc.value)


def test_check_X_object_arrays():
    X = check_X(np.array([[1, 2.5]], dtype=object), CPU)
    assert X.dtype == np.float64
    with pytest.raises(TypeError, match="argument must be a string.* number"):
        check_X(np.array([[1.0, {"a": 1}]], dtype=object), CPU)


def test_check_X_keeps_float32_and_converts_others():
    assert check_X(np.ones((2, 2), np.float32), CPU).dtype == np.float32
    assert check_X(np.ones((2, 2), np.int64), CPU).dtype == np.float64
    Xs = check_X(sp.coo_matrix(np.eye(3)), CPU)
    assert sp.isspmatrix_csr(Xs) or sp.issparse(Xs) and Xs.format == "csr"
    Xf = check_X(np.asfortranarray(np.ones((3, 2))), CPU)
    assert Xf.shape == (3, 2)


def test_check_X_checks_finite_values_without_a_copy_of_X():
    """The finiteness and overflow checks made temporaries of X's size (an isfinite mask, then |X|), so
    validating a dense X doubled its memory (full w8a densified: 114 MB array, 228 MB peak in a BudgetSVC
    fit). They are reductions now; only a sum that is not finite falls back to the elementwise test, which
    finite float32 values whose float32 sum overflows reach and pass."""
    from conftest import traced_peak

    X = np.random.default_rng(0).normal(size=(2000, 500))
    out, peak = traced_peak(lambda: check_X(X, CPU))
    assert out is X and peak < 0.05 * X.nbytes
    big = np.full((20, 3), 3e37, dtype=np.float32)  # float32 sum: inf; the values and squares are finite
    assert check_X(big, CPU) is big
    for bad, word in ((np.inf, "infinity"), (-np.inf, "infinity"), (np.nan, "NaN")):
        Xb = X.copy()
        Xb[1234 % 2000, 17] = bad
        with pytest.raises(ValueError, match=word):
            check_X(Xb, CPU)


def test_check_y_and_sample_weight():
    with pytest.raises(ValueError, match="3 labels but X has 2"):
        check_y([0, 1, 1], 2)
    with pytest.raises(ValueError, match="NaN"):
        check_y([0.0, np.nan], 2)
    with pytest.raises(ValueError, match="shape \\(2,\\)"):
        check_sample_weight([1.0], 2)
    with pytest.raises(ValueError, match="negative"):
        check_sample_weight([1.0, -1.0], 2)
    np.testing.assert_array_equal(check_sample_weight(None, 3), np.ones(3))


def test_check_scalar_messages():
    with pytest.raises(ValueError) as exc:
        check_scalar(-1, "C", "SVC", low=0.0, low_open=True)
    assert str(exc.value) == "The 'C' parameter of SVC must be a float in the range (0.0, inf). Got -1 instead."
    with pytest.raises(ValueError, match="must be an int"):
        check_scalar(2.5, "degree", "SVC", kind="int", low=1)
    with pytest.raises(ValueError):
        check_scalar(True, "C", "SVC", low=0.0)
    with pytest.raises(ValueError):
        check_scalar(float("nan"), "tol", "SVC", low=0.0)
    assert check_scalar(None, "max_iter", "SVC", allow_none=True) is None
    assert check_scalar(3, "degree", "SVC", kind="int", low=1) == 3
    with pytest.raises(ValueError, match="must be one of"):
        check_options("x", "solver", "SVC", {"smo"})


def _estimators():
    from gpusvm import SVC, BudgetSVC, DCSVC, LinearSVC

    return [
        pytest.param(lambda: SVC(), id="SVC"),
        pytest.param(lambda: LinearSVC(random_state=0), id="LinearSVC"),
        pytest.param(lambda: BudgetSVC(budget=20, random_state=0), id="BudgetSVC"),
        pytest.param(lambda: DCSVC(n_levels=1, n_clusters_per_level=2, min_cluster_size=0, random_state=0),
                     id="DCSVC"),
    ]


def _small_problem(n=120, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[rng.random((n, d)) < 0.4] = 0.0
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    return X, y


@pytest.mark.parametrize("make", _estimators())
def test_estimators_share_the_label_rules(make):
    """Every classifier rejects continuous and missing targets and ravels a column vector with a warning
    (BudgetSVC used to take a continuous y as one class per value)."""
    from sklearn.exceptions import DataConversionWarning

    X, y = _small_problem()
    with pytest.raises(ValueError, match="Unknown label type"):
        make().fit(X, X[:, 0])
    with pytest.raises(ValueError, match="target y is None"):
        make().fit(X, None)
    with pytest.warns(DataConversionWarning, match="column-vector y"):
        column = make().fit(X, y.reshape(-1, 1))
    np.testing.assert_array_equal(column.predict(X), make().fit(X, y).predict(X))


@pytest.mark.parametrize("make", _estimators())
def test_labels_of_mixed_types_say_so(make):
    """Strings mixed with numbers in an object y: with a string first the fit failed inside NumPy's sort
    ("'<' not supported between instances of 'int' and 'str'"), with a number first it was called an
    unknown label type; both now name the mix."""
    X, _ = _small_problem()
    for first, second in (("a", 1), (1, "a")):
        y = np.array([first, second] * (X.shape[0] // 2), dtype=object)
        with pytest.raises(ValueError, match=r"mixes labels of types that cannot be ordered \(int, str\)"):
            make().fit(X, y)


@pytest.mark.parametrize("make", _estimators())
def test_non_canonical_csr_gives_the_canonical_model_and_stays_untouched(make):
    """CSR with unsorted column indices and repeated entries (which SciPy sums) is the same matrix as its
    canonical form: same model, same decision values; the caller's matrix is not rewritten in place."""
    X, y = _small_problem()
    C = sp.csr_matrix(X)
    rows, cols, vals = [], [], []
    for i in range(C.shape[0]):  # each entry split in two, the row's entries in reverse order
        for p in range(C.indptr[i + 1] - 1, C.indptr[i] - 1, -1):
            rows += [i, i]
            cols += [C.indices[p]] * 2
            vals += [0.25 * C.data[p], 0.75 * C.data[p]]
    indptr = np.searchsorted(np.asarray(rows), np.arange(C.shape[0] + 1))
    M = sp.csr_matrix((np.asarray(vals), np.asarray(cols), indptr), shape=C.shape)
    assert not M.has_canonical_format
    before = (M.indices.copy(), M.data.copy())
    ref = make().fit(C, y).decision_function(C)
    got = make().fit(M, y)
    np.testing.assert_allclose(got.decision_function(M), ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(M.indices, before[0])
    np.testing.assert_array_equal(M.data, before[1])


@pytest.mark.parametrize("make", _estimators())
def test_repeated_csr_entries_are_summed_before_the_overflow_check(make):
    """Two stored entries 1e154 of one position are the value 2e154, whose square overflows: refused like
    the dense matrix (the checks ran before the entries were summed, and LinearSVC fitted a zero model)."""
    X, y = _small_problem()
    C = sp.csr_matrix(X)
    data, indices = C.data.copy(), C.indices.copy()
    data[0] = 1e154
    M = sp.csr_matrix((np.insert(data, 0, 1e154), np.insert(indices, 0, indices[0]),
                       np.concatenate([[0], C.indptr[1:] + 1])), shape=C.shape)
    assert not M.has_canonical_format and abs(M.toarray()[0]).max() == 2e154
    with pytest.raises(ValueError, match="whose squares overflow"):
        make().fit(M, y)


@pytest.mark.parametrize("make", _estimators())
def test_rows_whose_squared_norms_overflow_are_refused(make):
    """Values of 1e153 in 400 features: every square is finite, every row's squared norm is not. SVC,
    DCSVC and BudgetSVC with a given gamma fitted such rows and predicted NaN without a word (the RBF
    distances were inf - inf); now fit and prediction refuse them, dense or CSR, as the larger values."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 400))
    y = (X[:, 0] > 0).astype(int)
    big = X * 1e153
    with np.errstate(over="ignore"):
        assert np.isfinite(abs(big).max() ** 2) and not np.isfinite((big ** 2).sum(axis=1)).any()
    est = make()
    if "gamma" in est.get_params():
        est.set_params(gamma=1e-306)
    for Z in (big, sp.csr_matrix(big)):
        with pytest.raises(ValueError, match="rows whose squared norms overflow float64"):
            clone(est).fit(Z, y)
    if "gamma" in est.get_params():  # LinearSVC's prediction only computes X @ coef_
        fitted = clone(est).fit(X, y)
        with pytest.raises(ValueError, match="rows whose squared norms overflow float64"):
            fitted.decision_function(big)


@pytest.mark.parametrize("make", [p for p in _estimators() if p.id != "LinearSVC"])
def test_gamma_scale_that_cannot_be_resolved_says_why(make):
    """gamma='scale' on values whose squares overflow (or whose variance is subnormal) used to fail with
    "The 'gamma' parameter must be a float in the range (0.0, inf). Got 0.0", naming a value nobody passed."""
    X, y = _small_problem()
    # values whose squares overflow are refused by the input check, before gamma is resolved
    with pytest.raises(ValueError, match=r"'X' for .* has values up to .* whose squares overflow"):
        make().fit(X * 1e200, y)
    with pytest.raises(ValueError, match=r"gamma='scale' cannot be resolved.*too small"):
        make().fit(X * 1e-160, y)
    make().set_params(gamma=1.0).fit(X * 1e-160, y)  # an explicit gamma is left alone


@pytest.mark.parametrize("make", [p for p in _estimators() if p.id in ("SVC", "DCSVC")])
def test_gamma_scale_is_not_resolved_for_grams_that_ignore_it(make):
    """kernel='linear' (and 'precomputed') never use gamma, yet X * 1e-155, whose variance is subnormal,
    was refused with "gamma='scale' cannot be resolved"; scikit-learn's SVC fits it, and so do we now."""
    from sklearn.svm import SVC as SkSVC

    X, y = _small_problem()
    X = X * 1e-155
    kernels = ["linear", "precomputed"] if make().__class__.__name__ == "SVC" else ["linear"]
    for kernel in kernels:
        Xk = X @ X.T if kernel == "precomputed" else X
        est = make().set_params(kernel=kernel, C=1e300)
        with np.errstate(over="ignore"):  # (sklearn's own 1 / (n_features * X.var()), unused)
            ref = SkSVC(kernel=kernel, C=1e300).fit(Xk, y).decision_function(Xk)
        np.testing.assert_allclose(est.fit(Xk, y).decision_function(Xk), ref, rtol=1e-6, atol=1e-12)
    with pytest.raises(ValueError, match=r"gamma='scale' cannot be resolved.*too small"):
        make().set_params(kernel="rbf").fit(X, y)


@pytest.mark.parametrize("make", [p for p in _estimators() if p.id != "LinearSVC"])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_gamma_scale_of_constant_x_is_one(make, sparse):
    """sklearn's gamma='scale' is 1.0 when X.var() is 0; a constant X whose variance came out as rounding
    (7.3 filled: 3e-30 dense, 2.8e-14 from the CSR E[x^2] - E[x]^2) gave gamma 1e13 to 1e29 instead."""
    X, y = _small_problem(n=40, d=4)
    for value in (7.3, 1 / 3, -5.7):
        Xc = np.full(X.shape, value)
        est = make().fit(sp.csr_matrix(Xc) if sparse else Xc, y)
        assert est._gamma == 1.0
    # nearly constant values with a real spread keep their variance
    Xn = 1e7 + np.random.default_rng(1).normal(size=X.shape)
    est = make().fit(sp.csr_matrix(Xn) if sparse else Xn, y)
    assert est._gamma == pytest.approx(1.0 / (Xn.shape[1] * Xn.var()), rel=1e-9)


@pytest.mark.parametrize("make", _estimators())
def test_data_frame_column_names_are_recorded_and_checked(make):
    """As scikit-learn's estimators: a fit on a data frame records ``feature_names_in_``; predicting with
    columns renamed or reordered raises, without names (or names after a fit without) warns, and a refit
    without names drops the old ones. The model is the one the same values give as an array."""
    pd = pytest.importorskip("pandas")
    from sklearn.utils.estimator_checks import check_dataframe_column_names_consistency

    X, y = _small_problem()
    names = [f"f{k}" for k in range(X.shape[1])]
    frame = pd.DataFrame(X, columns=names)
    est = make().fit(frame, y)
    np.testing.assert_array_equal(est.feature_names_in_, names)
    assert est.feature_names_in_.dtype == object
    np.testing.assert_allclose(est.decision_function(frame), make().fit(X, y).decision_function(X),
                               rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="feature names should match"):
        est.predict(frame[names[::-1]])
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        est.predict(X)
    est.fit(X, y)
    assert not hasattr(est, "feature_names_in_")
    with pytest.warns(UserWarning, match="fitted without feature names"):
        est.predict(frame)
    check_dataframe_column_names_consistency(type(est).__name__, make())


def test_feature_name_check_without_names_on_either_side_is_skipped_but_still_warns():
    """check_feature_names returns at once for an array or sparse matrix when the estimator has no
    feature names (scikit-learn's check does nothing then); with names from a data frame fit, an array
    or a CSR matrix still gets scikit-learn's warning."""
    import warnings

    pd = pytest.importorskip("pandas")
    from gpusvm import SVC

    X, y = _small_problem()
    est = SVC(device="cpu").fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est.predict(X)
        est.predict(sp.csr_matrix(X))
    est.fit(pd.DataFrame(X, columns=[f"f{k}" for k in range(X.shape[1])]), y)
    for Q in (X, sp.csr_matrix(X), sp.csr_array(X)):
        with pytest.warns(UserWarning, match="does not have valid feature names"):
            est.predict(Q)


@pytest.mark.parametrize("name", ["SVC", "DCSVC"])
def test_degree_as_scikit_learn(name):
    """Any degree >= 0 is taken (scikit-learn's rule); the grams other than the polynomial one ignore
    it, and the polynomial gram of degree 0 (constant) is refused with a message saying why."""
    import gpusvm

    Est = getattr(gpusvm, name)
    X, y = _small_problem()
    kw = dict(n_levels=1, n_clusters_per_level=2, min_cluster_size=0, random_state=0) if name == "DCSVC" else {}
    ref = Est(gamma=0.5, device="cpu", **kw).fit(X, y).decision_function(X)
    np.testing.assert_array_equal(Est(gamma=0.5, degree=0, device="cpu", **kw).fit(X, y).decision_function(X), ref)
    with pytest.raises(ValueError, match="degree=0 makes the polynomial gram constant"):
        Est(kernel="poly", degree=0, device="cpu", **kw).fit(X, y)
    with pytest.raises(ValueError, match="'degree' parameter"):
        Est(degree=-1, device="cpu", **kw).fit(X, y)


@pytest.mark.parametrize("make", _estimators())
def test_pandas_missing_values_and_bad_class_weights_say_what(make):
    """pandas' nullable columns: ``pd.NA`` in X is NaN (a ValueError saying so, as scikit-learn's, not the
    TypeError of converting pd.NA), in y a missing label; without NA they give the float model. A
    class_weight that is negative or not a number names class_weight (it used to blame zero sample
    weights, or fit with NaN weights)."""
    pd = pytest.importorskip("pandas")
    X, y = _small_problem()
    frame = pd.DataFrame(X).astype("Float64")
    est = make().fit(frame, pd.Series(y, dtype="Int64"))
    np.testing.assert_allclose(est.decision_function(frame), make().fit(X, y).decision_function(X),
                               rtol=1e-12, atol=1e-12)
    frame.iloc[3, 1] = pd.NA
    with pytest.raises(ValueError, match="'X'.* contains NaN"):
        make().fit(frame, y)
    with pytest.raises(ValueError, match="'X'.* contains NaN"):
        est.predict(frame)
    labels = pd.Series(y == 1, dtype="boolean")
    labels[0] = pd.NA
    with pytest.raises(ValueError, match="'y'.* contains NaN or missing values"):
        make().fit(X, labels)
    with pytest.raises(ValueError, match="'y'.* contains NaN or missing values"):
        make().fit(X, np.array([None] + list(y[1:]), dtype=object))
    for bad in (-1.0, np.nan, np.inf, "x"):
        with pytest.raises(ValueError, match=r"'class_weight' parameter .* finite weights >= 0"):
            make().set_params(class_weight={0: bad}).fit(X, y)


@pytest.mark.parametrize("make", _estimators())
def test_pandas_nullable_labels_give_float_classes_as_sklearn(make):
    """scikit-learn's check_array turns labels of pandas' nullable dtypes (Int64, UInt32, boolean, Float64;
    Series, pandas array or one-column frame) into float64, so its classes_ and predictions are float64
    (SVC and LinearSVC alike); ours kept int64 / bool / uint32. Plain NumPy dtypes keep their own."""
    pd = pytest.importorskip("pandas")
    import warnings

    from sklearn.svm import SVC as SkSVC

    X, y = _small_problem()
    for labels in (pd.array(y * 3 + 1, dtype="Int64"), pd.Series(y, dtype="UInt32"),
                   pd.array(y == 1, dtype="boolean"), pd.DataFrame({"y": y}, dtype="Int64")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the one-column frame's DataConversionWarning
            est = make().fit(X, labels)
            ref = SkSVC().fit(X, labels)
        assert est.classes_.dtype == ref.classes_.dtype == np.float64
        np.testing.assert_array_equal(est.classes_, ref.classes_)
        assert est.predict(X).dtype == np.float64
    assert make().fit(X, pd.Series(y == 1)).classes_.dtype == bool
    assert make().fit(X, y.astype(np.int16)).predict(X).dtype == np.int16


def test_svc_verbose_prints_libsvm_summary(capsys):
    """SVC(verbose=True) on the CPU's pair-at-a-time loop prints LIBSVM's summary of each binary solve
    (scikit-learn's SVC prints the same lines, with the same numbers on this problem)."""
    from sklearn.datasets import load_iris

    from gpusvm import SVC

    X, y = load_iris(return_X_y=True)
    model = SVC(verbose=True).fit(X[50:], y[50:])
    out = capsys.readouterr().out
    assert f"optimization finished, #iter = {model.n_iter_[0]}" in out
    # a binary model's signs are flipped as scikit-learn's (decision > 0 favours classes_[1]): intercept_ = rho
    assert f"rho = {model.intercept_[0]:.6f}" in out
    assert f"obj = {-model.objective_[0]:.6f}" in out
    assert f"nSV = {model.support_.shape[0]}," in out


@pytest.mark.parametrize("name", ["SVC", "DCSVC"])
def test_gamma_zero_as_scikit_learn(name):
    """scikit-learn takes any gamma >= 0: the linear gram (and a precomputed one) ignore it, so gamma=0 must
    fit there as any other value does (it was refused as outside (0, inf)); for the rbf, poly and sigmoid
    grams 0 makes the gram constant and is refused with a message saying why, as degree=0 is."""
    import gpusvm

    Est = getattr(gpusvm, name)
    X, y = _small_problem()
    kw = dict(n_levels=1, n_clusters_per_level=2, min_cluster_size=0, random_state=0) if name == "DCSVC" else {}
    ref = Est(kernel="linear", gamma=0.5, device="cpu", **kw).fit(X, y).decision_function(X)
    got = Est(kernel="linear", gamma=0.0, device="cpu", **kw).fit(X, y).decision_function(X)
    np.testing.assert_array_equal(got, ref)
    if name == "SVC":
        K = X @ X.T
        pre = Est(kernel="precomputed", gamma=0, device="cpu").fit(K, y).decision_function(K)
        np.testing.assert_allclose(pre, ref, rtol=1e-7, atol=1e-7)
    for kernel in ("rbf", "poly", "sigmoid"):
        with pytest.raises(ValueError, match=f"gamma=0 makes the '{kernel}' gram constant"):
            Est(kernel=kernel, gamma=0.0, device="cpu", **kw).fit(X, y)
    with pytest.raises(ValueError, match=r"'gamma' parameter .* range \[0.0, inf\)"):
        Est(kernel="linear", gamma=-1.0, device="cpu", **kw).fit(X, y)


@pytest.mark.parametrize("make", _estimators())
def test_class_weight_keys_beyond_the_classes_as_scikit_learn(make):
    """A class_weight dict with a key that is not a class of y was refused; scikit-learn takes it when every
    class of y has its weight (a cross-validation fold that lacks a rare class), and refuses it otherwise."""
    X, y = _small_problem()
    ref = make().set_params(class_weight={0: 1.0, 1: 2.0}).fit(X, y).decision_function(X)
    got = make().set_params(class_weight={0: 1.0, 1: 2.0, 7: 3.0}).fit(X, y).decision_function(X)
    np.testing.assert_array_equal(got, ref)
    with pytest.raises(ValueError, match=r"The classes, \[np.int64\(1\)\], are not in class_weight|"
                                         r"The classes, \[1\], are not in class_weight"):
        make().set_params(class_weight={0: 1.0, 7: 3.0}).fit(X, y)


@pytest.mark.parametrize("make", _estimators())
def test_random_state_checked_as_scikit_learn(make):
    """SVC took random_state='bogus', -5 or 1.5 silently when it did not use it (scikit-learn raises at fit),
    and where it was used the error was NumPy's, naming no parameter."""
    X, y = _small_problem()
    name = type(make()).__name__
    for bad in ("bogus", -5, 1.5, 2**32, True):
        with pytest.raises(ValueError, match=f"The 'random_state' parameter of {name} must be an int in the range "
                                             r"\[0, 4294967295\]"):
            make().set_params(random_state=bad).fit(X, y)
    for good in (None, 0, 2**32 - 1, np.random.RandomState(0)):
        make().set_params(random_state=good).fit(X, y)
    gen = np.random.default_rng(0)
    if name == "DCSVC":  # documented: it also takes a Generator
        make().set_params(random_state=gen).fit(X, y)
    else:
        with pytest.raises(ValueError, match="'random_state' parameter"):
            make().set_params(random_state=gen).fit(X, y)


@pytest.mark.parametrize("make", _estimators())
def test_bounds_that_overflow_are_refused(make):
    """C=1e300 with sample weights of 1e300 made every C_i inf: NaN objectives, NaN or arbitrary decision
    values, and only NumPy's overflow warnings. Large factors whose product is finite still fit."""
    X, y = _small_problem()
    name = type(make()).__name__
    with pytest.raises(ValueError, match=f"C times the class and sample weights of {name} overflows float64"):
        make().set_params(C=1e300).fit(X, y, sample_weight=np.full(len(y), 1e300))
    with pytest.raises(ValueError, match="overflows float64"):
        make().set_params(C=1e200, class_weight={0: 1e200, 1: 1.0}).fit(X, y)
    est = make().set_params(C=1e-290).fit(X, y, sample_weight=np.full(len(y), 1e290))
    assert np.isfinite(est.decision_function(X)).all()


@pytest.mark.parametrize("y", [
    np.tile([1.0, -1.0, -1.0], 400), np.arange(30) % 7, np.array(["b", "a", "c", "a"]),
    np.array(["b", "a", "b"], dtype=object), np.array([1, 1.0, 2], dtype=object), np.array([True, False, True]),
    np.array([-0.0, 0.0, 1.0]), np.array([3, 1, 2, 3], dtype=np.uint8),
])
def test_class_indices_is_numpys_unique_with_inverse(y):
    classes, idx = class_indices(y)
    ref_classes, ref_idx = np.unique(y, return_inverse=True)
    assert classes.dtype == ref_classes.dtype and idx.dtype == ref_idx.dtype
    np.testing.assert_array_equal(classes, ref_classes)
    np.testing.assert_array_equal(idx, ref_idx)


@pytest.mark.parametrize("y", [np.repeat([-1.0, 1.0], [900, 100]), np.arange(1000) % 7 * 3, np.array(list("abcab"))])
def test_balanced_class_weights_are_sklearns(y):
    """class_weight="balanced" without sample weights: scikit-learn's compute_class_weight to the bit."""
    from sklearn.utils.class_weight import compute_class_weight

    classes, y_idx = class_indices(y)
    for weighted in (False, True):
        _, cw, _ = weights_per_sample(None, "balanced", classes, y, y_idx, owner="SVC", weighted_balance=weighted)
        np.testing.assert_array_equal(cw, compute_class_weight("balanced", classes=classes, y=y))

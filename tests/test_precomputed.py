"""SVC(kernel="precomputed") and callable kernels: the user's Gram matrix (or function), checked against
scikit-learn's SVC with the same and against our own SVC computing the same gram from the features."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.metrics.pairwise import polynomial_kernel, rbf_kernel
from sklearn.model_selection import cross_val_score
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC as SkSVC

from gpusvm import SVC


def _split(name, seed, n_train):
    X, y = load_breast_cancer(return_X_y=True) if name == "breast_cancer" else load_digits(return_X_y=True)
    if name == "digits":
        keep = y < 4
        X, y = X[keep], y[keep]
    X = StandardScaler().fit_transform(X)
    perm = np.random.default_rng(seed).permutation(len(y))
    tr, te = perm[:n_train], perm[n_train:]
    return X[tr], y[tr], X[te], y[te]


@pytest.mark.parametrize("name", ["breast_cancer", "digits"])
def test_precomputed_gram_matches_sklearn(name):
    """The same support vectors, coefficients, intercepts and decision values as sklearn's SVC given
    the same matrix; support_vectors_ empty as sklearn's; n_features_in_ = training points."""
    Xtr, ytr, Xte, _ = _split(name, seed=0, n_train=300)
    K, Kt = rbf_kernel(Xtr, gamma=0.03), rbf_kernel(Xte, Xtr, gamma=0.03)
    kw = dict(kernel="precomputed", C=3.0, tol=1e-5)
    ref = SkSVC(**kw).fit(K, ytr)
    m = SVC(device="cpu", **kw).fit(K, ytr)
    np.testing.assert_array_equal(m.support_, ref.support_)
    np.testing.assert_array_equal(m.n_support_, ref.n_support_)
    np.testing.assert_allclose(m.dual_coef_, ref.dual_coef_, rtol=0, atol=1e-4 * 3.0)
    np.testing.assert_allclose(m.intercept_, ref.intercept_, rtol=0, atol=1e-4)
    np.testing.assert_allclose(m.decision_function(Kt), ref.decision_function(Kt), rtol=0, atol=1e-4)
    np.testing.assert_array_equal(m.predict(Kt), ref.predict(Kt))
    assert m.support_vectors_.shape == ref.support_vectors_.shape == (0, 0)
    assert m.n_features_in_ == 300 and m.shape_fit_ == (300, 300)
    assert m.n_distinct_ is None  # (deduplicate="auto", but no points of a Gram matrix are merged)


# (solver options, same path): the pairwise SMO reads the same Gram values either way and takes the same
# steps; the batched and ALFPGM solvers get their blocks from BLAS products whose blocking differs with
# the rows asked for (Gram values 1e-16 apart), so they agree up to their tolerance only
@pytest.mark.parametrize("opts, same_path", [(dict(solver="smo"), True), (dict(solver="pa-smo"), True),
                                             (dict(solver="smo", shrinking=False), True),
                                             (dict(solver="smo", decomposition="batched", gram_dtype="float64"), False),
                                             (dict(solver="alfpgm", gram_dtype="float64"), False)])
def test_every_solver_solves_the_matrix_as_the_features(opts, same_path):
    """Each solver on K gives the model it gives on the features with the same gram (the solvers see
    the same Gram values, only from a lookup), for a non-RBF gram, class and sample weights."""
    Xtr, ytr, Xte, _ = _split("digits", seed=1, n_train=250)
    g = dict(gamma=0.02, coef0=1.0, degree=2)
    K, Kt = polynomial_kernel(Xtr, **g), polynomial_kernel(Xte, Xtr, **g)
    sw = np.random.default_rng(2).uniform(0.5, 2.0, len(ytr))
    kw = dict(C=0.7, tol=1e-4, class_weight={0: 2.0}, device="cpu", deduplicate=False, **opts)
    m = SVC(kernel="precomputed", **kw).fit(K, ytr, sample_weight=sw)
    ref = SVC(kernel="poly", **g, **kw).fit(Xtr, ytr, sample_weight=sw)
    np.testing.assert_array_equal(m.support_, ref.support_)
    if same_path:
        np.testing.assert_array_equal(m.n_iter_, ref.n_iter_)
    np.testing.assert_allclose(m.objective_, ref.objective_, rtol=1e-10 if same_path else 1e-5)
    np.testing.assert_allclose(m.decision_function(Kt), ref.decision_function(Xte), rtol=0,
                               atol=1e-8 if same_path else 1e-3)


def test_probability_and_cross_validation_take_the_matrix():
    """Platt scaling's inner cross-validation cuts the matrix by rows and columns (the same
    probabilities as from the features); sklearn's cross_val_score does too (the pairwise tag)."""
    Xtr, ytr, Xte, _ = _split("breast_cancer", seed=3, n_train=240)
    K, Kt = rbf_kernel(Xtr, gamma=0.05), rbf_kernel(Xte, Xtr, gamma=0.05)
    m = SVC(kernel="precomputed", probability=True, random_state=0, device="cpu").fit(K, ytr)
    ref = SVC(kernel="rbf", gamma=0.05, probability=True, random_state=0, device="cpu").fit(Xtr, ytr)
    np.testing.assert_allclose(m.predict_proba(Kt), ref.predict_proba(Xte), rtol=0, atol=1e-9)
    assert SVC(kernel="precomputed").__sklearn_tags__().input_tags.pairwise
    assert not SVC().__sklearn_tags__().input_tags.pairwise
    ours = cross_val_score(SVC(kernel="precomputed", device="cpu"), K, ytr, cv=3)
    np.testing.assert_allclose(ours, cross_val_score(SkSVC(kernel="precomputed"), K, ytr, cv=3))


def test_precomputed_bad_input_names_the_problem(tmp_path):
    from gpusvm import BudgetSVC, DCSVC
    from gpusvm.libsvm_io import save_libsvm_model

    Xtr, ytr, _, _ = _split("breast_cancer", seed=4, n_train=100)
    K = rbf_kernel(Xtr, gamma=0.05)
    with pytest.raises(ValueError, match="Precomputed matrix must be a square matrix. Input is a 100x30 matrix"):
        SVC(kernel="precomputed").fit(Xtr, ytr)
    with pytest.raises(TypeError, match="Sparse precomputed kernels are not supported"):
        SVC(kernel="precomputed").fit(sp.csr_matrix(K), ytr)
    m = SVC(kernel="precomputed", device="cpu").fit(K, ytr)
    with pytest.raises(ValueError, match="X has 30 features, but SVC is expecting 100 features as input. "
                                         r"\(kernel='precomputed': X holds the Gram values between the new"):
        m.predict(Xtr)
    bad = K.copy()
    bad[3, 4] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        SVC(kernel="precomputed").fit(bad, ytr)
    with pytest.raises(ValueError, match="precomputed"):
        save_libsvm_model(m, tmp_path / "m.model")
    with pytest.raises(AttributeError, match="linear kernel"):
        m.coef_
    with pytest.raises(ValueError, match="kernel"):
        DCSVC(kernel="precomputed").fit(K, ytr)
    with pytest.raises(ValueError, match="kernel"):
        BudgetSVC(kernel="precomputed").fit(K, ytr)


def _rbf(A, B):
    return rbf_kernel(A, B, gamma=0.03)


def _shared_prefix(A, B):
    """A string kernel: k(a, b) = 1 + the length of the common prefix (positive definite on strings)."""
    def prefix(a, b):
        n = 0
        while n < min(len(a), len(b)) and a[n] == b[n]:
            n += 1
        return 1.0 + n
    return np.array([[prefix(a, b) for b in B] for a in A])


@pytest.mark.parametrize("sparse_X", [False, True])
def test_callable_kernel_matches_sklearn_and_the_precomputed_model(sparse_X):
    """A callable as sklearn's: the same decisions as sklearn's SVC with it, and the model of its matrix
    given as precomputed; prediction calls it against the support vectors' rows only."""
    import pickle

    Xtr, ytr, Xte, _ = _split("digits", seed=6, n_train=250)
    A, B = (sp.csr_matrix(Xtr), sp.csr_matrix(Xte)) if sparse_X else (Xtr, Xte)
    ref = SkSVC(kernel=_rbf, C=2.0, tol=1e-5).fit(A, ytr)
    m = SVC(kernel=_rbf, C=2.0, tol=1e-5, device="cpu").fit(A, ytr)
    pre = SVC(kernel="precomputed", C=2.0, tol=1e-5, device="cpu").fit(_rbf(Xtr, Xtr), ytr)
    np.testing.assert_array_equal(m.support_, ref.support_)
    np.testing.assert_allclose(m.decision_function(B), ref.decision_function(B), rtol=0, atol=1e-4)
    np.testing.assert_allclose(m.decision_function(B), pre.decision_function(_rbf(Xte, Xtr)), rtol=0, atol=1e-12)
    assert m.support_vectors_.shape == (0, 0) and m._X_sv.shape == (len(m.support_), 64)
    assert m.shape_fit_ == ref.shape_fit_ and not hasattr(m, "n_features_in_")
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(m)).predict(B), m.predict(B))


def test_callable_kernel_on_strings():
    """X may be anything the callable takes (only indexed): strings with a string kernel."""
    words = ["apple", "apply", "apron", "zebra", "zero", "zest", "ape", "zen", "appetite", "zeal"]
    labels = np.array([0, 0, 0, 1, 1, 1, 0, 1, 0, 1])
    ref = SkSVC(kernel=_shared_prefix, C=1.0).fit(words, labels)
    m = SVC(kernel=_shared_prefix, C=1.0, device="cpu").fit(words, labels)
    new = ["apt", "zed", "apex", "zoo"]
    np.testing.assert_allclose(m.decision_function(new), ref.decision_function(new), rtol=0, atol=1e-6)
    np.testing.assert_array_equal(m.predict(new), [0, 1, 0, 1])
    assert m._X_sv == [words[i] for i in m.support_]


class _ArrayLike:
    """Data that only converts to an array (no indexing), as scikit-learn's estimator checks pass."""

    def __init__(self, data):
        self.data = data

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.data, dtype=dtype)


@pytest.mark.filterwarnings("ignore:Constructing a DIA matrix")  # (the test's own DIA input)
@pytest.mark.parametrize("kind", ["coo", "dia", "bsr", "array-like"])
def test_callable_kernel_keeps_rows_of_any_input_sklearn_takes(kind):
    """A callable's training rows from sparse formats without row indexing, or from an array-like that
    only converts to an array: sklearn's SVC takes them, and keeping the support rows raised TypeError
    ("'coo_matrix' object is not subscriptable")."""
    Xtr, ytr, Xte, _ = _split("breast_cancer", seed=4, n_train=120)
    A = _ArrayLike(Xtr) if kind == "array-like" else sp.csr_matrix(Xtr).asformat(kind)
    ref = SkSVC(kernel=_rbf, C=2.0, tol=1e-5).fit(A, ytr)
    m = SVC(kernel=_rbf, C=2.0, tol=1e-5, device="cpu").fit(A, ytr)
    np.testing.assert_array_equal(m.support_, ref.support_)
    np.testing.assert_allclose(m.decision_function(Xte), ref.decision_function(Xte), rtol=0, atol=1e-4)


def test_callable_kernel_of_the_wrong_shape_names_it(tmp_path):
    from gpusvm.libsvm_io import save_libsvm_model

    Xtr, ytr, _, _ = _split("breast_cancer", seed=7, n_train=80)
    with pytest.raises(ValueError, match=r"must return the Gram values of shape \(80, 80\) on the training data"):
        SVC(kernel=lambda A, B: A @ B[:5].T).fit(Xtr, ytr)
    with pytest.raises(ValueError, match="must return the Gram values"):
        SVC(kernel=lambda A, B: (A @ B.T).ravel()).fit(Xtr, ytr)
    calls = []

    def gram(A, B):
        calls.append(len(B))
        return A @ B.T if len(calls) == 1 else (A @ B.T)[:, :-1]

    m = SVC(kernel=gram, device="cpu").fit(Xtr, ytr)
    with pytest.raises(ValueError, match="between the new points and the support vectors"):
        m.predict(Xtr)
    with pytest.raises(ValueError, match="callable"):
        save_libsvm_model(m, tmp_path / "m.model")


def test_callable_kernel_returning_lists_or_nan():
    """Nested lists are taken (as sklearn); non-finite values get an error naming the callable, not X."""
    Xtr, ytr, Xte, _ = _split("breast_cancer", seed=8, n_train=120)
    ref = SVC(kernel="linear", device="cpu").fit(Xtr, ytr)
    m = SVC(kernel=lambda A, B: (A @ B.T).tolist(), device="cpu").fit(Xtr, ytr)
    np.testing.assert_allclose(m.decision_function(Xte), ref.decision_function(Xte), rtol=0, atol=1e-10)
    with pytest.raises(ValueError, match=r"kernel callable returned values that are not finite .* on the training"):
        SVC(kernel=lambda A, B: np.full((len(A), len(B)), np.nan)).fit(Xtr, ytr)
    calls = []

    def gram(A, B):
        calls.append(1)
        K = A @ B.T
        return K if len(calls) == 1 else K * np.inf

    fitted = SVC(kernel=gram, device="cpu").fit(Xtr, ytr)
    with pytest.raises(ValueError, match="not finite real numbers between the new points and the support vectors"):
        fitted.predict(Xte)


def test_refit_drops_the_state_of_an_earlier_fit():
    """A refit with a built-in gram forgets a callable's training rows, and any fit forgets the class
    order of a model read from a LIBSVM file (predict_proba used it: probabilities off, or garbage)."""
    Xtr, ytr, Xte, _ = _split("digits", seed=9, n_train=200)
    m = SVC(kernel=_rbf, device="cpu").fit(Xtr, ytr)
    assert hasattr(m, "_X_sv")
    m.set_params(kernel="rbf", gamma=0.03).fit(Xtr, ytr)
    assert not hasattr(m, "_X_sv")
    fresh = SVC(probability=True, random_state=0, device="cpu").fit(Xtr, ytr)
    m = SVC(probability=True, random_state=0, device="cpu")
    m._label_order = np.array([2, 0, 1])  # what load_libsvm_model sets for a file with labels "3 1 2"
    m.fit(Xtr, ytr)
    assert not hasattr(m, "_label_order")
    np.testing.assert_array_equal(m.predict_proba(Xte), fresh.predict_proba(Xte))


def test_gpu_precomputed_matches_the_cpu(gpu_backend):
    """The GPU's batched decomposition on a CuPy Gram matrix: the CPU's model, CuPy outputs."""
    import cupy as cp

    Xtr, ytr, Xte, _ = _split("digits", seed=5, n_train=300)
    K, Kt = rbf_kernel(Xtr, gamma=0.03), rbf_kernel(Xte, Xtr, gamma=0.03)
    kw = dict(kernel="precomputed", C=2.0, tol=1e-5, gram_dtype="float64")
    cpu = SVC(device="cpu", **kw).fit(K, ytr)
    gpu = SVC(device="gpu", **kw).fit(cp.asarray(K), cp.asarray(ytr))
    np.testing.assert_allclose(gpu.objective_, cpu.objective_, rtol=1e-4)
    dec = gpu.decision_function(cp.asarray(Kt))
    assert isinstance(dec, cp.ndarray)
    np.testing.assert_allclose(cp.asnumpy(dec), cpu.decision_function(Kt), rtol=0, atol=1e-3)
    assert isinstance(gpu.predict(Kt), np.ndarray)
    assert np.mean(gpu.predict(Kt) == cpu.predict(Kt)) >= 0.99
    # a callable returning NumPy values, fitted on the GPU: the matrix is moved there
    call = SVC(kernel=_rbf, device="gpu", C=2.0, tol=1e-5, gram_dtype="float64").fit(Xtr, ytr)
    np.testing.assert_allclose(call.objective_, gpu.objective_, rtol=1e-10)
    np.testing.assert_allclose(call.decision_function(Xte), cp.asnumpy(dec), rtol=0, atol=1e-9)
    # non-finite CuPy values from the callable are refused, as NumPy ones on the CPU
    for bad in (cp.nan, cp.inf):
        with pytest.raises(ValueError, match="kernel callable returned values that are not finite"):
            SVC(kernel=lambda A, B, v=bad: cp.full((len(A), len(B)), v), device="gpu").fit(Xtr, ytr)


def test_asymmetric_gram_matrix_is_refused():
    """A precomputed (or callable) Gram matrix far from symmetric made every solver run on for ever with
    max_iter=-1 (scikit-learn's too); it is refused with a message. Rounding-level asymmetry (a float32
    X @ X.T) still fits, to the model of the symmetrized matrix."""
    rng = np.random.RandomState(0)
    X = rng.randn(30, 3)
    y = (X[:, 0] > 0).astype(int)
    K = X @ X.T + np.triu(np.ones((30, 30)))
    with pytest.raises(ValueError, match=r"The precomputed Gram matrix is not symmetric: max \|K - K.T\| = 1 "):
        SVC(kernel="precomputed", device="cpu").fit(K, y)
    with pytest.raises(ValueError, match="The Gram matrix of the kernel callable is not symmetric"):
        SVC(kernel=lambda A, B: A @ B.T + (A[:, :1] > B[:, :1].T), device="cpu").fit(X, y)
    # asymmetry of 1e-6 relative, as rounding leaves (BLAS often returns an exactly symmetric X @ X.T)
    X2 = rng.randn(200, 50)
    y2 = (X2[:, 0] > 0).astype(int)
    K2 = X2 @ X2.T
    noisy = K2 + 1e-6 * np.abs(K2).max() * np.triu(rng.rand(200, 200), 1)
    sym = (noisy + noisy.T) / 2
    got = SVC(kernel="precomputed", device="cpu").fit(noisy, y2).decision_function(sym)
    ref = SVC(kernel="precomputed", device="cpu").fit(sym, y2).decision_function(sym)
    np.testing.assert_allclose(got, ref, rtol=1e-3, atol=1e-3)


def test_gram_matrix_beyond_float32_fits_and_overflow_advice_fits_a_gram():
    """A precomputed matrix beyond float32's range (1e40) was cast to float32 rows of inf (the default
    gram_dtype) and the fit ended in "not finite"; it is now stored as float64 rows. Values whose squares
    overflow are refused with advice for a Gram matrix (rescale it with C), not "scale the features"."""
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)[:120]
    y = y[:120]
    K = X @ X.T
    ref = SVC(kernel="precomputed", tol=1e-8, device="cpu").fit(K, y).decision_function(K)
    for s in (1e40, 1e100):  # (solved to 1e-8: the scaled problem takes another path to tol)
        got = SVC(kernel="precomputed", C=1 / s, tol=1e-8, device="cpu").fit(K * s, y).decision_function(K * s)
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match=r"scale the Gram matrix first: K / s with C \* s gives the same"):
        SVC(kernel="precomputed", device="cpu").fit(K * 1e200, y)


def test_max_abs_of_a_precomputed_matrix_makes_no_copy_of_it():
    """GramSpec.matrix_max_abs (asked once per fit, for the symmetry check and the float32 / float64 choice)
    formed abs(K), an n x n temporary: SVC(kernel="precomputed").fit on a 10,000 x 10,000 float64 matrix
    (763 MB) peaked at 764 MB traced beyond K, 65 MB without it. It is max(max K, -min K) now."""
    from conftest import traced_peak

    from gpusvm import GramSpec

    rng = np.random.default_rng(3)
    K = rng.normal(size=(1500, 1500))  # 18 MB
    K[7, 11] = -40.0  # the largest magnitude is negative
    spec = GramSpec("precomputed", matrix=K)
    value, peak = traced_peak(lambda: spec.matrix_max_abs)
    assert value == 40.0
    assert peak < 0.05 * K.nbytes, f"peak {peak / K.nbytes:.2f}x the matrix"
    assert GramSpec("precomputed", matrix=np.zeros((0, 0))).matrix_max_abs == 0.0
    K[3, 3] = np.nan
    assert np.isnan(GramSpec("precomputed", matrix=K).matrix_max_abs)


def test_gram_predict_does_not_copy_the_float64_values_twice():
    """A precomputed (or callable) gram's prediction took the support vectors' columns, a copy, and then
    ``astype(float64)`` copied them again: 2 n_test x n_SV float64 arrays where one is needed."""
    from conftest import traced_peak

    rng = np.random.default_rng(0)
    X = rng.normal(size=(1500, 5))
    y = (X[:, 0] + 0.8 * rng.normal(size=1500) > 0).astype(int)
    Xt = rng.normal(size=(3000, 5))
    m = SVC(kernel="precomputed", C=1.0).fit(rbf_kernel(X, X, gamma=0.2), y)
    Kt = rbf_kernel(Xt, X, gamma=0.2)
    cols_bytes = Kt.shape[0] * m.support_.size * 8
    assert cols_bytes > 8e6  # (the test's premise: the columns dominate what prediction allocates)
    dec, peak = traced_peak(lambda: m.decision_function(Kt))
    np.testing.assert_array_equal(dec, Kt[:, m.support_] @ m.dual_coef_[0] + m.intercept_[0])
    assert peak < 1.5 * cols_bytes, f"peak {peak / cols_bytes:.2f}x the columns"

    c = SVC(kernel=lambda A, B: rbf_kernel(A, B, gamma=0.2), C=1.0).fit(X, y)
    _, peak = traced_peak(lambda: c.decision_function(Xt))
    assert peak < 1.5 * cols_bytes, f"callable: peak {peak / cols_bytes:.2f}x the support vectors' gram"

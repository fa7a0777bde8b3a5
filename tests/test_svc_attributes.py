"""SVC's fitted attributes against scikit-learn's (types, shapes, values) for dense and sparse fits, and
the shared output-library helper of the estimators."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.svm import SVC as SkSVC

from gpusvm import SVC
from gpusvm._validation import to_input_library, to_numpy

from conftest import load_subset

KW = dict(C=4.0, gamma=0.05, tol=1e-5)


def _digits_sparse(n=500, n_classes=4):
    """Digits scaled to [0, 1]: about half the pixels are 0, so CSR is the natural format."""
    X, y = load_digits(return_X_y=True)
    keep = y < n_classes
    X, y = X[keep][:n] / 16.0, y[keep][:n]
    return sp.csr_matrix(X), y


def _check_like_sklearn(m, ref, X):
    """Same types, shapes, sparsity layout and (up to solver tolerance) values as sklearn's model."""
    for name in ("support_vectors_", "dual_coef_"):
        a, b = getattr(m, name), getattr(ref, name)
        assert type(a) is type(b), (name, type(a), type(b))
        assert a.shape == b.shape, name
    for name in ("support_", "intercept_", "n_support_"):
        assert isinstance(getattr(m, name), np.ndarray), name
    np.testing.assert_array_equal(m.support_, ref.support_)
    np.testing.assert_array_equal(m.n_support_, ref.n_support_)
    if sp.issparse(ref.support_vectors_):
        # sklearn's layouts: the SV rows as stored in X; dual_coef_ stores every entry, zeros included
        np.testing.assert_array_equal(m.support_vectors_.indptr, ref.support_vectors_.indptr)
        np.testing.assert_array_equal(m.support_vectors_.indices, ref.support_vectors_.indices)
        np.testing.assert_array_equal(m.support_vectors_.data, ref.support_vectors_.data)
        assert m.dual_coef_.nnz == ref.dual_coef_.nnz == np.prod(ref.dual_coef_.shape)
        np.testing.assert_array_equal(m.dual_coef_.indptr, ref.dual_coef_.indptr)
        np.testing.assert_array_equal(m.dual_coef_.indices, ref.dual_coef_.indices)
        dual, dual_ref = m.dual_coef_.toarray(), ref.dual_coef_.toarray()
    else:
        np.testing.assert_array_equal(m.support_vectors_, ref.support_vectors_)
        dual, dual_ref = m.dual_coef_, ref.dual_coef_
    C = KW["C"]
    np.testing.assert_allclose(dual, dual_ref, rtol=0, atol=1e-4 * C)
    np.testing.assert_allclose(m.intercept_, ref.intercept_, rtol=0, atol=1e-3)
    np.testing.assert_allclose(m.decision_function(X), ref.decision_function(X), rtol=0, atol=1e-3)


@pytest.mark.parametrize("n_classes", [2, 4])
def test_sparse_fit_attributes_match_sklearn(n_classes):
    X, y = _digits_sparse(n_classes=n_classes)
    m = SVC(device="cpu", **KW).fit(X, y)
    ref = SkSVC(**KW).fit(X, y)
    assert isinstance(m.support_vectors_, sp.csr_matrix) and isinstance(m.dual_coef_, sp.csr_matrix)
    _check_like_sklearn(m, ref, X)


def test_sparse_fit_attributes_match_sklearn_a9a(data_dir):
    """Truly sparse binary features (a9a: 14 of 123 non-zero per row)."""
    X, y = load_subset(data_dir, "a9a.xz", 600, n_features=123)
    m = SVC(device="cpu", **KW).fit(X, y)
    ref = SkSVC(**KW).fit(X, y)
    _check_like_sklearn(m, ref, X)


def test_dense_fit_attributes_stay_dense():
    X, y = _digits_sparse()
    Xd = X.toarray()
    m = SVC(device="cpu", **KW).fit(Xd, y)
    ref = SkSVC(**KW).fit(Xd, y)
    assert isinstance(m.support_vectors_, np.ndarray) and isinstance(m.dual_coef_, np.ndarray)
    _check_like_sklearn(m, ref, Xd)


def test_csr_array_input_gives_csr_matrix_attributes():
    """sklearn returns csr_matrix attributes for a csr_array input too."""
    X, y = _digits_sparse(n_classes=2)
    m = SVC(device="cpu", **KW).fit(sp.csr_array(X), y)
    assert type(m.support_vectors_) is sp.csr_matrix and type(m.dual_coef_) is sp.csr_matrix


def test_predict_across_input_kinds():
    """A sparse-fit model predicts dense X (as sklearn) and a dense-fit model predicts sparse X (sklearn
    raises there; we accept it: the gram is the same either way)."""
    X, y = _digits_sparse()
    Xd = X.toarray()
    ms = SVC(device="cpu", **KW).fit(X, y)
    md = SVC(device="cpu", **KW).fit(Xd, y)
    ref = SkSVC(**KW).fit(X, y)
    dref = ref.decision_function(Xd)
    for m in (ms, md):
        for Xin in (X, Xd):
            np.testing.assert_allclose(m.decision_function(Xin), dref, rtol=0, atol=1e-3)
            out = m.predict(Xin)
            assert isinstance(out, np.ndarray)
            np.testing.assert_array_equal(out, ref.predict(Xd))
    with pytest.raises(ValueError, match="trained on dense data"):
        SkSVC(**KW).fit(Xd, y).predict(X)  # sklearn's behaviour, which we document as different


def test_pickled_sparse_model_round_trips():
    X, y = _digits_sparse()
    m = SVC(device="cpu", **KW).fit(X, y)
    m2 = pickle.loads(pickle.dumps(m))
    for name in ("support_vectors_", "dual_coef_"):
        a, b = getattr(m, name), getattr(m2, name)
        assert type(b) is sp.csr_matrix and b.shape == a.shape and b.nnz == a.nnz
        np.testing.assert_array_equal(b.toarray(), a.toarray())
    np.testing.assert_array_equal(m2.predict(X), m.predict(X))
    np.testing.assert_array_equal(m2.decision_function(X), m.decision_function(X))


def test_to_device_cpu_keeps_sparse_attributes():
    X, y = _digits_sparse(n_classes=2)
    m = SVC(device="cpu", **KW).fit(X, y)
    before = m.decision_function(X)
    m.to_device("cpu")
    assert isinstance(m.support_vectors_, sp.csr_matrix) and isinstance(m.dual_coef_, sp.csr_matrix)
    np.testing.assert_array_equal(m.decision_function(X), before)


def test_gpu_sparse_fit_attributes(gpu_backend):
    """cupyx CSR in: cupyx CSR attributes, equal to the CPU model; predictions in the input's library."""
    import cupy as cp
    import cupyx.scipy.sparse as csp

    X, y = _digits_sparse()
    cpu = SVC(device="cpu", **KW).fit(X, y)
    Xg = csp.csr_matrix(X)
    m = SVC(device="gpu", **KW).fit(Xg, cp.asarray(y))
    assert isinstance(m.support_vectors_, csp.csr_matrix) and isinstance(m.dual_coef_, csp.csr_matrix)
    assert m.support_vectors_.shape == cpu.support_vectors_.shape
    assert m.dual_coef_.shape == cpu.dual_coef_.shape and m.dual_coef_.nnz == cpu.dual_coef_.nnz
    np.testing.assert_array_equal(cp.asnumpy(m.support_), cpu.support_)
    np.testing.assert_allclose(m.dual_coef_.get().toarray(), cpu.dual_coef_.toarray(), rtol=0, atol=1e-4 * KW["C"])
    out = m.decision_function(Xg)
    assert isinstance(out, cp.ndarray)
    np.testing.assert_allclose(cp.asnumpy(out), cpu.decision_function(X), rtol=0, atol=1e-3)
    assert isinstance(m.predict(X), np.ndarray) and isinstance(m.predict(Xg.toarray()), cp.ndarray)
    m2 = pickle.loads(pickle.dumps(m))
    np.testing.assert_array_equal(cp.asnumpy(m2.predict(Xg)), cp.asnumpy(m.predict(Xg)))
    m.to_device("cpu")
    assert isinstance(m.support_vectors_, sp.csr_matrix) and isinstance(m.dual_coef_, sp.csr_matrix)
    np.testing.assert_allclose(m.decision_function(X), cp.asnumpy(out), rtol=0, atol=1e-9)
    m.to_device("gpu")
    assert isinstance(m.support_vectors_, csp.csr_matrix) and isinstance(m.dual_coef_, csp.csr_matrix)


# ---- coef_ for the linear gram (SVC and DCSVC, as sklearn's SVC) -----------------------------------

def _linear_problem(n_classes, seed):
    X, y = load_digits(return_X_y=True)
    keep = y < n_classes
    rng = np.random.default_rng(seed)
    rows = rng.permutation(np.flatnonzero(keep))[:300]
    return X[rows] / 16.0, y[rows]


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("name", ["SVC", "DCSVC"])
def test_linear_coef_matches_sklearn_and_the_decision_function(name, n_classes, sparse):
    """coef_ as sklearn's SVC(kernel="linear"): the same shape, type (CSR after a sparse fit) and values
    (up to the solver tolerance), read-only, and X @ coef_.T + intercept_ is the ovo decision function."""
    import gpusvm

    X, y = _linear_problem(n_classes, seed=n_classes)
    Xf = sp.csr_matrix(X) if sparse else X
    kw = dict(kernel="linear", C=0.5, tol=1e-6)
    ref = SkSVC(decision_function_shape="ovo", **kw).fit(Xf, y)
    extra = dict(n_levels=2, n_clusters_per_level=2, random_state=0) if name == "DCSVC" else {}
    m = getattr(gpusvm, name)(decision_function_shape="ovo", **kw, **extra).fit(Xf, y)
    coef = m.coef_
    assert type(coef) is type(ref.coef_) and coef.shape == ref.coef_.shape == (n_classes * (n_classes - 1) // 2, 64)
    dense = coef.toarray() if sparse else coef
    ref_dense = ref.coef_.toarray() if sparse else ref.coef_
    np.testing.assert_allclose(dense, ref_dense, rtol=0, atol=1e-3 * np.abs(ref_dense).max())
    dec = m.decision_function(X)
    lin = X @ dense.T + m.intercept_
    np.testing.assert_allclose(lin[:, 0] if n_classes == 2 else lin, dec, rtol=0, atol=1e-9 * (1 + np.abs(dec).max()))
    with pytest.raises(ValueError, match="read-only"):
        (coef.data if sparse else coef)[0] = 1.0


@pytest.mark.parametrize("name", ["SVC", "DCSVC"])
def test_coef_is_absent_unless_the_gram_is_linear_and_fitted(name):
    import gpusvm
    from sklearn.exceptions import NotFittedError

    X, y = _linear_problem(2, seed=0)
    assert not hasattr(getattr(gpusvm, name)(kernel="linear"), "coef_")  # NotFittedError is an AttributeError
    with pytest.raises(NotFittedError):
        getattr(gpusvm, name)(kernel="linear").coef_
    m = getattr(gpusvm, name)(kernel="rbf").fit(X, y)
    with pytest.raises(AttributeError, match="only available when using a linear kernel"):
        m.coef_


def test_dcsvc_stopped_early_has_no_top_level_coef():
    from gpusvm import DCSVC

    X, y = _linear_problem(2, seed=1)
    m = DCSVC(kernel="linear", n_levels=2, n_clusters_per_level=2, early_stop_level=1, random_state=0).fit(X, y)
    with pytest.raises(AttributeError, match="stopped at level 1"):
        m.coef_


def test_gpu_linear_coef_matches_the_cpu(gpu_backend):
    """coef_ after a GPU fit: a CuPy array (cupyx CSR after a sparse fit) equal to the CPU model's."""
    import cupy as cp
    import cupyx.scipy.sparse as csp

    X, y = _linear_problem(3, seed=2)
    kw = dict(kernel="linear", C=0.5, tol=1e-6, gram_dtype="float64")
    cpu = SVC(device="cpu", **kw).fit(X, y).coef_
    for Xg, kind in ((cp.asarray(X), cp.ndarray), (csp.csr_matrix(sp.csr_matrix(X)), csp.csr_matrix)):
        coef = SVC(device="gpu", **kw).fit(Xg, cp.asarray(y)).coef_
        assert isinstance(coef, kind)
        got = coef.get().toarray() if kind is csp.csr_matrix else cp.asnumpy(coef)
        np.testing.assert_allclose(got, cpu, rtol=0, atol=1e-3 * np.abs(cpu).max())


# ---- the output helper shared by SVC, LinearSVC and BudgetSVC ---------------------------------------

def test_to_numpy_and_to_input_library_on_host():
    x = np.arange(3.0)
    assert to_input_library(x, "numpy") is not None and isinstance(to_input_library(x, "numpy"), np.ndarray)
    assert isinstance(to_numpy([1, 2]), np.ndarray)
    # labels CuPy cannot hold stay NumPy even for CuPy input (no CuPy import needed to decide)
    labels = np.array(["a", "b"], dtype=object)
    assert to_input_library(labels, "cupy") is labels
    assert to_input_library(np.array(["a", "b"]), "cupy").dtype.kind == "U"


def test_to_input_library_gpu(gpu_backend):
    import cupy as cp

    x = np.arange(4.0)
    g = to_input_library(x, "cupy")
    assert isinstance(g, cp.ndarray) and to_input_library(g, "cupy") is g
    back = to_input_library(g, "numpy")
    assert isinstance(back, np.ndarray)
    np.testing.assert_array_equal(back, x)
    assert isinstance(to_numpy(g), np.ndarray)


def test_string_labels_come_back_as_numpy_from_every_estimator():
    from gpusvm import BudgetSVC, LinearSVC

    X, y = _digits_sparse(n_classes=2)
    labels = np.where(y == 0, "zero", "one")
    for est in (SVC(device="cpu", **KW), LinearSVC(device="cpu"), BudgetSVC(device="cpu", random_state=0)):
        pred = est.fit(X, labels).predict(X)
        assert isinstance(pred, np.ndarray) and set(pred.tolist()) <= {"zero", "one"}, type(est).__name__


@pytest.mark.parametrize("module, name, hint", [
    ("gpusvm.svc", "SVC", "lower cache_size"),
    ("gpusvm.linear", "LinearSVC", "pass float32 X"),
    ("gpusvm.budget", "BudgetSVC", "lower the budget"),
    ("gpusvm.dcsvm", "DCSVC", "lower sample_size"),
])
def test_fit_turns_device_oom_into_a_clear_memory_error(monkeypatch, module, name, hint):
    """A CuPy out-of-memory error inside fit surfaces as a MemoryError that names the fit and the fix."""
    import importlib
    import inspect

    mod = importlib.import_module(module)
    oom = type("OutOfMemoryError", (Exception,), {"__module__": "cupy.cuda.memory"})

    def boom(*args, **kwargs):
        raise oom("Out of memory allocating 4,000,000,000 bytes")

    monkeypatch.setattr(mod, "get_backend", boom)
    X = np.array([[0.0, 0.0], [1.0, 1.0], [0.0, 1.0], [1.0, 0.0]])
    with pytest.raises(MemoryError, match=rf"{name}\.fit ran out of GPU memory.*{hint}.*device='cpu'"):
        getattr(mod, name)().fit(X, [0, 1, 0, 1])
    # the decorator keeps fit's signature (sklearn's has_fit_parameter reads it)
    params = list(inspect.signature(getattr(mod, name).fit).parameters)
    assert params[:4] == ["self", "X", "y", "sample_weight"]  # every estimator takes sample weights


@pytest.mark.parametrize("name", ["SVC", "LinearSVC", "BudgetSVC", "DCSVC"])
def test_all_zero_weights_raise_the_same_error_in_every_estimator(name):
    import gpusvm

    X = np.array([[0.0, 0.0], [1.0, 1.0], [0.0, 1.0], [1.0, 0.0]])
    est = getattr(gpusvm, name)(class_weight={0: 0.0}, device="cpu")
    with pytest.raises(ValueError, match=rf"all samples have zero weight\. .* of {name} are all zero"):
        est.fit(X, [0, 1, 0, 1], sample_weight=[1.0, 0.0, 1.0, 0.0])


def test_support_vectors_keep_the_float_type_of_x():
    """support_vectors_ are the rows of X as given (float32 stays float32, integers become float64), the
    coefficients and decision values float64 (as the SVC docstring says)."""
    X, y = load_breast_cancer(return_X_y=True)
    X = X[:150] / X[:150].max(axis=0)
    y = y[:150]
    m32 = SVC(device="cpu").fit(X.astype(np.float32), y)
    assert m32.support_vectors_.dtype == np.float32 and m32.dual_coef_.dtype == np.float64
    assert m32.decision_function(X).dtype == np.float64
    mint = SVC(device="cpu").fit((X * 100).astype(np.int64), y)
    assert mint.support_vectors_.dtype == np.float64


def _documented_attributes(cls):
    """The names in the Attributes section of ``cls``'s numpydoc docstring."""
    import inspect

    lines = inspect.cleandoc(cls.__doc__).splitlines()
    start = lines.index("Attributes") + 2
    names = set()
    for i in range(start, len(lines)):
        if i + 1 < len(lines) and lines[i + 1].startswith("---"):  # the next section
            break
        if lines[i] and not lines[i].startswith(" "):
            names.update(n.strip() for n in lines[i].split(" : ")[0].split(","))
    return names


@pytest.mark.parametrize("name, kw", [
    ("SVC", dict(kernel="linear")),
    ("LinearSVC", {}),
    ("BudgetSVC", dict(random_state=0)),
    ("DCSVC", dict(kernel="linear", random_state=0)),
    ("DCSVC", dict(n_levels=1, early_stop_level=1, min_cluster_size=0, random_state=0)),
])
def test_every_fitted_attribute_is_documented(name, kw):
    """The Attributes section names every public attribute that fit sets, and fit sets each one it names
    (except those of another configuration: a DCSVC stopped early has no coef_, one solved to the top no
    early_model_)."""
    import gpusvm

    pd = pytest.importorskip("pandas")
    X, y = load_digits(return_X_y=True)
    keep = y < 3
    X = pd.DataFrame(X[keep][:150] / 16.0, columns=[f"px{j}" for j in range(64)])
    m = getattr(gpusvm, name)(device="cpu", **kw).fit(X, y[keep][:150])
    documented = _documented_attributes(type(m))
    fitted = {k for k in vars(m) if k.endswith("_") and not k.startswith("_")}
    assert fitted - documented == set(), f"{name} sets undocumented attributes"
    other = {"coef_"} if kw.get("early_stop_level") else {"early_model_"} if name == "DCSVC" else set()
    assert {k for k in documented - other if not hasattr(m, k)} == set(), f"{name} lacks documented attributes"

"""The class pairs' coefficients (``_pair_coef``) stored as a CSR matrix for many classes
(gpusvm._ovo.pair_coef_is_sparse): the same decisions, predictions, probabilities, coef_, saved files and
device moves as the dense layout of the same fitted model, up to rounding."""

from __future__ import annotations

import copy
import re

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_iris, make_blobs

from gpusvm import DCSVC, SVC
from gpusvm import _ovo
from gpusvm import svc as svc_module
from gpusvm._backend import get_backend
from gpusvm._dedupe import merge_equal_rows
from gpusvm.libsvm_io import _permute_classes, load_libsvm_model, save_libsvm_model
from gpusvm.svc import PredictCache


def _close(a, b):
    """Equal up to rounding: 1e-12 of the values' magnitude."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * max(1.0, float(np.max(np.abs(b), initial=0.0))))


def _blobs(k=6, per=25, seed=0):
    return make_blobs(n_samples=k * per, centers=k, n_features=5, random_state=seed, cluster_std=2.0)


def _sparse_twin(m):
    """A copy of the fitted model ``m`` whose pair coefficients are the CSR matrix of its dense ones."""
    t = copy.deepcopy(m)
    be = m._model_backend()
    t._pair_coef = be.asarray(sp.csr_matrix(np.asarray(be.to_host(m._pair_coef))))
    t._predict_cache = PredictCache()
    assert be.issparse(t._pair_coef) and not be.issparse(m._pair_coef)
    return t


def _force_sparse(monkeypatch):
    monkeypatch.setattr(_ovo, "PAIR_COEF_SPARSE_MIN_BYTES", 0)
    monkeypatch.setattr(_ovo, "PAIR_COEF_SPARSE_MAX_DENSITY", 1.0)


def _text(path):
    """A model file's text with -0.0 written as 0.0: a pair whose classes the file lists in the other order is
    negated, and the dense layout's zeros then print as -0.0 (the CSR matrix stores no zeros to negate)."""
    return re.sub(r"(^|\s)-0\.0(?=\s)", r"\g<1>0.0", path.read_text(), flags=re.M)


def _compare_outputs(dense, sparse, X):
    for shape in ("ovr", "ovo"):
        dense.decision_function_shape = sparse.decision_function_shape = shape
        _close(sparse.decision_function(X), dense.decision_function(X))
    dense.decision_function_shape = sparse.decision_function_shape = "ovr"
    assert np.array_equal(sparse.predict(X), dense.predict(X))


def test_rule():
    assert not _ovo.pair_coef_is_sparse(45, 700, 45 * 700 // 5)  # digits-like: small
    assert not _ovo.pair_coef_is_sparse(435, 30_000, 435 * 30_000 // 15)  # 30 classes: density 0.067
    assert _ovo.pair_coef_is_sparse(19_900, 3_674, 19_900 * 3_674 // 100)
    assert not _ovo.pair_coef_is_sparse(19_900, 3_674, 19_900 * 3_674 // 10)  # dense enough
    assert not _ovo.pair_coef_is_sparse(4_950, 100, 4_950)  # 4 MB at most: dense
    assert not _ovo.pair_coef_is_sparse(0, 0, 0)


def test_many_classes_take_the_sparse_layout_by_default():
    X, y = make_blobs(n_samples=4000, centers=200, n_features=10, random_state=0, cluster_std=2.0)
    m = SVC().fit(X, y)
    assert sp.isspmatrix_csr(m._pair_coef) and m._pair_coef.has_sorted_indices
    assert m._pair_coef.shape == (200 * 199 // 2, m.support_.shape[0])
    assert m._pair_coef.nnz < 0.05 * np.prod(m._pair_coef.shape)
    assert np.all(m._pair_coef.data != 0)
    # the dense layout of the same model (as a fit made it before) decides the same
    dense = copy.deepcopy(m)
    dense._pair_coef = m._pair_coef.toarray()
    dense._predict_cache = PredictCache()
    _compare_outputs(dense, m, X[::10])
    # a few classes stay dense
    assert isinstance(SVC().fit(*_blobs()).__dict__["_pair_coef"], np.ndarray)


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_forced_sparse_fit_is_the_dense_fit(monkeypatch, kernel):
    X, y = _blobs()
    dense = SVC(kernel=kernel).fit(X, y)
    _force_sparse(monkeypatch)
    sparse = SVC(kernel=kernel).fit(X, y)
    assert sp.isspmatrix_csr(sparse._pair_coef)
    assert np.array_equal(sparse._pair_coef.toarray(), dense._pair_coef)
    for attr in ("support_", "dual_coef_", "intercept_", "_pair_b"):
        assert np.array_equal(getattr(sparse, attr), getattr(dense, attr))
    _compare_outputs(dense, sparse, X)


def test_decisions_predictions_probabilities():
    X, y = _blobs(k=7)
    m = SVC(probability=True, random_state=0).fit(X, y)
    t = _sparse_twin(m)
    _compare_outputs(m, t, X)
    _close(t.predict_proba(X), m.predict_proba(X))
    m.break_ties = t.break_ties = True
    assert np.array_equal(t.predict(X), m.predict(X))


@pytest.mark.parametrize("csr", [False, True])
def test_coef_of_the_linear_kernel(csr):
    X, y = _blobs(k=5)
    if csr:
        X = sp.csr_matrix(np.where(X > 0, X, 0.0))
    m = SVC(kernel="linear").fit(X, y)
    t = _sparse_twin(m)
    a, b = t.coef_, m.coef_
    assert sp.issparse(a) == csr and type(a) is type(b)
    if csr:
        assert np.all(a.data != 0)
        a, b = a.toarray(), b.toarray()
    else:
        assert not a.flags.writeable
    _close(a, b)
    _compare_outputs(m, t, X)


def test_precomputed_and_callable_kernels():
    X, y = _blobs(k=5)
    K = X @ X.T
    m = SVC(kernel="precomputed").fit(K, y)
    _compare_outputs(m, _sparse_twin(m), K[:40])
    _compare_outputs(m, _sparse_twin(m), sp.csr_matrix(K[:40]))

    def kern(A, B):
        return np.asarray(A) @ np.asarray(B).T

    m = SVC(kernel=kern).fit(X, y)
    _compare_outputs(m, _sparse_twin(m), X[:40])


def test_merged_support_vectors(monkeypatch):
    """Equal support vectors merged before the Gram product (copies of points: both are support vectors)."""
    X, y = _blobs(k=6, per=15)
    X, y = np.vstack([X, X[:45]]), np.concatenate([y, y[:45]])
    m = SVC().fit(X, y)
    cpu = get_backend("cpu")
    merged_d = merge_equal_rows(cpu, m.support_vectors_, m._pair_coef)
    merged_s = merge_equal_rows(cpu, m.support_vectors_, sp.csr_matrix(m._pair_coef))
    assert merged_d is not None
    assert np.array_equal(merged_s[0], merged_d[0]) and sp.isspmatrix_csr(merged_s[1])
    _close(merged_s[1].toarray(), merged_d[1])
    monkeypatch.setattr(svc_module, "MERGE_SV_MIN_ROWS", 1)
    t = _sparse_twin(m)
    _compare_outputs(m, t, X)
    assert t._predict_cache.operands.merged(cpu) is not None


def test_libsvm_file_round_trip(tmp_path, monkeypatch):
    X, y = _blobs(k=6)
    m = SVC(probability=True, random_state=0).fit(X, y)
    t = _sparse_twin(m)
    save_libsvm_model(m, tmp_path / "dense.model")
    save_libsvm_model(t, tmp_path / "sparse.model")
    assert (tmp_path / "dense.model").read_text() == (tmp_path / "sparse.model").read_text()
    loaded_dense = load_libsvm_model(tmp_path / "dense.model")
    assert isinstance(loaded_dense._pair_coef, np.ndarray)
    _force_sparse(monkeypatch)  # a many-class file: read with the fit's rule
    loaded = load_libsvm_model(tmp_path / "sparse.model")
    assert sp.isspmatrix_csr(loaded._pair_coef)
    assert np.array_equal(loaded._pair_coef.toarray(), loaded_dense._pair_coef)
    assert np.array_equal(loaded.dual_coef_, loaded_dense.dual_coef_)
    _compare_outputs(loaded_dense, loaded, X)
    _close(loaded.predict_proba(X), loaded_dense.predict_proba(X))
    save_libsvm_model(loaded, tmp_path / "again.model")
    assert (tmp_path / "again.model").read_text() == (tmp_path / "dense.model").read_text()


def test_libsvm_label_order(tmp_path, monkeypatch):
    """A file whose labels are not sorted (LIBSVM's order of first appearance): the classes' permutation of a
    CSR model's pairs is the dense one's, read and written."""
    X, y = load_iris(return_X_y=True)
    fit = SVC().fit(X, y)
    pair_coef, n_support = fit._pair_coef, fit.n_support_
    pair_b, prob = np.array([0.1, -0.2, 0.3]), (np.ones(3), np.array([1.0, -2.0, 3.0]))
    for perm in ([2, 0, 1], [1, 2, 0], [2, 1, 0]):
        d = _permute_classes(pair_coef, pair_b, prob, n_support, np.array(perm))
        s = _permute_classes(sp.csr_matrix(pair_coef), pair_b, prob, n_support, np.array(perm))
        assert sp.isspmatrix_csr(s[0]) and np.array_equal(s[0].toarray(), d[0])
        for a, b in zip(s[1:], d[1:]):
            assert all(np.array_equal(u, v) for u, v in zip(a, b)) if isinstance(a, tuple) else np.array_equal(a, b)
    m = SVC().fit(X, np.array([3, 5, 7])[y])
    m._label_order = np.array([2, 0, 1])  # as a model read from a file listing "label 7 3 5"
    path = tmp_path / "iris.model"
    save_libsvm_model(m, path)
    save_libsvm_model(_sparse_twin(m), tmp_path / "twin.model")
    assert "label 7 3 5" in path.read_text() and _text(tmp_path / "twin.model") == _text(path)
    dense = load_libsvm_model(path)
    _force_sparse(monkeypatch)
    sparse = load_libsvm_model(path)
    assert sp.isspmatrix_csr(sparse._pair_coef) and np.array_equal(sparse._label_order, [2, 0, 1])
    assert np.array_equal(sparse._pair_coef.toarray(), dense._pair_coef)
    _compare_outputs(dense, sparse, X)
    save_libsvm_model(sparse, tmp_path / "s.model")
    assert _text(tmp_path / "s.model") == _text(path)


def test_to_device_cpu_keeps_the_csr_matrix():
    X, y = _blobs(k=5)
    m = SVC().fit(X, y)
    t = _sparse_twin(m)
    expected = t.decision_function(X)
    t.to_device("cpu")
    assert sp.isspmatrix_csr(t._pair_coef)
    assert np.array_equal(t.decision_function(X), expected)
    _compare_outputs(m, t, X)


def test_dcsvc(monkeypatch):
    X, y = _blobs(k=5, per=40)
    m = DCSVC(random_state=0).fit(X, y)
    _compare_outputs(m, _sparse_twin(m), X)
    lin = DCSVC(kernel="linear", random_state=0).fit(X, y)
    t = _sparse_twin(lin)
    _close(t.coef_, lin.coef_)
    t.to_device("cpu")
    _compare_outputs(lin, t, X)
    _force_sparse(monkeypatch)
    s = DCSVC(random_state=0).fit(X, y)
    assert sp.isspmatrix_csr(s._pair_coef) and np.array_equal(s._pair_coef.toarray(), m._pair_coef)


def test_gpu(gpu_backend, monkeypatch):
    """On the GPU: a cupyx CSR matrix, with the dense layout's outputs; moved to the CPU (SciPy CSR) and back."""
    import cupy as cp
    import cupyx.scipy.sparse as csp

    X, y = _blobs(k=6)
    m = SVC(device="gpu", probability=True, random_state=0).fit(X, y)
    t = _sparse_twin(m)
    assert csp.isspmatrix_csr(t._pair_coef)

    def compare(dense, sparse, Xq):
        for shape in ("ovr", "ovo"):
            dense.decision_function_shape = sparse.decision_function_shape = shape
            _close(cp.asnumpy(sparse.decision_function(Xq)), cp.asnumpy(dense.decision_function(Xq)))
        dense.decision_function_shape = sparse.decision_function_shape = "ovr"
        assert np.array_equal(cp.asnumpy(sparse.predict(Xq)), cp.asnumpy(dense.predict(Xq)))

    compare(m, t, cp.asarray(X))
    _close(cp.asnumpy(t.predict_proba(cp.asarray(X))), cp.asnumpy(m.predict_proba(cp.asarray(X))))
    monkeypatch.setattr(svc_module, "MERGE_SV_MIN_ROWS", 1)  # (the merge of equal rows: none here)
    compare(m, t, cp.asarray(X))
    lin = SVC(kernel="linear", device="gpu").fit(X, y)
    tl = _sparse_twin(lin)
    _close(cp.asnumpy(tl.coef_), cp.asnumpy(lin.coef_))
    Xs = sp.csr_matrix(np.where(X > 0, X, 0.0))
    lin_s = SVC(kernel="linear", device="gpu").fit(Xs, y)
    ts = _sparse_twin(lin_s)
    _close(ts.coef_.get().toarray(), lin_s.coef_.get().toarray())
    t.to_device("cpu")
    assert sp.isspmatrix_csr(t._pair_coef) and not csp.issparse(t._pair_coef)
    m.to_device("cpu")
    _compare_outputs(m, t, X)
    t.to_device("gpu")
    m.to_device("gpu")
    assert csp.isspmatrix_csr(t._pair_coef)
    compare(m, t, cp.asarray(X))
    _force_sparse(monkeypatch)
    s = SVC(device="gpu").fit(X, y)
    assert csp.isspmatrix_csr(s._pair_coef)
    d = SVC(device="gpu")
    monkeypatch.undo()
    d.fit(X, y)
    assert isinstance(d._pair_coef, cp.ndarray)
    compare(d, s, cp.asarray(X))

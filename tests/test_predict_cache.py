"""The prediction cache of the kernel models (gpusvm.svc.predict_operands): the support vectors' norms,
gram-ready copy and merged duplicates, kept on the fitted estimator between predictions. It must give the
values of a prediction without it, and never outlive the arrays it was built from."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_digits

from gpusvm import SVC, BudgetSVC, DCSVC
from gpusvm import svc as svc_module


def _digits(n=300):
    d = load_digits()
    return d.data[:n] / 16.0, d.target[:n]


def _rbf_decision(m, X):
    """The OvO decision values of an SVC computed from its attributes here, without gpusvm's prediction."""
    SV = m.support_vectors_.toarray() if sp.issparse(m.support_vectors_) else np.asarray(m.support_vectors_)
    X = X.toarray() if sp.issparse(X) else X
    d2 = (X * X).sum(1)[:, None] + (SV * SV).sum(1)[None, :] - 2 * X @ SV.T
    return np.exp(-m._gamma * np.maximum(d2, 0)) @ m._pair_coef.T + m._pair_b


def _empty(m):
    return m.__dict__["_predict_cache"].operands is None


def _fresh(m, X):
    """Decision values of a copy of ``m`` without its cache (deepcopy copies it empty)."""
    twin = copy.deepcopy(m)
    assert _empty(twin)
    return twin.decision_function(X)


@pytest.mark.parametrize("sparse", [False, True])
def test_cache_is_kept_and_gives_the_same_values(sparse):
    X, y = _digits()
    X = sp.csr_matrix(X) if sparse else X
    m = SVC().fit(X, y)
    assert _empty(m)
    first = m.decision_function(X[:7])
    ops = m._predict_cache.operands
    assert ops.sources[0] is m.support_vectors_
    second = m.decision_function(X[:7])
    assert m._predict_cache.operands is ops
    assert np.array_equal(first, second)
    assert np.array_equal(second, _fresh(m, X[:7]))


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_refit_drops_the_cache(kernel):
    X, y = _digits(400)
    m = SVC(kernel=kernel).fit(X[:200], y[:200])
    m.decision_function(X[:5])
    m.fit(X[200:], y[200:])  # other data, the same shapes
    assert _empty(m)
    expected = SVC(kernel=kernel).fit(X[200:], y[200:]).decision_function(X[:5])
    assert np.array_equal(m.decision_function(X[:5]), expected)


def test_set_params_then_fit():
    X, y = _digits()
    m = SVC().fit(X, y)
    m.predict(X[:3])
    m.set_params(kernel="poly", degree=2).fit(X, y)
    assert np.array_equal(m.decision_function(X[:3]), SVC(kernel="poly", degree=2).fit(X, y).decision_function(X[:3]))


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("n", [5, 2100])  # 2,100 rows: with merged duplicate support vectors
def test_hand_assigned_support_vectors_rebuild_the_cache(sparse, n):
    X, y = _digits(500)
    X = np.concatenate([X, X[:100]])  # duplicate rows: duplicate support vectors to merge
    y = np.concatenate([y, y[:100]])
    Q = np.resize(X, (n, X.shape[1]))
    X, Q = (sp.csr_matrix(X), sp.csr_matrix(Q)) if sparse else (X, Q)
    m = SVC(decision_function_shape="ovo").fit(X, y)
    before = m.decision_function(Q)
    SV = m.support_vectors_
    m.support_vectors_ = SV * 0.5  # a new array
    after = m.decision_function(Q)
    assert not np.allclose(after, before)
    np.testing.assert_allclose(after, _rbf_decision(m, Q), rtol=1e-9, atol=1e-9)
    assert np.array_equal(after, _fresh(m, Q))
    m.support_vectors_ = SV  # and back
    assert np.array_equal(m.decision_function(Q), before)


def test_hand_assigned_coefficients_rebuild_the_cache():
    X, y = _digits()
    m = BudgetSVC(budget=100, device="cpu").fit(X, y)
    before = m.decision_function(X[:9])
    m.dual_coef_ = m.dual_coef_ * 2.0  # intercepts are 0: the decision values double exactly
    assert np.array_equal(m.decision_function(X[:9]), 2.0 * before)


_MAKERS = [lambda: DCSVC(n_levels=2, random_state=0), lambda: BudgetSVC(budget=80, device="cpu", random_state=0)]


@pytest.mark.parametrize("make", [SVC, *_MAKERS])
def test_pickle_and_deepcopy_leave_the_cache_out(make):
    X, y = _digits()
    m = make().fit(X, y)
    expected = m.decision_function(X[:11])
    assert not _empty(m)
    for twin in (pickle.loads(pickle.dumps(m)), copy.deepcopy(m)):
        assert _empty(twin)
        assert np.array_equal(twin.decision_function(X[:11]), expected)
    assert not _empty(m)  # pickling did not touch the model itself
    assert len(pickle.dumps(m)) == len(pickle.dumps(make().fit(X, y)))


def test_a_model_without_the_cache_box_predicts():
    """A model pickled before the cache existed has no box: its first prediction adds one."""
    X, y = _digits()
    m = SVC().fit(X, y)
    expected = m.decision_function(X[:3])
    del m._predict_cache
    assert np.array_equal(m.decision_function(X[:3]), expected)
    assert not _empty(m)


@pytest.mark.parametrize("make", _MAKERS)
def test_refit_of_other_estimators(make):
    X, y = _digits(400)
    m = make().fit(X[:200], y[:200])
    m.decision_function(X[:5])
    m.fit(X[200:], y[200:])
    assert np.array_equal(m.decision_function(X[:5]), make().fit(X[200:], y[200:]).decision_function(X[:5]))


def test_to_device_drops_the_cache():
    X, y = _digits()
    m = SVC().fit(X, y)
    expected = m.decision_function(X[:4])
    m.to_device("cpu")
    assert _empty(m)
    assert np.array_equal(m.decision_function(X[:4]), expected)


def test_large_gram_copies_are_not_kept(monkeypatch):
    X, y = _digits()
    m = SVC().fit(X.astype(np.float32), y)  # float32 support vectors: the gram's float64 copy is a new array
    expected = m.decision_function(X[:6])
    monkeypatch.setattr(svc_module, "PREDICT_CACHE_MAX_BYTES", 0)
    twin = copy.deepcopy(m)
    assert np.array_equal(twin.decision_function(X[:6]), expected)
    assert twin._predict_cache.operands._gram_sv is None
    assert m._predict_cache.operands._gram_sv is not None


def test_loaded_libsvm_model_predicts_as_its_source(tmp_path):
    from gpusvm import load_libsvm_model, save_libsvm_model

    X, y = _digits()
    m = SVC().fit(X, y)
    save_libsvm_model(m, tmp_path / "m.model")
    loaded = load_libsvm_model(tmp_path / "m.model", n_features=X.shape[1])
    assert _empty(loaded)
    first = loaded.decision_function(X[:8])
    assert np.array_equal(loaded.decision_function(X[:8]), first)
    np.testing.assert_allclose(first, m.decision_function(X[:8]), rtol=1e-9, atol=1e-9)


def test_class_count_tables_are_kept_per_count_and_read_only():
    """The one-vs-one index tables are kept per class count (gpusvm._ovo): every count gets its own, and
    the shared tables cannot be written into."""
    from sklearn.utils.multiclass import _ovr_decision_function

    from gpusvm._ovo import _ovr_decision, _ovr_tables, _vote_tables, ovo_predict

    rng = np.random.default_rng(0)
    for k in (3, 5, 3, 4, 5):
        d = rng.normal(size=(6, k * (k - 1) // 2))
        assert np.array_equal(_ovr_decision(d, k), _ovr_decision_function(d < 0, -d, k))
        votes = np.round(_ovr_decision_function(d < 0, -d, k))  # (the confidences add less than 1/3)
        assert np.array_equal(ovo_predict(d, np.arange(k), np), np.argmax(votes, axis=1))
    for table in (*_ovr_tables(4), *_vote_tables(4)):
        assert not table.flags.writeable


def test_gpu_models_keep_the_cache_per_device(gpu_backend):
    """On the GPU: an SVC moved there and back, and a BudgetSVC whose ``device`` is changed after the fit
    (it predicts where ``device`` says), rebuild their operands on the device they predict on."""
    import cupy as cp

    X, y = _digits()
    m = SVC().fit(X, y)
    expected = m.decision_function(X[:20])
    m.to_device("gpu")
    on_gpu = cp.asnumpy(m.decision_function(cp.asarray(X[:20])))
    np.testing.assert_allclose(on_gpu, expected, rtol=0, atol=1e-9)
    assert np.array_equal(cp.asnumpy(m.decision_function(cp.asarray(X[:20]))), on_gpu)
    assert isinstance(m._predict_cache.operands.sqnorm(gpu_backend), cp.ndarray)
    m.to_device("cpu")
    assert np.array_equal(m.decision_function(X[:20]), expected)

    b = BudgetSVC(budget=80, device="cpu", random_state=0).fit(X, y)
    expected = b.decision_function(X[:20])
    b.set_params(device="gpu")
    np.testing.assert_allclose(cp.asnumpy(b.decision_function(X[:20])), expected, rtol=0, atol=1e-9)
    assert b._predict_cache.operands.device_key == gpu_backend.device_key
    b.set_params(device="cpu")
    assert np.array_equal(b.decision_function(X[:20]), expected)


@pytest.mark.parametrize("make", ["svc", "budget"])
def test_edit_in_place_after_a_prediction_is_refused_not_silently_stale(make):
    """The cache's squared norms do not follow an edit in place of the support vectors: ``m.support_vectors_
    *= 2`` after a prediction gave decision values neither of the old model nor of the edited one (1.9 off).
    The arrays the cache was built from are now read-only; assigning a new array still changes the model."""
    X, y = _digits()
    m = SVC().fit(X, y) if make == "svc" else BudgetSVC(budget=50, random_state=0).fit(X, y)
    m.support_vectors_[0, 0] = m.support_vectors_[0, 0]  # writable before the first prediction, as sklearn's
    m.decision_function(X[:3])
    with pytest.raises(ValueError, match="read-only"):
        m.support_vectors_ *= 2
    m.support_vectors_ = m.support_vectors_ * 2
    assert np.array_equal(m.decision_function(X[:3]), _fresh(m, X[:3]))
    assert m.fit(X, y).support_vectors_.flags.writeable  # a new fit, new arrays

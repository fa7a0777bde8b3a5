"""SVC(probability=True): Platt scaling and pairwise coupling as LIBSVM (-b 1).

The sigmoid fit is checked against a generic optimizer on the same objective; the coupling and the
sigmoid against LIBSVM 3.x's own svm_predict -b 1 (libsvm-official bindings; skipped when absent);
the whole estimator against scikit-learn's SVC(probability=True) (which runs LIBSVM with its own
random folds, so only closeness is asserted).
"""

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.datasets import load_iris
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split
from sklearn.svm import SVC as SkSVC

from gpusvm import SVC
from gpusvm._platt import ovo_probabilities, sigmoid_predict, sigmoid_train
from gpusvm.datasets import load_bundled
from conftest import traced_peak


def test_sigmoid_train_minimizes_the_regularized_log_loss():
    rng = np.random.default_rng(0)
    f = np.concatenate([rng.normal(1.0, 1.0, 300), rng.normal(-1.2, 0.8, 200)])
    y = np.concatenate([np.ones(300), -np.ones(200)])
    A, B = sigmoid_train(f, y)
    t = np.where(y > 0, 301 / 302, 1 / 202)  # Platt's targets

    def nll(v):
        p = sigmoid_predict(f, v[0], v[1])
        return -np.sum(t * np.log(p) + (1 - t) * np.log(1 - p))

    ref = minimize(nll, x0=[0.0, 0.0], method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-12,
                                                                       "maxiter": 4000})
    assert A < 0  # larger f, more likely the positive class
    np.testing.assert_allclose([A, B], ref.x, rtol=1e-4, atol=1e-5)
    # overflow-free evaluation at extreme decision values
    p = sigmoid_predict(np.array([-1e6, 0.0, 1e6]), A, B)
    assert np.isfinite(p).all() and p[0] < 1e-12 and p[2] > 1 - 1e-12


def test_coupling_and_sigmoids_match_libsvm_predict_probability():
    try:
        from libsvm import svmutil
    except Exception as exc:  # pragma: no cover - depends on the optional package
        pytest.skip(f"LIBSVM's Python bindings are not installed (pip install libsvm-official): {exc}")
    X, y = load_iris(return_X_y=True)
    m = svmutil.svm_train(y.tolist(), X.tolist(), "-s 0 -t 2 -g 0.5 -c 4 -b 1 -q")
    labels = m.get_labels()
    assert labels == sorted(labels)  # LIBSVM's pair order = our classes_ order
    _, _, dec = svmutil.svm_predict(y.tolist(), X.tolist(), m, "-q")
    _, _, prob = svmutil.svm_predict(y.tolist(), X.tolist(), m, "-b 1 -q")
    k = len(labels)
    A = np.array([m.probA[i] for i in range(k * (k - 1) // 2)])
    B = np.array([m.probB[i] for i in range(k * (k - 1) // 2)])
    ours = ovo_probabilities(np.array(dec), A, B)
    np.testing.assert_allclose(ours, np.array(prob), rtol=0, atol=1e-9)
    # two classes: the pair's sigmoid directly
    sel = y < 2
    m2 = svmutil.svm_train(y[sel].tolist(), X[sel].tolist(), "-s 0 -t 2 -g 0.5 -c 4 -b 1 -q")
    _, _, dec2 = svmutil.svm_predict(y[sel].tolist(), X[sel].tolist(), m2, "-q")
    _, _, prob2 = svmutil.svm_predict(y[sel].tolist(), X[sel].tolist(), m2, "-b 1 -q")
    ours2 = ovo_probabilities(np.array(dec2), np.array([m2.probA[0]]), np.array([m2.probB[0]]))
    np.testing.assert_allclose(ours2, np.array(prob2), rtol=0, atol=1e-12)


@pytest.mark.filterwarnings("ignore::FutureWarning")  # sklearn >= 1.9 deprecates SVC(probability=True)
@pytest.mark.parametrize("name", ["breast_cancer", "iris", "digits"])
def test_predict_proba_is_close_to_sklearn(name):
    X, y = load_iris(return_X_y=True) if name == "iris" else load_bundled(name)
    Xtr, Xte, ytr, yte = train_test_split(X, y, random_state=0, stratify=y)
    ours = SVC(C=10, probability=True, device="cpu", random_state=0).fit(Xtr, ytr)
    ref = SkSVC(C=10, probability=True, random_state=0).fit(Xtr, ytr)
    p, q = ours.predict_proba(Xte), ref.predict_proba(Xte)
    k = len(ours.classes_)
    assert p.shape == (Xte.shape[0], k) and ours.probA_.shape == (k * (k - 1) // 2,)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-9)
    assert (p >= 0).all() and (p <= 1).all()
    # different random folds than LIBSVM's: close, not equal
    assert np.abs(p - q).mean() < 0.01 and np.abs(p - q).max() < 0.15
    assert abs(log_loss(yte, p) - log_loss(yte, q)) < 0.01
    assert np.mean(p.argmax(axis=1) == q.argmax(axis=1)) > 0.99
    np.testing.assert_allclose(ours.predict_log_proba(Xte), np.log(p))
    # the pairs' sigmoids are decreasing in the LIBSVM-sign decision value, as LIBSVM's
    assert (ours.probA_ < 0).all()
    # same random_state, same folds, same probabilities
    again = SVC(C=10, probability=True, device="cpu", random_state=0).fit(Xtr, ytr)
    np.testing.assert_array_equal(again.predict_proba(Xte), p)


def test_coupling_runs_in_row_blocks_with_bounded_memory(monkeypatch):
    """The pairwise coupling held (n, k, k) arrays for all n rows at once (five or so: 1.3 GB for
    predict_proba on 300,000 rows of 10 classes, 11 MB of input); it now couples a block of rows at a
    time, each row as before."""
    import gpusvm._platt as platt

    rng = np.random.default_rng(0)
    n, k = 40_000, 10
    dec = rng.normal(size=(n, k * (k - 1) // 2))
    A, B = -rng.uniform(0.5, 2.0, dec.shape[1]), 0.1 * rng.normal(size=dec.shape[1])
    order = rng.permutation(k)
    blocked, peak = traced_peak(lambda: ovo_probabilities(dec, A, B))
    assert peak < 3.5 * n * k * k * 8  # the unblocked coupling peaked at 5.2 times one (n, k, k) array
    monkeypatch.setattr(platt, "COUPLING_BLOCK_ROWS", 777, raising=False)
    np.testing.assert_array_equal(ovo_probabilities(dec[:5000], A, B, order),
                                  ovo_probabilities(dec[:5000][::-1], A, B, order)[::-1])
    np.testing.assert_array_equal(ovo_probabilities(dec[:5000], A, B), blocked[:5000])


def test_predict_proba_needs_probability_true():
    X, y = load_bundled("breast_cancer")
    est = SVC(device="cpu").fit(X, y)
    assert not hasattr(est, "predict_proba") and not hasattr(est, "predict_log_proba")
    with pytest.raises(AttributeError, match="has no attribute 'predict_proba'") as info:
        est.predict_proba(X)
    assert "predict_proba is not available when probability=False" in str(info.value.__cause__)
    assert est.probA_.shape == (0,)
    with pytest.raises(ValueError, match="'probability' parameter of SVC must be a bool"):
        SVC(probability="yes").fit(X, y)


def test_calibrated_classifier_cv_wraps_svc():
    """scikit-learn's recommended replacement for probability=True works with gpusvm.SVC too."""
    from sklearn.calibration import CalibratedClassifierCV

    X, y = load_bundled("breast_cancer")
    Xtr, Xte, ytr, yte = train_test_split(X, y, random_state=0, stratify=y)
    cal = CalibratedClassifierCV(SVC(C=10, device="cpu"), ensemble=False).fit(Xtr, ytr)
    p = cal.predict_proba(Xte)
    assert p.shape == (Xte.shape[0], 2) and log_loss(yte, p) < 0.2


@pytest.mark.gpu
def test_gpu_probabilities_match_cpu(gpu_backend):
    """Same folds (random_state) on both devices: the sigmoids differ only by the solvers' tolerance."""
    import cupy as cp

    X, y = load_iris(return_X_y=True)
    cpu = SVC(C=4.0, gamma=0.5, probability=True, device="cpu", random_state=0).fit(X, y)
    gpu = SVC(C=4.0, gamma=0.5, probability=True, device="gpu", random_state=0).fit(X, y)
    np.testing.assert_allclose(gpu.probA_, cpu.probA_, rtol=0.05, atol=0.05)
    p_np = gpu.predict_proba(X)
    assert isinstance(p_np, np.ndarray)
    assert isinstance(gpu.predict_proba(cp.asarray(X)), cp.ndarray)
    assert np.abs(p_np - cpu.predict_proba(X)).max() < 0.02

"""predict and an "ovr" decision_function of many-class models take blocks of rows when all rows' one-vs-one
decision values would exceed gpusvm.svc.PREDICT_BLOCK_BYTES: the same labels as all rows at once and the same
values up to the rounding of the products (whose BLAS kernels depend on the number of rows); the blocks keep the
whole input's merge_rows choice."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_digits, make_blobs

from gpusvm import DCSVC, SVC
from gpusvm import svc as svc_module


def _outputs(m, X, **kw):
    out = {"predict": np.asarray(m.predict(X, **kw))}
    for shape in ("ovr", "ovo"):
        m.decision_function_shape = shape
        out[shape] = np.asarray(m.decision_function(X, **kw))
    m.decision_function_shape = "ovr"
    return out


def _same_in_blocks(m, X, monkeypatch, rows_per_block=37, **kw):
    whole = _outputs(m, X, **kw)
    k = len(m.classes_)
    monkeypatch.setattr(svc_module, "PREDICT_BLOCK_BYTES", 8 * rows_per_block * k * (k - 1) // 2)
    sizes = []  # the rows of each block
    base = svc_module.by_row_blocks

    def counted(X_, n_classes, block):
        def sized(Xb, **a):
            sizes.append(len(Xb) if isinstance(Xb, list) else Xb.shape[0])  # (a DataFrame too)
            return block(Xb, **a)
        return base(X_, n_classes, sized)

    import gpusvm.dcsvm as dcsvm_module

    monkeypatch.setattr(svc_module, "by_row_blocks", counted)
    monkeypatch.setattr(dcsvm_module, "by_row_blocks", counted)
    blocks = _outputs(m, X, **kw)
    monkeypatch.undo()
    assert len(sizes) > 2 and max(sizes) <= rows_per_block  # (predict and the ovr decision cut the rows)
    assert np.array_equal(whole["predict"], blocks["predict"])
    for key in ("ovr", "ovo"):
        np.testing.assert_allclose(blocks[key], whole[key], rtol=1e-12, atol=1e-12 * np.abs(whole[key]).max())
    return whole


def test_svc_predicts_in_row_blocks(monkeypatch):
    X, y = load_digits(return_X_y=True)
    X = X / 16
    m = SVC(gamma="scale").fit(X[:900], y[:900])
    _same_in_blocks(m, X[900:], monkeypatch)
    m.break_ties = True
    _same_in_blocks(m, X[900:], monkeypatch)
    # CSR input, a list, string labels
    ms = SVC(kernel="linear").fit(sp.csr_matrix(X[:600]), np.array([f"c{v}" for v in y[:600]]))
    out = _same_in_blocks(ms, sp.csr_matrix(X[600:900]), monkeypatch)
    assert out["predict"].dtype.kind == "U"
    _same_in_blocks(ms, X[600:700].tolist(), monkeypatch)
    pd = pytest.importorskip("pandas")
    cols = [f"f{j}" for j in range(X.shape[1])]
    mp = SVC(kernel="linear").fit(pd.DataFrame(X[:600], columns=cols), y[:600])
    _same_in_blocks(mp, pd.DataFrame(X[600:900], columns=cols, index=np.arange(900, 600, -1)), monkeypatch)


@pytest.mark.parametrize("fmt", ["coo", "dia", "bsr", "csc"])
def test_sparse_formats_without_row_slices_predict_in_blocks(fmt, monkeypatch):
    """COO, DIA and BSR matrices cannot be sliced by rows (``X[s:e]``: TypeError "not subscriptable"), yet
    predict takes them (check_X converts any sparse X to CSR): the blocks are cut from their CSR form."""
    X, y = make_blobs(n_samples=200, centers=5, n_features=4, random_state=0, cluster_std=2.0)
    m = SVC(probability=True, random_state=0).fit(X[:120], y[:120])
    Xq = sp.csr_matrix(X[120:]).asformat(fmt)
    whole = m.predict_proba(X[120:])
    _same_in_blocks(m, Xq, monkeypatch, rows_per_block=9)
    monkeypatch.setattr(svc_module, "PREDICT_BLOCK_BYTES", 8 * 9 * 10)
    np.testing.assert_allclose(m.predict_proba(Xq), whole, rtol=1e-10, atol=1e-12)


def test_array_like_without_row_slices_predicts_in_blocks(monkeypatch):
    """An array-like that only converts (``__array__`` and ``__len__``, no ``__getitem__``) is cut as its array."""
    X, y = make_blobs(n_samples=200, centers=5, n_features=4, random_state=0, cluster_std=2.0)
    m = SVC().fit(X[:120], y[:120])

    class Rows:
        def __init__(self, a):
            self.a = a

        def __len__(self):
            return len(self.a)

        def __array__(self, dtype=None, copy=None):
            return self.a

    whole = m.predict(X[120:])
    monkeypatch.setattr(svc_module, "PREDICT_BLOCK_BYTES", 8 * 9 * 10)
    assert np.array_equal(m.predict(Rows(X[120:])), whole)


def test_blocks_keep_the_whole_inputs_merge_of_equal_support_vectors(monkeypatch):
    # many copies of each training point: the support vectors hold equal rows, merged for X of at least
    # MERGE_SV_MIN_ROWS rows (a block of 37 rows alone would not merge them)
    rng = np.random.RandomState(0)
    base, yb = make_blobs(n_samples=120, centers=4, n_features=3, random_state=1, cluster_std=2.5)
    X = np.repeat(base, 3, axis=0)
    y = np.repeat(yb, 3)
    m = SVC(C=10.0, gamma=0.5, deduplicate=False).fit(X, y)
    Xq = rng.normal(size=(svc_module.MERGE_SV_MIN_ROWS + 100, 3)) * 4
    _same_in_blocks(m, Xq, monkeypatch)


def test_predict_proba_in_row_blocks(monkeypatch):
    X, y = make_blobs(n_samples=700, centers=6, n_features=4, random_state=0, cluster_std=3.0)
    m = SVC(probability=True, random_state=0).fit(X[:500], y[:500])
    whole = m.predict_proba(X[500:])
    monkeypatch.setattr(svc_module, "PREDICT_BLOCK_BYTES", 8 * 30 * 15)  # (30 rows a block)
    blocks = m.predict_proba(X[500:])
    np.testing.assert_allclose(blocks, whole, rtol=1e-10, atol=1e-12)
    assert blocks.shape == (200, 6)
    with pytest.raises(AttributeError, match="predict_proba"):
        SVC().fit(X[:500], y[:500]).predict_proba(X[500:])


def test_dcsvc_predicts_in_row_blocks(monkeypatch):
    X, y = make_blobs(n_samples=3000, centers=5, n_features=4, random_state=0, cluster_std=3.0)
    m = DCSVC(n_levels=1, n_clusters_per_level=2, min_cluster_size=100, random_state=0).fit(X[:2400], y[:2400])
    _same_in_blocks(m, X[2400:], monkeypatch)
    assert any(lv["level"] == 1 and not lv.get("skipped") for lv in m.levels_)
    _same_in_blocks(m, X[2400:], monkeypatch, level=1)


def test_rows_per_block_follow_the_bound():
    X, y = make_blobs(n_samples=600, centers=12, n_features=3, random_state=0)
    m = SVC().fit(X, y)
    sizes = []
    svc_module.by_row_blocks(X, 12, lambda Xb, merge_rows=None: (sizes.append(Xb.shape[0]), m.predict(Xb))[1])
    assert sizes == [600]  # (66 pairs: far below the bound)
    step = svc_module.PREDICT_BLOCK_BYTES // (8 * 66)
    big = np.zeros((step + 5, 3))
    sizes.clear()
    svc_module.by_row_blocks(big, 12, lambda Xb, merge_rows=None: (sizes.append(Xb.shape[0]), np.zeros(len(Xb)))[1])
    assert sizes == [step, 5]


def test_bad_input_still_gets_validation_message():
    X, y = make_blobs(n_samples=60, centers=3, n_features=2, random_state=0)
    m = SVC().fit(X, y)
    with pytest.raises(ValueError):
        m.predict("not an array")


@pytest.mark.gpu
def test_gpu_predicts_in_row_blocks(gpu_backend, monkeypatch):
    import cupy as cp

    X, y = make_blobs(n_samples=900, centers=6, n_features=4, random_state=0, cluster_std=2.0)
    m = SVC(device="gpu").fit(X[:600], y[:600])
    Xq = cp.asarray(X[600:])
    whole = _same_in_blocks(m, Xq, monkeypatch)
    assert isinstance(m.predict(Xq), cp.ndarray) and whole["predict"].shape == (300,)


@pytest.mark.parametrize("est", [SVC, DCSVC])
def test_unfitted_still_raises_not_fitted(est):
    from sklearn.exceptions import NotFittedError

    for method in ("predict", "decision_function"):
        with pytest.raises(NotFittedError):
            getattr(est(), method)(np.zeros((3, 2)))
    with pytest.raises(NotFittedError):
        SVC(probability=True).predict_proba(np.zeros((3, 2)))

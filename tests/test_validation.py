"""Input validation: clear errors naming the problem."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from gpusvm import get_backend
from gpusvm._validation import check_options, check_sample_weight, check_scalar, check_X, check_y

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

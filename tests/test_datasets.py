"""LIBSVM file reading (plain and compressed), the chess-board, bundled data."""

from __future__ import annotations

import bz2
import gzip
import lzma

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

from gpusvm.datasets import load_bundled, load_svmlight, make_chessboard


@pytest.fixture
def svm_text(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.random((20, 6))
    X[X < 0.5] = 0
    y = rng.choice([1.0, 2.0], size=20)  # labels as in skin_nonskin: kept as read
    path = tmp_path / "plain.txt"
    dump_svmlight_file(X, y, str(path), zero_based=False)
    return X, y, path.read_bytes()


@pytest.mark.parametrize("suffix, opener", [("", open), (".gz", gzip.open), (".bz2", bz2.open), (".xz", lzma.open)])
def test_load_svmlight_formats(tmp_path, svm_text, suffix, opener):
    X, y, raw = svm_text
    path = tmp_path / f"data.svm{suffix}"
    with opener(path, "wb") as f:
        f.write(raw)
    Xr, yr = load_svmlight(path)
    np.testing.assert_array_equal(yr, y)
    assert set(np.unique(yr)) <= {1.0, 2.0}
    width = Xr.shape[1]
    np.testing.assert_allclose(Xr.toarray(), X[:, :width])
    Xw, _ = load_svmlight(path, n_features=10, dtype=np.float32)
    assert Xw.shape == (20, 10) and Xw.dtype == np.float32


def test_load_svmlight_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_svmlight(tmp_path / "nope.xz")


def test_real_file_if_present(data_dir):
    X, y = load_svmlight(data_dir / "heart_scale.xz")
    assert X.shape == (270, 13)
    assert sorted(np.unique(y)) == [-1.0, 1.0]


def test_chessboard():
    X, y = make_chessboard(2000, n_tiles=4, random_state=0)
    assert X.shape == (2000, 2) and ((X >= 0) & (X < 1)).all()
    tiles = (X * 4).astype(int)
    np.testing.assert_array_equal(y, np.where(tiles.sum(1) % 2 == 0, 1, -1))
    assert 0.4 < (y > 0).mean() < 0.6
    X2, _ = make_chessboard(2000, n_tiles=4, random_state=0)
    np.testing.assert_array_equal(X, X2)
    with pytest.raises(ValueError, match="n_samples"):
        make_chessboard(0)


def test_bundled():
    X, y = load_bundled("digits")
    assert X.shape == (1797, 64) and len(np.unique(y)) == 10 and X.max() <= 1.0
    X, y = load_bundled("breast_cancer")
    assert X.shape == (569, 30) and abs(X.mean()) < 1e-8
    with pytest.raises(ValueError, match="'name'"):
        load_bundled("iris")


@pytest.mark.parametrize("kw", [{"n_tiles": 2.5}, {"n_tiles": "4"}, {"n_tiles": True}, {"n_samples": 2.5},
                                {"n_samples": None}, {"n_tiles": float("nan")}])
def test_chessboard_refuses_non_integer_sizes(kw):
    # n_tiles=2.5 passed int(n_tiles) >= 1 and clipped tiles to 1.5: labels of no chess-board, no error;
    # a string or None failed deep inside NumPy (or in int()) with a TypeError
    name = next(iter(kw))
    args = {"n_samples": 100, **kw}
    with pytest.raises(ValueError, match=f"The '{name}' parameter must be an int >= 1"):
        make_chessboard(**args, random_state=0)
    X, y = make_chessboard(np.int64(100), n_tiles=np.int64(3), random_state=0)
    np.testing.assert_array_equal(y, np.where((X * 3).astype(int).sum(1) % 2 == 0, 1, -1))


def test_data_dir_variable_that_names_no_data_folder_warns(tmp_path, monkeypatch):
    """$GPUSVM_DATA naming a missing folder (or one without .xz files) was passed over without a word."""
    from gpusvm.datasets import find_data_dir

    monkeypatch.setenv("GPUSVM_DATA", str(tmp_path / "missing"))
    with pytest.warns(UserWarning, match=r"GPUSVM_DATA=.*missing' is not a folder of LIBSVM .xz files"):
        find_data_dir()
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x.xz").write_bytes(b"")
    monkeypatch.setenv("GPUSVM_DATA", str(tmp_path / "d"))
    assert find_data_dir() == tmp_path / "d"

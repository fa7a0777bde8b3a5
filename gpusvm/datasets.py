"""Data helpers: LIBSVM files, the chess-board problem, and scikit-learn's bundled data sets.

Nothing here needs the files in ``../shared/data``: the chess-board is generated and the bundled sets
ship with scikit-learn, so the library and its default benchmark run on a fresh machine.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import numbers
import os
import warnings
from pathlib import Path

import numpy as np

__all__ = ["load_svmlight", "make_chessboard", "load_bundled", "find_data_dir", "BUNDLED"]

_OPENERS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}


def load_svmlight(path, n_features=None, dtype=np.float64, zero_based="auto"):
    """Read a LIBSVM / svmlight file, plain or compressed (.gz, .bz2, .xz by file name).

    Parameters
    ----------
    path : str or os.PathLike
    n_features : int, optional
        Number of features; pass the training file's value when reading a test file whose highest
        feature index is lower. By default, the highest index in the file.
    dtype : float32 or float64
    zero_based : bool or "auto", default="auto"
        As scikit-learn's ``load_svmlight_file``; False reads the indices as LIBSVM does (1-based).

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_samples, n_features)
        Sorted int32 indices (int64 only when the matrix is too large for int32).
    y : ndarray of shape (n_samples,)
        The labels exactly as read (float64; e.g. -1/+1, 0/1 or 1/2 as the file has them). Estimators
        map any two or more distinct labels onto classes themselves, so no relabelling happens here.
    """
    from sklearn.datasets import load_svmlight_file

    path = Path(os.fspath(path))
    if not path.exists():
        raise FileNotFoundError(f"no such LIBSVM file: {path}")
    opener = _OPENERS.get(path.suffix.lower())  # (a9a.XZ too)
    if opener is None:
        X, y = load_svmlight_file(str(path), n_features=n_features, dtype=dtype, zero_based=zero_based)
    else:
        with opener(path, "rb") as f:
            X, y = load_svmlight_file(f, n_features=n_features, dtype=dtype, zero_based=zero_based)
    X = X.tocsr()
    X.sort_indices()
    if X.nnz < 2**31 and max(X.shape) < 2**31:
        # int32 indices: what LIBLINEAR-backed scikit-learn estimators and cuSPARSE expect
        X.indices = X.indices.astype("int32", copy=False)
        X.indptr = X.indptr.astype("int32", copy=False)
    return X, y


def make_chessboard(n_samples, n_tiles=4, random_state=None, dtype=np.float64):
    """The chess-board problem of the planning-ahead SMO paper (Glasmachers, 2008).

    Points uniform in the unit square, labelled by the parity of the ``n_tiles x n_tiles`` tile they
    fall in: +1 for an even sum of tile indices, -1 otherwise. Hard for SMO at large C because the
    classes touch along every tile edge.

    Returns
    -------
    X : ndarray of shape (n_samples, 2)
    y : ndarray of shape (n_samples,), values in {-1, +1}
    """
    # int() let n_tiles=2.5 through: tiles clipped to 1.5 gave labels of no chess-board
    for name, v in (("n_samples", n_samples), ("n_tiles", n_tiles)):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral) or v < 1:
            raise ValueError(f"The {name!r} parameter must be an int >= 1. Got {v!r} instead.")
    rng = np.random.default_rng(random_state)
    X = rng.random((int(n_samples), 2)).astype(dtype)
    tiles = np.minimum((X * n_tiles).astype(np.int64), n_tiles - 1)
    y = np.where(tiles.sum(axis=1) % 2 == 0, 1.0, -1.0)
    return X, y


BUNDLED = ("digits", "breast_cancer")


def load_bundled(name="breast_cancer", scale=True):
    """One of scikit-learn's bundled data sets, ready for an SVM.

    ``name`` is "digits" (10 classes, 1,797 x 64, features scaled to [0, 1] by /16) or
    "breast_cancer" (2 classes, 569 x 30, standardized when ``scale``). Returns ``(X, y)``.
    """
    from sklearn import datasets as skd

    if name == "digits":
        X, y = skd.load_digits(return_X_y=True)
        return (X / 16.0 if scale else X), y
    if name == "breast_cancer":
        X, y = skd.load_breast_cancer(return_X_y=True)
        if scale:
            X = (X - X.mean(axis=0)) / X.std(axis=0)
        return X, y
    raise ValueError(f"The 'name' parameter must be one of {list(BUNDLED)}. Got {name!r} instead.")


def find_data_dir(env="GPUSVM_DATA"):
    """The folder of the LIBSVM benchmark files: ``$GPUSVM_DATA``, else a ``shared/data`` next to the
    source checkout (../shared/data from the repository root); None when neither exists."""
    cands = []
    if os.environ.get(env):
        cands.append(Path(os.environ[env]))
        if not (cands[0].is_dir() and any(cands[0].glob("*.xz"))):  # (a mistyped folder was passed over silently)
            warnings.warn(f"${env}={os.environ[env]!r} is not a folder of LIBSVM .xz files; looking for "
                          "../shared/data instead.", UserWarning, stacklevel=2)
    here = Path(__file__).resolve()
    cands += [p / "shared" / "data" for p in here.parents[1:4]]
    cands.append(Path.cwd().parent / "shared" / "data")
    for c in cands:
        if c.is_dir() and any(c.glob("*.xz")):
            return c
    return None

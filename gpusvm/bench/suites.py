"""Benchmark suites: named lists of data sets with fixed train/test splits and hyperparameters.

* ``tiny``: seconds; used by the tests (breast cancer, a small chess-board).
* ``default``: no data files needed (scikit-learn's bundled digits and breast cancer, generated
  chess-boards); finishes in well under 3 minutes on a 2-core CPU with the scikit-learn references.
* ``paper``: the setups of the source papers on the LIBSVM files of ``--data-dir`` (a9a, ijcnn1, w8a,
  phishing, skin_nonskin for kernel solvers; a9a, w8a, ijcnn1, phishing at C=1 for linear solvers).

Each data set names its hyperparameters per solver family: ``kernel`` (C, gamma, kernel) and ``linear``
(C, loss). A family without parameters does not run on that data set (a linear SVM on a chess-board
says nothing). Splits and subsamples are stratified and fixed by ``seed``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp

__all__ = ["BenchData", "DatasetSpec", "SUITES", "suite", "suite_names", "stratified_subset"]

DEFAULT_LINEAR = {"C": 1.0, "loss": "squared_hinge"}


@dataclass
class BenchData:
    """A loaded data set: host arrays (NumPy or SciPy CSR) and what the outputs record about it."""

    name: str
    X_train: Any
    y_train: np.ndarray
    X_test: Any
    y_test: np.ndarray
    params: dict  # family -> hyperparameters
    info: dict = field(default_factory=dict)

    def describe(self) -> dict:
        ytr = np.asarray(self.y_train)
        _, counts = np.unique(np.asarray(self.y_test), return_counts=True)
        return {
            "name": self.name,
            "n_train": int(self.X_train.shape[0]),
            "n_test": int(self.X_test.shape[0]),
            "n_features": int(self.X_train.shape[1]),
            "n_classes": int(np.unique(ytr).size),
            "format": "csr" if sp.issparse(self.X_train) else "dense",
            "majority_rate_test": float(counts.max() / counts.sum()),
            "params": self.params,
            **self.info,
        }


@dataclass(frozen=True)
class DatasetSpec:
    """A data set of a suite: ``load(data_dir, seed)`` returns ``(X_train, y_train, X_test, y_test, info)``;
    ``params`` maps a solver family to its hyperparameters ("gamma": "scale" is resolved on the
    training set at load time, as scikit-learn does, so every solver gets the same number)."""

    name: str
    load: Callable[[Path | None, int], tuple]
    params: dict
    description: str = ""
    needs_data_dir: bool = False


def stratified_subset(X, y, n, seed=0):
    """``n`` rows of ``(X, y)`` drawn stratified by label with ``seed`` (all rows when ``n >= len(y)``)."""
    if n is None or n >= X.shape[0]:
        return X, y
    from sklearn.model_selection import train_test_split

    try:
        X, _, y, _ = train_test_split(X, y, train_size=int(n), stratify=y, random_state=seed)
    except ValueError:  # a class too small to stratify: plain random subset
        X, _, y, _ = train_test_split(X, y, train_size=int(n), random_state=seed)
    return X, y


def _split(X, y, seed, test_size=0.2):
    from sklearn.model_selection import train_test_split

    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=test_size, stratify=y, random_state=seed)
    return Xtr, ytr, Xte, yte


def _scale_gamma(X):
    """gamma="scale" as the estimators resolve it (X.var() over all entries, a rounding-only variance
    as 0), so that the rows of every solver and of sklearn get the same float."""
    from .._backend import get_backend
    from .._gram import feature_variance, resolve_gamma

    be = get_backend("cpu")
    X = X.tocsr() if sp.issparse(X) else np.asarray(X)
    return resolve_gamma("scale", feature_variance(be, X), X.shape[1])


# ---- loaders ---------------------------------------------------------------------------------------
def _bundled(name, test_size=0.25, n=None):
    def load(data_dir, seed):
        from ..datasets import load_bundled

        X, y = load_bundled(name)
        if n is not None:
            X, y = stratified_subset(X, y, n, seed)
        return (*_split(X, y, seed, test_size), {"source": f"sklearn bundled {name!r}, "
                                                 f"stratified {1 - test_size:.0%}/{test_size:.0%} split"})

    return load


def _chessboard(n_train, n_test, n_tiles=4):
    def load(data_dir, seed):
        from ..datasets import make_chessboard

        X, y = make_chessboard(n_train + n_test, n_tiles, random_state=seed)
        return X[:n_train], y[:n_train], X[n_train:], y[n_train:], {
            "source": f"generated chess-board {n_tiles}x{n_tiles} (Glasmachers 2008), random_state={seed}"}

    return load


@functools.lru_cache(maxsize=16)
def _read(path: str, n_features):
    from ..datasets import load_svmlight

    return load_svmlight(path, n_features=n_features)


def _file(data_dir, name):
    if data_dir is None:
        raise FileNotFoundError("the paper suite needs --data-dir (the folder of the LIBSVM .xz files)")
    d = Path(data_dir)
    for cand in (d / f"{name}.xz", d / name, d / f"{name}.bz2", d / f"{name}.gz"):
        if cand.exists():
            return str(cand)
    raise FileNotFoundError(f"LIBSVM file {name!r} not found in {d}")


def _libsvm_pair(train, test, n_features, dense):
    def load(data_dir, seed):
        Xtr, ytr = _read(_file(data_dir, train), n_features)
        Xte, yte = _read(_file(data_dir, test), n_features)
        if dense:
            Xtr, Xte = Xtr.toarray(), Xte.toarray()
        return Xtr, ytr, Xte, yte, {"source": f"LIBSVM {train} / {test} (given split)"}

    return load


def _libsvm_split(name, dense):
    def load(data_dir, seed):
        X, y = _read(_file(data_dir, name), None)
        if dense:
            X = X.toarray()
        return (*_split(X, y, seed), {"source": f"LIBSVM {name}, stratified 80/20 split, seed {seed}"})

    return load


def _kernel(C, gamma):
    return {"kernel": "rbf", "C": float(C), "gamma": gamma}


_TINY = [
    DatasetSpec("breast_cancer", _bundled("breast_cancer"),
                {"kernel": _kernel(1.0, "scale"), "linear": dict(DEFAULT_LINEAR)},
                "sklearn breast cancer, standardized (569 x 30)"),
    DatasetSpec("chess-600", _chessboard(600, 400, 2), {"kernel": _kernel(10.0, 4.0)},
                "2x2 chess-board (XOR), 600 train / 400 test"),
]

_DEFAULT = [
    DatasetSpec("breast_cancer", _bundled("breast_cancer"),
                {"kernel": _kernel(1.0, "scale"), "linear": dict(DEFAULT_LINEAR)},
                "sklearn breast cancer, standardized (569 x 30)"),
    DatasetSpec("digits", _bundled("digits"),
                {"kernel": _kernel(10.0, "scale"), "linear": dict(DEFAULT_LINEAR)},
                "sklearn digits / 16, 10 classes (1,797 x 64)"),
    DatasetSpec("chess-4x4-5k", _chessboard(5_000, 5_000, 4), {"kernel": _kernel(1000.0, 10.0)},
                "4x4 chess-board, 5,000 train / 5,000 test, large C (hard for SMO)"),
    DatasetSpec("chess-4x4-10k", _chessboard(10_000, 10_000, 4), {"kernel": _kernel(100.0, 10.0)},
                "4x4 chess-board, 10,000 train / 10,000 test"),
]

_PAPER_LINEAR = {"C": 1.0, "loss": "squared_hinge"}

_PAPER = [
    DatasetSpec("a9a", _libsvm_pair("a9a", "a9a.t", 123, dense=False),
                {"kernel": _kernel(32.0, 0.008), "linear": dict(_PAPER_LINEAR)},
                "Adult (a9a), 32,561 x 123 sparse; test a9a.t", needs_data_dir=True),
    DatasetSpec("ijcnn1", _libsvm_pair("ijcnn1", "ijcnn1.t", 22, dense=True),
                {"kernel": _kernel(32.0, 2.0), "linear": dict(_PAPER_LINEAR)},
                "IJCNN 2001, 49,990 x 22 dense; test ijcnn1.t", needs_data_dir=True),
    DatasetSpec("w8a", _libsvm_split("w8a", dense=False),
                {"kernel": _kernel(8.0, 0.03), "linear": dict(_PAPER_LINEAR)},
                "web (w8a), 49,749 x 300 sparse; stratified 80/20 split", needs_data_dir=True),
    DatasetSpec("phishing", _libsvm_split("phishing", dense=True),
                {"kernel": _kernel(8.0, 8.0), "linear": dict(_PAPER_LINEAR)},
                "phishing, 11,055 x 68 dense; stratified 80/20 split", needs_data_dir=True),
    DatasetSpec("skin_nonskin", _libsvm_split("skin_nonskin", dense=True),
                {"kernel": _kernel(8.0, 0.03)},
                "skin segmentation, 245,057 x 3 raw B,G,R; stratified 80/20 split", needs_data_dir=True),
]

SUITES: dict[str, list[DatasetSpec]] = {"tiny": _TINY, "default": _DEFAULT, "paper": _PAPER}

#: Suite defaults for settings the command line leaves out.
SUITE_DEFAULTS = {
    "tiny": {"repeat": 1, "time_limit": 30.0, "row_budget": None, "warmup_max": 2000},
    "default": {"repeat": 3, "time_limit": 10.0, "row_budget": 4.0, "warmup_max": 1000},
    "paper": {"repeat": 1, "time_limit": None, "row_budget": None, "warmup_max": 2000,
              # one timed fit: a GPU row warms up on the whole training set, so that no kernel of the fit is
              # compiled or loaded inside it (a 2,000-row DCSVC solves none of its levels)
              "warmup_max_gpu": 0},
}


def suite_names() -> list[str]:
    return list(SUITES)


def suite(name: str) -> list[DatasetSpec]:
    if name not in SUITES:
        raise ValueError(f"The 'suite' parameter must be one of {sorted(SUITES)}. Got {name!r} instead.")
    return SUITES[name]


def load(spec: DatasetSpec, data_dir=None, seed=0, max_train=None, max_test=None) -> BenchData:
    """Load one data set of a suite, resolve ``gamma='scale'`` on the (capped) training set and apply the
    ``max_train`` / ``max_test`` caps (stratified subsets, recorded in ``info``)."""
    Xtr, ytr, Xte, yte, info = spec.load(data_dir, seed)
    info = dict(info)
    info["description"] = spec.description
    n_tr0, n_te0 = Xtr.shape[0], Xte.shape[0]
    if max_train is not None and n_tr0 > max_train:
        Xtr, ytr = stratified_subset(Xtr, ytr, max_train, seed)
        info["train_subsampled_from"] = int(n_tr0)
    if max_test is not None and n_te0 > max_test:
        Xte, yte = stratified_subset(Xte, yte, max_test, seed)
        info["test_subsampled_from"] = int(n_te0)
    params = {}
    for fam, p in spec.params.items():
        p = dict(p)
        if p.get("gamma") == "scale":
            p["gamma"] = _scale_gamma(Xtr)
            p["gamma_rule"] = "scale: 1 / (n_features * X_train.var())"
        params[fam] = p
    return BenchData(spec.name, Xtr, np.asarray(ytr), Xte, np.asarray(yte), params, info)

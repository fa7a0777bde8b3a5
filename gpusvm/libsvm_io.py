"""LIBSVM model files: save a fitted :class:`~gpusvm.SVC` for LIBSVM's ``svm-predict`` and load models
written by LIBSVM's ``svm-train`` (or by :func:`save_libsvm_model`) as fitted :class:`~gpusvm.SVC`.

The format is LIBSVM's plain-text model (``svm_save_model`` in ``svm.cpp``): a header of ``key value``
lines (``svm_type``, ``kernel_type``, the kernel's ``degree`` / ``gamma`` / ``coef0``, ``nr_class``,
``total_sv``, ``rho``, ``label``, ``nr_sv``), then ``SV`` and one line per support vector: its
``nr_class - 1`` coefficients, then its nonzero features as 1-based ``index:value`` pairs.

Only C-SVC models (``svm_type c_svc``) with the four grams of :class:`~gpusvm.SVC` are handled; other
types (nu-SVC, one-class, regression, precomputed kernels) raise a ``ValueError`` naming what the file
holds. Probability models (``probA`` / ``probB``, LIBSVM's ``-b 1``) round-trip: a model fitted with
``probability=True`` writes its pairs' sigmoids, and a file that has them loads as a model with
``predict_proba`` (a pair whose class order flips keeps probA and negates probB; the coupling runs in
the file's label order, as LIBSVM's does, since it stops at a tolerance).

Conventions, as LIBSVM and scikit-learn:

* the coefficients of a support vector of class ``labels[c]`` in the one-vs-one problem ``(a, b)``
  (``a < b`` in the file's label order, class ``a`` positive) sit in row ``b - 1`` if ``c == a`` and in row
  ``a`` if ``c == b``; ``rho`` holds one value per pair and the pair's decision value is
  ``sum(coef * K(sv, x)) - rho``;
* scikit-learn and gpusvm keep ``classes_`` sorted, while LIBSVM orders labels as they first appear in
  the training file. Loading permutes the classes into sorted order (a pair whose order flips gets its
  coefficients and ``rho`` negated) and keeps the file's order for what depends on it: an exact tie of
  one-vs-one votes goes to the label listed first in the file (as LIBSVM's; a model fitted in Python
  gives it to the smallest label, as scikit-learn's), the probability coupling runs in that order, and
  saving the model writes the labels in it again. ``gpusvm train`` gives its models LIBSVM's order;
  other fitted models are written with sorted labels;
* labels are written as integers, as LIBSVM does: a model whose classes are not integers cannot be
  saved in this format.

Floats are written as the shortest decimal text that reads back as the same double, so saving and
loading give back the same model bit for bit.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import scipy.sparse as sps

from ._gram import GramSpec
from ._ovo import pair_coef_is_sparse, pair_coef_matrix

__all__ = ["save_libsvm_model", "load_libsvm_model"]

_KERNEL_NAMES = {"linear": "linear", "poly": "polynomial", "rbf": "rbf", "sigmoid": "sigmoid"}
_KERNEL_FROM_FILE = {v: k for k, v in _KERNEL_NAMES.items()}


def _g(x) -> str:
    return repr(float(x))  # the shortest text that reads back as the same double


def _int_labels(classes) -> list[int]:
    out = []
    for c in np.asarray(classes).tolist():
        if isinstance(c, (bool, np.bool_)) or not isinstance(c, (int, float, np.integer, np.floating)) \
                or not float(c).is_integer():
            raise ValueError(f"LIBSVM model files store integer class labels; this model's classes_ are "
                             f"{np.asarray(classes).tolist()!r}. Refit with integer labels (e.g. "
                             "sklearn.preprocessing.LabelEncoder) to save it in LIBSVM format.")
        out.append(int(c))
    if any(abs(c) >= 2**31 for c in out):
        # (LIBSVM reads labels with %d into a C int: 2**40 came back as 0 there, while our reader keeps it)
        warnings.warn(f"class labels {[c for c in out if abs(c) >= 2**31]} lie outside the 32-bit int range "
                      "of LIBSVM's labels: LIBSVM will misread this model file (gpusvm reads it back "
                      "correctly). Refit with smaller labels (e.g. sklearn.preprocessing.LabelEncoder) for "
                      "LIBSVM.", UserWarning, stacklevel=3)
    return out


def _pairs_to_rows(pair_coef, starts, k):
    """LIBSVM's (k - 1, n_SV) coefficient rows from per-pair coefficients over all SVs (SVs grouped by
    class at ``starts``; dense, or a SciPy CSR matrix: a many-class model's, see
    :func:`gpusvm._ovo.pair_coef_is_sparse`): an SV of class c keeps pair (a, b)'s value in row b - 1 if
    c == a, row a if c == b."""
    rows = np.zeros((max(k - 1, 1), int(starts[-1])))
    if sps.issparse(pair_coef):  # its stored entries, each where the loop below puts it
        coo = pair_coef.tocoo()
        a, b = np.triu_indices(k, 1)  # pair p is (a[p], b[p]), in the loop's order
        a, b = a[coo.row], b[coo.row]
        cls = np.searchsorted(starts, coo.col, side="right") - 1  # the class of each entry's SV
        ok = (cls == a) | (cls == b)  # (the loop reads only these)
        rows[np.where(cls == a, b - 1, a)[ok], coo.col[ok]] = coo.data[ok]
        return rows
    p = 0
    for a in range(k):
        for b in range(a + 1, k):
            rows[b - 1, starts[a]:starts[a + 1]] = pair_coef[p, starts[a]:starts[a + 1]]
            rows[a, starts[b]:starts[b + 1]] = pair_coef[p, starts[b]:starts[b + 1]]
            p += 1
    return rows


def _rows_to_pairs(rows, starts, k):
    """The inverse of :func:`_pairs_to_rows`: (k (k - 1) / 2, n_SV) per-pair coefficients, dense, or a SciPy
    CSR matrix of the nonzeros when :func:`gpusvm._ovo.pair_coef_is_sparse` (the rule of a fit, so that a
    model read back has the layout it was fitted with)."""
    n_pairs, n_sv = k * (k - 1) // 2, int(starts[-1])
    if k > 2 and pair_coef_is_sparse(n_pairs, n_sv, np.count_nonzero(rows)):
        # every SV j of class c holds its pair with class o in row o - 1 (o > c) or o (o < c)
        c = np.repeat(np.arange(k), np.diff(starts))
        o = np.arange(k - 1)[:, None] + (np.arange(k - 1)[:, None] >= c[None, :])  # (k - 1, n_SV): row r's class
        lo, hi = np.minimum(c[None, :], o), np.maximum(c[None, :], o)
        pair = lo * (2 * k - lo - 1) // 2 + (hi - lo - 1)  # the number of pair (lo, hi), lo < hi, in order
        col = np.broadcast_to(np.arange(n_sv), rows.shape)
        return pair_coef_matrix(pair.ravel(), col.ravel(), np.asarray(rows, dtype=np.float64).ravel(), n_pairs,
                                n_sv, sparse=True)
    pair_coef = np.zeros((n_pairs, n_sv))
    p = 0
    for a in range(k):
        for b in range(a + 1, k):
            pair_coef[p, starts[a]:starts[a + 1]] = rows[b - 1, starts[a]:starts[a + 1]]
            pair_coef[p, starts[b]:starts[b + 1]] = rows[a, starts[b]:starts[b + 1]]
            p += 1
    return pair_coef


def _permute_classes(pair_coef, pair_b, prob, n_support, perm):
    """One model's pairs with its classes renumbered: new class ``c`` is old class ``perm[c]``.

    ``pair_coef`` (n_pairs, n_SV) and ``pair_b`` (n_pairs,) are per pair (a, b), a < b, class a
    positive, over the SVs grouped by class with ``n_support`` (k,) per class; ``prob`` is None or
    (probA, probB). Returns the same four for the new numbering: the SV groups in the new class order,
    and a pair whose order flips with its coefficients and bias negated (probA kept, probB negated:
    P(a | f) = 1 - P(b | -f)). Also the SV permutation (new position -> old position)."""
    k = len(perm)
    n_support = np.asarray(n_support, dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(n_support)])
    index = {}
    p = 0
    for a in range(k):
        for b in range(a + 1, k):
            index[(a, b)] = p
            p += 1
    sv_perm = np.concatenate([np.arange(starts[c], starts[c + 1]) for c in perm]).astype(np.int64)
    sparse = sps.issparse(pair_coef)
    coef, bias, pa, pb, src, signs = [], [], [], [], [], []
    for a in range(k):
        for b in range(a + 1, k):
            fa, fb = int(perm[a]), int(perm[b])
            sign = 1.0 if fa < fb else -1.0
            q = index[(min(fa, fb), max(fa, fb))]
            if sparse:
                src.append(q)
                signs.append(sign)
            else:
                coef.append(sign * pair_coef[q][sv_perm])
            bias.append(sign * pair_b[q])
            if prob is not None:
                pa.append(prob[0][q])
                pb.append(sign * prob[1][q])
    new_prob = (np.asarray(pa, dtype=np.float64), np.asarray(pb, dtype=np.float64)) if prob is not None else None
    if sparse:  # (CSR: a many-class model's) the rows src (negated where the pair flips), columns sv_perm
        coef = sps.csr_matrix(pair_coef)[np.asarray(src, dtype=np.int64)][:, sv_perm]
        coef = sps.csr_matrix(sps.diags(np.asarray(signs)) @ coef)
        coef.sort_indices()
    else:
        coef = np.asarray(coef).reshape(len(coef), -1)
    return (coef, np.asarray(bias, dtype=np.float64), new_prob, n_support[np.asarray(perm, dtype=np.int64)],
            sv_perm)


def save_libsvm_model(model, path, *, _first_index=1) -> None:
    """Write a fitted :class:`~gpusvm.SVC` as a LIBSVM model file.

    Parameters
    ----------
    model : gpusvm.SVC
        A fitted SVC (on any device; its arrays are copied to the host).
    path : str or os.PathLike
        The file to write (overwritten).

    Raises
    ------
    TypeError
        If ``model`` is not a gpusvm SVC.
    sklearn.exceptions.NotFittedError
        If it is not fitted.
    ValueError
        If its classes are not integers (LIBSVM stores integer labels), or its kernel is "precomputed"
        or a callable.
    """
    from .svc import SVC

    if not isinstance(model, SVC):
        raise TypeError(f"save_libsvm_model writes gpusvm.SVC models (C-SVC); got {type(model).__name__}.")
    model._check_fitted()
    if model.kernel == "precomputed" or callable(model.kernel):
        raise ValueError("save_libsvm_model cannot write a model with kernel='precomputed' or a callable: it "
                         "has no support vectors, only training indices (support_), and gpusvm reads no "
                         "precomputed LIBSVM model either. Pickle the estimator instead.")
    labels = _int_labels(model.classes_)
    be = model._model_backend()
    sv = be.to_host(model.support_vectors_)
    pair_coef = be.to_host(model._pair_coef)  # (a SciPy CSR matrix for a many-class model's CSR coefficients)
    pair_coef = sps.csr_matrix(pair_coef, dtype=np.float64) if sps.issparse(pair_coef) else np.asarray(
        pair_coef, dtype=np.float64)
    pair_b = np.asarray(be.to_host(model._pair_b), dtype=np.float64)
    k = len(labels)
    n_support = np.asarray(model.n_support_, dtype=np.int64)
    prob = None
    # (the setting as a bool: scikit-learn's default string "deprecated" means False, as in predict_proba)
    wants_prob = model._probability() if hasattr(model, "_probability") else bool(getattr(model, "probability", 0))
    if wants_prob and np.size(getattr(model, "probA_", [])):
        prob = (np.asarray(model.probA_, dtype=np.float64), np.asarray(model.probB_, dtype=np.float64))
    order = getattr(model, "_label_order", None)  # LIBSVM's label order (read from a file, or gpusvm train)
    if order is not None:
        pair_coef, pair_b, prob, n_support, sv_perm = _permute_classes(pair_coef, pair_b, prob, n_support, order)
        labels = [labels[int(c)] for c in order]
        sv = sv[sv_perm]
    starts = np.concatenate([[0], np.cumsum(n_support)])
    n_sv = int(starts[-1])
    sv_coef = _pairs_to_rows(pair_coef, starts, k)
    rho = -pair_b
    lines = _header_start(model.kernel, model._gamma, model.degree, model.coef0)
    lines += [f"nr_class {k}", f"total_sv {n_sv}", "rho " + " ".join(_g(r) for r in rho),
              "label " + " ".join(str(c) for c in labels)]
    if prob is not None:
        lines += ["probA " + " ".join(_g(v) for v in prob[0]), "probB " + " ".join(_g(v) for v in prob[1])]
    lines += ["nr_sv " + " ".join(str(int(c)) for c in n_support), "SV"]
    if sps.issparse(sv):
        csr = sps.csr_matrix(sv)
        csr.sort_indices()
        rows = [(csr.indices[csr.indptr[i]:csr.indptr[i + 1]], csr.data[csr.indptr[i]:csr.indptr[i + 1]])
                for i in range(n_sv)]
    else:
        dense = np.asarray(sv, dtype=np.float64)
        rows = []
        for i in range(n_sv):
            nz = np.flatnonzero(dense[i])
            rows.append((nz, dense[i, nz]))
    with open(os.fspath(path), "w", encoding="ascii") as fh:
        fh.write("\n".join(lines) + "\n")
        for i, (idx, val) in enumerate(rows):
            coefs = " ".join(_g(c) for c in sv_coef[:, i])
            feats = " ".join(f"{int(j) + _first_index}:{_g(v)}" for j, v in zip(idx, val))
            fh.write(f"{coefs} {feats}\n" if feats else f"{coefs} \n")


def _header_start(kernel, gamma, degree, coef0):
    """The first lines of a model file: its type and the gram's parameters (those the gram uses)."""
    lines = ["svm_type c_svc", f"kernel_type {_KERNEL_NAMES[kernel]}"]
    if kernel == "poly":
        lines.append(f"degree {int(degree)}")
    if kernel in ("poly", "rbf", "sigmoid"):
        lines.append(f"gamma {_g(gamma)}")
    if kernel in ("poly", "sigmoid"):
        lines.append(f"coef0 {_g(coef0)}")
    return lines


def one_class_model_text(label, kernel, gamma, degree, coef0, probability=False):
    """The model svm-train writes for a training file of a single label: no support vectors; it
    predicts ``label`` for every point (with ``probability``, svm-train's -b 1: empty probA / probB
    lines, which let svm-predict -b 1 give that label probability 1)."""
    lines = _header_start(kernel, gamma, degree, coef0) + ["nr_class 1", "total_sv 0", "rho", f"label {int(label)}"]
    lines += ["probA", "probB"] if probability else []
    return "\n".join(lines + ["nr_sv 0", "SV"]) + "\n"


class _counting:
    """Iterates the lines of a file and keeps the number of the last one read (``n``, from 1)."""

    def __init__(self, fh):
        self.fh, self.n = fh, 0

    def __iter__(self):
        return self

    def __next__(self):
        line = next(self.fh)
        self.n += 1
        return line


def _parse_header(fh, path):
    header = {}
    for raw in fh:
        line = raw.strip()
        if not line:
            continue
        if line == "SV":
            return header
        key, *value = line.split()  # (spaces or tabs, as LIBSVM's fscanf)
        header[key] = value
    raise ValueError(f"{path}: not a LIBSVM model file (no 'SV' line ends the header).")


def load_libsvm_model(path, *, n_features=None, device="cpu", zero_based="auto", sparse=False):
    """Read a LIBSVM C-SVC model file into a fitted :class:`~gpusvm.SVC`.

    Parameters
    ----------
    path : str or os.PathLike
        A model written by LIBSVM's ``svm-train`` / ``svm_save_model`` or by :func:`save_libsvm_model`.
    n_features : int, optional
        Number of input features of the returned model (``n_features_in_``). LIBSVM models store only
        the support vectors' nonzero features, so the default is the largest feature index in the file;
        pass the width of the data you will predict on when it is larger (the extra features then enter
        the gram as in LIBSVM, e.g. through ``||x||^2`` of the RBF gram).
    device : {"cpu", "gpu", "gpu:N"}, default="cpu"
        Where the model's arrays (and its predictions) live.
    zero_based : bool or "auto", default="auto"
        Whether feature index 0 of the file is column 0 (True) or index 1 is (False: LIBSVM's usual
        1-based files). "auto", as ``sklearn.datasets.load_svmlight_file``'s: 0-based when the file has
        an index 0 (a model trained on a 0-based data file, e.g. by ``gpusvm train`` on what
        ``sklearn.datasets.dump_svmlight_file`` writes by default), else 1-based. Load the data you
        predict on with the same choice.
    sparse : bool, default=False
        Keep the support vectors as a SciPy ``csr_matrix`` (as a fit on sparse data keeps them) instead of
        a dense array of n_SV x ``n_features`` float64 values: for models of wide sparse data (text,
        hashed features), whose dense support vectors would take far more memory than the file's
        nonzeros. Predictions are the same up to rounding (the gram then multiplies sparse rows, or
        densifies them when they are dense enough; see :func:`gpusvm._backend.ops.gram.densify_for_gram`).

    Returns
    -------
    gpusvm.SVC
        A fitted estimator: ``support_vectors_`` (dense, or CSR with ``sparse=True``), ``dual_coef_``,
        ``intercept_``, ``n_support_``, ``classes_`` (sorted) as if fitted by gpusvm, with its
        hyperparameters set from the file (C is not stored in LIBSVM models and stays at 1.0).
        ``support_`` (indices into a training set the file does not hold) is -1 for every support
        vector; ``objective_`` and ``n_iter_`` are unknown (NaN and 0).

    Raises
    ------
    ValueError
        A malformed file, a model type other than C-SVC or a precomputed kernel, ``n_features``
        smaller than the file's largest feature index, a feature index 0 with ``zero_based=False``, or
        a ``sparse`` that is not a bool.
    """
    if not (isinstance(zero_based, (bool, np.bool_)) or (isinstance(zero_based, str) and zero_based == "auto")):
        raise ValueError(f"The 'zero_based' parameter of load_libsvm_model must be a bool or 'auto'. Got "
                         f"{zero_based!r} instead.")
    if not isinstance(sparse, (bool, np.bool_)):
        raise ValueError(f"The 'sparse' parameter of load_libsvm_model must be a bool. Got {sparse!r} instead.")
    first_index = "auto" if isinstance(zero_based, str) else 0 if zero_based else 1
    return _build_model(_parse_model(path, first_index), n_features, device, sparse=bool(sparse))


def _parse_model(path, first_index=1, one_class=False):
    """A LIBSVM C-SVC model file, validated, as a dict of its header values and support-vector
    entries (``width``: the largest feature index used); :func:`_build_model` makes the estimator.
    Feature index ``first_index`` is column 0 (``gpusvm train`` / ``predict`` use 0: column = index,
    as LIBSVM, which also takes index 0; "auto": 0 when the file has an index 0, else 1). ``one_class``:
    a model of one label (``nr_class 1``, what svm-train writes for a training file of a single label)
    gives ``{"k": 1, "labels": [label], "prob": p}``, ``p`` True when the file has probA and probB lines
    (svm-train -b 1), else None."""
    path = os.fspath(path)
    with open(path, encoding="ascii", errors="replace") as fh:
        counted = _counting(fh)
        header = _parse_header(counted, path)
        # (each support vector's line number in the file, for the messages: the header's length varies)
        body, where = [], []
        for ln in counted:
            if ln.strip():
                body.append(ln.split())
                where.append(counted.n)

    def file_line(i):
        return f" (line {where[i]} of the file)"

    def one(key, cast=str, required=True):
        if key not in header:
            if required:
                raise ValueError(f"{path}: LIBSVM model header has no '{key}' line.")
            return None
        try:
            return cast(header[key][0])
        except (IndexError, ValueError) as exc:
            raise ValueError(f"{path}: bad '{key}' line in the model header: {' '.join(header[key])!r}.") from exc

    svm_type = one("svm_type")
    if svm_type != "c_svc":
        raise ValueError(f"{path}: svm_type {svm_type!r}; gpusvm reads C-SVC models (svm_type c_svc) only.")
    kt = one("kernel_type")
    if kt not in _KERNEL_FROM_FILE:
        raise ValueError(f"{path}: kernel_type {kt!r} is not supported; gpusvm's grams are "
                         f"{sorted(_KERNEL_FROM_FILE)} (a precomputed kernel cannot be loaded).")
    kernel = _KERNEL_FROM_FILE[kt]
    k = one("nr_class", int)
    total = one("total_sv", int)
    try:
        rho = np.array([float(v) for v in header.get("rho", [])])
        labels = [int(float(v)) for v in header.get("label", [])]
        nr_sv = np.array([int(v) for v in header.get("nr_sv", [])], dtype=np.int64)
    except (ValueError, OverflowError) as exc:  # (OverflowError: a label of inf / 1e400, a count past int64)
        raise ValueError(f"{path}: bad number in the rho / label / nr_sv lines of the header.") from exc
    n_pairs = k * (k - 1) // 2
    if k == 1 and one_class and len(labels) == 1 and total == 0:
        return {"path": path, "k": 1, "labels": labels, "prob": True if "probA" in header and "probB" in header
                else None}
    if k < 1:
        raise ValueError(f"{path}: nr_class {k}: a model has at least one class.")
    if k < 2:
        raise ValueError(f"{path}: nr_class {k}: LIBSVM writes such a model when its training file holds a single "
                         "label (it predicts that label for every point); gpusvm's SVC needs at least two classes.")
    if rho.shape[0] != n_pairs or len(labels) != k or nr_sv.shape[0] != k:
        raise ValueError(f"{path}: header inconsistent: nr_class {k} needs {n_pairs} rho values, {k} labels and "
                         f"{k} nr_sv counts; got {rho.shape[0]}, {len(labels)}, {nr_sv.shape[0]}.")
    if len(set(labels)) != k:
        raise ValueError(f"{path}: repeated class labels {labels}.")
    if np.any(nr_sv < 0):
        raise ValueError(f"{path}: negative support vector count in 'nr_sv {' '.join(map(str, nr_sv))}'.")
    if int(nr_sv.sum()) != total or len(body) != total:
        raise ValueError(f"{path}: total_sv {total}, nr_sv sums to {int(nr_sv.sum())}, and the file has "
                         f"{len(body)} support vector lines: they must agree.")
    prob = None
    if "probA" in header or "probB" in header:
        try:
            prob = (np.array([float(v) for v in header.get("probA", [])]),
                    np.array([float(v) for v in header.get("probB", [])]))
        except ValueError as exc:
            raise ValueError(f"{path}: bad number in the probA / probB lines of the header.") from exc
        if prob[0].shape[0] != n_pairs or prob[1].shape[0] != n_pairs:
            raise ValueError(f"{path}: header inconsistent: nr_class {k} needs {n_pairs} probA and probB values; "
                             f"got {prob[0].shape[0]} and {prob[1].shape[0]}.")

    sv_coef = np.empty((k - 1, total))
    rows, cols, vals = [], [], []
    for i, tok in enumerate(body):
        if len(tok) < k - 1:
            raise ValueError(f"{path}: support vector line {i + 1} has fewer than {k - 1} coefficients{file_line(i)}.")
        try:
            sv_coef[:, i] = [float(t) for t in tok[:k - 1]]
            for t in tok[k - 1:]:
                j, _, v = t.partition(":")
                rows.append(i)
                cols.append(int(j))
                vals.append(float(v))
        except ValueError as exc:
            raise ValueError(f"{path}: cannot parse support vector line {i + 1}{file_line(i)}.") from exc
    # float() reads "nan", "inf" and 1e400 (as LIBSVM's strtod), and such a model loaded silently: its decision
    # values were all NaN, and predict gave the first class for every point
    for key, values in (("rho", rho), ("probA", None if prob is None else prob[0]),
                        ("probB", None if prob is None else prob[1])):
        if values is not None and not np.all(np.isfinite(values)):
            raise ValueError(f"{path}: the '{key}' line of the model header has a value that is not finite: "
                             f"{' '.join(header[key])!r}.")
    bad = ~np.isfinite(sv_coef).all(axis=0)
    vals_bad = ~np.isfinite(np.asarray(vals, dtype=np.float64))
    if vals_bad.any():
        bad[np.asarray(rows, dtype=np.int64)[vals_bad]] = True
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{path}: support vector line {i + 1} has a coefficient or feature value that is not "
                         f"finite{file_line(i)}: {' '.join(body[i])[:200]!r}.")
    try:
        cols_a = np.asarray(cols, dtype=np.int64)
    except OverflowError as exc:
        raise ValueError(f"{path}: a feature index of the support vectors is too large.") from exc
    if first_index == "auto":
        first_index = 0 if cols_a.size and cols_a.min() == 0 else 1
    cols_a -= first_index
    if cols_a.size and cols_a.min() < 0:
        raise ValueError(f"{path}: feature indices start at {first_index} here; found index "
                         f"{int(cols_a.min()) + first_index}.")
    rows_a = np.asarray(rows, dtype=np.int64)
    by_entry = np.lexsort((cols_a, rows_a))
    repeated = np.flatnonzero((np.diff(rows_a[by_entry]) == 0) & (np.diff(cols_a[by_entry]) == 0))
    if repeated.size:  # (a dense model would keep the last value, a sparse one their sum, LIBSVM neither)
        at = by_entry[repeated[0]]
        raise ValueError(f"{path}: support vector line {int(rows_a[at]) + 1} repeats feature index "
                         f"{int(cols_a[at]) + first_index}{file_line(int(rows_a[at]))}.")
    gamma, coef0 = one("gamma", float, required=kernel != "linear"), one("coef0", float, required=False)
    degree = one("degree", int, required=False)
    try:  # (the gram's own checks, which ran only at the first prediction, without the file's name)
        GramSpec(kernel, gamma=1.0 if gamma is None or kernel == "linear" else gamma,
                 coef0=0.0 if coef0 is None or kernel not in ("poly", "sigmoid") else coef0,
                 degree=3 if degree is None else degree)
    except ValueError as exc:
        raise ValueError(f"{path}: the model header's {kernel} gram is not one gpusvm computes: {exc}") from None
    return {"path": path, "kernel": kernel, "gamma": gamma, "degree": degree, "coef0": coef0,
            "k": k, "total": total, "rho": rho, "labels": labels, "nr_sv": nr_sv, "sv_coef": sv_coef, "prob": prob,
            "rows": rows_a, "cols": cols_a, "vals": np.asarray(vals),
            "width": int(cols_a.max()) + 1 if cols_a.size else 0}


def _build_model(m, n_features, device, sparse=False):
    """The fitted :class:`~gpusvm.SVC` of a :func:`_parse_model` dict, ``n_features`` wide (None: the
    largest feature index used); ``sparse``: CSR support vectors, as a sparse fit keeps them (what
    ``gpusvm predict`` uses: a dense copy of a text model's vectors takes n_SV x max index doubles)."""
    from ._backend import get_backend
    from .svc import SVC, PredictCache

    k, total, nr_sv, labels, width = m["k"], m["total"], m["nr_sv"], m["labels"], m["width"]
    n_pairs = k * (k - 1) // 2
    if n_features is None:
        n_features = max(width, 1)
    elif int(n_features) < width:
        raise ValueError(f"n_features={n_features} is smaller than the largest feature index ({width}) of the "
                         f"support vectors in {m['path']}.")
    n_features = int(n_features)
    if sparse:
        SV = sps.csr_matrix((m["vals"], (m["rows"], m["cols"])), shape=(total, n_features))
    else:
        SV = np.zeros((total, n_features))
        SV[m["rows"], m["cols"]] = m["vals"]

    # per-pair coefficients in the file's label order, then with the classes sorted
    starts = np.concatenate([[0], np.cumsum(nr_sv)])
    order = np.argsort(labels, kind="stable")  # order[new] = file position
    pair_coef, pair_b, file_prob, n_support, sv_perm = _permute_classes(
        _rows_to_pairs(m["sv_coef"], starts, k), -m["rho"], m["prob"], nr_sv, order)
    prob_a, prob_b = file_prob if file_prob is not None else ([], [])
    classes = np.asarray(sorted(labels))
    n_support = n_support.astype(np.int32)
    SV = SV[sv_perm]

    # scikit-learn's public dual_coef_ / intercept_ from the sorted-order pairs
    dual = _pairs_to_rows(pair_coef, np.concatenate([[0], np.cumsum(n_support)]), k)
    intercept = pair_b.copy()
    if k == 2:
        dual, intercept = -dual, -intercept

    gamma, degree, coef0 = m["gamma"], m["degree"], m["coef0"]
    est = SVC(C=1.0, kernel=m["kernel"], degree=3 if degree is None else degree,
              gamma="scale" if gamma is None else gamma, coef0=0.0 if coef0 is None else coef0,
              probability=file_prob is not None, device=device)
    be = get_backend(device)
    est._gamma = float(gamma) if gamma is not None else 1.0
    est._be_name = be.device_key
    est.classes_ = classes
    est.class_weight_ = np.ones(k)
    est.support_ = be.asarray(np.full(total, -1, dtype=np.int32))
    est.support_vectors_ = be.asarray(SV)
    est.dual_coef_ = be.asarray(dual)
    est.intercept_ = be.asarray(intercept)
    est._pair_coef = be.asarray(pair_coef)
    est._pair_b = be.asarray(pair_b)
    est.n_support_ = n_support
    est.n_iter_ = np.zeros(n_pairs, dtype=np.int32)
    est.objective_ = np.full(n_pairs, np.nan)
    est.fit_status_ = 0
    est.probA_ = np.array(prob_a, dtype=np.float64)
    est.probB_ = np.array(prob_b, dtype=np.float64)
    if np.any(order != np.arange(k)):
        # the file's classes, as sorted indices: LIBSVM votes and couples in this order, and a save keeps it
        est._label_order = np.argsort(order)
    est.shape_fit_ = (0, n_features)
    est.n_features_in_ = n_features
    est._predict_cache = PredictCache()  # as a fit leaves it (gpusvm.svc.predict_operands)
    return est

"""One-vs-one outputs shared by the kernel estimators (SVC, DCSVC): decision values in scikit-learn's
shapes and LIBSVM's vote.

``dec`` holds one column per class pair (a, b), a < b in ``classes_`` order, in LIBSVM's sign (> 0
favours class a).
"""

from __future__ import annotations

import numpy as np

from ._validation import to_input_library, to_numpy


def ovo_pair_rows(keep, y_idx, classes):
    """The binary problems of one-vs-one training: ``[(a, b, idx, yb), ...]`` for the class pairs a < b in
    LIBSVM's order, ``idx`` the rows (of ``keep``, the samples with positive weight) of class a then of
    class b, ``yb`` their labels (+1 for class a, as LIBSVM). Raises when a pair lacks one of its classes."""
    y_keep = y_idx[keep]
    by_class = [keep[y_keep == c] for c in range(len(classes))]  # once, not once per pair (O(n) each)
    out = []
    for a in range(len(classes)):
        for b in range(a + 1, len(classes)):
            if by_class[a].shape[0] == 0 or by_class[b].shape[0] == 0:
                raise ValueError(f"After dropping zero-weight samples, classes {classes[a]!r} and {classes[b]!r} "
                                 "do not both have samples with positive weight.")
            idx = np.concatenate([by_class[a], by_class[b]])
            out.append((a, b, idx, np.where(y_idx[idx] == a, 1.0, -1.0)))
    return out


def ovo_decision_function(dec, n_classes, shape, lib):
    """scikit-learn's decision_function from the pair values: (n,) for two classes (> 0 means
    ``classes_[1]``), else (n, n_classes) for ``shape="ovr"`` or the pair values for "ovo"; returned in
    the input's array library ``lib``."""
    if n_classes == 2:
        return to_input_library(-dec[:, 0], lib)
    if shape == "ovr":
        from sklearn.utils.multiclass import _ovr_decision_function

        d = to_numpy(dec)
        return to_input_library(_ovr_decision_function(d < 0, -d, n_classes), lib)
    return to_input_library(dec, lib)


def ovo_predict(dec, classes, lib):
    """LIBSVM's one-vs-one vote (ties go to the lower class index), in the input's array library."""
    d = to_numpy(dec)
    k = len(classes)
    votes = np.zeros((d.shape[0], k), dtype=np.int64)
    p = 0
    for a in range(k):
        for b in range(a + 1, k):
            pos = d[:, p] > 0
            votes[:, a] += pos
            votes[:, b] += ~pos
            p += 1
    return to_input_library(classes[np.argmax(votes, axis=1)], lib)

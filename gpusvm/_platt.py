"""Probability estimates of the one-vs-one kernel SVM, as LIBSVM computes them.

* Platt scaling per class pair: P(first class of the pair | f) = 1 / (1 + exp(A f + B)), with A and B
  fitted to cross-validated decision values by the Newton method with backtracking of Lin, Lin and Weng
  ("A note on Platt's probabilistic outputs for support vector machines", Machine Learning 68, 2007),
  with Platt's regularised targets (N+ + 1) / (N+ + 2) and 1 / (N- + 2);
* more than two classes: the pairwise probabilities r_ij are coupled by the second method of Wu, Lin
  and Weng ("Probability estimates for multi-class classification by pairwise coupling", JMLR 5, 2004),
  the fixed-point iteration LIBSVM runs, here vectorized over the samples (each sample stops on its own
  test, as in LIBSVM).

Host (NumPy) code: these are O(n k^2) operations on decision values, not on the data.
"""

from __future__ import annotations

import warnings

import numpy as np

_MIN_PROB = 1e-7  # LIBSVM clips the pairwise probabilities to [1e-7, 1 - 1e-7]


def _nll(f, t, A, B):
    """Negative log-likelihood of targets t under 1 / (1 + exp(A f + B)), written without overflow."""
    z = f * A + B
    soft = np.log1p(np.exp(-np.abs(z)))
    return float(np.sum(np.where(z >= 0, t * z + soft, (t - 1.0) * z + soft)))


def sigmoid_train(f, y, *, max_iter=100, min_step=1e-10, sigma=1e-12, eps=1e-5):
    """Fit (A, B) of P(y = +1 | f) = 1 / (1 + exp(A f + B)) to decision values ``f`` and labels ``y``
    in {-1, +1} (Lin, Lin and Weng's Newton method, LIBSVM's ``sigmoid_train``)."""
    f = np.asarray(f, dtype=np.float64)
    pos = np.asarray(y) > 0
    prior1 = float(np.count_nonzero(pos))
    prior0 = float(pos.shape[0]) - prior1
    t = np.where(pos, (prior1 + 1.0) / (prior1 + 2.0), 1.0 / (prior0 + 2.0))
    A, B = 0.0, float(np.log((prior0 + 1.0) / (prior1 + 1.0)))
    fval = _nll(f, t, A, B)
    for _ in range(max_iter):
        p = sigmoid_predict(f, A, B)  # P(+1 | f)
        q = 1.0 - p
        d2 = p * q
        h11 = sigma + float(np.sum(f * f * d2))
        h22 = sigma + float(np.sum(d2))
        h21 = float(np.sum(f * d2))
        d1 = t - p
        g1 = float(np.sum(f * d1))
        g2 = float(np.sum(d1))
        if abs(g1) < eps and abs(g2) < eps:
            break
        det = h11 * h22 - h21 * h21
        dA = -(h22 * g1 - h21 * g2) / det
        dB = -(-h21 * g1 + h11 * g2) / det
        gd = g1 * dA + g2 * dB
        step = 1.0
        while step >= min_step:
            nA, nB = A + step * dA, B + step * dB
            nf = _nll(f, t, nA, nB)
            if nf < fval + 1e-4 * step * gd:
                A, B, fval = nA, nB, nf
                break
            step /= 2.0
        if step < min_step:
            warnings.warn("Platt scaling: the line search failed; the sigmoid fit may be inaccurate.",
                          RuntimeWarning, stacklevel=2)
            break
    else:
        warnings.warn(f"Platt scaling: reached max_iter={max_iter}.", RuntimeWarning, stacklevel=2)
    return A, B


def sigmoid_predict(f, A, B):
    """P(first class of the pair | f) = 1 / (1 + exp(A f + B)), without overflow."""
    z = np.asarray(f, dtype=np.float64) * A + B
    e = np.exp(-np.abs(z))
    return np.where(z >= 0, e / (1.0 + e), 1.0 / (1.0 + e))


def pairwise_coupling(r):
    """Class probabilities (n, k) from pairwise probabilities ``r`` (n, k, k), r[:, i, j] = P(i | i or j)
    (Wu, Lin and Weng's method 2, LIBSVM's ``multiclass_probability``)."""
    n, k, _ = r.shape
    Q = np.empty((n, k, k))
    for t in range(k):
        Q[:, t, t] = 0.0
        for j in range(k):
            if j != t:
                Q[:, t, t] += r[:, j, t] ** 2
                Q[:, t, j] = -r[:, j, t] * r[:, t, j]
    p = np.full((n, k), 1.0 / k)
    eps = 0.005 / k
    active = np.ones(n, dtype=bool)
    for _ in range(max(100, k)):
        Qp = np.einsum("ntj,nj->nt", Q, p)
        pQp = np.einsum("nt,nt->n", p, Qp)
        active &= np.max(np.abs(Qp - pQp[:, None]), axis=1) >= eps
        if not active.any():
            break
        a = np.flatnonzero(active)
        pa, Qpa, pQpa, Qa = p[a], Qp[a], pQp[a], Q[a]
        for t in range(k):
            diff = (-Qpa[:, t] + pQpa) / Qa[:, t, t]
            pa[:, t] += diff
            s = 1.0 + diff
            pQpa = (pQpa + diff * (diff * Qa[:, t, t] + 2.0 * Qpa[:, t])) / (s * s)
            Qpa = (Qpa + diff[:, None] * Qa[:, t, :]) / s[:, None]
            pa /= s[:, None]
        p[a] = pa
    return p


# rows of ovo_probabilities coupled at once (each row's coupling is independent of the others)
COUPLING_BLOCK_ROWS = 8192


def ovo_probabilities(dec, prob_a, prob_b, order=None):
    """Class probabilities (n, k) from one-vs-one decision values ``dec`` (n, n_pairs; > 0 favours the
    first class of the pair) and the pairs' sigmoids, as LIBSVM's ``svm_predict_probability``.

    ``order``: the class indices in the order the coupling visits them (None: 0..k-1). LIBSVM's coupling
    stops at a tolerance (0.005 / k), so its result depends on that order by up to about 1e-3; a model
    loaded from a LIBSVM file whose labels are not sorted couples in the file's order, as LIBSVM does.
    """
    dec = np.asarray(dec, dtype=np.float64)
    n, n_pairs = dec.shape
    k = int(round((1 + np.sqrt(1 + 8 * n_pairs)) / 2))
    rp = np.clip(sigmoid_predict(dec, np.asarray(prob_a)[None, :], np.asarray(prob_b)[None, :]),
                 _MIN_PROB, 1.0 - _MIN_PROB)
    if k == 2:
        return np.stack([rp[:, 0], 1.0 - rp[:, 0]], axis=1)
    out = np.empty((n, k))
    order = None if order is None else np.asarray(order)
    # rows are coupled independently, a block at a time: the coupling's (rows, k, k) arrays (five or so at
    # once) stay bounded, where 300,000 rows of 10 classes took 1.3 GB for 11 MB of input
    for s0 in range(0, n, COUPLING_BLOCK_ROWS):
        s1 = min(n, s0 + COUPLING_BLOCK_ROWS)
        r = np.zeros((s1 - s0, k, k))
        p = 0
        for i in range(k):
            for j in range(i + 1, k):
                r[:, i, j] = rp[s0:s1, p]
                r[:, j, i] = 1.0 - rp[s0:s1, p]
                p += 1
        if order is None:
            out[s0:s1] = pairwise_coupling(r)
        else:
            out[s0:s1, order] = pairwise_coupling(r[:, order][:, :, order])
    return out

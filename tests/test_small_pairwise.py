"""solve_small_pairwise (gpusvm._solvers.smo): SVC's small class pairs solved by one compiled call on the CPU.

Every result must be the one of the pair solved alone by the pair-at-a-time op (``solve_smo(rows=...)``),
to the bit: alpha, gradient, bias, objective, steps, and the float32 / float64 decision of the Gram values
(:func:`gpusvm._solvers._common.resolve_gram_dtype`)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_digits, make_blobs

import gpusvm.svc as svc_module
from gpusvm import GramSpec, get_backend
from gpusvm._backend.ops.gram_errors import float32_too_coarse_many
from gpusvm._backend.ops.smo_pairwise import _bias_of, _pairwise_sum, _prepare, _row_sqnorms
from gpusvm._ovo import ovo_pair_rows
from gpusvm._solvers._common import FLOAT32_MAX_CURVATURE_ERROR, bias, float32_gram_errors, resolve_gram_dtype
from gpusvm._solvers.smo import solve_pa_smo, solve_smo, solve_small_pairwise
from gpusvm.svc import SVC

CPU = get_backend("cpu")


def _flat(problems):
    rows = np.concatenate([r for r, _, _ in problems])
    starts = np.concatenate([[0], np.cumsum([r.shape[0] for r, _, _ in problems])]).astype(np.int64)
    return rows, starts


def _shifted_classes(dtype=np.float64, n_classes=12, per_class=30, seed=0):
    """Classes shifted from the origin by 1 to 3,000 (class c by 10 ** (c / 3.3)): the float32 Gram values of
    some pairs perturb their curvatures beyond the threshold, of others not."""
    rng = np.random.RandomState(seed)
    X = np.concatenate([rng.normal(size=(per_class, 4)) + 10 ** (c / 3.3) for c in range(n_classes)])
    y = np.repeat(np.arange(n_classes), per_class)
    return X.astype(dtype), y


def _problems(y, sizes=None, seed=0):
    """One-vs-one problems of labels ``y`` (rows, labels, bounds), some cut to the sizes in ``sizes``."""
    rng = np.random.RandomState(seed)
    out = []
    for k, (_, _, idx, yb) in enumerate(ovo_pair_rows(np.arange(y.shape[0]), y, np.unique(y))):
        if sizes is not None:
            m = sizes[k % len(sizes)]
            idx, yb = idx[:m], yb[:m]
        out.append((idx, yb, rng.uniform(0.5, 2.0, idx.shape[0])))
    return out


def test_pairwise_sum_is_numpys_sum():
    rng = np.random.RandomState(0)
    for n in [*range(300), 511, 1000, 1024, 2047, 4099, 8191, 8193, 20001]:
        a = rng.standard_normal(n) * np.exp(rng.uniform(-30, 30, n))
        buf = np.concatenate([rng.standard_normal(3), a])
        assert np.sum(a) == 0.0 + _pairwise_sum(a, 0, n)
        assert np.sum(a) == 0.0 + _pairwise_sum(buf, 3, n)


def test_bias_of_is_bias():
    rng = np.random.RandomState(1)
    for trial in range(300):
        n = int(rng.randint(1, 40))
        y = np.where(rng.rand(n) < 0.5, 1.0, -1.0)
        C = rng.uniform(0.1, 3.0, n)
        C[rng.rand(n) < 0.1] = 0.0
        alpha = np.where(rng.rand(n) < 0.5, 0.0, C)
        if trial % 3 == 0:  # some free
            free = rng.rand(n) < 0.3
            alpha[free] = C[free] * rng.uniform(0.0, 1.0, int(free.sum()))
        if trial % 5 == 0:  # a hair below C: at the bound
            alpha[0] = C[0] * (1 - 1e-14)
        G = rng.standard_normal(n)
        assert bias(CPU, y, alpha, G, C) == _bias_of(y, alpha, G, C)


def test_bias_of_is_bias_to_the_sign_of_zero():
    """No free variable and ends of the interval that are zeros of both signs (a sigmoid pair of 25 small
    classes, float32 Gram values): np.min returned -0.0 of the ub candidates (0.0, -0.0), the compiled loop the
    first (0.0), so the compiled pairs' intercept was -0.0 and the pair solved alone's 0.0. Both give +0.0 ends."""
    y = np.array([1.0, 1.0, -1.0, -1.0, -1.0])
    alpha = np.array([0.0, 0.5, 0.3, 0.0, 0.2])
    C = np.array([0.1, 0.5, 0.3, 0.1, 0.2])
    G = np.array([0.0, -1.1920929e-07, 0.0, 0.0, -4.76837158e-08])
    b, b_op = bias(CPU, y, alpha, G, C), _bias_of(y, alpha, G, C)
    assert b == b_op == 0.0 and np.signbit(b) == np.signbit(b_op)
    for ends in ([0.0, -0.0], [-0.0, 0.0], [-0.0, -0.0]):  # (the ub candidates in either order; lb a zero)
        yv = np.array([1.0, -1.0, -1.0])
        a = np.array([0.0, 1.0, 0.0])
        Gv = np.array(ends[:1] + [-ends[1], -0.0])
        b, b_op = bias(CPU, yv, a, Gv, np.ones(3)), _bias_of(yv, a, Gv, np.ones(3))
        assert np.signbit(b) == np.signbit(b_op)


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_float32_decisions_together_are_resolve_gram_dtypes(kernel, dtype):
    X, y = _shifted_classes(dtype, per_class=60)
    sq = CPU.row_sqnorms(X, np.float64)
    gamma = 1.0 / (X.shape[1] * float(np.var(X.astype(np.float64))))
    spec = GramSpec(kernel, gamma=gamma * 1e-3)
    # pairs of all sizes around the sample's 64 rows, down to one row
    problems = _problems(y, sizes=[120, 1, 2, 3, 17, 33, 60, 63, 64, 65, 100])
    rows, starts = _flat(problems)
    got = float32_too_coarse_many(X, sq, spec, rows, starts, FLOAT32_MAX_CURVATURE_ERROR)
    want = np.array([resolve_gram_dtype(CPU, X, spec, sq[r], "float32", computed_in="float64", rows=r) == "float64"
                     for r, _, _ in problems])
    assert got.tolist() == want.tolist()
    assert 0 < want.sum() < want.shape[0]  # both decisions are taken
    # at, just below and just above each problem's own measure: the same values to the last bit
    checked = 0
    for k in range(0, len(problems), 5):
        r = problems[k][0]
        pair, _ = float32_gram_errors(CPU, X, spec, sq[r], rows=r)
        if not np.isfinite(pair) or pair == 0.0:
            continue
        for limit in (pair, np.nextafter(pair, -np.inf), np.nextafter(pair, np.inf)):
            assert float32_too_coarse_many(X, sq, spec, rows, starts, limit)[k] == (pair > limit)
        checked += 1
    assert checked >= 8


def test_rbf_screen_answers_only_where_it_is_certain():
    """_rbf_screen's certain answer (float32) is the exact one (_pair_median_above of the values)
    wherever it is given: samples of tight and loose clusters, near the origin and far from it, at gammas
    from 1e-4 to 1e4 (both answers, and the exact answer float64 next to certain ones)."""
    from gpusvm._backend.ops.gram_errors import (RBF_SCREEN_MIN_LIMIT, _pair_median_above, _rbf_screen,
                                                 _rbf_upper_args, _upper_many)

    rng = np.random.default_rng(7)
    counts = {"sure": 0, "unsure_f32": 0, "f64": 0}
    for _ in range(600):
        m = int(rng.choice([2, 3, 5, 17, 40, 64]))
        labels = rng.integers(0, int(rng.integers(1, 5)), m)
        S = rng.normal(size=(4, 3))[labels] + rng.normal(size=(m, 3)) * 10 ** rng.uniform(-5, 0)
        S = S + float(rng.choice([0.0, 100.0, 1e4]))
        gamma = 10 ** rng.uniform(-4, 4)
        sq = np.einsum("ij,ij->i", S, S)
        prod = S @ S.T
        args = _upper_many(prod[None], sq[None], np.float64(-gamma))
        assert np.array_equal(args, _rbf_upper_args(prod, sq, np.float64(-gamma)), equal_nan=True)
        sure = _rbf_screen(prod[None], sq[None], np.float64(-gamma))
        exact = [_pair_median_above(np.exp(args), m, limit) for limit in (RBF_SCREEN_MIN_LIMIT, 1e-3)]
        assert not (sure[0] and any(exact))
        counts["sure" if sure[0] else "f64" if exact[0] else "unsure_f32"] += 1
    assert min(counts.values()) >= 20, counts


def _assert_same(res, ref):
    assert np.array_equal(res.alpha, ref.alpha)
    assert np.array_equal(res.gradient, ref.gradient)
    assert res.b == ref.b
    assert res.objective == ref.objective
    assert res.n_iter == ref.n_iter
    assert res.converged == ref.converged
    assert res.info["gram_dtype"] == ref.info["gram_dtype"]


@pytest.mark.parametrize("solver", ["smo", "pa-smo"])
@pytest.mark.parametrize("kernel", ["rbf", "linear", "poly", "sigmoid"])
def test_small_pairwise_is_the_pair_solved_alone(solver, kernel):
    X, y = load_digits(return_X_y=True)
    X, y = X[:600] / 16.0, y[:600]
    Xs, ys = _shifted_classes(n_classes=6, per_class=25)
    fn = solve_smo if solver == "smo" else solve_pa_smo
    spec = GramSpec(kernel, gamma=0.02 if kernel != "sigmoid" else 0.002, coef0=0.5, degree=3)
    for XX, yy, kw in [(X, y, {}), (X.astype(np.float32), y, {"shrinking": False}), (X, y, {"max_iter": 15}),
                       (X, y, {"gram_dtype": "float64"}), (Xs, ys, {}), (X, y, {"pa_recent": 3, "tol": 1e-5}),
                       (np.asfortranarray(Xs[:, :3] * 7.0), ys, {}), (np.asfortranarray(X[:, :7]), y, {})]:
        sq = CPU.row_sqnorms(XX, np.float64)
        problems = _problems(yy, sizes=[None, 1, 2, 5, 40] if XX is X else None)
        problems = [(r, v, c) for r, v, c in problems if r.shape[0] > 0]
        opts = dict(tol=kw.get("tol", 1e-3), max_iter=kw.get("max_iter", -1), cache_bytes=2**20,
                    gram_dtype=kw.get("gram_dtype", "float32"), shrinking=kw.get("shrinking", True),
                    pa_recent=kw.get("pa_recent", 2))
        got = solve_small_pairwise(solver, CPU, XX, sq, spec, problems, **opts)
        for (r, v, c), res in zip(problems, got):
            _assert_same(res, fn(CPU, XX, v, spec, c, x_sqnorm=sq[r], rows=r, **opts))


def test_row_sqnorms_are_those_the_op_prepares():
    """The squared norms solve_small_pairwise gives its problems are _prepare's for their rows, whatever X's
    layout (be.row_sqnorms over a Fortran-ordered X differs in the last bit)."""
    rng = np.random.default_rng(2)
    for d in (1, 3, 7, 10, 64, 130):
        X = rng.normal(size=(300, d)) * 10 ** rng.uniform(-3, 3, d)
        for XX in (X, np.asfortranarray(X), X.astype(np.float32), np.asfortranarray(X.astype(np.float32)), X[::2]):
            rows = rng.permutation(XX.shape[0])[:97]
            assert np.array_equal(_row_sqnorms(XX)[rows], _prepare(XX, rows=rows)[5])


def _fitted(m):
    dc = m.dual_coef_
    return dict(dual_coef=dc.toarray() if sp.issparse(dc) else dc, support=m.support_, intercept=m.intercept_,
                n_iter=m.n_iter_, objective=m.objective_, n_support=m.n_support_, probA=m.probA_, probB=m.probB_)


@pytest.mark.parametrize("kw, fit_kw", [
    ({}, {}), ({"solver": "pa-smo", "kernel": "poly"}, {}), ({"class_weight": "balanced", "n_jobs": 2}, {}),
    ({"kernel": "linear"}, {"sample_weight": "zeros"}), ({"probability": True, "random_state": 0}, {}),
    ({"kernel": "sigmoid", "gamma": 1e-3}, {})])
def test_svc_models_are_those_of_the_pairs_solved_one_by_one(kw, fit_kw, monkeypatch):
    X, y = make_blobs(n_samples=600, centers=20, n_features=7, random_state=0, cluster_std=3.0)
    X = np.asfortranarray(np.concatenate([X, X[:50]]))  # copies (merged per pair); Fortran order
    y = np.concatenate([y, y[:50]])
    if fit_kw.get("sample_weight") == "zeros":
        w = np.random.RandomState(0).uniform(0.2, 2.0, y.shape[0])
        w[::7] = 0.0
        fit_kw = {"sample_weight": w}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        new = SVC(device="cpu", **kw).fit(X, y, **fit_kw)
        calls = []
        monkeypatch.setattr(svc_module, "solve_small_pairwise", lambda *a, **k: calls.append(1))
        monkeypatch.setattr(svc_module, "small_pairwise_applies", lambda *a, **k: False)
        old = SVC(device="cpu", **kw).fit(X, y, **fit_kw)
    assert not calls
    a, b = _fitted(new), _fitted(old)
    for k in a:
        assert np.array_equal(a[k], b[k]), k
    Xt = X[::3] + 0.1
    assert np.array_equal(new.decision_function(Xt), old.decision_function(Xt))


def test_svc_uses_the_compiled_pairs_only_where_they_apply(monkeypatch):
    """Dense rows on the CPU: yes; CSR, precomputed, verbose: no (the pairs one by one)."""
    calls = []
    real = svc_module.solve_small_pairwise

    def spy(*a, **k):
        calls.append(len(a[5]))
        return real(*a, **k)

    monkeypatch.setattr(svc_module, "solve_small_pairwise", spy)
    X, y = make_blobs(n_samples=120, centers=4, n_features=3, random_state=0)
    SVC(device="cpu").fit(X, y)
    assert calls == [6]
    SVC(device="cpu").fit(sp.csr_matrix(X), y)
    SVC(device="cpu", kernel="precomputed").fit(X @ X.T, y)
    SVC(device="cpu", decomposition="batched").fit(X, y)
    assert calls == [6]
    monkeypatch.setattr(svc_module, "SMALL_PAIRWISE_MAX_ROWS", 59)  # (pairs of 60 rows: one by one)
    SVC(device="cpu").fit(X, y)
    assert calls == [6]


def test_cache_budget_beyond_int64(monkeypatch):
    """cache_size of 2**43 MB or more: the compiled pairs' budget (bytes) no longer fits the compiled call's int64
    (OverflowError, while the pairs one by one fit): capped, it holds all rows as the op's does, the same model."""
    X, y = make_blobs(n_samples=60, centers=4, n_features=3, random_state=0)
    new = SVC(device="cpu", cache_size=1e14).fit(X, y)
    monkeypatch.setattr(svc_module, "small_pairwise_applies", lambda *a, **k: False)
    old = SVC(device="cpu", cache_size=1e14).fit(X, y)
    a, b = _fitted(new), _fitted(old)
    for k in a:
        assert np.array_equal(a[k], b[k]), k

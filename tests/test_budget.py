"""BudgetSVC (BSGD with multi-merge budget maintenance): the merge search against a scalar reference
and a feature-space check, the compiled loop against a plain-Python reference of the same rules,
the objective and decisions against scikit-learn's SVC (LIBSVM), CPU/GPU agreement, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.svm import SVC as SkSVC
from sklearn.utils.estimator_checks import parametrize_with_checks

from gpusvm import BudgetSVC, GramSpec, get_backend
from gpusvm.datasets import load_bundled, make_chessboard

from conftest import load_subset, traced_peak

CPU = get_backend("cpu")
GOLD = (math.sqrt(5) - 1) / 2


# ---- plain-Python references ------------------------------------------------------------------
def _ref_golden(ai, aj, gd2, n_gss=10):
    """Scalar golden-section search for max_h s(h), written independently of the op: bracket [0, 1],
    ties move it left, h = the final midpoint unless an endpoint (h = 1: z = x_i, h = 0: z = x_j) is
    better."""
    m = ai / (ai + aj)

    def s(h):
        u = 1 - h
        return m * math.exp(-gd2 * u * u) + (1 - m) * math.exp(-gd2 * h * h)

    lo, hi = 0.0, 1.0
    c, d = hi - GOLD * (hi - lo), lo + GOLD * (hi - lo)
    fc, fd = s(c), s(d)
    for _ in range(n_gss):
        if fc >= fd:
            hi, d, fd = d, c, fc
            c = hi - GOLD * (hi - lo)
            fc = s(c)
        else:
            lo, c, fc = c, d, fd
            d = lo + GOLD * (hi - lo)
            fd = s(d)
    h = 0.5 * (lo + hi)
    best = s(h)
    for he in (1.0, 0.0):
        if s(he) > best:
            h, best = he, s(he)
    az = (ai + aj) * best
    # ai^2 + aj^2 + 2 ai aj kappa - az^2, written as the op writes it (no cancellation), so that
    # near-ties between candidates fall the same way
    u = 1.0 - h
    deg = (-(ai * ai * math.expm1(-2.0 * gd2 * u * u) + aj * aj * math.expm1(-2.0 * gd2 * h * h))
           + 2.0 * ai * aj * math.exp(-gd2 * (u * u + h * h)) * math.expm1(-2.0 * gd2 * h * u))
    return h, az, max(0.0, deg)


def _sqdist(a, b):
    """Squared distance with the op's own summation order (its SIMD loop), so that near-ties in the
    golden-section comparisons fall the same way in the reference as in the compiled loop."""
    from gpusvm._backend.ops.merge import sqdist

    return float(sqdist(np.ascontiguousarray(a, dtype=np.float64), np.ascontiguousarray(b, dtype=np.float64)))


def _ref_bsgd(X, y, order, lam, gamma, budget, n_merge, merge, n_gss=10, n_gd=10, weight=None):
    """Pegasos + budget maintenance exactly as documented in gpusvm._backend.ops.bsgd, in plain NumPy;
    ``weight``: per-sample weights of the hinge terms (a violation adds y_i w_i / (lambda t); w_i = 0
    never adds a support vector)."""
    weight = np.ones(len(y)) if weight is None else weight
    sv, alpha = [], []
    for s, i in enumerate(order):
        t = s + 1
        f = sum(a * math.exp(-gamma * float(((v - X[i]) ** 2).sum())) for v, a in zip(sv, alpha))
        alpha = [a * (1 - 1 / t) for a in alpha]
        if weight[i] > 0 and y[i] * f < 1:
            sv.append(X[i].copy())
            alpha.append(y[i] * weight[i] / (lam * t))
        if len(sv) > budget:
            a_abs = [abs(a) for a in alpha]
            first = int(np.argmin(a_abs))
            degs = []
            for j in range(len(sv)):
                if j == first or alpha[j] * alpha[first] <= 0:
                    degs.append(np.inf)
                else:
                    d2 = _sqdist(sv[first], sv[j])
                    degs.append(_ref_golden(alpha[first], alpha[j], gamma * d2, n_gss)[2])
            partners = [int(j) for j in np.argsort(degs, kind="stable")[: n_merge - 1] if np.isfinite(degs[j])]
            if merge == "cascade-light":  # the best partners, but at most one heavy (|alpha| > 1.5 |alpha_first|)
                from gpusvm._backend.ops.bsgd import HEAVY_RATIO

                def heavy(j):
                    return abs(alpha[j]) > HEAVY_RATIO * abs(alpha[first])

                partners = []
                for j in np.argsort(degs, kind="stable"):
                    if len(partners) == n_merge - 1 or not np.isfinite(degs[j]):
                        break
                    if not (heavy(j) and any(heavy(p) for p in partners)):
                        partners.append(int(j))
            if not partners:
                sv[first], alpha[first] = sv[-1], alpha[-1]
                sv.pop(), alpha.pop()
                continue
            z, az = sv[first].copy(), alpha[first]
            if merge == "greedy":  # the next partner re-chosen against z among the shortlist
                from gpusvm._backend.ops.bsgd import GREEDY_SHORTLIST

                finite = [int(j) for j in np.argsort(degs, kind="stable") if np.isfinite(degs[j])]
                short = finite[:min(len(sv) - 1, GREEDY_SHORTLIST * (n_merge - 1))]
                partners = []
                for _ in range(n_merge - 1):
                    best, best_deg = None, np.inf
                    for c in short:
                        if c not in partners:
                            h, az_c, dg = _ref_golden(az, alpha[c], gamma * _sqdist(z, sv[c]), n_gss)
                            if dg < best_deg:
                                best, best_deg, bh, baz = c, dg, h, az_c
                    if best is None:
                        break
                    partners.append(best)
                    z, az = bh * z + (1 - bh) * sv[best], baz
            elif merge in ("cascade", "cascade-light"):
                for p in partners:
                    d2 = _sqdist(z, sv[p])
                    h, az, _ = _ref_golden(az, alpha[p], gamma * d2, n_gss)
                    z = h * z + (1 - h) * sv[p]
            else:
                pts = [first] + partners
                A = np.array([alpha[p] for p in pts])
                P = np.array([sv[p] for p in pts])
                z = A @ P / A.sum()
                for _ in range(n_gd):
                    w = A * np.exp(-gamma * ((P - z) ** 2).sum(1))
                    if w.sum() == 0:  # all underflowed: the same step with weights relative to the largest
                        e = -gamma * ((P - z) ** 2).sum(1)
                        w = A * np.exp(e - e.max())
                    z = w @ P / w.sum()
                e = -gamma * ((P - z) ** 2).sum(1)
                az = float((A * np.exp(e)).sum()) or float((A * np.exp(e - e.max())).sum() * np.exp(e.max()))
            sv[first], alpha[first] = z, az
            for p in sorted(partners, reverse=True):
                sv[p], alpha[p] = sv[-1], alpha[-1]
                sv.pop(), alpha.pop()
    return np.array(sv), np.array(alpha)


def _primal(est, X, y, C):
    """C-SVC primal objective 1/2 ||w||^2 + C sum hinge (bias from the model) for a binary model."""
    spec = GramSpec("rbf", est._gamma if hasattr(est, "_gamma") else est.gamma)
    sv = est.support_vectors_
    a = est.dual_coef_[0]
    w2 = float(a @ CPU.gram(sv, None, spec) @ a)
    yy = np.where(y == est.classes_[1], 1.0, -1.0)
    f = est.decision_function(X)
    return 0.5 * w2 + C * np.maximum(0, 1 - yy * f).sum()


def _random_model(n=300, d=5, seed=0):
    rng = np.random.default_rng(seed)
    sv = rng.normal(size=(n, d))
    alpha = rng.normal(size=n) * rng.random(n)
    return sv, alpha


# ---- the merge search --------------------------------------------------------------------------
@pytest.mark.parametrize("gamma", [0.05, 0.5, 3.0])
def test_merge_search_matches_scalar_golden_section(gamma):
    sv, alpha = _random_model(seed=1)
    first = int(np.argmin(np.abs(alpha)))
    deg, h = CPU.merge_search(sv, alpha, len(alpha), first, gamma)
    for j in range(len(alpha)):
        if j == first or alpha[j] * alpha[first] <= 0:
            assert np.isinf(deg[j])
            continue
        d2 = _sqdist(sv[first], sv[j])
        hr, _, dr = _ref_golden(alpha[first], alpha[j], gamma * d2)
        assert h[j] == pytest.approx(hr, abs=1e-12)
        assert deg[j] == pytest.approx(dr, rel=1e-10, abs=1e-14)
    assert np.isfinite(deg).sum() == ((alpha * alpha[first] > 0).sum() - 1)


def test_merge_degradation_is_the_feature_space_distance():
    """||a_i phi(x_i) + a_j phi(x_j) - a_z phi(z)||^2 from explicit gram values, z from the search's h,
    and the golden-section h is (near) the best h on a fine grid for unimodal cases."""
    sv, alpha = _random_model(n=60, d=3, seed=2)
    alpha = np.abs(alpha) + 0.1
    gamma = 0.2
    spec = GramSpec("rbf", gamma)
    first = 0
    deg, h = CPU.merge_search(sv, alpha, len(alpha), first, gamma)
    grid = np.linspace(0, 1, 4001)
    for j in range(1, len(alpha)):
        z = h[j] * sv[first] + (1 - h[j]) * sv[j]
        P = np.stack([sv[first], sv[j], z])
        K = CPU.gram(P, None, spec)
        ai, aj = alpha[first], alpha[j]
        az = ai * K[0, 2] + aj * K[1, 2]
        c = np.array([ai, aj, -az])
        assert deg[j] == pytest.approx(float(c @ K @ c), rel=1e-8, abs=1e-12)
        Z = grid[:, None] * sv[first] + (1 - grid[:, None]) * sv[j]
        azg = ai * np.exp(-gamma * ((Z - sv[first]) ** 2).sum(1)) + aj * np.exp(-gamma * ((Z - sv[j]) ** 2).sum(1))
        best = ai * ai + aj * aj + 2 * ai * aj * K[0, 1] - (azg ** 2).max()
        d2 = gamma * ((sv[first] - sv[j]) ** 2).sum()
        if d2 < 0.5:  # s(h) is unimodal for nearby points: golden section (bracket < 0.01) finds the best
            assert deg[j] <= best + 1e-4 * (ai + aj) ** 2
        # never worse than keeping one of the two points (h = 0 or 1): the endpoint check
        ends = [ai * ai + aj * aj + 2 * ai * aj * K[0, 1] - ((ai * K[0, 1] + aj) ** 2),
                ai * ai + aj * aj + 2 * ai * aj * K[0, 1] - ((ai + aj * K[0, 1]) ** 2)]
        assert deg[j] <= min(ends) + 1e-12 * (ai + aj) ** 2


@pytest.mark.parametrize("gamma,scale,equal", [(0.5, 1.0, False), (8.0, 1.0, False), (0.03, 255.0, False),
                                               (0.5, 1.0, True)])
def test_batched_merge_search_matches_scalar_search(gamma, scale, equal):
    """The CPU merge search runs its golden-section searches GSS_BATCH at a time with the vectorized exp
    (ops/merge.py): the same degradations, h and partners, to the bit, as one scalar golden_merge per
    candidate (libm exp), over several batches (n > 2 GSS_BATCH), with far pairs (raw 0-255 features,
    gamma d^2 in the thousands: the clamped exponentials) and with equal coefficients (m = 1/2: s is
    symmetric, so compared s values tie and the near-tie rule hands those pairs to golden_merge)."""
    from gpusvm._backend.ops.merge import GSS_BATCH, gss_workspace, merge_search_nb, merge_search_scalar_nb

    rng = np.random.default_rng(21)
    n, d = 2 * GSS_BATCH + 57, 6
    sv = np.round(rng.random((n, d)) * scale) if scale > 1 else rng.normal(size=(n, d))
    alpha = rng.choice([-1.0, 1.0], size=n) * (0.01 if equal else rng.random(n) + 1e-3)
    for first in (0, int(np.argmin(np.abs(alpha))), n - 1):
        deg_s, h_s = np.empty(n), np.empty(n)
        deg_b, h_b = np.full(n, np.nan), np.full(n, np.nan)
        merge_search_scalar_nb(sv, alpha, n, first, gamma, 10, deg_s, h_s)
        ws, iws = gss_workspace()
        merge_search_nb(sv, alpha, n, first, gamma, 10, deg_b, h_b, ws, iws)
        assert np.isinf(deg_s).sum() >= 1
        assert np.array_equal(deg_b, deg_s) and np.array_equal(h_b, h_s)
        for k in (1, 2, 4, 9):
            assert CPU.merge_partners(deg_b, k).tolist() == CPU.merge_partners(deg_s, k).tolist()


def test_merge_partners_order_and_ties():
    deg = np.array([3.0, np.inf, 1.0, 1.0, 0.5, np.inf])
    assert CPU.merge_partners(deg, 3).tolist() == [4, 2, 3]
    assert CPU.merge_partners(deg, 9).tolist() == [4, 2, 3, 0]


def test_merge_search_cpu_gpu_same_partners_and_degradations(gpu_backend):
    import cupy as cp

    for seed, gamma in [(0, 0.1), (3, 1.0), (4, 8.0)]:
        sv, alpha = _random_model(n=2000, d=20, seed=seed)
        first = int(np.argmin(np.abs(alpha)))
        deg_c, h_c = CPU.merge_search(sv, alpha, len(alpha), first, gamma)
        deg_g, h_g = gpu_backend.merge_search(cp.asarray(sv), cp.asarray(alpha), len(alpha), first, gamma)
        deg_g = cp.asnumpy(deg_g)
        assert np.array_equal(np.isinf(deg_c), np.isinf(deg_g))
        fin = np.isfinite(deg_c)
        np.testing.assert_allclose(deg_g[fin], deg_c[fin], rtol=1e-9, atol=1e-15)
        for k in (1, 2, 4, 9):
            pc = CPU.merge_partners(deg_c, k)
            pg = cp.asnumpy(gpu_backend.merge_partners(cp.asarray(deg_g), k))
            assert pc.tolist() == pg.tolist()


# ---- the training loop -------------------------------------------------------------------------
def _small_problem(n=240, seed=0):
    X, y = make_chessboard(n, n_tiles=2, random_state=seed)
    return X, y


@pytest.mark.parametrize("n_merge,merge", [(2, "cascade"), (3, "cascade"), (4, "gradient"), (3, "greedy"),
                                           (5, "greedy"), (3, "cascade-light"), (5, "cascade-light")])
def test_compiled_loop_matches_python_reference(n_merge, merge):
    X, y = _small_problem()
    # (C = 32 for cascade-light: there its partner rule changes the model, checked below)
    C, gamma, budget = (32.0 if merge == "cascade-light" else 4.0), 4.0, 12
    est = BudgetSVC(C=C, gamma=gamma, budget=budget, n_merge=n_merge, merge=merge, random_state=3, device="cpu")
    est.fit(X, y)
    if merge == "cascade-light":
        plain = BudgetSVC(C=C, gamma=gamma, budget=budget, n_merge=n_merge, random_state=3, device="cpu").fit(X, y)
        assert plain.support_vectors_.shape != est.support_vectors_.shape or not np.allclose(
            plain.dual_coef_, est.dual_coef_)
    order = np.random.RandomState(3).permutation(len(y))
    sv_r, a_r = _ref_bsgd(X, y, order, 1.0 / (len(y) * C), gamma, budget, n_merge, merge)
    assert est.n_merges_ >= 5  # the budget was really maintained
    assert est.support_vectors_.shape == sv_r.shape
    np.testing.assert_allclose(est.support_vectors_, sv_r, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(est.dual_coef_[0], a_r, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("n_merge,merge", [(2, "cascade"), (3, "cascade"), (3, "gradient")])
def test_weighted_loop_matches_python_reference(n_merge, merge):
    """sample_weight and class_weight weight the hinge terms: the compiled loop against the reference,
    with some weights zero (those samples never become support vectors)."""
    X, y = _small_problem()
    rng = np.random.default_rng(11)
    sw = rng.uniform(0.2, 3.0, size=len(y))
    sw[rng.random(len(y)) < 0.2] = 0.0
    cw = {-1: 0.5, 1: 2.0} if set(np.unique(y)) == {-1, 1} else None
    assert cw is not None
    C, gamma, budget = 4.0, 4.0, 12
    est = BudgetSVC(C=C, gamma=gamma, budget=budget, n_merge=n_merge, merge=merge, class_weight=cw,
                    random_state=3, device="cpu").fit(X, y, sample_weight=sw)
    w = sw * np.where(y == 1, 2.0, 0.5)
    order = np.random.RandomState(3).permutation(len(y))
    sv_r, a_r = _ref_bsgd(X, np.where(y == 1, 1.0, -1.0), order, 1.0 / (len(y) * C), gamma, budget, n_merge,
                          merge, weight=w)
    assert est.n_merges_ >= 5
    np.testing.assert_allclose(est.support_vectors_, sv_r, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(est.dual_coef_[0], a_r, rtol=1e-9, atol=1e-12)
    # no merges: the support vectors are exactly the violating samples of positive weight
    big = BudgetSVC(C=C, gamma=gamma, budget=1000, class_weight=cw, random_state=3,
                    device="cpu").fit(X, y, sample_weight=sw)
    assert big.n_merges_ == 0
    zero_rows = {tuple(r) for r in X[sw == 0]}
    assert not zero_rows & {tuple(r) for r in big.support_vectors_}
    assert big.n_violations_ == big.n_support_[0]


def test_unit_and_class_weights_are_sample_weights():
    X, y = _small_problem(n=300, seed=2)
    kw = dict(C=4.0, gamma=4.0, budget=20, n_merge=3, random_state=0, device="cpu")
    plain = BudgetSVC(**kw).fit(X, y)
    ones = BudgetSVC(**kw).fit(X, y, sample_weight=np.ones(len(y)))
    np.testing.assert_array_equal(ones.dual_coef_, plain.dual_coef_)
    np.testing.assert_array_equal(ones.support_vectors_, plain.support_vectors_)
    by_class = BudgetSVC(class_weight={-1: 3.0, 1: 0.5}, **kw).fit(X, y)
    by_sample = BudgetSVC(**kw).fit(X, y, sample_weight=np.where(y == 1, 0.5, 3.0))
    np.testing.assert_array_equal(by_class.dual_coef_, by_sample.dual_coef_)
    assert not np.array_equal(by_class.dual_coef_, plain.dual_coef_)


def test_one_vs_rest_class_weights_as_liblinear():
    """With three classes, the problem of class c weights class c's samples by class_weight[c] and the
    rest by their sample weights only (as LinearSVC and LIBLINEAR): the same model as unweighted
    problems given those sample weights one problem at a time."""
    rng = np.random.default_rng(8)
    X = rng.normal(size=(240, 3))
    y = np.argmax(X @ rng.normal(size=(3, 3)), axis=1)
    sw = rng.uniform(0.5, 2.0, size=len(y))
    cw = {0: 3.0, 1: 0.5, 2: 1.5}
    kw = dict(C=4.0, gamma=1.0, budget=15, n_merge=3, random_state=0, device="cpu")
    est = BudgetSVC(class_weight=cw, **kw).fit(X, y, sample_weight=sw)
    start = np.concatenate([[0], np.cumsum(est.n_support_)])
    for c in range(3):
        one = BudgetSVC(**kw).fit(X, (y == c).astype(int), sample_weight=sw * np.where(y == c, cw[c], 1.0))
        np.testing.assert_array_equal(est.support_vectors_[start[c]:start[c + 1]], one.support_vectors_)
        np.testing.assert_array_equal(est.dual_coef_[c, start[c]:start[c + 1]], one.dual_coef_[0])


def test_balanced_class_weight_raises_minority_recall():
    """On 1:9 imbalanced data with overlapping classes, class_weight="balanced" finds more of the
    minority class than the unweighted model (as it does for scikit-learn's SVC)."""
    rng = np.random.default_rng(5)
    n_min, n_maj = 150, 1350
    X = np.vstack([rng.normal(0.0, 1.0, size=(n_maj, 2)), rng.normal(1.2, 1.0, size=(n_min, 2))])
    y = np.r_[np.zeros(n_maj), np.ones(n_min)]
    Xt = np.vstack([rng.normal(0.0, 1.0, size=(4000, 2)), rng.normal(1.2, 1.0, size=(4000, 2))])
    yt = np.r_[np.zeros(4000), np.ones(4000)]
    kw = dict(C=1.0, gamma=0.5, budget=100, epochs=3, random_state=0, device="cpu")
    recall = {}
    for cw in (None, "balanced"):
        pred = BudgetSVC(class_weight=cw, **kw).fit(X, y).predict(Xt)
        recall[cw] = float(np.mean(pred[yt == 1] == 1))
    sk = {cw: float(np.mean(SkSVC(C=1.0, gamma=0.5, class_weight=cw).fit(X, y).predict(Xt)[yt == 1] == 1))
          for cw in (None, "balanced")}
    assert sk["balanced"] > sk[None] + 0.2  # the data set really is one where weighting matters
    assert recall["balanced"] > recall[None] + 0.2


def test_large_budget_is_kernel_pegasos():
    """Without merges BSGD is kernel Pegasos: alpha_i = y_i / (lambda t_i) * prod (1 - 1/t)."""
    X, y = _small_problem(n=150, seed=1)
    est = BudgetSVC(C=2.0, gamma=2.0, budget=1000, random_state=0, device="cpu", epochs=2).fit(X, y)
    assert est.n_merges_ == 0
    rs = np.random.RandomState(0)
    order = np.concatenate([rs.permutation(150) for _ in range(2)])
    sv_r, a_r = _ref_bsgd(X, y, order, 1.0 / (150 * 2.0), 2.0, 1000, 2, "cascade")
    np.testing.assert_allclose(est.support_vectors_, sv_r)
    np.testing.assert_allclose(est.dual_coef_[0], a_r, rtol=1e-10)
    assert est.n_iter_ == 2


def test_objective_and_decisions_close_to_libsvm():
    X, y = load_bundled("breast_cancer")
    C, gamma = 1.0, 0.02
    ref = SkSVC(C=C, gamma=gamma).fit(X, y)
    p_ref = _primal(ref, X, y, C)
    est = BudgetSVC(C=C, gamma=gamma, budget=150, n_merge=3, epochs=10, random_state=0, device="cpu").fit(X, y)
    p_ours = _primal(est, X, y, C)
    # LIBSVM's optimum (with a bias) is a lower bound of our bias-free objective; SGD gets close to it
    assert p_ref * (1 - 1e-3) <= p_ours <= 1.15 * p_ref
    d_ref, d_ours = ref.decision_function(X), est.decision_function(X)
    assert np.corrcoef(d_ref, d_ours)[0, 1] > 0.97
    assert np.mean(np.sign(d_ref) == np.sign(d_ours)) > 0.97
    assert est.n_support_[0] <= 150
    assert 0.0 < est.merge_time_fraction_ < 1.0


def test_more_merging_keeps_the_budget_and_merges_less_often():
    X, y = _small_problem(n=1500, seed=2)
    runs = {}
    for M in (2, 3, 5):
        est = BudgetSVC(C=8, gamma=8, budget=40, n_merge=M, random_state=0, device="cpu").fit(X, y)
        assert est.n_support_[0] <= 40
        runs[M] = est
    # one maintenance per M-1 violations once the budget is full
    for M, est in runs.items():
        expected = (est.n_violations_ - 40) / (M - 1)
        assert abs(est.n_merges_ - expected) <= 2


@pytest.mark.parametrize("n_merge", [3, 4])
def test_gradient_merge_with_a_narrow_gaussian(n_merge):
    """merge="gradient" starts z at the alpha-weighted mean of the merged points; with a Gaussian narrow
    against their spacing every a_i k(x_i, z) underflows there, and the fixed-point step divided 0 by 0: a
    ZeroDivisionError on the CPU (NaN SVs in the CUDA kernel) at gamma=1000 on unit-scale data. The step
    now takes the weights relative to the largest exponent (the same step where nothing underflows)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = np.where(X[:, 0] > 0, 1, -1)
    for gamma in (1e3, 1e6):
        est = BudgetSVC(gamma=gamma, budget=5, n_merge=n_merge, merge="gradient", random_state=3,
                        device="cpu").fit(X, y)
        assert est.n_merges_ > 0 and est.n_support_[0] <= 5
        assert np.all(np.isfinite(est.support_vectors_)) and np.all(np.isfinite(est.dual_coef_))
        if gamma == 1e3:
            order = np.random.RandomState(3).permutation(60)
            sv_r, a_r = _ref_bsgd(X, y, order, 1.0 / 60, gamma, 5, n_merge, "gradient")
            np.testing.assert_allclose(est.support_vectors_, sv_r, rtol=1e-9, atol=1e-10)
            np.testing.assert_allclose(est.dual_coef_[0], a_r, rtol=1e-9, atol=1e-12)


def test_gradient_merge_with_a_narrow_gaussian_on_gpu(gpu_backend):
    """The CUDA kernel's side of the case above: NaN support vectors (0 / 0) before, now finite, as the CPU's."""
    import cupy as cp

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = np.where(X[:, 0] > 0, 1, -1)
    for n_merge in (2, 3):
        kw = dict(gamma=1e3, budget=5, n_merge=n_merge, merge="gradient", random_state=3)
        a = BudgetSVC(device="cpu", **kw).fit(X, y)
        b = BudgetSVC(device="gpu", **kw).fit(cp.asarray(X), cp.asarray(y))
        assert np.all(np.isfinite(b.support_vectors_)) and np.all(np.isfinite(b.dual_coef_))
        da, db = a.decision_function(X), cp.asnumpy(b.decision_function(cp.asarray(X)))
        assert np.all(np.isfinite(db)) and np.mean(np.sign(da) == np.sign(db)) > 0.9


def test_gradient_merge_runs_and_differs_from_cascade():
    X, y = _small_problem(n=600, seed=4)
    a = BudgetSVC(C=8, gamma=8, budget=30, n_merge=4, merge="cascade", random_state=0, device="cpu").fit(X, y)
    b = BudgetSVC(C=8, gamma=8, budget=30, n_merge=4, merge="gradient", random_state=0, device="cpu").fit(X, y)
    assert not np.allclose(a.decision_function(X), b.decision_function(X))
    assert np.mean(a.predict(X) == b.predict(X)) > 0.8


def test_budget_above_the_number_of_steps_allocates_by_the_steps():
    """A step adds at most one SV, so a budget above epochs x n_samples is never reached; the loop's
    (budget + 1)-row buffers were allocated (and the CPU loop's transposed copy written) at the full budget:
    the default 500 on 60 samples of 10^6 sparse features held 4 GB per one-vs-rest problem. Now they are
    sized by the steps, and the model is the same."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2000))
    y = (X[:, 0] > 0).astype(int)
    exact = BudgetSVC(budget=80, epochs=2, random_state=0, device="cpu").fit(X, y)  # (and Numba's compilation)
    big, peak = traced_peak(lambda: BudgetSVC(budget=20_000, epochs=2, random_state=0, device="cpu").fit(X, y))
    assert peak < 20 * 2**20  # 80 steps: 81 rows of 2,000 float64 (was 20,001 rows: 320 MB)
    np.testing.assert_array_equal(big.dual_coef_, exact.dual_coef_)
    np.testing.assert_array_equal(big.support_vectors_, exact.support_vectors_)
    assert big.n_merges_ == 0
    # n_merge above the steps as well (budget >= n_merge): still sized by the steps, not by n_merge
    many, peak = traced_peak(lambda: BudgetSVC(budget=5000, n_merge=5000, epochs=2, random_state=0,
                                               device="cpu").fit(X, y))
    assert peak < 20 * 2**20  # was 5,001 rows of 2,000 float64 twice (row-major and transposed): 160 MB
    np.testing.assert_array_equal(many.dual_coef_, exact.dual_coef_)
    np.testing.assert_array_equal(many.support_vectors_, exact.support_vectors_)


def test_sparse_equals_dense_and_seed_is_deterministic():
    X, y = _small_problem(n=300, seed=5)
    kw = dict(C=4, gamma=4, budget=25, n_merge=3, random_state=7, device="cpu")
    a = BudgetSVC(**kw).fit(X, y)
    b = BudgetSVC(**kw).fit(sp.csr_matrix(X), y)
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(sp.csr_matrix(X)))
    c = BudgetSVC(**{**kw, "random_state": 8}).fit(X, y)
    assert not np.array_equal(a.dual_coef_, c.dual_coef_)


def test_multiclass_one_vs_rest():
    X, y = load_bundled("digits")
    X, y = X[:900], y[:900]
    est = BudgetSVC(C=10, gamma=0.05, budget=60, n_merge=3, epochs=2, random_state=0, device="cpu").fit(X, y)
    assert est.classes_.tolist() == list(range(10))
    n_sv = int(est.n_support_.sum())
    assert est.dual_coef_.shape == (10, n_sv) and est.support_vectors_.shape == (n_sv, 64)
    assert est.intercept_.shape == (10,) and np.all(est.intercept_ == 0)
    assert np.all(est.n_support_ <= 60)
    dec = est.decision_function(X)
    assert dec.shape == (900, 10)
    np.testing.assert_array_equal(est.predict(X), est.classes_[dec.argmax(1)])
    # each problem's coefficients sit in its own block of columns
    off = np.concatenate([[0], np.cumsum(est.n_support_)])
    for p in range(10):
        mask = np.zeros(n_sv, bool)
        mask[off[p]:off[p + 1]] = True
        assert np.all(est.dual_coef_[p, ~mask] == 0)
    ref = SkSVC(C=10, gamma=0.05).fit(X, y)
    Xt, yt = load_bundled("digits")
    # one seed's accuracy moves by about a point with the sample order: compare the mean of three seeds
    accs = [est.score(Xt[900:], yt[900:])] + [
        BudgetSVC(C=10, gamma=0.05, budget=60, n_merge=3, epochs=2, random_state=s, device="cpu")
        .fit(X, y).score(Xt[900:], yt[900:]) for s in (1, 2)]
    assert np.mean(accs) > ref.score(Xt[900:], yt[900:]) - 0.05


def test_threads_give_the_same_multiclass_model():
    """n_jobs trains the one-vs-rest problems in threads (the loop releases the GIL): the same model."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    kw = dict(C=10.0, gamma=0.001, budget=60, n_merge=3, random_state=0, device="cpu")
    one = BudgetSVC(**kw).fit(X, y)
    two = BudgetSVC(n_jobs=2, **kw).fit(X, y)
    assert one.n_merges_ > 0
    np.testing.assert_array_equal(two.dual_coef_, one.dual_coef_)
    np.testing.assert_array_equal(two.support_vectors_, one.support_vectors_)
    assert two.n_merges_ == one.n_merges_ and two.n_violations_ == one.n_violations_
    for bad in (0, 1.5, True, "2"):
        with pytest.raises(ValueError, match="'n_jobs' parameter of BudgetSVC must be None or a nonzero int"):
            BudgetSVC(n_jobs=bad).fit(X[:50], y[:50])


def test_string_labels_and_gamma_scale():
    X, y = _small_problem(n=200, seed=6)
    lab = np.where(y > 0, "yes", "no")
    est = BudgetSVC(budget=20, random_state=0, device="cpu").fit(X, lab)
    assert set(est.predict(X)) <= {"yes", "no"}
    assert est._gamma == pytest.approx(1.0 / (2 * X.var()))


# ---- bad input ----------------------------------------------------------------------------------
@pytest.mark.parametrize("kw,match", [
    (dict(budget=2, n_merge=3), r"'budget' parameter of BudgetSVC must be an int >= n_merge \(3\).*Got 2"),
    (dict(n_merge=1), r"'n_merge' parameter of BudgetSVC must be an int in the range \[2, inf\)\. Got 1"),
    (dict(kernel="linear"), r"'kernel' parameter of BudgetSVC must be 'rbf': merging .* Gaussian kernel\. Got 'linear'"),
    (dict(kernel="poly"), r"Gaussian kernel"),
    (dict(epochs=0), r"'epochs' parameter of BudgetSVC must be an int in the range \[1, inf\)\. Got 0"),
    (dict(epochs=1.5), r"'epochs'"),
    (dict(C=-1), r"'C' parameter of BudgetSVC must be a float in the range \(0.0, inf\)\. Got -1"),
    (dict(merge="both"),
     r"'merge' parameter of BudgetSVC must be one of \['cascade', 'cascade-light', 'gradient', 'greedy'\]"),
    (dict(gamma=0.0), r"'gamma'"),
    (dict(gamma="big"), r"'gamma'"),
])
def test_bad_parameters(kw, match):
    X, y = _small_problem(n=50)
    with pytest.raises(ValueError, match=match):
        BudgetSVC(**kw).fit(X, y)


def test_bad_data():
    X, y = _small_problem(n=50)
    with pytest.raises(ValueError, match="at least 2 classes in 'y'; got only one class"):
        BudgetSVC(device="cpu").fit(X, np.ones(50))
    with pytest.raises(ValueError, match="NaN"):
        BudgetSVC(device="cpu").fit(np.full((4, 2), np.nan), [0, 1, 0, 1])
    with pytest.raises(ValueError, match=r"'sample_weight' for BudgetSVC must have shape \(50,\)"):
        BudgetSVC(device="cpu").fit(X, y, sample_weight=np.ones(49))
    with pytest.raises(ValueError, match="'sample_weight' for BudgetSVC has negative values"):
        BudgetSVC(device="cpu").fit(X, y, sample_weight=-np.ones(50))
    with pytest.raises(ValueError, match=r"weights\) of BudgetSVC are all zero"):
        BudgetSVC(device="cpu").fit(X, y, sample_weight=np.zeros(50))
    with pytest.raises(ValueError, match="'class_weight' parameter of BudgetSVC must be None, 'balanced' or a dict"):
        BudgetSVC(class_weight="auto", device="cpu").fit(X, y)
    with pytest.raises(ValueError, match=r"The classes, \[.*\], are not in class_weight"):  # (scikit-learn's rule)
        BudgetSVC(class_weight={7: 2.0}, device="cpu").fit(X, y)
    est = BudgetSVC(budget=10, device="cpu").fit(X, y)
    with pytest.raises(ValueError, match="X has 5 features, but BudgetSVC is expecting 2 features as input"):
        est.predict(np.ones((3, 5)))


_WEIGHT_XFAIL = ("stochastic gradient steps: a sample of weight 2 takes one step of twice the size, its two copies "
                 "two steps at different times (and weight 0 still uses up a step of the schedule), so weights and "
                 "repeated rows give different models")
_XFAIL = {"check_sample_weight_equivalence_on_dense_data": _WEIGHT_XFAIL,
          "check_sample_weight_equivalence_on_sparse_data": _WEIGHT_XFAIL}


@parametrize_with_checks([BudgetSVC(budget=50, device="cpu", random_state=0)],
                         expected_failed_checks=lambda est: _XFAIL)
def test_sklearn_estimator_checks(estimator, check):
    """scikit-learn's estimator contract, as for the other estimators (CSR input declared and accepted,
    its messages for one class and a feature-count mismatch)."""
    check(estimator)


def test_vectorized_exp_within_one_ulp():
    """The vectorized exp of the margins and of the merge search (ops/merge.py) against libm over its
    whole range [-708, 0]."""
    from gpusvm._backend.ops.merge import exp_neg_vec

    rng = np.random.default_rng(0)
    edges = [0.0, -708.0, -1e-300, -0.5 * math.log(2)]
    v = np.concatenate([-rng.random(4000) * 708.0, -rng.random(2000) * 1e-3, edges])
    ref = np.exp(v)
    out = v.copy()
    exp_neg_vec(out, out.shape[0], np.empty(out.shape[0], dtype=np.int64))
    assert np.all(np.abs(out - ref) <= np.spacing(ref))
    far = np.array([-709.0, -800.0, -1e6])  # clamped at -708: tiny, never larger than exp(-708)
    exp_neg_vec(far, 3, np.empty(3, dtype=np.int64))
    assert np.all((far >= 0) & (far <= math.exp(-708.0) * (1 + 1e-15)))


@pytest.mark.parametrize("n_merge,merge", [(2, "cascade"), (3, "cascade"), (4, "gradient")])
def test_column_margins_give_the_row_margins_model(n_merge, merge):
    """The loop's fast margins (transposed SVs, sparse dot products, vectorized exp) change f only by
    rounding: on sparse and on dense data the trained model equals the one of the row-wise margins
    (the plain form the Python reference uses)."""
    rng = np.random.default_rng(5)
    Xs = (rng.random((1500, 40)) < 0.2) * rng.random((1500, 40)) * 2.0
    ys = np.where(Xs[:, :4].sum(1) > Xs[:, 4:8].sum(1), 1.0, -1.0)
    Xd, yd = _small_problem(n=800, seed=2)
    for X, y, gamma in ((Xs, ys, 0.7), (Xd, yd, 4.0)):
        order = np.random.RandomState(0).permutation(len(y)).astype(np.int64)
        res = {}
        for margin in ("rows", "columns"):
            sv, a, n_sv, st = CPU.bsgd_train(X, y, order, t0=0, lam=1.0 / (len(y) * 8.0), gamma=gamma, budget=30,
                                             n_merge=n_merge, merge=merge, margin=margin)
            res[margin] = (sv[:n_sv], a[:n_sv], st["merges"], st["violations"])
        assert res["rows"][2] >= 10
        assert res["rows"][2:] == res["columns"][2:]
        np.testing.assert_allclose(res["columns"][0], res["rows"][0], rtol=1e-9, atol=1e-10)
        np.testing.assert_allclose(res["columns"][1], res["rows"][1], rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="margin"):
        CPU.bsgd_train(Xd, yd, order, t0=0, lam=1.0, gamma=1.0, budget=30, n_merge=2, merge="cascade", margin="x")


# ---- data set and GPU -----------------------------------------------------------------------------
@pytest.mark.data
def test_a9a_subset_multi_merge_close_to_classic(data_dir):
    X, y = load_subset(data_dir, "a9a.xz", 6000, dense=True)
    Xt, yt = load_subset(data_dir, "a9a.t.xz", 6000, n_features=123, seed=1, dense=True)
    acc = {}
    # The last Pegasos iterate is noisy (so it is with an unlimited budget): average 3 seeds, 3 epochs, C=1.
    for M in (2, 3, 5):
        acc[M] = np.mean([
            BudgetSVC(C=1, gamma=0.008, budget=100, n_merge=M, epochs=3, random_state=s, device="cpu")
            .fit(X, y).score(Xt, yt) for s in range(3)
        ])
    ref = SkSVC(C=1, gamma=0.008).fit(X, y).score(Xt, yt)
    assert acc[2] > ref - 0.03  # budgeted SGD: a few points below LIBSVM at most
    for M in (3, 5):
        assert acc[M] > acc[2] - 0.02


def test_cpu_gpu_training_agree(gpu_backend):
    import cupy as cp

    X, y = _small_problem(n=2000, seed=7)
    for budget, M, merge in [(5000, 2, "cascade"), (50, 3, "cascade"), (50, 4, "gradient"), (50, 4, "greedy"),
                             (50, 3, "cascade-light")]:
        kw = dict(C=8, gamma=8, budget=budget, n_merge=M, merge=merge, random_state=0)
        a = BudgetSVC(device="cpu", **kw).fit(X, y)
        b = BudgetSVC(device="gpu", **kw).fit(cp.asarray(X), cp.asarray(y))
        da = a.decision_function(X)
        db = cp.asnumpy(b.decision_function(cp.asarray(X)))
        assert isinstance(b.predict(cp.asarray(X)), cp.ndarray)
        assert b.n_support_[0] <= budget
        if budget > len(y):  # no merges: same sequence of sums, up to summation order
            np.testing.assert_allclose(db, da, rtol=1e-7, atol=1e-7 * np.abs(da).max())
        else:  # merges: the runs may part at a near-tie but stay close
            assert np.corrcoef(da, db)[0, 1] > 0.98
            assert abs(a.n_merges_ - b.n_merges_) <= 0.05 * a.n_merges_ + 2
        if merge == "cascade-light":  # the kernel applies the partner rule: nearer the CPU's light model
            plain = BudgetSVC(device="cpu", **{**kw, "merge": "cascade"}).fit(X, y).decision_function(X)
            assert np.abs(db - da).max() < 0.5 * np.abs(db - plain).max()
        assert 0.0 <= b.merge_time_fraction_ < 1.0


def test_cpu_gpu_weighted_training_agree(gpu_backend):
    """Signed sample weights in the CUDA loop: the same violations and coefficients as the CPU twin
    without merges, close models with them."""
    import cupy as cp

    X, y = _small_problem(n=800, seed=4)
    rng = np.random.default_rng(8)
    sw = rng.uniform(0.0, 2.5, size=len(y))
    sw[rng.random(len(y)) < 0.25] = 0.0
    for budget, M in [(5000, 2), (40, 3)]:
        kw = dict(C=8, gamma=8, budget=budget, n_merge=M, class_weight="balanced", random_state=0)
        a = BudgetSVC(device="cpu", **kw).fit(X, y, sample_weight=sw)
        b = BudgetSVC(device="gpu", **kw).fit(cp.asarray(X), cp.asarray(y), sample_weight=cp.asarray(sw))
        da = a.decision_function(X)
        db = cp.asnumpy(b.decision_function(cp.asarray(X)))
        if budget > len(y):
            assert a.n_violations_ == b.n_violations_ == a.n_support_[0]
            np.testing.assert_allclose(db, da, rtol=1e-7, atol=1e-7 * np.abs(da).max())
        else:
            assert b.n_support_[0] <= budget
            assert np.corrcoef(da, db)[0, 1] > 0.98


def test_sklearn_contract_clone_and_params():
    from sklearn.base import clone

    est = BudgetSVC(C=2.0, budget=30, n_merge=3, merge="gradient", epochs=2, random_state=1, device="cpu")
    params = est.get_params()
    assert params["budget"] == 30 and params["merge"] == "gradient" and params["device"] == "cpu"
    X, y = _small_problem(n=200, seed=8)
    a = clone(est).fit(X, y)
    b = clone(est).fit(X, y)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    assert not hasattr(est, "dual_coef_")  # __init__ stores parameters only
    assert a.n_features_in_ == 2 and a.n_iter_ == 2


def test_greedy_shortlist_size_is_the_same_in_the_cuda_kernel():
    """kernels/bsgd.cu hard-codes the greedy shortlist factor; it must be the CPU loop's."""
    import re
    from pathlib import Path

    from gpusvm._backend.ops.bsgd import GREEDY_SHORTLIST

    src = (Path(__file__).resolve().parents[1] / "kernels" / "bsgd.cu").read_text()
    assert int(re.search(r"#define BSGD_GREEDY_SHORTLIST (\d+)", src).group(1)) == GREEDY_SHORTLIST
    from gpusvm._backend.ops.bsgd import HEAVY_RATIO

    assert float(re.search(r"#define BSGD_HEAVY_RATIO ([\d.]+)", src).group(1)) == HEAVY_RATIO


def test_columns_from_csr_equal_columns_from_dense(rng):
    """bsgd_columns builds the loop's sparse view once per fit; from a SciPy matrix (unsorted indices,
    explicit zeros and duplicate entries included) it is the dense pass's to the bit."""
    import scipy.sparse as sp

    X = rng.normal(size=(60, 9))
    X[rng.random(X.shape) < 0.6] = 0.0
    from gpusvm._backend.ops.bsgd import _csr_of_dense

    ref = _csr_of_dense(X)
    ptr, idx, val, xsq = CPU.bsgd_columns(X)  # dense X: only the norms (the loop reads X's rows in place)
    assert ptr.shape == idx.shape == val.shape == (0,)
    np.testing.assert_array_equal(xsq, ref[3])
    A = sp.coo_matrix(X)
    # the same matrix stored awkwardly: an explicit zero, an entry split into two duplicates, shuffled
    r, c, v = A.row.tolist(), A.col.tolist(), A.data.tolist()
    r += [0, r[0]]
    c += [int(np.flatnonzero(X[0] == 0)[0]), c[0]]
    v += [0.0, 0.5 * v[0]]
    v[0] *= 0.5
    p = rng.permutation(len(r))
    messy = sp.csr_matrix((np.array(v)[p], (np.array(r)[p], np.array(c)[p])), shape=X.shape)
    messy.has_sorted_indices = False
    for got in (CPU.bsgd_columns(X, sp.csr_matrix(X)), CPU.bsgd_columns(X, messy)):
        for a, b in zip(got, ref):
            np.testing.assert_array_equal(a, b)
    assert CPU.bsgd_columns(X, messy)[0].dtype == np.int64


def test_dense_input_is_read_in_place_without_a_csr_copy():
    """Dense X is read row by row in place by the CPU loop's column margins: no CSR copy of it (an int64
    index and a float64 value per entry, twice X's size: BudgetSVC(budget=50) on 20,000 x 200 float64
    peaked at 2.05x X's size, now 0.0x with a numeric gamma). The model is the CSR route's to the bit,
    zeros and a -0.0 included (left out of the new SVs, as from the CSR form)."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(4000, 250))  # 8 MB
    X[rng.random(X.shape) < 0.3] = 0.0
    X[1, 2] = -0.0
    y = rng.integers(0, 3, size=4000)
    kw = dict(gamma=0.004, budget=40, n_merge=3, random_state=0, device="cpu")
    BudgetSVC(**kw).fit(X[:300], y[:300])  # (Numba's compilation)
    m, peak = traced_peak(lambda: BudgetSVC(**kw).fit(X, y))
    assert peak < 0.25 * X.nbytes, f"peak {peak / X.nbytes:.2f}x X's size"
    ref = BudgetSVC(**kw).fit(sp.csr_matrix(X), y)
    np.testing.assert_array_equal(m.support_vectors_, ref.support_vectors_)
    np.testing.assert_array_equal(np.signbit(m.support_vectors_), np.signbit(ref.support_vectors_))
    np.testing.assert_array_equal(m.dual_coef_, ref.dual_coef_)


def test_budgetsvc_sparse_and_dense_inputs_give_the_same_model(rng):
    import scipy.sparse as sp

    X = rng.normal(size=(400, 12))
    X[rng.random(X.shape) < 0.5] = 0.0
    y = rng.integers(0, 3, size=400)  # three classes: one shared sparse view for the one-vs-rest problems
    kw = dict(C=4.0, gamma=0.2, budget=40, n_merge=3, epochs=2, random_state=0, device="cpu")
    a = BudgetSVC(**kw).fit(X, y)
    b = BudgetSVC(**kw).fit(sp.csr_matrix(X), y)
    np.testing.assert_array_equal(a.support_vectors_, b.support_vectors_)
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)


def test_csr_input_is_read_through_its_nonzeros():
    """The CPU op takes CSR X as it is: the same model as from dense X (new SVs copied from the nonzeros),
    also with the row-wise reference margins (which densify)."""
    rng = np.random.default_rng(21)  # (not the session's generator: later tests' data stay as they were)
    X = (rng.random((600, 30)) < 0.15) * rng.random((600, 30)) * 2.0
    y = np.where(X[:, :3].sum(1) > X[:, 3:6].sum(1), 1.0, -1.0)
    order = np.random.RandomState(1).permutation(len(y)).astype(np.int64)
    kw = dict(t0=0, lam=1.0 / (len(y) * 8.0), gamma=0.7, budget=25, n_merge=3, merge="cascade")
    for margin in ("columns", "rows"):
        sv_d, a_d, n_d, st_d = CPU.bsgd_train(X, y, order, margin=margin, **kw)
        sv_s, a_s, n_s, st_s = CPU.bsgd_train(sp.csr_matrix(X), y, order, margin=margin, **kw)
        assert st_d["merges"] >= 10 and n_d == n_s
        np.testing.assert_array_equal(sv_s[:n_s], sv_d[:n_d])
        np.testing.assert_array_equal(a_s[:n_s], a_d[:n_d])


def test_high_dimensional_sparse_input_is_not_densified():
    """A wide sparse problem (dense copy: 400 x 200,000 doubles = 640 MB) trains within the memory of its
    support vectors (budget + 1 dense rows, twice); CSR and dense test rows score alike."""
    rng = np.random.default_rng(3)
    n, d, nnz = 400, 200_000, 8
    rows = np.repeat(np.arange(n), nnz)
    cols = rng.integers(0, 50, size=n * nnz)  # the informative columns
    cols[::2] = rng.integers(50, d, size=cols[::2].size)
    X = sp.csr_matrix((rng.random(n * nnz) + 0.5, (rows, cols)), shape=(n, d))
    y = np.where(np.asarray(X[:, :25].sum(1)).ravel() > np.asarray(X[:, 25:50].sum(1)).ravel(), 1, 0)
    m, peak = traced_peak(lambda: BudgetSVC(C=8.0, budget=10, random_state=0, device="cpu").fit(X, y))
    assert peak < 150 * 2**20, f"peak {peak / 2**20:.0f} MB"
    assert m.support_vectors_.shape == (m.n_support_.sum(), d)
    dense = X[:50].toarray()
    np.testing.assert_allclose(m.decision_function(X[:50]), m.decision_function(dense), rtol=1e-10, atol=1e-12)


def test_gamma_scale_from_csr_equals_gamma_scale_from_dense():
    rng = np.random.default_rng(22)
    X = rng.normal(size=(300, 15))
    X[rng.random(X.shape) < 0.6] = 0.0
    y = (X[:, 0] > 0).astype(int)
    kw = dict(C=4.0, budget=30, n_merge=3, random_state=0, device="cpu")
    a = BudgetSVC(**kw).fit(X, y)
    b = BudgetSVC(**kw).fit(sp.csr_matrix(X), y)
    assert a._gamma == pytest.approx(1.0 / (X.shape[1] * X.var()), rel=1e-12)
    assert b._gamma == pytest.approx(a._gamma, rel=1e-12)
    np.testing.assert_allclose(b.decision_function(X), a.decision_function(X), rtol=1e-8, atol=1e-10)


def test_gpu_column_margins_agree_with_rows_and_the_cpu(gpu_backend):
    """The GPU loop's column margins (margin="columns", "auto" from 32 features on) against its row
    margins and the CPU loop, on sparse-ish data with 40 features; and bsgd_columns on both devices."""
    import cupy as cp

    cpu = get_backend("cpu")
    rng = np.random.default_rng(11)
    n, d, gamma = 600, 40, 0.5
    X = rng.random((n, d)) * (rng.random((n, d)) < 0.25)
    y = np.where(X[:, :5].sum(axis=1) > X[:, 5:10].sum(axis=1), 1.0, -1.0)
    order = rng.permutation(n)
    for got, want in zip(gpu_backend.bsgd_columns(cp.asarray(X)), cpu.bsgd_columns(X, sp.csr_matrix(X))):
        np.testing.assert_allclose(cp.asnumpy(got), want, rtol=1e-15, atol=0)

    def decision(sv, alpha, n_sv):
        sv, alpha = np.asarray(sv)[:n_sv], np.asarray(alpha)[:n_sv]
        d2 = ((X[:, None, :] - sv[None, :, :]) ** 2).sum(axis=2)
        return np.exp(-gamma * d2) @ alpha

    for budget, M in [(n + 1, 2), (40, 3), (40, 4)]:
        kw = dict(t0=0, lam=1.0 / (8 * n), gamma=gamma, budget=budget, n_merge=M, merge="cascade")
        sv_c, a_c, n_c, st_c = cpu.bsgd_train(X, y, order, margin="columns", **kw)
        runs = {}
        for margin in ("rows", "columns", "auto"):
            sv, a, n_sv, st = gpu_backend.bsgd_train(cp.asarray(X), cp.asarray(y), cp.asarray(order),
                                                     margin=margin, **kw)
            runs[margin] = (cp.asnumpy(sv), cp.asnumpy(a), n_sv, st)
        np.testing.assert_array_equal(runs["auto"][1], runs["columns"][1])  # auto = columns at 40 features
        f_c = decision(sv_c, a_c, n_c)
        for margin in ("rows", "columns"):
            sv, a, n_sv, st = runs[margin]
            assert n_sv <= budget
            f = decision(sv, a, n_sv)
            if budget > n:  # no merges: the same SVs, coefficients up to rounding
                assert n_sv == n_c and st["violations"] == st_c["violations"]
                np.testing.assert_allclose(f, f_c, rtol=1e-7, atol=1e-7 * np.abs(f_c).max())
            else:  # merges: the runs may part at a near-tie but stay close
                assert np.corrcoef(f, f_c)[0, 1] > 0.98
                assert abs(st["merges"] - st_c["merges"]) <= 0.05 * st_c["merges"] + 2


def test_gpu_loop_reads_float32_sparse_x_as_the_cpu_loop(gpu_backend):
    """bsgd_train<double> reads X through a raw double pointer: a float32 CSR X (densified on the device,
    which keeps its dtype) must be cast, as the CPU twin does, not handed to the kernel as float32."""
    import cupy as cp
    import cupyx.scipy.sparse as csp

    cpu = get_backend("cpu")
    rng = np.random.default_rng(5)
    n, d = 300, 40
    X = (rng.random((n, d)) * (rng.random((n, d)) < 0.3)).astype(np.float32)
    y = np.where(X[:, :3].sum(axis=1) > X[:, 3:6].sum(axis=1), 1.0, -1.0)
    order = rng.permutation(n)
    kw = dict(t0=0, lam=1.0 / (8 * n), gamma=0.5, budget=n + 1, n_merge=2, merge="cascade")
    Xs = sp.csr_matrix(X)
    sv_c, a_c, n_c, st_c = cpu.bsgd_train(Xs, y, order, **kw)
    for margin in ("rows", "columns"):
        sv, a, n_g, st = gpu_backend.bsgd_train(csp.csr_matrix(Xs), cp.asarray(y), cp.asarray(order),
                                                margin=margin, **kw)
        assert n_g == n_c and st["violations"] == st_c["violations"]
        np.testing.assert_allclose(cp.asnumpy(a)[:n_g], a_c[:n_c], rtol=1e-12)
        np.testing.assert_array_equal(cp.asnumpy(sv)[:n_g], sv_c[:n_c])
    with pytest.raises(ValueError, match="sv of shape"):
        gpu_backend.bsgd_train(cp.asarray(X), cp.asarray(y), cp.asarray(order), sv=cp.zeros((n + 2, d - 1)),
                               alpha=cp.zeros(n + 2), **kw)


def test_gpu_fit_refuses_too_wide_data_before_densifying(gpu_backend, monkeypatch):
    """The GPU loop keeps x and z (2 d doubles) in shared memory: 20,000 features exceed any device's
    per-block limit. fit says so before its dense n x d copy of sparse X, which on real data (rcv1-like
    widths) runs out of memory first and then blamed the budget."""
    import cupyx.scipy.sparse as csp

    X = csp.csr_matrix(sp.random(20, 20_000, density=0.001, format="csr", random_state=0))

    def no_dense(self, *args, **kwargs):
        raise AssertionError("sparse X densified before the shared-memory check")

    monkeypatch.setattr(type(X), "toarray", no_dense)
    with pytest.raises(ValueError, match=r"20000 features need \d+ bytes.*device='cpu'"):
        BudgetSVC(device="gpu", random_state=0).fit(X, np.arange(20) % 2)


def test_bench_entry_sizes_the_budget_without_changing_its_parameters():
    """The bench's budget rows size the budget to the data (10% of the rows, 10 .. 500) in fit, which set
    ``self.budget``: get_params and clone then gave the sized value instead of the parameter (scikit-learn's
    rule is that fit leaves parameters alone). The sized budget is the fitted ``budget_``; same model."""
    from sklearn.base import clone

    from gpusvm.bench.registry import solvers

    X, y = load_bundled("breast_cancer")
    budget = X.shape[0] // 10  # (569 rows: 56)
    est = solvers()["budget-mm"].make({"C": 1.0, "gamma": 0.1}, "cpu")
    before = est.get_params()
    est.fit(X, y)
    assert est.get_params() == before and clone(est).get_params() == before
    assert est.budget_ == budget and est.budget == before["budget"] == 500
    ref = BudgetSVC(C=1.0, gamma=0.1, budget=budget, n_merge=3, merge="cascade", epochs=1, random_state=0,
                    device="cpu").fit(X, y)
    assert 0 < est.n_support_.sum() <= budget and est.n_merges_ == ref.n_merges_ > 0
    np.testing.assert_array_equal(est.dual_coef_, ref.dual_coef_)
    np.testing.assert_array_equal(est.decision_function(X), ref.decision_function(X))

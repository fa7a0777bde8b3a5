"""float32 Gram values on problems they cannot describe (gpusvm._solvers._common.resolve_gram_dtype), and
the batched decomposition's guards against the steps such values led to.

Reference: the float64 solution of the same problem (LIBSVM's float cache fails on these problems too:
scikit-learn's SVC ends 845 steps on the blobs below at a dual objective of -6.3, below alpha = 0's).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC as SkSVC

from gpusvm import SVC, get_backend
from gpusvm._backend.ops.gram_errors import errors_from_gram
from gpusvm._gram import GramSpec
from gpusvm._solvers import _common, smo_batched
from gpusvm._solvers._common import (FLOAT32_MAX_CURVATURE_ERROR, FLOAT32_MAX_DIAGONAL_ERROR, float32_gram_error,
                                     float32_gram_errors, resolve_gram_dtype)
from gpusvm.bench.objectives import sklearn_svc_objective

CPU = get_backend("cpu")
POLY = GramSpec("poly", gamma=1e-3, degree=3, coef0=1.0)


def _blobs(offset, n=200, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.normal(scale=1.5, size=(n, 2)) + 4.0 * np.eye(2)[y] + offset
    return X, y


@pytest.mark.parametrize("computed_in", ["float64", "float32"])
def test_float32_gram_error_separates_scaled_data_from_data_far_from_the_origin(computed_in):
    Xs = StandardScaler().fit_transform(load_breast_cancer().data)
    X_far, _ = _blobs(1000.0)
    for spec in (GramSpec("rbf", gamma=0.03), GramSpec("linear"), GramSpec("poly", gamma=0.03, degree=3, coef0=1.0)):
        err = float32_gram_error(CPU, Xs, spec, computed_in=computed_in)
        assert 0.0 <= err < 1e-6, spec
        assert resolve_gram_dtype(CPU, Xs, spec, None, "float32", computed_in=computed_in) == "float32"
    for spec in (GramSpec("linear"), POLY):
        err = float32_gram_error(CPU, X_far, spec, computed_in=computed_in)
        assert err > 100 * FLOAT32_MAX_CURVATURE_ERROR, spec
        assert resolve_gram_dtype(CPU, X_far, spec, None, "float32", computed_in=computed_in) == "float64"
    # float64 asked for stays float64; rounding float64 RBF values loses nothing far from the origin
    assert resolve_gram_dtype(CPU, Xs, POLY, None, "float64", computed_in=computed_in) == "float64"
    assert float32_gram_error(CPU, X_far, GramSpec("rbf", gamma=0.1), computed_in="float64") < 1e-6


def test_float32_gram_error_without_curvature():
    # a sigmoid saturated at 1 has no positive curvature anywhere; one point has no pair
    X, _ = _blobs(100.0, n=20)
    assert float32_gram_error(CPU, X, GramSpec("sigmoid", gamma=1e-3)) == 0.0
    assert float32_gram_error(CPU, X[:1], POLY) == 0.0


@pytest.mark.parametrize("decomposition", ["pairwise", "batched"])
def test_poly_far_from_the_origin_matches_the_float64_solution(decomposition):
    """Blobs shifted by 300: float32 values (LIBSVM's Qfloat) ended 12% (pair-at-a-time) and 26% (batched)
    below the optimal dual objective, decision values off by 30% of their range and more; the default
    now stores float64 values there."""
    X, y = _blobs(300.0)
    kw = dict(C=1.0, kernel="poly", gamma=1e-3, degree=3, coef0=1.0, decomposition=decomposition, device="cpu")
    ref = SVC(**kw, gram_dtype="float64").fit(X, y)
    m = SVC(**kw).fit(X, y)  # gram_dtype="float32", the default
    D_ref, D = sklearn_svc_objective(ref), sklearn_svc_objective(m)
    assert D == pytest.approx(D_ref, rel=1e-6)
    # LIBSVM's float cache (scikit-learn's SVC) ends 3.7% below on this problem
    sk = SkSVC(C=1.0, kernel="poly", gamma=1e-3, degree=3, coef0=1.0).fit(X, y)
    assert sklearn_svc_objective(sk) < 0.99 * D
    f_ref = ref.decision_function(X)
    np.testing.assert_allclose(m.decision_function(X), f_ref, rtol=0, atol=1e-4 * np.ptp(f_ref))


def test_batched_local_curvature_from_the_stored_rows(monkeypatch):
    """The local solver took curvatures from float64 diagonals while the gradient moved by float32 rows:
    on polynomial values near 8e9 their rounding of K_ii (about 3,000) exceeded the curvatures, each step
    undid the last, and the decomposition repeated one round forever (the gap stuck at 2.49; the stall
    guard now stops it there, not converged). With the
    curvatures from the stored rows it converges in a few rounds, even when float32 is forced. (Those
    float32 values do not describe the problem: the float64 gradient then finds the gap open, and float64
    rows finish the solve.)"""
    monkeypatch.setattr(smo_batched, "resolve_gram_dtype", lambda *a, **k: "float32")
    X, y = _blobs(1000.0, n=80)
    yy = np.where(y == 1, 1.0, -1.0)
    res = smo_batched.solve_batched(CPU, X, yy, GramSpec("poly", gamma=1e-3, degree=3), np.ones(80), tol=1e-3,
                                    max_iter=200, cache_bytes=2**24, gram_dtype="float32")
    assert res.converged and res.info["float32_rounds"] < 50
    assert res.info["certified"] and res.info["float64_polish"] and res.info["gram_dtype"] == "float64"


@pytest.mark.parametrize("gram_dtype", ["float64", "float32"])
def test_batched_stops_when_a_round_moves_nothing(monkeypatch, gram_dtype):
    """A round that moves no alpha would be repeated forever (same state, same working set): the solver
    stops, not converged, and SVC says why in its ConvergenceWarning. With float32 rows the stall is
    first checked on the float64 gradient, and float64 rows get one more round (which stalls too)."""

    def no_move(K_BB, yB, aB, GB, CB, dB, *args):
        return aB.copy(), np.array([0], dtype=np.int64), np.array([0.0])

    monkeypatch.setattr(CPU, "local_smo", no_move, raising=False)
    X, y = _blobs(0.0, n=60)
    res = smo_batched.solve_batched(CPU, X, np.where(y == 1, 1.0, -1.0), GramSpec("rbf", gamma=0.5),
                                    np.ones(60), tol=1e-3, max_iter=500, cache_bytes=2**24, gram_dtype=gram_dtype)
    assert res.info["stalled"] and not res.converged
    assert res.n_iter == (1 if gram_dtype == "float64" else 2)
    assert res.info["float64_polish"] == (gram_dtype == "float32") and res.info["gram_dtype"] == "float64"
    with pytest.warns(ConvergenceWarning, match="1 stalled"):
        SVC(gamma=0.5, decomposition="batched", device="cpu", max_iter=500).fit(X, y)


def test_scaled_data_keep_float32_rows():
    X, y = _blobs(0.0)
    X = StandardScaler().fit_transform(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = smo_batched.solve_batched(CPU, X, np.where(y == 1, 1.0, -1.0), GramSpec("poly", gamma=0.5),
                                        np.ones(200), tol=1e-3, max_iter=-1, cache_bytes=2**24, gram_dtype="float32")
    assert res.info["gram_dtype"] == "float32" and not res.info["stalled"]
    assert _common.FLOAT32_MAX_CURVATURE_ERROR == FLOAT32_MAX_CURVATURE_ERROR


def test_gpu_poly_far_from_the_origin_matches_the_float64_solution(gpu_backend):
    """The GPU's default path (batched, float32 rows asked for) on the problem of
    test_poly_far_from_the_origin_matches_the_float64_solution: the same solution as the CPU's float64
    pair-at-a-time solver."""
    X, y = _blobs(300.0)
    kw = dict(C=1.0, kernel="poly", gamma=1e-3, degree=3, coef0=1.0)
    ref = SVC(**kw, gram_dtype="float64", device="cpu").fit(X, y)
    m = SVC(**kw, device="gpu").fit(gpu_backend.asarray(X), y)
    assert float(m.objective_[0]) == pytest.approx(float(ref.objective_[0]), rel=1e-6)
    f_ref = ref.decision_function(X)
    f = gpu_backend.to_host(m.decision_function(gpu_backend.asarray(X)))
    np.testing.assert_allclose(f, f_ref, rtol=0, atol=1e-4 * np.ptp(f_ref))


@pytest.mark.parametrize("decomposition", ["pairwise", "batched"])
def test_verbose_says_when_float32_is_promoted(decomposition, capsys):
    X, y = _blobs(300.0, n=60)
    SVC(kernel="linear", decomposition=decomposition, verbose=True, device="cpu").fit(X, y)
    assert "stored as float64" in capsys.readouterr().out
    SVC(kernel="linear", decomposition=decomposition, verbose=True, device="cpu").fit(X - X.mean(axis=0), y)
    assert "stored as float64" not in capsys.readouterr().out


def test_alfpgm_polish_curvature_from_the_stored_rows(monkeypatch):
    """ALFPGM's SMO polish had the batched solver's mixed curvatures (float64 diagonal, float32 rows): on
    the forced-float32 problem of test_batched_local_curvature_from_the_stored_rows it had not converged
    after 300 rounds (18 with the stored rows' diagonal). Those float32 values do not describe the problem:
    the float64 gradient at the float32 stop has a gap of 2,105, and float64 rows go on from there (ALFPGM
    then needs about 1,500 more rounds on this ill-conditioned problem, 2,300 from a cold float64 start),
    so only the float32 phase is checked here, within max_iter = 120 (it took fewer than 30 rounds on one
    2-core AMD EPYC, 61 on a Zen 4 one, whose BLAS rounds the float32 rows differently; gap 1,646 there)."""
    from gpusvm._solvers import alfpgm

    monkeypatch.setattr(alfpgm, "resolve_gram_dtype", lambda *a, **k: "float32")
    X, y = _blobs(1000.0, n=80)
    res = alfpgm.solve_alfpgm(CPU, X, np.where(y == 1, 1.0, -1.0), GramSpec("poly", gamma=1e-3, degree=3),
                              np.ones(80), tol=1e-3, max_iter=120, cache_bytes=2**24)
    assert res.info["certified"] and res.info["float64_polish"] and res.info["float32_rounds"] < 120
    assert res.info["float32_stop_gap"] > 1.0 and res.info["gram_dtype"] == "float64"


def test_float32_rbf_diagonal_cancellation_promotes_to_float64():
    """gamma=1e6 on standardized data: float32 rows round ||x||^2 + ||x||^2 - 2 x.x to up to 2e-6, so 34
    of 200 RBF diagonals read 0.15-0.9 for 1. The median over pairs measured 2e-10 (float32 kept), and the
    batched SMO stopped at objective 99.907 (KKT violation 0.047 on the true gram, tol 1e-3; scikit-learn
    99.9216) without a warning. The worst diagonal now promotes the values to float64."""
    from sklearn.datasets import make_classification
    from sklearn.preprocessing import StandardScaler

    X, y = make_classification(200, 5, flip_y=0.1, random_state=0)
    X = StandardScaler().fit_transform(X)
    pair, diag = float32_gram_errors(CPU, X, GramSpec("rbf", gamma=1e6), computed_in="float32")
    assert pair < FLOAT32_MAX_CURVATURE_ERROR and diag > 1e-2  # (the median alone keeps float32)
    assert resolve_gram_dtype(CPU, X, GramSpec("rbf", gamma=1e6), None, "float32", computed_in="float32") == "float64"
    assert max(float32_gram_errors(CPU, X, GramSpec("rbf", gamma=0.2), computed_in="float32")) < 1e-6
    m = SVC(gamma=1e6, decomposition="batched", device="cpu").fit(X, y)
    np.testing.assert_allclose(m.objective_[0], 99.92156219, rtol=1e-6)


def test_raw_pixel_values_keep_float32_rbf_rows():
    """skin_nonskin's kind of data (3 raw 0-255 features, gamma=0.03), centred as the batched solver does:
    the worst float32 diagonal is off by about 1e-4 of the curvatures (uniform pixels; skin_nonskin 2.9e-5,
    whose float32 solve reached LIBSVM's objective to 3e-7 on an H100), below FLOAT32_MAX_DIAGONAL_ERROR,
    so the rows stay float32."""
    from gpusvm._solvers.smo_batched import centered_for_rbf

    X = np.random.default_rng(0).integers(0, 256, size=(5000, 3)).astype(np.float64)
    Xc, sq = centered_for_rbf(CPU, X, CPU.row_sqnorms(X, np.float64))
    spec = GramSpec("rbf", gamma=0.03)
    pair, diag = float32_gram_errors(CPU, Xc, spec, sq, computed_in="float32")
    assert 0 < diag < FLOAT32_MAX_DIAGONAL_ERROR and pair < FLOAT32_MAX_CURVATURE_ERROR
    assert resolve_gram_dtype(CPU, Xc, spec, sq, "float32", computed_in="float32") == "float32"


def _errors_reference(be, X, spec, *, computed_in="float64", sample=64):
    """float32_gram_errors by its array code (the GPU op's, errors_from_gram) on the CPU: the sample
    and Gram values as the function takes them, by the general gram op."""
    n = int(X.shape[0])
    m = min(n, sample)
    if m < 2:
        return 0.0, 0.0
    S = be.take_rows(X, np.array([(k * (n - 1)) // (m - 1) for k in range(m)]))
    sq = be.row_sqnorms(S, np.float64) if spec.kind == "rbf" else None
    K = be.gram(S, S, spec, x_sqnorm=sq, y_sqnorm=sq, dtype=np.float64)
    K32 = K.astype(np.float32)
    if computed_in == "float32":
        S32 = S.astype(np.float32)
        K32 = be.gram(S32, S32, spec, x_sqnorm=sq, y_sqnorm=sq, dtype=np.float32)
    return errors_from_gram(np, K, K32, computed_in == "float32" and spec.kind == "rbf")


@pytest.mark.parametrize("computed_in", ["float64", "float32"])
def test_compiled_cpu_float32_errors_equal_the_numpy_expressions(computed_in):
    """The CPU path of float32_gram_errors (the sample Gram's upper triangle without the gram driver, and
    one compiled pass for the error terms and medians) gives the floats of its array code (the GPU's), to
    the bit."""
    import scipy.sparse as sp

    rng = np.random.default_rng(7)
    specs = [GramSpec("rbf", 0.5), GramSpec("rbf", 1e6), GramSpec("poly", 0.3, coef0=1.0, degree=3),
             GramSpec("linear"), GramSpec("sigmoid", 0.01, coef0=0.5)]
    cases = 0
    for n, shift, dup in [(200, 0.0, False), (63, 0.0, False), (2, 0.0, False), (150, 300.0, False),
                          (120, 0.0, True), (90, 1e3, False)]:
        X = rng.normal(size=(n, 5)) + shift
        if dup:
            X[::2] = X[0]  # many pairs without curvature
        for spec in specs:
            for Xin in (X, X.astype(np.float32), sp.csr_matrix(X)):
                with np.errstate(all="ignore"):
                    got = float32_gram_errors(CPU, Xin, spec, computed_in=computed_in)
                    want = _errors_reference(CPU, Xin, spec, computed_in=computed_in)
                np.testing.assert_array_equal(np.array(got), np.array(want))
                cases += 1
    assert cases == 90


def test_pair_limit_decides_as_the_median_measure():
    """resolve_gram_dtype asks the CPU op only whether the median pair measure exceeds the limit
    (_pair_median_above, no median): the same answer as the measure itself for limits at, just below and
    just above every ratio (each middle pair of an even count straddled by one of them), on samples with
    NaN values, without curvature (no pair) and of odd and even pair counts."""
    from gpusvm._backend.ops.gram_errors import _errors_tail, _pair_median_above, sample_gram_cpu, upper_indices

    rng = np.random.default_rng(3)
    checked = straddled = nan_pairs = 0
    for m, kind, shift in [(64, "rbf", 0.0), (9, "poly", 300.0), (8, "linear", 1e3), (5, "rbf", 0.0),
                           (12, "poly", 0.0), (2, "linear", 50.0), (7, "nan", 0.0), (6, "dup", 0.0)]:
        S = rng.normal(size=(m, 3)) + shift
        spec = GramSpec("rbf", 0.5) if kind in ("rbf", "nan", "dup") else GramSpec(
            kind, 1e-3, degree=3, coef0=1.0) if kind == "poly" else GramSpec("linear")
        if kind == "dup":
            S[:] = S[0]  # no pair with a positive curvature
        K = sample_gram_cpu(CPU, S, spec, upper_only=spec.kind == "rbf")
        K = K if K.ndim == 1 else K[upper_indices(m)]
        if kind == "nan":  # values beyond float32's range: infinite errors, whose differences are NaN ratios
            with np.errstate(all="ignore"):
                K = sample_gram_cpu(CPU, S * 1e20, GramSpec("linear"))[upper_indices(m)]
        with np.errstate(all="ignore"):
            pair, _, _, c = _errors_tail(K, K.astype(np.float32), m, False)
        # the ratios, from the array code of the GPU op (errors_from_gram's P / A)
        Kf = np.zeros((m, m))
        Kf[upper_indices(m)] = K
        Kf = Kf + np.triu(Kf, 1).T
        with np.errstate(all="ignore"):
            E = Kf.astype(np.float32).astype(np.float64) - Kf
            d, e = np.diagonal(Kf), np.diagonal(E)
            A = d[:, None] + d[None, :] - 2.0 * Kf
            P = np.maximum(np.abs(e[:, None] + e[None, :] - 2.0 * E), np.abs(e)[:, None] + np.abs(e)[None, :])
            ratios = np.sort((P / np.where(A > 0, A, 1.0))[np.triu(A > 0, 1)])
        assert ratios.shape[0] == c
        nan_pairs += bool(np.isnan(pair))
        limits = [0.0, 1e-5, np.inf] + [f(r) for r in ratios[np.isfinite(ratios)]
                                         for f in (lambda r: r, lambda r: np.nextafter(r, -np.inf),
                                                   lambda r: np.nextafter(r, np.inf))]
        for limit in limits:
            want = c > 0 and bool(pair > limit)
            assert _pair_median_above(K, m, float(limit)) == want, (m, kind, limit)
            checked += 1
            straddled += c % 2 == 0 and c > 0 and ratios[c // 2 - 1] <= limit < ratios[c // 2]
    assert checked > 2000 and straddled >= 6 and nan_pairs >= 1
    # the op's answer with pair_limit is on the limit's side of the measure (inf above, 0.0 otherwise)
    X = np.random.default_rng(0).normal(size=(80, 2)) + 300.0
    for spec in (POLY, GramSpec("rbf", 0.5), GramSpec("linear")):
        pair, diag = float32_gram_errors(CPU, X, spec)
        fast = float32_gram_errors(CPU, X, spec, pair_limit=FLOAT32_MAX_CURVATURE_ERROR)
        assert fast == ((np.inf if pair > FLOAT32_MAX_CURVATURE_ERROR else 0.0), diag)


def test_gpu_sample_gram_errors_agree_with_the_cpu_op(gpu_backend):
    """The fused op sample_gram_errors on the GPU (array code over CuPy) against its compiled CPU twin: the
    same decision, and measures of the same size. Each device computes its Gram values its own way: with
    float32 values rounded from float64 ones that moves tiny measures (RBF values near 0) by up to 1%
    (seen on the emulator), with values computed from float32 rows by up to a factor of 2."""
    rng = np.random.default_rng(3)
    cpu = get_backend("cpu")
    specs = [GramSpec("rbf", 0.5), GramSpec("rbf", 1e-7), GramSpec("poly", 1e-3, coef0=1.0, degree=3),
             GramSpec("linear")]
    for shift in (0.0, 300.0):
        S = rng.normal(size=(64, 5)) + shift
        for spec in specs:
            sq = (S * S).sum(axis=1) if spec.kind == "rbf" else None
            for computed_in in ("float64", "float32"):
                want = cpu.sample_gram_errors(S, spec, sq, computed_in)
                got = gpu_backend.sample_gram_errors(gpu_backend.asarray(S), spec,
                                                     None if sq is None else gpu_backend.asarray(sq), computed_in)
                if computed_in == "float64":
                    np.testing.assert_allclose(got, want, rtol=2e-2, atol=1e-15)
                else:
                    assert all(w / 4 <= g <= 4 * w for g, w in zip(got, want)), (spec, got, want)
                near = [4 * w > T and w < 4 * T for w, T in zip(want, (FLOAT32_MAX_CURVATURE_ERROR,
                                                                     FLOAT32_MAX_DIAGONAL_ERROR))]
                if not any(near):  # (within the factor above of a threshold either decision is right)
                    promoted = [g[0] > FLOAT32_MAX_CURVATURE_ERROR or g[1] > FLOAT32_MAX_DIAGONAL_ERROR
                                for g in (got, want)]
                    assert promoted[0] == promoted[1], (shift, spec, computed_in, got, want)


def test_pairwise_objective_is_libsvms_running_one_and_float64_rows_report_their_own():
    """The pair-at-a-time loop reports LIBSVM's ``obj`` (from its running gradient): with float32 values a long
    solve at a huge C carries their rounding into it (the SVC docstring's example: 66,071 steps on 60 noisy
    points, 3e-5 relative); float64 values report the objective of the returned coefficients."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 2))
    y = (X[:, 0] + 0.8 * rng.normal(size=60) > 0).astype(int)
    m32 = SVC(C=1e10, gamma=1.0, device="cpu").fit(X, y)
    sk = SkSVC(C=1e10, gamma=1.0).fit(X, y)
    np.testing.assert_array_equal(m32.n_iter_, sk.n_iter_)  # LIBSVM's path, hence its drift
    D32 = sklearn_svc_objective(m32)
    assert D32 == pytest.approx(sklearn_svc_objective(sk), rel=1e-12)
    assert 1e-5 < float(m32.objective_[0]) / D32 - 1.0 < 1e-4
    m64 = SVC(C=1e10, gamma=1.0, device="cpu", gram_dtype="float64").fit(X, y)
    D64 = sklearn_svc_objective(m64)
    assert float(m64.objective_[0]) == pytest.approx(D64, rel=1e-9)
    assert D64 == pytest.approx(D32, rel=1e-6)  # the same problem solved: only the report drifted

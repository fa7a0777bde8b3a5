"""Multi-class SVC on the CPU with many classes: fit and predict with the class pairs' coefficients
(``_pair_coef``) dense, as before, or as a CSR matrix (gpusvm._ovo.pair_coef_is_sparse), against scikit-learn.

Usage::

    PYTHONPATH=. python benchmarks/many_class_predict.py [--repeat 5] [--cases b200x20,b100x30]

Per case, in one process, the variants alternate in each round (dense layout, CSR layout, scikit-learn's SVC):
each fits the training set, then predicts its first 2,000 rows (all of them when fewer). "dense" is the layout
every model had before: the same code with the rule's size floor (``PAIR_COEF_SPARSE_MIN_BYTES``) set to
infinity, which builds the dense matrix as before and predicts with it (the dense models are the code before's
to the bit, checked by the change's bit-identity script). Rows: medians over ``--repeat`` rounds of process CPU
seconds (``time.process_time``, all threads) and wall seconds, after one warm-up of each (Numba's cache); the
traced peak (tracemalloc, NumPy's buffers included) of one more fit and one more predict of each, traced
apart from the timed runs. Also checked per case: the dense and CSR models have the same support, dual_coef_,
intercept_; their decision values ("ovo") agree to 1e-12 of their magnitude and their predictions are equal.
All fits are SVC(C=1, gamma="scale"), rbf.
"""

from __future__ import annotations

import math
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from many_classes import _blobs, cli_main  # noqa: E402  (_blobs: make_blobs with 10 features, seed 0)


CASES = {
    "b200x20": ("make_blobs 200 classes x 20 points, 10 features, cluster_std=2 (19,900 pairs)", _blobs(200, 20, 2.0)),
    "b100x30": ("make_blobs 100 classes x 30 points, 10 features, cluster_std=3 (4,950 pairs)", _blobs(100, 30, 3.0)),
}
N_PREDICT = 2000


def _timed(fn):
    c, w = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - c, time.perf_counter() - w


def _traced(fn):
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def run_case(name, repeat):
    import warnings

    import scipy.sparse as sp
    from sklearn.svm import SVC as SkSVC

    import gpusvm._ovo as ovo
    from gpusvm import SVC

    X, y = CASES[name][1]()
    Xt = X[:N_PREDICT]
    floor = ovo.PAIR_COEF_SPARSE_MIN_BYTES

    def fit(variant):
        if variant == "scikit-learn":
            return SkSVC(C=1.0, gamma="scale").fit(X, y)
        ovo.PAIR_COEF_SPARSE_MIN_BYTES = math.inf if variant == "dense" else floor
        try:
            return SVC(device="cpu", C=1.0, gamma="scale").fit(X, y)
        finally:
            ovo.PAIR_COEF_SPARSE_MIN_BYTES = floor

    variants = ("dense", "csr", "scikit-learn")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        models = {v: fit(v) for v in variants}  # warm-up
        for v in variants:
            models[v].predict(Xt)
        d, s = models["dense"], models["csr"]
        layout = {v: type(models[v]._pair_coef).__name__ for v in ("dense", "csr")}
        same_model = all(np.array_equal(getattr(d, a), getattr(s, a)) for a in ("support_", "dual_coef_", "intercept_"))
        same_model = same_model and np.array_equal(s._pair_coef.toarray() if sp.issparse(s._pair_coef) else
                                                   s._pair_coef, d._pair_coef)
        d.decision_function_shape = s.decision_function_shape = "ovo"
        dd, ds = d.decision_function(Xt), s.decision_function(Xt)
        max_diff = float(np.max(np.abs(dd - ds)))
        scale = float(np.max(np.abs(dd)))
        d.decision_function_shape = s.decision_function_shape = "ovr"
        same_pred = bool(np.array_equal(d.predict(Xt), s.predict(Xt)))
        sk_agree = float(np.mean(models["scikit-learn"].predict(Xt) == s.predict(Xt)))
        pc = s._pair_coef
        info = {"n_sv": int(s.support_.shape[0]), "pair_coef_shape": list(pc.shape),
                "pair_coef_nnz": int(pc.nnz) if sp.issparse(pc) else int(np.count_nonzero(pc)),
                "dense_pair_coef_mb": 8 * pc.shape[0] * pc.shape[1] / 1e6, "layout": layout}
        times = {v: {"fit_cpu": [], "fit_wall": [], "predict_cpu": [], "predict_wall": []} for v in variants}
        for _ in range(repeat):
            for v in variants:
                m, c, w = _timed(lambda: fit(v))
                times[v]["fit_cpu"].append(c)
                times[v]["fit_wall"].append(w)
                _, c, w = _timed(lambda: m.predict(Xt))
                times[v]["predict_cpu"].append(c)
                times[v]["predict_wall"].append(w)
        peaks = {}
        for v in variants:
            holder = {}
            fit_peak = _traced(lambda: holder.setdefault("m", fit(v)))
            pred_peak = _traced(lambda: holder["m"].predict(Xt))
            peaks[v] = {"fit_mb": fit_peak / 1e6, "predict_mb": pred_peak / 1e6}
    med = {v: {k: statistics.median(t) for k, t in times[v].items()} for v in variants}
    n_classes = int(np.unique(y).shape[0])
    print(name, info, {v: {k: round(x, 3) for k, x in med[v].items()} for v in variants}, peaks, flush=True)
    return {"case": name, "description": CASES[name][0], "n": int(X.shape[0]), "n_classes": n_classes,
            "n_predict": int(Xt.shape[0]), "repeat": repeat, **info, "median_s": med, "all_s": times,
            "peak_traced_mb": peaks, "same_model": bool(same_model), "same_predictions": same_pred,
            "decision_max_abs_diff": max_diff, "decision_max_abs": scale, "sklearn_prediction_agreement": sk_agree}


def markdown(results, meta):
    lines = ["# Many classes: SVC fit and predict on the CPU, dense or CSR pair coefficients", "",
             f"Machine: {meta['machine']}. Commit {meta['commit']}. Command: `{meta['command']}`.", "",
             "Median of the rounds (process CPU seconds, all threads / wall seconds); in each round the three "
             "variants alternate in one process, each fitting the training set and predicting its first 2,000 "
             "rows. \"dense\": the layout before (the rule's size floor set to infinity: the code before, to the "
             "bit); \"CSR\": the default now. Both predict in blocks of rows of at most 64 MB of pair decision "
             "values (gpusvm.svc.PREDICT_BLOCK_BYTES, since 23da3df; the run at 085db35 predicted all 2,000 rows "
             "at once: 517 MB peak for either layout). Peak: tracemalloc's traced peak of one fit / one predict, "
             "run apart from the timed ones.", "",
             "| case | variant | fit CPU s | fit wall s | predict CPU s | predict wall s | fit peak MB | "
             "predict peak MB |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        for v, label in (("dense", "dense (before)"), ("csr", "CSR (after)"), ("scikit-learn", "scikit-learn")):
            m, p = r["median_s"][v], r["peak_traced_mb"][v]
            lines.append(f"| {r['case']} | {label} | {m['fit_cpu']:.3f} | {m['fit_wall']:.3f} | "
                         f"{m['predict_cpu']:.3f} | {m['predict_wall']:.3f} | {p['fit_mb']:.1f} | "
                         f"{p['predict_mb']:.1f} |")
    lines += ["", "| case | n_SV | pair coefficients (dense MB, nonzeros) | same model | same predictions | "
              "max abs decision difference (of max abs) | agreement with scikit-learn |",
              "|---|---:|---|---|---|---|---:|"]
    for r in results:
        lines.append(f"| {r['case']}: {r['description']} | {r['n_sv']:,} | {r['pair_coef_shape'][0]:,} x "
                     f"{r['pair_coef_shape'][1]:,} ({r['dense_pair_coef_mb']:.0f} MB, {r['pair_coef_nnz']:,} "
                     f"nonzero) | {'yes' if r['same_model'] else 'NO'} | {'yes' if r['same_predictions'] else 'NO'}"
                     f" | {r['decision_max_abs_diff']:.1e} ({r['decision_max_abs']:.3g}) | "
                     f"{r['sklearn_prediction_agreement']:.4f} |")
    return "\n".join(lines) + "\n"


def main():
    cli_main("many_class_predict_cpu", CASES, run_case, markdown, 5)


if __name__ == "__main__":
    main()

"""Merging duplicate training points (``deduplicate``): fit time and solution against the plain fit.

For each data set, in one run on one machine, after a warm-up fit of each on 2,000 rows: gpusvm SVC (and with --dcsvc, DCSVC at its defaults)
fitted with ``deduplicate=False`` and ``deduplicate=True``, on the CPU (process CPU seconds and wall
seconds of the fit, merging included), with the dual objective recomputed in float64 from each model's
dual_coef_ and support vectors by the same function, the number of support vectors, the test accuracy
and the largest difference of the two models' test decision values. The "auto" default merges when the
distinct (x, y) pairs are at most half of the rows; the table says which data sets that is.

Data and hyperparameters as the other benchmarks: a9a, ijcnn1 (test files), w8a, phishing (stratified
80/20, seed 0; benchmarks/svc_vs_sklearn.py) and skin_nonskin (raw 0-255 features, stratified 80/20,
seed 0, C=8, gamma=0.03; benchmarks/dcsvm_bench.py).

Usage: python benchmarks/dedupe_bench.py [--datasets skin_nonskin a9a w8a phishing ijcnn1] [--dcsvc]
       [--tag cpu]
Writes benchmarks/results/dedupe_<tag>.{json,md} after every data set.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import dcsvm_bench  # noqa: E402
import svc_vs_sklearn  # noqa: E402
from gpusvm import DCSVC, SVC  # noqa: E402
from gpusvm._dedupe import AUTO_MAX_DISTINCT_SHARE  # noqa: E402
from gpusvm.bench.objectives import sklearn_svc_objective  # noqa: E402
from _results import run_datasets  # noqa: E402


def load(data_dir, name):
    if name == "skin_nonskin":
        Xtr, ytr, Xte, yte, _ = dcsvm_bench._load(name, data_dir, None, None)
        s = dcsvm_bench.SETUPS[name]
        return Xtr, ytr, Xte, yte, s["C"], s["gamma"]
    return svc_vs_sklearn.load(data_dir, name)


def fit_row(make, X, y, Xte, yte):
    est = make()
    c0, t0 = time.process_time(), time.perf_counter()
    est.fit(X, y)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    dec = np.asarray(est.decision_function(Xte))
    return est, dec, {
        "fit_s": wall, "cpu_s": cpu, "objective": sklearn_svc_objective(est), "n_sv": int(est.n_support_.sum()),
        "n_iter": int(np.sum(est.n_iter_)), "test_acc": float(np.mean(np.asarray(est.predict(Xte)) == yte)),
        "n_distinct": est.n_distinct_}


def run(name, data_dir, with_dcsvc):
    X, y, Xte, yte, C, gamma = load(data_dir, name)
    out = {"dataset": name, "n_train": int(X.shape[0]), "format": "csr" if hasattr(X, "tocsr") else "dense",
           "C": C, "gamma": gamma, "rows": []}
    models = [("svc", lambda dd: SVC(C=C, gamma=gamma, device="cpu", deduplicate=dd))]
    if with_dcsvc:
        models.append(("dcsvc", lambda dd: DCSVC(C=C, gamma=gamma, device="cpu", random_state=0, deduplicate=dd)))
    nw = min(2000, X.shape[0])  # warm-up (excluded): loads the compiled Numba functions of both paths
    for _, make in models:
        for dd in (False, True):
            make(dd).fit(X[:nw], y[:nw])
    for model, make in models:
        res = {}
        for dd in (False, True):
            est, dec, row = fit_row(lambda: make(dd), X, y, Xte, yte)
            row.update(model=model, deduplicate=dd)
            res[dd] = (dec, row)
            out["rows"].append(row)
            print(f"{name} {model} deduplicate={dd}: {row['cpu_s']:.2f} CPU-s, obj {row['objective']:.9g}, "
                  f"{row['n_sv']} SVs, acc {row['test_acc']:.4%}", flush=True)
        plain, merged = res[False][1], res[True][1]
        merged["cpu_speedup"] = plain["cpu_s"] / merged["cpu_s"]
        merged["objective_rel_diff"] = abs(merged["objective"] - plain["objective"]) / abs(plain["objective"])
        merged["n_sv_rel_diff"] = (merged["n_sv"] - plain["n_sv"]) / plain["n_sv"]
        merged["max_abs_decision_diff"] = float(np.max(np.abs(res[True][0] - res[False][0])))
    n_distinct = out["rows"][-1]["n_distinct"]
    out["distinct_share"] = n_distinct / out["n_train"]
    out["auto_merges"] = out["distinct_share"] <= AUTO_MAX_DISTINCT_SHARE
    return out


def markdown(results, meta):
    lines = ["# Merging duplicate training points (`deduplicate`), CPU", "",
             f"Machine: {meta['machine']}. Code at {meta['commit']}. One run; process CPU seconds of each fit "
             "(merging included). `auto` merges when distinct (x, y) pairs <= "
             f"{AUTO_MAX_DISTINCT_SHARE:.0%} of the rows. Objective: dual objective recomputed in float64 "
             "from each model's dual_coef_ and support vectors; decision diff: largest |difference| of the "
             "two models' test decision values.", "",
             "| data set (n_train) | distinct (x, y) | auto merges | model | plain CPU-s | merged CPU-s | speed-up "
             "| rel. objective diff | SVs plain / merged | test acc plain / merged | max decision diff |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        rows = r["rows"]
        for i in range(0, len(rows), 2):
            p, m = rows[i], rows[i + 1]
            lines.append(
                f"| {r['dataset']} ({r['n_train']:,}, {r['format']}) | {m['n_distinct']:,} ({r['distinct_share']:.0%}) "
                f"| {'yes' if r['auto_merges'] else 'no'} | {p['model']} | {p['cpu_s']:.2f} | {m['cpu_s']:.2f} "
                f"| {m['cpu_speedup']:.2f}x | {m['objective_rel_diff']:.1e} | {p['n_sv']:,} / {m['n_sv']:,} "
                f"| {p['test_acc']:.2%} / {m['test_acc']:.2%} | {m['max_abs_decision_diff']:.1e} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["skin_nonskin", "a9a", "w8a", "phishing", "ijcnn1"])
    ap.add_argument("--dcsvc", action="store_true", help="also DCSVC (defaults) with and without merging")
    ap.add_argument("--tag", default="cpu")
    args = ap.parse_args()
    run_datasets(f"dedupe_{args.tag}", args.datasets, lambda name, d: run(name, d, args.dcsvc), markdown)

if __name__ == "__main__":
    main()

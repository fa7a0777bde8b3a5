"""Sparse input on the CPU: time and memory of SVC on wide CSR data and of BudgetSVC on full w8a.

Two measurements, each with the current code path and the dense path it replaced:

1. ``wide``: SVC (rbf, gamma=0.2, C=1) fit on a generated 3,000 x 1,000,000 CSR problem with 20 nonzeros
   per row, then predict on the same rows (commit fd7b105). Data as tests/test_svc.py's wide-sparse test,
   scaled up: half of each row's columns among the first 60 (the informative ones), half anywhere above;
   values uniform in [0.5, 1.5); label 1 when the row's sum over columns 0-29 exceeds its sum over 30-59;
   seed 2. ``current``: the default (two CSR sides of a gram product wider than both 4,096 features and
   the other side's rows are multiplied sparse @ sparse). ``densify forced``: ``gram.WIDE_MIN_FEATURES``
   raised above d, so ``densify_pays`` is always true and each CSR tile's other side is densified row by
   row, as before fd7b105 (the rest of the code is today's).
2. ``w8a``: BudgetSVC (C=8, gamma=0.03, budget=500, n_merge=2, cascade merging, one epoch, seed 0) fit on
   all 49,749 rows of w8a (commit f72159b). ``current``: CSR input, read through its nonzeros.
   ``dense copy``: the CSR matrix densified inside the measured region, then the same fit on the dense
   array (before f72159b, fit made this n x d copy itself; today's dense path also makes a temporary
   |X| of the same size in check_X's overflow check, so this is not the old code's peak).

Per variant: one untimed warm-up fit on a small subset (Numba JIT); ``--repeat`` timed runs (wall and
process CPU seconds, min and median; peak RSS increase over the RSS before the run, psutil sampled every
5 ms); then one run under tracemalloc for the traced peak (allocations made through Python's and NumPy's
allocators, which include arrays that Numba-compiled code allocates). The variants' predictions /
support vectors are checked against each other.

Usage: GPUSVM_DATA=../shared/data python benchmarks/sparse_memory.py [--parts wide w8a] [--repeat 2] [--tag cpu]
Writes benchmarks/results/sparse_memory_<tag>.{json,md} after each part (a rerun overwrites the .md's
hand-written notes).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import scipy.sparse as sp

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from _results import run_datasets  # noqa: E402
from gpusvm import SVC, BudgetSVC  # noqa: E402
from gpusvm._backend.ops import gram as gram_op  # noqa: E402
from gpusvm.bench.harness import _PeakSampler  # noqa: E402
from gpusvm.datasets import load_svmlight  # noqa: E402

MB = 2**20
WIDE = dict(n=3000, d=1_000_000, nnz=20, seed=2)
SVC_KW = dict(C=1.0, gamma=0.2, device="cpu")
BUDGET_KW = dict(C=8.0, gamma=0.03, budget=500, n_merge=2, merge="cascade", epochs=1, random_state=0, device="cpu")


def wide_data(n, d, nnz, seed):
    rng = np.random.default_rng(seed)
    cols = rng.integers(0, 60, size=(n, nnz))
    cols[:, ::2] = rng.integers(60, d, size=(n, nnz // 2))
    X = sp.csr_matrix((rng.random(n * nnz) + 0.5, (np.repeat(np.arange(n), nnz), cols.ravel())), shape=(n, d))
    X.sum_duplicates()
    y = np.where(np.asarray(X[:, :30].sum(1)).ravel() > np.asarray(X[:, 30:60].sum(1)).ravel(), 1, 0)
    return X, y


def measure(fn, repeat):
    """``fn()`` returns (output, {phase: seconds}); timed runs with RSS sampling, then one traced run."""
    walls, cpus, rss, phases, out = [], [], [], [], None
    for _ in range(repeat):
        with _PeakSampler() as s:
            c0, w0 = time.process_time(), time.perf_counter()
            out, ph = fn()
            walls.append(time.perf_counter() - w0)
            cpus.append(time.process_time() - c0)
        rss.append((s.peak_rss - s.base_rss) / MB if s.peak_rss is not None else None)
        phases.append(ph)
    tracemalloc.start()
    try:
        fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return out, {"wall_s": walls, "cpu_s": cpus, "wall_min_s": min(walls), "wall_median_s": statistics.median(walls),
                 "cpu_min_s": min(cpus), "phases_s": phases, "rss_increase_mb": rss, "traced_peak_mb": peak / MB}


def run_wide(repeat):
    X, y = wide_data(**WIDE)
    out = {"dataset": "wide", "n": X.shape[0], "d": X.shape[1], "nnz": int(X.nnz), "settings": dict(SVC_KW),
           "data": dict(WIDE), "rows": []}
    saved, ref = gram_op.WIDE_MIN_FEATURES, None

    def fit_predict():
        t0 = time.perf_counter()
        m = SVC(**SVC_KW).fit(X, y)
        t1 = time.perf_counter()
        p = m.predict(X)
        return (p, int(m.support_vectors_.shape[0])), {"fit": t1 - t0, "predict": time.perf_counter() - t1}

    try:
        for variant, wide_min in (("current", saved), ("densify forced", 10 * X.shape[1])):
            gram_op.WIDE_MIN_FEATURES = wide_min
            SVC(**SVC_KW).fit(X[:300], y[:300]).predict(X[:300])  # warm-up (JIT)
            (pred, n_sv), row = measure(fit_predict, repeat)
            ref = pred if ref is None else ref
            row.update(variant=variant, n_sv=n_sv, train_accuracy=float(np.mean(pred == y)),
                       predictions_differ=int(np.sum(pred != ref)))
            out["rows"].append(row)
            print("wide", {k: v for k, v in row.items() if k != "phases_s"}, flush=True)
    finally:
        gram_op.WIDE_MIN_FEATURES = saved
    return out


def run_w8a(data_dir, repeat):
    X, y = load_svmlight(Path(data_dir) / "w8a.xz")
    out = {"dataset": "w8a", "n": X.shape[0], "d": X.shape[1], "nnz": int(X.nnz),
           "settings": {k: v for k, v in BUDGET_KW.items()}, "rows": []}
    ref = None
    for variant in ("current", "dense copy"):
        def fit(variant=variant):
            t0 = time.perf_counter()
            Xf = X.toarray() if variant == "dense copy" else X
            m = BudgetSVC(**BUDGET_KW).fit(Xf, y)
            return m, {"fit": time.perf_counter() - t0}

        sub = X[:2000].toarray() if variant == "dense copy" else X[:2000]
        BudgetSVC(**BUDGET_KW).fit(sub, y[:2000])  # warm-up (JIT)
        m, row = measure(fit, repeat)
        sv = np.asarray(m.support_vectors_)
        ref = sv if ref is None else ref
        row.update(variant=variant, n_sv=int(sv.shape[0]), train_accuracy=float(np.mean(m.predict(X) == y)),
                   same_support_vectors=bool(sv.shape == ref.shape and np.array_equal(sv, ref)))
        out["rows"].append(row)
        print("w8a", {k: v for k, v in row.items() if k != "phases_s"}, flush=True)
    return out


def markdown(results, meta):
    lines = ["# Sparse input on the CPU: wide CSR SVC and BudgetSVC on w8a, time and memory", "",
             f"Machine: {meta['machine']}. Code at {meta['commit']}. Command: `{meta['command']}`.", "",
             f"Times: wall and process CPU seconds over {meta['repeat']} runs (min, median). RSS: peak increase "
             "over the RSS before the run (psutil, 5 ms samples; largest over the runs). Traced peak: one more run "
             "under tracemalloc (Python/NumPy allocations). MB = 2**20 bytes.", ""]
    for res in results:
        if res["dataset"] == "wide":
            lines += [f"## SVC on {res['n']:,} x {res['d']:,} CSR, {res['data']['nnz']} nonzeros drawn per row "
                      f"({res['nnz'] / res['n']:.1f} stored after summing duplicates), C={res['settings']['C']}, "
                      f"gamma={res['settings']['gamma']}: fit, then predict on the same rows", "",
                      "`densify forced`: `gram.WIDE_MIN_FEATURES` raised above d, the dense-row path fd7b105 "
                      "replaced.", ""]
        else:
            s = res["settings"]
            lines += [f"## BudgetSVC on full w8a ({res['n']:,} x {res['d']}, {res['nnz']:,} nonzeros), "
                      f"C={s['C']}, gamma={s['gamma']}, budget={s['budget']}, n_merge={s['n_merge']}", "",
                      "`dense copy`: the CSR matrix densified inside the measured region, then fit on it "
                      "(the copy fit made before f72159b).", ""]
        lines += ["| variant | wall s (min / median) | CPU s (min) | fit s (min) | predict s (min) | RSS increase MB | "
                  "traced peak MB | SVs | train acc | check |", "|---|---|---|---|---|---|---|---|---|---|"]
        for r in res["rows"]:
            fit = min(p["fit"] for p in r["phases_s"])
            pred = min(p["predict"] for p in r["phases_s"]) if "predict" in r["phases_s"][0] else None
            rss = max(v for v in r["rss_increase_mb"] if v is not None) if any(
                v is not None for v in r["rss_increase_mb"]) else None
            check = (f"{r['predictions_differ']} predictions differ from current" if "predictions_differ" in r
                     else ("same SVs as current" if r["same_support_vectors"] else "SVs differ from current"))
            lines.append(f"| {r['variant']} | {r['wall_min_s']:.2f} / {r['wall_median_s']:.2f} | "
                         f"{r['cpu_min_s']:.2f} | "
                         f"{fit:.2f} | {'-' if pred is None else f'{pred:.2f}'} | "
                         f"{'-' if rss is None else f'{rss:.0f}'} | {r['traced_peak_mb']:.1f} | {r['n_sv']:,} | "
                         f"{r['train_accuracy']:.4f} | {check} |")
        lines.append("")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", nargs="+", default=["wide", "w8a"], choices=["wide", "w8a"])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--tag", default="cpu")
    args = ap.parse_args()
    run_datasets(f"sparse_memory_{args.tag}", args.parts,
                 lambda n, d: run_wide(args.repeat) if n == "wide" else run_w8a(d, args.repeat), markdown,
                 extra={"repeat": args.repeat})


if __name__ == "__main__":
    main()

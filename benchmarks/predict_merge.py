"""Prediction with equal support vectors merged (``svc._blocked_decision``, ``_dedupe.merge_equal_rows``).

A model fitted without merging duplicate training points (``deduplicate=False``, and "auto" on data with
more than half of its rows distinct) keeps copies among its support vectors. Their coefficients can be
summed into one row (exact), which is what the decision function does when it predicts at least
``svc.MERGE_SV_MIN_ROWS`` rows. For each data set (as benchmarks/svc_vs_sklearn.py: a9a, ijcnn1 with
their test files; w8a, phishing stratified 80/20, seed 0), in one run: the support vectors before and
after merging, the CPU time of finding the copies, and the test-set decision values with and without
merging (process CPU and wall seconds, best of ``--repeat`` alternating runs; largest difference).

Usage: python benchmarks/predict_merge.py [--datasets phishing w8a a9a ijcnn1] [--repeat 3] [--tag cpu]
Writes benchmarks/results/predict_merge_<tag>.{json,md} after every data set.
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

import svc_vs_sklearn  # noqa: E402
from _results import run_datasets  # noqa: E402
from gpusvm import SVC  # noqa: E402
from gpusvm._backend import get_backend  # noqa: E402
from gpusvm._dedupe import merge_equal_rows  # noqa: E402
from gpusvm.svc import _blocked_decision  # noqa: E402


def run(name, data_dir, repeat):
    be = get_backend("cpu")
    X, y, Xt, yt, C, gamma = svc_vs_sklearn.load(data_dir, name)
    m = SVC(C=C, gamma=gamma, device="cpu").fit(X, y)
    SV = m.support_vectors_
    c0 = time.process_time()
    merged = merge_equal_rows(be, SV, m._pair_coef)
    find_s = time.process_time() - c0
    args = (be, SV, m._pair_coef, m._pair_b, Xt, m._gram_spec(m._gamma))
    kw = {"sv_sqnorm": be.row_sqnorms(SV, np.float64), "x_sqnorm": be.row_sqnorms(Xt, np.float64)}
    times, decs = {False: [], True: []}, {}
    for _ in range(repeat):
        for merge in (False, True):
            c0, w0 = time.process_time(), time.perf_counter()
            decs[merge] = _blocked_decision(*args, **kw, merge_rows=merge)
            times[merge].append((time.process_time() - c0, time.perf_counter() - w0))
    plain, mer = min(times[False]), min(times[True])
    out = {"dataset": name, "n_test": int(Xt.shape[0]), "n_sv": int(SV.shape[0]),
           "n_sv_merged": int(SV.shape[0] if merged is None else merged[0].shape[0]), "find_cpu_s": find_s,
           "plain_cpu_s": plain[0], "plain_wall_s": plain[1], "merged_cpu_s": mer[0], "merged_wall_s": mer[1],
           "max_abs_diff": float(np.max(np.abs(decs[True] - decs[False])))}
    print(out, flush=True)
    return out


def markdown(results, meta):
    lines = ["# Prediction with equal support vectors merged (CPU)", "",
             f"Machine: {meta['machine']}. Code at {meta['commit']}. Command: `{meta['command']}`.", "",
             "SVC at its defaults (no data set here has half its rows repeated, so the fit does not merge "
             "duplicate points); decision values of the test set. CPU = process CPU seconds, best of the "
             "alternating repeats (wall in brackets); `find` = hashing and grouping the support vectors, "
             "included in the merged time.", "",
             "| data set | test rows | SVs | after merging | find (CPU s) | plain CPU s (wall) | merged CPU s (wall) "
             "| speed-up (CPU) | max abs diff |", "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r['dataset']} | {r['n_test']:,} | {r['n_sv']:,} | {r['n_sv_merged']:,} "
                     f"({100 * (1 - r['n_sv_merged'] / r['n_sv']):.0f}% fewer) | {r['find_cpu_s']:.3f} | "
                     f"{r['plain_cpu_s']:.2f} ({r['plain_wall_s']:.2f}) | {r['merged_cpu_s']:.2f} "
                     f"({r['merged_wall_s']:.2f}) | {r['plain_cpu_s'] / r['merged_cpu_s']:.2f}x | "
                     f"{r['max_abs_diff']:.1e} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["phishing", "w8a", "a9a", "ijcnn1"])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tag", default="cpu")
    args = ap.parse_args()
    run_datasets(f"predict_merge_{args.tag}", args.datasets, lambda n, d: run(n, d, args.repeat), markdown)


if __name__ == "__main__":
    main()

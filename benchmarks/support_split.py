"""Why the GPU's support-vector counts differ from LIBSVM's on data with repeated points.

The dual optimum fixes only the sum of alpha over exact copies of a point (same row, same label), not how
it is split over them, so two correct solvers can return different ``support_`` sizes. For each data set,
in one run: gpusvm SVC with the pairwise loop (LIBSVM's path) and with the batched working-set
decomposition (the GPU's algorithm; its CPU twin, and the GPU itself where one is usable), each with
its number of support vectors, the number of distinct support points (copies counted once, grouped by
gpusvm._dedupe.duplicate_groups) and the dual objective recomputed in float64 from the model.

Data and hyperparameters as benchmarks/svc_vs_sklearn.py (phishing and w8a have many repeated rows).
Usage: python benchmarks/support_split.py [--datasets phishing w8a] [--tag cpu]
Writes benchmarks/results/support_split_<tag>.{json,md} after every data set.
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
from gpusvm import SVC, get_backend, gpu_status  # noqa: E402
from gpusvm._dedupe import duplicate_groups  # noqa: E402
from gpusvm.bench.objectives import sklearn_svc_objective  # noqa: E402
from _results import run_datasets  # noqa: E402


def run(name, data_dir):
    X, y, _, _, C, gamma = svc_vs_sklearn.load(data_dir, name)
    labels = np.unique(y, return_inverse=True)[1]
    group = np.asarray(duplicate_groups(get_backend("cpu"), X, labels)[0])
    out = {"dataset": name, "n_train": int(X.shape[0]), "n_distinct": int(np.unique(group).size),
           "C": C, "gamma": gamma, "rows": []}
    configs = [("pairwise", "cpu"), ("batched", "cpu")] + ([("batched", "gpu")] if gpu_status(0)[0] else [])
    supports, group_alpha = {}, {}
    for dec, dev in configs:
        t0 = time.perf_counter()
        m = SVC(C=C, gamma=gamma, decomposition=dec, device=dev).fit(X, y)
        sup = np.asarray(m.support_)
        supports[(dec, dev)] = set(np.unique(group[sup]).tolist())
        coef = m.dual_coef_
        coef = np.abs(np.asarray(coef.toarray() if hasattr(coef, "toarray") else coef)).ravel()
        group_alpha[(dec, dev)] = np.bincount(group[sup], weights=coef, minlength=out["n_distinct"])
        row = {"decomposition": dec, "device": dev, "fit_s": time.perf_counter() - t0, "n_sv": int(sup.size),
               "n_distinct_sv": len(supports[(dec, dev)]), "objective": sklearn_svc_objective(m)}
        ref = supports[("pairwise", "cpu")]
        row["distinct_only_here"] = len(supports[(dec, dev)] - ref)
        row["distinct_only_pairwise"] = len(ref - supports[(dec, dev)])
        # the largest summed alpha of a distinct point that only one of the two solvers keeps, over C
        odd = np.asarray(sorted(supports[(dec, dev)] ^ ref), dtype=np.int64)
        both = np.maximum(group_alpha[(dec, dev)], group_alpha[("pairwise", "cpu")])
        row["max_alpha_of_differing_over_C"] = float(both[odd].max() / C) if odd.size else 0.0
        out["rows"].append(row)
        print(name, row, flush=True)
    return out


def markdown(results, meta):
    lines = ["# Support vectors and repeated points: pairwise SMO (LIBSVM's path) against the batched "
             "decomposition (the GPU's)", "",
             f"Machine: {meta['machine']}. Code at {meta['commit']}. Distinct SVs: support points with exact "
             "copies (same row, same label) counted once; 'only here / only pairwise': distinct support points "
             "found by one solver and not the other, and the largest summed alpha (over C) either solver gives one of "
             "them.", "",
             "| data set (n_train, distinct rows) | decomposition | device | fit s | SVs | distinct SVs "
             "| only here / only pairwise | their largest alpha / C | dual objective |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        for row in r["rows"]:
            lines.append(f"| {r['dataset']} ({r['n_train']:,}, {r['n_distinct']:,}) | {row['decomposition']} "
                         f"| {row['device']} | {row['fit_s']:.2f} | {row['n_sv']:,} | {row['n_distinct_sv']:,} "
                         f"| {row['distinct_only_here']} / {row['distinct_only_pairwise']} "
                         f"| {row['max_alpha_of_differing_over_C']:.1e} "
                         f"| {row['objective']:.9g} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["phishing", "w8a"])
    ap.add_argument("--tag", default="cpu")
    args = ap.parse_args()
    run_datasets(f"support_split_{args.tag}", args.datasets, run, markdown)


if __name__ == "__main__":
    main()

"""Multi-class CPU fits with ``n_jobs`` threads against one thread: SVC and DCSVC (one-vs-one pairs),
BudgetSVC and LinearSVC (one-vs-rest problems).

The compiled solver loops release the GIL, so the binary problems of one fit can run in threads; each is
solved exactly as alone, so the models must be identical (checked here on every round). Synthetic
8-class data (scikit-learn's make_classification, seed 0), no data files needed. Wall seconds per fit;
the rounds alternate which setting goes first; speed-up = median(one thread) / median(n_jobs threads).

Usage: python benchmarks/threads_ovr.py [--rounds 3] [--jobs 2] [--tag cpu]
Writes benchmarks/results/threads_ovr_<tag>.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def cases():
    from sklearn.datasets import make_classification

    from gpusvm import SVC, BudgetSVC, DCSVC, LinearSVC

    def data(n, d, informative):
        return make_classification(n_samples=n, n_features=d, n_informative=informative, n_classes=8,
                                   n_clusters_per_class=1, random_state=0)

    return [
        ("SVC rbf (pairs)", lambda nj: SVC(C=10.0, gamma=0.05, device="cpu", n_jobs=nj), data(8000, 20, 12)),
        ("DCSVC rbf (pairs), k=4, L=2", lambda nj: DCSVC(C=10.0, gamma=0.05, n_levels=2, min_cluster_size=100,
                                                          random_state=0, device="cpu", n_jobs=nj),
         data(8000, 20, 12)),
        ("BudgetSVC M=2, B=200", lambda nj: BudgetSVC(C=10.0, gamma=0.05, budget=200, random_state=0,
                                                      device="cpu", n_jobs=nj), data(30000, 20, 12)),
        ("LinearSVC dcd, C=1", lambda nj: LinearSVC(C=1.0, solver="dcd", random_state=0, device="cpu",
                                                    n_jobs=nj), data(20000, 100, 30)),
        ("LinearSVC newton (ignores n_jobs)", lambda nj: LinearSVC(C=1.0, loss="squared_hinge", solver="newton",
                                                                   device="cpu", n_jobs=nj), data(20000, 100, 30)),
    ]


def model_arrays(m):
    return [np.asarray(getattr(m, a)) for a in ("dual_coef_", "support_vectors_", "coef_", "intercept_")
            if hasattr(m, a)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--tag", default="cpu")
    args = ap.parse_args()
    warnings.simplefilter("ignore")  # ConvergenceWarnings of the small-sample warm-up fits
    rows = []
    for name, make, (X, y) in cases():
        make(None).fit(X[:400], y[:400])  # compile / warm up both paths
        make(args.jobs).fit(X[:400], y[:400])
        times = {1: [], args.jobs: []}
        ref = None
        for r in range(args.rounds):
            for nj in ((None, args.jobs) if r % 2 == 0 else (args.jobs, None)):
                t = time.perf_counter()
                m = make(nj).fit(X, y)
                times[nj or 1].append(time.perf_counter() - t)
                arrs = model_arrays(m)
                if ref is None:
                    ref = arrs
                elif not all(np.array_equal(a, b) for a, b in zip(arrs, ref)):
                    sys.exit(f"{name}: the model with n_jobs={nj} differs from the first fit")
        one, many = float(np.median(times[1])), float(np.median(times[args.jobs]))
        rows.append({"case": name, "n_samples": int(X.shape[0]), "n_features": int(X.shape[1]),
                     "wall_s_1": times[1], f"wall_s_{args.jobs}": times[args.jobs], "speedup": one / many})
        print(f"{name}: {one:.3f} s -> {many:.3f} s ({one / many:.2f}x)", flush=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=HERE).stdout.strip()
    meta = {"machine": f"{platform.machine()}, {os.cpu_count()} CPUs (shared machine: ratios within one run)",
            "commit": commit, "command": "python benchmarks/threads_ovr.py " + " ".join(sys.argv[1:]),
            "jobs": args.jobs, "rounds": args.rounds}
    out = HERE / "results" / f"threads_ovr_{args.tag}"
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "results": rows}, indent=1))
    lines = ["# Multi-class CPU fits: n_jobs threads against one thread", "",
             f"Machine: {meta['machine']}. Code at {commit}. Command: `{meta['command']}`. Synthetic 8-class "
             "data (make_classification, seed 0). Wall seconds per fit, rounds alternating which setting goes "
             "first; every fit's model was checked identical to the first one's.", "",
             f"| case | n x d | wall s, 1 thread | wall s, {args.jobs} threads | speed-up (medians) |",
             "|---|---|---|---|---|"]
    for r in rows:
        fmt = lambda ts: " / ".join(f"{t:.2f}" for t in ts)  # noqa: E731
        lines.append(f"| {r['case']} | {r['n_samples']:,} x {r['n_features']} | {fmt(r['wall_s_1'])} | "
                     f"{fmt(r[f'wall_s_{args.jobs}'])} | {r['speedup']:.2f}x |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

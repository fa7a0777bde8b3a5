"""DC-SVM to the top against the cold exact solver, repeated: is DCSVC faster on the same device?

Issue 8's target on the CPU, measured robustly on a shared machine: for each data set (ijcnn1, a9a,
skin_nonskin; the data, splits and hyperparameters of benchmarks/dcsvm_bench.py), ``--repeat`` rounds,
each fitting gpusvm.SVC (cold start) and gpusvm.DCSVC (to the top), both at their defaults, one after
the other in alternating order (so a slow stretch of the machine hits both), after one warm-up fit of
each on 3,000 rows. Process CPU seconds per fit; the ratio cold / DC-SVM per round, its median and
range; both final models' dual objectives (recomputed in float64) and test accuracies of the last round.

Usage: python benchmarks/dcsvm_vs_cold.py [--datasets ijcnn1 a9a skin_nonskin] [--repeat 3] [--tag cpu]
Writes benchmarks/results/dcsvm_vs_cold_<tag>.{json,md} after every data set.
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
from gpusvm import DCSVC, SVC  # noqa: E402
from gpusvm.bench.objectives import sklearn_svc_objective  # noqa: E402
from _results import run_datasets  # noqa: E402


def _cpu_fit(est, X, y):
    c0 = time.process_time()
    est.fit(X, y)
    return time.process_time() - c0


def run(name, data_dir, repeat):
    X, y, Xte, yte, info = dcsvm_bench._load(name, data_dir, None, None)
    s = dcsvm_bench.SETUPS[name]
    makers = {"cold": lambda: SVC(C=s["C"], gamma=s["gamma"], device="cpu"),
              "dcsvc": lambda: DCSVC(C=s["C"], gamma=s["gamma"], device="cpu", random_state=0)}
    nw = min(3000, X.shape[0])
    for make in makers.values():
        make().fit(X[:nw], y[:nw])
    times = {k: [] for k in makers}
    models = {}
    for r in range(repeat):
        for key in (("cold", "dcsvc") if r % 2 == 0 else ("dcsvc", "cold")):
            est = makers[key]()
            times[key].append(_cpu_fit(est, X, y))
            models[key] = est
        print(f"{name} round {r}: cold {times['cold'][-1]:.2f} / dcsvc {times['dcsvc'][-1]:.2f} CPU-s", flush=True)
    ratios = [c / d for c, d in zip(times["cold"], times["dcsvc"])]
    out = {"dataset": name, "info": info, "C": s["C"], "gamma": s["gamma"], "cpu_s": times, "ratios": ratios,
           "median_ratio": float(np.median(ratios))}
    for key, est in models.items():
        out[key] = {"objective": sklearn_svc_objective(est), "n_sv": int(est.n_support_.sum()),
                    "test_acc": float(np.mean(np.asarray(est.predict(Xte)) == yte)),
                    "n_distinct": est.n_distinct_}
    return out


def markdown(results, meta):
    lines = ["# DC-SVM to the top vs the cold exact solver, repeated (CPU)", "",
             f"Machine: {meta['machine']}. Code at {meta['commit']}. Command: `{meta['command']}`. Both "
             "estimators at their defaults (DCSVC: k = 4, L = 4; both merge duplicate points when at most half "
             "of the rows are distinct: skin_nonskin). Process CPU seconds per fit; rounds alternate which "
             "fit goes first; ratio = cold / DC-SVM per round (> 1: DC-SVM faster).", "",
             "| data set (n_train) | cold CPU-s per round | DC-SVM CPU-s per round | ratio per round | median ratio "
             "| rel. objective diff | test acc cold / DC-SVM |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        cold, dc = r["cold"], r["dcsvc"]
        lines.append(
            f"| {r['dataset']} ({r['info']['n_train']:,}, {r['info']['format']}) "
            f"| {' / '.join(f'{v:.2f}' for v in r['cpu_s']['cold'])} "
            f"| {' / '.join(f'{v:.2f}' for v in r['cpu_s']['dcsvc'])} "
            f"| {' / '.join(f'{v:.2f}x' for v in r['ratios'])} | {r['median_ratio']:.2f}x "
            f"| {abs(dc['objective'] - cold['objective']) / abs(cold['objective']):.1e} "
            f"| {cold['test_acc']:.2%} / {dc['test_acc']:.2%} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["ijcnn1", "a9a", "skin_nonskin"],
                    choices=list(dcsvm_bench.SETUPS))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tag", default="cpu")
    args = ap.parse_args()
    run_datasets(f"dcsvm_vs_cold_{args.tag}", args.datasets, lambda name, d: run(name, d, args.repeat), markdown,
                 machine_note="shared machine")

if __name__ == "__main__":
    main()

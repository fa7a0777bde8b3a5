"""Why multi-merge loses accuracy on phishing and ijcnn1: the weight degradation of budget maintenance.

    PYTHONPATH=. python benchmarks/budget_degradation.py [--seeds 3] [--tag cpu]

For each setting (data set, budget, M, merge strategy) and seed, BSGD runs once with the opt-in
diagnostic ``track_degradation`` of the solver, which sums the exact weight degradation
||sum_p a_p phi(x_p) - a_z phi(z)||^2 of every maintenance step (each in units of 1 / (lambda t)^2,
the squared coefficient a new support vector gets at that step). The table gives the test accuracy
(mean ± std over seeds), the margin violations (= SVs added), the maintenance steps, the total
degradation and the degradation per removed SV (total / ((M - 1) * steps)).

Settings: phishing B=143 (C=8, gamma=8), ijcnn1 B=124 (C=32, gamma=2), a9a B=569 (C=32, gamma=0.008):
the 5% budgets of budget_table.py (5% of full-size SVC SV counts). Timings are not reported (the diagnostic costs O(M^2 d) per step).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from budget_table import DATASETS, load  # noqa: E402

from gpusvm import get_backend  # noqa: E402
from gpusvm._gram import GramSpec  # noqa: E402
from gpusvm._solvers.bsgd import bsgd  # noqa: E402
from gpusvm.datasets import find_data_dir  # noqa: E402

SETTINGS = (("phishing", 143), ("ijcnn1", 124), ("a9a", 569))
RUNS = ((2, "cascade"), (3, "cascade"), (5, "cascade"), (3, "gradient"), (5, "gradient"))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--tag", default="cpu")
    p.add_argument("--out", default=str(Path(__file__).parent / "results"))
    a = p.parse_args(argv)
    be = get_backend("cpu")
    data_dir = find_data_dir()
    out = {"machine": {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
                       "cpu_count": os.cpu_count()}, "seeds": a.seeds, "rows": []}
    for name, B in SETTINGS:
        spec = DATASETS[name]
        X, y, Xt, yt = load(name, data_dir)
        cls = np.unique(y)
        yb = np.where(y == cls[1], 1.0, -1.0)
        ytb = np.where(yt == cls[1], 1.0, -1.0)
        for M, merge in RUNS:
            acc, wd, maint, viol = [], [], [], []
            for s in range(a.seeds):
                order = np.random.RandomState(s).permutation(len(y)).astype(np.int64)
                r = bsgd(be, X, yb, gamma=spec["gamma"], C=spec["C"], budget=B, order=order, n_merge=M,
                         merge=merge, track_degradation=True)
                K = be.gram(Xt, r.support_vectors, GramSpec("rbf", spec["gamma"]))
                acc.append(float(np.mean(np.where(K @ r.alpha > 0, 1.0, -1.0) == ytb)))
                wd.append(r.info["degradation"])
                maint.append(r.info["merges"])
                viol.append(r.info["violations"])
            row = {"dataset": name, "budget": B, "n_merge": M, "merge": merge, "accuracy": float(np.mean(acc)),
                   "accuracy_std": float(np.std(acc)), "accuracies": acc, "violations": float(np.mean(viol)),
                   "maintenance_steps": float(np.mean(maint)), "degradation": float(np.mean(wd)),
                   "degradation_per_removed_sv": float(np.mean(wd) / ((M - 1) * np.mean(maint)))}
            out["rows"].append(row)
            print(row, flush=True)
    Path(a.out).mkdir(parents=True, exist_ok=True)
    Path(a.out, f"budget_degradation_{a.tag}.json").write_text(json.dumps(out, indent=1))
    L = ["# Weight degradation of budget maintenance (BSGD, multi-merge)", "",
         f"Machine: {out['machine']['processor']}, {out['machine']['cpu_count']} CPUs. One epoch, {a.seeds} seeds "
         "(sample orders 0..seeds-1). Degradation in units of 1/(lambda t)^2 per step (see the script's doc).", "",
         "| data set | budget | M | strategy | accuracy | violations | maintenance steps | total degradation | "
         "degradation per removed SV |", "|---|---|---|---|---|---|---|---|---|"]
    for r in out["rows"]:
        L.append(f"| {r['dataset']} | {r['budget']} | {r['n_merge']} | {r['merge']} | {r['accuracy']:.4f} ± "
                 f"{r['accuracy_std']:.4f} | {r['violations']:.0f} | {r['maintenance_steps']:.0f} | "
                 f"{r['degradation']:.4g} | {r['degradation_per_removed_sv']:.4g} |")
    Path(a.out, f"budget_degradation_{a.tag}.md").write_text("\n".join(L) + "\n")


if __name__ == "__main__":
    main()

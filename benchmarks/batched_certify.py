"""What the float64 check of the batched decomposition's float32 stop finds and costs.

The batched working-set decomposition (the GPU's SVC solver, and its CPU twin) stores float32 Gram rows;
its running gradient carries their rounding. Since ac0ed68 a float32 stop is checked on the gradient
recomputed with float64 values, and where that gap is still above tol the solve goes on with float64
rows. For each data set and C, in one run: the solve with float32 rows (rounds before and after the
check, the float64 gap at the float32 stop, objective, SVs, time) and the solve with float64 rows from
the start (rounds, objective, SVs, time). Subsets of the training files (the check is bounded to 2**25
Gram values on the CPU), q = 1,024 (the GPU's working-set size).

Usage: python benchmarks/batched_certify.py [--datasets a9a ijcnn1 phishing] [--device cpu] [--tag cpu]
       [--out DIR]
Writes <DIR or benchmarks/results>/batched_certify_<tag>.{json,md} after every data set.
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

from gpusvm import get_backend  # noqa: E402
from gpusvm._gram import GramSpec  # noqa: E402
from gpusvm._solvers.smo_batched import solve_batched  # noqa: E402
from gpusvm.bench.suites import SUITES  # noqa: E402
from _results import run_datasets  # noqa: E402

# rows taken from the head of each training file; gamma as in the paper suite
SIZES = {"a9a": (5000, 0.008), "ijcnn1": (8000, 2.0), "phishing": (5000, 8.0), "w8a": (8000, 0.03)}
CS = (1.0, 32.0, 1000.0)


def run(name, data_dir, device):
    be = get_backend(device)
    n, gamma = SIZES[name]
    X, y = {d.name: d for d in SUITES["paper"]}[name].load(str(data_dir), 0)[:2]
    X, y = X[:n], np.where(y[:n] == np.max(y), 1.0, -1.0)
    X = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    Xb, yb = be.asarray(X), be.asarray(y)
    out = {"dataset": name, "n_train": n, "gamma": gamma, "device": device, "rows": []}
    for C in CS:
        row = {"C": C}
        for dt in ("float32", "float64"):
            t = time.perf_counter()
            r = solve_batched(be, Xb, yb, GramSpec("rbf", gamma), be.asarray(np.full(n, C)), tol=1e-3,
                              max_iter=-1, cache_bytes=2**30, gram_dtype=dt, working_set_size=1024)
            row[dt] = {"time_s": time.perf_counter() - t, "rounds": r.n_iter, "converged": bool(r.converged),
                       "objective": r.objective, "n_sv": int(be.to_host(r.alpha > 0).sum()),
                       **{k: r.info[k] for k in ("certified", "float64_polish", "float32_rounds", "float32_stop_gap",
                                                 "gram_dtype", "gap")}}
        out["rows"].append(row)
        print(name, C, row, flush=True)
    return out


def markdown(results, meta):
    lines = ["# Batched SMO: the float64 check of a float32 stop", "",
             f"- commit {meta['commit']}; {meta['machine']}; `{meta['command']}`",
             "- tol = 1e-3, q = 1,024, RBF. f32: float32 rows (checked); f64: float64 rows from the start.", "",
             "| data set | n | C | device | f32 rounds (before check) | float64 gap at f32 stop | f32 polish | "
             "f32 obj | f64 obj | f32 SVs | f64 SVs | f32 s | f64 s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for res in results:
        for row in res["rows"]:
            a, b = row["float32"], row["float64"]
            before = a["float32_rounds"] if a["float32_rounds"] is not None else a["rounds"]
            g = a["float32_stop_gap"]
            lines.append(f"| {res['dataset']} | {res['n_train']:,} | {row['C']:g} | {res['device']} | {a['rounds']} "
                         f"({before}) | {'-' if g is None else f'{g:.3g}'} | {a['float64_polish']} | "
                         f"{a['objective']:.10g} | {b['objective']:.10g} | {a['n_sv']} | {b['n_sv']} | "
                         f"{a['time_s']:.2f} | {b['time_s']:.2f} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--datasets", nargs="+", default=["a9a", "ijcnn1", "phishing"], choices=sorted(SIZES))
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--tag", default="cpu")
    ap.add_argument("--out", default=None, help="result folder (default benchmarks/results)")
    a = ap.parse_args()
    run_datasets(f"batched_certify_{a.tag}", a.datasets, lambda name, d: run(name, d, a.device), markdown,
                 out_dir=a.out)


if __name__ == "__main__":
    main()

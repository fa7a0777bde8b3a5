"""LinearSVC with the squared hinge: the primal Newton solver against dual coordinate descent and LIBLINEAR.

For each data set (a9a, w8a, ijcnn1, phishing at full size; labels as +-1) and C in {0.01, 1, 100}, one
run fits, in this order: gpusvm's "newton" (primal truncated Newton), scikit-learn's LinearSVC with
``dual=False`` (LIBLINEAR's primal Newton solver, what its default ``dual="auto"`` picks here), gpusvm's
"dcd" and scikit-learn's ``dual=True`` (LIBLINEAR's dual coordinate descent), all with tol 1e-4 and
max_iter 1000 (sweeps for the dual solvers, Newton steps for the primal ones). Reported: process CPU
seconds of the fit, iterations, and the primal objective ``1/2 (||w||^2 + b^2) + C sum max(0, 1 - y f)^2``
(computed the same way for all four), relative to the best of the four.

Usage: python benchmarks/linear_newton.py [--datasets a9a w8a ijcnn1 phishing] [--C 0.01 1 100] [--tag cpu]
Writes benchmarks/results/linear_newton_<tag>.{json,md} after every data set.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from gpusvm import LinearSVC  # noqa: E402
from gpusvm._backend import get_backend  # noqa: E402
from gpusvm._solvers.dcd import primal_objective  # noqa: E402
from gpusvm.datasets import load_svmlight  # noqa: E402
from _results import run_datasets  # noqa: E402

FILES = {"a9a": ("a9a.xz", 123), "w8a": ("w8a.xz", 300), "ijcnn1": ("ijcnn1.xz", 22),
         "phishing": ("phishing.xz", 68)}
ROWS = ("gpusvm newton", "sklearn dual=False", "gpusvm dcd", "sklearn dual=True")


def _fit(make, X, y):
    from sklearn.exceptions import ConvergenceWarning

    est = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        c0 = time.process_time()
        est.fit(X, y)
        return est, time.process_time() - c0


def run(name, data_dir, Cs):
    from sklearn.svm import LinearSVC as SkLinearSVC

    be = get_backend("cpu")
    f, nf = FILES[name]
    X, y = load_svmlight(Path(data_dir) / f, n_features=nf)
    y = np.where(y > 0, 1.0, -1.0)
    out = {"dataset": name, "n": int(X.shape[0]), "d": int(X.shape[1]), "cells": []}
    kw = dict(tol=1e-4, max_iter=1000)
    for C in Cs:
        makers = {
            "gpusvm newton": lambda: LinearSVC(C=C, loss="squared_hinge", solver="newton", device="cpu", **kw),
            "sklearn dual=False": lambda: SkLinearSVC(C=C, loss="squared_hinge", dual=False, **kw),
            "gpusvm dcd": lambda: LinearSVC(C=C, loss="squared_hinge", solver="dcd", device="cpu",
                                            random_state=0, **kw),
            "sklearn dual=True": lambda: SkLinearSVC(C=C, loss="squared_hinge", dual=True, random_state=0, **kw),
        }
        cell = {"C": C, "rows": {}}
        for key in ROWS:
            est, t = _fit(makers[key], X, y)
            obj = primal_objective(be, X, y, np.full(X.shape[0], C), est.coef_[0], float(est.intercept_[0]), 1.0,
                                   "squared_hinge")
            cell["rows"][key] = {"cpu_s": t, "n_iter": int(np.max(est.n_iter_)), "objective": obj}
            print(f"{name} C={C:g} {key}: {t:.3f} CPU-s, {int(np.max(est.n_iter_))} it, obj {obj:.8g}", flush=True)
        best = min(r["objective"] for r in cell["rows"].values())
        for r in cell["rows"].values():
            r["rel_objective"] = (r["objective"] - best) / best
        out["cells"].append(cell)
    return out


def markdown(results, meta):
    lines = ["# LinearSVC, squared hinge: primal Newton vs dual coordinate descent (CPU)", "",
             f"Machine: {meta['machine']}. Code at {meta['commit']}. Command: `{meta['command']}`. One run; "
             "process CPU seconds per fit (one fit each, in the order of the columns); tol 1e-4, max_iter "
             "1000 for all (sweeps for the dual solvers, Newton steps for the primal ones). `rel obj`: primal "
             "objective relative to the best of the four in the cell (0 = best).", "",
             "| data set | C | " + " | ".join(f"{k} s (it, rel obj)" for k in ROWS)
             + " | sklearn primal s / gpusvm newton s |",
             "|---|---|" + "---|" * (len(ROWS) + 1)]
    for res in results:
        for cell in res["cells"]:
            r = cell["rows"]
            cols = [f"{r[k]['cpu_s']:.3f} ({r[k]['n_iter']}, {r[k]['rel_objective']:.1e})" for k in ROWS]
            ratio = r["sklearn dual=False"]["cpu_s"] / max(r["gpusvm newton"]["cpu_s"], 1e-9)
            lines.append(f"| {res['dataset']} ({res['n']:,} x {res['d']}) | {cell['C']:g} | " + " | ".join(cols)
                         + f" | {ratio:.2f}x |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", nargs="+", default=list(FILES))
    ap.add_argument("--C", nargs="+", type=float, default=[0.01, 1.0, 100.0])
    ap.add_argument("--tag", default="cpu")
    args = ap.parse_args(argv)
    # a warm-up fit compiles the dual solver's loop before anything is timed
    rng = np.random.default_rng(0)
    Xw = rng.normal(size=(200, 5))
    LinearSVC(loss="squared_hinge", solver="dcd", device="cpu").fit(Xw, Xw[:, 0] > 0)
    run_datasets(f"linear_newton_{args.tag}", args.datasets, lambda name, dd: run(name, dd, args.C), markdown)


if __name__ == "__main__":
    main()

"""Linear SVM table in the layout of Glasmachers & Dogan (2013), Tables 2-3.

Rows: data set x C in {0.01, 0.1, 1, 10, 100, 1000} x eps in {0.01, 0.001}. Columns: seconds and
coordinate update steps of the LIBLINEAR baseline (gpusvm DCD with shrinking) and of AVSF, plus the time
of scikit-learn's LinearSVC(loss="hinge", dual=True, tol=eps, max_iter=1000) on the same problem in the
same run, and the primal objectives reached. Each gpusvm solve has a wall-clock cap per cell
(--cap seconds); a cell that hits it is marked, as is an sklearn run stopped by its max_iter.

Usage::

    PYTHONPATH=. python benchmarks/linear_table.py [--datasets a9a,w8a,ijcnn1,phishing] [--cap 20]
        [--device cpu] [--out benchmarks/results/linear_table]

Writes ``<out>_<device>.json`` and ``<out>_<device>.md`` after every row. gpusvm's time is the solver
call (dcd_linear: row norms, the sweeps, the final objective) after a warm-up that compiles the sweep
code; sklearn's time is ``fit`` (its input conversion included).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from gpusvm import get_backend
from gpusvm._solvers.dcd import dcd_linear, primal_objective
from gpusvm.datasets import find_data_dir, load_svmlight

CS = (0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)
EPSS = (0.01, 0.001)
SK_MAX_ITER = 1000


def _machine(be):
    import psutil  # noqa: F401  (bench extra)

    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "python": sys.version.split()[0],
        "device": be.device_name,
        "backend": be.name,
        "shared_machine": True,
    }


def _run_ours(be, X, y, C, method, eps, cap, seed):
    t0 = time.perf_counter()
    r = dcd_linear(be, X, y, C, loss="hinge", method=method, tol=eps, max_iter=10**9, bias=1.0, seed=seed,
                   max_seconds=cap)
    be.sync()
    t = time.perf_counter() - t0
    return {"seconds": t, "updates": r.n_updates, "sweeps": r.n_iter, "converged": r.converged,
            "cap_hit": bool(r.info.get("time_limit_hit")), "objective": r.objective}


def _run_sklearn(X, y, Cv, eps, be):
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    m = LinearSVC(loss="hinge", dual=True, C=Cv, tol=eps, max_iter=SK_MAX_ITER, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t0 = time.perf_counter()
        m.fit(X, y)
        t = time.perf_counter() - t0
    C = np.full(X.shape[0], Cv)
    obj = primal_objective(be, X, y, C, m.coef_[0], float(m.intercept_[0]), 1.0)
    return {"seconds": t, "n_iter": int(m.n_iter_), "max_iter_hit": int(m.n_iter_) >= SK_MAX_ITER,
            "objective": obj}


def _markdown(res):
    m = res["machine"]
    lines = [
        "# Linear SVM (hinge): LIBLINEAR-style DCD vs AVSF vs scikit-learn LinearSVC",
        "",
        f"Machine: {m['processor']}, {m['cpu_count']} CPUs, {m['platform']}; backend {m['backend']} "
        f"({m['device']}). **The machine was shared with other jobs: timings are noisy.**",
        f"Per-cell cap for gpusvm solvers: {res['cap']} s (marked `cap`); sklearn LinearSVC runs with "
        f"tol=eps and its default max_iter={SK_MAX_ITER} (marked `max_iter` when it stops there). "
        "Update steps = coordinate visits (inner products <w, x_i>). Objective = primal "
        "1/2||w||^2 + C sum hinge (bias as a regularized feature), relative to the best of the three.",
        "",
        "| data | C | eps | DCD s | DCD steps | AVSF s | AVSF steps | steps DCD/AVSF | sklearn s | "
        "DCD/sklearn time | obj DCD | obj AVSF | obj sklearn |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in res["rows"]:
        d, a, s = r["dcd"], r["avsf"], r["sklearn"]
        best = min(d["objective"], a["objective"], s["objective"])

        def rel(o):
            return f"{(o - best) / best:.1e}"

        def mark(x):
            return " (cap)" if x["cap_hit"] else ("" if x["converged"] else " (not conv.)")

        lines.append(
            f"| {r['data']} | {r['C']:g} | {r['eps']:g} | {d['seconds']:.2f}{mark(d)} | {d['updates']:.3g} | "
            f"{a['seconds']:.2f}{mark(a)} | {a['updates']:.3g} | {d['updates'] / max(a['updates'], 1):.2f} | "
            f"{s['seconds']:.2f}{' (max_iter)' if s['max_iter_hit'] else ''} | "
            f"{d['seconds'] / s['seconds']:.2f} | {rel(d['objective'])} | {rel(a['objective'])} | "
            f"{rel(s['objective'])} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="a9a,w8a,ijcnn1,phishing")
    ap.add_argument("--Cs", default=",".join(f"{c:g}" for c in CS))
    ap.add_argument("--eps", default=",".join(f"{e:g}" for e in EPSS))
    ap.add_argument("--cap", type=float, default=20.0, help="seconds per gpusvm solve")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="benchmarks/results/linear_table")
    args = ap.parse_args(argv)
    be = get_backend(args.device)
    data_dir = find_data_dir()
    if data_dir is None:
        sys.exit("LIBSVM data sets not found (../shared/data or $GPUSVM_DATA)")
    out_json = Path(f"{args.out}_{be.name}.json")
    out_md = Path(f"{args.out}_{be.name}.md")
    res = {"machine": _machine(be), "cap": args.cap, "sklearn_max_iter": SK_MAX_ITER, "rows": []}
    Cs = [float(c) for c in args.Cs.split(",")]
    epss = [float(e) for e in args.eps.split(",")]
    for name in args.datasets.split(","):
        X, y = load_svmlight(Path(data_dir) / f"{name}.xz")
        y = np.where(y == y.max(), 1.0, -1.0)
        X.indices = X.indices.astype(np.int32)  # sklearn's liblinear wrapper wants 32-bit indices
        X.indptr = X.indptr.astype(np.int32)
        Xb, yb = be.asarray(X), be.asarray(y)
        # warm-up: compile the sweep code for this input type, outside the clock
        dcd_linear(be, be.take_rows(Xb, be.xp.arange(50)), yb[:50], be.xp.ones(50), max_iter=2)
        dcd_linear(be, be.take_rows(Xb, be.xp.arange(50)), yb[:50], be.xp.ones(50), max_iter=2, method="avsf")
        for Cv in Cs:
            for eps in epss:
                C = be.xp.full(X.shape[0], Cv)
                row = {"data": name, "n": X.shape[0], "d": X.shape[1], "C": Cv, "eps": eps}
                row["dcd"] = _run_ours(be, Xb, yb, C, "dcd", eps, args.cap, args.seed)
                row["avsf"] = _run_ours(be, Xb, yb, C, "avsf", eps, args.cap, args.seed)
                row["sklearn"] = _run_sklearn(X, y, Cv, eps, get_backend("cpu"))
                res["rows"].append(row)
                print(json.dumps(row), flush=True)
                out_json.write_text(json.dumps(res, indent=1))
                out_md.write_text(_markdown(res))
    return res


if __name__ == "__main__":
    main()

"""Linear SVM table in the layout of Glasmachers & Dogan (2013), Tables 2-3.

Rows: data set x C in {0.01, 0.1, 1, 10, 100, 1000} x eps in {0.01, 0.001}. Columns: seconds and
coordinate update steps of the LIBLINEAR baseline (gpusvm DCD with shrinking) and of AVSF, plus the time
of scikit-learn's LinearSVC(loss="hinge", dual=True, tol=eps) on the same problem in the same run, and
the primal objectives reached.

Fair comparison with scikit-learn: it passes ``tol`` to LIBLINEAR as ``eps``, which stops when the
spread v_max - v_min of the projected gradient over a sweep of all variables is <= eps: the same test
as ours. But its ``max_iter`` (default 1000) counts sweeps and often stops LIBLINEAR before that test
holds. So each row has sklearn with its default max_iter=1000 ("sk" columns, marked `max_iter` when it
stopped there) and, for C <= 1 (the cells of the speed target), sklearn run to convergence with
max_iter=10**6 ("sk conv"): ``DCD/sk conv`` is the like-for-like ratio. Times are CPU seconds of this
process (``time.process_time``; all three solvers are single-threaded), which the other jobs on a
shared machine disturb much less than wall time; wall seconds are in the JSON.

Cells run in a priority order (``--plan``): first the large-C cells of the AVSF target (a9a and w8a,
C in {1000, 100}, eps = 0.01) with the long cap ``--cap-long``, then every C <= 1 cell, then the rest
with ``--cap``. Caps are process CPU seconds (the machine is shared: a wall-clock cap would give a solve
a varying share of a core). A gpusvm solve stopped by its cap is marked `cap`; its step count is then a
lower bound.

Usage::

    PYTHONPATH=. python benchmarks/linear_table.py [--datasets a9a,w8a,ijcnn1,phishing] [--cap 20]
        [--cap-long 200] [--device cpu] [--out benchmarks/results/linear_table]

Writes ``<out>_<device>.json`` and ``<out>_<device>.md`` after every cell. gpusvm's time is the solver
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
SK_CONV_MAX_ITER = 10**6
PRIORITY = [("a9a", 1000.0, 0.01), ("w8a", 1000.0, 0.01), ("a9a", 100.0, 0.01), ("w8a", 100.0, 0.01)]


def _plan(datasets, Cs, epss):
    """Cells in priority order: the AVSF target cells, then C <= 1, then the rest."""
    cells = [(d, C, e) for d in datasets for C in Cs for e in epss]
    first = [c for c in PRIORITY if c in cells]
    small = [c for c in cells if c[1] <= 1.0 and c not in first]
    rest = [c for c in cells if c not in first and c not in small]
    return [(c, True) for c in first] + [(c, False) for c in small + rest]


def _machine(be):
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "python": sys.version.split()[0],
        "device": be.device_name,
        "backend": be.name,
        "shared_machine": True,
        "loadavg_1min_start": os.getloadavg()[0],
    }


def _best_of(run, repeat, budget=2.0):
    """Run ``run()`` (returning a dict with "seconds") up to ``repeat`` times while the CPU seconds spent
    stay under ``budget``; keep the fastest run (the others are listed in "repeats_seconds")."""
    best = run()
    spent, times = best["seconds"], [best["seconds"]]
    while len(times) < repeat and spent + best["seconds"] < budget:
        r = run()
        spent += r["seconds"]
        times.append(r["seconds"])
        if r["seconds"] < best["seconds"]:
            best = r
    best["repeats_seconds"] = times
    return best


def _run_ours(be, X, y, C, method, eps, cap, seed):
    t0, c0 = time.perf_counter(), time.process_time()
    # the cap is in process CPU seconds: on the shared machine a wall-clock cap gave a solve anywhere
    # from 18% to 100% of a core (a9a C=1000 AVSF: 27 CPU s in a 150 s wall cap)
    r = dcd_linear(be, X, y, C, loss="hinge", method=method, tol=eps, max_iter=10**9, bias=1.0, seed=seed,
                   max_seconds=cap, clock=time.process_time)
    be.sync()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"seconds": cpu, "wall_seconds": wall, "cap": cap, "updates": r.n_updates, "sweeps": r.n_iter,
            "converged": r.converged, "cap_hit": bool(r.info.get("time_limit_hit")),
            "objective": r.objective, "gap": r.info.get("gap")}


def _run_sklearn(X, y, Cv, eps, be, max_iter):
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    m = LinearSVC(loss="hinge", dual=True, C=Cv, tol=eps, max_iter=max_iter, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t0, c0 = time.perf_counter(), time.process_time()
        m.fit(X, y)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    C = np.full(X.shape[0], Cv)
    obj = primal_objective(be, X, y, C, m.coef_[0], float(m.intercept_[0]), 1.0)
    return {"seconds": cpu, "wall_seconds": wall, "max_iter": max_iter, "n_iter": int(m.n_iter_),
            "max_iter_hit": int(m.n_iter_) >= max_iter, "objective": obj}


def _markdown(res):
    m = res["machine"]
    lines = [
        "# Linear SVM (hinge): LIBLINEAR-style DCD vs AVSF vs scikit-learn LinearSVC",
        "",
        f"Machine: {m['processor']}, {m['cpu_count']} CPUs, {m['platform']}; backend {m['backend']} "
        f"({m['device']}). **The machine was shared with other jobs (1-minute load average "
        f"{m['loadavg_1min_start']:.1f} at the start, {m.get('loadavg_1min_last', float('nan')):.1f} at the "
        f"last cell, on {m['cpu_count']} cores): "
        "timings are noisy; times are CPU seconds of the process (`time.process_time`), wall seconds are "
        "in the JSON.** Update steps (coordinate visits, i.e. inner products <w, x_i>) do not depend on "
        "the machine.",
        f"Caps (process CPU seconds) per gpusvm solve: {res['cap_long']} s for the large-C target cells (a9a, w8a; "
        f"C = 1000, 100; eps = 0.01), {res['cap']} s otherwise; `cap` marks a solve stopped there (its "
        f"steps are a lower bound). sklearn LinearSVC(loss='hinge', dual=True, tol=eps) runs with its "
        f"default max_iter={SK_MAX_ITER} (`sk s`, marked `max_iter` when it stopped there) and, for C <= 1, "
        f"to convergence with max_iter={SK_CONV_MAX_ITER} (`sk conv s`). Objective = primal "
        "1/2||w||^2 + C sum hinge (bias as a regularized feature), relative to the best of the runs.",
    ]
    if res.get("repeat", 1) > 1:
        lines.append(f"Each solver ran up to {res['repeat']} times per cell (while under 2 CPU s); the fastest "
                     "run is shown (all in `repeats_seconds`).")
    for mf in res.get("merged_from", []):
        if mf.get("replaced_rows"):
            lines.append(f"The {len(mf['replaced_rows'])} rows of C in "
                         f"{sorted({r[1] for r in mf['replaced_rows']})} come from a later run (`{mf['file']}`) "
                         f"that ran each solver up to {mf.get('repeat', 1)} times (while under 2 CPU s) and kept "
                         "the fastest, for gpusvm and sklearn alike (all times in `repeats_seconds`), because "
                         "these solves take 0.01-0.5 s and single runs on the loaded machine were too noisy "
                         "to compare.")
        else:
            lines.append(f"Rows from another process that ran during the same period were merged in (`{mf['file']}`): "
                         "each row's sklearn timing comes from the same process and moment as its gpusvm "
                         "timings.")
    lines += [
        "",
        "| data | C | eps | DCD s | DCD steps | AVSF s | AVSF steps | steps DCD/AVSF | sk s | sk conv s | "
        "DCD/sk | DCD/sk conv | obj DCD | obj AVSF | obj sk |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    order = {name: k for k, name in enumerate(res["datasets"])}
    rows = sorted(res["rows"], key=lambda r: (order.get(r["data"], 99), r["C"], -r["eps"]))
    for r in rows:
        d, a, s = r["dcd"], r["avsf"], r["sklearn"]
        sc = r.get("sklearn_conv")
        objs = [d["objective"], a["objective"], s["objective"]] + ([sc["objective"]] if sc else [])
        best = min(objs)

        def rel(o):
            return f"{(o - best) / abs(best):.1e}"

        def mark(x):
            return " (cap)" if x["cap_hit"] else ("" if x["converged"] else " (not conv.)")

        ratio = d["updates"] / max(a["updates"], 1)
        ratio_s = f"{ratio:.2f}" + (" (>=)" if d["cap_hit"] and not a["cap_hit"] else
                                     " (<=)" if a["cap_hit"] and not d["cap_hit"] else
                                     " (caps)" if a["cap_hit"] and d["cap_hit"] else "")
        sk_conv = f"{sc['seconds']:.2f}{' (max_iter)' if sc['max_iter_hit'] else ''}" if sc else "-"
        lines.append(
            f"| {r['data']} | {r['C']:g} | {r['eps']:g} | {d['seconds']:.2f}{mark(d)} | {d['updates']:.3g} | "
            f"{a['seconds']:.2f}{mark(a)} | {a['updates']:.3g} | {ratio_s} | "
            f"{s['seconds']:.2f}{' (max_iter)' if s['max_iter_hit'] else ''} | {sk_conv} | "
            f"{d['seconds'] / s['seconds']:.2f} | "
            f"{(d['seconds'] / sc['seconds']) if sc else float('nan'):.2f} | "
            f"{rel(d['objective'])} | {rel(a['objective'])} | {rel(s['objective'])} |"
        )
    return "\n".join(lines) + "\n"


def _merge(out_json, others):
    """Add the rows (and data sets) of ``others`` to ``out_json``; rewrite it and its Markdown."""
    res = json.loads(out_json.read_text())
    res.setdefault("merged_from", [])
    for f in others:
        o = json.loads(f.read_text())
        keys = {(r["data"], r["C"], r["eps"]) for r in o["rows"]}
        replaced = [r for r in res["rows"] if (r["data"], r["C"], r["eps"]) in keys]
        res["rows"] = [r for r in res["rows"] if (r["data"], r["C"], r["eps"]) not in keys] + o["rows"]
        res["datasets"] += [d for d in o["datasets"] if d not in res["datasets"]]
        res["merged_from"].append({"file": f.name, "machine": o["machine"], "repeat": o.get("repeat", 1),
                                   "replaced_rows": [[r["data"], r["C"], r["eps"]] for r in replaced]})
        for k in ("loadavg_1min_start", "loadavg_1min_last"):
            res["machine"][k] = max(res["machine"].get(k, 0.0), o["machine"].get(k, 0.0))
    out_json.write_text(json.dumps(res, indent=1))
    out_json.with_suffix(".md").write_text(_markdown(res))
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="a9a,w8a,ijcnn1,phishing")
    ap.add_argument("--Cs", default=",".join(f"{c:g}" for c in CS))
    ap.add_argument("--eps", default=",".join(f"{e:g}" for e in EPSS))
    ap.add_argument("--cap", type=float, default=20.0, help="CPU seconds per gpusvm solve")
    ap.add_argument("--cap-long", type=float, default=200.0, help="CPU seconds for the priority cells")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="benchmarks/results/linear_table")
    ap.add_argument("--repeat", type=int, default=1,
                    help="run each solver up to this many times (while under 2 CPU s) and keep the fastest")
    ap.add_argument("--merge", default=None,
                    help="comma-separated JSON files of runs made at the same time (e.g. other data sets in a "
                         "second process): their rows are added to <out>_<device>.json/.md; nothing is run")
    args = ap.parse_args(argv)
    if args.merge:
        return _merge(Path(f"{args.out}_{args.device}.json"), [Path(f) for f in args.merge.split(",")])
    be = get_backend(args.device)
    data_dir = find_data_dir()
    if data_dir is None:
        sys.exit("LIBSVM data sets not found (../shared/data or $GPUSVM_DATA)")
    out_json = Path(f"{args.out}_{be.name}.json")
    out_md = Path(f"{args.out}_{be.name}.md")
    datasets = args.datasets.split(",")
    res = {"machine": _machine(be), "cap": args.cap, "cap_long": args.cap_long,
           "sklearn_max_iter": SK_MAX_ITER, "sklearn_conv_max_iter": SK_CONV_MAX_ITER,
           "time_unit": "process CPU seconds", "datasets": datasets, "rows": [], "repeat": args.repeat}
    Cs = [float(c) for c in args.Cs.split(",")]
    epss = [float(e) for e in args.eps.split(",")]
    cache = {}
    cpu = get_backend("cpu")
    for (name, Cv, eps), long_cap in _plan(datasets, Cs, epss):
        if name not in cache:
            X, y = load_svmlight(Path(data_dir) / f"{name}.xz")
            y = np.where(y == y.max(), 1.0, -1.0)
            X.indices = X.indices.astype(np.int32)  # sklearn's liblinear wrapper wants 32-bit indices
            X.indptr = X.indptr.astype(np.int32)
            Xb, yb = be.asarray(X), be.asarray(y)
            # warm-up: compile the sweep code for this input type, outside the clock
            for method in ("dcd", "avsf"):
                dcd_linear(be, be.take_rows(Xb, be.xp.arange(50)), yb[:50], be.xp.ones(50), max_iter=2,
                           method=method)
            cache[name] = (X, y, Xb, yb)
        X, y, Xb, yb = cache[name]
        cap = args.cap_long if long_cap else args.cap
        C = be.xp.full(X.shape[0], Cv)
        row = {"data": name, "n": X.shape[0], "d": X.shape[1], "C": Cv, "eps": eps}
        rep = args.repeat
        row["avsf"] = _best_of(lambda: _run_ours(be, Xb, yb, C, "avsf", eps, cap, args.seed), rep)
        row["dcd"] = _best_of(lambda: _run_ours(be, Xb, yb, C, "dcd", eps, cap, args.seed), rep)
        row["sklearn"] = _best_of(lambda: _run_sklearn(X, y, Cv, eps, cpu, SK_MAX_ITER), rep)
        if Cv <= 1.0:
            row["sklearn_conv"] = _best_of(lambda: _run_sklearn(X, y, Cv, eps, cpu, SK_CONV_MAX_ITER), rep)
        row["loadavg_1min"] = os.getloadavg()[0]
        res["machine"]["loadavg_1min_last"] = row["loadavg_1min"]
        res["rows"].append(row)
        print(json.dumps(row), flush=True)
        out_json.write_text(json.dumps(res, indent=1))
        out_md.write_text(_markdown(res))
    return res


if __name__ == "__main__":
    main()

"""Does the batched working-set decomposition beat pair-at-a-time SMO on the CPU?

Runs, in one process and on one machine, the binary C-SVC solvers "smo" and "pa-smo" with
``decomposition="pairwise"`` (LIBSVM-style loop in Numba) and ``decomposition="batched"``
(gpusvm._solvers.smo_batched, local solves in Numba), plus scikit-learn's SVC (LIBSVM) as the reference
objective, on a9a (C=32, gamma=0.008) and ijcnn1 (C=32, gamma=2), and writes
benchmarks/results/smo_decomposition_cpu.{json,md}.

    PYTHONPATH=. python benchmarks/smo_decomposition.py [--n N] [--datasets a9a ijcnn1] [--q 256 512]
    PYTHONPATH=. python benchmarks/smo_decomposition.py --crossover   # small n: where batched starts to win

Numba compilation is excluded (a warm-up fit on a small problem first). Each configuration is fitted
``--repeats`` times; min and median wall times are reported. The speed ratios are measured, never
estimated: pairwise time / batched time for the same local algorithm.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpusvm import get_backend  # noqa: E402
from gpusvm._gram import GramSpec  # noqa: E402
from gpusvm._solvers.smo import solve_pa_smo, solve_smo  # noqa: E402
from gpusvm.datasets import find_data_dir, load_svmlight  # noqa: E402

SETS = {"a9a": ("a9a.xz", 32.0, 0.008), "ijcnn1": ("ijcnn1.xz", 32.0, 2.0), "w8a": ("w8a.xz", 8.0, 0.03),
        "phishing": ("phishing.xz", 8.0, 8.0)}
CACHE_MB = 500


def _load(name, n):
    fname, C, gamma = SETS[name]
    X, y = load_svmlight(find_data_dir() / fname)
    y = np.where(y == y.max(), 1.0, -1.0)
    if n and n < X.shape[0]:
        from sklearn.model_selection import train_test_split

        X, _, y, _ = train_test_split(X, y, train_size=n, stratify=y, random_state=0)
    X = X.tocsr()
    X.indices = X.indices.astype(np.int32)  # scikit-learn's SVC refuses 64-bit sparse indices
    X.indptr = X.indptr.astype(np.int32)
    return X, y, C, gamma


def _run_gpusvm(fn, X, y, C, gamma, **kw):
    be = get_backend("cpu")
    spec = GramSpec("rbf", gamma)
    t = time.perf_counter()
    r = fn(be, X, y, spec, np.full(X.shape[0], C), tol=1e-3, max_iter=-1, cache_bytes=CACHE_MB * 2**20, **kw)
    dt = time.perf_counter() - t
    return dt, {"objective": r.objective, "n_iter": r.n_iter, "converged": r.converged,
                "n_sv": int(np.count_nonzero(r.alpha > 0)),
                "inner_steps": r.info.get("inner_steps"), "working_set_size": r.info.get("working_set_size")}


def _run_sklearn(X, y, C, gamma):
    from sklearn.svm import SVC

    t = time.perf_counter()
    sk = SVC(C=C, gamma=gamma, tol=1e-3, cache_size=CACHE_MB).fit(X, y)
    dt = time.perf_counter() - t
    dc = sk.dual_coef_
    dc = np.asarray(dc.toarray() if hasattr(dc, "toarray") else dc).ravel()
    from sklearn.metrics.pairwise import rbf_kernel

    D = float(np.abs(dc).sum() - 0.5 * dc @ rbf_kernel(sk.support_vectors_, gamma=gamma) @ dc)
    return dt, {"objective": D, "n_iter": int(np.sum(sk.n_iter_)), "n_sv": int(len(dc))}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["a9a", "ijcnn1"], choices=sorted(SETS))
    ap.add_argument("--n", type=int, default=0, help="stratified subset size (0: full data)")
    ap.add_argument("--q", type=int, nargs="+", default=[256], help="batched working-set sizes to try")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--no-sklearn", action="store_true")
    ap.add_argument("--crossover", action="store_true",
                    help="time both decompositions (default q) on subsets of 300..10,000 rows instead; writes "
                         "benchmarks/results/smo_decomposition_crossover_cpu.{json,md}")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "smo_decomposition_cpu"))
    args = ap.parse_args(argv)
    if find_data_dir() is None:
        sys.exit("LIBSVM data not found (../shared/data or $GPUSVM_DATA)")

    # warm-up: compile every Numba function outside the timings
    Xw, yw, _, _ = _load("a9a", 600)
    for fn in (solve_smo, solve_pa_smo):
        for dec in ("pairwise", "batched"):
            _run_gpusvm(fn, Xw, yw, 1.0, 0.01, decomposition=dec)
    if args.crossover:
        return _crossover(args)

    rows = []
    for name in args.datasets:
        X, y, C, gamma = _load(name, args.n)
        print(f"== {name}: n={X.shape[0]} d={X.shape[1]} C={C} gamma={gamma}", flush=True)
        configs = [("sklearn-SVC", None, {})] if not args.no_sklearn else []
        for local, fn in (("smo", solve_smo), ("pa-smo", solve_pa_smo)):
            configs.append((f"{local}/pairwise", fn, {"decomposition": "pairwise"}))
            for q in args.q:
                configs.append((f"{local}/batched-q{q}", fn, {"decomposition": "batched", "working_set_size": q}))
        for label, fn, kw in configs:
            times, info = [], None
            for _ in range(args.repeats):
                dt, info = _run_sklearn(X, y, C, gamma) if fn is None else _run_gpusvm(fn, X, y, C, gamma, **kw)
                times.append(dt)
            row = {"dataset": name, "n": int(X.shape[0]), "solver": label, "time_min_s": min(times),
                   "time_median_s": statistics.median(times), "times_s": times, **info}
            rows.append(row)
            print(f"  {label:24s} {min(times):8.2f}s  D={info['objective']:.8g}  iter={info['n_iter']}  "
                  f"nSV={info['n_sv']}", flush=True)

    ratios = []
    for name in args.datasets:
        by = {r["solver"]: r for r in rows if r["dataset"] == name}
        ref = by.get("sklearn-SVC")
        for local in ("smo", "pa-smo"):
            pw = by[f"{local}/pairwise"]
            for q in args.q:
                bt = by[f"{local}/batched-q{q}"]
                ratios.append({
                    "dataset": name, "local": local, "q": q,
                    "pairwise_over_batched": pw["time_min_s"] / bt["time_min_s"],
                    "sklearn_over_batched": ref["time_min_s"] / bt["time_min_s"] if ref else None,
                    "sklearn_over_pairwise": ref["time_min_s"] / pw["time_min_s"] if ref else None,
                    "rel_obj_diff_batched_vs_sklearn":
                        (bt["objective"] - ref["objective"]) / abs(ref["objective"]) if ref else None,
                })
    meta = {
        "machine": _machine(),
        "note": ("Shared 2-core machine (up to 7 other engineers running jobs at the same time): timings are "
                 "noisy; ratios come from runs in one process, one after another."),
        "settings": {"tol": 1e-3, "cache_mb": CACHE_MB, "subset_n": args.n or "full", "repeats": args.repeats,
                     "gram_dtype": "float32"},
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "runs": rows, "ratios": ratios}, indent=2))
    lines = [
        "# Batched decomposition vs pair-at-a-time SMO on the CPU",
        "",
        f"Machine: {meta['machine']['processor']}, {meta['machine']['cpu_count']} CPUs ({meta['machine']['platform']}). "
        f"{meta['note']} Measured {meta['date']} with `benchmarks/smo_decomposition.py` "
        f"(subset: {meta['settings']['subset_n']}, repeats: {args.repeats}, tol 1e-3, cache {CACHE_MB} MB, float32 Gram rows).",
        "",
        "| data | n | solver | time min (s) | dual objective | iterations | SVs |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['dataset']} | {r['n']} | {r['solver']} | {r['time_min_s']:.2f} | {r['objective']:.8g} | "
                     f"{r['n_iter']} | {r['n_sv']} |")
    lines += ["", "Iterations: SMO steps (pairwise), decomposition rounds (batched), LIBSVM iterations (sklearn).",
              "", "| data | local | q | pairwise / batched time | sklearn / batched | sklearn / pairwise | "
              "batched objective vs sklearn (rel.) |", "|---|---|---|---|---|---|---|"]
    for r in ratios:
        f = (lambda v, fmt: "-" if v is None else format(v, fmt))
        lines.append(f"| {r['dataset']} | {r['local']} | {r['q']} | {r['pairwise_over_batched']:.2f} | "
                     f"{f(r['sklearn_over_batched'], '.2f')} | {f(r['sklearn_over_pairwise'], '.2f')} | "
                     f"{f(r['rel_obj_diff_batched_vs_sklearn'], '.1e')} |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.md')}")


def _machine():
    return {"processor": platform.processor() or platform.machine(), "cpu_count": os.cpu_count(),
            "platform": platform.platform(), "python": platform.python_version()}


def _crossover(args):
    """Small problems: min of 3 fits per configuration, solver "smo", default working-set size."""
    rows = []
    for name in args.datasets:
        for n in (300, 1000, 2000, 3000, 10000):
            X, y, C, gamma = _load(name, n)
            for dec in ("pairwise", "batched"):
                times = [_run_gpusvm(solve_smo, X, y, C, gamma, decomposition=dec)[0] for _ in range(3)]
                rows.append({"dataset": name, "n": int(X.shape[0]), "decomposition": dec,
                             "time_min_s": min(times), "times_s": times})
                print(f"  {name} n={X.shape[0]} {dec:9s} {min(times) * 1e3:9.1f} ms", flush=True)
    out = ROOT / "benchmarks" / "results" / "smo_decomposition_crossover_cpu"
    meta = {"machine": _machine(), "date": time.strftime("%Y-%m-%d %H:%M:%S"),
            "note": "Shared 2-core machine (other engineers' jobs running): timings are noisy.",
            "settings": {"solver": "smo", "tol": 1e-3, "cache_mb": CACHE_MB, "repeats": 3}}
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "runs": rows}, indent=2))
    lines = ["# Pairwise vs batched SMO on small problems (CPU)", "",
             f"Machine: {meta['machine']['processor']}, {meta['machine']['cpu_count']} CPUs. {meta['note']} "
             f"Measured {meta['date']} with `benchmarks/smo_decomposition.py --crossover` (solver smo, default q, "
             "min of 3 fits, stratified subsets).", "",
             "| data | n | pairwise (ms) | batched (ms) | pairwise / batched |", "|---|---|---|---|---|"]
    for name in args.datasets:
        for n in sorted({r["n"] for r in rows if r["dataset"] == name}):
            pw = next(r for r in rows if r["dataset"] == name and r["n"] == n and r["decomposition"] == "pairwise")
            bt = next(r for r in rows if r["dataset"] == name and r["n"] == n and r["decomposition"] == "batched")
            lines.append(f"| {name} | {n} | {pw['time_min_s'] * 1e3:.1f} | {bt['time_min_s'] * 1e3:.1f} | "
                         f"{pw['time_min_s'] / bt['time_min_s']:.2f} |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.md')}")


if __name__ == "__main__":
    main()

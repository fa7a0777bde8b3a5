"""Sweep of the number of pairs p of ALFPGM (as Figures 2-4 of Aregbesola and Griva): fit time and the
number of decompositions for p in {8, 16, 32, 64, 100, 200} on a9a (C=32, gamma=0.008) and ijcnn1
(C=32, gamma=2).

The binary solver is called directly (``solve_alfpgm`` on the chosen backend) on a stratified random
subset of ``--n`` rows (seed 0; ``--n 0`` = full size), tol=1e-3, 1 GiB Gram-row cache, float32 Gram
values. Each point is timed once after a warm-up fit (Numba / kernel compilation), so times on a shared
machine are noisy; the decompositions and FPGM steps are exact counts. Also recorded: the dual
objective (float64, from the solver) and its spread over p.

Usage: python benchmarks/alfpgm_sweep.py [--n 0] [--device cpu] [--datasets a9a ijcnn1]
Writes benchmarks/results/alfpgm_sweep_<device>.{json,md} (full size, ``--n 0``) or
alfpgm_sweep_n<N>_<device>.{json,md} (subsets).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpusvm.bench.harness import _git_commit  # noqa: E402
from gpusvm import GramSpec, get_backend  # noqa: E402
from gpusvm.datasets import find_data_dir, load_svmlight  # noqa: E402
from gpusvm._solvers.alfpgm import solve_alfpgm  # noqa: E402

DATASETS = {"a9a": ("a9a.xz", 32.0, 0.008), "ijcnn1": ("ijcnn1.xz", 32.0, 2.0),
            "w8a": ("w8a.xz", 8.0, 0.03), "phishing": ("phishing.xz", 8.0, 8.0)}
# problems without data files, at their own size (--n does not apply): those of the main job's table
# (gpusvm bench), whose ALFPGM rows were the slowest there
GENERATED = {"chess5k": (1000.0, 10.0), "chess10k": (100.0, 10.0), "breast_cancer": (1.0, None),
             "digits3v8": (10.0, None)}
PAIRS = (8, 16, 32, 64, 100, 200)


def load(name, n, seed=0):
    from sklearn.model_selection import train_test_split

    if name in GENERATED:
        return load_generated(name)
    fname, C, gamma = DATASETS[name]
    X, y = load_svmlight(find_data_dir() / fname)
    if n and n < X.shape[0]:
        X, _, y, _ = train_test_split(X, y, train_size=n, stratify=y, random_state=seed)
    return X, np.where(y > y.min(), 1.0, -1.0), C, gamma


def load_generated(name):
    """The chess-boards (4 x 4, random_state 0) and scikit-learn's bundled data as the main job uses them:
    breast_cancer standardized, digits divided by 16 (classes 3 and 8); gamma "scale" = 1 / (d X.var())."""
    from sklearn.datasets import load_breast_cancer, load_digits
    from sklearn.preprocessing import StandardScaler

    from gpusvm.datasets import make_chessboard

    C, gamma = GENERATED[name]
    if name.startswith("chess"):
        X, y = make_chessboard(int(name[5:-1]) * 1000, 4, random_state=0)
    elif name == "breast_cancer":
        X, y = load_breast_cancer(return_X_y=True)
        X = StandardScaler().fit_transform(X)
    else:
        X, y = load_digits(return_X_y=True)
        keep = (y == 3) | (y == 8)
        X, y = X[keep] / 16.0, y[keep]
    if gamma is None:
        gamma = 1.0 / (X.shape[1] * X.var())
    return X, np.where(y > y.min(), 1.0, -1.0), C, gamma


def fit(be, X, y, C, gamma, p):
    t, c = time.perf_counter(), time.process_time()
    r = solve_alfpgm(be, be.asarray(X), be.asarray(y), GramSpec("rbf", gamma), be.asarray(np.full(len(y), C)),
                     tol=1e-3, max_iter=-1, cache_bytes=2**30, n_pairs=p or None)
    be.sync()
    return time.perf_counter() - t, time.process_time() - c, r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=0)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--datasets", nargs="+", default=["a9a", "ijcnn1"],
                    help=f"of {sorted(DATASETS)} (files) and {sorted(GENERATED)} (generated, own size)")
    ap.add_argument("--pairs", nargs="+", type=int, default=list(PAIRS),
                    help="p values; 0 = the solver's default (n_pairs=None: its start rule and adaptive halving)")
    ap.add_argument("--append", action="store_true",
                    help="keep the rows already in the results file except those of the (data set, p) points "
                         "run now (runs done separately)")
    ap.add_argument("--md-only", action="store_true", help="rewrite the Markdown from the JSON and exit")
    args = ap.parse_args()
    if args.md_only:
        stem = Path(__file__).resolve().parent / "results" / (
            f"alfpgm_sweep_n{args.n}_{args.device}" if args.n else f"alfpgm_sweep_{args.device}")
        write_md(json.loads(stem.with_suffix(".json").read_text()), stem.with_suffix(".md"))
        return
    be = get_backend(args.device)
    git = _git_commit()  # per row: --append mixes runs made from different commits
    out = {
        "benchmark": "alfpgm_sweep", "device": args.device, "device_name": be.device_name,
        "machine": {"processor": platform.processor(), "machine": platform.machine(), "cpu_count": os.cpu_count()},
        "note": "one run on one machine shared with other engineers' jobs: times are noisy; counts are exact",
        "n_rows": args.n or "full", "tol": 1e-3, "results": [],
    }
    res_dir = Path(__file__).resolve().parent / "results"
    res_dir.mkdir(exist_ok=True)
    stem = res_dir / f"alfpgm_sweep_{args.device}"
    if args.n:  # a subset run must not overwrite the full-size results
        stem = res_dir / f"alfpgm_sweep_n{args.n}_{args.device}"
    if args.append and stem.with_suffix(".json").exists():
        old = json.loads(stem.with_suffix(".json").read_text())
        rerun = {(d, p) for d in args.datasets for p in args.pairs}
        out["results"] = [r for r in old["results"] if (r["dataset"], r["p"]) not in rerun]
        out["runs"] = old.get("runs", 1) + 1
        if old.get("notes"):
            out["notes"] = old["notes"]
    for name in args.datasets:
        X, y, C, gamma = load(name, args.n)
        fit(be, X[:500], y[:500], C, gamma, 8)  # warm-up: compilation outside the timing
        for p in args.pairs:
            t, cpu, r = fit(be, X, y, C, gamma, p)
            row = {"dataset": name, "n": int(X.shape[0]), "C": C, "gamma": gamma, "p": p, "git": git, "time_s": t,
                   "process_cpu_s": cpu, "fallbacks": r.info["fallbacks"], "fills": r.info["fills"],
                   "polish_steps": r.info["polish_steps"],
                   "decompositions": r.n_iter, "fpgm_steps": r.info["inner_iters"],
                   "outer_iters": r.info["outer_iters"], "pairs_total": r.info["pairs"],
                   "limiter_resets": r.info["limiter_resets"], "objective": r.objective,
                   "n_pairs_start": r.info["n_pairs_start"], "n_pairs_end": r.info["n_pairs"],
                   "converged": r.converged, "gap": r.info["gap"],
                   "inner_limit_hits": r.info["inner_limit_hits"], "outer_limit_hits": r.info["outer_limit_hits"]}
            out["results"].append(row)
            print(json.dumps(row), flush=True)
            stem.with_suffix(".json").write_text(json.dumps(out, indent=1))
    write_md(out, stem.with_suffix(".md"))


def write_md(out, path):
    lines = [f"# ALFPGM: sweep of the number of pairs p ({out['device']}: {out['device_name']}, "
             f"{out['machine']['cpu_count']} CPUs)", "",
             ("Rows: the whole LIBSVM training file of each data set" if out["n_rows"] == "full" else
              f"Rows: {out['n_rows']} per data set (stratified subset, seed 0)") + ", tol 1e-3, float32 Gram rows, "
             "1 GiB cache. One timed fit per point after a warm-up. " + out["note"] + ".", "",
             "| data set | n | p | fit time (s) | process CPU (s) | decompositions | FPGM steps | outer iters | "
             "SMO polish steps | fallbacks | limiter resets | dual objective | converged |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    order = list(dict.fromkeys(r["dataset"] for r in out["results"]))
    for r in sorted(out["results"], key=lambda r: (order.index(r["dataset"]), r["p"])):
        p = r["p"] or f"default ({r['n_pairs_start']} -> {r['n_pairs_end']})"
        lines.append(f"| {r['dataset']} | {r['n']} | {p} | {r['time_s']:.2f} | {r['process_cpu_s']:.2f} | "
                     f"{r['decompositions']} | {r['fpgm_steps']} | {r['outer_iters']} | {r['polish_steps']} | "
                     f"{r['fallbacks']} | {r['limiter_resets']} | {r['objective']:.6f} | {r['converged']} |")
    lines.append("")
    ratios = [r["time_s"] / r["process_cpu_s"] for r in out["results"] if r.get("process_cpu_s")]
    if ratios:
        lines.append(f"Wall time / process CPU time ranged {min(ratios):.1f}-{max(ratios):.1f} over the fits: other "
                     "jobs held the cores, so compare the process CPU times (the solver is single-threaded "
                     "apart from BLAS calls).")
        lines.append("")
    if out.get("runs", 1) > 1:
        lines.append("The points were run in separate invocations (``--append``), one after the other.")
    for name in dict.fromkeys(r["dataset"] for r in out["results"]):
        missing = [p for p in PAIRS if p not in {r["p"] for r in out["results"] if r["dataset"] == name}]
        if missing:
            lines.append(f"- {name}: NOT measured for p = {missing} (the run was stopped: too slow on the shared "
                         "machine in the time available).")
        rows = [r for r in out["results"] if r["dataset"] == name]
        key = "process_cpu_s" if all(r.get("process_cpu_s") for r in rows) else "time_s"
        fixed = [r for r in rows if r["p"]]
        best = min(fixed or rows, key=lambda r: r[key])
        objs = [r["objective"] for r in rows]
        lines.append(f"- {name}: fastest fixed p = {best['p']} ({best[key]:.2f} s {key}); slowest/fastest ratio "
                     f"{max(r[key] for r in fixed or rows) / best[key]:.2f}; objective spread over p "
                     f"{(max(objs) - min(objs)) / abs(objs[0]):.2e} (relative).")
        for r in rows:
            if not r["p"]:
                lines.append(f"  The default ({r['n_pairs_start']} -> {r['n_pairs_end']} pairs): {r[key]:.2f} s, "
                             f"{r[key] / best[key]:.2f}x the fastest fixed p.")
    if out.get("notes"):  # written by hand into the JSON, kept when the Markdown is rewritten
        lines += ["", "## Notes", "", *out["notes"]]
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

"""Fit times of ALFPGM, SMO and scikit-learn's SVC (LIBSVM) on a9a, ijcnn1, w8a and phishing.

Hyperparameters of the SMO issue: a9a (C=32, gamma=0.008), ijcnn1 (C=32, gamma=2), w8a (C=8,
gamma=0.03), phishing (C=8, gamma=8). Training sets: a9a and ijcnn1 their whole LIBSVM training files;
w8a and phishing (no separate test file here) the 80% part of a stratified 80/20 split (seed 0), as in
the SMO issue. ``--n N`` instead takes a stratified subset of N rows of that training set (seed 0).
Compared, in one run on one machine:

* sklearn ``SVC`` (LIBSVM, tol 1e-3, 200 MB cache, shrinking);
* ``gpusvm.SVC(solver="alfpgm")`` (n_pairs=None: the sweep's default) on ``--device``;
* ``gpusvm.SVC(solver="smo")`` on ``--device`` (only if the "smo" solver is registered).

Each gpusvm estimator gets one warm-up fit on 500 rows first (Numba / kernel compilation). Reported:
fit time, the ratio sklearn / gpusvm, the dual objective of every model recomputed in float64 by the
same function (:func:`gpusvm.bench.objectives.sklearn_svc_objective`) and its relative difference from
sklearn's, and the number of support vectors.

Usage: python benchmarks/alfpgm_compare.py [--n 0] [--device cpu]
Writes benchmarks/results/alfpgm_compare_<device>.{json,md} (full size) or
alfpgm_compare_n<N>_<device>.{json,md} (subsets).
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
from gpusvm import get_backend  # noqa: E402
from gpusvm._solvers import binary_solvers  # noqa: E402
from gpusvm._solvers.alfpgm import DEFAULT_N_PAIRS  # noqa: E402
from gpusvm.bench.objectives import sklearn_svc_objective  # noqa: E402
from gpusvm.datasets import find_data_dir, load_svmlight  # noqa: E402

DATASETS = {"a9a": ("a9a.xz", 32.0, 0.008), "ijcnn1": ("ijcnn1.xz", 32.0, 2.0),
            "w8a": ("w8a.xz", 8.0, 0.03), "phishing": ("phishing.xz", 8.0, 8.0)}


def load(name, n, seed=0):
    from sklearn.model_selection import train_test_split

    fname, C, gamma = DATASETS[name]
    X, y = load_svmlight(find_data_dir() / fname)
    if name in ("w8a", "phishing"):  # stratified 80/20 split, seed 0: the training part
        X, _, y, _ = train_test_split(X, y, test_size=0.2, stratify=y, random_state=seed)
    if n and n < X.shape[0]:
        X, _, y, _ = train_test_split(X, y, train_size=n, stratify=y, random_state=seed)
    X = X.tocsr()
    X.indices = X.indices.astype(np.int32)
    X.indptr = X.indptr.astype(np.int32)
    return X, y, C, gamma


def timed_fit(make, X, y, device):
    est = make()
    t, c = time.perf_counter(), time.process_time()
    est.fit(X, y)
    if device == "gpu":
        get_backend("gpu").sync()
    return time.perf_counter() - t, time.process_time() - c, est


def main():
    from sklearn.svm import SVC as SkSVC

    from gpusvm.svc import SVC

    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=0)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--n-pairs", type=int, default=None, help="ALFPGM's n_pairs (default: the solver's)")
    ap.add_argument("--md-only", action="store_true", help="rewrite the Markdown from the JSON and exit")
    ap.add_argument("--append", action="store_true",
                    help="keep the rows of other data sets already in the results file (runs done separately)")
    args = ap.parse_args()
    if args.md_only:
        stem = Path(__file__).resolve().parent / "results" / (
            f"alfpgm_compare_n{args.n}_{args.device}" if args.n else f"alfpgm_compare_{args.device}")
        write_md(json.loads(stem.with_suffix(".json").read_text()), stem.with_suffix(".md"))
        return
    be = get_backend(args.device)
    git = _git_commit()  # per row: --append mixes runs made from different commits
    solvers = ["alfpgm"] + (["smo"] if "smo" in binary_solvers() else [])
    out = {
        "benchmark": "alfpgm_compare", "device": args.device, "device_name": be.device_name,
        "machine": {"processor": platform.processor(), "machine": platform.machine(), "cpu_count": os.cpu_count()},
        "note": "one run on one machine shared with other engineers' jobs: times are noisy",
        "n_rows": args.n or "full", "solvers": solvers, "results": [],
        "alfpgm_n_pairs": args.n_pairs or f"solver default (DEFAULT_N_PAIRS = {DEFAULT_N_PAIRS})",
    }
    res_dir = Path(__file__).resolve().parent / "results"
    res_dir.mkdir(exist_ok=True)
    stem = res_dir / f"alfpgm_compare_{args.device}"
    if args.n:  # a subset run must not overwrite the full-size results
        stem = res_dir / f"alfpgm_compare_n{args.n}_{args.device}"
    if args.append and stem.with_suffix(".json").exists():
        old = json.loads(stem.with_suffix(".json").read_text())
        if old["solvers"] != solvers or old["alfpgm_n_pairs"] != out["alfpgm_n_pairs"]:
            raise SystemExit(f"--append: {stem}.json was run with solvers {old['solvers']} and ALFPGM n_pairs "
                             f"{old['alfpgm_n_pairs']!r}; this run would use {solvers} and {out['alfpgm_n_pairs']!r}")
        out["results"] = [r for r in old["results"] if r["dataset"] not in args.datasets]
        out["runs"] = old.get("runs", 1) + 1
        if old.get("notes"):
            out["notes"] = old["notes"]
    for name in args.datasets:
        X, y, C, gamma = load(name, args.n)
        row = {"dataset": name, "n": int(X.shape[0]), "C": C, "gamma": gamma, "git": git}
        t_sk, c_sk, sk = timed_fit(lambda: SkSVC(C=C, gamma=gamma, cache_size=200), X, y, "cpu")
        obj_sk = sklearn_svc_objective(sk, X, y)
        row["sklearn"] = {"time_s": t_sk, "process_cpu_s": c_sk, "objective": obj_sk,
                          "n_sv": int(sk.support_.shape[0])}
        for s in solvers:
            def make(s=s):
                kw = {"n_pairs": args.n_pairs} if s == "alfpgm" and args.n_pairs else {}
                return SVC(C=C, gamma=gamma, solver=s, device=args.device, **kw)

            make().fit(X[:500], y[:500])  # warm-up
            t, c, est = timed_fit(make, X, y, args.device)
            obj = sklearn_svc_objective(est, X, y)
            row[s] = {"time_s": t, "process_cpu_s": c, "cpu_speedup_vs_sklearn": c_sk / c,
                      "objective": obj, "obj_rel_diff": (obj - obj_sk) / abs(obj_sk),
                      "n_sv": int(np.asarray(est.n_support_).sum()), "speedup_vs_sklearn": t_sk / t,
                      "n_iter": int(np.asarray(est.n_iter_).sum())}
        out["results"].append(row)
        print(json.dumps(row), flush=True)
        stem.with_suffix(".json").write_text(json.dumps(out, indent=1))
    write_md(out, stem.with_suffix(".md"))


def write_md(out, path):
    sol = out["solvers"]
    head = "| data set | n | sklearn fit (s) | sklearn CPU (s) | sklearn n_SV | " + " | ".join(
        f"{s} fit (s) | {s} CPU (s) | sklearn/{s} (CPU) | {s} obj rel diff | {s} n_SV" for s in sol) + " |"
    lines = [f"# ALFPGM vs SMO vs sklearn SVC ({out['device']}: {out['device_name']}, "
             f"{out['machine']['cpu_count']} CPUs)", "",
             f"Rows: {out['n_rows']} (training sets as in the script's docstring); tol 1e-3; ALFPGM n_pairs: "
             f"{out['alfpgm_n_pairs']}; defaults otherwise. "
             "One timed fit each after a warm-up. " + out["note"] + ". Ratios > 1 mean gpusvm was faster.", "",
             head, "|" + "---|" * (5 + 5 * len(sol))]
    for r in out["results"]:
        cells = [r["dataset"], str(r["n"]), f"{r['sklearn']['time_s']:.2f}", f"{r['sklearn']['process_cpu_s']:.2f}",
                 str(r["sklearn"]["n_sv"])]
        for s in sol:
            cells += [f"{r[s]['time_s']:.2f}", f"{r[s]['process_cpu_s']:.2f}", f"{r[s]['cpu_speedup_vs_sklearn']:.2f}",
                      f"{r[s]['obj_rel_diff']:.1e}", str(r[s]["n_sv"])]
        lines.append("| " + " | ".join(cells) + " |")
    ratios = [r[k]["time_s"] / r[k]["process_cpu_s"] for r in out["results"] for k in ["sklearn", *sol]
              if r[k].get("process_cpu_s")]
    if ratios:
        lines += ["", f"Wall time / process CPU time ranged {min(ratios):.1f}-{max(ratios):.1f} over the fits: other "
                  "jobs held the cores, so the ratios use process CPU time. Each estimator ran with its default "
                  "Gram cache (200 MB; the sweep used 1 GiB)."]
    if "smo" in sol:
        lines.append("")
        for r in out["results"]:
            lines.append(f"- {r['dataset']}: ALFPGM / SMO ratio: wall {r['alfpgm']['time_s'] / r['smo']['time_s']:.2f}, "
                         f"process CPU {r['alfpgm']['process_cpu_s'] / r['smo']['process_cpu_s']:.2f}")
    if out.get("runs", 1) > 1:
        lines += ["", "The data sets were run in separate invocations (``--append``), one after the other."]
    if out.get("notes"):  # written by hand into the JSON, kept when the Markdown is rewritten
        lines += ["", "## Notes", "", *out["notes"]]
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

"""Dense-input SVC against scikit-learn's dense LIBSVM, and the pairwise SMO op against an earlier revision.

Data (dense NumPy arrays, RBF): phishing (C=8, gamma=8; the training part of the stratified 80/20
split, seed 0), ijcnn1 (C=32, gamma=2; a stratified 15,000-row subset of the training file, seed 0)
and skin_nonskin (C=8, gamma=0.03, raw B,G,R features; a stratified 30,000-row subset, seed 0).

In one run per data set: sklearn SVC and gpusvm SVC (device="cpu", solver "smo") fitted on the same
dense array, process CPU time (both are single-threaded; the machine is shared, so wall time is
noisy), the dual objective recomputed in float64 from each model's dual_coef_ by the same function,
the number of support vectors and SMO steps. Then the fused op ``smo_pairwise`` itself, as it is now
and (``--baseline-rev``, default the commit before this session's rewrite) as it was at that git
revision, loaded from ``git show`` into a scratch module: process CPU time, steps, Gram values
evaluated (current op only) and cache misses.

Usage: python benchmarks/svc_dense_profile.py [--datasets phishing ijcnn1 skin_nonskin]
       [--baseline-rev 2ff4835] [--no-baseline]
Writes benchmarks/results/svc_dense_profile_cpu.{json,md}.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpusvm import GramSpec, get_backend  # noqa: E402
from gpusvm.bench.objectives import sklearn_svc_objective  # noqa: E402
from gpusvm.datasets import find_data_dir, load_bundled, load_svmlight  # noqa: E402
from gpusvm.svc import SVC  # noqa: E402

# name: (file, n_features, C, gamma, rows (None: the 80% training part of a stratified split))
DATASETS = {
    "phishing": ("phishing.xz", 68, 8.0, 8.0, None),
    "ijcnn1": ("ijcnn1.xz", 22, 32.0, 2.0, 15000),
    "skin_nonskin": ("skin_nonskin.xz", 3, 8.0, 0.03, 30000),
}


def load(data_dir, name):
    from sklearn.model_selection import train_test_split

    fname, nf, C, gamma, rows = DATASETS[name]
    X, y = load_svmlight(data_dir / fname, n_features=nf)
    X = X.toarray()
    if rows is None:
        X, _, y, _ = train_test_split(X, y, test_size=0.2, stratify=y, random_state=0)
    else:
        X, _, y, _ = train_test_split(X, y, train_size=rows, stratify=y, random_state=0)
    return np.ascontiguousarray(X), y, C, gamma


def load_baseline_op(rev):
    """The ``smo_pairwise_cpu`` function of git revision ``rev``, without registering it as the op."""
    src = subprocess.run(["git", "show", f"{rev}:gpusvm/_backend/ops/smo_pairwise.py"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    src = src.replace('@register_op("smo_pairwise", "cpu")\n', "")
    tmp = Path(tempfile.mkdtemp()) / "_smo_pairwise_baseline.py"
    tmp.write_text(src)
    name = "gpusvm._backend.ops._smo_pairwise_baseline"  # inside the package: relative imports work
    spec = importlib.util.spec_from_file_location(name, tmp)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod.smo_pairwise_cpu


def _cpu(fn):
    c = time.process_time()
    out = fn()
    return out, time.process_time() - c


def main(argv=None):
    from sklearn.svm import SVC as SkSVC

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--baseline-rev", default="2ff4835")
    ap.add_argument("--no-baseline", action="store_true")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = ap.parse_args(argv)
    data_dir = find_data_dir()
    if data_dir is None:
        sys.exit("LIBSVM data sets not found (../shared/data or $GPUSVM_DATA)")
    be = get_backend("cpu")
    baseline = None if args.no_baseline else load_baseline_op(args.baseline_rev)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    out = {
        "machine": {"processor": platform.processor() or platform.machine(), "cpu_count": os.cpu_count(),
                    "platform": platform.platform(), "python": platform.python_version()},
        "note": "shared 2-core machine (other engineers' jobs running, load average 10-15): process CPU "
                "time is reported; all ratios were measured within one run",
        "git_commit": head, "baseline_rev": None if baseline is None else args.baseline_rev,
        "settings": {"tol": 1e-3, "cache_size_MB": 200, "kernel": "rbf", "gram_dtype": "float32"},
        "rows": [],
    }
    # compile outside the timed runs
    Xw, yw = load_bundled("breast_cancer")
    SVC(device="cpu").fit(Xw, yw)
    yb = np.where(yw == yw.max(), 1.0, -1.0)
    if baseline is not None:
        baseline(be, Xw, yb, GramSpec("rbf", gamma=0.03), np.ones(len(yb)))
    for name in args.datasets:
        X, y, C, gamma = load(data_dir, name)
        print(f"== {name}: {X.shape}", flush=True)
        row = {"dataset": name, "n": int(X.shape[0]), "d": int(X.shape[1]), "C": C, "gamma": gamma}
        sk, t_sk = _cpu(lambda: SkSVC(C=C, gamma=gamma).fit(X, y))
        ours, t_ours = _cpu(lambda: SVC(C=C, gamma=gamma, device="cpu").fit(X, y))
        o_sk, o_ours = sklearn_svc_objective(sk, X, y), sklearn_svc_objective(ours, X, y)
        row["sklearn"] = {"fit_cpu_s": t_sk, "objective": o_sk, "n_sv": int(len(sk.support_)),
                          "n_iter": int(sk.n_iter_[0])}
        row["gpusvm"] = {"fit_cpu_s": t_ours, "objective": o_ours, "n_sv": int(len(ours.support_)),
                         "n_iter": int(ours.n_iter_[0]), "cpu_time_speedup_vs_sklearn": t_sk / t_ours,
                         "rel_objective_diff": (o_ours - o_sk) / abs(o_sk),
                         "n_sv_rel_diff": (len(ours.support_) - len(sk.support_)) / len(sk.support_)}
        print("  ", row["sklearn"], "\n  ", row["gpusvm"], flush=True)
        ys = np.where(y == ours.classes_[1], 1.0, -1.0)
        spec = GramSpec("rbf", gamma=gamma)
        Cv = np.full(len(ys), C)
        ops = [("current", be.smo_pairwise)] + ([] if baseline is None else [("baseline", baseline)])
        for label, fn in ops:
            res, t = _cpu(lambda: fn(be, X, ys, spec, Cv) if label == "baseline" else fn(X, ys, spec, Cv))
            row[f"op_{label}"] = {"cpu_s": t, "n_iter": res["n_iter"],
                                  "cache_misses": res["info"]["cache_misses"],
                                  "gram_evaluations": res["info"].get("gram_evaluations")}
            print(f"   op {label}:", row[f"op_{label}"], flush=True)
        if baseline is not None:
            row["op_speedup_vs_baseline"] = row["op_baseline"]["cpu_s"] / row["op_current"]["cpu_s"]
        out["rows"].append(row)
        write(out, args.out)
    return out


def write(out, out_dir):
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "svc_dense_profile_cpu.json").write_text(json.dumps(out, indent=1))
    m = out["machine"]
    lines = [
        "# Dense input: gpusvm SVC vs scikit-learn's dense LIBSVM, and the SMO op before/after",
        "",
        f"Machine: {m['processor']}, {m['cpu_count']} CPUs ({m['platform']}). {out['note']}.",
        f"Code: {out['git_commit']}; baseline op: {out['baseline_rev'] or 'not run'}. "
        "Generated by `benchmarks/svc_dense_profile.py`.",
        "",
        "RBF, tol = 1e-3, cache 200 MB, float32 Gram values; dense NumPy input for both libraries. "
        "Objectives recomputed in float64 from each model's dual_coef_ by the same function.",
        "",
        "| data set | n x d | sklearn CPU s | gpusvm CPU s | ratio | rel. obj. diff | n_SV sklearn / gpusvm | "
        "steps sklearn / gpusvm |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in out["rows"]:
        s, g = r["sklearn"], r["gpusvm"]
        lines.append(f"| {r['dataset']} | {r['n']} x {r['d']} | {s['fit_cpu_s']:.2f} | {g['fit_cpu_s']:.2f} | "
                     f"{g['cpu_time_speedup_vs_sklearn']:.2f} | {g['rel_objective_diff']:.1e} | "
                     f"{s['n_sv']} / {g['n_sv']} | {s['n_iter']} / {g['n_iter']} |")
    lines += ["", "The op alone (`smo_pairwise`, same data, labels as +-1):", "",
              "| data set | op CPU s now | op CPU s baseline | speed-up | steps now / baseline | "
              "Gram values now | cache misses now / baseline |",
              "|---|---|---|---|---|---|---|"]
    for r in out["rows"]:
        c, b = r["op_current"], r.get("op_baseline")
        b_cpu = "-" if b is None else f"{b['cpu_s']:.2f}"
        ratio = "-" if b is None else f"{r['op_speedup_vs_baseline']:.2f}"
        b_it = "-" if b is None else b["n_iter"]
        b_miss = "-" if b is None else b["cache_misses"]
        lines.append(f"| {r['dataset']} | {c['cpu_s']:.2f} | {b_cpu} | {ratio} | {c['n_iter']} / {b_it} | "
                     f"{c['gram_evaluations']} | {c['cache_misses']} / {b_miss} |")
    lines.append("")
    (out_dir / "svc_dense_profile_cpu.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main()

"""DC-SVM benchmark: DC-SVM early prediction, DC-SVM to the top, the exact solver from a cold start,
and scikit-learn's SVC, on ijcnn1, a9a and skin_nonskin (time and test accuracy).

Usage::

    PYTHONPATH=. python benchmarks/dcsvm_bench.py [--device cpu|gpu] [--datasets ijcnn1,a9a,skin_nonskin]
        [--configs "4,4;8,2"] [--sub-tol T] [--no-refine] [--max-train N] [--skin-train N]
        [--no-sklearn] [--no-cold-batched] [--out benchmarks/results]

Rows per data set (one run each, all in this process, one after the other, after an untimed warm-up that
loads the compiled code; ``--warmup``: ``full`` fits every timed estimator once on the same training set
first (the default), ``small`` fits each configuration on 3,000 rows (quicker, and the timings of the
earlier results). On 3,000 rows DC-SVM solves none of its levels, so a small warm-up leaves its k-means,
batched clusters and level kernels to the timed fit: on the GPU emulator, 249 of the 448 (CuPy op, call
site) pairs of a 20,000-row ijcnn1 fit were not run by it, and on a GPU each new one is compiled or loaded
from CuPy's cache inside the timing; on the CPU, where Numba loads its functions from its disk cache, the
first 20,000-row ijcnn1 fit after a small warm-up took 0.62 s and the next two 0.36 and 0.48 s):

* ``dcsvc [k=.., L=..]``: DCSVC(n_clusters_per_level=k, n_levels=L, other parameters at their
  defaults (refine="auto"; ``--no-refine``: refine=False)) solved to the top (exact model), for each configuration of ``--configs``;
* ``dcsvc-early [k=.., L=..]``: early prediction with the 64-cluster level of that same run. Its time is
  the time from the start of the fit to the end of that level as recorded in ``levels_`` (the k-means
  and solves of the levels up to it; data validation excluded, a few ms), so no second fit is needed
  (unless the run to the top skipped that level, ``max_cluster_share``: then a separate fit with
  ``early_stop_level`` is timed);
* ``exact-cold``: gpusvm.SVC with the same solver ("smo") from alpha = 0, with its default decomposition
  and (CPU) with the batched one;
* ``sklearn``: sklearn.svm.SVC (LIBSVM), same C, gamma, tol=1e-3, cache 200 MB.

Wall and process CPU times are recorded for every fit.
Dual objectives of the exact models are reported (recomputed from each model on the host). Speed
claims are ratios within one run on one machine; the JSON records the machine.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpusvm import DCSVC, SVC  # noqa: E402
from gpusvm.bench.objectives import sklearn_svc_objective  # noqa: E402
from gpusvm.datasets import find_data_dir, load_svmlight  # noqa: E402

SETUPS = {
    "ijcnn1": {"C": 32.0, "gamma": 2.0, "train": "ijcnn1.xz", "test": "ijcnn1.t.xz", "n_features": 22},
    "a9a": {"C": 32.0, "gamma": 0.008, "train": "a9a.xz", "test": "a9a.t.xz", "n_features": 123},
    "skin_nonskin": {"C": 8.0, "gamma": 0.03, "file": "skin_nonskin.xz", "n_features": 3},
}


def _load(name, data_dir, max_train, skin_train, seed=0):
    from sklearn.model_selection import train_test_split

    s = SETUPS[name]
    info = {}
    if "file" in s:
        X, y = load_svmlight(data_dir / s["file"], n_features=s["n_features"])
        X = X.toarray()  # raw 0-255 B, G, R values
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, stratify=y, random_state=seed)
        info["split"] = "stratified 80/20, seed 0"
        cap = skin_train
    else:
        Xtr, ytr = load_svmlight(data_dir / s["train"], n_features=s["n_features"])
        Xte, yte = load_svmlight(data_dir / s["test"], n_features=s["n_features"])
        if name == "ijcnn1":
            Xtr, Xte = Xtr.toarray(), Xte.toarray()
        cap = max_train
    for M in (Xtr, Xte):  # LIBSVM (sklearn) accepts 32-bit sparse indices only
        if hasattr(M, "indices"):
            M.indices = M.indices.astype(np.int32)
            M.indptr = M.indptr.astype(np.int32)
    if cap is not None and Xtr.shape[0] > cap:
        info["train_subsampled_from"] = int(Xtr.shape[0])
        Xtr, _, ytr, _ = train_test_split(Xtr, ytr, train_size=cap, stratify=ytr, random_state=seed)
    info["n_train"], info["n_test"] = int(Xtr.shape[0]), int(Xte.shape[0])
    info["format"] = "csr" if hasattr(Xtr, "tocsr") else "dense"
    return Xtr, ytr, Xte, yte, info


def _acc(pred, y):
    pred = pred.get() if hasattr(pred, "get") else pred
    return float(np.mean(np.asarray(pred) == np.asarray(y)))


def _sync(device):
    if device == "gpu":
        import cupy as cp

        cp.cuda.Device().synchronize()


def _timed_fit(est, X, y, device):
    t0, c0 = time.perf_counter(), time.process_time()
    est.fit(X, y)
    _sync(device)
    return time.perf_counter() - t0, time.process_time() - c0


def _config_label(kw):
    return (f"k={kw['n_clusters_per_level']}, L={kw['n_levels']}" + ("" if kw.get("refine", True) else ", no refine")
            + (f", sub_tol={kw['sub_tol']}" if "sub_tol" in kw else "")
            + (f", assign={kw['assign']}" if "assign" in kw else "")
            + ("" if "batch_subproblems" not in kw else (", batched" if kw["batch_subproblems"] else ", one by one"))
            + (f", min_cluster_size={kw['min_cluster_size']}" if "min_cluster_size" in kw else "")
            + (f", batch_max_size={kw['batch_max_size']}" if "batch_max_size" in kw else ""))


def _compare(dc_runs, cold_rows):
    comparisons = []
    for dc in dc_runs:
        for cold in cold_rows:
            comparisons.append({
                "dcsvc": dc["row"], "cold": cold["row"], "wall_ratio_cold_over_dcsvc": cold["fit_s"] / dc["fit_s"],
                "cpu_ratio_cold_over_dcsvc": cold["cpu_s"] / dc["cpu_s"],
                "objective_rel_diff": abs(dc["objective"] - cold["objective"]) / abs(cold["objective"]),
                "accuracy_diff_pp": 100 * (dc["test_acc"] - cold["test_acc"])})
    return comparisons


def run(name, data_dir, device, max_train, skin_train, with_sklearn, configs, cold_batched, on_row=None,
        warmup="small"):
    """The rows of one data set. ``on_row(result so far)`` is called after every row, so that a run cut
    short keeps on disk what it measured (``complete`` is False until the last row)."""
    s = SETUPS[name]
    Xtr, ytr, Xte, yte, info = _load(name, data_dir, max_train, skin_train)
    rows, dc_runs, cold_rows = [], [], []
    print(f"== {name}: {info}", flush=True)

    def result(complete=False):
        res = {"dataset": name, "params": {"C": s["C"], "gamma": s["gamma"]}, "info": info, "device": device,
               "rows": rows, "comparisons": _compare(dc_runs, cold_rows), "complete": complete}
        if on_row is not None:
            on_row(res)
        return res

    # warm-up (excluded from the timings): compile or load the code of every path once
    colds = [("exact-cold (gpusvm SVC smo)", {})]
    if cold_batched and device == "cpu":
        colds.append(("exact-cold (gpusvm SVC smo, batched)", {"decomposition": "batched"}))
    warm_s = {}
    if warmup == "full":  # every timed estimator once, on the same data: the timed fits meet no new kernel
        for dc_kw in configs:
            warm_s[f"dcsvc [{_config_label(dc_kw)}]"] = _timed_fit(
                DCSVC(C=s["C"], gamma=s["gamma"], device=device, random_state=0, **dc_kw), Xtr, ytr, device)[0]
        for label, kw in colds:
            warm_s[label] = _timed_fit(SVC(C=s["C"], gamma=s["gamma"], solver="smo", device=device, **kw),
                                       Xtr, ytr, device)[0]
    else:
        nw = min(3000, Xtr.shape[0])
        for dc_kw in configs:
            DCSVC(C=s["C"], gamma=s["gamma"], device=device, random_state=0, **dc_kw).fit(Xtr[:nw], ytr[:nw])
        for dec in ("auto", "batched"):
            SVC(C=s["C"], gamma=s["gamma"], device=device, decomposition=dec).fit(Xtr[:nw], ytr[:nw])
    info["warmup"] = warmup

    # DC-SVM to the top (and early prediction from its 64-cluster level), per configuration
    for dc_kw in configs:
        label = _config_label(dc_kw)
        k, L = dc_kw["n_clusters_per_level"], dc_kw["n_levels"]
        early_level = next((lv for lv in range(L, 0, -1) if k ** lv == 64), L)
        est = DCSVC(C=s["C"], gamma=s["gamma"], device=device, random_state=0, **dc_kw)
        t_dc, c_dc = _timed_fit(est, Xtr, ytr, device)
        lv = est.levels_
        if any(d["level"] == early_level and d.get("skipped") for d in lv):
            # the run to the top did not solve that level (max_cluster_share): a separate early fit
            early_est = DCSVC(C=s["C"], gamma=s["gamma"], device=device, random_state=0, early_stop_level=early_level,
                              **dc_kw)
            t_early, c_early = _timed_fit(early_est, Xtr, ytr, device)
            acc_early = _acc(early_est.predict(Xte), yte)
            note = f"separate fit with early_stop_level={early_level} (the run to the top skipped that level)"
        else:
            below = [d for d in lv if isinstance(d["level"], int) and d["level"] >= early_level]
            t_early = sum(d["time_s"] for d in below)
            c_early = sum(d["cpu_s"] for d in below)
            acc_early = _acc(est.predict(Xte, level=early_level), yte)
            note = f"levels {L}..{early_level} of the dcsvc run (time from levels_)"
        rows.append({"row": f"dcsvc-early [{label}]", "level": early_level, "n_clusters": k ** early_level,
                     "fit_s": t_early, "cpu_s": c_early, "test_acc": acc_early, "note": note})
        obj_dc = sklearn_svc_objective(est)
        rows.append({"row": f"dcsvc [{label}]", "fit_s": t_dc, "cpu_s": c_dc, "test_acc": _acc(est.predict(Xte), yte),
                     "objective": obj_dc, "n_sv": int(est.support_.shape[0]), "levels": lv, "params": dc_kw,
                     **({"warmup_fit_s": warm_s[f"dcsvc [{label}]"]} if warm_s else {})})
        dc_runs.append(rows[-1])
        print(f"  [{label}] dcsvc-early ({k ** early_level} clusters) {t_early:.2f}s acc {acc_early:.4f} | dcsvc "
              f"{t_dc:.2f}s (cpu {c_dc:.2f}s) acc {rows[-1]['test_acc']:.4f} obj {obj_dc:.6f}", flush=True)
        result()

    # exact solver, cold start: SVC's default decomposition (and the batched one on the CPU)
    for label, kw in colds:
        svc = SVC(C=s["C"], gamma=s["gamma"], solver="smo", device=device, **kw)
        t_cold, c_cold = _timed_fit(svc, Xtr, ytr, device)
        rows.append({"row": label, "fit_s": t_cold, "cpu_s": c_cold, "test_acc": _acc(svc.predict(Xte), yte),
                     "objective": sklearn_svc_objective(svc), "n_sv": int(svc.support_.shape[0]),
                     "n_iter": int(np.asarray(svc.n_iter_).sum()),
                     **({"warmup_fit_s": warm_s[label]} if warm_s else {})})
        cold_rows.append(rows[-1])
        print(f"  {label} {t_cold:.2f}s (cpu {c_cold:.2f}s) acc {rows[-1]['test_acc']:.4f} "
              f"obj {rows[-1]['objective']:.6f}", flush=True)
        result()

    if with_sklearn:
        from sklearn.svm import SVC as SkSVC

        sk = SkSVC(C=s["C"], gamma=s["gamma"], tol=1e-3, cache_size=200)
        t_sk, c_sk = _timed_fit(sk, Xtr, ytr, "cpu")
        rows.append({"row": "sklearn SVC (LIBSVM)", "fit_s": t_sk, "cpu_s": c_sk, "test_acc": _acc(sk.predict(Xte), yte),
                     "objective": sklearn_svc_objective(sk), "n_sv": int(sk.support_.shape[0])})
        print(f"  sklearn {t_sk:.2f}s (cpu {c_sk:.2f}s) acc {rows[-1]['test_acc']:.4f} "
              f"obj {rows[-1]['objective']:.6f}", flush=True)
    return result(complete=True)


def _skip_text(level):
    """Why a level was skipped, for the levels table ('' when it was solved)."""
    if not level.get("skipped"):
        return ""
    if level.get("skip_reason") == "large":
        return f" (skipped by refine='auto': {level['n_points']} support vectors)"
    if level.get("skip_reason") in ("no_sv", "all_sv", "one_class"):
        return f" (refine skipped: {level['skip_reason']}, {level['n_points']} support vectors)"
    if level.get("skip_reason") == "small":
        return " (skipped: clusters below min_cluster_size on average)"
    if level.get("skip_reason") == "sv_share":
        return f" (skipped: {level['n_sv']} support vectors below, more than max_sv_share)"
    if level.get("largest_cluster") is not None:
        return f" (skipped: largest cluster {level['largest_cluster']} points)"
    return f" (skipped: largest cluster {level.get('largest_cluster_sample')} of its k-means sample)"


def _warmup_lines(r):
    w = r["info"].get("warmup")
    if w == "full":
        return ["Warm-up: each timed estimator was fitted once on the same training set first (its time is the "
                "last column: it includes compiling or loading the code that the timed fit then finds ready).", ""]
    if w == "small":
        return ["Warm-up: each configuration fitted on 3,000 rows (DC-SVM solves no level there, so code that "
                "only its levels use is compiled or loaded inside the timed fit).", ""]
    return []


def _markdown(doc):
    out = [f"# DC-SVM benchmark ({doc['device']})", "",
           f"Machine: {doc['machine']}. {doc['note']}", "",
           f"Command: `{doc['command']}` (git commit {doc.get('git_commit')}, plus any uncommitted changes in the "
           "shared tree at the start of the run)", "",
           "Wall time is the fit's elapsed time; CPU time is the process's CPU time over all its threads "
           "(the pairwise SMO loop runs on one core; DC-SVM's Gram blocks (k-means, warm-start gradients) "
           "and the batched decomposition use BLAS and Numba threads on every core).", ""]
    for r in doc["results"]:
        out += [f"## {r['dataset']} (C={r['params']['C']}, gamma={r['params']['gamma']})", "",
                *([] if r.get("complete", True) else ["**Incomplete: the run was stopped before its last row; "
                                                       "the rows below are the ones it finished.**", ""]),
                f"Data: {json.dumps(r['info'])}", "",
                *_warmup_lines(r),
                "| row | fit wall (s) | fit CPU (s) | test accuracy | dual objective | SVs | warm-up fit wall (s) |",
                "|---|---|---|---|---|---|---|"]
        for row in r["rows"]:
            obj = f"{row['objective']:.6f}" if "objective" in row else "-"
            cpu = f"{row['cpu_s']:.2f}" if "cpu_s" in row else "-"
            warm = f"{row['warmup_fit_s']:.2f}" if "warmup_fit_s" in row else "-"
            out.append(f"| {row['row']} | {row['fit_s']:.2f} | {cpu} | {100 * row['test_acc']:.2f}% | {obj} | "
                       f"{row.get('n_sv', '-')} | {warm} |")
        out += ["", "| DC-SVM to the top | vs cold start | wall ratio cold / dcsvc | CPU ratio cold / dcsvc | "
                "rel. objective diff | test acc. diff (pp) |", "|---|---|---|---|---|---|"]
        for c in r["comparisons"]:
            out.append(f"| {c['dcsvc']} | {c['cold']} | {c['wall_ratio_cold_over_dcsvc']:.2f} | "
                       f"{c['cpu_ratio_cold_over_dcsvc']:.2f} | {c['objective_rel_diff']:.1e} | "
                       f"{c['accuracy_diff_pp']:+.3f} |")
        for row in r["rows"]:
            if "levels" not in row:
                continue
            out += ["", f"Levels of {row['row']} (this run):", "",
                    "| level | clusters | wall (s) | CPU (s) | k-means wall (s) | solves wall (s) | SVs | solver steps/rounds | train acc |",
                    "|---|---|---|---|---|---|---|---|---|"]
            for d in row["levels"]:
                ta = d.get("train_accuracy")
                f2 = lambda key: f"{d[key]:.2f}" if key in d else "-"  # noqa: E731
                dec = (d.get("solver_info") or {}).get("decomposition")
                if d["level"] in (0, "refine") and not d.get("skipped"):
                    dec = dec or "batched"
                if d.get("n_batched"):
                    dec = f"{d['n_batched']} of {d['n_clusters']} clusters batched"
                it = f"{d.get('n_iter', '-')}" + (f" ({dec})" if dec else "") + _skip_text(d)
                out.append(f"| {d['level']} | {d['n_clusters']} | {d['time_s']:.2f} | {f2('cpu_s')} | "
                           f"{f2('time_cluster_s')} | {f2('time_solve_s')} | {d['n_sv']} | {it} | "
                           f"{'-' if ta is None else f'{100 * ta:.2f}%'} |")
        out.append("")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu", choices=["cpu", "gpu"])
    ap.add_argument("--datasets", default="ijcnn1,a9a,skin_nonskin")
    ap.add_argument("--max-train", type=int, default=None, help="cap on ijcnn1/a9a training rows (stratified)")
    ap.add_argument("--skin-train", type=int, default=None, help="cap on skin_nonskin training rows")
    ap.add_argument("--no-sklearn", action="store_true")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    ap.add_argument("--note", default="")
    ap.add_argument("--configs", default="4,4;8,2",
                    help="DCSVC configurations 'k,L[,opt...];k,L' (n_clusters_per_level, n_levels, then "
                         "optional words: the assign rule 'center' or 'nearest'; 'batch' or 'nobatch' for "
                         "batch_subproblems=True/False; 'minc=N' for min_cluster_size=N; 'bmax=N' for "
                         "batch_max_size=N); default: the estimator's defaults (4, 4) and (8, 2)")
    ap.add_argument("--sub-tol", type=float, default=None, help="DCSVC sub_tol (None: its default)")
    ap.add_argument("--no-refine", action="store_true")
    ap.add_argument("--no-cold-batched", action="store_true", help="skip the batched cold row (CPU)")
    ap.add_argument("--warmup", default="full", choices=["full", "small"],
                    help="untimed warm-up: 'full' (default) fits every timed estimator once on the same data, "
                         "'small' each configuration on 3,000 rows")
    ap.add_argument("--stem", default="dcsvm", help="results file stem: <out>/<stem>_<device>.json/.md")
    args = ap.parse_args(argv)
    data_dir = Path(args.data_dir) if args.data_dir else find_data_dir()
    if data_dir is None:
        sys.exit("LIBSVM data not found (set GPUSVM_DATA)")
    machine = {"processor": platform.processor(), "machine": platform.machine(), "cpu_count": os.cpu_count(),
               "python": platform.python_version()}
    if args.device == "gpu":
        from gpusvm import get_backend

        machine["gpu"] = get_backend("gpu").device_name
    try:
        import subprocess

        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip() or None
    except Exception:  # not a git checkout
        commit = None
    doc = {"device": args.device, "machine": machine, "command": " ".join(["python", *sys.argv]),
           "git_commit": commit,
           "note": (f"Timings from ONE run each on this {os.cpu_count()}-CPU machine; compare ratios within "
                    "this run only. " + args.note).strip(),
           "results": []}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    configs = []
    for spec_ in args.configs.split(";"):
        parts = spec_.split(",")
        k_, L_ = int(parts[0]), int(parts[1])
        kw = {"n_levels": L_, "n_clusters_per_level": k_}
        for word in parts[2:]:
            if word in ("center", "nearest"):
                kw["assign"] = word
            elif word in ("batch", "nobatch"):
                kw["batch_subproblems"] = word == "batch"
            elif word.startswith("minc="):
                kw["min_cluster_size"] = int(word[5:])
            elif word.startswith("bmax="):
                kw["batch_max_size"] = int(word[5:])
            else:
                ap.error(f"--configs: unknown option {word!r} in {spec_!r}")
        if args.no_refine:
            kw["refine"] = False
        if args.sub_tol is not None:
            kw["sub_tol"] = args.sub_tol
        configs.append(kw)
    def write(partial=None):
        d = dict(doc, results=doc["results"] + ([partial] if partial is not None else []))
        (out / f"{args.stem}_{args.device}.json").write_text(json.dumps(d, indent=1, default=str))
        (out / f"{args.stem}_{args.device}.md").write_text(_markdown(d))

    for name in args.datasets.split(","):
        doc["results"].append(run(name, data_dir, args.device, args.max_train, args.skin_train,
                                  not args.no_sklearn, configs, not args.no_cold_batched, on_row=write,
                                  warmup=args.warmup))
        write()
    print(f"wrote {out / f'{args.stem}_{args.device}.json'}")


if __name__ == "__main__":
    main()

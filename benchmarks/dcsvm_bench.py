"""DC-SVM benchmark: DC-SVM early prediction, DC-SVM to the top, the exact solver from a cold start,
and scikit-learn's SVC, on ijcnn1, a9a and skin_nonskin (time and test accuracy).

Usage::

    PYTHONPATH=. python benchmarks/dcsvm_bench.py [--device cpu|gpu] [--datasets ijcnn1,a9a,skin_nonskin]
        [--max-train N] [--skin-train N] [--no-sklearn] [--out benchmarks/results]

Rows per data set (one run each, all in this process, one after the other):

* ``dcsvc``: DCSVC(n_levels=4, n_clusters_per_level=4, refine=True) solved to the top (exact model);
* ``dcsvc-early``: early prediction with the 64-cluster level (level 3) of that same run. Its time is
  the wall time from the start of the fit to the end of level 3 as recorded in ``levels_`` (the k-means
  and solves of levels 4 and 3; data validation excluded, a few ms), so no second fit is needed;
* ``exact-cold``: gpusvm.SVC with the same solver ("smo") from alpha = 0;
* ``sklearn``: sklearn.svm.SVC (LIBSVM), same C, gamma, tol=1e-3, cache 200 MB.

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


def run(name, data_dir, device, max_train, skin_train, with_sklearn):
    s = SETUPS[name]
    Xtr, ytr, Xte, yte, info = _load(name, data_dir, max_train, skin_train)
    rows = []
    print(f"== {name}: {info}", flush=True)

    # DC-SVM to the top (and early prediction from its level 3)
    est = DCSVC(C=s["C"], gamma=s["gamma"], n_levels=4, n_clusters_per_level=4, refine=True, device=device,
                random_state=0)
    t0 = time.perf_counter()
    est.fit(Xtr, ytr)
    _sync(device)
    t_dc = time.perf_counter() - t0
    lv = est.levels_
    t_early = sum(d["time_s"] for d in lv if d["level"] in (4, 3))
    acc_early = _acc(est.predict(Xte, level=3), yte)
    rows.append({"row": "dcsvc-early", "level": 3, "n_clusters": 64, "fit_s": t_early, "test_acc": acc_early,
                 "note": "levels 4 and 3 of the dcsvc run (time from levels_)"})
    obj_dc = sklearn_svc_objective(est)
    rows.append({"row": "dcsvc", "fit_s": t_dc, "test_acc": _acc(est.predict(Xte), yte), "objective": obj_dc,
                 "n_sv": int(est.support_.shape[0]), "levels": lv})
    print(f"  dcsvc-early {t_early:.2f}s acc {acc_early:.4f} | dcsvc {t_dc:.2f}s acc {rows[-1]['test_acc']:.4f} "
          f"obj {obj_dc:.6f}", flush=True)

    # exact solver, cold start
    svc = SVC(C=s["C"], gamma=s["gamma"], solver="smo", device=device)
    t0 = time.perf_counter()
    svc.fit(Xtr, ytr)
    _sync(device)
    t_cold = time.perf_counter() - t0
    rows.append({"row": "exact-cold (gpusvm SVC smo)", "fit_s": t_cold, "test_acc": _acc(svc.predict(Xte), yte),
                 "objective": sklearn_svc_objective(svc), "n_sv": int(svc.support_.shape[0]),
                 "n_iter": int(np.asarray(svc.n_iter_).sum())})
    print(f"  exact-cold {t_cold:.2f}s acc {rows[-1]['test_acc']:.4f} obj {rows[-1]['objective']:.6f}", flush=True)

    if with_sklearn:
        from sklearn.svm import SVC as SkSVC

        sk = SkSVC(C=s["C"], gamma=s["gamma"], tol=1e-3, cache_size=200)
        t0 = time.perf_counter()
        sk.fit(Xtr, ytr)
        t_sk = time.perf_counter() - t0
        rows.append({"row": "sklearn SVC (LIBSVM)", "fit_s": t_sk, "test_acc": _acc(sk.predict(Xte), yte),
                     "objective": sklearn_svc_objective(sk), "n_sv": int(sk.support_.shape[0])})
        print(f"  sklearn {t_sk:.2f}s acc {rows[-1]['test_acc']:.4f} obj {rows[-1]['objective']:.6f}", flush=True)
    return {"dataset": name, "params": {"C": s["C"], "gamma": s["gamma"]}, "info": info, "device": device,
            "rows": rows, "speedup_dcsvc_vs_cold": t_cold / t_dc,
            "objective_rel_diff_dcsvc_vs_cold": abs(obj_dc - rows[2]["objective"]) / abs(rows[2]["objective"])}


def _markdown(doc):
    out = [f"# DC-SVM benchmark ({doc['device']})", "",
           f"Machine: {doc['machine']}. {doc['note']}", "",
           f"Command: `{doc['command']}`", ""]
    for r in doc["results"]:
        out += [f"## {r['dataset']} (C={r['params']['C']}, gamma={r['params']['gamma']})", "",
                f"Data: {json.dumps(r['info'])}", "",
                "| row | fit time (s) | test accuracy | dual objective | SVs |", "|---|---|---|---|---|"]
        for row in r["rows"]:
            obj = f"{row['objective']:.6f}" if "objective" in row else "-"
            out.append(f"| {row['row']} | {row['fit_s']:.2f} | {100 * row['test_acc']:.2f}% | {obj} | "
                       f"{row.get('n_sv', '-')} |")
        out += ["", f"DC-SVM to the top vs exact solver from a cold start: {r['speedup_dcsvc_vs_cold']:.2f}x "
                f"(time ratio cold / dcsvc); relative objective difference "
                f"{r['objective_rel_diff_dcsvc_vs_cold']:.2e}.", "",
                "DC-SVM levels (this run):", "", "| level | clusters | time (s) | SVs | train acc |", "|---|---|---|---|---|"]
        for d in r["rows"][1]["levels"]:
            ta = d.get("train_accuracy")
            out.append(f"| {d['level']} | {d['n_clusters']} | {d['time_s']:.2f} | {d['n_sv']} | "
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
    args = ap.parse_args(argv)
    data_dir = Path(args.data_dir) if args.data_dir else find_data_dir()
    if data_dir is None:
        sys.exit("LIBSVM data not found (set GPUSVM_DATA)")
    machine = {"processor": platform.processor(), "machine": platform.machine(), "cpu_count": os.cpu_count(),
               "python": platform.python_version()}
    if args.device == "gpu":
        from gpusvm import get_backend

        machine["gpu"] = get_backend("gpu").device_name
    doc = {"device": args.device, "machine": machine, "command": " ".join(["python", *sys.argv]),
           "note": ("Timings from ONE run each on a 2-core machine SHARED with other engineers' jobs, so "
                    "they are noisy; compare ratios within this run only. " + args.note).strip(),
           "results": []}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name in args.datasets.split(","):
        doc["results"].append(run(name, data_dir, args.device, args.max_train, args.skin_train,
                                  not args.no_sklearn))
        (out / f"dcsvm_{args.device}.json").write_text(json.dumps(doc, indent=1, default=str))
        (out / f"dcsvm_{args.device}.md").write_text(_markdown(doc))
    print(f"wrote {out / f'dcsvm_{args.device}.json'}")


if __name__ == "__main__":
    main()

"""Multi-class SVC: the class pairs solved one after the other against together (``SVC(batch_pairs=...)``).

Usage::

    PYTHONPATH=. python benchmarks/pair_batch.py [--devices cpu,gpu] [--cases digits,blobs-30c,blobs-50c]
        [--repeat 3] [--seq-max-pairs 1300] [--out benchmarks/results] [--stem pair_batch]

Rows per case, in one run, one after the other: scikit-learn's SVC; gpusvm.SVC on the CPU (its default: the
pairs one by one, LIBSVM's algorithm); and on each GPU-like device, ``batch_pairs=False`` (one
decomposition per pair, the only GPU path before batch_pairs) and ``batch_pairs=True`` (every pair of at most
4,096 points in one launch of the batched local SMO). Each gpusvm row is fitted once to warm up (kernel
compilation, Numba's cache), then ``--repeat`` times; the best wall time is reported (GPU work is
synchronized before the clock stops: prediction copies the model's outputs to the host). scikit-learn is
fitted once. ``--seq-max-pairs`` leaves out the GPU one-by-one row where it would take minutes.

Every row reports its wall seconds, the speed-up over scikit-learn's SVC and over the one-by-one GPU row,
the fraction of test predictions equal to scikit-learn's, and the largest relative difference of the pairs'
dual objectives from gpusvm's CPU model (the same problems, both solved to tol). Run on the CPU emulator
(``PYTHONPATH=.:tests python -c "import cudasim; cudasim.install(); ..."``) its GPU times are the
emulator's and say nothing about a GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _digits():
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    return X / 16.0, y, {"C": 1.0, "gamma": "scale"}


def _blobs(n_classes, per_class, d=10, seed=0):
    def make():
        rng = np.random.default_rng(seed)
        centres = rng.normal(scale=3.0, size=(n_classes, d))
        y = np.repeat(np.arange(n_classes), per_class)
        return centres[y] + rng.normal(size=(y.shape[0], d)), y, {"C": 1.0, "gamma": "scale"}
    return make


CASES = {
    "digits": ("sklearn digits / 16 (1,797 x 64, 10 classes: 45 pairs of about 360 points), rbf, C=1, gamma=scale",
               _digits),
    "blobs-30c": ("30 Gaussian blobs of 40 points in 10 dimensions (435 pairs of 80 points), rbf, C=1, gamma=scale",
                  _blobs(30, 40)),
    "blobs-50c": ("50 Gaussian blobs of 400 points in 10 dimensions (20,000 points: 1,225 pairs of 800), rbf, C=1, "
                  "gamma=scale", _blobs(50, 400)),
}


def _timed(fit, X_test, repeat):
    """(best wall seconds of ``repeat`` fits after one warm-up, the last model, its test predictions)."""
    model = fit()
    model.predict(X_test[:1])
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        model = fit()
        pred = model.predict(X_test)  # (host copy: the device's work is done when the clock stops)
        best = min(best, time.perf_counter() - t0)
    return best, model, np.asarray(pred)


def run_case(name, devices, repeat, seq_max_pairs):
    from sklearn.model_selection import train_test_split
    from sklearn.svm import SVC as SkSVC

    from gpusvm import SVC

    desc, make = CASES[name]
    X, y, params = make()
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, stratify=y, random_state=0)
    n_classes = int(np.unique(ytr).shape[0])
    n_pairs = n_classes * (n_classes - 1) // 2
    rows = []
    t0 = time.perf_counter()
    sk = SkSVC(**params).fit(Xtr, ytr)
    sk_pred = sk.predict(Xte)
    sk_s = time.perf_counter() - t0
    rows.append({"row": "sklearn SVC", "device": "cpu", "wall_s": sk_s, "accuracy": float(np.mean(sk_pred == yte)),
                 "agree_sklearn": 1.0})
    cpu_s, cpu_model, cpu_pred = _timed(lambda: SVC(device="cpu", **params).fit(Xtr, ytr), Xte, repeat)
    ref_obj = np.asarray(cpu_model.objective_)
    rows.append({"row": "gpusvm, pairs one by one", "device": "cpu", "wall_s": cpu_s,
                 "accuracy": float(np.mean(cpu_pred == yte)), "agree_sklearn": float(np.mean(cpu_pred == sk_pred)),
                 "objective_rel_diff": 0.0})
    for dev in devices:
        if dev == "cpu":
            continue
        variants = [("gpusvm, pairs together (batch_pairs)", True)]
        if n_pairs <= seq_max_pairs:
            variants.insert(0, ("gpusvm, pairs one by one (batch_pairs=False)", False))
        for label, together in variants:
            wall, model, pred = _timed(lambda t=together: SVC(device=dev, batch_pairs=t, **params).fit(Xtr, ytr),
                                       Xte, repeat)
            obj = np.asarray(model.objective_)
            rows.append({"row": label, "device": dev, "wall_s": wall, "accuracy": float(np.mean(pred == yte)),
                         "agree_sklearn": float(np.mean(pred == sk_pred)),
                         "objective_rel_diff": float(np.max(np.abs(obj - ref_obj) / np.abs(ref_obj)))})
        if n_pairs > seq_max_pairs:
            rows.append({"row": "gpusvm, pairs one by one (batch_pairs=False)", "device": dev, "wall_s": None,
                         "skipped": f"{n_pairs} pairs > --seq-max-pairs {seq_max_pairs}"})
    for r in rows:
        if r.get("wall_s"):
            r["speedup_vs_sklearn"] = sk_s / r["wall_s"]
    seq = {r["device"]: r["wall_s"] for r in rows if r["row"].endswith("(batch_pairs=False)") and r.get("wall_s")}
    for r in rows:
        if r["row"].startswith("gpusvm, pairs together") and r["device"] in seq:
            r["speedup_vs_one_by_one"] = seq[r["device"]] / r["wall_s"]
    return {"case": name, "description": desc, "n_train": int(Xtr.shape[0]), "n_test": int(Xte.shape[0]),
            "n_classes": n_classes, "n_pairs": n_pairs, "rows": rows}


def _markdown(doc):
    out = ["# SVC multi-class: class pairs one by one against together (`batch_pairs`)", "",
           f"Machine: {doc['machine']}. Commit {doc['commit']}. Command: `{doc['command']}`.", "",
           "Wall seconds of one fit (best of the repeats after a warm-up fit; scikit-learn: one fit), test-set "
           "predictions equal to scikit-learn's, and the largest relative difference of the pairs' dual "
           "objectives from gpusvm's CPU model. Ratios within this run only.", ""]
    for case in doc["results"]:
        out += [f"## {case['case']}: {case['description']}", "",
                f"{case['n_train']} train / {case['n_test']} test points, {case['n_pairs']} class pairs.", "",
                "| row | device | fit (s) | x sklearn | x one by one | test accuracy | = sklearn | objective diff |",
                "|---|---|---|---|---|---|---|---|"]
        for r in case["rows"]:
            if r.get("wall_s") is None:
                out.append(f"| {r['row']} | {r['device']} | skipped: {r['skipped']} | | | | | |")
                continue
            sp = r.get("speedup_vs_one_by_one")
            od = r.get("objective_rel_diff")
            out.append(f"| {r['row']} | {r['device']} | {r['wall_s']:.4f} | {r.get('speedup_vs_sklearn', 1.0):.2f}x | "
                       f"{'' if sp is None else f'{sp:.1f}x'} | {r['accuracy']:.4f} | {r['agree_sklearn']:.4f} | "
                       f"{'' if od is None else f'{od:.1e}'} |")
        out.append("")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--devices", default="cpu,gpu")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seq-max-pairs", type=int, default=1300)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    ap.add_argument("--stem", default="pair_batch")
    args = ap.parse_args(argv)
    devices = [d for d in args.devices.split(",") if d]
    machine = f"{platform.machine()}, {os.cpu_count()} CPUs"
    gpu_name = None
    if any(d != "cpu" for d in devices):
        from gpusvm import get_backend, gpu_status

        ok, why = gpu_status(0)
        if ok:
            gpu_name = get_backend("gpu").device_name
            machine += f"; GPU: {gpu_name}"
        else:
            print(f"no GPU: {why}; GPU rows skipped", file=sys.stderr)
            devices = [d for d in devices if d == "cpu"]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=ROOT).stdout.strip()
    doc = {"machine": machine, "gpu": gpu_name, "commit": commit,
           "command": "python " + " ".join(["benchmarks/pair_batch.py", *(argv if argv is not None else sys.argv[1:])]),
           "results": []}
    tag = "cpu" if gpu_name is None else "".join(c if c.isalnum() else "-" for c in gpu_name.lower()).strip("-")
    out = Path(args.out) / f"{args.stem}_{tag}"
    out.parent.mkdir(parents=True, exist_ok=True)
    for name in args.cases.split(","):
        doc["results"].append(run_case(name, devices, args.repeat, args.seq_max_pairs))
        out.with_suffix(".json").write_text(json.dumps(doc, indent=1))
        out.with_suffix(".md").write_text(_markdown(doc))
        print(_markdown({**doc, "results": doc["results"][-1:]}), flush=True)
    return doc


if __name__ == "__main__":
    main()

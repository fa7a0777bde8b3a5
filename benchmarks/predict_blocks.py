"""Prediction on the CPU: densified CSR operands, Gram block size and threads, against scikit-learn's predict.

``SVC.decision_function`` computes ``coef @ K(SV, X_block)`` block by block (``svc._blocked_decision``).
This script measures, in one run on one machine, what decides its CPU speed:

1. ``micro``: one 512 x 1,024 gram product of two random CSR matrices, SciPy's CSR @ dense against the
   same product after densifying the CSR side (dense @ dense, BLAS), for d in {22, 123, 300, 2,000} and
   densities 0.005-0.3; this sets ``gram.CPU_DENSIFY_MIN_DENSITY`` (process CPU ms, best of 5 calls).
2. ``predict``: the test-set decision values of one fitted SVC per data set (a9a, ijcnn1: their test
   files; w8a: stratified 80/20, seed 0; as benchmarks/svc_vs_sklearn.py), CSR and dense input, for the
   settings in ``VARIANTS``: densifying dense-enough CSR on or off, the blocks one after the other
   (BLAS's own threads) or one per core at a time (BLAS single-threaded), and the Gram block budget;
   the first variant is the code before these changes. Equal support vectors are not merged here
   (``svc.MERGE_SV_MIN_ROWS`` raised; benchmarks/predict_merge.py measures that). scikit-learn's
   SVC.decision_function on a model it fitted with the same hyperparameters is the reference.
   Process CPU seconds and wall seconds, each the best of ``--repeat`` runs; every variant's decision
   values are checked against the first one's.

Usage: python benchmarks/predict_blocks.py [--datasets ijcnn1 a9a w8a] [--repeat 2] [--tag cpu]
Writes benchmarks/results/predict_blocks_<tag>.{json,md} after every data set.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import svc_vs_sklearn  # noqa: E402
from _results import run_datasets  # noqa: E402
from gpusvm import SVC  # noqa: E402
from gpusvm._backend.ops import gram as gram_op  # noqa: E402
from gpusvm.svc import DECISION_BLOCK_BYTES  # noqa: E402

# (densify dense-enough CSR, threads (None: every core, BLAS single-threaded; 1: one block after the
# other, BLAS's own threads), block MB); the first is the code before predict_blocks.py
VARIANTS = [(False, 1, 64)] + [(True, 1, mb) for mb in (4, 16, 64)] + [(True, None, mb) for mb in (2, 4, 8, 16, 64)]
NEVER = 2.0  # a density no matrix reaches: densifying off


def _cpu_best(fn, repeat):
    best_c, best_w, out = np.inf, np.inf, None
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        out = fn()
        best_c = min(best_c, time.process_time() - c0)
        best_w = min(best_w, time.perf_counter() - w0)
    return best_c, best_w, out


def micro(repeat=5):
    rows = []
    for d in (22, 123, 300, 2000):
        for rho in (0.005, 0.01, 0.02, 0.05, 0.1, 0.3):
            A = sp.random(512, d, density=rho, format="csr", random_state=1)
            Bd = sp.random(1024, d, density=rho, format="csr", random_state=2).toarray()
            (A @ Bd.T), (A.toarray() @ Bd.T)  # warm-up
            t_csr = min(_cpu_best(lambda: A @ Bd.T, 1)[0] for _ in range(repeat))
            t_dense = min(_cpu_best(lambda: A.toarray() @ Bd.T, 1)[0] for _ in range(repeat))
            rows.append({"d": d, "density": rho, "csr_ms": 1e3 * t_csr, "dense_ms": 1e3 * t_dense})
    return rows


def run(name, data_dir, repeat):
    X, y, Xt, yt, C, gamma = svc_vs_sklearn.load(data_dir, name)
    from sklearn.svm import SVC as SkSVC

    import gpusvm.svc as svc_mod

    model = SVC(C=C, gamma=gamma, device="cpu").fit(X, y)
    sk = SkSVC(C=C, gamma=gamma).fit(X, y)
    out = {"dataset": name, "n_train": int(X.shape[0]), "n_test": int(Xt.shape[0]), "d": int(X.shape[1]),
           "density": float(X.nnz / (X.shape[0] * X.shape[1])), "n_sv": int(model.support_vectors_.shape[0]),
           "C": C, "gamma": gamma, "rows": []}
    saved = (gram_op.CPU_DENSIFY_MIN_DENSITY, dict(svc_mod.DECISION_BLOCK_BYTES), svc_mod.DECISION_THREADS,
             svc_mod.MERGE_SV_MIN_ROWS)
    svc_mod.MERGE_SV_MIN_ROWS = 2**62
    try:
        for fmt in ("csr", "dense"):
            Xf = Xt if fmt == "csr" else Xt.toarray()
            fitted = model if fmt == "csr" else SVC(C=C, gamma=gamma, device="cpu").fit(X.toarray(), y)
            ref = None
            for densify, threads, mb in VARIANTS:
                gram_op.CPU_DENSIFY_MIN_DENSITY = saved[0] if densify else NEVER
                svc_mod.DECISION_THREADS = threads
                svc_mod.DECISION_BLOCK_BYTES["cpu"] = mb * 2**20
                fitted.decision_function(Xf[:200])
                cpu, wall, dec = _cpu_best(lambda: fitted.decision_function(Xf), repeat)
                dec = np.asarray(dec)
                ref = dec if ref is None else ref
                out["rows"].append({"format": fmt, "densify": densify, "threads": threads or "auto", "block_mb": mb,
                                    "cpu_s": cpu, "wall_s": wall, "max_abs_diff": float(np.max(np.abs(dec - ref)))})
                print(name, out["rows"][-1], flush=True)
            Xs = Xt if fmt == "csr" else Xt.toarray()
            skm = sk if fmt == "csr" else SkSVC(C=C, gamma=gamma).fit(X.toarray(), y)
            skm.decision_function(Xs[:200])
            cpu, wall, dec = _cpu_best(lambda: skm.decision_function(Xs), repeat)
            out["rows"].append({"format": fmt, "sklearn": True, "cpu_s": cpu, "wall_s": wall,
                                "max_abs_diff": float(np.max(np.abs(np.asarray(dec) - ref)))})
            print(name, out["rows"][-1], flush=True)
    finally:
        gram_op.CPU_DENSIFY_MIN_DENSITY = saved[0]
        svc_mod.DECISION_BLOCK_BYTES.update(saved[1])
        svc_mod.DECISION_THREADS = saved[2]
        svc_mod.MERGE_SV_MIN_ROWS = saved[3]
    return out


def markdown(results, meta):
    micro_rows = meta["micro"]
    lines = ["# CPU prediction: Gram block size and densified CSR operands", "",
             f"Machine: {meta['machine']}. Code at {meta['commit']}. Command: `{meta['command']}`.", "",
             "## 1. One gram product: CSR @ dense against densify + dense @ dense", "",
             "512 x 1,024 product of two random CSR matrices of the given density (process CPU ms, best of 5; "
             "`dense` includes densifying the 512-row side). Ratio > 1: densifying is faster.", "",
             "| d | density | CSR @ dense (ms) | dense @ dense (ms) | ratio |", "|---|---|---|---|---|"]
    for r in micro_rows:
        lines.append(f"| {r['d']} | {r['density']} | {r['csr_ms']:.2f} | {r['dense_ms']:.2f} | "
                     f"{r['csr_ms'] / r['dense_ms']:.1f}x |")
    lines += ["", f"Rule in gram.py: a CSR side of density >= {gram_op.CPU_DENSIFY_MIN_DENSITY} is densified tile by "
              "tile (prediction densifies the support vectors once).", "",
              "## 2. SVC.decision_function on the test set", "",
              "Process CPU seconds and wall seconds, each the best of the repeats. The first row of each "
              "input is the code before these changes (densifying off, 64 MB blocks, one block after the "
              "other with the BLAS's threads); threads `auto` = one block per core at a time, BLAS "
              "single-threaded. Bold: the defaults. sklearn: SVC.decision_function of a model fitted by "
              "scikit-learn with the same hyperparameters (LIBSVM, one thread).", ""]
    for res in results:
        lines += [f"### {res['dataset']} (test {res['n_test']:,} x {res['d']}, density {res['density']:.3f}, "
                  f"{res['n_sv']:,} SVs)", "",
                  "| input | densify | threads | block (MB) | CPU s | wall s | wall speed-up vs old | max abs diff |",
                  "|---|---|---|---|---|---|---|---|"]
        summary = []
        for fmt in ("csr", "dense"):
            rows = [r for r in res["rows"] if r["format"] == fmt]
            old = rows[0]
            default = None
            for r in rows:
                if r.get("sklearn"):
                    what = "| sklearn | - | - | - "
                else:
                    is_default = (r["densify"] and r["threads"] == "auto"
                                  and r["block_mb"] == meta["default_block_mb"])
                    default = r if is_default else default
                    mark = (lambda v: f"**{v}**") if is_default else str
                    what = (f"| {fmt} | {mark('on' if r['densify'] else 'off')} | {mark(r['threads'])} | "
                            f"{mark(r['block_mb'])} ")
                lines.append(f"{what}| {r['cpu_s']:.2f} | {r['wall_s']:.2f} | {old['wall_s'] / r['wall_s']:.2f}x | "
                             f"{r['max_abs_diff']:.1e} |")
            skl = next(r for r in rows if r.get("sklearn"))
            summary.append(f"{fmt}: default {default['wall_s']:.2f} s wall ({default['cpu_s']:.2f} CPU-s), "
                           f"{old['wall_s'] / default['wall_s']:.2f}x the old code's wall time "
                           f"({old['cpu_s'] / default['cpu_s']:.2f}x in CPU time), {skl['wall_s'] / default['wall_s']:.1f}x "
                           f"sklearn's ({skl['cpu_s'] / default['cpu_s']:.1f}x)")
        lines += ["", "; ".join(summary) + ".", ""]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["ijcnn1", "a9a", "w8a"])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--tag", default="cpu")
    args = ap.parse_args()
    run_datasets(f"predict_blocks_{args.tag}", args.datasets, lambda n, d: run(n, d, args.repeat), markdown,
                 extra={"micro": micro(), "default_block_mb": DECISION_BLOCK_BYTES["cpu"] / 2**20})


if __name__ == "__main__":
    main()

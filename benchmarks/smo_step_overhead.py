"""Time per SMO step of gpusvm's pair-at-a-time loop against LIBSVM's (scikit-learn SVC), same steps.

The CPU loop takes LIBSVM's steps (the same ``n_iter_``), so time per step compares the two
implementations directly. On long runs over small problems (badly scaled data, where SMO needs
millions of steps) the active set is tiny and the fixed cost of a step decides. Each problem runs
with shrinking on and off: without shrinking every step scans all n variables, with it only the
active set, so the two rows separate the per-step fixed cost from the per-variable cost.

Problems (generated, no data files): 120 x 15 Gaussian points scaled by 1e3 with random labels, linear
gram (C = 1e-3, 3e-4: 0.1-2M steps), and the chess-board of the planning-ahead paper (5,000 points, rbf
gamma=10, C=1000). Times: process CPU seconds, min over ``--repeats`` fits after one warm-up fit.

Usage: python benchmarks/smo_step_overhead.py [--repeats 3] [--tag cpu]
Writes benchmarks/results/smo_step_overhead_<tag>.{json,md}.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from gpusvm import SVC  # noqa: E402
from gpusvm.datasets import make_chessboard  # noqa: E402
from _results import run_datasets  # noqa: E402


def problems():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 15)) * 1e3
    y = rng.integers(0, 2, 120)
    Xc, yc = make_chessboard(5000, random_state=0)
    return {"gauss-120x15-x1e3 linear C=1e-3": (X, y, dict(kernel="linear", C=1e-3)),
            "gauss-120x15-x1e3 linear C=3e-4": (X, y, dict(kernel="linear", C=3e-4)),
            "chess-4x4-5k rbf C=1000": (Xc, yc, dict(kernel="rbf", C=1000.0, gamma=10.0))}


def timed(make, X, y, repeats):
    make().fit(X, y)  # warm-up (Numba's cache load)
    best, model = np.inf, None
    for _ in range(repeats):
        m = make()
        t0 = time.process_time()
        m.fit(X, y)
        best = min(best, time.process_time() - t0)
        model = m
    return best, int(np.sum(model.n_iter_))


def run(name, repeats):
    from sklearn.svm import SVC as SkSVC

    X, y, kw = problems()[name]
    rows = []
    for shrinking in (True, False):
        t_sk, it_sk = timed(lambda: SkSVC(shrinking=shrinking, **kw), X, y, repeats)
        t_gp, it_gp = timed(lambda: SVC(shrinking=shrinking, device="cpu", **kw), X, y, repeats)
        rows.append({"problem": name, "shrinking": shrinking, "sklearn_s": t_sk, "sklearn_steps": it_sk,
                     "gpusvm_s": t_gp, "gpusvm_steps": it_gp, "sklearn_ns_per_step": 1e9 * t_sk / it_sk,
                     "gpusvm_ns_per_step": 1e9 * t_gp / it_gp})
        print(rows[-1], flush=True)
    return rows


def markdown(results, meta):
    lines = ["# SMO time per step: gpusvm's pair-at-a-time loop vs scikit-learn SVC (LIBSVM)", "",
             f"{meta['machine']}; commit {meta['commit']}; `{meta['command']}`. Process CPU seconds, min of "
             f"{meta['repeats']} fits after a warm-up.", "",
             "| problem | shrinking | steps sklearn / gpusvm | sklearn s | gpusvm s | ns/step sklearn | "
             "ns/step gpusvm | gpusvm / sklearn |", "|---|---|---|---|---|---|---|---|"]
    for r in (r for rows in results for r in rows):
        lines.append(f"| {r['problem']} | {r['shrinking']} | {r['sklearn_steps']:,} / {r['gpusvm_steps']:,} | "
                     f"{r['sklearn_s']:.3f} | {r['gpusvm_s']:.3f} | {r['sklearn_ns_per_step']:.0f} | "
                     f"{r['gpusvm_ns_per_step']:.0f} | {r['gpusvm_s'] / r['sklearn_s']:.2f} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tag", default="cpu")
    args = ap.parse_args()
    run_datasets(f"smo_step_overhead_{args.tag}", list(problems()), lambda name, _: run(name, args.repeats),
                 markdown, extra={"repeats": args.repeats}, needs_data=False)


if __name__ == "__main__":
    main()

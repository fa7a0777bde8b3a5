"""LinearSVC(penalty="l1") against scikit-learn's (LIBLINEAR's solver 5) on the full training files.

For each data set and C, in one process and alternating ``--repeat`` times: the fit's process CPU seconds
of scikit-learn's ``LinearSVC(penalty="l1", loss="squared_hinge", dual=False)`` and of ours (solver
"cdn", ``deduplicate=False`` so that both solve the same rows), both at scikit-learn's defaults
(tol=1e-4, max_iter=1000) and ``random_state=0``; the sweeps, the L1 objective of each model, its
nonzero weights and whether it stopped at max_iter. Both run the same algorithm; their random feature
orders differ, so sweeps and objectives differ a little.

Usage: python benchmarks/linear_l1.py [--datasets a9a w8a ijcnn1 phishing] [--C 0.1 1] [--repeat 3] [--tag cpu]
Writes benchmarks/results/linear_l1_<tag>.{json,md} after every data set.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from _results import run_datasets  # noqa: E402
from gpusvm import LinearSVC, get_backend  # noqa: E402
from gpusvm._solvers.l1_linear import l1_objective  # noqa: E402


def _load(data_dir, name):
    import lzma

    from sklearn.datasets import load_svmlight_file

    with lzma.open(data_dir / f"{name}.xz") as f:
        X, y = load_svmlight_file(f)
    X = X.tocsr()
    X.indices, X.indptr = X.indices.astype(np.int32), X.indptr.astype(np.int32)  # sklearn's liblinear wants int32
    return X, y


def run(name, data_dir, Cs, repeat):
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC as SkLinearSVC

    X, y = _load(data_dir, name)
    ypm = np.where(y == y.max(), 1.0, -1.0)
    be = get_backend("cpu")
    LinearSVC(penalty="l1", loss="squared_hinge", device="cpu").fit(X[:200], y[:200])  # compile outside timing
    rows = []
    for C in Cs:
        kw = dict(penalty="l1", loss="squared_hinge", dual=False, C=C, tol=1e-4, max_iter=1000, random_state=0)
        t_sk, t_ours = [], []
        for _ in range(repeat):
            with warnings.catch_warnings(record=True) as w_sk:
                warnings.simplefilter("always", ConvergenceWarning)
                c0 = time.process_time()
                sk = SkLinearSVC(**kw).fit(X, y)
                t_sk.append(time.process_time() - c0)
            with warnings.catch_warnings(record=True) as w_ours:
                warnings.simplefilter("always", ConvergenceWarning)
                c0 = time.process_time()
                m = LinearSVC(**kw, device="cpu", deduplicate=False).fit(X, y)
                t_ours.append(time.process_time() - c0)
        n = X.shape[0]
        obj_sk = l1_objective(be, X, ypm, np.full(n, C), sk.coef_[0], float(sk.intercept_[0]), 1.0)
        obj = l1_objective(be, X, ypm, np.full(n, C), m.coef_[0], float(m.intercept_[0]), 1.0)
        row = {"dataset": name, "C": C, "n": n, "d": X.shape[1],
               "sklearn_s": min(t_sk), "ours_s": min(t_ours), "ratio": min(t_ours) / min(t_sk),
               "sklearn_iter": int(np.max(sk.n_iter_)), "ours_iter": int(m.n_iter_),
               "sklearn_objective": obj_sk, "ours_objective": obj, "rel_objective_diff": (obj - obj_sk) / obj_sk,
               "sklearn_nnz": int(np.count_nonzero(sk.coef_)), "ours_nnz": int(np.count_nonzero(m.coef_)),
               "sklearn_max_iter": any(issubclass(x.category, ConvergenceWarning) for x in w_sk),
               "ours_max_iter": any(issubclass(x.category, ConvergenceWarning) for x in w_ours)}
        print(row, flush=True)
        rows.append(row)
    return rows


def markdown(results, meta):
    lines = ["# LinearSVC(penalty=\"l1\") against scikit-learn's LinearSVC (LIBLINEAR solver 5), CPU", "",
             f"Machine: {meta['machine']}, git {meta['commit']}. `{meta['command']}`. Full training files; "
             "tol=1e-4, max_iter=1000 (sklearn's defaults); process CPU seconds, best of the alternating "
             "repeats; ratio = ours / sklearn; objective ||w~||_1 + C sum sq. hinge; * = stopped at max_iter.", "",
             "| data set | C | sklearn (s) | ours (s) | ratio | sweeps sklearn / ours | objective sklearn | "
             "objective ours | rel. diff | nonzero w sklearn / ours |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for rows in results:
        for r in rows:
            star_sk = "*" if r["sklearn_max_iter"] else ""
            star = "*" if r["ours_max_iter"] else ""
            lines.append(f"| {r['dataset']} | {r['C']:g} | {r['sklearn_s']:.3f} | {r['ours_s']:.3f} | "
                         f"{r['ratio']:.2f}x | {r['sklearn_iter']}{star_sk} / {r['ours_iter']}{star} | "
                         f"{r['sklearn_objective']:.6g} | {r['ours_objective']:.6g} | "
                         f"{r['rel_objective_diff']:+.1e} | {r['sklearn_nnz']} / {r['ours_nnz']} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["a9a", "w8a", "ijcnn1", "phishing"])
    ap.add_argument("--C", nargs="+", type=float, default=[0.1, 1.0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tag", default="cpu")
    args = ap.parse_args()
    run_datasets(f"linear_l1_{args.tag}", args.datasets, lambda name, d: run(name, d, args.C, args.repeat),
                 markdown)


if __name__ == "__main__":
    main()

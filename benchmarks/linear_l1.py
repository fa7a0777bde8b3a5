"""LinearSVC(penalty="l1") against scikit-learn's (LIBLINEAR's solver 5) on the full training files.

For each data set and C, in one process, alternating: the fit's process CPU seconds of scikit-learn's
``LinearSVC(penalty="l1", loss="squared_hinge", dual=False)`` and of ours (solver "cdn",
``deduplicate=False`` so that both solve the same rows), both at scikit-learn's defaults (tol=1e-4,
max_iter=1000), with ``random_state`` = 0 .. ``--seeds`` - 1 for each; medians over the seeds of the time
and the sweeps (the sweeps to the tolerance depend on the random feature order: on phishing at C=0.1
LIBLINEAR's range from 73 to 211 over six seeds, ours from 62 to 362), and per model of the first seed
the L1 objective, the nonzero weights and whether max_iter stopped it. Both run the same algorithm.

Usage: python benchmarks/linear_l1.py [--datasets a9a w8a ijcnn1 phishing] [--C 0.1 1] [--seeds 5] [--tag cpu]
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


def run(name, data_dir, Cs, seeds):
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC as SkLinearSVC

    X, y = _load(data_dir, name)
    ypm = np.where(y == y.max(), 1.0, -1.0)
    be = get_backend("cpu")
    few = np.r_[np.flatnonzero(ypm > 0)[:100], np.flatnonzero(ypm < 0)[:100]]
    LinearSVC(penalty="l1", loss="squared_hinge", device="cpu").fit(X[few], y[few])  # compile outside timing
    rows = []
    for C in Cs:
        kw = dict(penalty="l1", loss="squared_hinge", dual=False, C=C, tol=1e-4, max_iter=1000)
        t_sk, t_ours, it_sk, it_ours = [], [], [], []
        for seed in range(seeds):
            with warnings.catch_warnings(record=True) as w_sk:
                warnings.simplefilter("always", ConvergenceWarning)
                c0 = time.process_time()
                sk_s = SkLinearSVC(**kw, random_state=seed).fit(X, y)
                t_sk.append(time.process_time() - c0)
            with warnings.catch_warnings(record=True) as w_ours:
                warnings.simplefilter("always", ConvergenceWarning)
                c0 = time.process_time()
                m_s = LinearSVC(**kw, random_state=seed, device="cpu", deduplicate=False).fit(X, y)
                t_ours.append(time.process_time() - c0)
            it_sk.append(int(np.max(sk_s.n_iter_)))
            it_ours.append(int(m_s.n_iter_))
            if seed == 0:
                sk, m, warned_sk, warned = sk_s, m_s, list(w_sk), list(w_ours)
        n = X.shape[0]
        obj_sk = l1_objective(be, X, ypm, np.full(n, C), sk.coef_[0], float(sk.intercept_[0]), 1.0)
        obj = l1_objective(be, X, ypm, np.full(n, C), m.coef_[0], float(m.intercept_[0]), 1.0)
        row = {"dataset": name, "C": C, "n": n, "d": X.shape[1],
               "sklearn_s": float(np.median(t_sk)), "ours_s": float(np.median(t_ours)),
               "ratio": float(np.median(t_ours) / np.median(t_sk)),
               "sklearn_iter": float(np.median(it_sk)), "ours_iter": float(np.median(it_ours)),
               "sklearn_iter_all": it_sk, "ours_iter_all": it_ours,
               "sklearn_objective": obj_sk, "ours_objective": obj, "rel_objective_diff": (obj - obj_sk) / obj_sk,
               "sklearn_nnz": int(np.count_nonzero(sk.coef_)), "ours_nnz": int(np.count_nonzero(m.coef_)),
               "sklearn_max_iter": any(issubclass(x.category, ConvergenceWarning) for x in warned_sk),
               "ours_max_iter": any(issubclass(x.category, ConvergenceWarning) for x in warned)}
        print(row, flush=True)
        rows.append(row)
    return rows


def markdown(results, meta):
    lines = ["# LinearSVC(penalty=\"l1\") against scikit-learn's LinearSVC (LIBLINEAR solver 5), CPU", "",
             f"Machine: {meta['machine']}, git {meta['commit']}. `{meta['command']}`. Full training files; "
             "tol=1e-4, max_iter=1000 (sklearn's defaults); process CPU seconds and sweeps: medians over the "
             "seeds (random_state 0, 1, ...), fits alternating; ratio = ours / sklearn; objective "
             "||w~||_1 + C sum sq. hinge, nonzero weights and * (stopped at max_iter) of the seed-0 models.", "",
             "| data set | C | sklearn (s) | ours (s) | ratio | sweeps sklearn / ours | objective sklearn | "
             "objective ours | rel. diff | nonzero w sklearn / ours |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for rows in results:
        for r in rows:
            star_sk = "*" if r["sklearn_max_iter"] else ""
            star = "*" if r["ours_max_iter"] else ""
            lines.append(f"| {r['dataset']} | {r['C']:g} | {r['sklearn_s']:.3f} | {r['ours_s']:.3f} | "
                         f"{r['ratio']:.2f}x | {r['sklearn_iter']:g}{star_sk} / {r['ours_iter']:g}{star} | "
                         f"{r['sklearn_objective']:.6g} | {r['ours_objective']:.6g} | "
                         f"{r['rel_objective_diff']:+.1e} | {r['sklearn_nnz']} / {r['ours_nnz']} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["a9a", "w8a", "ijcnn1", "phishing"])
    ap.add_argument("--C", nargs="+", type=float, default=[0.1, 1.0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--tag", default="cpu")
    args = ap.parse_args()
    run_datasets(f"linear_l1_{args.tag}", args.datasets, lambda name, d: run(name, d, args.C, args.seeds),
                 markdown)


if __name__ == "__main__":
    main()

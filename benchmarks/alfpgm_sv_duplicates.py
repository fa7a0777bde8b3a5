"""How many of LIBSVM's support vectors are identical training points (same row, same label).

ALFPGM moves the alpha mass of each group of identical points onto as few members as the box allows
(:func:`gpusvm._solvers.alfpgm._merge_duplicates`): every split of that mass has the same objective and
the same decision function, so its support-vector count is compared with LIBSVM's count after the
same merge. For each data set (training sets as in benchmarks/alfpgm_compare.py, full size) this fits
scikit-learn's SVC and reports its n_SV and its n_SV after merging identical points.

Usage: python benchmarks/alfpgm_sv_duplicates.py [--datasets a9a ijcnn1 w8a phishing]
Writes benchmarks/results/alfpgm_sv_duplicates_cpu.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from alfpgm_compare import DATASETS, load  # noqa: E402


def merged_count(X, y, alpha, C):
    Xd = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    _, inv = np.unique(np.c_[Xd, y], axis=0, return_inverse=True)
    inv = inv.ravel()
    return sum(int(np.ceil(alpha[inv == g].sum() / C - 1e-9)) for g in np.unique(inv[alpha > 0]))


def main():
    from sklearn.svm import SVC

    ap = argparse.ArgumentParser()
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    args = ap.parse_args()
    out = {"benchmark": "alfpgm_sv_duplicates", "results": []}
    for name in args.datasets:
        X, y, C, gamma = load(name, 0)
        yy = np.where(y > y.min(), 1.0, -1.0)
        sk = SVC(C=C, gamma=gamma, cache_size=200).fit(X, yy)
        dc = sk.dual_coef_.toarray() if hasattr(sk.dual_coef_, "toarray") else np.asarray(sk.dual_coef_)
        a = np.zeros(X.shape[0])
        a[sk.support_] = np.abs(dc[0])
        row = {"dataset": name, "n": int(X.shape[0]), "sklearn_n_sv": int(sk.support_.shape[0]),
               "sklearn_n_sv_merged": merged_count(X, yy, a, C)}
        out["results"].append(row)
        print(json.dumps(row), flush=True)
    stem = Path(__file__).resolve().parent / "results" / "alfpgm_sv_duplicates_cpu"
    stem.with_suffix(".json").write_text(json.dumps(out, indent=1))
    lines = ["# LIBSVM's support vectors and identical training points", "",
             "scikit-learn SVC (LIBSVM) on the full training sets of benchmarks/alfpgm_compare.py; 'merged' = the "
             "count after moving the alpha mass of each group of identical points (same row and label) onto as few "
             "members as the box allows, as ALFPGM does (same objective, same decision function).", "",
             "| data set | n | sklearn n_SV | sklearn n_SV merged |", "|---|---|---|---|"]
    lines += [f"| {r['dataset']} | {r['n']} | {r['sklearn_n_sv']} | {r['sklearn_n_sv_merged']} |" for r in out["results"]]
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

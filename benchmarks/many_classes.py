"""Multi-class SVC on the CPU with many small classes: the class pairs' fixed cost.

Usage::

    PYTHONPATH=. python benchmarks/many_classes.py [--repeat 7] [--cases b100x30,b30x40,digits,b10x200]

Per case, in one process, fits alternate (each round: the compiled many-pair path, the per-pair path, then
scikit-learn's SVC) and each row reports the median of ``--repeat`` rounds of process CPU seconds
(``time.process_time``), after one warm-up fit of each (Numba's cache). "per pair" is the path every class pair
took before ``solve_small_pairwise`` (gpusvm._solvers.smo): the pair-at-a-time op called once per pair, selected
here by turning ``small_pairwise_applies`` off in gpusvm.svc; both fit the same model to the bit (checked here on
every case: dual_coef_, intercept_, n_iter_, objective_). All fits are SVC(C=1, gamma="scale"), rbf.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def _blobs(n_classes, per_class, std=3.0):
    def make():
        from sklearn.datasets import make_blobs

        return make_blobs(n_samples=n_classes * per_class, centers=n_classes, n_features=10, random_state=0,
                          cluster_std=std)
    return make


def _digits():
    from sklearn.datasets import load_digits

    return load_digits(return_X_y=True)


CASES = {
    "b100x30": ("make_blobs 100 classes x 30 points, 10 features, cluster_std=3 (4,950 pairs of 60)",
                _blobs(100, 30)),
    "b30x40": ("make_blobs 30 classes x 40 points, 10 features, cluster_std=3 (435 pairs of 80)", _blobs(30, 40)),
    "digits": ("sklearn load_digits, raw 0-16 pixels (1,797 x 64; 45 pairs of about 360)", _digits),
    "b10x200": ("make_blobs 10 classes x 200 points, 10 features, cluster_std=3 (45 pairs of 400)",
                _blobs(10, 200)),
}


def run_case(name, repeat):
    import warnings

    from sklearn.svm import SVC as SkSVC

    import gpusvm.svc as svc_module
    from gpusvm import SVC

    X, y = CASES[name][1]()
    real = svc_module.small_pairwise_applies

    def fit_ours(compiled):
        svc_module.small_pairwise_applies = real if compiled else (lambda *a, **k: False)
        try:
            t = time.process_time()
            m = SVC(device="cpu", C=1.0, gamma="scale").fit(X, y)
            return time.process_time() - t, m
        finally:
            svc_module.small_pairwise_applies = real

    def fit_sklearn():
        t = time.process_time()
        SkSVC(C=1.0, gamma="scale").fit(X, y)
        return time.process_time() - t

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, new = fit_ours(True)
        _, old = fit_ours(False)
        fit_sklearn()
        same = all(np.array_equal(getattr(new, a), getattr(old, a))
                   for a in ("dual_coef_", "support_", "intercept_", "n_iter_", "objective_"))
        times = {"compiled pairs": [], "per pair": [], "scikit-learn": []}
        for _ in range(repeat):
            times["compiled pairs"].append(fit_ours(True)[0])
            times["per pair"].append(fit_ours(False)[0])
            times["scikit-learn"].append(fit_sklearn())
    n_classes = int(np.unique(y).shape[0])
    n_pairs = n_classes * (n_classes - 1) // 2
    med = {k: statistics.median(v) for k, v in times.items()}
    print(name, {k: round(v, 4) for k, v in med.items()}, "same model:", same, flush=True)
    return {"case": name, "description": CASES[name][0], "n": int(X.shape[0]), "n_classes": n_classes,
            "n_pairs": n_pairs, "repeat": repeat, "median_cpu_s": med, "all_cpu_s": times, "bit_identical": same}


def markdown(results, meta):
    lines = ["# Many small classes: SVC fit on the CPU (process CPU seconds)", "",
             f"Machine: {meta['machine']}. Commit {meta['commit']}. Command: `{meta['command']}`.", "",
             "Median of the rounds; in each round the three fits alternate in one process (warm: Numba's cache "
             "and one warm-up fit each). \"per pair\": the path before solve_small_pairwise (the op once per "
             "class pair); \"compiled\": all small pairs in one compiled call. Per-pair columns divide by the "
             "number of class pairs.", "",
             "| case | pairs | per pair (s) | compiled (s) | scikit-learn (s) | speed-up | us/pair before / after "
             "/ sklearn | same model |",
             "|---|---:|---:|---:|---:|---:|---|---|"]
    for r in results:
        m, p = r["median_cpu_s"], r["n_pairs"]
        old, new, sk = m["per pair"], m["compiled pairs"], m["scikit-learn"]
        lines.append(f"| {r['case']}: {r['description']} | {p:,} | {old:.3f} | {new:.3f} | {sk:.3f} | "
                     f"{old / new:.2f}x | {1e6 * old / p:.0f} / {1e6 * new / p:.0f} / {1e6 * sk / p:.0f} | "
                     f"{'yes' if r['bit_identical'] else 'NO'} |")
    return "\n".join(lines) + "\n"


def cli_main(stem, cases, run_case, markdown, repeat):
    """The command line of this script and of many_class_predict.py: ``--repeat`` (default ``repeat``) and
    ``--cases`` (default all of ``cases``), each case's ``run_case(name, repeat)`` written by
    :func:`_results.run_datasets` to benchmarks/results/<stem>.{json,md}."""
    from _results import run_datasets

    from gpusvm.bench.harness import _cpu_model

    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=repeat)
    ap.add_argument("--cases", default=",".join(cases))
    args = ap.parse_args()
    names = [c for c in args.cases.split(",") if c]
    run_datasets(stem, names, lambda name, _: run_case(name, args.repeat), markdown,
                 machine_note=f"{_cpu_model()}; shared with other jobs: compare within one run", needs_data=False)


def main():
    cli_main("many_classes_cpu", CASES, run_case, markdown, 7)


if __name__ == "__main__":
    main()

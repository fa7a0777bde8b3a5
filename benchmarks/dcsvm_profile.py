"""Where does DC-SVM's time go? Per-level profile of one binary DC-SVM fit against the cold exact solver.

Usage::

    PYTHONPATH=. python benchmarks/dcsvm_profile.py ijcnn1 [--max-train N] [--levels 4] [--k 4]
        [--sub-tol T] [--no-refine] [--skip-cold] [--json out.json]

Prints, for the cold exact solver (the same binary solver from alpha = 0) and for DC-SVM, the time of
every level split into kernel k-means (division) and subproblem solves, and for the refine/top solves
the warm-start diagnosis: time of the initial gradient (n_sv x n Gram entries), the KKT gap and dual
objective at the warm start (after the feasibility repair), the rounds/steps the solver then needed.
Diagnostics only: the timed runs are in benchmarks/dcsvm_bench.py.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from dcsvm_bench import SETUPS, _load  # noqa: E402

from gpusvm import get_backend  # noqa: E402
from gpusvm._gram import GramSpec  # noqa: E402
from gpusvm._solvers import _common, get_binary_solver, smo_batched  # noqa: E402
from gpusvm._solvers.dcsvm import dcsvm_solve  # noqa: E402
from gpusvm.datasets import find_data_dir  # noqa: E402

_WARM = []


def _instrument(be, y, C):
    """Wrap the batched solver's warm-start gradient to time it and record gap / objective there."""
    orig = _common.gradient_from_alpha

    def timed(be_, X, y_, alpha, spec, **kw):
        t0 = time.perf_counter()
        G = orig(be_, X, y_, alpha, spec, **kw)
        t = time.perf_counter() - t0
        gap = _common.kkt_gap(be_, y_, alpha, G, C if y_.shape[0] == C.shape[0] else None) \
            if y_.shape[0] == C.shape[0] else None
        _WARM.append({"n": int(y_.shape[0]), "n_nonzero": int(np.count_nonzero(alpha > 0)), "grad_s": t,
                      "gap": gap, "objective": _common.dual_objective(be_, alpha, G)})
        return G

    smo_batched.gradient_from_alpha = timed


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("dataset")
    ap.add_argument("--max-train", type=int, default=None)
    ap.add_argument("--levels", type=int, default=4)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--sample-size", type=int, default=None)
    ap.add_argument("--sub-tol", type=float, default=None)
    ap.add_argument("--no-refine", action="store_true")
    ap.add_argument("--skip-cold", action="store_true")
    ap.add_argument("--extra", default="{}", help="JSON dict of extra dcsvm_solve keyword arguments")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    s = SETUPS[args.dataset]
    Xtr, ytr, _, _, info = _load(args.dataset, find_data_dir(), args.max_train, args.max_train)
    be = get_backend("cpu")
    classes = np.unique(ytr)
    y = np.where(ytr == classes[0], 1.0, -1.0)
    C = np.full(y.shape[0], float(s["C"]))
    spec = GramSpec("rbf", gamma=float(s["gamma"]))
    fn, _ = get_binary_solver("smo")
    out = {"dataset": args.dataset, "info": info}
    print(f"== {args.dataset} {info}", flush=True)
    if not args.skip_cold:
        t0, c0 = time.perf_counter(), time.process_time()
        r = fn(be, Xtr, y, spec, C, tol=1e-3, max_iter=-1, cache_bytes=200 * 2**20)
        t, ct = time.perf_counter() - t0, time.process_time() - c0
        out["cold"] = {"time_s": t, "cpu_s": ct, "objective": r.objective, "n_iter": r.n_iter,
                       "n_sv": int(np.count_nonzero(r.alpha > 0)), "info": r.info}
        print(f"cold: {t:.2f}s cpu {ct:.2f}s obj {r.objective:.6f} iters {r.n_iter} "
              f"decomp {r.info.get('decomposition', 'batched')}", flush=True)
    _instrument(be, y, C)
    extra = json.loads(args.extra)
    if args.sub_tol is not None:
        extra["sub_tol"] = args.sub_tol
    t0, c0 = time.perf_counter(), time.process_time()
    res = dcsvm_solve(be, Xtr, y, spec, C, n_levels=args.levels, n_clusters_per_level=args.k,
                      sample_size=args.sample_size, refine=not args.no_refine,
                      rng=np.random.default_rng(0), random_state=0, **extra)
    t, ct = time.perf_counter() - t0, time.process_time() - c0
    out["dcsvm"] = {"time_s": t, "cpu_s": ct, "objective": res.objective, "levels": res.levels, "warm": _WARM}
    print(f"dcsvm: {t:.2f}s cpu {ct:.2f}s obj {res.objective:.6f}", flush=True)
    for lv in res.levels:
        print("  " + ", ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in lv.items()
                               if k != "info"), flush=True)
    for w in _WARM:
        print("  warm start:", w, flush=True)
    if "cold" in out:
        print(f"ratio cold/dcsvm wall {out['cold']['time_s'] / t:.2f} cpu {out['cold']['cpu_s'] / ct:.2f}; rel obj diff "
              f"{abs(res.objective - out['cold']['objective']) / abs(out['cold']['objective']):.2e}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()

"""Why does AVSF not need fewer steps than LIBLINEAR's DCD at large C? Progress vs stopping, measured.

For each method (``dcd`` = LIBLINEAR baseline with shrinking, ``avsf`` = Glasmachers & Dogan 2013) on
one data set and C, runs the fused op ``dcd_sweeps`` a sweep (or a few) at a time and records, at
checkpoints spaced geometrically in the number of coordinate steps:

* the dual objective ``D(alpha) = sum(alpha) - 1/2 ||w||^2`` (to be maximized) and the primal objective;
* the KKT violation over ALL variables: ``max PG - min PG`` (the quantity ``tol`` is compared with,
  here over every variable, not only the ones a sweep visited) and ``max |PG|``;
* the spread the solver itself saw over its last sweep (``fstate[4]``), the DCD active-set size, the
  AVSF ``canstop`` flag and preference statistics (share of the preference mass on free variables and
  on variables that violate the KKT conditions, counts at the floor 1/20 and at the ceiling 20);
* events: DCD un-shrinking (the final check of all variables) and AVSF preference resets (a sweep met
  ``tol`` without ``canstop``).

From these it reports how many steps each method needs to bring the dual suboptimality
``(D* - D) / |D*|`` below 1e-3 ... 1e-7, with ``D*`` the best dual value seen in any run (a lower bound
of the optimum; the smallest primal value seen is an upper bound, and is reported too).

A step (``n_updates``) is one evaluation of ``<w, x_i>``, in both methods: DCD counts the visit that
shrinks a variable, but not the variables already shrunk (they are not visited); AVSF counts every slot
of its schedule, including visits that do not move ``alpha_i``. ``moves`` counts the steps that changed
``alpha_i`` (from the op's optional ``istate[5]``).

Usage::

    PYTHONPATH=. python benchmarks/linear_avsf_diagnosis.py --data a9a --C 100,1000 --tol 0.01 \
        --max-steps 2e9 [--variants avsf_noreset] [--out benchmarks/results/linear_avsf_diagnosis]

Writes ``<out>_cpu.json`` (all checkpoints). The Markdown summary is written by hand from it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

from gpusvm import get_backend
from gpusvm.datasets import find_data_dir, load_svmlight

LEVELS = (1e-3, 1e-4, 1e-5, 1e-6, 1e-7)


def _kkt(X, y, alpha, w, bias, C):
    d = X.shape[1]
    G = y * (X @ w[:d] + bias * w[d]) - 1.0
    pg = np.where(alpha <= 0.0, np.minimum(G, 0.0), np.where(alpha >= C, np.maximum(G, 0.0), G))
    return G, pg


def run(X, y, Cv, method, tol, max_steps, seed=0, bias=1.0, growth=1.15, max_seconds=None):
    be = get_backend("cpu")
    n, d = X.shape
    C = np.full(n, float(Cv))
    qd = be.dcd_row_sqnorms(X) + bias * bias
    alpha = np.zeros(n)
    w = np.zeros(d + 1)
    order = np.arange(n, dtype=np.int64)
    pref = np.ones(n)
    fstate = np.array([math.inf, -math.inf, 0.0, float(n), math.inf])
    istate = np.array([n, 0, 0, 0, 1, 0], dtype=np.int64)  # [5]: steps that moved alpha_i
    rng = np.array([seed], dtype=np.uint64)
    avsf = method.startswith("avsf")
    diag = np.zeros(n)
    checkpoints, events = [], []
    next_cp = float(n) / 4
    last_sweep = n
    t0 = time.perf_counter()
    while True:
        steps = int(istate[2])
        if avsf:
            k = 1
        else:
            k = max(1, int((next_cp - steps) // max(last_sweep, 1)))
        before_active, before_canstop, before_steps = int(istate[0]), int(istate[4]), steps
        be.dcd_sweeps(X, y, qd, C, diag, bias, alpha, w, order, pref, fstate, istate, rng, k, tol,
                      avsf=avsf, shrinking=True)
        steps = int(istate[2])
        last_sweep = max(1, (steps - before_steps) // k)
        if avsf and int(istate[4]) == 1 and before_canstop == 0 and not istate[3]:
            events.append({"kind": "pref_reset", "steps": steps, "sweeps": int(istate[1])})
        if not avsf and int(istate[0]) == n and before_active < n and not istate[3]:
            events.append({"kind": "unshrink", "steps": steps, "sweeps": int(istate[1])})
        done = bool(istate[3]) or steps >= max_steps or (
            max_seconds is not None and time.perf_counter() - t0 > max_seconds)
        if steps >= next_cp or done:
            G, pg = _kkt(X, y, alpha, w, bias, C)
            dual = float(alpha.sum() - 0.5 * w @ w)
            xi = np.maximum(1.0 - (G + 1.0), 0.0)
            primal = float(0.5 * w @ w + C @ xi)
            free = (alpha > 0) & (alpha < C)
            viol = np.abs(pg) > tol / 2
            cp = {"steps": steps, "moves": int(istate[5]), "sweeps": int(istate[1]),
                  "seconds": time.perf_counter() - t0, "dual": dual, "primal": primal,
                  "kkt_spread_all": float(pg.max() - pg.min()), "kkt_maxabs_all": float(np.abs(pg).max()),
                  "sweep_spread": float(fstate[4]), "n_free": int(free.sum()), "n_upper": int((alpha >= C).sum()),
                  "n_viol": int(viol.sum()), "active": int(istate[0]), "canstop": int(istate[4])}
            if avsf:
                ps = pref.sum()
                cp.update({"pref_share_free": float(pref[free].sum() / ps),
                           "pref_share_viol": float(pref[viol].sum() / ps),
                           "n_pref_min": int((pref <= 0.05 * 1.0001).sum()),
                           "n_pref_max": int((pref >= 20 * 0.9999).sum()), "ref_gain": float(fstate[2])})
            checkpoints.append(cp)
            while next_cp <= steps:
                next_cp *= growth
        if done:
            break
    return {"method": method, "C": Cv, "tol": tol, "converged": bool(istate[3]), "steps": int(istate[2]),
            "moves": int(istate[5]), "sweeps": int(istate[1]), "seconds": time.perf_counter() - t0,
            "checkpoints": checkpoints, "events": events}


def steps_to(run_, dstar, level, key="steps"):
    """Steps (or moves) at the first checkpoint whose relative dual suboptimality is <= level."""
    for cp in run_["checkpoints"]:
        if (dstar - cp["dual"]) / abs(dstar) <= level:
            return cp[key]
    return None


def summary(res, data):
    """Markdown tables from the runs of one data set (the hand-written notes go around them)."""
    lines = []
    for Cv in sorted({q["C"] for q in res["runs"] if q["data"] == data}):
        rs = sorted([q for q in res["runs"] if q["data"] == data and q["C"] == Cv], key=lambda q: q["method"])
        dstar = max(cp["dual"] for q in rs for cp in q["checkpoints"])
        pbest = min(cp["primal"] for q in rs for cp in q["checkpoints"])
        n = rs[0]["checkpoints"][0]["steps"]  # the first checkpoint is the first sweep: n steps
        lines += [f"### {data}, C = {Cv:g}, tol = {rs[0]['tol']:g}", "",
                  f"Best dual value seen D* = {dstar:.10g}; best primal value seen {pbest:.10g} "
                  f"(relative gap {(pbest - dstar) / abs(dstar):.1e}).", "",
                  "| method | stopped | steps | moves (alpha changed) | moves / steps | sweeps | sweeps x n | "
                  "pref. resets | final KKT spread, all variables |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for q in rs:
            last = q["checkpoints"][-1]
            resets = sum(e["kind"] == "pref_reset" for e in q["events"])
            stop = "converged" if q["converged"] else "step cap (not converged)"
            lines.append(f"| {q['method']} | {stop} | {q['steps']:.3g} | {q['moves']:.3g} | "
                         f"{q['moves'] / q['steps']:.2f} | {q['sweeps']} | {q['sweeps'] * n:.3g} | "
                         f"{resets if q['method'].startswith('avsf') else '-'} | {last['kkt_spread_all']:.3g} |")
        lines += ["", "Steps (moves) to reach a relative dual suboptimality (D* - D) / |D*| of:", "",
                  "| method | " + " | ".join(f"{lv:g}" for lv in LEVELS) + " |",
                  "|---|" + "---|" * len(LEVELS)]
        for q in rs:
            cells = []
            for lv in LEVELS:
                st, mv = steps_to(q, dstar, lv), steps_to(q, dstar, lv, "moves")
                cells.append("-" if st is None else f"{st:.3g} ({mv:.3g})")
            lines.append(f"| {q['method']} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="a9a")
    ap.add_argument("--C", default="100,1000")
    ap.add_argument("--tol", type=float, default=0.01)
    ap.add_argument("--max-steps", type=float, default=2e9)
    ap.add_argument("--max-seconds", type=float, default=None)
    ap.add_argument("--methods", default="dcd,avsf")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="benchmarks/results/linear_avsf_diagnosis")
    args = ap.parse_args(argv)
    data_dir = find_data_dir()
    if data_dir is None:
        sys.exit("LIBSVM data sets not found")
    X, y = load_svmlight(Path(data_dir) / f"{args.data}.xz")
    y = np.where(y == y.max(), 1.0, -1.0)
    X.indices = X.indices.astype(np.int32)
    out = Path(f"{args.out}_cpu.json")
    res = json.loads(out.read_text()) if out.exists() else {"runs": []}
    res["machine"] = {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
                      "cpu_count": os.cpu_count(), "shared_machine": True}
    # warm-up compile
    run(X[:200], y[:200], 1.0, "dcd", 0.1, 1e5)
    run(X[:200], y[:200], 1.0, "avsf", 0.1, 1e5)
    for Cv in [float(c) for c in args.C.split(",")]:
        for method in args.methods.split(","):
            r = run(X, y, Cv, method, args.tol, args.max_steps, seed=args.seed, max_seconds=args.max_seconds)
            r["data"] = args.data
            res["runs"] = [q for q in res["runs"] if not (q["data"] == args.data and q["C"] == Cv
                                                          and q["method"] == method and q["tol"] == args.tol)]
            res["runs"].append(r)
            last = r["checkpoints"][-1]
            print(f"{args.data} C={Cv:g} {method}: steps {r['steps']:.3g} moves {r['moves']:.3g} sweeps "
                  f"{r['sweeps']} conv {r['converged']} {r['seconds']:.1f}s dual {last['dual']:.8g} "
                  f"primal {last['primal']:.8g} kkt_all {last['kkt_spread_all']:.3g} "
                  f"events {len(r['events'])}", flush=True)
            out.write_text(json.dumps(res, indent=1))
    # summary: steps to reach dual suboptimality levels
    for Cv in sorted({q["C"] for q in res["runs"] if q["data"] == args.data}):
        rs = [q for q in res["runs"] if q["data"] == args.data and q["C"] == Cv]
        dstar = max(cp["dual"] for q in rs for cp in q["checkpoints"])
        pbest = min(cp["primal"] for q in rs for cp in q["checkpoints"])
        print(f"C={Cv:g} D*={dstar:.10g} P_best={pbest:.10g} rel gap {(pbest - dstar) / abs(dstar):.2e}")
        for q in rs:
            print("  ", q["method"], q["tol"], [(lv, steps_to(q, dstar, lv)) for lv in LEVELS])
    print(summary(res, args.data))
    return res


if __name__ == "__main__":
    main()

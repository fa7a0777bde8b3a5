"""The CPU Gram transform (the elementwise pass after the matrix product): fused Numba against NumPy.

    PYTHONPATH=. python benchmarks/gram_transform.py [--repeats 5] [--quick]

The ``gram`` op (gpusvm/_backend/ops/gram.py) computes each tile as one matrix product ``P = X Y^T``
followed by the elementwise gram function. This script times that second step alone, on the same
inputs, for the implementations gram.py can use:

* ``numba_serial`` / ``numba_parallel``: the fused Numba twin of ``kernels/gram.cu`` (one pass: read
  ``P[r, c]``, write ``k`` into the output), compiled without and with ``parallel=True`` (prange over
  the rows);
* ``numpy``: vectorized NumPy done in place on the product tile, then one ufunc into the output
  (RBF: ``P *= -2; P += xx[:, None]; P += yy[None, :]; max(P, 0); P *= -gamma; exp(P, out)``;
  poly: ``P *= gamma; P += coef0`` then ``out = P**degree`` by repeated multiplication;
  sigmoid: ``P *= gamma; P += coef0; tanh(P, out)``);
* ``auto``: whatever ``gram.py``'s ``_transform_cpu`` picks for that (dtype, size): the rule under test.

Tile shapes: rows in {1, 16, 256, 1024, 4096} x columns in {1,000, 10,000, 50,000}; a shape whose tile
is over gram's default byte budget (256 MB) is replaced by the tile ``_tile_shape`` cuts from it (gram
never produces a larger one). float32 and float64; Numba with 1 and 2 threads (NumPy's ufuncs are
single-threaded either way). Each timed call gets a fresh copy of the product tile (the NumPy path
overwrites it); small tiles are timed as a batch of calls on distinct copies. Wall time
(``perf_counter``) and process CPU time (``process_time``, all threads) per call; the minimum and the
median over ``--repeats`` repeats. The machine is shared with other engineers' runs: minima are the
figures to compare.

Results: benchmarks/results/gram_transform_cpu.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpusvm import GramSpec, get_backend  # noqa: E402
from gpusvm._backend.ops import gram as gram_op  # noqa: E402

ROWS = (1, 16, 256, 1024, 4096)
COLS = (1_000, 10_000, 50_000)
SPECS = {
    "rbf": GramSpec("rbf", gamma=0.5),
    "poly": GramSpec("poly", gamma=0.1, coef0=1.0, degree=3),
    "sigmoid": GramSpec("sigmoid", gamma=0.01, coef0=-0.5),
}
BATCH_ELEMS = 1 << 21  # small tiles: this many elements of fresh copies per timed batch


def numpy_transform(prod, dst, xn, yn, spec):
    """gram.py's NumPy transform (in place on ``prod``, result into ``dst``)."""
    gram_op._transform_numpy(get_backend("cpu"), prod, dst, xn, yn, spec)


def numba_transform(parallel):
    def run(prod, dst, xn, yn, spec):
        T = dst.dtype.type
        gram_op._cpu_fused(parallel)(prod, dst, xn, yn, spec.code, T(spec.gamma), T(spec.coef0), spec.degree)

    return run


def auto_transform(prod, dst, xn, yn, spec):
    gram_op._transform_cpu(get_backend("cpu"), prod, dst, xn, yn, spec)


IMPLS = {
    "numba_serial": numba_transform(False),
    "numba_parallel": numba_transform(True),
    "numpy": numpy_transform,
    "auto": auto_transform,
}


def time_impl(fn, base, xn, yn, spec, repeats):
    size = base.size
    k = max(1, min(256, BATCH_ELEMS // size))
    dst = np.empty_like(base)
    walls, cpus = [], []
    for _ in range(repeats):
        works = [base.copy() for _ in range(k)]
        t0, c0 = time.perf_counter(), time.process_time()
        for w in works:
            fn(w, dst, xn, yn, spec)
        walls.append((time.perf_counter() - t0) / k)
        cpus.append((time.process_time() - c0) / k)
        del works
    return walls, cpus, k


def shapes(dtype):
    itemsize = np.dtype(dtype).itemsize
    out = []
    for r in ROWS:
        for c in COLS:
            if r * c * itemsize <= gram_op.DEFAULT_MAX_BYTES:
                out.append((r, c, None))
            else:
                tr, tc = gram_op._tile_shape(r, c, 64, itemsize, gram_op.DEFAULT_MAX_BYTES, False)
                if all((tr, tc) != (a, b) for a, b, _ in out):  # two requests can cut to one tile
                    out.append((tr, tc, f"{r}x{c}"))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="a few shapes only (smoke test)")
    ap.add_argument("--kinds", default="rbf,poly,sigmoid")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "gram_transform_cpu"))
    ap.add_argument("--from-json", action="store_true",
                    help="rewrite the Markdown from the saved JSON (no timing)")
    args = ap.parse_args()
    out = Path(args.out)
    if args.from_json:
        saved = json.loads(out.with_suffix(".json").read_text())
        out.with_suffix(".md").write_text(markdown(saved["meta"], saved["records"]))
        return
    import numba

    rng = np.random.default_rng(0)
    kinds = args.kinds.split(",")
    records = []
    t_start = time.time()
    for dtype in (np.float32, np.float64):
        for (r, c, cut_from) in shapes(dtype):
            if args.quick and (r, c) not in ((16, 1000), (256, 10_000)):
                continue
            # a realistic product tile: dot products of unit-scale features, norms to match
            d = 20
            xn = (rng.random(r) * d / 3).astype(dtype)
            yn = (rng.random(c) * d / 3).astype(dtype)
            base = (rng.random((r, c), dtype=np.float32) * d / 4).astype(dtype)
            for kind in kinds:
                # poly / sigmoid: the large shapes of each dtype only at 1 and 2 threads for the rule
                spec = SPECS[kind]
                for threads in (1, 2):
                    numba.set_num_threads(threads)
                    for name, fn in IMPLS.items():
                        fn(base.copy(), np.empty_like(base), xn, yn, spec)  # compile / warm up
                        walls, cpus, k = time_impl(fn, base, xn, yn, spec, args.repeats)
                        records.append({
                            "kind": kind, "dtype": np.dtype(dtype).name, "rows": r, "cols": c,
                            "elements": r * c, "cut_from": cut_from, "threads": threads, "impl": name,
                            "calls_per_repeat": k, "repeats": args.repeats,
                            "wall_min_s": min(walls), "wall_median_s": statistics.median(walls),
                            "cpu_min_s": min(cpus), "cpu_median_s": statistics.median(cpus),
                        })
                    best = {rec["impl"]: rec["wall_min_s"] for rec in records[-len(IMPLS):]}
                    print(f"{kind:7s} {np.dtype(dtype).name} {r:5d}x{c:<6d} t={threads} " +
                          " ".join(f"{n}={v * 1e3:9.4f}ms" for n, v in best.items()), flush=True)
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    meta = {
        "script": "benchmarks/gram_transform.py",
        "machine": {"processor": platform.processor(), "machine": platform.machine(),
                    "cpu_count": os.cpu_count(), "platform": platform.platform()},
        "versions": {"numpy": np.__version__, "numba": numba.__version__, "python": platform.python_version()},
        "note": ("Shared 2-core machine: other engineers' jobs ran at the same time, so timings are noisy; "
                 "compare minima. Times are per call of the transform alone (no matrix product)."),
        "parallel_min_elems": gram_op._PARALLEL_MIN_ELEMS,
        "rule": gram_op.CPU_TRANSFORM_RULE,
        "repeats": args.repeats,
        "seconds": round(time.time() - t_start, 1),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "records": records}, indent=1))
    out.with_suffix(".md").write_text(markdown(meta, records))
    print(f"wrote {out}.json / .md in {meta['seconds']} s")


def markdown(meta, records):
    lines = [
        "# CPU Gram transform: fused Numba vs NumPy",
        "",
        f"Machine: {meta['machine']['processor'] or meta['machine']['machine']}, {meta['machine']['cpu_count']} "
        f"CPUs ({meta['machine']['platform']}); NumPy {meta['versions']['numpy']}, Numba {meta['versions']['numba']}.",
        "",
        f"**{meta['note']}** {meta['repeats']} repeats per cell; run took {meta['seconds']} s. "
        "Produced by `benchmarks/gram_transform.py`.",
        "",
        "Columns: minimum wall time per call in ms (CPU time, all threads, in parentheses) of the fused "
        "Numba transform (serial build; parallel build), NumPy's in-place vectorized transform, and "
        "gram.py's automatic choice; `numpy / best numba` > 1 means Numba is faster. A shape marked "
        "`(cut from RxC)` is the tile gram's 256 MB budget cuts from that request.",
        "",
        f"Rule in gram.py (`CPU_TRANSFORM_RULE`): {meta['rule']}",
        "",
    ]
    idx = {}
    for rec in records:
        idx[(rec["kind"], rec["dtype"], rec["rows"], rec["cols"], rec["threads"], rec["impl"])] = rec
    lines += summary(idx, records)
    keys = sorted({(r["kind"], r["dtype"], r["rows"], r["cols"], r["threads"], r["cut_from"]) for r in records},
                  key=lambda k: (k[0], k[1], k[4], k[2] * k[3], k[2]))
    cur = None
    for kind, dt, r, c, t, cut in keys:
        if (kind, dt, t) != cur:
            cur = (kind, dt, t)
            lines += ["", f"## {kind}, {dt}, {t} thread{'s' if t > 1 else ''}", "",
                      "| tile | elements | numba serial | numba parallel | numpy | auto | numpy / best numba | auto picked |",
                      "|---|---:|---:|---:|---:|---:|---:|---|"]

        def cell(impl):
            rec = idx[(kind, dt, r, c, t, impl)]
            return f"{rec['wall_min_s'] * 1e3:.4g} ({rec['cpu_min_s'] * 1e3:.3g})"

        ns = idx[(kind, dt, r, c, t, "numba_serial")]["wall_min_s"]
        npar = idx[(kind, dt, r, c, t, "numba_parallel")]["wall_min_s"]
        nump = idx[(kind, dt, r, c, t, "numpy")]["wall_min_s"]
        auto = idx[(kind, dt, r, c, t, "auto")]["wall_min_s"]
        fastest = min(("numba serial", ns), ("numba parallel", npar), ("numpy", nump), key=lambda p: p[1])
        label = f"{r}x{c}" + (f" (cut from {cut})" if cut else "")
        lines.append(f"| {label} | {r * c:,} | {cell('numba_serial')} | {cell('numba_parallel')} | {cell('numpy')} | "
                     f"{cell('auto')} | {nump / min(ns, npar):.2f} | {auto / fastest[1]:.2f}x the fastest ({fastest[0]}) |")
    return "\n".join(lines) + "\n"


def summary(idx, records):
    """Per (kind, dtype, threads): NumPy's time over the faster Numba build's, as a geometric mean and
    range over the tile shapes, in wall time and in CPU time; and how often the rule's choice
    (gram.py's ``_cpu_uses_numba``) was the faster of the two by CPU time."""
    groups = {}
    for rec in records:
        if rec["impl"] == "numpy":
            groups.setdefault((rec["kind"], rec["dtype"], rec["threads"]), []).append(rec)
    lines = ["## Summary (computed from the records below)", "",
             "NumPy / best Numba > 1: Numba faster. CPU time is the process's (all threads); on this "
             "shared machine it is the steadier figure, since wall time includes waiting for a core.", "",
             "| gram | dtype | threads | shapes | numpy / best numba, wall: geo-mean [min, max] | "
             "same, CPU time | rule picked the lower-CPU-time path | worst numpy CPU / (parallel numba CPU / "
             "threads), tiles >= 65,536 |",
             "|---|---|---:|---:|---|---|---|---:|"]
    for (kind, dt, t), recs in sorted(groups.items()):
        rw, rc, hits, ideal = [], [], 0, [float("nan")]
        for rec in recs:
            key = (kind, dt, rec["rows"], rec["cols"], t)
            nb = [idx[key + (name,)] for name in ("numba_serial", "numba_parallel")]
            rw.append(rec["wall_min_s"] / min(r["wall_min_s"] for r in nb))
            ratio_cpu = rec["cpu_min_s"] / min(r["cpu_min_s"] for r in nb)
            rc.append(ratio_cpu)
            numba_pick = gram_op._cpu_uses_numba(kind, np.dtype(dt), rec["elements"])
            hits += (ratio_cpu > 1) == numba_pick
            if rec["elements"] >= gram_op._PARALLEL_MIN_ELEMS:  # the parallel build, granted perfect scaling
                ideal.append(rec["cpu_min_s"] / (nb[1]["cpu_min_s"] / t))
        gw = float(np.exp(np.mean(np.log(rw))))
        gc = float(np.exp(np.mean(np.log(rc))))
        lines.append(f"| {kind} | {dt} | {t} | {len(recs)} | {gw:.2f} [{min(rw):.2f}, {max(rw):.2f}] | "
                     f"{gc:.2f} [{min(rc):.2f}, {max(rc):.2f}] | {hits} of {len(recs)} | "
                     f"{np.nanmax(ideal):.2f} |")
    share = [r["cpu_min_s"] / r["wall_min_s"] for r in records if r["impl"] == "numpy" and r["elements"] >= 1 << 20]
    lines += ["", f"Contention: on tiles of >= 2**20 elements, NumPy's single-threaded transform got a median "
              f"{statistics.median(share):.2f} CPU-seconds per wall-second (1.0 = a core of its own), so the "
              "1- vs 2-thread comparison of the Numba builds is not conclusive here. The last column bounds "
              "it: NumPy's CPU time over the parallel Numba build's CPU time divided by the thread count, "
              "i.e. against Numba granted perfect scaling on free cores (< 1: NumPy would still be faster)."]
    return lines + [""]


if __name__ == "__main__":
    main()

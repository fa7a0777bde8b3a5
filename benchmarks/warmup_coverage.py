"""Does a benchmark's warm-up run the code paths of the fit it times?  Counted on the CPU emulator of the GPU.

Usage::

    PYTHONPATH=. python benchmarks/warmup_coverage.py [--n 20000] [--warmup small,full] [--out benchmarks/results]

When a GPU fit meets a CuPy kernel (an elementwise op, a reduction, a CUDA template of ours) for the first time
in the process, CuPy compiles it or loads it from its disk cache, inside whatever is being timed. This script
runs ``dcsvm_bench.py``'s two warm-ups (``small``: each estimator on 3,000 rows; ``full``: the timed DCSVC
on the same data) before one DCSVC fit (k=4, L=4, the defaults) on the first ``--n`` rows of ijcnn1, with
``gpu_fixed_costs.py``'s counters on the emulator's stand-in ``cupy``, and reports how many (CuPy op or raw
kernel, call site) pairs of the timed fit the warm-up did not run: each such pair is a kernel the timed fit
may be the first to use (an upper bound: the same op with the same types at a call site of the warm-up shares
the kernel). A count, not a time: nothing here ran on a GPU.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

import gpu_fixed_costs as g  # noqa: E402  (installs the emulator's cupy)


def _keys():
    return set(g.C.ops) | set(g.C.launches)


def coverage(X, y, warmup):
    from gpusvm import DCSVC, SVC

    est = lambda: DCSVC(C=32.0, gamma=2.0, device="gpu", random_state=0)  # noqa: E731
    g.C.reset()
    g.C.on = True
    if warmup == "full":
        est().fit(X, y)
    else:
        est().fit(X[:3000], y[:3000])
    for dec in ("auto", "batched"):  # dcsvm_bench warms its cold rows up too
        SVC(C=32.0, gamma=2.0, device="gpu", decomposition=dec).fit(X[:3000], y[:3000])
    warm = _keys()
    g.C.reset()  # (which also turns the counters off)
    g.C.on = True
    t0 = time.perf_counter()
    fitted = est().fit(X, y)
    wall = time.perf_counter() - t0
    g.C.on = False
    timed = _keys()
    new = sorted(timed - warm, key=lambda k: k[1])
    by_file = collections.Counter(site.split(":")[0] for _, site in new)
    return {"warmup": warmup, "n_train": int(X.shape[0]), "timed_pairs": len(timed), "not_warmed": len(new),
            "not_warmed_by_file": dict(by_file.most_common()), "not_warmed_pairs": [list(k) for k in new],
            "levels_solved": [lv["level"] for lv in fitted.levels_ if not lv.get("skipped")],
            "emulator_wall_s": round(wall, 1)}


def main(argv=None):
    import numpy as np

    from gpusvm.datasets import find_data_dir, load_svmlight

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--warmup", default="small,full")
    ap.add_argument("--out", default=None, help="write <out>/warmup_coverage_cudasim.{json,md}")
    args = ap.parse_args(argv)
    g._install_counters()
    X, y = load_svmlight(find_data_dir() / "ijcnn1.xz", n_features=22)
    X, y = np.asarray(X.toarray())[: args.n], y[: args.n]
    res = []
    for w in args.warmup.split(","):
        r = coverage(X, y, w)
        res.append(r)
        print(f"warm-up {w}: {r['not_warmed']} of the timed fit's {r['timed_pairs']} (op, call site) pairs not run "
              f"by it; by file {r['not_warmed_by_file']}; levels solved {r['levels_solved']}", flush=True)
    if args.out:
        out = Path(args.out)
        doc = {"command": " ".join(["python", *sys.argv]), "git_commit": g._git("rev-parse", "--short", "HEAD"),
               "results": res}
        (out / "warmup_coverage_cudasim.json").write_text(json.dumps(doc, indent=1))
        (out / "warmup_coverage_cudasim.md").write_text(markdown(doc))


def markdown(doc):
    what = next(p for p in __doc__.split("\n\n") if p.startswith("When a GPU fit")).replace("\n", " ")
    lines = ["# Warm-up coverage of the DC-SVM benchmark, COUNTED on the GPU emulator (not a GPU timing)", "",
             f"Command: `{doc['command']}` at {doc['git_commit']}.", "", what, "",
             "| warm-up | timed fit rows | levels solved | (op, site) pairs in the timed fit | not run by the warm-up "
             "| by file |", "|---|---|---|---|---|---|"]
    for r in doc["results"]:
        files = ", ".join(f"{f} {c}" for f, c in r["not_warmed_by_file"].items()) or "-"
        lines.append(f"| {r['warmup']} | {r['n_train']:,} | {r['levels_solved']} | {r['timed_pairs']} | "
                     f"{r['not_warmed']} | {files} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()

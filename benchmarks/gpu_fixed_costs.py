"""Count the GPU fits' per-fit fixed costs on the CPU emulator: host syncs, raw kernel launches, CuPy array ops.

Usage::

    PYTHONPATH=. python benchmarks/gpu_fixed_costs.py [--cases digits,ijcnn1-2k,...] [--top 12]
        [--save models.npz] [--compare models.npz] [--out benchmarks/results] [--stem gpu_fixed_costs_cudasim]

Nothing here is a GPU timing. The script installs the emulator's stand-in ``cupy`` (tests/cudasim) and wraps it,
in this process only (the library is not changed), with counters:

* **host syncs**: every device -> host transfer: ``ndarray.get`` (so ``cupy.asnumpy`` and ``be.to_host``),
  cupyx ``csr_matrix.get``, and ``float()``/``int()``/``bool()``/``operator.index()``/``.item()``/``.tolist()`` of
  a device array, ``be.sync()`` (``Device.synchronize``); and the implicit ones, where CuPy reads a count on
  the host to size a result: indexing with a boolean device mask (``x[mask]``), ``nonzero``, ``flatnonzero``,
  ``argwhere``, ``unique``, ``compress``, ``extract`` (assignments through a mask, ``x[mask] = v``, are not
  counted as syncs). The emulator's reductions and scalar indexing return NumPy scalars where CuPy returns 0-d
  device arrays; here they return 0-d device arrays, as CuPy's, so that reading one on the host is counted.
* **kernel launches**: calls of a ``RawKernel`` (the library's CUDA kernels), by kernel name.
* **array ops**: calls of CuPy functions (``cupy.X``), ufuncs and operators on device arrays, the array methods
  that run a kernel (``astype``, ``copy``, reductions, ``argsort``, ...), fancy indexing and every assignment
  into a device array, cupyx sparse products. One op is one call; CuPy may run more than one kernel for it
  (``argsort``, ``nonzero``) or none (``cupy.empty``), so this is an approximate count of launches, not an
  exact one. Ops made inside another counted op (the emulator's own NumPy calls) are not counted.
* **host -> device copies**: ``cupy.asarray``/``cupy.array`` of host data.

Every count is attributed to its call site: the innermost frame in ``gpusvm/``. A warm-up fit runs first (kernel
compilation), then one counted fit per case.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import cudasim  # noqa: E402

cudasim.install()

PKG = str(ROOT / "gpusvm") + os.sep


class Counts:
    def __init__(self):
        self.on = False
        self.depth = 0
        self.syncs = collections.Counter()  # (kind, site)
        self.launches = collections.Counter()  # (kernel, site)
        self.ops = collections.Counter()  # (op, site)
        self.h2d = collections.Counter()  # site

    def reset(self):
        self.__init__()


C = Counts()


_PLUMBING = (PKG + "_backend" + os.sep + "cupy_backend.py", PKG + "_backend" + os.sep + "base.py")


def _where(f):
    return f"{f.f_code.co_filename[len(str(ROOT)) + 1:]}:{f.f_lineno} {f.f_code.co_name}"


def _site():
    """The innermost frame in gpusvm/ (past the backend's own data-movement helpers, ``be.to_host``...), and the
    function that called it."""
    f = sys._getframe(2)
    while f is not None:
        fn = f.f_code.co_filename
        if fn.startswith(PKG) and fn not in _PLUMBING:
            up = f.f_back
            while up is not None and not up.f_code.co_filename.startswith(PKG):
                up = up.f_back
            return _where(f) + (f" <- {up.f_code.co_name}" if up is not None else "")
        f = f.f_back
    return "<outside gpusvm>"


def _counted(kind, name, base):
    """Wrap ``base`` so that each outermost call adds one to ``kind`` (syncs, launches, ops, h2d)."""

    def wrapper(*args, **kwargs):
        if C.on and C.depth == 0:
            key = (name, _site())
            if kind == "h2d":
                if not isinstance(args[0], (cudasim.ndarray, cudasim.csr_matrix)):
                    C.h2d[key[1]] += 1
            else:
                getattr(C, kind)[key] += 1
        C.depth += 1
        try:
            return base(*args, **kwargs)
        finally:
            C.depth -= 1

    wrapper.__name__ = getattr(base, "__name__", name)
    return wrapper


def _install_counters():
    nd = cudasim.ndarray
    base_wrap = cudasim._wrap

    def wrap(res):  # CuPy's reductions give 0-d device arrays, not host scalars
        if isinstance(res, np.generic):
            return np.asarray(res).view(nd)
        return base_wrap(res)

    cudasim._wrap = wrap
    base_getitem = np.ndarray.__getitem__

    def _fancy(key):
        keys = key if isinstance(key, tuple) else (key,)
        return any(isinstance(k, (np.ndarray, list)) for k in keys)

    def _mask(key):
        keys = key if isinstance(key, tuple) else (key,)
        return any(isinstance(k, nd) and k.dtype == np.bool_ and k.ndim > 0 for k in keys)

    def getitem(self, key):
        if C.on and C.depth == 0 and _fancy(key):
            site = _site()
            C.ops[("getitem[array]", site)] += 1
            if _mask(key):  # the result's size is the mask's count: CuPy reads it on the host
                C.syncs[("x[bool mask]", site)] += 1
        C.depth += 1
        try:
            res = base_getitem(self, cudasim._unwrap(key) if isinstance(key, nd) else key)
        finally:
            C.depth -= 1
        if isinstance(res, np.generic):
            return np.asarray(res).view(nd)
        return res.view(nd) if type(res) is np.ndarray else res

    nd.__getitem__ = getitem
    base_setitem = np.ndarray.__setitem__

    def setitem(self, key, value):
        if C.on and C.depth == 0:
            C.ops[("setitem", _site())] += 1
        C.depth += 1
        try:
            base_setitem(self, key, value)
        finally:
            C.depth -= 1

    nd.__setitem__ = setitem
    # device -> host
    for name in ("get", "item", "tolist"):
        setattr(nd, name, _counted("syncs", name, getattr(nd, name)))
    for name, conv in (("__float__", float), ("__int__", int), ("__bool__", bool), ("__index__", None),
                       ("__complex__", complex)):
        base = getattr(np.ndarray, name)
        setattr(nd, name, _counted("syncs", name.strip("_") + "()", base))
    cudasim.csr_matrix.get = _counted("syncs", "csr.get", cudasim.csr_matrix.get)
    cudasim.Device.synchronize = _counted("syncs", "synchronize", cudasim.Device.synchronize)  # be.sync()
    # kernels
    base_call = cudasim.RawKernel.__call__

    def launch(self, *args, **kwargs):
        if C.on and C.depth == 0:
            C.launches[(self.name.split("<")[0], _site())] += 1
        C.depth += 1
        try:
            return base_call(self, *args, **kwargs)
        finally:
            C.depth -= 1

    cudasim.RawKernel.__call__ = launch
    # array ops
    nd.__array_ufunc__ = _ufunc_counted(nd.__array_ufunc__)
    base_af = nd.__array_function__

    def af(self, func, types_, args, kwargs):
        if C.on and C.depth == 0:
            C.ops[(func.__name__, _site())] += 1
        C.depth += 1
        try:
            return base_af(self, func, types_, args, kwargs)
        finally:
            C.depth -= 1

    nd.__array_function__ = af
    for name in ("astype", "copy", "fill", "argmin", "argmax", "argsort", "sort", "nonzero", "cumsum", "take",
                 "repeat", "clip", "dot", "round", "flatten", "sum", "max", "min", "mean", "any", "all", "prod",
                 "std", "var", "put"):
        setattr(nd, name, _counted("ops", name, getattr(nd, name)))
    nd.nonzero = _counted_sync("nonzero", nd.nonzero)
    for name in ("__matmul__", "__rmatmul__", "dot", "toarray", "transpose", "__getitem__"):
        setattr(cudasim.csr_matrix, name, _counted("ops", "csr." + name.strip("_"),
                                                    getattr(cudasim.csr_matrix, name)))
    cupy = sys.modules["cupy"]
    base_getattr = cupy.__getattr__

    def cupy_getattr(name):
        obj = base_getattr(name)
        if callable(obj) and not isinstance(obj, type):
            if name in _SIZE_SYNCS:
                return _counted_sync(name, _counted("ops", name, obj))
            return _counted("ops", name, obj)
        return obj

    cupy.__getattr__ = cupy_getattr
    for name in ("asarray", "array"):
        setattr(cupy, name, _counted("h2d", name, getattr(cupy, name)))
    for name in ("argsort", "sort", "ascontiguousarray"):
        setattr(cupy, name, _counted("ops", name, getattr(cupy, name)))


# functions whose result's size depends on the data: CuPy reads a count on the host (one sync)
_SIZE_SYNCS = frozenset({"nonzero", "flatnonzero", "argwhere", "unique", "compress", "extract"})


def _counted_sync(name, base):
    def f(*args, **kwargs):
        if C.on and C.depth == 0:
            C.syncs[(name + "()", _site())] += 1
        return base(*args, **kwargs)
    return f


def _ufunc_counted(base):
    def f(self, ufunc, method, *inputs, **kwargs):
        if C.on and C.depth == 0:
            C.ops[(ufunc.__name__ + ("" if method == "__call__" else "." + method), _site())] += 1
        C.depth += 1
        try:
            return base(self, ufunc, method, *inputs, **kwargs)
        finally:
            C.depth -= 1
    return f


_install_counters()

from gpusvm import DCSVC, SVC  # noqa: E402
from gpusvm.datasets import find_data_dir, load_svmlight  # noqa: E402

# --------------------------------------------------------------------------------------------------
# cases
# --------------------------------------------------------------------------------------------------


def _digits():
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    return X / 16.0, y


_IJ = {}


def _ijcnn1(n, seed=0):
    from sklearn.model_selection import train_test_split

    if "X" not in _IJ:
        X, y = load_svmlight(find_data_dir() / "ijcnn1.xz", n_features=22)
        _IJ["X"], _IJ["y"] = X.toarray(), y
    X, y = _IJ["X"], _IJ["y"]
    Xs, _, ys, _ = train_test_split(X, y, train_size=n, stratify=y, random_state=seed)
    return Xs, ys


def _kmeans_only(X, k=4, m=1000):
    """two_step_kernel_kmeans alone (its own entry point): the division of one DC-SVM level."""
    from gpusvm import get_backend
    from gpusvm._gram import GramSpec
    from gpusvm._solvers.kernel_kmeans import two_step_kernel_kmeans

    be = get_backend("gpu")
    Xd = be.asarray(X)
    _, labels = two_step_kernel_kmeans(be, Xd, GramSpec("rbf", gamma=2.0), k, m, np.random.default_rng(0))
    return {"labels": be.to_host(labels)}


def _blobs(n_classes=30, per_class=40, d=10, seed=0):
    """``n_classes`` Gaussian blobs of ``per_class`` points in ``d`` dimensions (centres 3 apart on average)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=3.0, size=(n_classes, d))
    y = np.repeat(np.arange(n_classes), per_class)
    return centres[y] + rng.normal(size=(y.shape[0], d)), y


CASES = {
    "digits": ("SVC rbf, sklearn digits (1,797 x 64, 10 classes: 45 pairs), C=1, gamma=scale",
               _digits, lambda: SVC(C=1.0, kernel="rbf", device="gpu")),
    "digits-seq": ("the same, batch_pairs=False (the pairs one after the other, as before batch_pairs)",
                   _digits, lambda: SVC(C=1.0, kernel="rbf", device="gpu", batch_pairs=False)),
    "blobs-30c": ("SVC rbf, 30 Gaussian blobs of 40 points in 10 dimensions (435 pairs of 80 points), C=1",
                  _blobs, lambda: SVC(C=1.0, kernel="rbf", device="gpu")),
    "blobs-30c-seq": ("the same, batch_pairs=False", _blobs,
                      lambda: SVC(C=1.0, kernel="rbf", device="gpu", batch_pairs=False)),
    "dcsvc-digits": ("DCSVC defaults, sklearn digits (45 pairs, each too small for any level), random_state=0",
                     _digits, lambda: DCSVC(device="gpu", random_state=0)),
    "dcsvc-digits-seq": ("the same, batch_subproblems=False (each pair's top solve alone)", _digits,
                         lambda: DCSVC(device="gpu", random_state=0, batch_subproblems=False)),
    "ijcnn1-2k": ("SVC rbf, 2,000-row stratified ijcnn1 subset, C=32, gamma=2",
                  lambda: _ijcnn1(2000), lambda: SVC(C=32.0, gamma=2.0, device="gpu")),
    "dcsvc-8k": ("DCSVC defaults (k=4, L=4), 8,000-row ijcnn1 subset, C=32, gamma=2, random_state=0",
                 lambda: _ijcnn1(8000), lambda: DCSVC(C=32.0, gamma=2.0, device="gpu", random_state=0)),
    "dcsvc-8k-k4L2": ("DCSVC k=4, L=2, 8,000-row ijcnn1 subset, C=32, gamma=2, random_state=0",
                      lambda: _ijcnn1(8000),
                      lambda: DCSVC(C=32.0, gamma=2.0, n_levels=2, n_clusters_per_level=4, device="gpu",
                                    random_state=0)),
    "dcsvc-8k-mcs250": ("DCSVC k=4, L=4, min_cluster_size=250 (level 2: 16 clusters of ~500, the shape of full "
                        "ijcnn1's level 2 on the H200), 8,000-row ijcnn1 subset, C=32, gamma=2, random_state=0",
                        lambda: _ijcnn1(8000),
                        lambda: DCSVC(C=32.0, gamma=2.0, min_cluster_size=250, device="gpu", random_state=0)),
    "kmeans-8k": ("two_step_kernel_kmeans alone: k=4, sample 1,000, 8,000-row ijcnn1 subset, gamma=2",
                  lambda: _ijcnn1(8000), None),
}


def _model_arrays(est):
    if isinstance(est, dict):
        return est
    out = {}
    for name in ("dual_coef_", "intercept_", "support_"):
        v = getattr(est, name, None)
        if v is not None:
            out[name] = np.asarray(v.get() if hasattr(v, "get") else v)
    for p, models in enumerate(getattr(est, "_level_models", []) or []):  # DC-SVM's local models, per level
        for level, lm in models.items():
            for name in ("sv_index", "sv_coef", "sv_starts", "bias"):
                v = getattr(lm, name)
                out[f"pair{p}/level{level}/{name}"] = np.asarray(v.get() if hasattr(v, "get") else v)
    for j, rec in enumerate(getattr(est, "levels_", []) or []):  # what each level reports
        for name in ("n_sv", "objective", "n_iter", "train_accuracy", "largest_cluster", "kmeans_iter"):
            v = rec.get(name)
            if v is not None:
                out[f"levels_{j}/{name}"] = np.asarray(v)
    return out


def _fit(case, X, y):
    _, _, make = CASES[case]
    if make is None:
        return _kmeans_only(X)
    est = make()
    est.fit(X, y)
    return est


def _top(counter, n):
    by_site = collections.Counter()
    for (name, site), v in counter.items():
        by_site[(site, name)] += v
    return [{"site": s, "what": w, "count": c} for (s, w), c in by_site.most_common(n)]


def run_case(case, top):
    desc, load, _ = CASES[case]
    X, y = load()
    if case.startswith("dcsvc") or case.startswith("kmeans"):
        _fit(case, X[:1500], y[:1500])  # warm-up: compile the kernels
    else:
        _fit(case, X, y)
    C.reset()
    C.on = True
    t0 = time.perf_counter()
    est = _fit(case, X, y)
    wall = time.perf_counter() - t0
    C.on = False
    res = {
        "case": case, "description": desc, "n_train": int(X.shape[0]),
        "host_syncs": sum(C.syncs.values()), "kernel_launches": sum(C.launches.values()),
        "array_ops": sum(C.ops.values()), "h2d_copies": sum(C.h2d.values()),
        "emulator_wall_s": round(wall, 2),
        "syncs_by_kind": dict(collections.Counter({k: 0 for k in ()}) + _by_name(C.syncs)),
        "launches_by_kernel": dict(_by_name(C.launches).most_common()),
        "top_sync_sites": _top(C.syncs, top), "top_launch_sites": _top(C.launches, top),
        "top_op_sites": _top(C.ops, top),
        "top_h2d_sites": [{"site": s, "count": c} for s, c in C.h2d.most_common(top)],
    }
    return res, _model_arrays(est)


def _by_name(counter):
    out = collections.Counter()
    for (name, _), v in counter.items():
        out[name] += v
    return out


def _print(res):
    print(f"== {res['case']}: {res['description']}")
    print(f"   host syncs {res['host_syncs']}, kernel launches {res['kernel_launches']}, array ops "
          f"{res['array_ops']}, h2d copies {res['h2d_copies']} (emulator wall {res['emulator_wall_s']} s)")
    print(f"   syncs by kind: {res['syncs_by_kind']}")
    print(f"   launches by kernel: {res['launches_by_kernel']}")
    for title, key in (("sync", "top_sync_sites"), ("launch", "top_launch_sites"), ("op", "top_op_sites")):
        print(f"   top {title} sites:")
        for r in res[key]:
            print(f"     {r['count']:7d}  {r['what']:<16} {r['site']}")
    print(flush=True)


ASSUMED_SYNC_US = (10, 50)  # an ASSUMPTION for a real GPU, not measured here


def _git(*args):
    import subprocess

    return subprocess.run(["git", *args], capture_output=True, text=True, cwd=ROOT).stdout.strip()


_NOTES = """
## What was cut, and what stays (why)

This run compares the batched SMO before and after its per-round array-op cuts (commits after 417dd23). The
host-sync cuts before that (e77d200 -> b59c1a6: digits 1,540 -> 773 syncs) are in this file's history (commit
204081b). Every model bit-identical under the emulator; the CPU path's alpha, G, b, rounds and local steps too
(digits, a9a 5k CSR, ijcnn1 20k; float32 and float64 rows).

Cut (array ops; digits per class pair about 539 -> 424, the same 13.4 raw-kernel launches and 17 syncs):

* per solve instead of per round: `-y`, `y > 0` (`up_low_masks(pos=)`), `(y, C)` stacked for one gather of
  `y[B]`, `C[B]`, `-arange(q)` for the keep order;
* the round's check: the extremes, the moved count, i_top and j_min in one `stack` without `astype`s (the gap
  subtracted on the host, the same float64 operation); the extremes reused later instead of gathered again;
* the keep order's integer keys formed negated in 3 ops instead of 10; the I_up scores from `s_up` (2 `where`s
  instead of 6 ops); the I_low gains negated directly (-a as 2 K_i - (K_ii + K_jj), bit for bit), which saves
  `_top_k`'s negation; i_top, j_min and i_top's Gram row indexed with host ints (views: no index array copied to
  the device, no gather; h2d copies 946 -> 765 on digits); one `concatenate` for the candidates and their flags;
  no `astype` of argpartition's int64 indices; `full(n, -1.0)` instead of `-ones(n)`;
* K_BB gathered by `be.take_block` (the same CuPy gather on the GPU; a Numba loop on the CPU).

Stays, and why:

* the 2 reads per round (the stop test, the cache's host-side bookkeeping) and the per-solve reads (see the
  previous round's notes in 204081b);
* the rest of a round's ops: the masks, scores and top-k selections over all n variables, the gathers of
  the working set's alpha and G, the update of alpha; fewer would need a fused kernel (not written: no GPU
  here to validate one). Calls that launch nothing on CuPy (`ascontiguousarray` of a contiguous array,
  `diagonal`) are counted but left alone;
* per solve: `centered_for_rbf`, the float32 Gram error measure and the float32 stop's certification (each pair
  is its own problem).

What the counts do not say: how long any of this takes on a GPU; none of these numbers is a GPU time.
"""


def _markdown(meta, before, after, same):
    b = {r["case"]: r for r in before}
    lines = [
        "# GPU fits' fixed costs, COUNTED on the CPU emulator (tests/cudasim): not GPU timings",
        "",
        "Every number below is a count made on the CPU emulator of the GPU path (a stand-in `cupy` over NumPy, CUDA "
        "kernels compiled with g++), by `benchmarks/gpu_fixed_costs.py`; none is a time measured on a GPU. The counts "
        "are what the same code would issue on a GPU with CuPy: device->host reads (syncs), raw-kernel launches, "
        "CuPy array-op calls (each about one CuPy kernel, approximate) and host->device copies. Emulator wall times "
        "in the JSON say nothing about a GPU.",
        "",
        f"Before: commit {meta['before_commit']}; after: commit {meta['after_commit']}. Command: `{meta['command']}`.",
        "",
        f"**Assumption (not measured):** on a real GPU a host sync costs roughly {ASSUMED_SYNC_US[0]}-"
        f"{ASSUMED_SYNC_US[1]} us and a kernel launch or CuPy op roughly 5-10 us. The 'assumed saving' column "
        "multiplies the removed syncs by that range only; it is not a measurement.",
        "",
        "| case | host syncs before | after | kernel launches before | after | array ops before | after | "
        "h2d copies before | after | assumed saving (syncs x 10-50 us) | models identical |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in after:
        r0 = b[r["case"]]
        d = r0["host_syncs"] - r["host_syncs"]
        lo, hi = (d * u / 1000 for u in ASSUMED_SYNC_US)
        lines.append(f"| {r['case']} | {r0['host_syncs']} | {r['host_syncs']} | {r0['kernel_launches']} | "
                     f"{r['kernel_launches']} | {r0['array_ops']} | {r['array_ops']} | {r0['h2d_copies']} | "
                     f"{r['h2d_copies']} | ~{lo:.1f}-{hi:.1f} ms (assumed) | {same.get(r['case'], '-')} |")
    lines += ["", "Cases:", ""]
    lines += [f"* `{r['case']}`: {r['description']} ({r['n_train']} rows)" for r in after]
    for r in after:
        r0 = b[r["case"]]
        lines += ["", f"## {r['case']}", "",
                  f"Syncs by kind, before: {r0['syncs_by_kind']}; after: {r['syncs_by_kind']}.",
                  "", f"Kernel launches by kernel (after): {r['launches_by_kernel']}.", "",
                  "| top sync sites before | count | top sync sites after | count |", "|---|---|---|---|"]
        s0, s1 = r0["top_sync_sites"][:12], r["top_sync_sites"][:12]
        for i in range(max(len(s0), len(s1))):
            a = f"`{s0[i]['what']}` {s0[i]['site']} | {s0[i]['count']}" if i < len(s0) else " | "
            c = f"`{s1[i]['what']}` {s1[i]['site']} | {s1[i]['count']}" if i < len(s1) else " | "
            lines.append(f"| {a} | {c} |")
    return "\n".join(lines) + "\n" + _NOTES


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--save", default=None, help="write every case's model arrays to this .npz")
    ap.add_argument("--compare", default=None, help="compare every case's model arrays with this .npz")
    ap.add_argument("--json", default=None, help="write the counts to this JSON file")
    ap.add_argument("--before", default=None, help="the --json of a run before the changes: with --results, "
                    "write benchmarks/results/<results>.{json,md} comparing the two")
    ap.add_argument("--before-commit", default="?")
    ap.add_argument("--results", default=None, help="stem of the results files (with --before)")
    args = ap.parse_args(argv)
    results, arrays = [], {}
    for case in args.cases.split(","):
        res, arrs = run_case(case, args.top)
        _print(res)
        results.append(res)
        for k, v in arrs.items():
            arrays[f"{case}/{k}"] = v
    if args.save:
        np.savez(args.save, **arrays)
    same = {}
    if args.compare:
        ref = np.load(args.compare)
        for k, v in arrays.items():
            ok = k in ref and ref[k].shape == v.shape and np.array_equal(ref[k], v)
            print(f"compare {k}: {'identical' if ok else 'DIFFERENT'}")
            case = k.split("/")[0]
            same[case] = same.get(case, True) and ok
        same = {c: "yes" if ok else "NO" for c, ok in same.items()}
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    if args.before and args.results:
        before = json.loads(Path(args.before).read_text())
        dirty = " (plus uncommitted changes)" if _git("status", "--porcelain", "--untracked-files=no") else ""
        meta = {"before_commit": args.before_commit, "after_commit": _git("rev-parse", "--short", "HEAD") + dirty,
                "command": "python benchmarks/gpu_fixed_costs.py "
                           + " ".join(argv if argv is not None else sys.argv[1:]),
                "device": "CPU emulator (tests/cudasim), not a GPU", "assumed_sync_us": list(ASSUMED_SYNC_US),
                "models_identical": same,
                "what_identical_means": "dual_coef_, intercept_, support_ (and DC-SVM's local models and level "
                                        "records; k-means labels) equal bit for bit to the before run's"}
        out = ROOT / "benchmarks" / "results" / args.results
        out.with_suffix(".json").write_text(json.dumps({"meta": meta, "before": before, "after": results}, indent=1))
        out.with_suffix(".md").write_text(_markdown(meta, before, results, same))
    return results


if __name__ == "__main__":
    main()

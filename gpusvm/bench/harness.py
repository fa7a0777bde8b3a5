"""The benchmark harness behind ``gpusvm bench``: every registered solver on every device, side by side with
scikit-learn measured in the same run.

For each (data set, solver, device) the harness

1. builds the estimator with ``entry.make(params, device)`` and runs ONE warm-up fit and predict, on the
   whole training set or, when it has more than ``warmup_max`` rows (``warmup_max_gpu`` for GPU rows), on a
   stratified subset of that many rows (same format and dtype, so CUDA kernels get compiled and Numba
   functions JIT-ed); the warm-up is timed and recorded but excluded from the statistics. A subset does
   not run every code path of the full fit: which CuPy kernels and CUDA templates a GPU fit uses depends
   on the problem's size (DC-SVM solves no level on 2,000 rows; its k-means and batched clusters then
   meet their kernels in the timed fit, where compilation or loading from CuPy's cache is paid). Numba's
   functions are cached on disk, so a CPU fit pays a cache load for that (0.1-0.3 s for a DCSVC fit). The paper suite (one timed fit)
   therefore warms GPU rows up on the whole training set (``warmup_max_gpu=0``), and a solver registered
   with ``warmup_full`` (DC-SVM) warms up on the whole set on every device;
2. runs ``repeat`` timed fits, each on a fresh estimator; on the GPU the device is synchronized
   (``be.sync()``) before the clock starts and before it stops, so queued work is counted;
3. times ``predict`` on the test set after each fit (the output is converted to a NumPy array inside the
   timed region, which also synchronizes the GPU);
4. reports min and median of fit and predict times, test accuracy, the objective (dual for kernel
   solvers, primal for linear ones; computed outside the timed region by the entry's ``objective``
   callable), the number of support vectors, the iterations, the warnings raised during fit, peak host
   memory and, on the GPU, peak device memory;
   the process CPU time of each timed fit is recorded too (``fit_cpu_s``: all threads of this process,
   so on a machine shared with other jobs it shows how much of the wall time was this fit's work);
5. computes each row's speed-up against the scikit-learn reference of its family on the same data set
   (``SVC`` for kernel solvers, ``LinearSVC`` for linear ones), measured in the same run.

Memory. Host: peak resident set size (RSS) of this process during each timed fit, sampled every 5 ms by
a background thread with psutil; the row records the peak and the peak minus the RSS just before the fit
(RSS does not shrink when freed memory is kept by the allocator, so the increase is a lower bound of the
fit's footprint). Without psutil the peak is ``resource.getrusage().ru_maxrss``, the process lifetime peak.
Device: the CuPy default memory pool is emptied before each fit; the bytes it holds after the fit are its
high-water mark for the fit (CuPy allocations only: cuBLAS workspaces and the CUDA context are excluded);
``cudaMemGetInfo`` is also sampled by the same thread (all allocations, other processes included).

Repeats stop early when the row's timed fits have taken more than ``row_budget`` seconds in all (at
least one timed fit always runs); ``fit_s`` lists the fits that ran.

Time limit. ``time_limit`` is a soft limit: once a fit (warm-up included) has taken longer than it, the
row's remaining fits are skipped and the row says so (``time_limited``). The first warm-up of a solver on a
device in a process also pays for JIT compilation (Numba functions, CUDA kernels; seconds on a fresh
machine without Numba's on-disk cache), so when that one runs over the limit it is repeated once, and the
second time decides (both are recorded: ``warmup_fit_s`` is the last, ``warmup_fits_s`` all). A running
fit is never interrupted: CPython cannot stop a thread inside native code (LIBSVM, Numba, CUDA) cleanly.

A solver that raises keeps its row with ``status="error"`` and the message; the run goes on.
"""

from __future__ import annotations

import datetime as _dt
import gc
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import suites as _suites
from .objectives import sklearn_linear_objective, sklearn_svc_objective
from .registry import BenchSolver, import_errors, solvers

__all__ = ["Settings", "run", "reference_solvers", "REFERENCE_NAMES", "SCHEMA_VERSION"]

SCHEMA_VERSION = 1

# ---- the scikit-learn references -----------------------------------------------------------------------


def _make_sklearn_svc(params, device):
    from sklearn.svm import SVC

    return SVC(C=params["C"], kernel=params.get("kernel", "rbf"), gamma=params["gamma"],
               tol=params.get("tol", 1e-3), cache_size=params.get("cache_mb", 200))


def _make_sklearn_linearsvc(params, device):
    from sklearn.svm import LinearSVC

    # dual=True: LIBLINEAR's dual coordinate descent (Hsieh et al., 2008), its default solver for the
    # L2-regularized L2-loss SVM; bias regularized as an extra feature (intercept_scaling=1).
    return LinearSVC(C=params["C"], loss=params.get("loss", "squared_hinge"), dual=True,
                     tol=params.get("tol", 1e-4), max_iter=params.get("max_iter", 5000))


REFERENCE_NAMES = {"kernel": "sklearn-svc", "linear": "sklearn-linearsvc"}


def reference_solvers() -> dict[str, BenchSolver]:
    """The scikit-learn references (CPU only), one per solver family."""
    return {
        "sklearn-svc": BenchSolver("sklearn-svc", "kernel", _make_sklearn_svc, ("cpu",),
                                   objective=sklearn_svc_objective),
        "sklearn-linearsvc": BenchSolver("sklearn-linearsvc", "linear", _make_sklearn_linearsvc, ("cpu",),
                                         objective=sklearn_linear_objective),
    }


# ---- settings ---------------------------------------------------------------------------------------------
@dataclass
class Settings:
    """What one benchmark run does; ``None`` fields take the suite's defaults (``suites.SUITE_DEFAULTS``)."""

    suite: str = "default"
    data_dir: str | None = None
    devices: tuple[str, ...] = ("cpu", "gpu")
    solvers: tuple[str, ...] | None = None  # None: every registered solver
    datasets: tuple[str, ...] | None = None  # None: every data set of the suite
    repeat: int | None = None
    out: str | None = "bench-out"
    max_train: int | None = None
    max_test: int | None = None
    time_limit: float | None = None  # seconds; <= 0 disables
    row_budget: float | None = None  # seconds of timed fits per row before repeats stop; <= 0 disables
    warmup_max: int | None = None
    warmup_max_gpu: int | None = None  # the same for GPU rows; 0: the whole training set
    reference: bool = True
    device_inputs: bool = False  # GPU rows get CuPy inputs (transfer not timed) instead of host arrays
    plots: bool = True
    seed: int = 0
    note: str = ""
    extra: dict = field(default_factory=dict)

    def resolved(self) -> "Settings":
        d = _suites.SUITE_DEFAULTS.get(self.suite, {})
        s = Settings(**self.__dict__)
        for name in ("devices", "solvers", "datasets"):  # a str (Python API) was split into its characters
            if isinstance(getattr(s, name), str):
                setattr(s, name, tuple(v.strip() for v in getattr(s, name).split(",") if v.strip()))
        s.devices = tuple(dict.fromkeys(s.devices))  # "cpu,cpu" ran (and timed) every row twice
        if s.solvers is not None:
            s.solvers = tuple(dict.fromkeys(s.solvers))
        for name, what in (("solvers", "solver"), ("datasets", "data set")):
            # "--datasets ," ran nothing, exited 1 without a word and wrote its empty outputs under the
            # whole suite's file names (an empty selection adds no subset to the name)
            if getattr(s, name) is not None and not len(getattr(s, name)):
                raise ValueError(f"The {name!r} parameter must name at least one {what} (leave it out for all). "
                                 f"Got {getattr(s, name)!r} instead.")
        if s.repeat is None:
            s.repeat = d.get("repeat", 1)
        if s.time_limit is None:
            s.time_limit = d.get("time_limit")
        if s.time_limit is not None and s.time_limit <= 0:
            s.time_limit = None
        if s.row_budget is None:
            s.row_budget = d.get("row_budget")
        if s.row_budget is not None and s.row_budget <= 0:
            s.row_budget = None
        if s.warmup_max is None:
            s.warmup_max = d.get("warmup_max", 2000)
        if s.warmup_max_gpu is None:
            s.warmup_max_gpu = d.get("warmup_max_gpu", s.warmup_max)
        if s.warmup_max_gpu < 0:
            raise ValueError(f"The 'warmup_max_gpu' parameter must be an int in the range [0, inf) (0: the whole "
                             f"training set). Got {s.warmup_max_gpu!r} instead.")
        if s.repeat < 1:
            raise ValueError(f"The 'repeat' parameter must be an int in the range [1, inf). Got {s.repeat!r} instead.")
        if s.data_dir is not None and not Path(s.data_dir).is_dir():
            # a mistyped folder was ignored by the suites that read no files, and made the paper suite skip
            # every data set as "not found" (exit 1, after probing the devices and writing empty outputs)
            raise ValueError(f"The 'data_dir' parameter must name an existing folder. Got {s.data_dir!r} instead.")
        if not 0 <= s.seed < 2**32:  # else every data set failed to load (train_test_split, default_rng), exit 1
            raise ValueError(f"The 'seed' parameter must be an int in the range [0, 4294967295]. "
                             f"Got {s.seed!r} instead.")
        for name in ("max_train", "max_test", "warmup_max"):  # else every row failed later, and exit 0
            v = getattr(s, name)
            if v is not None and v < 1:
                raise ValueError(f"The {name!r} parameter must be an int in the range [1, inf). Got {v!r} instead.")
        return s


# ---- machine description ------------------------------------------------------------------------------------
def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _git_commit() -> dict:
    root = Path(__file__).resolve().parents[2]
    out = {"commit": None, "dirty": None}
    try:
        out["commit"] = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                                       text=True, timeout=10).stdout.strip() or None
        if out["commit"]:
            st = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=10).stdout
            out["dirty"] = bool(st.strip())
    except Exception:
        pass
    return out


def _versions() -> dict:
    import importlib.metadata as md

    v = {"python": platform.python_version()}
    for pkg in ("gpusvm", "numpy", "scipy", "scikit-learn", "numba", "psutil", "matplotlib"):
        try:
            v[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            v[pkg] = None
    if v["gpusvm"] is None:
        from .. import __version__

        v["gpusvm"] = __version__ + " (source tree)"
    if "cupy" in sys.modules:
        cp = sys.modules["cupy"]
        v["cupy"] = getattr(cp, "__version__", None)
        try:
            v["cuda_runtime"] = cp.cuda.runtime.runtimeGetVersion()
            v["cuda_driver"] = cp.cuda.runtime.driverGetVersion()
        except Exception:
            pass
    return v


def machine_info(gpu_usable: bool) -> dict:
    info = {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "hostname": platform.node(),
        "memory_bytes": None,
        "gpu": None,
    }
    try:
        import psutil

        info["memory_bytes"] = int(psutil.virtual_memory().total)
    except Exception:
        pass
    if gpu_usable:
        try:
            from .._backend import get_backend

            be = get_backend("gpu")
            free, total = be.memory_info()
            info["gpu"] = {"name": be.device_name, "memory_bytes": int(total), "device_id": be.device_id}
        except Exception as exc:
            info["gpu"] = {"error": f"{type(exc).__name__}: {exc}"}
    return info


# ---- memory sampling ---------------------------------------------------------------------------------------
class _PeakSampler:
    """Samples process RSS (psutil) and, optionally, device memory in use every ``interval`` seconds."""

    def __init__(self, gpu_id=None, interval=0.005):
        self.interval = interval
        self.gpu_id = gpu_id
        self.method = None
        self._proc = None
        try:
            import psutil

            self._proc = psutil.Process()
            self.method = "psutil RSS sampled every 5 ms during fit"
        except Exception:
            self.method = "resource.getrusage ru_maxrss (process lifetime peak)"
        self.base_rss = self.peak_rss = None
        self.base_dev = self.peak_dev = None
        self._stop = threading.Event()
        self._thread = None

    def _rss(self):
        return self._proc.memory_info().rss if self._proc is not None else None

    def _dev_used(self):
        import cupy as cp

        free, total = cp.cuda.runtime.memGetInfo()
        return total - free

    def _loop(self):
        if self.gpu_id is not None:
            try:
                import cupy as cp

                cp.cuda.runtime.setDevice(self.gpu_id)
            except Exception:
                self.gpu_id = None
        while not self._stop.wait(self.interval):
            self._sample()

    def _sample(self):
        r = self._rss()
        if r is not None and r > self.peak_rss:
            self.peak_rss = r
        if self.gpu_id is not None:
            try:
                u = self._dev_used()
                if self.peak_dev is None or u > self.peak_dev:
                    self.peak_dev = u
            except Exception:
                pass

    def __enter__(self):
        self.base_rss = self.peak_rss = self._rss()
        if self.gpu_id is not None:
            try:
                self.base_dev = self.peak_dev = self._dev_used()
            except Exception:
                self.gpu_id = None
        if self._proc is not None or self.gpu_id is not None:
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._proc is not None:
            self._sample()
        else:
            import resource

            kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            self.peak_rss = kb * 1024 if sys.platform != "darwin" else kb
        return False


# ---- one row -------------------------------------------------------------------------------------------------
def _to_numpy(a):
    if hasattr(a, "get") and type(a).__module__.startswith(("cupy", "cupyx")):
        return a.get()
    return np.asarray(a)


def _n_sv(est):
    sup = getattr(est, "support_", None)
    if sup is not None:
        try:
            return int(len(sup))
        except TypeError:
            pass
    ns = getattr(est, "n_support_", None)
    if ns is not None:
        try:
            return int(_to_numpy(ns).sum())
        except Exception:
            pass
    return None


def _n_iter(est):
    it = getattr(est, "n_iter_", None)
    if it is None:
        return None
    try:
        a = _to_numpy(it)
        return int(a) if a.ndim == 0 else [int(v) for v in a.ravel()]
    except Exception:
        return None


class _Row(dict):
    pass


def _params_comparable(a: dict, b: dict) -> bool:
    keys = ("C", "gamma", "kernel", "loss")
    return all(a.get(k) == b.get(k) for k in keys)


class Harness:
    """Runs the rows of one benchmark; use :func:`run`."""

    def __init__(self, settings: Settings, log=None):
        self.s = settings.resolved()
        self.log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self._warmed: set[tuple[str, str]] = set()  # (solver, device) pairs whose JIT work is done

    # devices ---------------------------------------------------------------------------------------------
    def device_status(self) -> list[dict]:
        from .._backend import gpu_status

        out = []
        for d in self.s.devices:
            if d == "cpu":
                out.append({"name": "cpu", "usable": True, "reason": ""})
            elif d == "gpu":
                ok, why = gpu_status(0)
                out.append({"name": "gpu", "usable": bool(ok), "reason": why})
            else:
                raise ValueError(f"The 'devices' parameter must list 'cpu' and/or 'gpu'. Got {d!r} instead.")
        return out

    # solvers ---------------------------------------------------------------------------------------------
    def select_solvers(self) -> tuple[list[BenchSolver], list[str]]:
        registered = solvers()
        refs = reference_solvers()
        everything = {**registered, **refs}
        if self.s.solvers is None:
            chosen, explicit_refs = list(registered.values()), set()
        else:
            unknown = [n for n in self.s.solvers if n not in everything]
            if unknown:
                raise ValueError(f"The 'solvers' parameter must name registered solvers {sorted(everything)}. "
                                 f"Got unknown {unknown} instead.")
            chosen = [everything[n] for n in self.s.solvers if n not in refs]
            explicit_refs = {n for n in self.s.solvers if n in refs}
        families = {e.family for e in chosen}
        # A reference runs when named, or (reference=True) for every family among the chosen solvers;
        # with no solver filter both references run, so a fresh install still has rows to show.
        ref_list = [refs[r] for fam, r in REFERENCE_NAMES.items()
                    if r in explicit_refs or (self.s.reference and (fam in families or self.s.solvers is None))]
        return ref_list + chosen, [r.name for r in ref_list]

    # one (data set, solver, device) -------------------------------------------------------------------------
    def run_row(self, data: _suites.BenchData, entry: BenchSolver, device: str, is_ref: bool, tag: str) -> dict:
        s = self.s
        fam_params = data.params.get(entry.family)
        params = {**fam_params, **dict(entry.params)}
        row = _Row(
            dataset=data.name, solver=entry.name, family=entry.family, device=device, reference=is_ref,
            exact=bool(entry.exact), status="ok", error=None, params=params,
            n_train=int(data.X_train.shape[0]), n_test=int(data.X_test.shape[0]),
            inputs="device" if (device == "gpu" and s.device_inputs) else "host",
            warmup_n=None, warmup_fit_s=None, warmup_fits_s=[], fit_s=[], fit_cpu_s=[], predict_s=[], fit_min_s=None, fit_median_s=None,
            predict_min_s=None, predict_median_s=None, time_limited=False, accuracy=None,
            objective=None, objective_kind="dual" if entry.family == "kernel" else "primal",
            objective_error=None, reference_objective=None, objective_rel_diff=None,
            n_sv=None, n_iter=None, warnings=[], host_peak_bytes=None, host_peak_increase_bytes=None,
            host_mem_method=None, device_pool_peak_bytes=None, device_used_peak_increase_bytes=None,
            device_mem_method=None, speedup_fit=None, speedup_predict=None,
        )
        be = None
        gpu_id = None
        try:
            from .._backend import get_backend

            be = get_backend(device)
            if device == "gpu":
                gpu_id = be.device_id
            Xtr, ytr, Xte, yte = data.X_train, data.y_train, data.X_test, data.y_test
            if row["inputs"] == "device":
                Xtr_in, ytr_in, Xte_in = be.asarray(Xtr), be.asarray(ytr), be.asarray(Xte)
            else:
                Xtr_in, ytr_in, Xte_in = Xtr, ytr, Xte

            # 1. warm-up (compilation, JIT, caches), on a stratified subset for large sets
            Xw, yw = Xtr, ytr
            cap = None if entry.warmup_full else (s.warmup_max_gpu if device == "gpu" else s.warmup_max)
            if cap and Xtr.shape[0] > cap:
                Xw, yw = _suites.stratified_subset(Xtr, ytr, cap, s.seed)
            if row["inputs"] == "device":
                Xw, yw = be.asarray(Xw), be.asarray(yw)
            row["warmup_n"] = int(Xw.shape[0])
            self.log(f"{tag} warm-up fit on {row['warmup_n']} rows")
            row["warmup_fits_s"] = []
            first_here = (entry.name, device) not in self._warmed
            self._warmed.add((entry.name, device))
            for attempt in range(2):
                est = entry.make(dict(params), device)
                be.sync()
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est.fit(Xw, yw)
                    _to_numpy(est.predict(Xte_in[: min(1000, Xte.shape[0])]))
                be.sync()
                row["warmup_fits_s"].append(time.perf_counter() - t0)
                row["warmup_fit_s"] = row["warmup_fits_s"][-1]
                del est
                if not (first_here and attempt == 0 and s.time_limit is not None
                        and row["warmup_fit_s"] > s.time_limit):
                    break
                self.log(f"{tag} first warm-up took {row['warmup_fit_s']:.1f} s (JIT compilation included); "
                         "repeating it once")
            if s.time_limit is not None and row["warmup_fit_s"] > s.time_limit:
                row["time_limited"] = True
                row["status"] = "time-limit"
                row["error"] = (f"warm-up fit took {row['warmup_fit_s']:.3g} s > time limit {s.time_limit:g} s; "
                                "no timed fits")
                self.log(f"{tag} {row['error']}")
                return row

            # 2./3. timed fits and predicts
            caught: list[str] = []
            host_peak = host_inc = dev_pool = dev_inc = None
            est = None
            for r in range(s.repeat):
                est = None
                gc.collect()
                pool = None
                if device == "gpu":
                    import cupy as cp

                    pool = cp.get_default_memory_pool()
                    be.sync()
                    pool.free_all_blocks()
                    pool_base = pool.total_bytes()
                est = entry.make(dict(params), device)
                with _PeakSampler(gpu_id) as mem:
                    with warnings.catch_warnings(record=True) as wlist:
                        warnings.simplefilter("always")
                        be.sync()
                        t0, c0 = time.perf_counter(), time.process_time()
                        est.fit(Xtr_in, ytr_in)
                        be.sync()
                        t_fit = time.perf_counter() - t0
                        c_fit = time.process_time() - c0
                for w in wlist:
                    msg = f"{w.category.__name__}: {w.message}"
                    if msg not in caught:
                        caught.append(msg)
                row["host_mem_method"] = mem.method
                if mem.peak_rss is not None:
                    host_peak = max(host_peak or 0, mem.peak_rss)
                    if mem.base_rss is not None and row["host_mem_method"].startswith("psutil"):
                        host_inc = max(host_inc or 0, mem.peak_rss - mem.base_rss)
                if pool is not None:
                    be.sync()
                    dev_pool = max(dev_pool or 0, pool.total_bytes() - pool_base)
                    if mem.peak_dev is not None and mem.base_dev is not None:
                        dev_inc = max(dev_inc or 0, mem.peak_dev - mem.base_dev)
                t0 = time.perf_counter()
                pred = _to_numpy(est.predict(Xte_in))
                be.sync()
                t_pred = time.perf_counter() - t0
                row["fit_s"].append(t_fit)
                row["fit_cpu_s"].append(c_fit)
                row["predict_s"].append(t_pred)
                self.log(f"{tag} fit {r + 1}/{s.repeat}: {t_fit:.3f} s, predict {t_pred:.3f} s")
                if r + 1 < s.repeat:
                    if s.time_limit is not None and t_fit > s.time_limit:
                        row["time_limited"] = True
                        self.log(f"{tag} fit took {t_fit:.3g} s > time limit {s.time_limit:g} s; "
                                 f"skipping the remaining {s.repeat - r - 1} repeat(s)")
                        break
                    if s.row_budget is not None and sum(row["fit_s"]) > s.row_budget:
                        self.log(f"{tag} timed fits took {sum(row['fit_s']):.1f} s > row budget "
                                 f"{s.row_budget:g} s; {r + 1} of {s.repeat} repeat(s) done")
                        break
            row["fit_min_s"] = min(row["fit_s"])
            row["fit_median_s"] = statistics.median(row["fit_s"])
            row["predict_min_s"] = min(row["predict_s"])
            row["predict_median_s"] = statistics.median(row["predict_s"])
            row["accuracy"] = float(np.mean(pred.ravel() == np.asarray(yte).ravel()))
            row["warnings"] = caught[:10]
            row["host_peak_bytes"] = host_peak
            row["host_peak_increase_bytes"] = host_inc
            if device == "gpu":
                row["device_pool_peak_bytes"] = dev_pool
                row["device_used_peak_increase_bytes"] = dev_inc
                row["device_mem_method"] = ("CuPy default pool bytes held after fit (pool emptied before); "
                                            "cudaMemGetInfo used-memory increase sampled every 5 ms")
            row["n_sv"] = _n_sv(est)
            row["n_iter"] = _n_iter(est)
            if entry.objective is not None:
                try:
                    row["objective"] = float(entry.objective(est, Xtr, ytr))
                except Exception as exc:
                    row["objective_error"] = f"{type(exc).__name__}: {exc}"
        except Exception as exc:
            row["status"] = "error"
            row["error"] = f"{type(exc).__name__}: {exc}"
            row["traceback"] = traceback.format_exc(limit=8)
            self.log(f"{tag} FAILED: {row['error']}")
        return row

    # everything ----------------------------------------------------------------------------------------------
    def run(self, on_row=None) -> dict:
        """Run every row; ``on_row(doc)`` is called after each row with the document so far
        (``doc["complete"]`` is False until the end), so a run that is killed still leaves its rows."""
        s = self.s
        specs = _suites.suite(s.suite)
        if s.datasets is not None:
            names = [d.name for d in specs]
            unknown = [d for d in s.datasets if d not in names]
            if unknown:
                raise ValueError(f"The 'datasets' parameter must name data sets of suite {s.suite!r} {names}. "
                                 f"Got unknown {unknown} instead.")
            specs = [d for d in specs if d.name in s.datasets]
        devs = self.device_status()
        usable = [d["name"] for d in devs if d["usable"]]
        for d in devs:
            if not d["usable"]:
                self.log(f"device {d['name']}: skipped ({d['reason']})")
        entries, ref_names = self.select_solvers()
        started = _dt.datetime.now(_dt.timezone.utc)
        t_start = time.perf_counter()
        doc = {
            "schema_version": SCHEMA_VERSION,
            "created": started.isoformat(timespec="seconds"),
            "command": _command_line(),
            "suite": s.suite,
            "settings": {
                "devices": list(s.devices), "solvers": [e.name for e in entries],
                "datasets": [d.name for d in specs], "repeat": s.repeat, "max_train": s.max_train,
                "max_test": s.max_test, "time_limit_s": s.time_limit, "time_limit_kind": "soft (between fits)",
                "row_budget_s": s.row_budget,
                # names the output files when only some data sets ran (bench_paper-a9a_cpu-gpu.json)
                "subset_label": "-".join(d.name for d in specs) if s.datasets is not None else None,
                "warmup_max": s.warmup_max, "warmup_max_gpu": s.warmup_max_gpu, "seed": s.seed, "reference": bool(ref_names),
                "inputs": "device arrays for GPU rows" if s.device_inputs else "host arrays (NumPy / SciPy CSR)",
                "data_dir": str(s.data_dir) if s.data_dir else None, "note": s.note, **s.extra,
            },
            "machine": machine_info("gpu" in usable),
            "versions": None,
            "git": _git_commit(),
            "devices": devs,
            "entry_import_errors": import_errors(),
            "complete": False,
            "datasets": [],
            "rows": [],
        }
        rows = doc["rows"]
        n_rows = 0
        for spec in specs:
            self.log(f"== {spec.name}: loading")
            try:
                data = _suites.load(spec, s.data_dir, s.seed, s.max_train, s.max_test)
            except Exception as exc:
                self.log(f"== {spec.name}: cannot load ({type(exc).__name__}: {exc}); skipped")
                doc["datasets"].append({"name": spec.name, "error": f"{type(exc).__name__}: {exc}"})
                continue
            desc = data.describe()
            doc["datasets"].append(desc)
            self.log(f"== {spec.name}: {desc['n_train']} train / {desc['n_test']} test, "
                     f"{desc['n_features']} features ({desc['format']}), {desc['n_classes']} classes")
            plan = []
            for entry in entries:
                if entry.family not in data.params:
                    continue
                if entry.datasets is not None and spec.name not in entry.datasets:
                    continue
                if entry.name in ref_names:
                    # references run on the CPU even when only "gpu" was asked for: speed-ups need them
                    plan.append((entry, "cpu"))
                    continue
                for dev in usable:
                    if dev in entry.devices:
                        plan.append((entry, dev))
            if not plan:  # else a run of only such pairs printed an empty table and exited 1 without a reason
                self.log(f"== {spec.name}: none of the selected solvers runs on it (it has {'/'.join(data.params)} "
                         f"parameters; usable devices: {','.join(usable) or 'none'})")
            for i, (entry, dev) in enumerate(plan):
                n_rows += 1
                tag = f"[{spec.name} {i + 1}/{len(plan)}] {entry.name} on {dev}:"
                rows.append(self.run_row(data, entry, dev, entry.name in ref_names, tag))
                gc.collect()
                if on_row is not None:
                    _speedups(rows)
                    doc["versions"] = _versions()
                    doc["elapsed_s"] = time.perf_counter() - t_start
                    try:
                        on_row(doc)
                    except Exception as exc:  # a failed checkpoint must not stop the benchmark
                        self.log(f"checkpoint failed: {type(exc).__name__}: {exc}")
        _speedups(rows)
        doc["versions"] = _versions()
        doc["elapsed_s"] = time.perf_counter() - t_start
        doc["complete"] = True
        return doc


def _command_line() -> str:
    if not sys.argv:
        return ""
    prog = Path(sys.argv[0]).name
    if prog == "__main__.py":  # python -m gpusvm
        prog = "python -m gpusvm"
    return " ".join([prog, *sys.argv[1:]])


def _speedups(rows: list[dict]) -> None:
    """Fill speed-ups (reference time / row time, min over repeats) and objective differences in place."""
    refs = {(r["dataset"], r["family"]): r for r in rows if r["reference"] and r["status"] != "error"}
    for r in rows:
        ref = refs.get((r["dataset"], r["family"]))
        if ref is None or r["fit_min_s"] is None or ref["fit_min_s"] is None:
            continue
        r["speedup_fit"] = ref["fit_min_s"] / r["fit_min_s"] if r["fit_min_s"] > 0 else None
        if r["predict_min_s"] and ref["predict_min_s"]:
            r["speedup_predict"] = ref["predict_min_s"] / r["predict_min_s"]
        if ref["objective"] is not None and _params_comparable(r["params"], ref["params"]):
            r["reference_objective"] = ref["objective"]
            if r["objective"] is not None:
                r["objective_rel_diff"] = (r["objective"] - ref["objective"]) / max(abs(ref["objective"]), 1e-300)


def run(settings: Settings | None = None, log=None, **kwargs) -> dict:
    """Run a benchmark and write its outputs; returns the result document (the JSON content).

    ``settings`` (or keyword arguments for :class:`Settings`) say what to run; see ``gpusvm bench --help``.
    With ``settings.out`` set, the console table, JSON, Markdown and (matplotlib permitting) PNG plots are
    written there.
    """
    from . import report

    settings = settings or Settings(**kwargs)
    h = Harness(settings, log=log)
    if h.s.out:  # an --out that names a file failed only when the last outputs were written, after every row
        Path(h.s.out).mkdir(parents=True, exist_ok=True)

    def checkpoint(doc):  # JSON / Markdown / table after each row; plots at the end
        report.write_all(doc, h.s.out, plots=False, log=lambda m: None, print_table=False)

    doc = h.run(on_row=checkpoint if h.s.out else None)
    if h.s.out:
        doc["outputs"] = report.write_all(doc, h.s.out, plots=h.s.plots, log=h.log)
    return doc

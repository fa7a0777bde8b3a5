"""The benchmark harness (``gpusvm bench``): outputs' structure, plausible rows, failures kept in their row,
and the objectives it reports (checked against independent computations)."""

from __future__ import annotations

import json
import sys
import time

import numpy as np
import pytest

from gpusvm.__main__ import main
from gpusvm.bench import harness, registry
from gpusvm.bench.objectives import (
    linear_primal_objective,
    sklearn_linear_objective,
    sklearn_svc_objective,
)
from gpusvm.bench.registry import BenchSolver


# ---- test-only solvers -------------------------------------------------------------------------------------
def _tight_svc(params, device):
    from sklearn.svm import SVC

    return SVC(C=params["C"], gamma=params["gamma"], kernel=params["kernel"], tol=1e-5)


class _Broken:
    def fit(self, X, y):
        raise RuntimeError("deliberately broken solver")


class _Slow:
    def __init__(self):
        from sklearn.dummy import DummyClassifier

        self._m = DummyClassifier()

    def fit(self, X, y):
        time.sleep(0.3)
        self._m.fit(X, y)
        return self

    def predict(self, X):
        return self._m.predict(X)


class _SlowFirstFit(_Slow):
    """Slow only on the first fit in the process, as a solver whose first fit JIT-compiles."""

    compiled = False

    def fit(self, X, y):
        if not _SlowFirstFit.compiled:
            _SlowFirstFit.compiled = True
            time.sleep(0.3)
        self._m.fit(X, y)
        return self


@pytest.fixture
def test_solvers(monkeypatch):
    extra = [
        BenchSolver("test-tight-svc", "kernel", _tight_svc, ("cpu",), objective=sklearn_svc_objective),
        BenchSolver("test-broken", "kernel", lambda p, d: _Broken(), ("cpu", "gpu")),
        BenchSolver("test-slow", "kernel", lambda p, d: _Slow(), ("cpu",), exact=False),
        BenchSolver("test-jit", "kernel", lambda p, d: _SlowFirstFit(), ("cpu",), exact=False),
    ]
    _SlowFirstFit.compiled = False
    for e in extra:
        monkeypatch.setitem(registry._REGISTRY, e.name, e)
    return [e.name for e in extra]


def _run(tmp_path, **kw):
    logs = []
    kw.setdefault("suite", "tiny")
    kw.setdefault("devices", ("cpu",))
    kw.setdefault("out", str(tmp_path / "out"))
    doc = harness.run(harness.Settings(**kw), log=logs.append)
    return doc, logs


# ---- the harness end to end on the tiny suite --------------------------------------------------------------
def test_tiny_suite_outputs(tmp_path, test_solvers, capsys):
    doc, logs = _run(tmp_path, solvers=("sklearn-svc", "sklearn-linearsvc", "test-tight-svc", "test-broken"),
                     repeat=2, devices=("cpu", "gpu"))
    out = tmp_path / "out"
    stem = "bench_tiny_cpu"
    for suffix in (".json", ".md", ".txt", "_fit_time.png", "_speedup.png"):
        assert (out / f"{stem}{suffix}").is_file(), suffix
    assert (out / f"{stem}_fit_time.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # the JSON is the returned document, with the documented top-level keys
    saved = json.loads((out / f"{stem}.json").read_text())
    for key in ("schema_version", "created", "command", "suite", "settings", "machine", "versions", "git",
                "devices", "datasets", "rows", "outputs", "elapsed_s"):
        assert key in saved, key
    assert saved["schema_version"] == harness.SCHEMA_VERSION
    assert saved["machine"]["cpu_count"] >= 1 and saved["machine"]["cpu_model"]
    assert saved["versions"]["numpy"] == np.__version__
    gpu = [d for d in saved["devices"] if d["name"] == "gpu"][0]
    assert gpu["usable"] or gpu["reason"]  # an unusable GPU is listed with the reason

    rows = saved["rows"]
    names = {(r["dataset"], r["solver"]) for r in rows}
    # linear family only where the suite gives linear parameters (not on the chess-board)
    assert ("breast_cancer", "sklearn-linearsvc") in names and ("chess-600", "sklearn-linearsvc") not in names
    for ds in ("breast_cancer", "chess-600"):
        for s in ("sklearn-svc", "test-tight-svc", "test-broken"):
            assert (ds, s) in names
    majority = {d["name"]: d["majority_rate_test"] for d in saved["datasets"]}
    for r in rows:
        if r["solver"] == "test-broken":
            # the failure is recorded in its row and the run went on
            assert r["status"] == "error" and "deliberately broken" in r["error"]
            continue
        assert r["status"] == "ok", r
        assert r["device"] == "cpu"
        assert len(r["fit_s"]) == 2 and r["fit_min_s"] <= r["fit_median_s"]
        assert r["warmup_n"] == r["n_train"] and r["warmup_fit_s"] > 0
        assert r["accuracy"] > majority[r["dataset"]] + 0.05, r  # not a constant predictor
        assert r["objective"] is not None and np.isfinite(r["objective"])
        assert r["host_mem_method"]
        assert r["speedup_fit"] is not None and r["speedup_fit"] > 0
        if r["reference"]:
            assert r["speedup_fit"] == pytest.approx(1.0)
        if r["family"] == "kernel":
            assert r["n_sv"] > 0 and r["objective_kind"] == "dual"
    # a tighter tolerance solves the same dual: objective reported, compared and close to LIBSVM's
    tight = [r for r in rows if r["solver"] == "test-tight-svc"]
    for r in tight:
        assert r["reference_objective"] is not None
        assert abs(r["objective_rel_diff"]) < 1e-3
        assert r["objective"] >= r["reference_objective"] * (1 - 1e-6)  # tighter tol: dual no lower

    md = (out / f"{stem}.md").read_text()
    assert "| data set | solver | device |" in md and "deliberately broken" in md
    printed = capsys.readouterr().out
    assert "sklearn-svc" in printed and "speed-up" in printed
    assert any("warm-up" in m for m in logs) and any("FAILED" in m for m in logs)


def test_time_limit_and_caps(tmp_path, test_solvers):
    doc, _ = _run(tmp_path, solvers=("test-slow",), datasets=("chess-600",), time_limit=0.1,
                  max_train=200, max_test=100, plots=False, reference=False)
    (ds,) = doc["datasets"]
    assert ds["n_train"] == 200 and ds["train_subsampled_from"] == 600
    assert ds["n_test"] == 100 and ds["test_subsampled_from"] == 400
    (row,) = doc["rows"]
    assert row["status"] == "time-limit" and row["time_limited"] and row["fit_s"] == []
    assert len(row["warmup_fits_s"]) == 2  # the first warm-up over the limit is repeated once, then decides
    assert doc["settings"]["time_limit_s"] == 0.1 and doc["settings"]["max_train"] == 200
    assert not list((tmp_path / "out").glob("*.png"))


def test_first_warmup_over_limit_is_repeated(tmp_path, test_solvers):
    # A solver whose first fit in the process compiles (Numba/CUDA on a fresh machine) and runs over the
    # time limit still gets timed fits when its second warm-up is within the limit; on a second data set the
    # warm-up is not repeated.
    doc, logs = _run(tmp_path, solvers=("test-jit",), datasets=("chess-600", "breast_cancer"), time_limit=0.2,
                     repeat=2, plots=False, reference=False)
    first, second = doc["rows"]
    assert first["status"] == "ok" and not first["time_limited"] and len(first["fit_s"]) == 2
    assert len(first["fit_cpu_s"]) == 2 and all(c >= 0 for c in first["fit_cpu_s"])
    assert len(first["warmup_fits_s"]) == 2 and first["warmup_fits_s"][0] > 0.2 > first["warmup_fit_s"]
    assert second["status"] == "ok" and len(second["warmup_fits_s"]) == 1
    assert any("repeating it once" in m for m in logs)


def test_broken_entry_module_does_not_stop_registry(tmp_path, monkeypatch):
    import gpusvm.bench as bench

    (tmp_path / "entry_zz_broken_for_test.py").write_text("raise ImportError('missing dependency xyz')\n")
    monkeypatch.setattr(bench, "__path__", [*bench.__path__, str(tmp_path)])
    monkeypatch.delitem(sys.modules, "gpusvm.bench.entry_zz_broken_for_test", raising=False)
    with pytest.warns(RuntimeWarning, match="missing dependency xyz"):
        found = registry.solvers()
    assert "gpusvm.bench.entry_zz_broken_for_test" in registry.import_errors()
    assert all(isinstance(v, BenchSolver) for v in found.values())
    monkeypatch.delitem(registry._IMPORT_ERRORS, "gpusvm.bench.entry_zz_broken_for_test")


# ---- the command line -----------------------------------------------------------------------------------------
def test_references_run_on_cpu_when_only_gpu_is_asked(tmp_path):
    doc, _ = _run(tmp_path, solvers=("sklearn-svc",), datasets=("chess-600",), devices=("gpu",), plots=False)
    assert [(r["solver"], r["device"], r["status"]) for r in doc["rows"]][0] == ("sklearn-svc", "cpu", "ok")


def test_cli_bench(tmp_path, capsys):
    rc = main(["bench", "--suite", "tiny", "--solvers", "sklearn-svc", "--datasets", "chess-600", "--devices",
               "cpu", "--out", str(tmp_path), "--no-plots", "--note", "shared test machine"])
    assert rc == 0
    assert "chess-600" in capsys.readouterr().out
    first = tmp_path / "bench_tiny-chess-600_cpu.json"  # a data-set subset is named in the file name
    doc = json.loads(first.read_text())
    assert [r["solver"] for r in doc["rows"]] == ["sklearn-svc"]
    assert doc["settings"]["note"] == "shared test machine" and doc["complete"] is True

    # merging runs (e.g. the paper suite one data set at a time) into one set of outputs
    assert main(["bench", "--suite", "tiny", "--solvers", "sklearn-svc", "--datasets", "breast_cancer",
                 "--devices", "cpu", "--out", str(tmp_path), "--no-plots"]) == 0
    second = tmp_path / "bench_tiny-breast_cancer_cpu.json"
    assert main(["report", str(first), str(second), "--out", str(tmp_path / "merged"), "--no-plots"]) == 0
    merged = json.loads((tmp_path / "merged" / "bench_tiny_cpu.json").read_text())
    assert [r["dataset"] for r in merged["rows"]] == ["chess-600", "breast_cancer"]
    assert len(merged["merged_from"]) == 2 and merged["complete"] is True
    # the merged report said only the first run's settings ("note: shared test machine" for both runs)
    assert merged["settings_per_run"] == {"note": ["shared test machine", ""]}
    md = (tmp_path / "merged" / "bench_tiny_cpu.md").read_text()
    assert ("differ between the 2 merged runs (the lines above are the first run's): "
            "note: 'shared test machine' / ''") in md
    assert "- note: shared test machine" not in md


@pytest.mark.parametrize("args, message", [
    (["--datasets", "nope"], "'datasets' parameter"),
    (["--solvers", "nope"], "'solvers' parameter"),
    (["--devices", "tpu"], "'devices' parameter"),
    (["--warmup-max", "0"], "'warmup_max' parameter"),  # every row failed, exit 0
    (["--warmup-max-gpu", "-1"], "'warmup_max_gpu' parameter"),
    (["--max-train", "0"], "'max_train' parameter"),  # no data set loaded
    (["--max-test", "-1"], "'max_test' parameter"),
    (["--data-dir", "/nonexistent"], "'data_dir' parameter"),  # the tiny suite reads no files: ignored
    (["--seed", "-1"], "'seed' parameter"),  # every data set failed to load, after the device probe (exit 1)
    (["--seed", str(2**32)], "'seed' parameter"),
    (["--datasets", ","], "'datasets' parameter must name at least one data set"),  # exit 1, no message
    (["--solvers", ""], "'solvers' parameter must name at least one solver"),
])
def test_cli_rejects_unknown_names(tmp_path, capsys, args, message):
    rc = main(["bench", "--suite", "tiny", "--out", str(tmp_path), *args])
    assert rc == 2
    assert message in capsys.readouterr().err
    if args[0] == "--data-dir":  # the paper suite skipped each data set as not found (exit 1)
        assert main(["bench", "--suite", "paper", "--out", str(tmp_path), *args]) == 2
        assert message in capsys.readouterr().err


def test_cli_info_and_list(capsys):
    assert main(["info"]) == 0
    assert "sklearn-svc" in capsys.readouterr().out
    assert main(["bench", "--suite", "paper", "--data-dir", "/nonexistent", "--list"]) == 0
    out = capsys.readouterr().out
    for name in ("a9a", "ijcnn1", "w8a", "phishing", "skin_nonskin"):
        assert name in out


# ---- objectives ------------------------------------------------------------------------------------------------
def test_dual_objective_matches_direct_formula():
    from sklearn.metrics.pairwise import rbf_kernel
    from sklearn.svm import SVC

    from gpusvm.datasets import load_bundled

    X, y = load_bundled("breast_cancer")
    m = SVC(C=2.0, gamma=0.05).fit(X, y)
    a = np.zeros(len(y))
    a[m.support_] = np.abs(m.dual_coef_[0])
    yy = np.where(y == m.classes_[1], 1.0, -1.0)
    v = a * yy
    direct = a.sum() - 0.5 * v @ rbf_kernel(X, X, gamma=0.05) @ v
    assert sklearn_svc_objective(m) == pytest.approx(direct, rel=1e-10)


def test_dual_objective_multiclass_is_sum_of_pairs():
    from sklearn.svm import SVC

    from gpusvm.datasets import load_bundled

    X, y = load_bundled("digits")
    keep = y < 4
    X, y = X[keep][:400], y[keep][:400]
    m = SVC(C=3.0, gamma=0.05, tol=1e-6).fit(X, y)
    total = 0.0
    for i in range(4):
        for j in range(i + 1, 4):
            s = (y == i) | (y == j)
            total += sklearn_svc_objective(SVC(C=3.0, gamma=0.05, tol=1e-6).fit(X[s], y[s]))
    assert sklearn_svc_objective(m) == pytest.approx(total, rel=1e-6)
    # sparse-trained models (CSR dual_coef_ and support vectors) give the same value
    import scipy.sparse as sp

    ms = SVC(C=3.0, gamma=0.05, tol=1e-6).fit(sp.csr_matrix(X), y)
    assert sklearn_svc_objective(ms) == pytest.approx(sklearn_svc_objective(m), rel=1e-8)


def test_linear_primal_objective():
    from sklearn.svm import LinearSVC

    from gpusvm.datasets import load_bundled

    X, y = load_bundled("breast_cancer")
    m = LinearSVC(C=0.5, dual=True, tol=1e-8, max_iter=100_000).fit(X, y)
    p = sklearn_linear_objective(m, X, y)
    w, b = m.coef_[0], m.intercept_[0]
    t = np.where(y == m.classes_[1], 1.0, -1.0)
    direct = 0.5 * (w @ w + b * b) + 0.5 * np.sum(np.maximum(0, 1 - t * (X @ w + b)) ** 2)
    assert p == pytest.approx(direct, rel=1e-12)
    # the converged LIBLINEAR solution minimizes it: any perturbation increases it
    rng = np.random.default_rng(0)
    for _ in range(5):
        dw = rng.normal(size=w.shape) * 1e-2
        q = linear_primal_objective(m.coef_ + dw, m.intercept_, X, y, m.classes_, 0.5)
        assert q > p
    # hinge loss and one-vs-rest: the sum of the binary primals
    Xd, yd = load_bundled("digits")
    Xd, yd = Xd[:300], yd[:300]
    mc = LinearSVC(C=1.0, loss="hinge", dual=True, tol=1e-6, max_iter=100_000).fit(Xd, yd)
    total = 0.0
    for k, c in enumerate(mc.classes_):
        total += linear_primal_objective(mc.coef_[k:k + 1], mc.intercept_[k:k + 1], Xd,
                                         (yd == c).astype(int), np.array([0, 1]), 1.0, loss="hinge")
    assert sklearn_linear_objective(mc, Xd, yd) == pytest.approx(total, rel=1e-12)


@pytest.mark.gpu
def test_device_comparison_gpu_rows(tmp_path, gpu_backend):
    """The main job's GPU rows: every solver on "gpu" next to "cpu" (real GPU or the CPU emulator of the
    kernels), all rows ok, the exact solvers at the CPU's objective, the device named in the JSON."""
    doc, _ = _run(tmp_path, solvers=("svc-smo", "svc-alfpgm", "linearsvc-dcd", "budget-mm", "dcsvc"),
                  datasets=("breast_cancer",), devices=("cpu", "gpu"), plots=False)
    rows = {(r["solver"], r["device"]): r for r in doc["rows"]}
    assert all(r["status"] == "ok" for r in rows.values()), [(k, r["error"]) for k, r in rows.items()]
    for solver in ("svc-smo", "svc-alfpgm", "linearsvc-dcd", "dcsvc"):
        cpu, gpu = rows[(solver, "cpu")], rows[(solver, "gpu")]
        assert abs(gpu["objective"] - cpu["objective"]) <= 1e-6 * abs(cpu["objective"]), solver
    assert abs(rows[("budget-mm", "gpu")]["accuracy"] - rows[("budget-mm", "cpu")]["accuracy"]) <= 0.02
    assert doc["machine"]["gpu"]["name"] == gpu_backend.device_name


def test_gpu_warmup_cap_per_suite():
    # The paper suite times ONE fit: its GPU rows warm up on the whole training set (a 2,000-row DCSVC
    # solves none of its levels, so its k-means and batched clusters met their CUDA kernels in the timed fit)
    from gpusvm.bench.report import _gpu_warmup

    paper = harness.Settings(suite="paper").resolved()
    assert paper.warmup_max == 2000 and paper.warmup_max_gpu == 0
    tiny = harness.Settings(suite="tiny", warmup_max=300).resolved()
    assert tiny.warmup_max_gpu == 300  # other suites: as the CPU rows unless asked
    assert harness.Settings(suite="tiny", warmup_max_gpu=50).resolved().warmup_max_gpu == 50
    assert _gpu_warmup({"warmup_max": 2000, "warmup_max_gpu": 0}) == "; GPU rows: on the whole training set"
    assert _gpu_warmup({"warmup_max": 2000, "warmup_max_gpu": 500}) == "; GPU rows: at most 500"
    assert _gpu_warmup({"warmup_max": 2000, "warmup_max_gpu": 2000}) == ""
    assert _gpu_warmup({"warmup_max": 2000}) == ""  # a document written before the setting existed


@pytest.mark.gpu
def test_gpu_rows_warm_up_on_their_own_cap(tmp_path, gpu_backend):
    doc, _ = _run(tmp_path, solvers=("svc-smo",), datasets=("chess-600",), devices=("cpu", "gpu"), plots=False,
                  warmup_max=100, warmup_max_gpu=0, reference=False)
    rows = {r["device"]: r for r in doc["rows"]}
    assert rows["cpu"]["warmup_n"] == 100
    assert rows["gpu"]["warmup_n"] == rows["gpu"]["n_train"] > 100
    assert doc["settings"]["warmup_max_gpu"] == 0


def test_warmup_full_solver_warms_up_on_the_whole_set(tmp_path, monkeypatch, test_solvers):
    # DC-SVM's levels are not solved on a warm-up subset: its entries warm up on the whole training set
    entries = registry.solvers()
    assert entries["dcsvc"].warmup_full and entries["dcsvc-early"].warmup_full
    assert not entries["svc-smo"].warmup_full
    monkeypatch.setitem(registry._REGISTRY, "test-full-warm",
                        BenchSolver("test-full-warm", "kernel", _tight_svc, ("cpu",), objective=sklearn_svc_objective,
                                    warmup_full=True))
    doc, _ = _run(tmp_path, solvers=("test-full-warm", "test-tight-svc"), datasets=("chess-600",), plots=False,
                  warmup_max=100, reference=False)
    rows = {r["solver"]: r for r in doc["rows"]}
    assert rows["test-full-warm"]["warmup_n"] == rows["test-full-warm"]["n_train"] > 100
    assert rows["test-tight-svc"]["warmup_n"] == 100


def test_file_stem_names_usable_devices_before_their_rows_exist():
    # Checkpoints written while only the CPU rows are done must go to the final file name, not leave
    # a stale bench_paper_cpu.json beside bench_paper_cpu-gpu.json (seen on the first H100 run).
    from gpusvm.bench.report import stem

    doc = {"suite": "paper", "settings": {"subset_label": "a9a"},
           "devices": [{"name": "cpu", "usable": True}, {"name": "gpu", "usable": True}],
           "rows": [{"device": "cpu"}]}
    assert stem(doc) == "bench_paper-a9a_cpu-gpu"
    doc["devices"][1] = {"name": "gpu", "usable": False, "reason": "no CUDA"}
    assert stem(doc) == "bench_paper-a9a_cpu"
    doc["rows"] = []
    doc["devices"][0]["usable"] = False
    assert stem(doc) == "bench_paper-a9a_none"


def test_run_gpu_sh_nvcc_step_failure_sets_exit_status(tmp_path):
    # The nvcc step piped into tee and took tee's status: a kernel that failed to compile left exit 0.
    import os
    import subprocess
    from pathlib import Path

    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "nvcc").write_text("#!/bin/sh\nexit 0\n")
    (fake / "nvcc").chmod(0o755)
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "run_gpu.sh"
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}", "STEPS": "nvcc", "OUT": str(tmp_path / "r"),
           "PYTHON": "false"}
    res = subprocess.run(["bash", str(script), "", "x"], env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 1, res.stderr


def test_cli_list_paper_suite_needs_no_data_dir(monkeypatch, capsys):
    # --list names the data sets and solvers without reading any file; it refused without a data folder
    import gpusvm.datasets

    monkeypatch.setattr(gpusvm.datasets, "find_data_dir", lambda *a, **k: None)
    assert main(["bench", "--suite", "paper", "--list"]) == 0
    assert "skin_nonskin" in capsys.readouterr().out


def test_cli_report_rejects_unreadable_and_foreign_json(tmp_path, capsys):
    # a missing file or a JSON not written by 'gpusvm bench' raised a traceback (KeyError: 'rows')
    other = tmp_path / "other.json"
    other.write_text("{}")
    for f in (tmp_path / "missing.json", other):
        assert main(["report", str(f), "--out", str(tmp_path / "m"), "--no-plots"]) == 2
        assert f"gpusvm report: {f}" in capsys.readouterr().err.replace("cannot read ", "")
    assert not (tmp_path / "m").exists()


def test_report_merging_cpu_run_with_gpu_run_names_both_machines(tmp_path):
    # merged outputs took devices and machine from the first run only: a CPU-only run first made the
    # table say "gpu: skipped (CuPy is not installed)" above the GPU rows of the second run
    from gpusvm.bench import report

    doc, _ = _run(tmp_path, solvers=("sklearn-svc",), datasets=("chess-600",), devices=("cpu",), plots=False)
    doc["devices"].append({"name": "gpu", "usable": False, "reason": "CuPy is not installed"})
    gpu = json.loads(json.dumps(doc))
    gpu["devices"][1] = {"name": "gpu", "usable": True, "reason": ""}
    gpu["machine"] = {**gpu["machine"], "cpu_model": "Xeon", "gpu": {"name": "H100", "memory_bytes": 2**36}}
    gpu["rows"] = [{**r, "device": "gpu", "reference": False, "solver": "svc-smo"} for r in gpu["rows"]]
    with pytest.warns(RuntimeWarning, match="different machines"):
        merged = report.merge([doc, gpu])
    assert {d["name"]: d["usable"] for d in merged["devices"]} == {"cpu": True, "gpu": True}
    paths = report.write_all(merged, tmp_path / "m", plots=False, log=lambda m: None, print_table=False)
    for text in (report.to_markdown(merged), open(paths["table"]).read()):
        assert "skipped" not in text and "GPU: H100" in text
    assert paths["json"].endswith("bench_tiny_cpu-gpu.json")


def test_cli_bench_gpu_only_without_usable_gpu_fails(tmp_path, capsys, monkeypatch):
    # '--devices gpu' without a usable GPU ran only the CPU references and exited 0, as if it had benchmarked
    import gpusvm._backend

    monkeypatch.setattr(gpusvm._backend, "gpu_status", lambda device_id=0: (False, "no CUDA here"))
    rc = main(["bench", "--suite", "tiny", "--devices", "gpu", "--out", str(tmp_path), "--no-plots"])
    assert rc == 2 and "no usable device in --devices (gpu: no CUDA here)" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_repeated_device_or_solver_names_run_once(tmp_path):
    # "--devices cpu,cpu" or "--solvers svc-smo,svc-smo" ran and timed each row two (or four) times
    doc, _ = _run(tmp_path, solvers=("sklearn-svc", "svc-smo", "svc-smo"), datasets=("chess-600",),
                  devices=("cpu", "cpu"), plots=False)
    assert [(r["solver"], r["device"]) for r in doc["rows"]] == [("sklearn-svc", "cpu"), ("svc-smo", "cpu")]
    assert doc["settings"]["devices"] == ["cpu"]


def test_cli_out_naming_a_file_fails_before_running(tmp_path, capsys):
    # '--out FILE' ran every row, then died in mkdir with a FileExistsError traceback (exit 1); 'report' too
    out = tmp_path / "taken"
    out.write_text("not a folder")
    rc = main(["bench", "--suite", "tiny", "--solvers", "sklearn-svc", "--datasets", "chess-600", "--devices", "cpu",
               "--out", str(out), "--no-plots"])
    err = capsys.readouterr().err
    assert rc == 2 and f"gpusvm bench: cannot write the outputs to --out {out}" in err
    assert "warm-up" not in err  # refused before any row ran
    assert main(["bench", "--suite", "tiny", "--solvers", "sklearn-svc", "--datasets", "chess-600", "--devices",
                 "cpu", "--out", str(tmp_path), "--no-plots"]) == 0
    capsys.readouterr()
    rc = main(["report", str(tmp_path / "bench_tiny-chess-600_cpu.json"), "--out", str(out), "--no-plots"])
    assert rc == 2 and f"gpusvm report: cannot write the outputs to --out {out}" in capsys.readouterr().err
    assert out.read_text() == "not a folder"


def test_report_merging_runs_of_different_suites_names_them_all(tmp_path):
    # the merged outputs were titled "suite `tiny`" and written to bench_tiny_cpu.* although half the rows came
    # from the default suite (overwriting a real tiny run's outputs in the same folder)
    from gpusvm.bench import report

    doc, _ = _run(tmp_path, solvers=("sklearn-svc",), datasets=("chess-600",), plots=False, out=None)
    other = {**json.loads(json.dumps(doc)), "suite": "default"}
    merged = report.merge([doc, other, doc])
    assert merged["suite"] == "tiny+default"
    paths = report.write_all(merged, tmp_path / "m", plots=False, log=lambda m: None, print_table=False)
    assert paths["json"].endswith("bench_tiny+default_cpu.json")
    assert "# gpusvm bench: suite `tiny+default`" in report.to_markdown(merged)
    assert report.merge([doc, doc])["suite"] == "tiny"
    # a data set of several runs is listed once (its rows stay one per run)
    assert merged["settings"]["datasets"] == ["chess-600"] and len(merged["datasets"]) == 1
    assert len(merged["rows"]) == 3 * len(doc["rows"])


def test_data_set_without_a_selected_solver_says_so(tmp_path):
    # a linear solver on the chess-board (no linear parameters there) printed an empty table, exit 1, no reason
    doc, logs = _run(tmp_path, solvers=("linearsvc-dcd",), datasets=("chess-600",), plots=False, out=None)
    assert doc["rows"] == []
    assert ("== chess-600: none of the selected solvers runs on it (it has kernel parameters; usable devices: "
            "cpu)") in logs


def test_bench_exit_code_and_python_api_strings(tmp_path, capsys):
    """A run whose every row failed exited 0 (here the one-row warm-up holds one class, so each fit raises);
    now 1 with a message. The Python API took devices="cpu" as the devices 'c', 'p', 'u'."""
    rc = main(["bench", "--suite", "tiny", "--datasets", "chess-600", "--solvers", "svc-smo", "--devices", "cpu",
               "--warmup-max", "1", "--no-plots", "--out", str(tmp_path / "o")])
    assert rc == 1
    assert "every row failed" in capsys.readouterr().err
    doc, _ = _run(tmp_path, devices="cpu", solvers="sklearn-svc, svc-smo", datasets="chess-600", plots=False)
    assert doc["settings"]["devices"] == ["cpu"]
    assert {r["solver"] for r in doc["rows"]} == {"sklearn-svc", "svc-smo"}
    assert all(r["status"] == "ok" for r in doc["rows"])


def test_compressed_suffix_in_capitals(tmp_path):
    """load_svmlight picked the decompressor by the exact suffix: a9a.XZ was read as text and failed with
    "could not convert string to float: b'\\xfd7zXZ..."."""
    import lzma

    from gpusvm.datasets import load_svmlight

    with lzma.open(tmp_path / "d.XZ", "wt") as fh:
        fh.write("1 1:0.5 2:1\n-1 1:-0.5\n")
    X, y = load_svmlight(tmp_path / "d.XZ")
    np.testing.assert_array_equal(X.toarray(), [[0.5, 1.0], [-0.5, 0.0]])
    np.testing.assert_array_equal(y, [1, -1])


def test_cli_report_leaves_out_a_run_given_twice(tmp_path, capsys):
    """`gpusvm report a.json a.json` doubled every row of the table; JSON without 'created' gave a KeyError."""
    doc, _ = _run(tmp_path, solvers=("sklearn-svc",), datasets=("chess-600",), plots=False)
    f = tmp_path / "a.json"
    f.write_text(json.dumps(doc))
    assert main(["report", str(f), str(f), "--out", str(tmp_path / "m"), "--no-plots"]) == 0
    assert "is a run already given" in capsys.readouterr().err
    merged = json.loads(next((tmp_path / "m").glob("*.json")).read_text())
    assert len(merged["rows"]) == len(doc["rows"])
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps({"rows": [], "datasets": [], "machine": {}, "devices": []}))
    assert main(["report", str(bare), "--out", str(tmp_path / "n"), "--no-plots"]) == 2
    assert "is not a JSON file written by 'gpusvm bench'" in capsys.readouterr().err


def test_rerun_without_plots_leaves_no_stale_plots(tmp_path, capsys):
    """`gpusvm bench --out DIR --no-plots` after a run with plots left that run's PNGs in DIR, beside JSON and
    Markdown of the new run that they do not belong to. The plots of the stem are removed when not written."""
    pytest.importorskip("matplotlib")
    args = ["bench", "--suite", "tiny", "--solvers", "sklearn-svc,svc-smo", "--datasets", "chess-600", "--devices",
            "cpu", "--out", str(tmp_path)]
    assert main(args) == 0
    fit_time, speedup = [tmp_path / f"bench_tiny-chess-600_cpu_{kind}.png" for kind in ("fit_time", "speedup")]
    assert fit_time.is_file() and speedup.is_file()
    # a run with plots but no speed-up (the reference alone) does not keep the earlier speed-up plot either
    assert main([a if a != "sklearn-svc,svc-smo" else "sklearn-svc" for a in args]) == 0
    assert fit_time.is_file() and not speedup.exists()
    assert main(args + ["--no-plots"]) == 0
    assert not list(tmp_path.glob("*.png"))
    assert json.loads((tmp_path / "bench_tiny-chess-600_cpu.json").read_text())["outputs"]["plots"] == []
    capsys.readouterr()

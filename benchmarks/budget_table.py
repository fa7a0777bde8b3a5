"""BudgetSVC table: multi-merge BSGD (M in {2,3,4,5,10}) at budgets of ~1%, 5%, 10% of scikit-learn
SVC's number of support vectors, plus cascade vs gradient merging on a9a at budgets 120, 600, 1200.

    PYTHONPATH=. python benchmarks/budget_table.py [--datasets phishing,a9a,a9a-merge,...] [--devices cpu,gpu]
        [--epochs 1] [--seeds 7] [--time-epochs 5] [--time-reps 3] [--sk-max 12000] [--tag cpu]
    PYTHONPATH=. python benchmarks/budget_table.py --render benchmarks/results/budget_table_cpu.json

"a9a-merge" in --datasets runs the cascade/gradient comparison at that point of the list. A budget the
model never reaches at M=2 (no merges) is reported once and the other M are skipped (same model).

Data (../shared/data): phishing (C=8, gamma=8), w8a (8, 0.03), a9a (32, 0.008; test a9a.t with 123
features), ijcnn1 (32, 2; test ijcnn1.t), skin_nonskin (8, 0.03; raw 0-255 features). Without a test
file: stratified 80/20 split, seed 0. Rows are densified for BudgetSVC.

scikit-learn reference: SVC(C, gamma) trained on the full training set; only skin_nonskin (196,045
rows; too slow for LIBSVM on this shared 2-core machine) uses a stratified subset of 30,000 rows
(``--sk-max`` overrides for every set); then its SV count is scaled linearly to the full training set
size to size the budgets (an overestimate where SV counts grow sublinearly), and its accuracy and time
are those of the subset model: both are marked in the output.

Each BudgetSVC configuration runs ``--seeds`` times (random_state 0..seeds-1, ``--epochs`` epochs); the
table gives the mean test accuracy (and its standard deviation over seeds), the median fit time and
the median merge-time fraction. Timing: ``--time-reps`` more fits of ``--time-epochs`` epochs each (more
work per measurement than one short epoch, so the noise of the shared machine matters less); the
speed-ups use their median time per epoch. Times are process CPU seconds (time.process_time: the
Numba loop is single-threaded), wall seconds on the GPU. One warm-up fit per device compiles the Numba
loop / CUDA kernels first. Ratios (time M=2 / time M) are of medians measured in this run on this
machine.
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

from gpusvm import BudgetSVC, gpu_status
from gpusvm.datasets import find_data_dir, load_svmlight

DATASETS = {
    "phishing": dict(train="phishing.xz", test=None, C=8.0, gamma=8.0),
    "w8a": dict(train="w8a.xz", test=None, C=8.0, gamma=0.03),
    "a9a": dict(train="a9a.xz", test="a9a.t.xz", C=32.0, gamma=0.008),
    "ijcnn1": dict(train="ijcnn1.xz", test="ijcnn1.t.xz", C=32.0, gamma=2.0),
    "skin_nonskin": dict(train="skin_nonskin.xz", test=None, C=8.0, gamma=0.03),
}
MS = (2, 3, 4, 5, 10)
FRACS = (0.01, 0.05, 0.10)
A9A_BUDGETS = (120, 600, 1200)
# LIBSVM on the full skin_nonskin training set (196,045 rows) takes too long on the shared 2-core machine
SK_MAX_DEFAULT = {"skin_nonskin": 30000}
STRATEGY_MS = (3, 5)


def load(name, data_dir):
    from sklearn.model_selection import train_test_split

    spec = DATASETS[name]
    X, y = load_svmlight(data_dir / spec["train"])
    if spec["test"]:
        Xt, yt = load_svmlight(data_dir / spec["test"], n_features=X.shape[1])
    else:
        X, Xt, y, yt = train_test_split(X, y, test_size=0.2, stratify=y, random_state=0)
    return X.toarray(), y, Xt.toarray(), yt


def sklearn_ref(X, y, Xt, yt, C, gamma, sk_max):
    from sklearn.model_selection import train_test_split
    from sklearn.svm import SVC

    n = X.shape[0]
    sub = n > sk_max
    Xs, ys = (train_test_split(X, y, train_size=sk_max, stratify=y, random_state=0)[::2]) if sub else (X, y)
    t, tc = time.perf_counter(), time.process_time()
    m = SVC(C=C, gamma=gamma, cache_size=1000).fit(Xs, ys)
    fit_t, fit_c = time.perf_counter() - t, time.process_time() - tc
    acc = float(m.score(Xt, yt))
    n_sv = int(m.n_support_.sum())
    return {"accuracy": acc, "fit_time_s": fit_t, "fit_cpu_s": fit_c, "n_sv_measured": n_sv, "rows": int(Xs.shape[0]),
            "subset": bool(sub), "n_sv_full_est": int(round(n_sv * n / Xs.shape[0])) if sub else n_sv}


def _clock(device):
    # CPU seconds of this process on the CPU (the Numba loop is single-threaded, so other engineers'
    # jobs on the shared machine inflate it far less than wall time); wall seconds on the GPU
    return time.perf_counter if device == "gpu" else time.process_time


def _fit(X, y, Xt, yt, device, seed, epochs, kw):
    if device == "gpu":
        import cupy as cp

        X, y, Xt = cp.asarray(X), cp.asarray(y), cp.asarray(Xt)
    clock = _clock(device)
    m = BudgetSVC(random_state=seed, device=device, epochs=epochs, **kw)
    t = clock()
    m.fit(X, y)
    if device == "gpu":
        import cupy as cp

        cp.cuda.Device().synchronize()
    dt = clock() - t
    pred = m.predict(Xt)
    pred = pred.get() if hasattr(pred, "get") else pred
    return float(np.mean(pred == yt)), dt, m.merge_time_fraction_, m.n_merges_


def fit_one(X, y, Xt, yt, device, seeds, epochs=1, time_epochs=5, time_reps=3, **kw):
    """Accuracy runs: ``seeds`` fits of ``epochs`` epochs (random_state 0..seeds-1). Timing runs:
    ``time_reps`` fits of ``time_epochs`` epochs (enough work per measurement to rise above the noise of
    the shared machine); the speed-ups use their median time per epoch."""
    accs, times, fracs, merges = [], [], [], []
    for s in range(seeds):
        acc, dt, fr, mg = _fit(X, y, Xt, yt, device, s, epochs, kw)
        accs.append(acc)
        times.append(dt)
        fracs.append(fr)
        merges.append(mg)
    r = {"accuracy": float(np.mean(accs)), "accuracy_std": float(np.std(accs)), "accuracies": accs,
         "fit_time_s": float(statistics.median(times)), "fit_times_s": times,
         "merge_time_fraction": float(statistics.median(fracs)), "n_merges": float(np.mean(merges)),
         "clock": "wall" if device == "gpu" else "process CPU"}
    if time_reps > 0 and merges[0] > 0:
        tt, tf, ta = [], [], []
        for s in range(time_reps):
            acc, dt, fr, _ = _fit(X, y, Xt, yt, device, 100 + s, time_epochs, kw)
            tt.append(dt / time_epochs)
            tf.append(fr)
            ta.append(acc)
        r.update({"time_epochs": time_epochs, "epoch_time_s": float(statistics.median(tt)), "epoch_times_s": tt,
                  "epoch_merge_time_fraction": float(statistics.median(tf)), "accuracy_multi_epoch": float(np.mean(ta))})
    return r


def machine(devices):
    info = {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count(), "python": sys.version.split()[0],
            "note": "shared 2-core machine (up to 8 engineers running jobs at once): timings are noisy"}
    ok, why = gpu_status(0)
    if "gpu" in devices and ok:
        from gpusvm import get_backend

        info["gpu"] = get_backend("gpu").device_name
    else:
        info["gpu"] = f"not used: {why or 'not requested'}"
    return info


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", default="phishing,a9a,a9a-merge,ijcnn1,w8a,skin_nonskin",
                   help="comma-separated; a9a-merge = the cascade/gradient comparison on a9a")
    p.add_argument("--devices", default="cpu")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--seeds", type=int, default=7, help="accuracy runs per configuration")
    p.add_argument("--time-epochs", type=int, default=5, help="epochs of each timing run")
    p.add_argument("--time-reps", type=int, default=3, help="timing runs per configuration (0: none)")
    p.add_argument("--sk-max", type=int, default=0,
                   help="rows for the sklearn reference (0: the full training set, except skin_nonskin: "
                        f"{SK_MAX_DEFAULT['skin_nonskin']} rows)")
    p.add_argument("--sklearn-from", default=None,
                   help="take the scikit-learn reference rows (accuracy, time, SVs) from this earlier result "
                        "JSON instead of fitting SVC again (same data and hyperparameters; the rows say so)")
    p.add_argument("--tag", default=None, help="file name suffix (default: the devices)")
    p.add_argument("--out", default=str(Path(__file__).parent / "results"))
    p.add_argument("--render", default=None, help="only rewrite the Markdown of this JSON result file")
    a = p.parse_args(argv)
    if a.render:
        src = Path(a.render)
        src.with_suffix(".md").write_text(markdown(json.loads(src.read_text())))
        return
    data_dir = find_data_dir()
    if data_dir is None:
        sys.exit("LIBSVM data not found (../shared/data or $GPUSVM_DATA)")
    devices = [d for d in a.devices.split(",") if d]
    if "gpu" in devices and not gpu_status(0)[0]:
        print("no GPU:", gpu_status(0)[1], "- GPU column skipped", flush=True)
        devices = [d for d in devices if d != "gpu"]
    tag = a.tag or "_".join(devices)
    out = {"machine": machine(devices), "epochs": a.epochs, "seeds": a.seeds, "sk_max": a.sk_max,
           "time_epochs": a.time_epochs, "time_reps": a.time_reps,
           "devices": devices, "datasets": {}, "strategies": {}}
    # warm-up: compile the loops
    Xw = np.random.default_rng(0).random((300, 3))
    yw = np.where(Xw[:, 0] > 0.5, 1.0, -1.0)
    for dev in devices:
        for mg in ("cascade", "gradient"):
            BudgetSVC(budget=20, n_merge=3, merge=mg, device=dev).fit(Xw, yw)

    def save():
        Path(a.out).mkdir(parents=True, exist_ok=True)
        Path(a.out, f"budget_table_{tag}.json").write_text(json.dumps(out, indent=1))
        Path(a.out, f"budget_table_{tag}.md").write_text(markdown(out))

    for name in a.datasets.split(","):
        if name == "a9a-merge":
            run_strategies(a, data_dir, devices, out, save)
            continue
        spec = DATASETS[name]
        X, y, Xt, yt = load(name, data_dir)
        print(f"== {name}: train {X.shape}, test {Xt.shape}", flush=True)
        sk_max = a.sk_max or SK_MAX_DEFAULT.get(name, X.shape[0])
        if a.sklearn_from:
            old = json.loads(Path(a.sklearn_from).read_text())["datasets"][name]
            if (old["C"], old["gamma"], old["n_train"]) != (spec["C"], spec["gamma"], int(X.shape[0])):
                sys.exit(f"{a.sklearn_from}: {name} was run with other data or hyperparameters")
            ref = {**old["sklearn"], "reused_from": str(a.sklearn_from)}
        else:
            ref = sklearn_ref(X, y, Xt, yt, spec["C"], spec["gamma"], sk_max)
        print("   sklearn", ref, flush=True)
        entry = {"n_train": int(X.shape[0]), "n_test": int(Xt.shape[0]), "n_features": int(X.shape[1]),
                 "C": spec["C"], "gamma": spec["gamma"], "sklearn": ref, "rows": [], "not_binding": []}
        out["datasets"][name] = entry
        for frac in FRACS:
            B = max(10, int(round(frac * ref["n_sv_full_est"])))
            for dev in devices:
                for M in MS:
                    r = fit_one(X, y, Xt, yt, dev, a.seeds, epochs=a.epochs, time_epochs=a.time_epochs,
                                time_reps=a.time_reps, C=spec["C"], gamma=spec["gamma"], budget=B,
                                n_merge=M, merge="cascade")
                    r.update({"budget_frac": frac, "budget": B, "n_merge": M, "device": dev})
                    print(f"   B={B} M={M} {dev}: acc {r['accuracy']:.4f}+-{r['accuracy_std']:.4f} "
                          f"time {r['fit_time_s']:.2f}s epoch {r.get('epoch_time_s', float('nan')):.3f}s "
                          f"merge {r['merge_time_fraction']:.3f}", flush=True)
                    if M == 2 and r["n_merges"] == 0:
                        # the model never reached the budget: every M gives the same model, skip them
                        entry["not_binding"].append({**r, "note": "budget never reached (no merges)"})
                        print(f"   B={B}: budget never reached, other M skipped", flush=True)
                        break
                    entry["rows"].append(r)
                save()
    save()


def run_strategies(a, data_dir, devices, out, save):
    spec = DATASETS["a9a"]
    X, y, Xt, yt = load("a9a", data_dir)
    print("== a9a strategies", flush=True)
    rows = []
    for B in A9A_BUDGETS:
        for dev in devices:
            for M in STRATEGY_MS:
                for mg in ("cascade", "gradient"):
                    r = fit_one(X, y, Xt, yt, dev, a.seeds, epochs=a.epochs, time_epochs=a.time_epochs,
                                time_reps=a.time_reps, C=spec["C"], gamma=spec["gamma"], budget=B,
                                n_merge=M, merge=mg)
                    r.update({"budget": B, "n_merge": M, "merge": mg, "device": dev})
                    rows.append(r)
                    print(f"   B={B} M={M} {mg} {dev}: acc {r['accuracy']:.4f} time {r['fit_time_s']:.2f}s "
                          f"merge {r['merge_time_fraction']:.3f}", flush=True)
            out["strategies"]["a9a"] = rows
            save()


def _t(r):
    """The time a speed-up uses: CPU seconds per epoch of the multi-epoch timing runs when present."""
    return r.get("epoch_time_s", r["fit_time_s"])


def markdown(out):
    m = out["machine"]
    te = out.get("time_epochs")
    L = ["# BudgetSVC: multi-merge BSGD", "",
         f"Machine: {m['processor']}, {m['cpu_count']} CPUs ({m['platform']}); GPU: {m['gpu']}. {m['note']}.",
         f"Accuracy: {out['epochs']} epoch(s), {out['seeds']} seeds per configuration (mean ± std over seeds), "
         "with the median fit time of those fits. Times are CPU seconds of the process (GPU: wall seconds). "
         f"Timing runs: {out.get('time_reps', 0)} fits of {te} epochs per configuration; 's/epoch' is their "
         "median CPU time per epoch. Speed-ups = time(M=2) / time(M) at the same budget and device: '1 ep' from "
         f"the median 1-epoch fit times (the issue's setting), '{te} ep' from the median time per epoch of the "
         f"timing runs (more work per measurement; later epochs add fewer SVs). 'acc {te} ep' is the mean test accuracy of those {te}-epoch models. Merge = median fraction of "
         "the training loop's cycles spent in budget maintenance (1-epoch fits / timing fits). Strategy: "
         "cascade. Δacc = acc(M) - acc(M=2) in percentage points (1-epoch fits).", ""]
    for name, e in out["datasets"].items():
        s = e["sklearn"]
        sub = (f"trained on a stratified subset of {s['rows']} rows; its {s['n_sv_measured']} SVs scaled to "
               f"~{s['n_sv_full_est']} for the full set" if s["subset"] else f"{s['n_sv_measured']} SVs")
        cpu = f", {s['fit_cpu_s']:.1f} CPU s" if "fit_cpu_s" in s else ""
        if "reused_from" in s:
            sub += f"; not re-run: taken from {Path(s['reused_from']).name}"
        L += [f"## {name} (C={e['C']}, gamma={e['gamma']}; train {e['n_train']}, test {e['n_test']}, "
              f"d={e['n_features']})", "",
              f"scikit-learn SVC: accuracy {s['accuracy']:.4f}, fit {s['fit_time_s']:.1f} s wall{cpu} ({sub}).", "",
              f"| device | budget | M | accuracy | Δacc vs M=2 (pp) | fit (s) | speed-up (1 ep) | s/epoch ({te} ep) | "
              f"speed-up ({te} ep) | merge fraction (1 ep / {te} ep) | acc {te} ep |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
        base = {(r["device"], r["budget"]): r for r in e["rows"] if r["n_merge"] == 2}
        for r in e["rows"]:
            b = base.get((r["device"], r["budget"]))
            sp_ = f"{_t(b) / _t(r):.2f}x" if b else "-"
            sp1 = f"{b['fit_time_s'] / r['fit_time_s']:.2f}x" if b else "-"
            da = f"{100 * (r['accuracy'] - b['accuracy']):+.2f}" if b else "-"
            ep = f"{r['epoch_time_s']:.3f}" if "epoch_time_s" in r else "-"
            fr = f"{r['merge_time_fraction']:.3f}"
            if "epoch_merge_time_fraction" in r:
                fr += f" / {r['epoch_merge_time_fraction']:.3f}"
            am = f"{r['accuracy_multi_epoch']:.4f}" if "accuracy_multi_epoch" in r else "-"
            L.append(f"| {r['device']} | {r['budget']} ({100 * r['budget_frac']:.0f}%) | {r['n_merge']} | "
                     f"{r['accuracy']:.4f} ± {r['accuracy_std']:.4f} | {da} | {r['fit_time_s']:.3f} | {sp1} | {ep} | "
                     f"{sp_} | {fr} | {am} |")
        for r in e.get("not_binding", []):
            L.append(f"| {r['device']} | {r['budget']} ({100 * r['budget_frac']:.0f}%) | 2 | {r['accuracy']:.4f} ± "
                     f"{r['accuracy_std']:.4f} | - | {r['fit_time_s']:.3f} | - | - | - | 0 (budget never reached: "
                     "no merges, every M gives this model; other M not run) | - |")
        L.append("")
    L += targets(out)
    for name, rows in out["strategies"].items():
        L += [f"## Merge strategies on {name} (C=32, gamma=0.008): cascade (MM-BSGD) vs gradient (MM-GD)", "",
              f"| device | budget | M | strategy | accuracy | s/epoch | merge fraction | merging s/epoch | acc {te} ep |",
              "|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            fr = r.get("epoch_merge_time_fraction", r["merge_time_fraction"])
            am = f"{r['accuracy_multi_epoch']:.4f}" if "accuracy_multi_epoch" in r else "-"
            L.append(f"| {r['device']} | {r['budget']} | {r['n_merge']} | {r['merge']} | "
                     f"{r['accuracy']:.4f} ± {r['accuracy_std']:.4f} | {_t(r):.3f} | "
                     f"{fr:.3f} | {fr * _t(r):.3f} | {am} |")
        L.append("")
    return "\n".join(L) + "\n"


def targets(out):
    """The paper's targets per data set, budget and device, from the rows above (nothing else)."""
    te = out.get("time_epochs")
    L = ["## Targets (from the paper) against this run", "",
         "Speed-ups = time(M=2) / time(M): '1 ep' = median CPU time of the 1-epoch fits (the issue's setting, "
         f"{out['seeds']} per configuration), '{te} ep' = median CPU time per epoch of the {te}-epoch timing runs. "
         "Δacc = mean acc(M) - mean acc(M=2) over seeds (1 epoch), in pp. Targets: M=3 >= 1.30x, M=10 >= 2x, "
         "|Δacc| <= 1 pp for M in {3,4,5} (we count Δacc >= -1 pp as met). f = median merge fraction of the M=2 "
         "1-epoch fits; 1 / (1 - f) bounds what any reduction of merging time can give.", "",
         f"| data set | device | budget | f (M=2) | bound | M=3: 1 ep / {te} ep | M=10: 1 ep / {te} ep | "
         "Δacc M=3 / 4 / 5 (pp) | M=3 >= 1.3x (1 ep / " + f"{te} ep) | M=10 >= 2x (1 ep / {te} ep) | acc within 1 pp |",
         "|---|---|---|---|---|---|---|---|---|---|---|"]
    met = {"m3": 0, "m10": 0, "m3e": 0, "m10e": 0, "acc": 0, "n": 0}
    yn = {True: "yes", False: "no"}
    for name, e in out["datasets"].items():
        by = {(r["device"], r["budget"], r["n_merge"]): r for r in e["rows"]}
        for (dev, B, M), r2 in sorted(by.items()):
            if M != 2 or any((dev, B, m) not in by for m in MS):
                continue
            s3 = r2["fit_time_s"] / by[(dev, B, 3)]["fit_time_s"]
            s10 = r2["fit_time_s"] / by[(dev, B, 10)]["fit_time_s"]
            e3 = _t(r2) / _t(by[(dev, B, 3)])
            e10 = _t(r2) / _t(by[(dev, B, 10)])
            f = r2["merge_time_fraction"]
            da = [100 * (by[(dev, B, m)]["accuracy"] - r2["accuracy"]) for m in (3, 4, 5)]
            ok = {"m3": s3 >= 1.3, "m10": s10 >= 2.0, "m3e": e3 >= 1.3, "m10e": e10 >= 2.0, "acc": min(da) >= -1.0}
            for k, v in ok.items():
                met[k] += v
            met["n"] += 1
            L.append(f"| {name} | {dev} | {B} | {f:.3f} | {1 / (1 - f):.2f}x | {s3:.2f}x / {e3:.2f}x | "
                     f"{s10:.2f}x / {e10:.2f}x | {da[0]:+.2f} / {da[1]:+.2f} / {da[2]:+.2f} | "
                     f"{yn[ok['m3']]} / {yn[ok['m3e']]} | {yn[ok['m10']]} / {yn[ok['m10e']]} | {yn[ok['acc']]} |")
    n = met["n"]
    L += ["", f"Met (of {n} settings): M=3 >= 1.3x in {met['m3']} (1 epoch) / {met['m3e']} ({te}-epoch timing); "
          f"M=10 >= 2x in {met['m10']} / {met['m10e']}; accuracy within 1 pp in {met['acc']}.", ""]
    return L


if __name__ == "__main__":
    main()

"""Outputs of a benchmark run: console table, JSON, Markdown and PNG plots.

File names carry the suite and the devices that ran, e.g. ``bench_paper_cpu-gpu.json``. The JSON schema
is documented in ``benchmarks/README.md``.
"""

from __future__ import annotations

import json
import math
import sys
import warnings
from pathlib import Path

__all__ = ["format_table", "to_markdown", "write_all", "stem", "merge"]

_COLUMNS = [
    # header, key, formatter
    ("data set", "dataset", str),
    ("solver", "solver", str),
    ("device", "device", str),
    ("n_train", "n_train", lambda v: f"{v:,}"),
    ("fit min s", "fit_min_s", lambda v: _num(v)),
    ("fit med s", "fit_median_s", lambda v: _num(v)),
    ("fits", "fit_s", lambda v: str(len(v)) if v else "-"),
    ("pred s", "predict_min_s", lambda v: _num(v)),
    ("accuracy", "accuracy", lambda v: f"{v:.4f}"),
    ("objective", "objective", lambda v: f"{v:.6g}"),
    ("obj rel diff", "objective_rel_diff", lambda v: f"{v:+.1e}"),
    ("n_SV", "n_sv", lambda v: f"{v:,}"),
    ("host MB", "host_peak_increase_bytes", lambda v: f"{v / 2**20:.0f}"),
    ("dev MB", "device_pool_peak_bytes", lambda v: f"{v / 2**20:.0f}"),
    ("speed-up", "speedup_fit", lambda v: f"{v:.3g}x"),
    ("status", "status", str),
]


def _num(v):
    if v is None:
        return ""
    if v >= 100:
        return f"{v:.0f}"
    if v >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


def _cells(row):
    out = []
    for _, key, fmt in _COLUMNS:
        v = row.get(key)
        if v is None or (isinstance(v, float) and math.isnan(v)):
            out.append("-" if key != "status" else "")
        else:
            try:
                out.append(fmt(v))
            except (TypeError, ValueError):
                out.append(str(v))
    if row.get("time_limited") and row.get("status") == "ok":
        out[-1] = "ok (time limit: fewer repeats)"
    return out


def stem(doc) -> str:
    # the devices asked for and usable, not only those with rows so far: a run's checkpoints (written
    # while the CPU rows are done and the GPU rows not yet) then update the final file instead of
    # leaving a stale bench_..._cpu.json beside bench_..._cpu-gpu.json
    devs = sorted({r["device"] for r in doc["rows"]} | {d["name"] for d in doc["devices"] if d["usable"]})
    subset = (doc.get("settings") or {}).get("subset_label")
    suite = f"{doc['suite']}-{subset}" if subset else doc["suite"]
    return f"bench_{suite}_{'-'.join(devs) or 'none'}"


def _merged_machines(doc) -> list[str]:
    """'CPU x; GPU y' of each distinct machine of a merged document's runs (empty for a single run)."""
    ms = dict.fromkeys(f"CPU: {m.get('cpu_model')}" + (f"; GPU: {m['gpu']}" if m.get("gpu") else "")
                       for m in doc.get("merged_from") or [])
    return list(ms) if len(ms) > 1 else []


def _gpu_warmup(s) -> str:
    """How GPU rows warmed up, where it differs from ``warmup_max`` (older documents lack the key)."""
    g = s.get("warmup_max_gpu", s["warmup_max"])
    if g == s["warmup_max"]:
        return ""
    return "; GPU rows: on the whole training set" if not g else f"; GPU rows: at most {g:,}"


def _machine_line(doc) -> str:
    if merged := _merged_machines(doc):
        return "runs merged from different machines: " + " | ".join(merged)
    m = doc["machine"]
    s = f"CPU: {m.get('cpu_model')} ({m.get('cpu_count')} logical cores"
    if m.get("cpu_affinity") and m.get("cpu_affinity") != m.get("cpu_count"):
        s += f", {m['cpu_affinity']} usable"
    s += ")"
    g = m.get("gpu")
    if g and g.get("name"):
        s += f"; GPU: {g['name']} ({g['memory_bytes'] / 2**30:.0f} GiB)"
    for d in doc["devices"]:
        if not d["usable"]:
            s += f"; {d['name']}: skipped ({d['reason']})"
    return s


def format_table(doc) -> str:
    """The console table: one line per row, then the failures."""
    header = [h for h, _, _ in _COLUMNS]
    body = [_cells(r) for r in doc["rows"]]
    widths = [max(len(header[i]), *(len(b[i]) for b in body)) if body else len(header[i]) for i in range(len(header))]
    lines = [_machine_line(doc), ""]
    lines.append("  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip())
    lines.append("  ".join("-" * w for w in widths))
    for b in body:
        lines.append("  ".join(c.ljust(w) for c, w in zip(b, widths)).rstrip())
    errs = [r for r in doc["rows"] if r["status"] != "ok"]
    if errs:
        lines.append("")
        for r in errs:
            lines.append(f"{r['dataset']} / {r['solver']} / {r['device']}: {r['status']}: {r['error']}")
    for d in doc["datasets"]:
        if d.get("error"):
            lines.append(f"data set {d['name']}: not run: {d['error']}")
    for mod, err in (doc.get("entry_import_errors") or {}).items():
        lines.append(f"entry {mod}: failed to import: {err}")
    lines.append("")
    lines.append("speed-up = scikit-learn fit time / row fit time (min over repeats, same data set, same run); "
                 "host MB = peak RSS increase during fit; dev MB = CuPy pool high-water mark")
    return "\n".join(lines)


def to_markdown(doc) -> str:
    """A Markdown report: how and where it ran, then the table."""
    s = doc["settings"]
    git = doc.get("git") or {}
    lines = [
        f"# gpusvm bench: suite `{doc['suite']}`",
        "",
        f"- created: {doc['created']}; elapsed {doc.get('elapsed_s', 0):.0f} s"
        + ("" if doc.get("complete", True) else " (INCOMPLETE: run still going or stopped early)"),
        f"- command: `{doc['command']}`",
        f"- machine: {_machine_line(doc)}",
        f"- platform: {doc['machine'].get('platform')}",
        f"- git commit: {git.get('commit')}{' (uncommitted changes)' if git.get('dirty') else ''}",
        "- versions: " + ", ".join(f"{k} {v}" for k, v in (doc.get("versions") or {}).items() if v is not None),
        f"- repeats: {s['repeat']} timed fits after one warm-up (warm-up on at most {s['warmup_max']:,} rows"
        + _gpu_warmup(s) + "); "
        f"times are min (and median) over repeats; inputs: {s['inputs']}",
        f"- max_train: {s['max_train']}, max_test: {s['max_test']}, time limit: {s['time_limit_s']} s "
        f"({s['time_limit_kind']}), row budget: {s.get('row_budget_s')} s (repeats stop once a row's timed fits "
        f"exceed it)",
    ]
    per_run = doc.get("settings_per_run") or {}
    if per_run:  # a merged document: the lines above are the first run's settings
        lines.append(f"- settings that differ between the {len(doc['merged_from'])} merged runs (the lines above "
                     "are the first run's): " + "; ".join(f"{k}: " + " / ".join(map(_fmt_setting, v))
                                                       for k, v in per_run.items()))
    if s.get("note") and "note" not in per_run:
        lines.append(f"- note: {s['note']}")
    lines += ["", "## Data sets", "", "| data set | n_train | n_test | features | format | classes | parameters | source |",
              "|---|---|---|---|---|---|---|---|"]
    for d in doc["datasets"]:
        if d.get("error"):
            lines.append(f"| {d['name']} | not run: {d['error']} | | | | | | |")
            continue
        params = "; ".join(f"{fam}: " + ", ".join(f"{k}={_fmtp(v)}" for k, v in p.items() if k != "gamma_rule")
                           for fam, p in d["params"].items())
        sub = f" (subsampled from {d['train_subsampled_from']:,})" if d.get("train_subsampled_from") else ""
        subt = f" (subsampled from {d['test_subsampled_from']:,})" if d.get("test_subsampled_from") else ""
        lines.append(f"| {d['name']} | {d['n_train']:,}{sub} | {d['n_test']:,}{subt} | {d['n_features']} | "
                     f"{d['format']} | {d['n_classes']} | {params} | {d.get('source', '')} |")
    header = [h for h, _, _ in _COLUMNS]
    lines += ["", "## Results", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in doc["rows"]:
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in _cells(r)) + " |")
    lines += [
        "",
        "speed-up: scikit-learn fit time / row fit time (min over repeats), same data set, same run. "
        "obj rel diff: (objective - reference objective) / |reference objective| (dual objectives are "
        "maximized, primal ones minimized; shown only where C, gamma, kernel and loss agree). host MB: peak "
        "RSS increase during fit; dev MB: CuPy memory-pool high-water mark during fit.",
    ]
    bad = [r for r in doc["rows"] if r["status"] != "ok" or r.get("warnings") or r.get("objective_error")]
    if bad:
        lines += ["", "## Errors and warnings", ""]
        for r in bad:
            what = []
            if r["status"] != "ok":
                what.append(f"{r['status']}: {r['error']}")
            if r.get("objective_error"):
                what.append(f"objective: {r['objective_error']}")
            what += r.get("warnings") or []
            lines.append(f"- {r['dataset']} / {r['solver']} / {r['device']}: " + "; ".join(what))
    return "\n".join(lines) + "\n"


def _fmt_setting(v) -> str:
    if isinstance(v, (list, tuple)):
        return ",".join(map(str, v)) or "(none)"
    return repr(v) if isinstance(v, str) else str(v)


def merge(docs: list[dict]) -> dict:
    """One document from several runs' JSON documents (e.g. the paper suite run one data set at a time):
    rows and data sets concatenated in order; the suite names of the runs joined by "+" when they differ
    (``tiny+default``); settings, machine and versions of the first, and under
    ``settings_per_run`` each setting in which the runs differ (one value per run); a device usable
    where any run used it; each source's command, creation time, machine and GPU kept under
    ``merged_from``. Speed-ups stay as each run measured them (a row is only compared with the reference of
    its own run)."""
    if not docs:
        raise ValueError("nothing to merge")
    first = docs[0]
    out = {k: v for k, v in first.items() if k not in ("rows", "datasets", "outputs")}
    out["rows"], out["datasets"] = [], []
    out["settings"] = {**first.get("settings", {}), "subset_label": None,
                       "datasets": list(dict.fromkeys(n for d in docs
                                                      for n in d.get("settings", {}).get("datasets", [])))}
    # the Markdown showed only the first run's repeats, limits, inputs and note for every merged row
    setting = [d.get("settings", {}) for d in docs]
    keys = dict.fromkeys(k for st in setting for k in st if k not in ("datasets", "subset_label"))
    out["settings_per_run"] = {k: [st.get(k) for st in setting] for k in keys
                               if len({json.dumps(st.get(k), sort_keys=True, default=str) for st in setting}) > 1}
    out["merged_from"] = []
    devices = {}  # a device is usable when any run used it: a CPU-only run first must not mark GPU rows skipped
    for d in docs:
        for dev in d.get("devices") or []:
            if dev["name"] not in devices or (dev["usable"] and not devices[dev["name"]]["usable"]):
                devices[dev["name"]] = dev
        out["rows"] += d["rows"]
        # (a data set run on the CPU in one call and on the GPU in another was listed twice)
        out["datasets"] += [ds for ds in d["datasets"] if ds not in out["datasets"]]
        g = (d.get("machine") or {}).get("gpu") or {}
        out["merged_from"].append({"command": d.get("command"), "created": d.get("created"),
                                   "suite": d.get("suite"), "cpu_model": d["machine"].get("cpu_model"),
                                   "gpu": g.get("name"), "git": d.get("git"), "complete": d.get("complete")})
    out["devices"] = list(devices.values())
    # runs of different suites were titled and named after the first one only (bench_tiny_cpu.json with
    # the default suite's rows in it, overwriting a real tiny run's outputs in the same folder)
    out["suite"] = "+".join(dict.fromkeys(str(d.get("suite")) for d in docs))
    out["elapsed_s"] = sum(d.get("elapsed_s", 0.0) for d in docs)
    out["complete"] = all(d.get("complete", False) for d in docs)
    machines = {(m["cpu_model"], m["gpu"]) for m in out["merged_from"]}
    if len(machines) > 1:
        warnings.warn(f"merging runs from different machines {sorted(map(str, machines))}: compare times only "
                      "within one run", RuntimeWarning, stacklevel=2)
    out["command"] = " + ".join(str(m["command"]) for m in out["merged_from"])
    return out


def _fmtp(v):
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def _clean(o):
    """JSON-safe copy: NaN/inf become null, NumPy scalars become Python numbers."""
    if isinstance(o, dict):
        return {str(k): _clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_clean(v) for v in o]
    if hasattr(o, "item") and not isinstance(o, (str, bytes)):
        try:
            o = o.item()
        except Exception:
            return str(o)
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if o is None or isinstance(o, (bool, int, float, str)):
        return o
    return str(o)


# the PNG plots of a stem: {stem}_{kind}.png (see _plots)
_PLOT_KINDS = ("fit_time", "speedup")


def _plots(doc, out: Path, name: str, log) -> list[str]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as exc:
        warnings.warn(f"matplotlib is not available ({exc}); PNG plots skipped", RuntimeWarning, stacklevel=3)
        log(f"matplotlib is not available ({exc}); PNG plots skipped")
        return []
    rows = [r for r in doc["rows"] if r.get("fit_min_s")]
    if not rows:
        return []
    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    written = []
    m = doc["machine"]
    title_dev = f"CPU: {m.get('cpu_model')} ({m.get('cpu_count')} cores)"
    if m.get("gpu") and m["gpu"].get("name"):
        title_dev += f"; GPU: {m['gpu']['name']}"
    if merged := _merged_machines(doc):
        title_dev = " | ".join(merged)

    def grouped(ax, series, value, base=None):
        n = max(1, len(series))
        width = 0.8 / n
        for k, key in enumerate(series):
            xs, ys = [], []
            for i, d in enumerate(datasets):
                r = next((r for r in rows if r["dataset"] == d and (r["solver"], r["device"]) == key), None)
                v = value(r) if r is not None else None
                if v:
                    xs.append(i - 0.4 + width * (k + 0.5))
                    ys.append(v)
            if base is None:
                ax.bar(xs, ys, width, label=f"{key[0]} ({key[1]})")
            else:  # bars from the baseline (1x) up or down to the value
                ax.bar(xs, [y - base for y in ys], width, bottom=base, label=f"{key[0]} ({key[1]})")
        ax.set_xticks(range(len(datasets)))
        ax.set_xticklabels(datasets, rotation=20, ha="right")
        ax.set_yscale("log")
        ax.legend(fontsize=7, ncol=2)

    series = list(dict.fromkeys((r["solver"], r["device"]) for r in rows))
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(datasets) + 3), 4.5))
    grouped(ax, series, lambda r: r["fit_min_s"])
    ax.set_ylabel("fit time, s (min over repeats; log)")
    ax.set_title(f"gpusvm bench {doc['suite']}: fit time\n{title_dev}", fontsize=8)
    fig.tight_layout()
    p = out / f"{name}_fit_time.png"
    fig.savefig(p, dpi=110)
    plt.close(fig)
    written.append(str(p))

    sp_series = [k for k in series if any(r["speedup_fit"] and not r["reference"] and (r["solver"], r["device"]) == k
                                          for r in rows)]
    if sp_series:
        fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(datasets) + 3), 4.5))
        grouped(ax, sp_series, lambda r: r["speedup_fit"], base=1.0)
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_ylabel("speed-up over scikit-learn (fit; log)")
        ax.set_title(f"gpusvm bench {doc['suite']}: speed-up over scikit-learn\n{title_dev}", fontsize=8)
        fig.tight_layout()
        p = out / f"{name}_speedup.png"
        fig.savefig(p, dpi=110)
        plt.close(fig)
        written.append(str(p))
    return written


def write_all(doc, out, *, plots=True, log=None, stream=None, print_table=True) -> dict:
    """Print the console table and write JSON, Markdown, the table and the plots into ``out``; plots of the same
    stem that this call does not write (``plots=False``) are removed, so that none of an earlier run remains.

    Returns the paths written, by kind (also stored in the JSON under ``outputs``).
    """
    log = log or (lambda m: print(m, file=sys.stderr, flush=True))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    name = stem(doc)
    table = format_table(doc)
    if print_table:
        print(table, file=stream or sys.stdout, flush=True)
    paths = {"json": str(out / f"{name}.json"), "markdown": str(out / f"{name}.md"),
             "table": str(out / f"{name}.txt"), "plots": []}
    (out / f"{name}.txt").write_text(table + "\n", encoding="utf-8")
    (out / f"{name}.md").write_text(to_markdown(doc), encoding="utf-8")
    if plots:
        paths["plots"] = _plots(doc, out, name, log)
    # plots of an earlier run of this stem that this one did not write (--no-plots, no speed-up rows, no
    # matplotlib) would sit beside JSON and Markdown they do not belong to
    for kind in _PLOT_KINDS:
        p = out / f"{name}_{kind}.png"
        if str(p) not in paths["plots"]:
            p.unlink(missing_ok=True)
    doc["outputs"] = paths
    with open(out / f"{name}.json", "w", encoding="utf-8") as f:
        json.dump(_clean(doc), f, indent=1, allow_nan=False)
        f.write("\n")
    log(f"wrote {', '.join([paths['json'], paths['markdown'], paths['table'], *paths['plots']])}")
    return paths

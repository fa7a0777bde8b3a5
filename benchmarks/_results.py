"""What the small benchmark scripts share: find the data, describe the run, write JSON and Markdown after
every data set (so a run cut short keeps what it measured)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run_datasets(stem, names, run_one, markdown, *, machine_note="shared machine: ratios within one run", extra=None,
                 out_dir=None, needs_data=True):
    """``run_one(name, data_dir)`` per data set; results in <out_dir>/<stem>.{json,md} (default
    benchmarks/results). ``extra``: more entries of the JSON's "meta" (measurements that are not per data
    set). ``needs_data=False``: generated problems, ``data_dir`` may be None."""
    from gpusvm.datasets import find_data_dir

    data_dir = find_data_dir()
    if data_dir is None and needs_data:
        sys.exit("LIBSVM data sets not found (../shared/data or $GPUSVM_DATA)")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=HERE).stdout.strip()
    meta = {"machine": f"{platform.machine()}, {os.cpu_count()} CPUs ({machine_note})", "commit": commit,
            "command": "python " + " ".join([f"benchmarks/{Path(sys.argv[0]).name}", *sys.argv[1:]]), **(extra or {})}
    results = []
    out = (HERE / "results" if out_dir is None else Path(out_dir)) / stem
    out.parent.mkdir(parents=True, exist_ok=True)
    for name in names:
        results.append(run_one(name, data_dir))
        out.with_suffix(".json").write_text(json.dumps({"meta": meta, "results": results}, indent=1))
        out.with_suffix(".md").write_text(markdown(results, meta))
    return results

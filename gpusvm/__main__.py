"""The ``gpusvm`` command (also ``python -m gpusvm``).

Subcommands
-----------
bench
    Every registered solver on every available device, side by side with scikit-learn, on a suite of
    data sets; prints a table and writes JSON, Markdown and PNG plots (see ``gpusvm bench --help``).
report
    Merge the JSON files of several bench runs into one set of outputs.
info
    Versions, the GPU status, the registered benchmark solvers and the fused ops.
train, predict
    LIBSVM's ``svm-train`` and ``svm-predict``: the same options and file formats (C-SVC), trained by
    gpusvm on the CPU or the GPU (``gpusvm train --help``).
"""

from __future__ import annotations

import argparse
import sys


def _csv(s: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in s.split(",") if p.strip())


def _parser() -> argparse.ArgumentParser:
    from .bench.suites import suite_names

    p = argparse.ArgumentParser(prog="gpusvm", description="gpusvm: SVMs trained fast on GPUs and correctly on CPUs.")
    p.add_argument("--version", action="store_true", help="print the version and exit")
    sub = p.add_subparsers(dest="cmd")

    b = sub.add_parser(
        "bench", help="benchmark every solver on every device against scikit-learn",
        description=(
            "Benchmark every registered solver on every available device against scikit-learn "
            "(SVC for kernel solvers, LinearSVC for linear ones), measured in the same run. "
            "Without a data directory the default suite uses scikit-learn's bundled data and generated "
            "chess-boards. Progress goes to stderr, the table to stdout, files to --out."),
    )
    b.add_argument("--suite", default="default", choices=suite_names(),
                   help="data sets to run: tiny (seconds), default (no files needed), paper (needs --data-dir)")
    b.add_argument("--data-dir", default=None,
                   help="folder of the LIBSVM .xz files for --suite paper (default: $GPUSVM_DATA or ../shared/data)")
    b.add_argument("--devices", type=_csv, default=("cpu", "gpu"),
                   help="comma-separated devices (cpu,gpu); an unusable GPU is reported as skipped "
                        "(exit 2 when no listed device is usable)")
    b.add_argument("--solvers", type=_csv, default=None,
                   help="comma-separated solver names (default: all registered, plus the scikit-learn references)")
    b.add_argument("--datasets", type=_csv, default=None, help="comma-separated data set names of the suite")
    b.add_argument("--repeat", type=int, default=None, help="timed fits per row (default: per suite; 3 for default)")
    b.add_argument("--out", default="bench-out", help="output folder (default: ./bench-out)")
    b.add_argument("--max-train", type=int, default=None, help="cap on training rows (stratified subsample)")
    b.add_argument("--max-test", type=int, default=None, help="cap on test rows (stratified subsample)")
    b.add_argument("--time-limit", type=float, default=None,
                   help="soft per-fit limit in seconds: after a slower fit the row's remaining repeats are "
                        "skipped (a running fit is never interrupted); 0 disables; default per suite")
    b.add_argument("--row-budget", type=float, default=None,
                   help="seconds of timed fits per row after which its repeats stop (at least one fit runs); "
                        "0 disables; default per suite (4 s for default)")
    b.add_argument("--warmup-max", type=int, default=None,
                   help="the warm-up fit uses at most this many training rows (stratified subset); default per "
                        "suite (1000 for default, 2000 otherwise)")
    b.add_argument("--warmup-max-gpu", type=int, default=None,
                   help="the same for GPU rows; 0: the whole training set; default per suite (0 for paper, "
                        "else --warmup-max)")
    b.add_argument("--no-reference", action="store_true", help="do not run the scikit-learn references")
    b.add_argument("--device-inputs", action="store_true",
                   help="give GPU rows CuPy arrays (host-to-device transfer not timed); default: host arrays")
    b.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    b.add_argument("--seed", type=int, default=0, help="seed of splits and subsamples (default 0)")
    b.add_argument("--note", default="", help="free text recorded in the outputs (e.g. 'shared machine')")
    b.add_argument("--list", action="store_true", help="list the suite's data sets and the solvers, then exit")

    r = sub.add_parser("report", help="merge the JSON files of several bench runs and rewrite all outputs",
                       description="Merge bench JSON files (e.g. the paper suite run one data set at a time) "
                                   "into one set of outputs: table, JSON, Markdown, plots.")
    r.add_argument("files", nargs="+", help="bench_*.json files written by 'gpusvm bench'")
    r.add_argument("--out", required=True, help="output folder")
    r.add_argument("--no-plots", action="store_true", help="skip the PNG plots")

    sub.add_parser("info", help="versions, GPU status, registered solvers and fused ops")
    # parsed by _cli_libsvm with LIBSVM's own option rules (-w-1 2, -h 0); listed here for --help
    sub.add_parser("train", add_help=False, help="LIBSVM svm-train: train a C-SVC, write a LIBSVM model file")
    sub.add_parser("predict", add_help=False, help="LIBSVM svm-predict: predict with a LIBSVM model file")
    return p


def _bench(args) -> int:
    from .bench import harness, registry, suites

    data_dir = args.data_dir
    if data_dir is None and args.suite == "paper" and not args.list:  # --list reads no data
        from .datasets import find_data_dir

        found = find_data_dir()
        data_dir = str(found) if found else None
        if data_dir is None:
            print("gpusvm bench: --suite paper needs --data-dir DIR (the LIBSVM .xz files)", file=sys.stderr)
            return 2
    if args.list:
        print(f"suite {args.suite}:")
        for d in suites.suite(args.suite):
            print(f"  {d.name:16s} {d.description}; {d.params}")
        print("solvers:")
        for name, e in {**harness.reference_solvers(), **registry.solvers()}.items():
            print(f"  {name:24s} family={e.family} devices={','.join(e.devices)}")
        for mod, err in registry.import_errors().items():
            print(f"  (entry {mod} failed to import: {err})")
        return 0
    settings = harness.Settings(
        suite=args.suite, data_dir=data_dir, devices=args.devices, solvers=args.solvers,
        datasets=args.datasets, repeat=args.repeat, out=args.out, max_train=args.max_train,
        max_test=args.max_test, time_limit=args.time_limit, row_budget=args.row_budget, warmup_max=args.warmup_max,
        warmup_max_gpu=args.warmup_max_gpu,
        reference=not args.no_reference, device_inputs=args.device_inputs, plots=not args.no_plots,
        seed=args.seed, note=args.note,
    )
    try:
        devs = harness.Harness(settings, log=lambda m: None).device_status()
        if not any(d["usable"] for d in devs):  # else only the CPU references would run, and exit 0
            why = "; ".join(f"{d['name']}: {d['reason']}" for d in devs)
            print(f"gpusvm bench: no usable device in --devices ({why})", file=sys.stderr)
            return 2
        doc = harness.run(settings)
    except ValueError as exc:  # bad names in --solvers / --datasets / --devices
        print(f"gpusvm bench: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # --out names a file, or a folder that cannot be created or written
        print(f"gpusvm bench: cannot write the outputs to --out {args.out}: {exc}", file=sys.stderr)
        return 2
    # exit 1 when no row produced a timing (every fit failed: a run that only reports errors is no benchmark)
    if doc["rows"] and not any(r["status"] == "ok" for r in doc["rows"]):
        print("gpusvm bench: every row failed (see the error column of the table)", file=sys.stderr)
        return 1
    return 0 if doc["rows"] else 1


def _info() -> int:
    from . import __version__, gpu_status
    from ._backend import registered_ops
    from .bench import harness, registry

    ok, why = gpu_status(0)
    print(f"gpusvm {__version__}")
    m = harness.machine_info(ok)
    print(f"CPU: {m['cpu_model']} ({m['cpu_count']} logical cores)")
    print(f"GPU: {m['gpu']['name'] if ok and m.get('gpu') and m['gpu'].get('name') else 'not usable: ' + why}")
    print("fused ops: " + ", ".join(f"{k} [{'/'.join(v)}]" for k, v in registered_ops().items()))
    print("benchmark solvers: " + ", ".join([*harness.reference_solvers(), *registry.solvers()]))
    for mod, err in registry.import_errors().items():
        print(f"  entry {mod} failed to import: {err}")
    return 0


def main(argv=None) -> int:
    """Entry point of the ``gpusvm`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("train", "predict"):
        from . import _cli_libsvm

        return (_cli_libsvm.train_main if argv[0] == "train" else _cli_libsvm.predict_main)(argv[1:])
    p = _parser()
    args = p.parse_args(argv)
    if args.version:
        from . import __version__

        print(f"gpusvm {__version__}")
        return 0
    if args.cmd == "bench":
        return _bench(args)
    if args.cmd == "info":
        return _info()
    if args.cmd == "report":
        import json

        from .bench import report

        docs = []
        for f in args.files:
            try:
                with open(f, encoding="utf-8") as fh:
                    doc = json.load(fh)
            except (OSError, ValueError) as exc:
                print(f"gpusvm report: cannot read {f}: {exc}", file=sys.stderr)
                return 2
            if not isinstance(doc, dict) or not {"rows", "datasets", "machine", "devices", "created"} <= doc.keys():
                print(f"gpusvm report: {f} is not a JSON file written by 'gpusvm bench'", file=sys.stderr)
                return 2
            if any(d == doc for d in docs):
                # (the same run named twice doubled its rows in the table, and the plots showed one of each)
                print(f"gpusvm report: {f} is a run already given (created {doc['created']}); left out",
                      file=sys.stderr)
                continue
            docs.append(doc)
        try:
            report.write_all(report.merge(docs), args.out, plots=not args.no_plots)
        except OSError as exc:
            print(f"gpusvm report: cannot write the outputs to --out {args.out}: {exc}", file=sys.stderr)
            return 2
        return 0
    p.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env bash
# The one command to run on a GPU machine, from a source checkout (PYTHONPATH=., nothing installed):
#
#   1. "nvcc":  every CUDA kernel compiled to PTX for sm_80 and sm_90 (skipped when nvcc is absent);
#   2. "tests": the GPU tests (pytest -m gpu), which compare each CUDA kernel with its CPU twin;
#   3. "micro": the pytest-benchmark micro-benchmarks in benchmarks/ (CPU and GPU cases), saved as JSON;
#   4. "paper": gpusvm bench --suite paper --devices cpu,gpu on the LIBSVM files;
# and, only when named in STEPS, the issues' own tables on the GPU (each writes into the result folder):
#   "budget": benchmarks/budget_table.py --devices $DEVICES (BUDGET_ARGS; default 3 seeds, 1 timing run of
#             3 epochs: phishing, ijcnn1 and most of a9a fit in 8 minutes on an H100 machine);
#   "linear": benchmarks/linear_table.py --device $ONE_DEVICE (LINEAR_ARGS, e.g. --datasets a9a --cap 20);
#   "dcsvm":  benchmarks/dcsvm_bench.py --device $ONE_DEVICE (DCSVM_ARGS, e.g. --datasets ijcnn1,a9a, and
#             --configs 4,4,batch;4,4,nobatch;4,4,batch,minc=200 to time the batched cluster solves
#             against one-by-one and with the 64-cluster level solved; the default configs ran on an H200
#             at b542594, the --configs variants not yet). On full ijcnn1 five of level 2's 16 clusters hold
#             4,999-5,015 points, over batch_max_size=4096, so they ran one by one on the H200: add
#             4,4,bmax=8192 to time the level with all 16 in the batched launch. DCSVM_ARGS is split on spaces
#             only and its quotes stay literal: write --configs 4,4;4,4,bmax=8192;8,2 without quotes.
#   "certify": benchmarks/batched_certify.py --device $ONE_DEVICE: what the float64 check of the batched
#             solver's float32 stop finds and costs (CERTIFY_ARGS, e.g. --datasets a9a ijcnn1).
#   "pairs":  benchmarks/pair_batch.py --devices $DEVICES: multi-class SVC with the class pairs one by one
#             against together (batch_pairs; digits, 435 and 1,225 small pairs; PAIRS_ARGS). Not yet run on a
#             GPU; the one-by-one GPU row of the 1,225-pair case is about 20 s a fit (3 repeats + warm-up).
#
# Usage:  benchmarks/run_gpu.sh [DATA_DIR] [NAME]
#   DATA_DIR  folder of the LIBSVM .xz files (default: $GPUSVM_DATA, else ../shared/data)
#   NAME      result folder name (default: paper_<gpu name>, e.g. paper_nvidia-h100-80gb-hbm3)
# Environment:
#   STEPS       steps to run, in order (default: "nvcc tests micro paper")
#   DATASETS    comma-separated paper data sets for this call (default: all five); run one per call
#               when a command has a time limit, then merge:  python -m gpusvm report <json...> --out DIR
#   DEVICES     devices of the paper suite and the budget table (default: cpu,gpu)
#   ONE_DEVICE  device of the linear, DC-SVM and certify tables (default: gpu)
#   BENCH_ARGS  extra arguments for gpusvm bench (e.g. "--max-train 50000 --repeat 3")
#   OUT         parent folder of the results (default: benchmarks/results); a device runner that
#               collects files from $OUT gets them back from there
#   TARBALL     also pack the result folder into this .tar.gz (a runner that returns only a few
#               files gets one archive)
#
# With the `device` tool (the data folder beside the checkout does not travel; `.devdata/` is ignored):
#   here:   mkdir -p .devdata && cp ../shared/data/*.xz .devdata/
#   device: carry [".devdata"], command (each call <= 10 min; split STEPS / DATASETS over calls):
#           STEPS="nvcc tests micro" OUT=/tmp/r TARBALL=$OUT/gpu1.tgz bash benchmarks/run_gpu.sh .devdata
#           STEPS=paper DATASETS=a9a,ijcnn1 OUT=/tmp/r TARBALL=$OUT/gpu2.tgz bash benchmarks/run_gpu.sh .devdata
#
# Budget (device tool: 10 min per call, 15 min of device time per drawn task). Process CPU seconds of one fit on
# the 2-core CPU machine (benchmarks/results/paper_cpu/): sklearn SVC a9a 51, ijcnn1 18, w8a 19, phishing 1.4,
# skin_nonskin 1,340 (!); our CPU svc-alfpgm a9a 72, w8a 46, skin 655; every other CPU row < 2 min.
# So: call 1 STEPS="nvcc tests micro"; call 2 STEPS=paper DATASETS=a9a,ijcnn1; call 3 DATASETS=w8a,phishing;
# skin_nonskin only with BENCH_ARGS="--max-train 60000" (sklearn took 55 CPU-s at 60k). Add
# --solvers to BENCH_ARGS to drop rows when a call runs short (gpusvm bench --list names them).
#
# Measured on the first GPU run (H100 80GB with a 16-core host, 2026-11-24, 7 calls, 27 min of the 30): machine
# start about 30 s; "nvcc" 10 s; "tests" 74 s with `-n 8` (pytest-xdist is there); "micro" 44 s; paper suite,
# wall per call: phishing 60 s, a9a+ijcnn1 364 s, w8a 131 s, skin_nonskin --max-train 60000 (kernel solvers)
# 171 s; budget_table.py --devices cpu,gpu --seeds 3 --time-reps 1 --time-epochs 3 got through phishing,
# ijcnn1, the a9a strategies and 2 of a9a's 3 budgets in 480 s. A machine goes back 30 s after a call:
# have the next command ready (results: benchmarks/results/paper_nvidia-h100-80gb-hbm3/README.md).
# Second GPU run (H200, 16-core host, 2026-11-27, 4 calls, 777 s of the 15 min a drawn task now gets): "tests"
# with PYTEST_ADDOPTS="-n 8" 66 s (325 tests); dcsvm --datasets ijcnn1,a9a plus certify --datasets a9a ijcnn1
# about 110 s together; the main job (gpusvm bench --devices cpu,gpu) 102 s; paper --solvers
# sklearn-svc,svc-smo,svc-pa-smo,svc-alfpgm,dcsvc: a9a about 190 s, ijcnn1 61 s, w8a+phishing 89 s (wall per call).
# With 15 minutes, run "nvcc tests" and the tables one call each, back to back, and give the machine back
# (results: benchmarks/results/gpu_nvidia-h200_b542594/README.md).
# Since that run, GPU rows warm up on the whole training set, not on 2,000-3,000 rows: the paper suite
# (warmup_max_gpu=0) and dcsvm_bench.py (--warmup full, its CPU rows too). A small warm-up left DC-SVM's
# k-means and level kernels to be compiled or loaded inside its one timed fit (benchmarks/results/
# warmup_coverage_cudasim.md), so the H200's DC-SVM GPU rows may include that cost. Each GPU row now costs one
# more fit: about +40 s of paper calls for a9a..phishing (svc-alfpgm a9a alone 22 s) and +5 s for dcsvm.
#
# Before spending device time, the same GPU tests and GPU micro-benchmark cases run on the CPU emulator of
# the kernels (tests/cudasim; they all passed there at 613ecee, the micro cases in 4.4 min):
#   GPUSVM_CUDASIM=1 python -m pytest tests -m gpu
#   PYTHONPATH=.:tests python -c "import cudasim, pytest; cudasim.install(); pytest.main(['benchmarks', '-m', 'gpu', '--benchmark-disable'])"
#
# Results land in $OUT/$NAME: gpu_tests.txt, micro_<device>.json/.txt and the bench outputs
# (bench_paper[-subset]_cpu-gpu.{json,md,txt,png}). Copy them to benchmarks/results/ and commit.
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH=.
PY=${PYTHON:-python}
DATA=${1:-${GPUSVM_DATA:-../shared/data}}
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | tr 'A-Z ' 'a-z-' | tr -cd 'a-z0-9-')
NAME=${2:-paper_${gpu:-nogpu}}
DEST="${OUT:-benchmarks/results}/$NAME"
STEPS=${STEPS:-"nvcc tests micro paper"}
DEVICES=${DEVICES:-cpu,gpu}
ONE_DEVICE=${ONE_DEVICE:-gpu}
export GPUSVM_DATA="$DATA"  # the table scripts find the data through it
mkdir -p "$DEST"
status=0
echo "results -> $DEST" >&2
nvidia-smi >"$DEST/nvidia-smi.txt" 2>&1 || true
for step in $STEPS; do
    echo "=== $step" >&2
    case "$step" in
    nvcc)
        if command -v nvcc >/dev/null; then
            $PY -m gpusvm._backend.cuda_source 2>&1 | tee "$DEST/nvcc.txt"
            [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
        else
            echo "nvcc not found; skipped" | tee "$DEST/nvcc.txt"
        fi ;;
    tests)
        $PY -m pytest tests -m gpu -q -p no:cacheprovider -ra 2>&1 | tee "$DEST/gpu_tests.txt"
        [ "${PIPESTATUS[0]}" -eq 0 ] || status=1 ;;
    micro)
        dev=$([ -n "$gpu" ] && echo gpu || echo cpu)
        $PY -m pytest benchmarks -q -p no:cacheprovider --benchmark-only \
            --benchmark-json "$DEST/micro_$dev.json" --benchmark-columns=min,median,rounds 2>&1 \
            | tee "$DEST/micro_$dev.txt"
        [ "${PIPESTATUS[0]}" -eq 0 ] || status=1 ;;
    paper)
        sel=()
        [ -n "${DATASETS:-}" ] && sel=(--datasets "$DATASETS")
        # shellcheck disable=SC2086
        $PY -m gpusvm bench --suite paper --data-dir "$DATA" --devices "$DEVICES" --out "$DEST" \
            "${sel[@]}" ${BENCH_ARGS:-} || status=1 ;;
    budget)
        # shellcheck disable=SC2086
        $PY benchmarks/budget_table.py --devices "$DEVICES" --out "$DEST" --tag "${DEVICES//,/_}" \
            ${BUDGET_ARGS:---seeds 3 --time-reps 1 --time-epochs 3} || status=1 ;;
    linear)
        # shellcheck disable=SC2086
        $PY benchmarks/linear_table.py --device "$ONE_DEVICE" --out "$DEST/linear_table" ${LINEAR_ARGS:-} \
            || status=1 ;;
    dcsvm)
        # shellcheck disable=SC2086
        $PY benchmarks/dcsvm_bench.py --device "$ONE_DEVICE" --data-dir "$DATA" --out "$DEST" ${DCSVM_ARGS:-} \
            || status=1 ;;
    certify)
        # shellcheck disable=SC2086
        $PY benchmarks/batched_certify.py --device "$ONE_DEVICE" --tag "$ONE_DEVICE" --out "$DEST" \
            ${CERTIFY_ARGS:---datasets a9a ijcnn1 phishing w8a} || status=1 ;;
    pairs)
        # shellcheck disable=SC2086
        $PY benchmarks/pair_batch.py --devices "$DEVICES" --out "$DEST" ${PAIRS_ARGS:-} || status=1 ;;
    *)
        echo "unknown step $step (nvcc, tests, micro, paper, budget, linear, dcsvm, certify, pairs)" >&2; status=2 ;;
    esac
done
if [ -n "${TARBALL:-}" ]; then
    tar -czf "$TARBALL" -C "$(dirname "$DEST")" "$(basename "$DEST")" && echo "packed $DEST -> $TARBALL" >&2
fi
exit $status

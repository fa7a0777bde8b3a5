"""Shared pieces of the pytest-benchmark micro-benchmarks in ``benchmarks/``.

    PYTHONPATH=. python -m pytest benchmarks -p no:cacheprovider --benchmark-only \
        --benchmark-json benchmarks/results/micro_<device>.json

* fixture ``bench_backend``: parametrized over "cpu" and "gpu"; the GPU case is skipped with the reason
  when no CUDA device answers;
* the machine info pytest-benchmark writes into its JSON gets the CPU model, the core count and the GPU
  name and memory (or why there is none), so a saved result names the device it ran on.
"""

from __future__ import annotations

import os

import pytest

from gpusvm import get_backend, gpu_status


@pytest.fixture(params=["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def bench_backend(request):
    if request.param == "gpu":
        ok, why = gpu_status(0)
        if not ok:
            pytest.skip(f"no CUDA device available: {why}")
    return get_backend(request.param)


def pytest_benchmark_update_machine_info(config, machine_info):
    from gpusvm.bench.harness import machine_info as gpusvm_machine_info

    ok, why = gpu_status(0)
    info = gpusvm_machine_info(ok)
    machine_info["cpu_model"] = info["cpu_model"]
    machine_info["cpu_count"] = os.cpu_count()
    machine_info["gpu"] = info["gpu"] if ok else {"usable": False, "reason": why}

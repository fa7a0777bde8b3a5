"""The built wheel ships every kernels/*.cu inside the package and every module of the source tree."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    pytest.importorskip("build", reason="the 'build' package (test extra) is needed to build the wheel")
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc")
    shutil.copytree(ROOT / "gpusvm", src / "gpusvm", ignore=ignore)
    shutil.copytree(ROOT / "kernels", src / "kernels", ignore=ignore)
    out = tmp_path_factory.mktemp("dist")
    res = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(src)],
        capture_output=True, text=True,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    wheels = list(out.glob("gpusvm-*.whl"))
    assert len(wheels) == 1
    return wheels[0]


def test_wheel_ships_every_kernel(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    kernels = sorted(p.name for p in (ROOT / "kernels").iterdir() if p.suffix in (".cu", ".cuh"))
    assert "gram.cu" in kernels and "common.cuh" in kernels
    for k in kernels:
        assert f"gpusvm/kernels/{k}" in names, f"{k} missing from the wheel"


def test_wheel_ships_every_module(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for py in (ROOT / "gpusvm").rglob("*.py"):
        rel = py.relative_to(ROOT).as_posix()
        assert rel in names, f"{rel} missing from the wheel (add its package to pyproject.toml)"


def test_wheel_declares_console_script_and_extras(wheel):
    z = zipfile.ZipFile(wheel)
    meta = next(n for n in z.namelist() if n.endswith("METADATA"))
    text = z.read(meta).decode()
    for extra in ("cuda12", "cuda13", "test"):
        assert f"Provides-Extra: {extra}" in text
    assert "cupy-cuda12x" in text and "cupy-cuda13x" in text
    ep = next(n for n in z.namelist() if n.endswith("entry_points.txt"))
    assert "gpusvm = gpusvm.__main__:main" in z.read(ep).decode()


def test_datasets_submodule_is_an_attribute_of_the_package():
    """`import gpusvm; gpusvm.datasets.make_chessboard(...)` raised AttributeError unless the submodule had
    been imported already (the README's examples import it explicitly). Checked in a fresh interpreter."""
    code = ("import sys, gpusvm; assert 'gpusvm.datasets' not in sys.modules; "
            "X, y = gpusvm.datasets.make_chessboard(10, random_state=0); print(X.shape, 'datasets' in dir(gpusvm))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.split() == ["(10,", "2)", "True"]

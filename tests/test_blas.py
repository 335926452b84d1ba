"""The in-process BLAS choice: OpenBLAS with a fixed kernel when it runs here, a safe probe, an opt-out."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from arena.core import blas

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the OpenBLAS swap is Linux-only")


def _blas_in_child(**env):
    code = "import json; from arena.core.blas import blas_info; print(json.dumps(blas_info()))"
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)


def test_openblas_is_loaded_with_one_thread_and_the_fixed_kernel():
    info = blas.blas_info()
    assert info["blas"].startswith("OpenBLAS"), info
    assert info["threads"] == "1"
    assert info["coretype"] == blas.DEFAULT_CORETYPE


def test_reference_blas_on_request():
    assert _blas_in_child(ARENA_BLAS="reference")["blas"] == "reference"


def test_a_coretype_set_by_the_machine_does_not_change_the_kernel():
    assert _blas_in_child(OPENBLAS_CORETYPE="Prescott")["coretype"] == blas.DEFAULT_CORETYPE


def test_probe_rejects_a_library_that_cannot_run(tmp_path):
    fake = tmp_path / "libopenblas.so.0"
    fake.write_bytes(b"not a shared library")
    assert not blas.runs_here(fake)
    assert not list(tmp_path.glob("ok-*"))  # a failed probe is not remembered as a success


def test_probe_accepts_the_renamed_library_and_remembers(tmp_path):
    source = blas.openblas_source()
    assert source is not None, "scipy-openblas32 must be installed on Linux"
    lib = blas.renamed_copy(source, tmp_path / "copy")
    assert blas.runs_here(lib)
    assert list(lib.parent.glob("ok-*"))


@pytest.mark.skipif(shutil.which("nm") is None, reason="binutils' nm is not installed")
def test_every_blas_symbol_mlx_imports_is_renamed():
    import mlx.core as mx

    libmlx = Path(mx.__file__).parent / "lib" / "libmlx.so"
    out = subprocess.run(["nm", "-D", "--undefined-only", str(libmlx)], capture_output=True, text=True, check=True)
    imported = {line.split()[-1] for line in out.stdout.splitlines()}
    blas_like = {name for name in imported if name.startswith("cblas_") or (name.endswith("_") and
                                                                            not name.startswith("_"))}
    assert blas_like == set(blas.MLX_BLAS_SYMBOLS)


def test_processes_that_start_together_each_get_the_renamed_library(tmp_path):
    code = ("import sys; from pathlib import Path; from arena.core import blas; "
            "print(blas.renamed_copy(blas.openblas_source(), Path(sys.argv[1])))")
    children = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "copy")], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for _ in range(6)]
    results = [(child.wait(), child.stdout.read().strip(), child.stderr.read()) for child in children]
    assert all(code == 0 for code, _, _ in results), [err for _, _, err in results]
    assert {path for _, path, _ in results} == {str(tmp_path / "copy" / "libarena_openblas.so")}
    assert sorted(p.name for p in (tmp_path / "copy").iterdir()) == ["libarena_openblas.so"]

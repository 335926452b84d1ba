"""MLX's CPU JIT through arena's vector g++: chosen only where it can run, never wraps itself, and the same bits."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from arena.core import jit

# Each child prints the sha256 of a compiled SwiGLU over special and random inputs, of a model's logits, and of its
# loss gradient (the compiled kernels' VJPs), with the JIT state and the kernels it compiled.
CHILD = r"""
import hashlib, json, os, sys
from arena.core.blas import ensure_fast_blas
ensure_fast_blas()
import mlx.core as mx, mlx.nn as nn, numpy as np
from mlx_lm import load
from mlx_lm.models.activations import swiglu
from mlx.utils import tree_flatten
from arena.core.jit import ensure_vector_jit

rng = np.random.default_rng(0)
special = np.array([0.0, -0.0, 1e-45, -1e-45, 1e-38, 87.9, 88.0, 88.1, -87.9, -88.0, -88.1, 1e30, -1e30, np.inf,
                    -np.inf, np.nan, 0.5, -0.5, 0.3465736, -0.3465736], dtype=np.float32)
bits = rng.integers(0, 2**32, 1 << 20, dtype=np.uint64).astype(np.uint32).view(np.float32)
gate = np.concatenate([special, bits, (rng.standard_normal(1 << 20) * 8).astype(np.float32)])
up = np.concatenate([np.ones_like(special), rng.standard_normal(2 << 20).astype(np.float32)])
digest = lambda a: hashlib.sha256(np.ascontiguousarray(np.array(a)).tobytes()).hexdigest()
out = {"swiglu": digest(swiglu(mx.array(gate), mx.array(up)))}
model, _ = load(sys.argv[1])
tokens = mx.array(rng.integers(0, 1000, (16, 24)))
out["logits"] = digest(model(tokens))
loss = lambda m: nn.losses.cross_entropy(m(tokens[:, :-1]), tokens[:, 1:]).mean()
_, grads = nn.value_and_grad(model, loss)(model)
out["grads"] = digest(mx.concatenate([g.reshape(-1) for _, g in tree_flatten(grads)]))
state = ensure_vector_jit()
kernels = state.get("kernels")
out["jit"] = state["jit"]
out["compiled"] = len(list(__import__("pathlib").Path(kernels).rglob("*.so"))) if kernels else 0
print(json.dumps(out))
"""


def _child(model: Path, tmp: Path, **env) -> dict:
    tmp.mkdir()
    inherited = {k: v for k, v in os.environ.items() if k != "ARENA_JIT"}
    run_env = {**inherited, "TMPDIR": str(tmp), "ARENA_CACHE_DIR": str(tmp / "cache"), **env}
    done = subprocess.run([sys.executable, "-c", CHILD, str(model)], env=run_env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(jit._unavailable() is not None or jit.real_compiler() is None,
                    reason=f"no vector JIT here: {jit._unavailable() or 'no g++'}")
def test_the_vector_jit_gives_the_plain_builds_bits(base_model_dir, tmp_path):
    plain = _child(base_model_dir, tmp_path / "plain", ARENA_JIT="plain")
    vector = _child(base_model_dir, tmp_path / "vector")
    assert (plain["jit"], vector["jit"]) == ("plain (ARENA_JIT=plain)", "vector")
    assert vector["compiled"] >= 1  # swiglu and the model's kernels were built by the wrapper, in its own folder
    assert {k: vector[k] for k in ("swiglu", "logits", "grads")} == {k: plain[k] for k in ("swiglu", "logits", "grads")}


def test_cpu_flags_are_read_from_cpuinfo(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma f16c bmi2\n")
    assert jit.cpu_supports(cpuinfo=info)
    info.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx\n")
    assert not jit.cpu_supports(cpuinfo=info)
    assert not jit.cpu_supports(cpuinfo=tmp_path / "missing")


def test_the_wrapper_runs_the_real_compiler_with_the_flags_first(tmp_path):
    compiler = tmp_path / "echo-args"
    compiler.write_text('#!/bin/sh\necho "$@"\n')
    compiler.chmod(0o755)
    wrapper = jit.write_wrapper(str(compiler), tmp_path / "bin")
    out = subprocess.run([str(wrapper), "-O3", "a b.cpp"], capture_output=True, text=True, check=True).stdout
    assert out.split() == [*jit.VECTOR_FLAGS, "-O3", "a", "b.cpp"]
    assert jit.write_wrapper(str(compiler), tmp_path / "bin") == wrapper  # rewritten only when it changes


def test_the_real_compiler_is_never_arenas_own_wrapper(tmp_path, monkeypatch):
    monkeypatch.setenv("ARENA_CACHE_DIR", str(tmp_path / "cache"))
    system = tmp_path / "system"
    system.mkdir()
    (system / "g++").write_text("#!/bin/sh\n")
    (system / "g++").chmod(0o755)
    wrapper = jit.write_wrapper(str(system / "g++"), tmp_path / "cache" / "jit" / "key")
    monkeypatch.setenv("PATH", f"{wrapper.parent}{os.pathsep}{system}")
    assert jit.real_compiler() == str((system / "g++").resolve())
    monkeypatch.setenv("PATH", str(wrapper.parent))
    assert jit.real_compiler() is None


@pytest.mark.skipif(jit._unavailable() is not None, reason=f"no vector JIT here: {jit._unavailable()}")
def test_a_compiler_that_rejects_the_flags_leaves_mlx_on_its_plain_build(tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "g++").write_text('#!/bin/sh\nfor a in "$@"; do [ "$a" = -fno-trapping-math ] && exit 1; done\nexit 0\n')
    (fake / "g++").chmod(0o755)
    code = ("import json, os; from arena.core.jit import ensure_vector_jit as e; "
            "print(json.dumps([e(), os.environ['PATH']]))")
    env = {**os.environ, "PATH": f"{fake}{os.pathsep}/usr/bin:/bin", "ARENA_CACHE_DIR": str(tmp_path / "cache"),
           "TMPDIR": str(tmp_path)}
    env.pop("ARENA_JIT", None)
    state, path = json.loads(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                            check=True).stdout)
    assert state["jit"].startswith("plain (") and "failed a test build" in state["jit"]
    assert path.split(os.pathsep)[0] == str(fake)  # no wrapper put in front


@pytest.mark.skipif(jit.real_compiler() is None, reason="no g++ here")
def test_the_test_build_passes_with_the_real_compiler_and_is_remembered(tmp_path):
    wrapper = jit.write_wrapper(jit.real_compiler(), tmp_path)
    assert jit.compiles(wrapper)
    assert (tmp_path / "ok").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g++", "ok"]  # the probe's files are gone

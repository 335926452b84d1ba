"""Pins: the model-hash x quant x config-hash tuple (plus versions) that every published score is tied to."""

from __future__ import annotations

import json
import platform
import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from arena.core.artifacts import atomic_write_json
from arena.core.blas import blas_info
from arena.core.code import producing_code
from arena.core.errors import ArenaError
from arena.core.hashing import digest_config, digest_dir


class PinError(ArenaError):
    """A path cannot be pinned (not a model directory)."""


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def versions() -> dict[str, str]:
    """Everything outside the artifacts that can change a result: interpreter, libraries, BLAS, platform."""
    blas = blas_info()
    return {
        "python": platform.python_version(),
        "mlx": _version("mlx"),
        "mlx-lm": _version("mlx-lm"),
        "textarena": _version("textarena"),
        "blas": blas["blas"],
        "blas_threads": blas["threads"],
        "blas_coretype": blas["coretype"],
        "platform": f"{sys.platform}-{platform.machine()}",
    }


# A QLoRA snapshot's float LoRA adapter, kept beside its quantised weights (arena.train.fuse).
ADAPTER_WEIGHTS = "adapters.safetensors"


def model_quant(model_dir: str | Path) -> str:
    """``none``, ``q8`` or ``q4`` (``q<bits>`` in general) from the model's config.json; ``+lora`` when the directory
    also carries an unfused LoRA adapter (a quantised base with a float adapter: ``q4+lora``)."""
    config = read_model_config(model_dir)
    quant = config.get("quantization") or config.get("quantization_config")
    bits = f"q{quant['bits']}" if quant else "none"
    return f"{bits}+lora" if (Path(model_dir) / ADAPTER_WEIGHTS).exists() else bits


def read_model_config(model_dir: str | Path) -> dict[str, Any]:
    """The model directory's config.json, or a PinError saying what is missing."""
    path = Path(model_dir)
    if not path.is_dir():
        raise PinError(f"model directory not found: {path}")
    config = path / "config.json"
    if not config.exists():
        raise PinError(f"{path} is not an mlx-lm model directory: it has no config.json")
    try:
        loaded = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise PinError(f"{config} is not readable JSON ({type(error).__name__}: {error}); "
                       "rebuild the model or fix the file") from error
    if not isinstance(loaded, dict):
        raise PinError(f"{config} holds a JSON {type(loaded).__name__}, not an object; rebuild the model")
    return loaded


def model_pin(model_dir: str | Path, config: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Pin of a model directory: digest of its files, its quant, the hash of the config it is used with."""
    quant = model_quant(model_dir)
    return {
        "kind": "model",
        "model_hash": digest_dir(model_dir),
        "quant": quant,
        "config_hash": digest_config(dict(config or {})),
        "versions": versions(),
    }


def write_meta(
    out_dir: str | Path,
    *,
    inputs: Mapping[str, str],
    config: Mapping[str, Any] | None = None,
    pin: Mapping[str, Any] | None = None,
    code: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Write ``meta.json`` into an artifact directory: its own digest, its inputs' digests, config, pin, code, versions.

    ``code`` is the entry script and its import closure's digest (default: ``producing_code()``, this process's).
    """
    meta = {
        "digest": digest_dir(out_dir, link_roots=()),  # arena writes no links: one here is refused
        "inputs": dict(sorted(inputs.items())),
        "config": dict(config or {}),
        "config_hash": digest_config(dict(config or {})),
        "pin": dict(pin) if pin is not None else None,
        "code": dict(code) if code is not None else producing_code(),
        "versions": versions(),
    }
    atomic_write_json(Path(out_dir) / "meta.json", meta)
    return meta

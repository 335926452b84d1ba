"""The base model stage: the embedded tiny qwen2, the qwen3 stand-in, a GGUF import, or a local/hub model; quantise."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

from arena.core.artifacts import atomic_dir, atomic_write_json
from arena.core.config import ConfigError, as_dict
from arena.core.pins import PinError, model_pin, read_model_config, write_meta
from arena.train.config import QUANTS, BaseConfig
from arena.train.embedded import build_embedded
from arena.train.gguf import is_gguf_source
from arena.train.memory import memory_note


def resolve_source(source: str) -> Path:
    """A local mlx-lm model directory, or a hub id downloaded through huggingface_hub (needs network)."""
    path = Path(source).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        raise ConfigError(f"base.source = {source!r} is a GGUF file: write it as 'gguf:{source}'")
    if path.exists():
        try:
            read_model_config(path)
        except PinError as error:
            raise ConfigError(f"base.source = {source!r}: {error}") from error
        return path
    if source.count("/") != 1 or source.startswith((".", "/", "~")):
        raise ConfigError(
            f"base.source = {source!r} is invalid: expected 'embedded', 'standin', 'smollm2', 'gguf:PATH', an "
            "existing local model directory, or a hub id 'org/name'"
        )
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(source, allow_patterns=["*.json", "*.safetensors", "*.jinja", "*.txt"]))
    except Exception as error:  # noqa: BLE001 -- any hub failure means the same thing to the user
        raise ConfigError(
            f"base.source = {source!r} looks like a hub id but could not be fetched ({type(error).__name__}); "
            "hub ids need network access, or download the model and set base.source to its local directory"
        ) from error


def quantise(source: Path, out: Path, bits: int) -> None:
    """Quantise with mlx-lm's own converter (its output directory must not exist yet)."""
    from mlx_lm import convert

    group_size = 64 if _hidden_size(source) % 64 == 0 else 32
    convert(str(source), str(out), quantize=True, q_bits=bits, q_group_size=group_size)


def _hidden_size(model_dir: Path) -> int:
    return int(read_model_config(model_dir)["hidden_size"])


def build_base(config: BaseConfig, out_dir: str | Path) -> dict[str, Any]:
    """Build ``artifacts/models/base`` atomically and write its meta.json; return the meta."""
    with atomic_dir(out_dir) as tmp:
        full = tmp / "full"
        if config.source == "embedded":
            source = build_embedded(full, config)
            inputs = {"embedded_seed": str(config.seed)}
        elif is_gguf_source(config.source):
            source, inputs = _import_gguf(config, full)
        elif config.source == "standin":
            from arena.train.standin import build_standin

            source = build_standin(full, config)
            inputs = {"standin_seed": str(config.seed)}
        else:
            source = resolve_source(config.source)
            inputs = {"source": source.as_posix()}
        bits = QUANTS[config.quant]
        if bits is None:
            _copy_model(source, tmp)
        else:
            quantise(source, tmp / "quantised", bits)
            _copy_model(tmp / "quantised", tmp)
        shutil.rmtree(full, ignore_errors=True)
        shutil.rmtree(tmp / "quantised", ignore_errors=True)
        _normalise_config(tmp)
        meta = write_meta(tmp, inputs=inputs, config=as_dict(config), pin=model_pin(tmp))
    print(f"base: {memory_note(out_dir)}", file=sys.stderr)
    return meta


def _import_gguf(config: BaseConfig, out: Path) -> tuple[Path, dict[str, str]]:
    """``smollm2`` or ``gguf:PATH`` as an mlx-lm directory, its weights as shipped, pinned by the file's blake3."""
    from arena.train.gguf import SMOLLM2, check_smollm2, gguf_file, import_gguf

    path = gguf_file(config.source)
    inputs = import_gguf(path, out)
    if config.source == SMOLLM2:
        check_smollm2(inputs)
    if QUANTS[config.quant] is not None and "quantization" in read_model_config(out):
        raise ConfigError(f"base.quant = {config.quant!r} with base.source = {config.source!r}: the GGUF is already "
                          "quantised and is kept as shipped; set base.quant: none")
    return out, inputs


def _copy_model(source: Path, dest: Path) -> None:
    for item in sorted(source.iterdir()):
        if item.is_file() and (item.suffix in {".json", ".safetensors", ".jinja"}) and item.name != "meta.json":
            shutil.copy2(item, dest / item.name)


def _normalise_config(model_dir: Path) -> None:
    """Rewrite config.json with sorted keys so the same model always has the same bytes."""
    path = model_dir / "config.json"
    atomic_write_json(path, json.loads(path.read_text()))

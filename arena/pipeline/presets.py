"""Params presets: files of dotted-key overrides (``base.quant: q4``), checked whole and turned into DVC -S flags."""

from __future__ import annotations

import copy
import json
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from arena.core.config import ConfigError, parse_params
from arena.pipeline.params import validate_all


def load_preset(path: str | Path) -> dict[str, Any]:
    """A preset file: a mapping of ``section.key`` (dotted, at least two parts) to values."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"preset {path} not found; presets live in presets/ (e.g. presets/standin.yaml)")
    data = parse_params(path.read_text())
    if not isinstance(data, Mapping) or not data:
        raise ConfigError(f"preset {path} must be a non-empty mapping of dotted keys to values, e.g. base.quant: q4")
    for key in data:
        if not isinstance(key, str) or "." not in key:
            raise ConfigError(f"preset {path}: key {key!r} must be dotted, section.key (e.g. base.quant)")
    return dict(data)


def apply_preset(params: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``params`` with each dotted key set (intermediate mappings created as needed)."""
    out = copy.deepcopy(dict(params))
    for dotted, value in overrides.items():
        *parents, last = dotted.split(".")
        node = out
        for part in parents:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"preset key {dotted!r}: {part} is not a mapping in params.yaml")
        node[last] = value
    return out


def _flag_value(value: Any) -> str:
    """A value as ``dvc exp run -S`` parses it (YAML): strings bare, everything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


def dvc_flags(overrides: Mapping[str, Any]) -> str:
    """``-S key=value`` for each override, shell-quoted, on one line."""
    return " ".join(f"-S {shlex.quote(f'{key}={_flag_value(value)}')}" for key, value in overrides.items())


def checked_flags(preset: str | Path, params: Mapping[str, Any]) -> str:
    """The preset's DVC flags, after validating ``params`` with the preset applied (a ConfigError if it fails)."""
    overrides = load_preset(preset)
    try:
        validate_all(apply_preset(params, overrides))
    except ConfigError as error:
        raise ConfigError(f"params.yaml with preset {preset} is invalid: {error}") from None
    return dvc_flags(overrides)

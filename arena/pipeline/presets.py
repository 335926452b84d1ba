"""Params presets: files of dotted-key overrides (``base.quant: q4``), checked whole and turned into DVC -S flags."""

from __future__ import annotations

import copy
import json
import os
import re
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


def preset_overrides(preset: str | Path | None, settings: list[str]) -> dict[str, Any]:
    """A preset file's dotted keys (none without one), then each ``key=value`` setting (a top-level key such as
    ``loop`` too): a YAML value, as ``dvc exp run -S`` parses it; a setting without ``=`` is refused."""
    out = load_preset(preset) if preset else {}
    for setting in settings:
        key, sep, value = setting.partition("=")
        if not sep or not key:
            raise ConfigError(f"setting {setting!r} must be key=value (e.g. train.lr=1e-3 or loop=rest)")
        out[key] = parse_params(f"v: {value}")["v"]
    return out


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


# Characters a bare string may hold in Hydra's override grammar (what `dvc exp run -S` parses) and in a shell word
# that `$(...)` splits: letters, digits and ``_ - . / + @ %`` (then ``:``); anything else is written Hydra-quoted.
_BARE = re.compile(r"[A-Za-z0-9_./+@%-][A-Za-z0-9_./+@%:-]*")


def _hydra_string(text: str) -> str:
    """A string as Hydra's grammar reads it back: bare where that parses to the same string, else single-quoted."""
    if _BARE.fullmatch(text):
        try:
            if _parsed(f"k={text}") == text:
                return text
        except ConfigError:
            pass
    escaped = re.sub(r"(\\+)$", lambda m: m.group(1) * 2, text.replace("'", "\\'"))
    return f"'{escaped}'"


def _hydra_value(value: Any) -> str:
    """A value in Hydra's override grammar, with no shell quoting: ``$(arena preset ...)`` passes words as printed."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, str):
        return _hydra_string(value)
    if isinstance(value, list):
        return "[" + ",".join(_hydra_value(item) for item in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{_hydra_string(str(k))}:{_hydra_value(v)}" for k, v in value.items()) + "}"
    raise ConfigError(f"preset value {value!r} has type {type(value).__name__}; use a string, number, list or map")


def _parsed(override: str) -> Any:
    """The value Hydra's override parser (DVC's -S) reads from ``override``; a ConfigError if it does not parse."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import ValueType
    from hydra.errors import HydraException

    try:
        parsed = OverridesParser.create().parse_overrides([override])[0]
    except HydraException as error:
        raise ConfigError(f"-S {override} does not parse as a DVC override: {str(error).splitlines()[0]}") from None
    if parsed.value_type != ValueType.ELEMENT:
        raise ConfigError(f"-S {override} would be a DVC parameter sweep ({parsed.value_type.name}), not one value")
    return parsed.value()


def _expanded(value: Any) -> Any:
    """``value`` with a string's leading ``~/`` expanded to the home directory (Hydra's grammar has no ``~``)."""
    if isinstance(value, str) and value.startswith("~/"):
        return os.path.expanduser(value)
    if isinstance(value, list):
        return [_expanded(item) for item in value]
    if isinstance(value, Mapping):
        return {k: _expanded(v) for k, v in value.items()}
    return value


def _present(params: Mapping[str, Any], dotted: str) -> bool:
    node: Any = params
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


def dvc_flag(key: str, value: Any, params: Mapping[str, Any]) -> str:
    """``-S key=value`` as DVC's Hydra parser reads it, with no shell quoting and no whitespace (``$(...)`` splits
    words on whitespace and never removes quotes). ``++key`` adds a key that ``params`` lacks; a map replaces the
    one in ``params`` by ``-S ~key -S ++key={...}`` (a plain ``-S key={...}`` merges into it, and refuses new
    keys). Checked by parsing it back; a value that cannot be written so is a ConfigError naming it."""
    value = _expanded(value)
    override = f"{key}={_hydra_value(value)}"
    if any(char.isspace() for char in override):
        raise ConfigError(f"preset key {key} = {value!r} holds whitespace, which the shell splits in "
                          f"$(arena preset ...); set it in params.yaml, or pass -S \"{key}='...'\" by hand")
    if _parsed(override) != value:
        raise ConfigError(f"preset key {key} = {value!r} reads back from -S {override} as {_parsed(override)!r}; "
                          "set it in params.yaml instead")
    if not _present(params, key):
        return f"-S ++{override}"
    if isinstance(value, Mapping):
        return f"-S ~{key} -S ++{override}"
    return f"-S {override}"


def dvc_flags(overrides: Mapping[str, Any], params: Mapping[str, Any]) -> str:
    """The ``-S`` flags for ``overrides`` on one line, for ``dvc exp run -n NAME $(arena preset FILE)``."""
    return " ".join(dvc_flag(key, value, params) for key, value in overrides.items())


def checked_flags(preset: str | Path, params: Mapping[str, Any]) -> str:
    """The preset's DVC flags, after validating ``params`` with the preset applied (a ConfigError if it fails)."""
    overrides = load_preset(preset)
    try:
        validate_all(apply_preset(params, overrides))
    except ConfigError as error:
        raise ConfigError(f"params.yaml with preset {preset} is invalid: {error}") from None
    return dvc_flags(overrides, params)

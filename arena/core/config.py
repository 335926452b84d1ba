"""Frozen, validated config objects, one per params.yaml section; errors name key, value and what is allowed."""

from __future__ import annotations

import collections.abc
import dataclasses
import math
import re
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml

from arena.core.errors import ArenaError

PARAMS_FILE = "params.yaml"

C = TypeVar("C")


class ConfigError(ArenaError):
    """A params.yaml value is missing, unknown, of the wrong type or out of range."""


# Every integer in params (seeds, sizes, counts) must fit the 64-bit seeds and sizes the RNGs and arrays take.
INT_LIMIT = 2**63


def check_number(path: str, value: Any) -> None:
    """A float must be finite and an integer inside (-2^63, 2^63): what every params value is held to."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{path} = {value!r} is invalid: must be a finite number (no .inf or .nan)")
    if isinstance(value, int) and not isinstance(value, bool) and not -INT_LIMIT < value < INT_LIMIT:
        raise ConfigError(f"{path} = {value!r} is invalid: must be below 2^63 in size (seeds and sizes are 64-bit)")


def check_numbers(path: str, value: Any) -> None:
    """``check_number`` on every number anywhere inside ``value`` (mappings and lists walked, keys named)."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            check_numbers(f"{path}.{key}" if path else str(key), item)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            check_numbers(f"{path}[{index}]", item)
    else:
        check_number(path, value)


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", str(tp))


def _check_union(path: str, value: Any, options: tuple[Any, ...]) -> Any:
    """``value`` as the first option that takes it (None where allowed); else the first option's error."""
    if value is None and type(None) in options:
        return None
    errors = []
    for option in options:
        if option is type(None):
            continue
        try:
            return _check_type(path, value, option)
        except ConfigError as error:
            errors.append(str(error))
    raise ConfigError(errors[0])


def _check_sequence(path: str, value: Any, tp: Any) -> tuple[Any, ...]:
    """A list (or tuple) of ``tp``'s item type, as a tuple; the error names the bad item's index."""
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"{path} = {value!r} must be a list, got {type(value).__name__}")
    (item_type, *_rest) = typing.get_args(tp) or (Any,)
    return tuple(_check_type(f"{path}[{i}]", item, item_type) for i, item in enumerate(value))


def _check_mapping(path: str, value: Any) -> dict[Any, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{path} = {value!r} must be a mapping, got {type(value).__name__}")
    return dict(value)


def _check_bool(path: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{path} = {value!r} must be true or false, got {type(value).__name__}")
    return value


def _check_int(path: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{path} = {value!r} must be an integer, got {type(value).__name__}")
    check_number(path, value)
    return value


def _check_float(path: str, value: Any) -> float:
    if isinstance(value, str):
        raise ConfigError(f"{path} = {value!r} must be a float, got a string; write a number such as 5e-05")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{path} = {value!r} must be a float, got {type(value).__name__}")
    check_number(path, float(value))
    return float(value)


def _check_str(path: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{path} = {value!r} must be a string, got {type(value).__name__}")
    return value


# Looked up by the exact type: a subclass (an IntEnum, say) falls through to the isinstance check below.
_SCALARS = {bool: _check_bool, int: _check_int, float: _check_float, str: _check_str}


def _check_type(path: str, value: Any, tp: Any) -> Any:
    """Return ``value`` converted to ``tp`` where lossless, else raise a ConfigError naming the key."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return _check_union(path, value, typing.get_args(tp))
    if origin in (tuple, list):
        return _check_sequence(path, value, tp)
    if origin in (dict, collections.abc.Mapping) or tp is dict:
        return _check_mapping(path, value)
    if tp is Any:
        return value
    if isinstance(tp, type) and tp in _SCALARS:
        return _SCALARS[tp](path, value)
    if isinstance(tp, type) and not isinstance(value, tp):
        raise ConfigError(f"{path} = {value!r} must be {_type_name(tp)}, got {type(value).__name__}")
    return value


def from_mapping(cls: type[C], data: Any, section: str) -> C:
    """Build the frozen dataclass ``cls`` from ``data``, rejecting unknown keys and wrong types.

    Field validation beyond types lives in each class's ``__post_init__`` (raising ConfigError).
    """
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{section} must be a mapping of keys to values, got {type(data).__name__}: {data!r}")
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ConfigError(
            f"unknown key{'s' if len(unknown) > 1 else ''} {', '.join(f'{section}.{k}' for k in unknown)}; "
            f"allowed keys in {section}: {', '.join(sorted(fields))}"
        )
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for name, field in fields.items():
        if name in data:
            kwargs[name] = _check_type(f"{section}.{name}", data[name], hints[name])
            if name == "seed" and isinstance(kwargs[name], int):
                require(kwargs[name] >= 0, f"{section}.seed", kwargs[name], "seeds are in [0, 2^63): must be >= 0")
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            raise ConfigError(f"missing required key {section}.{name} ({_type_name(hints[name])})")
    return cls(**kwargs)


def require(condition: bool, key: str, value: Any, allowed: str) -> None:
    """Raise a ConfigError naming ``key``, its ``value`` and what is ``allowed`` unless ``condition``."""
    if not condition:
        raise ConfigError(f"{key} = {value!r} is invalid: {allowed}")


def require_choice(key: str, value: Any, choices: typing.Iterable[Any]) -> None:
    """Raise unless ``value`` is one of ``choices``."""
    choices = list(choices)
    require(value in choices, key, value, "expected one of " + ", ".join(map(str, choices)))


class ParamsLoader(yaml.SafeLoader):
    """PyYAML's safe loader with YAML 1.2's float syntax: ``5e-05`` (what ``dvc exp run -S`` writes) is a float.

    PyYAML follows YAML 1.1, whose floats need a dot, so it reads ``5e-05`` and ``1e-5`` as strings; DVC itself
    (ruamel, YAML 1.2) reads them as floats. The resolver is mlx-lm's config loader's, on a private subclass.
    """


ParamsLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
        |\.[0-9_]+(?:[eE][-+][0-9]+)?
        |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        re.X,
    ),
    list("-+0123456789."),
)


def parse_params(text: str) -> Any:
    """Parse params YAML text with ``ParamsLoader``."""
    return yaml.load(text, Loader=ParamsLoader)  # noqa: S506 -- a SafeLoader subclass


def _as_dvc_reads(path: Path, text: str) -> Any:
    """``text`` parsed as DVC parses params (ruamel's safe loader, YAML 1.2): what it refuses is a ConfigError."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        return YAML(typ="safe").load(text)
    except MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = " ".join(str(error.problem or error.context or "malformed").split())
        hint = ("a key appears twice in one mapping; keep one" if "duplicate key" in problem else
                "quote a value holding ': ' or ':' inside [ ] or { } (\"mlx:artifacts/models/base\")")
        raise ConfigError(f"{path} is not YAML that DVC reads: {problem}{where}; {hint}") from None
    except YAMLError as error:
        raise ConfigError(f"{path} is not YAML that DVC reads: {' '.join(str(error).split())}") from None


def _first_difference(path: str, ours: Any, dvcs: Any) -> str | None:
    """The key path where the two readings of params differ (None: they agree)."""
    if isinstance(ours, Mapping) and isinstance(dvcs, Mapping):
        for key in ours.keys() | dvcs.keys():
            if key not in ours or key not in dvcs:
                return f"{path}.{key}" if path else str(key)
            found = _first_difference(f"{path}.{key}" if path else str(key), ours[key], dvcs[key])
            if found is not None:
                return found
        return None
    if isinstance(ours, list) and isinstance(dvcs, list) and len(ours) == len(dvcs):
        return next((found for index, (a, b) in enumerate(zip(ours, dvcs, strict=True))
                     if (found := _first_difference(f"{path}[{index}]", a, b)) is not None), None)
    same_nan = isinstance(ours, float) and isinstance(dvcs, float) and math.isnan(ours) and math.isnan(dvcs)
    return None if same_nan or (type(ours) is type(dvcs) and ours == dvcs) else path or "(the whole file)"


def _lookup(data: Any, path: str) -> Any:
    for part in re.findall(r"[^.\[\]]+", path):
        try:
            data = data[int(part)] if isinstance(data, list) else data[part]
        except (KeyError, IndexError, ValueError, TypeError):
            return None
    return data


def load_params(path: str | Path = PARAMS_FILE) -> dict[str, Any]:
    """Read params.yaml into a dict; a missing or malformed file is a ConfigError. It must read the same to DVC
    (ruamel, YAML 1.2: duplicate keys refused, ``on`` a string, ``010`` ten), which tracks these params."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path} not found: run from the repository root or pass --params PATH")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path} is not UTF-8 (byte {error.start}: {raw[error.start:error.start + 1]!r}); "
                          "save it as UTF-8") from None
    dvcs = _as_dvc_reads(path, text)
    try:
        data = parse_params(text)
    except yaml.YAMLError as error:
        raise ConfigError(f"{path} is not valid YAML: {' '.join(str(error).split())}") from None
    differs = _first_difference("", data, dvcs)
    if differs is not None:
        raise ConfigError(f"{path}: {differs}: DVC reads {_lookup(dvcs, differs)!r}, arena "
                          f"{_lookup(data, differs)!r}; quote it (or write the value both read alike)")
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must be a mapping of sections, got {type(data).__name__}")
    return data


def load_section(cls: type[C], section: str, params: Mapping[str, Any] | str | Path = PARAMS_FILE) -> C:
    """Load and validate one params.yaml section as ``cls``."""
    data = params if isinstance(params, Mapping) else load_params(params)
    return from_mapping(cls, data.get(section), section)


def as_dict(config: Any) -> dict[str, Any]:
    """A config dataclass as a plain dict (tuples become lists), for hashing and meta.json."""
    def plain(value: Any) -> Any:
        if isinstance(value, tuple):
            return [plain(v) for v in value]
        if dataclasses.is_dataclass(value):
            return {k: plain(v) for k, v in dataclasses.asdict(value).items()}
        return value

    # A field marked ``metadata={"omit_default": True}`` is left out while it has its default, so a setting added
    # later (a player's ``think``) leaves every existing config's dict, hash and meta.json bytes as they were.
    return {f.name: plain(getattr(config, f.name)) for f in dataclasses.fields(config)
            if not (f.metadata.get("omit_default") and getattr(config, f.name) == _default(f))}


def _default(f: dataclasses.Field) -> Any:
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default  # type: ignore[misc]

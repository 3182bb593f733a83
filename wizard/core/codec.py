"""Strict conversion between frozen dataclasses and JSON-ready values.

Facts, plans, journals, events and answers files all cross a process or disk boundary as JSON
(or YAML). This module is the one place that turns them back into typed values, and it refuses
anything that does not fit the declared types, naming the offending field (``gpus[2].pci.vendor:
expected a string, got 10``). It never guesses: a float is not a version, a bool is not an int.

Union members that are dataclasses must declare ``KIND: ClassVar[str]``; the encoder writes it as
a ``"kind"`` key and the decoder dispatches on it.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar, get_args, get_origin

T = TypeVar("T")


class CodecError(ValueError):
    """A value does not match its declared type. The message starts with the field path."""


def to_jsonable(value: object) -> Any:
    """Turn a dataclass tree into dicts, lists and scalars (tuples become lists)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {}
        kind = getattr(type(value), "KIND", None)
        if isinstance(kind, str):
            out["kind"] = kind
        for field in dataclasses.fields(value):
            out[field.name] = to_jsonable(getattr(value, field.name))
        return out
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (tuple, list)):
        return [to_jsonable(item) for item in value]
    if isinstance(value, Mapping):
        return {str(key): to_jsonable(item) for key, item in value.items()}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise CodecError(f"cannot encode {type(value).__name__}")


def from_jsonable(tp: type[T], data: object, path: str = "") -> T:
    """Build a value of type ``tp`` from JSON-ready ``data``, checking every field."""
    return typing.cast(T, _decode(tp, data, path or "$"))


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _describe(data: object) -> str:
    if data is None:
        return "null"
    if isinstance(data, bool):
        return "a boolean"
    if isinstance(data, (int, float)):
        return f"the number {data!r}"
    if isinstance(data, str):
        return "a string"
    if isinstance(data, (list, tuple)):
        return "a list"
    if isinstance(data, Mapping):
        return "a mapping"
    return type(data).__name__


def _decode(tp: Any, data: object, path: str) -> object:
    origin = get_origin(tp)
    if tp is Any:
        return data
    if origin is typing.Literal:
        if data not in get_args(tp):
            allowed = ", ".join(repr(a) for a in get_args(tp))
            raise CodecError(f"{path}: expected one of {allowed}, got {data!r}")
        return data
    if origin is typing.Union or origin is types.UnionType:
        return _decode_union(tp, data, path)
    if origin in (tuple, list, typing.Sequence) or tp in (tuple, list):
        return _decode_sequence(tp, data, path)
    if origin in (dict, Mapping) or origin is typing.Mapping:
        return _decode_mapping(tp, data, path)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _decode_dataclass(tp, data, path)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(data)
        except ValueError:
            allowed = ", ".join(repr(m.value) for m in tp)
            raise CodecError(f"{path}: expected one of {allowed}, got {data!r}") from None
    return _decode_scalar(tp, data, path)


def _is_int(data: object) -> bool:
    return isinstance(data, int) and not isinstance(data, bool)


def _is_number(data: object) -> bool:
    return isinstance(data, (int, float)) and not isinstance(data, bool)


# type -> (accepts, what the message says it expected)
_SCALARS: dict[object, tuple[typing.Callable[[object], bool], str]] = {
    type(None): (lambda d: d is None, "null"),
    bool: (lambda d: isinstance(d, bool), "true or false"),
    int: (_is_int, "an integer"),
    float: (_is_number, "a number"),
    str: (lambda d: isinstance(d, str), "a string"),
}


def _decode_scalar(tp: Any, data: object, path: str) -> object:
    if tp not in _SCALARS:
        raise CodecError(f"{path}: unsupported type {tp!r}")
    accepts, expected = _SCALARS[tp]
    if not accepts(data):
        hint = " (quote it: versions are strings)" if tp is str and isinstance(data, float) else ""
        raise CodecError(f"{path}: expected {expected}, got {_describe(data)}{hint}")
    return float(typing.cast(float, data)) if tp is float else data


def _decode_union(tp: Any, data: object, path: str) -> object:
    members = get_args(tp)
    if data is None and type(None) in members:
        return None
    classes = [m for m in members if isinstance(m, type) and dataclasses.is_dataclass(m)]
    if classes and isinstance(data, Mapping) and "kind" in data:
        kinds = {getattr(cls, "KIND", None): cls for cls in classes}
        cls = kinds.get(data["kind"])
        if cls is None:
            allowed = ", ".join(repr(k) for k in kinds if k)
            raise CodecError(f"{path}.kind: expected one of {allowed}, got {data['kind']!r}")
        return _decode_dataclass(cls, data, path)
    errors = []
    for member in members:
        if member is type(None):
            continue
        try:
            return _decode(member, data, path)
        except CodecError as error:
            errors.append(str(error))
    raise CodecError(errors[0] if len(errors) == 1 else f"{path}: no variant matches ({errors[0]})")


def _decode_sequence(tp: Any, data: object, path: str) -> tuple[object, ...]:
    if not isinstance(data, (list, tuple)):
        raise CodecError(f"{path}: expected a list, got {_describe(data)}")
    args = get_args(tp)
    if (len(args) == 2 and args[1] is Ellipsis) or len(args) == 1:
        return tuple(_decode(args[0], item, f"{path}[{i}]") for i, item in enumerate(data))
    if not args:
        return tuple(data)
    if len(args) != len(data):
        raise CodecError(f"{path}: expected {len(args)} items, got {len(data)}")
    return tuple(
        _decode(a, item, f"{path}[{i}]") for i, (a, item) in enumerate(zip(args, data, strict=True))
    )


def _decode_mapping(tp: Any, data: object, path: str) -> dict[str, object]:
    if not isinstance(data, Mapping):
        raise CodecError(f"{path}: expected a mapping, got {_describe(data)}")
    key_tp, value_tp = get_args(tp) or (str, Any)
    out: dict[str, object] = {}
    for key, item in data.items():
        decoded_key = _decode(key_tp, key, f"{path} key")
        out[typing.cast(str, decoded_key)] = _decode(value_tp, item, f"{path}.{key}")
    return out


def _decode_dataclass(cls: type, data: object, path: str) -> object:
    if not isinstance(data, Mapping):
        raise CodecError(f"{path}: expected a mapping, got {_describe(data)}")
    hints = _hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - set(fields) - {"kind"})
    if unknown:
        raise CodecError(f"{path}.{unknown[0]}: unknown field (known: {', '.join(fields)})")
    kwargs: dict[str, object] = {}
    for name, field in fields.items():
        if name in data:
            kwargs[name] = _decode(hints[name], data[name], f"{path}.{name}")
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            raise CodecError(f"{path}.{name}: missing")
    return cls(**kwargs)

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
    return typing.cast(T, _decoder(typing.cast(Any, tp))(data, path or "$"))


Decoder = typing.Callable[[object, str], object]
"""Checks and converts one value of a type, given the path to it for the message."""


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


@functools.cache
def _decoder(tp: Any) -> Decoder:
    """The decoder of a type, worked out once per type: a table or a journal decodes thousands
    of values of a few dozen types, and deciding what each type is dominated the cost."""
    origin = get_origin(tp)
    if tp is Any:
        return lambda data, _path: data
    if origin is typing.Literal:
        return _literal_decoder(get_args(tp))
    if origin is typing.Union or origin is types.UnionType:
        return _union_decoder(get_args(tp))
    if origin in (tuple, list, typing.Sequence) or tp in (tuple, list):
        return _sequence_decoder(get_args(tp))
    if origin in (dict, Mapping) or origin is typing.Mapping:
        return _mapping_decoder(get_args(tp))
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _dataclass_decoder(tp)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _enum_decoder(tp)
    return _scalar_decoder(tp)


def _literal_decoder(allowed: tuple[object, ...]) -> Decoder:
    def decode(data: object, path: str) -> object:
        if data not in allowed:
            listed = ", ".join(repr(a) for a in allowed)
            raise CodecError(f"{path}: expected one of {listed}, got {data!r}")
        return data

    return decode


def _enum_decoder(tp: type[enum.Enum]) -> Decoder:
    def decode(data: object, path: str) -> object:
        try:
            return tp(data)
        except ValueError:
            allowed = ", ".join(repr(m.value) for m in tp)
            raise CodecError(f"{path}: expected one of {allowed}, got {data!r}") from None

    return decode


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


def _scalar_decoder(tp: Any) -> Decoder:
    if tp not in _SCALARS:

        def unsupported(_data: object, path: str) -> object:
            raise CodecError(f"{path}: unsupported type {tp!r}")

        return unsupported
    accepts, expected = _SCALARS[tp]

    def decode(data: object, path: str) -> object:
        if not accepts(data):
            hint = (
                " (quote it: versions are strings)" if tp is str and isinstance(data, float) else ""
            )
            raise CodecError(f"{path}: expected {expected}, got {_describe(data)}{hint}")
        return float(typing.cast(float, data)) if tp is float else data

    return decode


def _union_decoder(members: tuple[Any, ...]) -> Decoder:
    optional = type(None) in members
    kinds = {
        getattr(m, "KIND", None): m
        for m in members
        if isinstance(m, type) and dataclasses.is_dataclass(m)
    }
    others = [m for m in members if m is not type(None)]

    def decode(data: object, path: str) -> object:
        if data is None and optional:
            return None
        if kinds and isinstance(data, Mapping) and "kind" in data:
            cls = kinds.get(data["kind"])
            if cls is None:
                allowed = ", ".join(repr(k) for k in kinds if k)
                raise CodecError(f"{path}.kind: expected one of {allowed}, got {data['kind']!r}")
            return _decoder(cls)(data, path)
        errors = []
        for member in others:
            try:
                return _decoder(member)(data, path)
            except CodecError as error:
                errors.append(str(error))
        raise CodecError(
            errors[0] if len(errors) == 1 else f"{path}: no variant matches ({errors[0]})"
        )

    return decode


def _sequence_decoder(args: tuple[Any, ...]) -> Decoder:
    def as_list(data: object, path: str) -> list[object] | tuple[object, ...]:
        if not isinstance(data, (list, tuple)):
            raise CodecError(f"{path}: expected a list, got {_describe(data)}")
        return data

    if (len(args) == 2 and args[1] is Ellipsis) or len(args) == 1:
        item = args[0]

        def homogeneous(data: object, path: str) -> object:
            decode = _decoder(item)
            return tuple(decode(x, f"{path}[{i}]") for i, x in enumerate(as_list(data, path)))

        return homogeneous
    if not args:
        return lambda data, path: tuple(as_list(data, path))

    def fixed(data: object, path: str) -> object:
        items = as_list(data, path)
        if len(args) != len(items):
            raise CodecError(f"{path}: expected {len(args)} items, got {len(items)}")
        return tuple(
            _decoder(a)(x, f"{path}[{i}]") for i, (a, x) in enumerate(zip(args, items, strict=True))
        )

    return fixed


def _mapping_decoder(args: tuple[Any, ...]) -> Decoder:
    key_tp, value_tp = args or (str, Any)

    def decode(data: object, path: str) -> object:
        if not isinstance(data, Mapping):
            raise CodecError(f"{path}: expected a mapping, got {_describe(data)}")
        decode_key, decode_value = _decoder(key_tp), _decoder(value_tp)
        out: dict[str, object] = {}
        for key, item in data.items():
            decoded_key = decode_key(key, f"{path} key")
            out[typing.cast(str, decoded_key)] = decode_value(item, f"{path}.{key}")
        return out

    return decode


def _dataclass_decoder(cls: type) -> Decoder:
    # The fields' decoders are worked out at the first value, not here: a type may contain itself.
    fields: list[tuple[str, Decoder, bool]] = []
    known: set[str] = set()

    def decode(data: object, path: str) -> object:
        if not isinstance(data, Mapping):
            raise CodecError(f"{path}: expected a mapping, got {_describe(data)}")
        if not known:
            _plan_fields(cls, fields, known)
        unknown = sorted(set(data) - known)
        if unknown:
            names = ", ".join(name for name, _, _ in fields)
            raise CodecError(f"{path}.{unknown[0]}: unknown field (known: {names})")
        kwargs: dict[str, object] = {}
        for name, decode_field, required in fields:
            if name in data:
                kwargs[name] = decode_field(data[name], f"{path}.{name}")
            elif required:
                raise CodecError(f"{path}.{name}: missing")
        return cls(**kwargs)

    return decode


def _plan_fields(cls: type, fields: list[tuple[str, Decoder, bool]], known: set[str]) -> None:
    hints = _hints(cls)
    planned = [
        (
            field.name,
            _decoder(hints[field.name]),
            field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING,
        )
        for field in dataclasses.fields(cls)
        if field.init
    ]
    fields[:] = planned
    known.update({name for name, _, _ in planned} | {"kind"})

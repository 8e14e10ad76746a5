"""One codec between the report's frozen dataclasses and JSON, both ways, so that a report
written by `recall --json` reads back as the same typed values (results pages, --render-
only, merge) and no part of it has its own encoder or decoder.

The rules, the same for every class:
- a dataclass is an object whose keys are its fields in their order; a class may set
  `JSON_KEYS` to order them otherwise, to leave a field out (it decodes to its default),
  or to add a computed key: a property or a method without arguments, written but not
  read back;
- `JSON_FLAT` names the fields whose dataclass's keys sit in the parent's object, at the
  field's place (a run's counts beside its groups); such a field of type `X | None`, in
  JSON_OMIT at None, is None where none of X's keys are there (a history's failed commit);
- `JSON_OMIT` maps a key to the value at which it is absent (a section not asked for);
- tuples are arrays, `dict[str, X]` objects, `X | None` null or X, `Literal` one of its
  values, `Annotated[str, Pattern(...)]` a string of that form (a digest, a commit); a
  float field keeps a whole number an int, as the writer wrote it, so that a value read
  back writes the same bytes.

msgspec does this too, but cannot flatten a field, compute a key or keep those ints, and
the schema (schema.py) needs the same rules read the same way: these hundred lines are
the rules.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import types
import typing
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal, TypeVar, Union

from recall.errors import RecallError

T = TypeVar("T")


class Coded:
    """A value the codec writes and reads: every part of a report."""

    JSON_KEYS: ClassVar[tuple[str, ...] | None] = None
    JSON_FLAT: ClassVar[frozenset[str]] = frozenset()
    JSON_OMIT: ClassVar[Mapping[str, object]] = {}

    def to_json(self) -> dict:
        return encode(self)

    @classmethod
    def from_json(cls: type[T], data: object) -> T:
        return decode(cls, data)


@dataclasses.dataclass(frozen=True)
class Pattern:
    """The form of a string field, `Annotated[str, Pattern(...)]`: the reader refuses a
    string of another form, and the schema says it."""

    regex: str  # the whole string matches it
    what: str  # what a message calls such a string: "a SHA-256"


def keys(cls: type) -> tuple[str, ...]:
    """The JSON keys of a class, in order (a flattened field stands for its keys)."""
    order = getattr(cls, "JSON_KEYS", None)
    return order if order is not None else tuple(f.name for f in dataclasses.fields(cls))


@functools.cache
def hints(cls: Any) -> dict[str, Any]:
    return typing.get_type_hints(cls, include_extras=True)


def encode(value: Any) -> Any:
    """The JSON value (dicts, lists, str, numbers, bool, None) of a report's value."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        cls = type(value)
        flat: frozenset[str] = getattr(cls, "JSON_FLAT", frozenset())
        omit: Mapping[str, object] = getattr(cls, "JSON_OMIT", {})
        out: dict = {}
        for key in keys(cls):
            item = getattr(value, key)
            if callable(item):
                item = item()
            if key in omit and item == omit[key]:
                continue
            if key in flat:
                out |= encode(item)
            else:
                out[key] = encode(item)
        return out
    if isinstance(value, tuple | list):
        return [encode(item) for item in value]
    if isinstance(value, dict):
        return {key: encode(item) for key, item in value.items()}
    return value


def decode(cls: type[T], data: object, where: str = "report") -> T:
    """The value of type `cls` that `data` (parsed JSON) encodes; RecallError naming the
    key at fault where it does not fit."""
    if not isinstance(data, dict):
        raise RecallError(f"{where}: expected an object, got {type(data).__name__}")
    flat: frozenset[str] = getattr(cls, "JSON_FLAT", frozenset())
    omit: Mapping[str, object] = getattr(cls, "JSON_OMIT", {})
    types_of = hints(cls)  # type: ignore[arg-type]
    written = set(keys(cls))
    args: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if not f.init or f.name not in written:
            continue
        if f.name in flat:
            part = _flat_class(types_of[f.name])
            if f.name in omit and not set(_flat_keys(part)) & set(data):
                args[f.name] = omit[f.name]  # a flattened part left out: none of its keys
            else:
                args[f.name] = decode(part, data, where)
        elif f.name in data:
            args[f.name] = _value(types_of[f.name], data[f.name], f"{where}.{f.name}")
        elif f.name in omit:
            args[f.name] = omit[f.name]
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise RecallError(f"{where}: no {f.name!r}")
    return cls(**args)


def _flat_keys(cls: Any) -> tuple[str, ...]:
    """The keys a class writes into its object, its flattened fields' keys among them."""
    flat: frozenset[str] = getattr(cls, "JSON_FLAT", frozenset())
    types_of = hints(cls)
    return tuple(
        part
        for key in keys(cls)
        for part in (_flat_keys(_flat_class(types_of[key])) if key in flat else (key,))
    )


def _flat_class(tp: Any) -> Any:
    """The dataclass of a flattened field, `X | None` (left out at None) read as X."""
    return next((a for a in typing.get_args(tp) if a is not type(None)), tp)


def named(hint: object) -> str:
    """A type hint as a message says it: `int`, `str or None`, `one of 'tune', 'holdout'`."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Annotated:
        rule = pattern(hint)
        return rule.what if rule else named(args[0])
    if origin in (typing.Union, types.UnionType):
        return " or ".join(named(arg) for arg in args)
    if origin is Literal:
        return "one of " + ", ".join(repr(arg) for arg in args)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return f"a tuple of ({named(args[0])})"
        return f"a tuple ({', '.join(named(arg) for arg in args)})"
    if hint is type(None):
        return "None"
    return getattr(hint, "__name__", str(hint))


def pattern(hint: Any) -> Pattern | None:
    """The form an `Annotated` hint asks of its string (None: any, or another hint)."""
    rules = (rule for rule in getattr(hint, "__metadata__", ()) if isinstance(rule, Pattern))
    return next(rules, None)


def _value(tp: Any, data: object, where: str) -> Any:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return data
    if origin is Annotated:
        value = _value(args[0], data, where)
        rule = pattern(tp)
        if rule and not re.fullmatch(rule.regex, value):
            raise RecallError(f"{where}: expected {rule.what}, got {value!r}")
        return value
    if dataclasses.is_dataclass(tp):
        return decode(tp, data, where)  # type: ignore[arg-type]
    if origin in (Union, types.UnionType):
        if data is None and type(None) in args:
            return None
        for option in (a for a in args if a is not type(None)):
            try:
                return _value(option, data, where)
            except RecallError:
                pass
        raise RecallError(f"{where}: expected {named(tp)}, got {data!r}")
    if origin is tuple:
        if not isinstance(data, list):
            raise RecallError(f"{where}: expected an array, got {data!r}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_value(args[0], x, f"{where}[{i}]") for i, x in enumerate(data))
        if len(args) != len(data):
            raise RecallError(f"{where}: expected {len(args)} items, got {len(data)}")
        return tuple(
            _value(a, x, f"{where}[{i}]") for i, (a, x) in enumerate(zip(args, data, strict=True))
        )
    if origin is dict:
        if not isinstance(data, dict):
            raise RecallError(f"{where}: expected an object, got {data!r}")
        return {key: _value(args[1], x, f"{where}.{key}") for key, x in data.items()}
    if origin is Literal:
        if data not in args:
            raise RecallError(f"{where}: {data!r} is none of {', '.join(map(repr, args))}")
        return data
    fits = {
        bool: lambda x: isinstance(x, bool),
        int: lambda x: isinstance(x, int) and not isinstance(x, bool),
        float: lambda x: isinstance(x, int | float) and not isinstance(x, bool),
        str: lambda x: isinstance(x, str),
    }
    if tp in fits:
        if not fits[tp](data):
            raise RecallError(f"{where}: expected {tp.__name__}, got {data!r}")
        return data
    raise TypeError(f"the codec has no rule for {tp} ({where})")

"""What crosses Redis in a distributed crawl, as data only: JSON that can name no code. Pure Python.

Pickle rebuilds whatever object a payload names, so anyone able to write to the crawl's Redis could run code in
every process reading it. This encoding rebuilds only JSON's own values, a few tagged containers, and the
dataclasses a caller allows by name:

- ``null``, booleans, numbers, strings and lists are themselves;
- every JSON object is a tagged value ``{"$": tag, "v": ...}``: ``tuple``, ``set``, ``frozenset``, ``dict``
  and ``Counter`` (pairs, so keys of any type survive), ``bytes`` (base64), ``array`` (its typecode and
  numbers), ``datetime`` (ISO 8601), or the name of an allowed dataclass (its init fields by name).

Anything else, on either side, raises :class:`WireError`: an unknown tag, a malformed value, a dataclass
not allowed, a payload that is not this encoding at all (a pickle).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import functools
import json
import types
import typing
from array import array
from collections import Counter
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from newsdedup.crawl.analysis import PageAnalysis, PageSkipped
from newsdedup.crawl.items import ArticlePage, FetchFailure
from newsdedup.dedup.dwdcs import KeyConcepts
from newsdedup.dedup.features import DocFeatures
from newsdedup.extract.extractor import Article

TAG = "$"


class WireError(ValueError):
    """A payload that is not a value this encoding (with these allowed dataclasses) can rebuild."""


class Codec:
    """Encodes and decodes values with the dataclasses ``types`` allowed, each tagged by its class name."""

    def __init__(self, types: Iterable[type] = ()) -> None:
        self.types = {cls.__name__: cls for cls in types}
        self._hint_cache: dict[type, dict[str, Any]] = {}
        if not all(dataclasses.is_dataclass(cls) for cls in self.types.values()):
            raise TypeError("only dataclasses can be allowed")
        if set(self.types) & set(_DECODERS):
            raise TypeError("a dataclass may not take the name of a built-in tag")

    def dumps(self, value: object) -> bytes:
        return json.dumps(self._encode(value), ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    def loads(self, data: bytes | str) -> Any:
        try:
            tree = json.loads(data)
        except RecursionError:
            raise WireError("nested too deeply") from None
        except (ValueError, TypeError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
            raise WireError(f"not a JSON payload: {exc}") from None
        try:
            return self._decode(tree)
        except RecursionError:
            raise WireError("nested too deeply") from None

    # -- encoding ------------------------------------------------------------------------------------------
    def _encode(self, value: object) -> Any:
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, list):
            return [self._encode(v) for v in value]
        if isinstance(value, tuple):
            return _tagged("tuple", [self._encode(v) for v in value])
        if isinstance(value, (bytes, bytearray, memoryview)):
            return _tagged("bytes", base64.b64encode(bytes(value)).decode("ascii"))
        if isinstance(value, (set, frozenset)):
            return _tagged("frozenset" if isinstance(value, frozenset) else "set", [self._encode(v) for v in value])
        if isinstance(value, Counter):
            return _tagged("Counter", self._pairs(value))
        if isinstance(value, dict):
            return _tagged("dict", self._pairs(value))
        if isinstance(value, array):
            return _tagged("array", {"t": value.typecode, "v": value.tolist()})
        if isinstance(value, datetime):
            return _tagged("datetime", value.isoformat())
        cls = type(value)
        if dataclasses.is_dataclass(value) and self.types.get(cls.__name__) is cls:
            return _tagged(cls.__name__, {f.name: self._encode(getattr(value, f.name))
                                          for f in dataclasses.fields(value) if f.init})
        raise WireError(f"cannot encode a {cls.__module__}.{cls.__qualname__} (not data, or a dataclass not allowed)")

    def _pairs(self, mapping: dict) -> list:
        return [[self._encode(k), self._encode(v)] for k, v in mapping.items()]

    # -- decoding ------------------------------------------------------------------------------------------
    def _decode(self, tree: Any) -> Any:
        if isinstance(tree, list):
            return [self._decode(v) for v in tree]
        if not isinstance(tree, dict):
            return tree  # null, a boolean, a number or a string
        if set(tree) != {TAG, "v"} or not isinstance(tree[TAG], str):
            raise WireError(f"an object that is not a tagged value: keys {sorted(tree)[:5]}")
        tag, inner = tree[TAG], tree["v"]
        try:
            if tag in _DECODERS:
                return _DECODERS[tag](self, inner)
            if tag in self.types:
                return self._dataclass(self.types[tag], inner)
        except WireError:
            raise
        except (TypeError, ValueError, KeyError, OverflowError, binascii.Error) as exc:
            raise WireError(f"a malformed {tag!r} value: {exc}") from None
        raise WireError(f"unknown tag {tag!r}")

    def _dataclass(self, cls: type, fields: Any) -> object:
        if not isinstance(fields, dict):
            raise WireError(f"a {cls.__name__} needs its fields by name")
        values = {name: self._decode(value) for name, value in fields.items()}
        hints = self._hints(cls)
        for name, value in values.items():
            # A value of the wrong type would decode, then fail wherever it is used (the writer, mid-batch).
            if name in hints and not _conforms(value, hints[name]):
                raise WireError(f"{cls.__name__}.{name} is not a {hints[name]}: a {type(value).__name__}")
        return cls(**values)

    def _hints(self, cls: type) -> dict[str, Any]:
        if cls not in self._hint_cache:
            self._hint_cache[cls] = typing.get_type_hints(cls)
        return self._hint_cache[cls]

    def _pairs_of(self, inner: Any) -> list[tuple]:
        if not isinstance(inner, list) or not all(isinstance(p, list) and len(p) == 2 for p in inner):
            raise WireError("a mapping needs a list of [key, value] pairs")
        return [(self._decode(k), self._decode(v)) for k, v in inner]

    def _items(self, inner: Any) -> list:
        if not isinstance(inner, list):
            raise WireError("a sequence needs a list")
        return [self._decode(v) for v in inner]


def _conforms(value: Any, hint: Any) -> bool:
    """Whether ``value`` has the type of a dataclass field annotated ``hint`` (the forms our dataclasses use)."""
    return _checker(hint)(value)


@functools.lru_cache(maxsize=None)
def _checker(hint: Any) -> Callable[[Any], bool]:
    """``hint`` as a test of a value, built once per annotation (the writer decodes every entry of the run)."""
    if hint is Any:
        return lambda value: True
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        options = [_checker(arg) for arg in args]
        return lambda value: any(check(value) for check in options)
    if hint is float:
        return lambda value: isinstance(value, (int, float)) and not isinstance(value, bool)
    if origin is None:
        return lambda value: isinstance(value, hint)
    if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
        parts = [_checker(arg) for arg in args]
        return lambda value: (isinstance(value, tuple) and len(value) == len(parts)
                              and all(check(v) for check, v in zip(parts, value)))
    if issubclass(origin, dict):
        key, item = (_checker(arg) for arg in (args if len(args) == 2 else (*args, int)))  # Counter[K]: int counts
        return lambda value: isinstance(value, origin) and all(key(k) and item(v) for k, v in value.items())
    member = _checker(args[0]) if args else _checker(Any)  # tuple[X, ...], list[X], set[X], frozenset[X]
    return lambda value: isinstance(value, origin) and all(map(member, value))


def _tagged(tag: str, value: Any) -> dict:
    return {TAG: tag, "v": value}


def _decode_bytes(_codec: Codec, inner: Any) -> bytes:
    if not isinstance(inner, str):
        raise WireError("bytes need a base64 string")
    return base64.b64decode(inner.encode("ascii"), validate=True)


def _decode_array(_codec: Codec, inner: Any) -> array:
    if not isinstance(inner, dict) or set(inner) != {"t", "v"} or not isinstance(inner["v"], list):
        raise WireError("an array needs its typecode and numbers")
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in inner["v"]):
        raise WireError("an array holds numbers only")
    return array(inner["t"], inner["v"])


def _decode_datetime(_codec: Codec, inner: Any) -> datetime:
    if not isinstance(inner, str):
        raise WireError("a datetime needs an ISO 8601 string")
    return datetime.fromisoformat(inner)


_DECODERS = {
    "tuple": lambda codec, inner: tuple(codec._items(inner)),
    "set": lambda codec, inner: set(codec._items(inner)),
    "frozenset": lambda codec, inner: frozenset(codec._items(inner)),
    "dict": lambda codec, inner: dict(codec._pairs_of(inner)),
    "Counter": lambda codec, inner: Counter(dict(codec._pairs_of(inner))),
    "bytes": _decode_bytes,
    "array": _decode_array,
    "datetime": _decode_datetime,
}

# Plain data: what scrapy-redis's queued requests are (Request.to_dict(): strings, bytes, numbers, dicts). This
# module is the distributed crawl's SCHEDULER_SERIALIZER (scrapy-redis looks for module-level loads and dumps).
DATA = Codec()
loads = DATA.loads
dumps = DATA.dumps


def stream_codec() -> Codec:
    """The codec of the result stream's entries: the dataclasses a stream entry is made of, and no others."""
    return Codec([ArticlePage, FetchFailure, PageAnalysis, PageSkipped, Article, DocFeatures, KeyConcepts])


def check_entry(entry: object) -> object:
    """``entry`` if it has a stream entry's shape: a FetchFailure, or (ArticlePage, PageAnalysis | PageSkipped)."""
    if isinstance(entry, FetchFailure):
        return entry
    if (isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[0], ArticlePage)
            and isinstance(entry[1], (PageAnalysis, PageSkipped))):
        return entry
    raise WireError(f"not a stream entry: a {type(entry).__name__}")

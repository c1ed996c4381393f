"""JSON text of a tree at any depth, and the short digest that stands for a value not shown.

The standard library's encoder recurses in C and raises RecursionError on a tree as deep as
a file may hold (the reader accepts what ``json.loads`` parses, about a thousand levels) when
it is called from a stack already some frames deep. These functions give the same text as
``json.dumps`` and fall back to an explicit stack when it cannot, so a reader that shows a
file (the textconv driver, the message rule) never fails on its shape and costs time
linear in it. Standard library only, and not even the ``json`` package (cjson.py calls its C
half): the driver git starts once per file imports it.
"""

from __future__ import annotations

import sys

from .cjson import dumps, encode_basestring, encode_basestring_ascii

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing: git's diff driver imports this
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any


def sorted_json(value: Any) -> str:
    """``json.dumps(value, sort_keys=True, default=str)``, at any depth."""
    try:
        return dumps(value, sort_keys=True, default=str)
    except RecursionError:
        return "".join(_pieces(value, ", ", ": ", encode_basestring_ascii))


def compact_json(value: Any) -> str:
    """``json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
    default=str)``, at any depth."""
    try:
        return dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    except RecursionError:
        return "".join(_pieces(value, ",", ":", encode_basestring))


def digest(value: Any) -> str:
    """``#`` and the first 8 hex digits of the sha256 of a value's sorted JSON (of a string:
    of the string itself)."""
    text = value if isinstance(value, str) else sorted_json(value)
    return "#" + sha256_hex(text.encode("utf-8", "surrogatepass"))[:8]


def _builtin_sha256() -> Any:
    """CPython's own SHA-256 constructor, or None in a build that leaves hashing to OpenSSL."""
    try:  # its module since Python 3.12, and before
        return __import__("_sha2" if sys.version_info >= (3, 12) else "_sha256").sha256
    except ImportError:
        return None


_BUILTIN_SHA256 = _builtin_sha256()
#: bytes hashed by CPython's own SHA-256 at most; above, by OpenSSL's (hashlib): loading OpenSSL
#: costs about as much as hashing a few hundred kilobytes the slower way
SHORT = 256 * 1024


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of ``data``, in hex. Short data by CPython's own implementation: importing
    hashlib loads and initialises OpenSSL, about a tenth of the start of the git diff driver,
    which git starts once per file version and which hashes a few kilobytes; long data by
    OpenSSL's, several times faster per byte."""
    if _BUILTIN_SHA256 is not None and len(data) <= SHORT:
        return _BUILTIN_SHA256(data).hexdigest()  # type: ignore[no-any-return]
    import hashlib  # here: only long data pays for loading OpenSSL

    return hashlib.sha256(data).hexdigest()


class _Piece(str):
    """Text to write as it is (a plain ``str`` on the stack is a value to encode)."""

    __slots__ = ()


def _pieces(value: Any, comma: str, colon: str, quote: Callable[[str], str]) -> Iterator[str]:
    """The JSON text of ``value`` in pieces, with an explicit stack (no recursion)."""
    close_list, close_dict, sep = _Piece("]"), _Piece("}"), _Piece(comma)
    stack: list[Any] = [value]
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        kind = type(node)
        if kind is _Piece:
            yield node
        elif isinstance(node, str):
            yield quote(node)
        elif isinstance(node, dict):
            if not node:
                yield "{}"
                continue
            yield "{"
            push(close_dict)
            keys = sorted(node, key=_key_text)
            for i in range(len(keys) - 1, -1, -1):
                push(node[keys[i]])
                push(_Piece((comma if i else "") + quote(_key_text(keys[i])) + colon))
        elif isinstance(node, (list, tuple)):
            if not node:
                yield "[]"
                continue
            yield "["
            push(close_list)
            for i in range(len(node) - 1, 0, -1):
                push(node[i])
                push(sep)
            push(node[0])
        else:
            yield _scalar(node, quote)


def _key_text(key: Any) -> str:
    """A mapping key as ``json.dumps`` writes it (it converts scalars to text)."""
    if isinstance(key, str):
        return key
    if key is True or key is False or key is None:
        return _scalar(key, encode_basestring)
    if isinstance(key, (int, float)):
        return _scalar(key, encode_basestring)
    return str(key)


def _scalar(value: Any, quote: Callable[[str], str]) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        import math  # here: only a tree too deep for the C encoder pays for it

        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return float.__repr__(value)
    return quote(str(value))  # default=str

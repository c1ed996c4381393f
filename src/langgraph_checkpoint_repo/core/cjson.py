"""``json.loads`` and ``json.dumps`` on the standard library's C half (``_json``), without
importing the ``json`` package: the one place that uses that private module.

The ``json`` package's decoder and encoder modules import ``re`` (and with it enum and
functools) when they are imported, about 10 ms, more than half of the start of git's diff
driver, which git starts once per file version it prints (review/textconv_entry.py). The
parsing and the encoding are ``_json``'s C code either way: ``loads`` and ``dumps`` here
call it with what the ``json`` package would hand it, so their results, and their errors,
are the ``json`` package's.

``_json`` is private, so it is used here and nowhere else (as ``_compat`` is the one place
for the private names of other packages; the core imports nothing above it, so the standard
library's private module has its own wrapper here), and each name it takes has a test in
tests/test_cjson.py. Where ``_json`` or a name of it is missing (another Python), the
``json`` package does the work, so nothing breaks, it only starts slower.

Errors: the C scanner says what is wrong by raising ``json.decoder.JSONDecodeError``, which
it finds only once ``json.decoder`` is imported (Python 3.11 raises SystemError when it is
not), and some refusals are the ``json`` package's own (a value missing, data after it, a
BOM). So when the C parse does not give a whole document, the ``json`` package parses the
text again, with the same hooks, and raises its error: errors cost a second parse, a
document read costs nothing more. ``decode_error()`` is the ``json`` package's
``JSONDecodeError``, imported when it is asked for (an ``except`` clause naming it asks only
when an exception is raised).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing: git's diff driver imports this
if TYPE_CHECKING:
    from collections.abc import Callable
    from json import JSONDecodeError
    from typing import Any

try:
    import _json
except ImportError:  # another Python: the json package does the work
    _json = None  # type: ignore[assignment]

#: the C scanner and encoder (``json.scanner.c_make_scanner``, ``json.encoder.c_make_encoder``)
_c_make_scanner = getattr(_json, "make_scanner", None)
_c_make_encoder = getattr(_json, "make_encoder", None)
#: a string as JSON (``json.encoder.encode_basestring``, ``..._ascii``: every character past ASCII escaped)
encode_basestring: Callable[[str], str]
encode_basestring_ascii: Callable[[str], str]
if hasattr(_json, "encode_basestring") and hasattr(_json, "encode_basestring_ascii"):
    encode_basestring, encode_basestring_ascii = _json.encode_basestring, _json.encode_basestring_ascii
else:
    from json.encoder import encode_basestring, encode_basestring_ascii

__all__ = ["decode_error", "dumps", "encode_basestring", "encode_basestring_ascii", "loads"]

#: JSON's whitespace, what the json package skips before and after a document
_SPACE = " \t\n\r"


class _Context:
    """What the C scanner reads of ``json.JSONDecoder`` (its attributes, once, when made)."""

    __slots__ = ("object_hook", "object_pairs_hook", "parse_constant", "parse_float", "parse_int", "strict")

    def __init__(self, strict: bool, pairs: Any, parse_float: Any, parse_constant: Any) -> None:
        self.strict = strict
        self.object_hook = None
        self.object_pairs_hook = pairs
        self.parse_float = parse_float or float  # float itself: the C scanner's fast path
        self.parse_int = int
        self.parse_constant = parse_constant or _CONSTANTS.__getitem__


_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}


def loads(
    text: str | bytes | bytearray,
    *,
    strict: bool = True,
    object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
    parse_float: Callable[[str], Any] | None = None,
    parse_constant: Callable[[str], Any] | None = None,
) -> Any:
    """``json.loads(text, ...)``, with these arguments (the others as json's)."""
    if _c_make_scanner is not None and isinstance(text, str) and not text.startswith("\ufeff"):
        scan = _c_make_scanner(_Context(strict, object_pairs_hook, parse_float, parse_constant))
        try:
            value, end = scan(text, _skip_space(text, 0))
        except (StopIteration, SystemError):  # the json package's error, below
            pass
        else:
            if _skip_space(text, end) == len(text):
                return value
    import json  # an error, not a str, or no _json: the json package, in its own words

    return json.loads(
        text,
        strict=strict,
        object_pairs_hook=object_pairs_hook,
        parse_float=parse_float,
        parse_constant=parse_constant,
    )


def _skip_space(text: str, i: int) -> int:
    """The index of the first character at or after ``i`` that is not JSON whitespace."""
    n = len(text)
    while i < n and text[i] in _SPACE:
        block = text[i : i + 4096]  # a long run in blocks: bounded copies, at C's speed
        i += len(block) - len(block.lstrip(_SPACE))
    return i


def dumps(
    value: Any,
    *,
    sort_keys: bool = False,
    ensure_ascii: bool = True,
    separators: tuple[str, str] | None = None,
    default: Callable[[Any], Any] | None = None,
) -> str:
    """``json.dumps(value, ...)`` with these arguments (the others as json's defaults)."""
    quote = encode_basestring_ascii if ensure_ascii else encode_basestring
    if isinstance(value, str):
        return quote(value)  # type: ignore[no-any-return]
    if _c_make_encoder is None:
        import json

        return json.dumps(
            value, sort_keys=sort_keys, ensure_ascii=ensure_ascii, separators=separators, default=default
        )
    item, key = separators or (", ", ": ")
    # json.JSONEncoder.iterencode's call (_one_shot, indent None): markers (check_circular),
    # default, the string quoting, indent, key and item separators, sort_keys, skipkeys, allow_nan
    encode = _c_make_encoder({}, default or _no_default, quote, None, key, item, sort_keys, False, True)
    return "".join(encode(value, 0))


def _no_default(value: Any) -> Any:
    """``json.JSONEncoder.default``: a value JSON has no form for is refused."""
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


def decode_error() -> type[JSONDecodeError]:
    """``json.JSONDecodeError``, what ``loads`` raises for text that is no JSON; ``json``
    imported now: ``except decode_error():`` asks only when an exception is raised."""
    from json import JSONDecodeError

    return JSONDecodeError

"""core/cjson.py: ``json.loads`` and ``json.dumps`` on the standard library's C half.

Each name of the private ``_json`` the wrapper takes is checked on its own (as
tests/test_compat.py checks LangGraph's), so a Python that removes or changes one fails
here, by name; then the wrapper's results and refusals are the ``json`` package's, value for
value and error for error (message, line, column), with the C half and with the fallback a
Python without it gets, and the strict reader's (jsonread.parse_strict) refusals read as
they did on the ``json`` package.
"""

from __future__ import annotations

import _json
import json
import json.decoder
import json.encoder
import json.scanner
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import examples
from langgraph_checkpoint_repo.core import cjson, jsonread
from langgraph_checkpoint_repo.core.errors import FileFormatError

SRC = str(Path(cjson.__file__).parents[2])


# ----------------------------------------------------------------------------
# each name of _json the wrapper uses
# ----------------------------------------------------------------------------
class Context:
    """What json.JSONDecoder hands the C scanner."""

    def __init__(self, **given: Any) -> None:
        self.strict = True
        self.object_hook = None
        self.object_pairs_hook = None
        self.parse_float = float
        self.parse_int = int
        self.parse_constant = json.decoder._CONSTANTS.__getitem__
        self.__dict__.update(given)


def test_json_make_scanner_is_jsons_scanner_and_reads_a_decoders_attributes() -> None:
    assert json.scanner.c_make_scanner is _json.make_scanner
    assert cjson._c_make_scanner is _json.make_scanner  # this Python: the C half, no fallback
    pairs: list[Any] = []
    scan = _json.make_scanner(
        Context(object_pairs_hook=lambda p: pairs.append(p) or dict(p), parse_float=lambda s: ("f", s))
    )
    value, end = scan(' [1, 2.5, {"a": "b\\n"}] x', 1)
    assert (value, end) == ([1, ("f", "2.5"), {"a": "b\n"}], 23) and pairs == [[("a", "b\n")]]
    with pytest.raises(StopIteration) as stop:  # no value there: the index, for "Expecting value"
        scan("  ]", 2)
    assert stop.value.value == 2
    strict = _json.make_scanner(Context(strict=False))
    assert strict('"a\tb"', 0) == ("a\tb", 5)  # strict=False: a raw control character in a string


def test_json_make_encoder_takes_json_encoders_arguments() -> None:
    assert json.encoder.c_make_encoder is _json.make_encoder
    assert cjson._c_make_encoder is _json.make_encoder
    # json.JSONEncoder.iterencode's call: markers, default, quote, indent, key and item
    # separators, sort_keys, skipkeys, allow_nan
    encode = _json.make_encoder({}, str, _json.encode_basestring, None, ":", ",", True, False, True)
    assert "".join(encode({"b": [1, 2.5, float("nan")], "a": Path("x")}, 0)) == '{"a":"x","b":[1,2.5,NaN]}'


def test_json_encode_basestring_quotes_as_json_does() -> None:
    assert cjson.encode_basestring is _json.encode_basestring
    assert _json.encode_basestring('a"\\\n\x1bé\u2028') == '"a\\"\\\\\\n\\u001bé\u2028"'
    assert json.encoder.encode_basestring is _json.encode_basestring


def test_json_encode_basestring_ascii_escapes_what_is_not_ascii() -> None:
    assert cjson.encode_basestring_ascii is _json.encode_basestring_ascii
    assert _json.encode_basestring_ascii('a"é😀\ud800') == '"a\\"\\u00e9\\ud83d\\ude00\\ud800"'
    assert json.encoder.encode_basestring_ascii is _json.encode_basestring_ascii


def test_the_wrapper_imports_neither_re_nor_json() -> None:
    """What it is for: a fresh interpreter reads and writes JSON through it with neither
    loaded; an error loads the json package, which says what is wrong."""
    code = (
        "import sys; sys.path.append(sys.argv[1])\n"
        "from langgraph_checkpoint_repo.core import cjson\n"
        "assert cjson.loads(' {\"a\": [1, 2.5, null]}\\n') == {'a': [1, 2.5, None]}\n"
        "assert cjson.dumps({'b': 1, 'a': 'é'}, sort_keys=True) == '{\"a\": \"\\\\u00e9\", \"b\": 1}'\n"
        "assert not {'re', 'json', 'enum', 'functools'} & set(sys.modules), sys.modules.keys()\n"
        "try:\n    cjson.loads('[1,')\n"
        "except cjson.decode_error() as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-I", "-S", "-c", code, SRC], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "Expecting value: line 1 column 4 (char 3)\n"


# ----------------------------------------------------------------------------
# the same values and the same refusals as the json package
# ----------------------------------------------------------------------------
class Refused(Exception):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise Refused("duplicate", k)
        out[k] = v
    return out


def _no_constant(name: str) -> Any:
    raise Refused("constant", name)


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise Refused("range", text)
    return value


HOOKS: list[dict[str, Any]] = [
    {},
    {"object_pairs_hook": _no_duplicates, "parse_constant": _no_constant, "parse_float": _finite},
    {"strict": False},
    {"parse_float": lambda s: ("float", s), "object_pairs_hook": list},
]


def outcome(parse: Any, text: Any, **hooks: Any) -> Any:
    """A parse's value, or its error as type, message and (for a JSON error) where."""
    try:
        return ("value", repr(parse(text, **hooks)))  # repr: NaN equals itself
    except json.JSONDecodeError as exc:
        return ("JSONDecodeError", exc.msg, exc.pos, exc.lineno, exc.colno, str(exc))
    except (Refused, ValueError, TypeError, RecursionError) as exc:
        return (type(exc).__name__, str(exc), exc.args)


def same(text: Any) -> None:
    for hooks in HOOKS:
        want = outcome(json.loads, text, **hooks)
        assert outcome(cjson.loads, text, **hooks) == want, (text, hooks)


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(st.characters(codec="utf-8") | st.sampled_from('\x00\x1f"\\\u2028')),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=20,
)
SPACE = st.text(st.sampled_from(" \t\n\r"), max_size=3)
#: what JSON text is made of, and what breaks it: a parse of it fails now here, now there
PIECES = st.sampled_from(
    [
        "{", "}", "[", "]", ",", ":", '"', "\\", "\\u", "\\ud800", "\\udc00", "\\n", "1", "-", "0",
        ".5", "e9", "1e999", "-1e400", "NaN", "Infinity", "-Infinity", "true", "nul", "null",
        "\ufeff", " ", "\n", "\t", "\r", "\x00", "\x1f", "é", '"a"', '"a":1', "x", "\u00a0",
    ]
)  # fmt: skip


@settings(max_examples=examples(300), deadline=None)
@given(JSON_VALUES, SPACE, SPACE, st.booleans(), st.sampled_from([None, 1, "\t"]))
def test_a_document_reads_as_the_json_package_reads_it(
    value: Any, before: str, after: str, ascii_only: bool, indent: Any
) -> None:
    text = before + json.dumps(value, ensure_ascii=ascii_only, indent=indent) + after
    same(text)
    assert cjson.loads(text) == json.loads(text)


@settings(max_examples=examples(500), deadline=None)
@given(st.lists(PIECES, max_size=12).map("".join))
def test_any_text_is_read_or_refused_as_the_json_package_does(text: str) -> None:
    same(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "\ufeff[]",  # a BOM
        "[] x",  # data after the value
        "[1,]",
        '{"a": 1, "a": 2}',  # duplicate keys: the pairs hook refuses them
        '{"a": NaN}',
        "[Infinity, -Infinity]",
        "[1e999]",  # past a float: the float hook refuses it
        '"\\ud800"',  # a lone surrogate: valid JSON, a str holding one
        '"\\ud83d\\ude00"',
        '"a\tb"',  # a raw control character: only strict=False reads it
        "1" * 5000,  # past Python's digit limit for an int
        "[" * 100_000 + "]" * 100_000,  # too deep for the C parser
        "\n\n  [1,\n  2 3]",  # where: line 4 column 5
        " \t\n\r" * 3000 + "[]" + " " * 9000 + "x",  # long runs of whitespace
        b'{"a": 1}',  # bytes: the json package's own door
        7,
    ],
)
def test_the_refusals_are_the_json_packages(text: Any) -> None:
    same(text)


@settings(max_examples=examples(200), deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.tuples(inner, inner)
            | st.dictionaries(
                st.text(max_size=3) | st.integers() | st.floats() | st.booleans() | st.none(),
                inner,
                max_size=4,
            )
        ),
        max_leaves=20,
    ),
    st.booleans(),
    st.booleans(),
    st.sampled_from([None, (",", ":"), (", ", ": ")]),
)
def test_a_value_is_written_as_the_json_package_writes_it(
    value: Any, sort_keys: bool, ensure_ascii: bool, separators: Any
) -> None:
    for default in (None, str):
        options = {"sort_keys": sort_keys, "ensure_ascii": ensure_ascii, "separators": separators}
        assert outcome(lambda v, **o: cjson.dumps(v, **o), value, **options, default=default) == outcome(
            lambda v, **o: json.dumps(v, **o), value, **options, default=default
        )


@pytest.mark.parametrize(
    "value",
    [
        {"a": {1, 2}},  # no JSON form: refused, or str() with default=str
        [Path("p"), b"bytes"],
        {1: "a", "1": "b"},
        {1: "a", "b": 2},  # keys that do not sort together: refused with sort_keys
        [[[[[[1]]]]]] * 3,
        "just a string",
    ],
)
def test_the_refusals_of_a_write_are_the_json_packages(value: Any) -> None:
    for sort_keys in (False, True):
        for default in (None, str):
            options = {"sort_keys": sort_keys, "default": default}
            assert outcome(lambda v, **o: cjson.dumps(v, **o), value, **options) == outcome(
                lambda v, **o: json.dumps(v, **o), value, **options
            )


def test_a_cycle_and_a_tree_too_deep_are_refused_as_the_json_package_refuses_them() -> None:
    cycle: list[Any] = []
    cycle.append(cycle)
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    for value in (cycle, deep):
        assert outcome(cjson.dumps, value) == outcome(json.dumps, value)


@pytest.fixture
def no_c_half(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Python without ``_json``'s scanner and encoder: the json package does the work."""
    monkeypatch.setattr(cjson, "_c_make_scanner", None)
    monkeypatch.setattr(cjson, "_c_make_encoder", None)


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(PIECES, max_size=12).map("".join), JSON_VALUES)
def test_without_the_c_half_the_json_package_gives_the_same(text: str, value: Any) -> None:
    with_c = [outcome(cjson.loads, text, **hooks) for hooks in HOOKS], cjson.dumps(value, sort_keys=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cjson, "_c_make_scanner", None)
        patch.setattr(cjson, "_c_make_encoder", None)
        without = [outcome(cjson.loads, text, **hooks) for hooks in HOOKS], cjson.dumps(value, sort_keys=True)
    assert with_c == without


# ----------------------------------------------------------------------------
# the strict reader, on it: every reader's door (the app's and git's diff driver's)
# ----------------------------------------------------------------------------
STRICT_REFUSALS = {
    b"[1,": "invalid JSON: Expecting value (line 1 column 4)",
    b"\n\n  [1,\n  2 3]": "invalid JSON: Expecting ',' delimiter (line 4 column 5)",
    b"[] x": "invalid JSON: Extra data (line 1 column 4)",
    b"": "invalid JSON: Expecting value (line 1 column 1)",
    b"\xef\xbb\xbf{}": "invalid JSON: Unexpected UTF-8 BOM (decode using utf-8-sig) (line 1 column 1)",
    b'{"a": 1, "a": 2}': "duplicate key 'a'",
    b'{"a": NaN}': "NaN is not valid JSON",
    b"[-Infinity]": "-Infinity is not valid JSON",
    b"[1e999]": "1e999 (out of range, would read as inf) is not valid JSON",
    b'{"a": ["\\ud800"]}': jsonread.SURROGATE_MESSAGE,
    b"[" * 100_000 + b"]" * 100_000: "invalid JSON: nested too deeply to parse",
    b"1" * 5000: "invalid JSON: {}",  # past Python's digit limit: in its words (below)
    b'"\xff"': "not UTF-8 (invalid start byte at byte 1)",
}  # fmt: skip


@pytest.mark.parametrize("c_half", [True, False], ids=["_json", "json package"])
@pytest.mark.parametrize("raw", list(STRICT_REFUSALS), ids=range(len(STRICT_REFUSALS)))
def test_the_strict_reader_refuses_in_the_words_it_had(raw: bytes, c_half: bool, request: Any) -> None:
    if not c_half:
        request.getfixturevalue("no_c_half")
    with pytest.raises(FileFormatError) as refused:
        jsonread.parse_strict(raw, "f.json")
    want = STRICT_REFUSALS[raw]
    if "{}" in want:
        with pytest.raises(ValueError) as python:
            int(raw)
        want = want.format(python.value)
    assert refused.value.detail == want
    assert str(refused.value).startswith("f.json: at /")


@pytest.mark.parametrize(
    "raw",
    [b'  {"a": [1, 2.5, "\\u00e9\\ud83d\\ude00", null, true]}\n', b'"\\ud83d\\ude00"', b"[0.1e1, -0]"],
)
def test_the_strict_reader_reads_as_the_json_package_reads(raw: bytes) -> None:
    assert jsonread.parse_strict(raw, "f.json") == json.loads(raw)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.sampled_from([b"\\", b"u", b"d", b"D", b"8", b"b", b"F", b"0", b"x", b'"']), max_size=12))
def test_the_surrogate_escape_is_found_as_the_regex_found_it(pieces: list[bytes]) -> None:
    import re

    raw = b"".join(pieces)
    assert jsonread._surrogate_escape(raw) == bool(re.search(rb"\\u[dD][89abcdefABCDEF]", raw))

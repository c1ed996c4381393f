"""The git diff driver is bounded and linear in a file, whatever its shape (review/textconv.py).

git runs the driver on every state file ``git diff`` and ``git log -p`` print, and a pull
request chooses what those files hold. It rendered values recursively: its cost was the
nesting depth times the size (a 235 KB file took 18 s, 400 KB 60 s), and a file nested
deeper than Python's stack was printed raw. Each test here forges a file of about 1 MB of one
pathological shape, as deep as the file reader accepts where it nests, and checks that the
view is produced by the driver's own rendering (not the raw fallback), without recursion (it
renders under a recursion limit a few dozen frames above the caller's), bounded (every line
and the whole view within the driver's budgets), and that a change the view does not show
still changes a line (its digest). Times are measured by hand (bench/textconv_shapes.py).
"""

from __future__ import annotations

import functools
import hashlib
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from json.encoder import encode_basestring, encode_basestring_ascii
from pathlib import Path
from typing import Any

import pytest
from bench.textconv_shapes import DEPTH, shapes
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import examples
from langgraph_checkpoint_repo.core import jsontext
from langgraph_checkpoint_repo.core.jsonread import parse_strict
from langgraph_checkpoint_repo.review import textconv

SIZE = 1_000_000


def _texts(size: int) -> dict[str, str]:
    """Each shape's file as text: the trees are not kept (a test process holding ten of them
    makes every collection of the garbage collector walk millions of lists)."""
    saved = sys.getrecursionlimit()
    sys.setrecursionlimit(10_000)
    try:
        return {name: json.dumps(doc, separators=(",", ":")) for name, doc in shapes(size).items()}
    finally:
        sys.setrecursionlimit(saved)


@functools.cache
def texts(size: int) -> dict[str, str]:
    """``_texts(size)``, made when a test first asks (1-3 s at 1 MB), not when the module is
    collected: every xdist worker collects it, one runs it."""
    return _texts(size)


SHAPES = list(shapes(1_000))  # the names of the shapes: ten, as at any size
FULL, SMALL = SIZE, SIZE // 5  # SMALL for the digests: a fifth of the size shows the same
#: the longest line a view may hold: a message's text budget, its label, tool calls and digests
LINE = textconv.TEXT + textconv.CALLS * (textconv.FOLD + 80) + 1_000


def frames() -> int:
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    return depth


@contextmanager
def shallow_stack(room: int = 60) -> Iterator[None]:
    """Python's recursion limit ``room`` frames above the caller: anything that recursed
    once per level of a file (hundreds deep) fails in it, and so would the C encoder."""
    saved = sys.getrecursionlimit()
    sys.setrecursionlimit(frames() + room)
    try:
        yield
    finally:
        sys.setrecursionlimit(saved)


@contextmanager
def deep_stack() -> Iterator[None]:
    """Room to write (and copy) a file as deep as the reader accepts."""
    saved = sys.getrecursionlimit()
    sys.setrecursionlimit(10_000)
    try:
        yield
    finally:
        sys.setrecursionlimit(saved)


def forged(tmp_path: Path, shape: str, doc: dict[str, Any] | None = None) -> Path:
    path = tmp_path / f"{shape.replace(' ', '-')}.json"
    with deep_stack():
        text = texts(FULL)[shape] if doc is None else json.dumps(doc, separators=(",", ":"))
    path.write_text(text, encoding="utf-8")
    return path


@contextmanager
def as_the_driver() -> Iterator[None]:
    """This process as the driver's: orjson not imported (the file reader parses with the
    standard library then, as in the driver; orjson is slow on deep nesting, then refused)."""
    saved = sys.modules.get("orjson")
    sys.modules["orjson"] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.modules["orjson"] = saved  # type: ignore[assignment]


def rendered(path: Path) -> list[str]:
    """The view as the driver makes it, the file parsed first (at the usual limit: the
    parse is the file reader's), then rendered under a shallow stack."""
    with as_the_driver():
        doc = parse_strict(path.read_bytes(), str(path))
    with shallow_stack():
        lines = textconv.render(doc)
        assert lines is not None, "read as a state file"
        return textconv.budgeted(lines)


def assert_bounded(lines: list[str]) -> None:
    assert lines[0].startswith("checkpoint "), lines[0][:200]  # the view, not the file as it is
    assert max(map(len, lines)) <= LINE
    assert sum(len(line) + 1 for line in lines) <= textconv.BUDGET + LINE


@pytest.mark.parametrize("shape", SHAPES)
def test_a_1mb_file_of_any_shape_gets_a_bounded_view_without_recursion(tmp_path: Path, shape: str) -> None:
    path = forged(tmp_path, shape)
    assert path.stat().st_size > SIZE * 0.8
    lines = rendered(path)
    assert_bounded(lines)
    with as_the_driver():
        whole = textconv.view(str(path))  # as git runs it: read, parsed, rendered, screened
    assert_bounded(whole)
    assert len(whole) == len(lines)


def _last_leaf(tree: Any) -> list[Any]:
    """The container holding the deepest, last leaf of a tree (found without recursion)."""
    node = tree
    while True:
        if isinstance(node, list) and node and isinstance(node[-1], (list, dict)):
            node = node[-1]
        elif isinstance(node, dict) and node and isinstance(list(node.values())[-1], (list, dict)):
            node = list(node.values())[-1]
        else:
            return node  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    "shape", ["deep lists", "deep objects", "deep tags", "deep messages", "many references", "many messages"]
)
def test_a_change_the_view_does_not_show_still_changes_a_line(tmp_path: Path, shape: str) -> None:
    """The deepest, last leaf of the file's value changed: folded away or past the budget,
    it changes a digest on a line of the view."""
    with deep_stack():
        doc = json.loads(texts(SMALL)[shape])
    path = tmp_path / "before.json"
    path.write_text(texts(SMALL)[shape], encoding="utf-8")
    before = rendered(path)
    channel = next(iter(doc["new_values"].values()))
    body = channel["append"]["items"] if "append" in channel else channel["value"]["json"]
    if shape == "many messages":
        body = doc["objects"][sorted(doc["objects"])[-1]]
    if shape == "deep messages":  # the text of the innermost message of the last tower
        node = body[-1]
        while node["$fields"]["tool_calls"]:
            node = node["$fields"]["tool_calls"][0]["args"]["inner"]
        node["$fields"]["content"] = "changed"
        body = []
    leaf = _last_leaf(body)
    if not body:
        pass
    elif shape == "many references":  # the last one names another object: still a reference
        leaf["$ref"] = "f" * 16
    elif isinstance(leaf, list):
        leaf.append("changed")
    else:
        leaf["changed"] = True
    after = rendered(forged(tmp_path, shape, doc))
    assert after != before
    assert len(after) == len(before)  # the same lines: a digest changed, not the layout


def test_the_files_are_as_deep_as_the_reader_accepts() -> None:
    """The deep shapes nest ``DEPTH`` levels, within a few of what the file reader parses."""
    with deep_stack():
        deep = json.loads(texts(FULL)["deep lists"])["new_values"]["deep"]["value"]["json"][0]
    levels = 0
    while isinstance(deep, list):
        deep, levels = deep[0], levels + 1
    assert levels == DEPTH
    too_deep = "[" * (DEPTH + 10) + "]" * (DEPTH + 10)
    with pytest.raises(Exception, match="nested deeper than a file can hold"):
        parse_strict(too_deep.encode(), "x")


_KEYS = st.text(alphabet='ab$"\\é\n', max_size=3)
_JSON = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=4),
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_KEYS, inner, max_size=3)),
    max_leaves=25,
)


@settings(max_examples=examples(200), deadline=None)
@given(tree=_JSON)
def test_the_iterative_json_text_is_the_standard_librarys(tree: Any) -> None:
    """Where the standard library's encoder cannot go (deeper than the stack), the explicit
    stack writes the same text: the digests and the one-line forms do not depend on how deep
    the caller's stack was."""
    ascii_text = json.dumps(tree, sort_keys=True)
    assert "".join(jsontext._pieces(tree, ", ", ": ", encode_basestring_ascii)) == ascii_text
    compact = json.dumps(tree, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert "".join(jsontext._pieces(tree, ",", ":", encode_basestring)) == compact
    if '"$' not in compact:  # no tag: the driver's own one-line form is the same text
        assert "".join(textconv._pieces(tree)) == compact
    with shallow_stack(room=20):  # the encoder may fail there: the same text all the same
        assert jsontext.sorted_json(tree) == ascii_text


@pytest.mark.parametrize("size", [0, 1, jsontext.SHORT, jsontext.SHORT + 1, 3 * jsontext.SHORT])
def test_sha256_hex_is_hashlibs_on_both_sides_of_the_switch_to_openssl(size: int) -> None:
    data = bytes(range(256)) * (size // 256) + bytes(size % 256)
    assert jsontext.sha256_hex(data) == hashlib.sha256(data).hexdigest()


def test_a_file_no_reader_takes_is_shown_as_it_is_within_the_budgets(tmp_path: Path) -> None:
    """A state file nested deeper than any reader takes (so not a state file to the driver)
    is printed as it is, but within the same budgets: a line longer than a message's text is
    folded with the digest of the rest, and the view stops at its budget."""
    deep = "[" * (DEPTH + 20) + "0" + "]" * (DEPTH + 20)
    text = '{"kind": "checkpoint", "schema_version": 4, "deep": [' + ",".join([deep] * 2000) + "]}"
    path = tmp_path / "too-deep.json"
    path.write_text(text, encoding="utf-8")
    with as_the_driver():
        lines = textconv.view(str(path))
    assert lines[0].startswith('{"kind": "checkpoint"') and "chars;" in lines[0]
    assert max(map(len, lines)) <= LINE and sum(len(x) + 1 for x in lines) <= textconv.BUDGET + LINE

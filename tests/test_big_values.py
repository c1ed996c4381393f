"""Big values at SqliteSaver's pace, with the same bytes: a 50,000-item list and a 5 MB string.

What made them slow was work done once per item in Python, or once per level, per search
literal, per call: the canonical bytes (one ``orjson`` call per member), the sharer (a call per
node, the whole tree walked twice when it went to ``large/``), the unpacked msgpack (a call per
node), the put reading back the ``large/`` file its ``put_writes`` had just written, and the
redaction's search (15 literals over every byte, in the ``put_writes`` and again in the
``put``). Each test here pins the bytes (against the way they were made before) or counts the
work (never a time).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import operator
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypedDict

import orjson
import ormsgpack
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, AnyMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph.message import add_messages

from graphs import cfg, line_graph
from helpers import examples
from langgraph_checkpoint_repo import RepoSaver, ride, values
from langgraph_checkpoint_repo import serde as serde_module
from langgraph_checkpoint_repo.core import caches, jsonread, masking, redaction
from langgraph_checkpoint_repo.core.checks import Validator
from langgraph_checkpoint_repo.core.format import canonical, hollow, storing
from langgraph_checkpoint_repo.core.format import objects as objects_module
from langgraph_checkpoint_repo.core.format import tree as tree_module
from langgraph_checkpoint_repo.core.format.canonical import LINE_WIDTH, dump_json
from langgraph_checkpoint_repo.core.format.objects import Sharer, ref_nodes, tree_weight
from langgraph_checkpoint_repo.core.format.packed import msgpack_array_split
from langgraph_checkpoint_repo.core.format.vouched import Vouching, vouched
from langgraph_checkpoint_repo.core.masking import TRIGGERS, might_contain_secret
from langgraph_checkpoint_repo.core.redaction import Redactor
from langgraph_checkpoint_repo.serde import ValueCodec

# ----------------------------------------------------------------------------
# the canonical bytes
# ----------------------------------------------------------------------------
_FLAT = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(", ", ": "))


def member_by_member(doc: Any) -> bytes:
    """``dump_json`` as it was written before (every member of a long container on its own):
    the reference the one-call way must equal, byte for byte."""
    if not isinstance(doc, dict | list) or not doc:
        return orjson.dumps(doc, option=orjson.OPT_APPEND_NEWLINE)
    out: list[bytes] = []
    _emit(doc, 0, out)
    out.append(b"\n")
    return b"".join(out)


def _emit(node: Any, indent: int, out: list[bytes], lead: int = 0) -> None:
    if isinstance(node, dict | list) and node:
        ref = isinstance(node, dict) and "$ref" in node and all(isinstance(v, str) for v in node.values())
        if len(node) * 4 <= LINE_WIDTH or ref:
            room = 1 << 30 if ref else LINE_WIDTH - indent - lead
            if len(orjson.dumps(node)) <= room:
                data = _FLAT.encode(node).encode("utf-8")
                if len(data) <= room:
                    out.append(data)
                    return
        pad = b"\n" + b" " * (indent + 2)
        if isinstance(node, list):
            out.append(b"[")
            for i, item in enumerate(node):
                out.append(pad if i == 0 else b"," + pad)
                _emit(item, indent + 2, out)
            out.append(b"\n" + b" " * indent + b"]")
            return
        out.append(b"{")
        for i, key in enumerate(sorted(node)):
            out.append(pad if i == 0 else b"," + pad)
            name = orjson.dumps(key) + b": "
            out.append(name)
            _emit(node[key], indent + 2, out, len(name))
        out.append(b"\n" + b" " * indent + b"}")
        return
    out.append(orjson.dumps(node))


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.text(alphabet=st.sampled_from('ab"\\\n\t\x00é\U0001f600 '), min_size=40, max_size=200),
)
KEYS = st.text(max_size=8)


def trees(leaves: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """JSON trees with long containers of scalars (more members than fit on a line, each a
    line) at every depth, beside short ones, references and empty ones."""
    long_lists = st.lists(SCALARS, min_size=LINE_WIDTH // 4 + 1, max_size=70)
    long_dicts = st.dictionaries(KEYS, SCALARS, min_size=LINE_WIDTH // 4 + 1, max_size=50)
    refs = st.fixed_dictionaries({"$ref": st.text(max_size=70)}, optional={"$in": st.text(max_size=70)})
    return st.recursive(
        st.one_of(leaves, long_lists, long_dicts, refs),
        lambda inner: st.one_of(
            st.lists(inner, max_size=6), st.dictionaries(KEYS, inner, max_size=6), long_lists, long_dicts
        ),
        max_leaves=30,
    )


@settings(max_examples=examples(60), deadline=None)
@given(trees(SCALARS))
def test_the_canonical_bytes_are_those_written_member_by_member(doc: Any) -> None:
    assert dump_json(doc) == member_by_member(doc)


@settings(max_examples=examples(50), deadline=None)
@given(trees(SCALARS), st.sampled_from(["large_value", "object"]), st.text(max_size=70))
def test_a_file_of_one_tree_is_written_in_one_call_when_no_line_fits_and_the_bytes_are_the_same(
    tree: Any, kind: str, digest: str
) -> None:
    doc = {"schema_version": 4, "kind": kind, "sha256": digest}
    doc.update({"value": {"json": tree}} if kind == "large_value" else {"tree": tree})
    assert dump_json(doc) == member_by_member(doc)


def test_a_large_file_of_a_long_list_is_one_orjson_call(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = count_calls(monkeypatch, canonical, "_emit")
    doc = {"schema_version": 4, "kind": "large_value", "sha256": "0" * 64, "value": {"json": LIST}}
    assert dump_json(doc) == member_by_member(doc)
    assert calls["_emit"] == 0  # it was a call per container above the list, then a join of the pieces


def test_a_long_list_of_scalars_is_written_in_one_call_at_any_depth(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = count_calls(monkeypatch, canonical, "_emit")
    items = [f"item {i}" for i in range(50_000)]
    doc = {"kind": "large_value", "value": {"json": {"rows": items, "more": [1.5, None, *range(40)]}}}
    assert dump_json(doc) == member_by_member(doc)
    assert calls["_emit"] <= 12  # one per container above the scalars: it was one per item


def test_a_scalar_member_is_written_without_a_call_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = count_calls(monkeypatch, canonical, "_emit")
    doc = {"items": [{"a": "x" * 200}, "s" * 10, 5, 2.5e-7], "m": None, "n": 1, "t": "y" * 150}
    assert dump_json(doc) == member_by_member(doc)
    assert calls["_emit"] == 3  # the containers that do not fit on a line: it was one per member too (10)


def test_a_member_of_5_mb_is_serialised_once_not_once_per_level(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "line of text\n" * 400_000
    doc = {"a": {"b": {"c": {"d": {"json": text}}}}}
    sizes: list[int] = []
    dumps = orjson.dumps

    def counted(obj: Any, *args: Any, **kwargs: Any) -> bytes:
        data = dumps(obj, *args, **kwargs)
        sizes.append(len(data))
        return data

    monkeypatch.setattr(canonical.orjson, "dumps", counted)
    expected = member_by_member(doc)
    sizes.clear()
    assert dump_json(doc) == expected
    # the document's own one-line test and the string itself; it was once a level (6)
    assert sum(1 for n in sizes if n > len(text)) == 2


# ----------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------
def count_calls(monkeypatch: pytest.MonkeyPatch, owner: Any, *names: str) -> dict[str, int]:
    """Count the calls of ``owner``'s functions (a module's or a class's: recursive calls
    go through the name too), for the rest of the test."""
    calls = dict.fromkeys(names, 0)
    for name in names:
        original = getattr(owner, name)

        def counted(*args: Any, _name: str = name, _call: Callable[..., Any] = original, **kw: Any) -> Any:
            calls[_name] += 1
            return _call(*args, **kw)

        monkeypatch.setattr(owner, name, counted)
    return calls


# ----------------------------------------------------------------------------
# sharing and unpacking
# ----------------------------------------------------------------------------
class Items(TypedDict, total=False):
    items: list[Any]
    messages: Annotated[list[AnyMessage], add_messages]
    rows: list[Any]


LIST = [f"item {i}" for i in range(50_000)]


@settings(max_examples=examples(60), deadline=None)
@given(trees(SCALARS), st.booleans())
def test_a_tree_with_nothing_to_share_comes_back_as_it_is_weighed_as_tree_weight(
    tree: Any, lean: bool
) -> None:
    # a "$type" object (a message) big enough is shared whatever else it holds, and a list of
    # references (a message list, its names digests) is cut into chunks: not this test's
    assume(not _has_key(tree, "$type") and not _has_key(tree, "$ref"))
    sharer = Sharer(locate=(lambda name, digest: None) if lean else None)
    assert sharer.share(tree) == tree
    assert (sharer.containers, sharer.values, sharer.text) == tree_weight(tree)
    assert sharer.objects == {} and sharer.height == 0


def _has_key(tree: Any, key: str) -> bool:
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if key in node:
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def test_a_50000_item_list_is_unpacked_and_shared_in_a_few_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shares = count_calls(monkeypatch, Sharer, "_share")
    unpacks = count_calls(monkeypatch, tree_module, "to_tree")
    graph = line_graph(Items, RepoSaver(tmp_path), fill=lambda state: {"items": LIST})
    graph.invoke({}, cfg("t"), durability="sync")
    # the list in the step's writes and in the checkpoint: one call each (it was 50,001, twice
    # each for the sharer, which walked a value going to large/ a second time)
    assert shares["_share"] <= 10 and unpacks["to_tree"] <= 40
    assert graph.get_state(cfg("t")).values["items"] == LIST


def test_a_big_value_is_walked_once_and_what_its_file_held_goes_to_objects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    message = AIMessage(content="a message the writes file holds, then the big value refers to " * 4, id="m1")
    rows = [message, *({"row": i} for i in range(3000))]
    shares = count_calls(monkeypatch, Sharer, "_share")
    graph = line_graph(Items, RepoSaver(tmp_path), fill=lambda state: {"messages": [message], "rows": rows})
    graph.invoke({"messages": []}, cfg("t"), durability="sync")
    # the rows in the writes and in the checkpoint, once each: 3,001 items and the message's parts
    assert shares["_share"] <= 2 * 3050
    (large,) = (tmp_path / "threads/t/large").iterdir()
    refs = [node["$ref"] for node in ref_nodes(json.loads(large.read_text())["value"]["json"])]
    assert refs and all((tmp_path / f"threads/t/objects/{name}.json").is_file() for name in refs)
    assert graph.get_state(cfg("t")).values["rows"] == rows
    assert Validator(tmp_path).run() == []


# ----------------------------------------------------------------------------
# a big list of strings is its own tree: packed and compared, not unpacked
# ----------------------------------------------------------------------------
def test_a_big_list_of_strings_is_not_unpacked_by_its_put(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    unpacked: list[int] = []
    unpack = ormsgpack.unpackb
    monkeypatch.setattr(
        tree_module.ormsgpack, "unpackb", lambda data, **kw: unpacked.append(len(data)) or unpack(data, **kw)
    )
    graph = line_graph(Items, RepoSaver(tmp_path), fill=lambda state: {"items": LIST})
    graph.invoke({}, cfg("t"))
    assert not [n for n in unpacked if n > 64 * 1024]  # it was once, in the put (the writes: none)
    monkeypatch.undo()
    assert graph.get_state(cfg("t")).values["items"] == LIST
    assert Validator(tmp_path).run() == []


def test_the_strings_of_a_big_list_are_told_once_and_its_file_is_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The codec tells the list's items are exact strings (one join in C); the schema check's
    hollowing and the canonical bytes take the put's copy as told (``vouched``) instead of
    joining 50,000 strings again each; without the vouching the file is the same bytes."""
    told: list[tuple[str, int, bool]] = []
    for module, name in ((hollow, "only_scalars"), (canonical, "_only_scalars")):
        real = getattr(module, name)

        def noting(items: Any, real: Any = real, name: str = name) -> bool:
            if isinstance(items, list) and len(items) == len(LIST):
                told.append((name, len(items), vouched(items)))
            return bool(real(items))

        monkeypatch.setattr(module, name, noting)
    graph = line_graph(Items, RepoSaver(tmp_path / "a"), fill=lambda state: {"items": LIST})
    graph.invoke({}, cfg("t"), durability="sync")
    assert {name for name, _, _ in told} == {"only_scalars", "_only_scalars"}
    assert all(was for _, _, was in told)
    monkeypatch.setattr(storing, "Vouching", lambda items: contextlib.nullcontext())
    told.clear()
    other = line_graph(Items, RepoSaver(tmp_path / "b"), fill=lambda state: {"items": LIST})
    other.invoke({}, cfg("t"), durability="sync")
    assert told and not any(was for _, _, was in told)  # each told by its own join again
    (a,), (b,) = (list((tmp_path / side / "threads/t/large").iterdir()) for side in ("a", "b"))
    assert a.name == b.name and a.read_bytes() == b.read_bytes()
    assert Validator(tmp_path / "a").run() == []


def test_a_list_the_app_changes_while_its_put_runs_is_stored_as_it_was_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The codec checks and packs a copy of the list, and the put stores that copy: an app
    thread changing its own list meanwhile (here: just before the put weighs it) changes
    nothing written, so nothing unchecked reaches the file the vouching lets through."""
    rows = list(LIST)
    weighed = storing._strings_weighed

    def app_changes_its_list(*args: Any) -> Any:
        rows[5] = {"$bogus": 1}
        return weighed(*args)

    monkeypatch.setattr(storing, "_strings_weighed", app_changes_its_list)
    graph = line_graph(Items, RepoSaver(tmp_path), fill=lambda state: {"items": rows})
    graph.invoke({}, cfg("t"), durability="sync")
    (large,) = (tmp_path / "threads/t/large").iterdir()
    assert json.loads(large.read_text())["value"]["json"] == LIST
    assert Validator(tmp_path).run() == []
    fresh = line_graph(Items, RepoSaver(tmp_path), fill=lambda state: {})
    assert fresh.get_state(cfg("t")).values["items"] == LIST


def test_a_vouched_list_is_that_list_on_that_thread_only() -> None:
    items = ["a"] * 300
    assert not vouched(items)
    with Vouching(items):
        assert vouched(items) and not vouched(list(items)) and not vouched(None)
        seen: list[bool] = []
        worker = threading.Thread(target=lambda: seen.append(vouched(items)))
        worker.start()
        worker.join()
        assert seen == [False]
        with Vouching(None):
            assert not vouched(items)
        assert vouched(items)
    assert not vouched(items)
    # a list holding something else is judged by its items whatever it is (the rule is the caller's)
    assert not hollow.only_scalars([*items, {"a": 1}])


def test_the_tree_of_a_list_is_its_unpacked_bytes_whatever_the_list() -> None:
    """``tree_of`` gives what unpacking gives: from the list only when it packs to the bytes."""

    class Name(str):
        pass

    plain = [f"row {i}" for i in range(20_000)]
    for value in (
        plain,
        [*plain[:-1], Name("row")],
        [*plain, 1.5],
        [*plain, float("nan")],
        [*plain, {"$a": 1}],
    ):
        data = ormsgpack.packb(value)
        tree = values.tree_of(value, data)
        assert tree == tree_module.msgpack_to_tree(data) and all(type(x) is not Name for x in tree)
        assert orjson.dumps(tree) == orjson.dumps(tree_module.msgpack_to_tree(data))  # nan as its tag
    redacted = ormsgpack.packb([*plain[:-1], "[REDACTED:openai-key]"])  # what the redactor made of it
    assert values.tree_of([*plain[:-1], SECRET], redacted)[-1] == "[REDACTED:openai-key]"
    tree = values.tree_of(plain, ormsgpack.packb(plain))
    assert tree == plain and tree is not plain  # the copy that was packed, not the app's list


def test_the_put_the_step_writes_ride_in_serialises_and_redacts_the_list_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The step's ``put_writes`` rides in the ``put`` (the bench's way: default durability, a
    wait no loaded machine outlasts): the list the checkpoint holds and the one its write
    holds are one object, serialised and redacted once (it was twice), and stored once."""
    monkeypatch.setattr(ride, "GRACE", 2.0)
    encoded: list[int] = []
    dumps = ValueCodec.dumps
    monkeypatch.setattr(ValueCodec, "dumps", lambda self, *a: _noted(encoded, dumps(self, *a)))
    graph = line_graph(Items, RepoSaver(tmp_path), fill=lambda state: {"items": LIST})
    graph.invoke({}, cfg("t"))
    assert not list(tmp_path.glob("threads/t/writes/*"))  # the writes rode in the checkpoint
    assert sum(1 for n in encoded if n > 64 * 1024) == 1
    assert len(list(tmp_path.glob("threads/t/large/*"))) == 1
    assert graph.get_state(cfg("t")).values["items"] == LIST


def _noted(sizes: list[int], got: tuple[str, bytes]) -> tuple[str, bytes]:
    sizes.append(len(got[1]))
    return got


def test_a_big_list_with_a_secret_is_stored_redacted(tmp_path: Path) -> None:
    rows = [*LIST[:-1], f"the key is {SECRET}"]
    graph = line_graph(Items, RepoSaver(tmp_path), fill=lambda state: {"items": rows})
    graph.invoke({}, cfg("t"))
    assert graph.get_state(cfg("t")).values["items"][-1] == "the key is [REDACTED:openai-key]"
    assert not any(SECRET.encode() in p.read_bytes() for p in tmp_path.rglob("*.json"))


@settings(max_examples=examples(40), deadline=None)
@given(trees(SCALARS))
def test_json_too_short_to_pass_the_bounds_is_not_counted_and_the_answer_is_the_same(tree: Any) -> None:
    """Each array and object takes two bytes, each value one: JSON no longer than twice the
    containers bound (nor the values bound) passes the count, so the writer skips it."""
    data = dump_json(tree)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jsonread, "MAX_JSON_CONTAINERS", max(1, len(data) // 2))
        patch.setattr(jsonread, "MAX_JSON_VALUES", len(data) + 1)
        assert jsonread.json_bounds_problem(data) is None and jsonread.write_problem(data) is None


class _Passes(bytes):
    """Bytes that note each pass over them by ``count`` or ``translate``."""

    passes: list[str] = []

    def count(self, *args: Any) -> int:
        type(self).passes.append("count")
        return super().count(*args)

    def translate(self, *args: Any) -> bytes:
        type(self).passes.append("translate")
        return super().translate(*args)


@settings(max_examples=examples(15), deadline=None)
@given(trees(SCALARS), st.integers(min_value=1, max_value=64))
def test_the_bounds_are_counted_in_one_pass_and_the_answer_is_the_same(tree: Any, bound: int) -> None:
    """``json_bounds_problem`` takes the ``[ { , :`` of the bytes in one pass, a megabyte at a
    time, where it made four ``count`` passes over the whole (8 ms on a 5 MB string's file):
    refused or not as before."""
    data = dump_json(tree)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jsonread, "MAX_JSON_CONTAINERS", min(bound, len(data) - 1) if len(data) > 1 else 0)
        patch.setattr(jsonread, "MAX_JSON_VALUES", bound)
        _Passes.passes = []
        got = jsonread.json_bounds_problem(_Passes(data))
        # the upper bound as the four counts took it: within both limits, no problem
        containers = data.count(b"[") + data.count(b"{")
        values = 1 + containers + data.count(b",") + data.count(b":")
        if containers <= jsonread.MAX_JSON_CONTAINERS and values <= bound:
            assert got is None and _Passes.passes == []  # no count of the whole (there were four)
        assert got == jsonread.json_bounds_problem(data)


def test_the_first_put_of_a_big_list_counts_no_bracket(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counted = count_calls(monkeypatch, jsonread, "json_bounds_problem")
    line_graph(Items, RepoSaver(tmp_path), fill=lambda state: {"items": LIST}).invoke({}, cfg("t"))
    assert counted["json_bounds_problem"] == 0  # the 1.5 MB large/ file was counted twice over


def test_a_big_value_with_nothing_to_share_is_not_serialised_for_its_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its characters alone are more than ``large_value_bytes``: it goes to ``large/`` without
    a compact serialisation to measure it; a small value, or one holding references, is
    measured as before, and the bytes are those measuring gives."""
    sizes: list[int] = []
    size = storing.json_size
    monkeypatch.setattr(storing, "json_size", lambda doc: sizes.append(size(doc)) or sizes[-1])
    graph = line_graph(Items, RepoSaver(tmp_path), fill=lambda state: {"items": LIST})
    graph.invoke({}, cfg("t"))
    assert not [n for n in sizes if n > 64 * 1024]  # the 50,000 items were: once per put
    monkeypatch.undo()
    (large,) = (tmp_path / "threads/t/large").iterdir()
    assert json.loads(large.read_text())["value"]["json"] == LIST
    assert graph.get_state(cfg("t")).values["items"] == LIST
    assert Validator(tmp_path).run() == []


# ----------------------------------------------------------------------------
# what the put_writes wrote, the put does not read back
# ----------------------------------------------------------------------------
def test_the_put_does_not_read_back_the_large_file_its_put_writes_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    saver = RepoSaver(tmp_path)
    reads: list[Path] = []
    read_doc = saver.store.files.read_doc
    monkeypatch.setattr(
        saver.store.files, "read_doc", lambda path, *a: reads.append(path) or read_doc(path, *a)
    )
    line_graph(Items, saver, fill=lambda state: {"items": LIST}).invoke({}, cfg("t"), durability="sync")
    (large,) = (tmp_path / "threads/t/large").iterdir()  # the writes and the checkpoint name it
    assert large not in reads  # the put checked it by its stat key: it was parsed and hashed again


def test_a_large_file_changed_after_its_write_is_written_again(tmp_path: Path, writes_alone: None) -> None:
    saver = RepoSaver(tmp_path)
    writes_file = saver._writes_file
    written: dict[Path, bytes] = {}

    def then_damage(call: Any, **kwargs: Any) -> bool:  # inside the put_writes the put waits for
        done = writes_file(call, **kwargs)
        if any(channel == "items" for channel, _ in call.writes):
            for path in (tmp_path / "threads/t/large").glob("*.json"):
                written[path] = path.read_bytes()
                path.write_bytes(written[path].replace(b'"item 7"', b'"item 8"'))
        return done

    saver._writes_file = then_damage  # type: ignore[method-assign]
    graph = line_graph(Items, saver, fill=lambda state: {"items": LIST})
    graph.invoke({}, cfg("t"))
    (large,) = written
    assert large.read_bytes() == written[large]  # the put found it changed, and wrote it again
    assert graph.get_state(cfg("t")).values["items"] == LIST
    assert Validator(tmp_path).run() == []


def test_the_put_refers_to_the_large_file_its_put_writes_stored_and_hashes_nothing_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hashed = count_calls(monkeypatch, storing, "digest_node")
    graph = line_graph(Items, RepoSaver(tmp_path), fill=lambda state: {"items": LIST})
    graph.invoke({}, cfg("t"), durability="sync")
    assert hashed["digest_node"] == 1  # the put_writes'; the put built, shared and hashed it again
    (large,) = (tmp_path / "threads/t/large").iterdir()
    checkpoint = max((tmp_path / "threads/t/checkpoints").iterdir())
    assert large.stem in checkpoint.read_text()
    assert graph.get_state(cfg("t")).values["items"] == LIST


def test_a_big_value_that_refers_to_objects_is_stored_again_by_the_put(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its references may be shared otherwise from the checkpoint than from the writes file
    (``$in``), so it is not taken from the put_writes: stored as it would be, objects and all."""
    message = AIMessage(content="a message the big value holds, in objects/ beside its file " * 4, id="m1")
    rows = [message, *({"row": i} for i in range(3000))]
    hashed = count_calls(monkeypatch, storing, "digest_node")
    saver = RepoSaver(tmp_path)
    writes_file = saver._writes_file

    def then_remove(call: Any, **kwargs: Any) -> bool:  # inside the put_writes the put waits for
        done = writes_file(call, **kwargs)
        if any(channel == "rows" for channel, _ in call.writes):
            for path in (tmp_path / "threads/t/objects").glob("*.json"):
                path.unlink()
        return done

    saver._writes_file = then_remove  # type: ignore[method-assign]
    graph = line_graph(Items, saver, fill=lambda state: {"rows": rows})
    graph.invoke({}, cfg("t"), durability="sync")
    assert hashed["digest_node"] == 2
    assert list((tmp_path / "threads/t/objects").iterdir())  # the put stored its object again
    assert graph.get_state(cfg("t")).values["rows"] == rows
    assert Validator(tmp_path).run() == []


class Grown(TypedDict, total=False):
    items: Annotated[list[Any], operator.add]


def test_a_big_value_unlike_the_one_its_put_writes_stored_is_stored_on_its_own(tmp_path: Path) -> None:
    graph = line_graph(Grown, RepoSaver(tmp_path), fill=lambda state: {"items": LIST})
    graph.invoke({"items": ["before"]}, cfg("t"), durability="sync")
    assert len(list((tmp_path / "threads/t/large").iterdir())) == 2  # the write's and the channel's
    assert graph.get_state(cfg("t")).values["items"] == ["before", *LIST]
    assert Validator(tmp_path).run() == []


# ----------------------------------------------------------------------------
# redaction: each byte searched once
# ----------------------------------------------------------------------------
def scan_of_every_literal(data: bytes) -> bool:
    """``might_contain_secret`` as it was: each trigger's literal searched for in all the data."""
    for literal, loose in TRIGGERS:
        i = data.find(literal)
        while i != -1:
            if loose.match(data, i):
                return True
            i = data.find(literal, i + 1)
    return False


# matches of each trigger's loose pattern, and around them bytes that may or may not hold the
# bytes the new scan looks for first
_MATCHES = st.sampled_from(TRIGGERS).flatmap(lambda trigger: st.from_regex(trigger[1], fullmatch=True))
_PIECES = st.sampled_from(
    [literal for literal, _ in TRIGGERS]
    + [
        b"-",
        b"_",
        b"K",
        b"S",
        b"z",
        b"J",
        b"r",
        b"B",
        b"b",
        b" ",
        b"xoxb-",
        b".eyJ",
        b" PRIVATE KEY",
        b"\xa5",
    ]
)
_FILLER = st.text(alphabet="abcdefghijklmnopq0123456789 ", max_size=30).map(str.encode)
SCANNED = st.lists(st.one_of(_MATCHES, _PIECES, _FILLER, st.binary(max_size=6)), max_size=12).map(b"".join)


@settings(max_examples=examples(200), deadline=None)
@given(SCANNED)
def test_the_scan_by_anchor_bytes_answers_as_the_search_of_every_literal(data: bytes) -> None:
    assert might_contain_secret(data) == scan_of_every_literal(data)


@settings(max_examples=examples(30), deadline=None)
@given(SCANNED, st.integers(min_value=0, max_value=12))
def test_the_scan_of_big_data_screened_byte_by_byte_answers_as_the_search_of_every_literal(
    data: bytes, cut: int
) -> None:
    """Over ``_SCREEN_BYTES``, a trigger is looked for only when the data holds each of its
    bytes (masking._holds_all): the answer is the same."""
    cut = min(cut, len(data))
    big = data[:cut] + b"\x00" * masking._SCREEN_BYTES + data[cut:]
    assert might_contain_secret(big) == scan_of_every_literal(big)


class _Searched(bytes):
    """Bytes that note each search for a trigger (``find``)."""

    found: list[bytes] = []

    def find(self, sub: Any, *args: Any) -> int:
        type(self).found.append(bytes(sub))
        return super().find(sub, *args)


def test_big_data_is_searched_only_for_the_triggers_it_holds_every_byte_of() -> None:
    """A 5 MB string of prose lacking an ``x``, a ``B`` and an ``A`` is not searched for ``xox``,
    ``-----BEGIN`` nor ``AKIA`` (it was: it holds their anchors, ``-`` and, in its header,
    ``K``): two searches of 5 MB, where it was five."""
    prose = "Release notes, part 7: the deploy is blocked by two open items - the warm-up.\n"
    data = _Searched(ormsgpack.packb(prose * (5_000_000 // len(prose))))
    _Searched.found = []
    assert not might_contain_secret(data)
    assert _Searched.found == [b"sk-", b"earer "]


class Text(TypedDict, total=False):
    text: str


SECRET = "sk-" + "proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0f"  # made up, assembled here


def test_a_big_string_is_searched_once_for_the_step_writes_and_the_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = "Many words - with Capitals, under_scores and a zebra. " * 20_000 + SECRET
    searched: list[int] = []
    search = redaction.might_contain_secret
    monkeypatch.setattr(
        redaction, "might_contain_secret", lambda data: searched.append(len(data)) or search(data)
    )
    graph = line_graph(Text, RepoSaver(tmp_path), fill=lambda state: {"text": text})
    graph.invoke({}, cfg("t"), durability="sync")
    assert sum(1 for n in searched if n > len(text)) == 1  # the put_writes'; it was twice
    marked = text.replace(SECRET, "[REDACTED:openai-key]")
    assert graph.get_state(cfg("t")).values["text"] == marked
    assert not any(SECRET.encode() in p.read_bytes() for p in tmp_path.rglob("*.json"))


def test_a_5_mb_string_is_searched_once_in_a_run_and_not_for_pydantic_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One string is no constructed object (``redaction.one_string``): only the text's search,
    once for the step's writes and the checkpoint together (the put it rides in)."""
    monkeypatch.setattr(ride, "GRACE", 2.0)
    text = "Release notes - the Staging database, the cache warm-up. " * 90_000
    searched: dict[str, list[int]] = {"text": [], "pydantic": []}
    for name, key in (("might_contain_secret", "text"), ("might_hold_pydantic_secret", "pydantic")):
        search = getattr(redaction, name)
        monkeypatch.setattr(
            redaction, name, lambda data, _s=search, _k=key: searched[_k].append(len(data)) or _s(data)
        )
    graph = line_graph(Text, RepoSaver(tmp_path), fill=lambda state: {"text": text})
    graph.invoke({}, cfg("t"))
    assert [n for n in searched["text"] if n > len(text)] == [len(text) + 5]  # one search: str 32's header
    assert not [n for n in searched["pydantic"] if n > len(text)]  # it was a search of its own
    assert graph.get_state(cfg("t")).values["text"] == text


def test_one_string_is_told_by_its_header_alone() -> None:
    for size in (0, 31, 32, 255, 256, 65_535, 65_536):
        data = ormsgpack.packb("s" * size)
        assert redaction.one_string(data) and not redaction.one_string(data + b"\xc0")
    for value in (["s" * 40], {"s": "t"}, 5, b"bytes", None):
        assert not redaction.one_string(ormsgpack.packb(value))


def test_a_big_value_seen_again_gives_what_it_gave_and_another_like_it_is_searched() -> None:
    redactor = Redactor()
    plain = "x" * 100_000 + " "
    with_secret = ormsgpack.packb(plain + SECRET)
    without = ormsgpack.packb(plain + "y" * len(SECRET))  # the same length and first bytes
    redacted = redactor.redact_msgpack(with_secret)
    assert ormsgpack.unpackb(redacted) == plain + "[REDACTED:openai-key]"
    assert redactor.redact_msgpack(without) == without
    assert redactor.redact_msgpack(with_secret) == redacted
    assert redactor.redact_msgpack(bytes(with_secret)) == redacted


# ----------------------------------------------------------------------------
# issue 37 item 5: what the first put of a big value passes over it, counted
# ----------------------------------------------------------------------------
def _sha256_sizes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The length of every input ``hashlib.sha256`` is given from now on."""
    sizes: list[int] = []
    real = hashlib.sha256

    def counted(data: bytes = b"", *args: Any, **kwargs: Any) -> Any:
        sizes.append(len(data))
        return real(data, *args, **kwargs)

    monkeypatch.setattr(hashlib, "sha256", counted)
    return sizes


def test_a_big_list_is_hashed_by_sha256_once_for_its_name_not_again_for_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sha256 names a ``large/`` file (its format); the digest that backs a file we just wrote
    until it settles (caches.bytes_digest) is xxh3, so the 1.5 MB is passed to sha256 once
    (it was twice: the name, then the file's bytes for the cache)."""
    monkeypatch.setattr(ride, "GRACE", 2.0)  # the step's writes ride in the put, as in the bench
    sizes = _sha256_sizes(monkeypatch)
    graph = line_graph(Items, RepoSaver(tmp_path), fill=lambda state: {"items": LIST})
    graph.invoke({}, cfg("t"))
    assert len([n for n in sizes if n > 64 * 1024]) == 1
    monkeypatch.undo()
    (large,) = (tmp_path / "threads/t/large").iterdir()
    assert caches.file_digest(large) == caches.bytes_digest(large.read_bytes())
    assert graph.get_state(cfg("t")).values["items"] == LIST


@pytest.mark.parametrize("channel", ["items", "text"])
def test_the_first_put_of_a_big_list_of_strings_or_a_big_string_packs_it_once_unpacks_it_never(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, channel: str
) -> None:
    """The codec packs a long list of exact strings, or a long string, itself
    (``serde.packed_strings``), so its tree is known to be the value: packed once, where the
    serde packed a list and ``values.tree_of`` packed it again to compare, and unpacked
    never, where a 5 MB string was unpacked for its tree; nor are the list's strings joined
    again by the sharer to weigh them."""
    monkeypatch.setattr(ride, "GRACE", 2.0)  # the step's writes ride in the put, as in the bench
    value: Any = LIST if channel == "items" else "Many words - and lines.\n" * 50_000
    packed: list[int] = []
    unpacked: list[int] = []
    pack, unpack = ormsgpack.packb, ormsgpack.unpackb
    monkeypatch.setattr(ormsgpack, "packb", lambda *a, **kw: _counted_pack(packed, pack(*a, **kw)))
    monkeypatch.setattr(
        tree_module.ormsgpack, "unpackb", lambda data, **kw: unpacked.append(len(data)) or unpack(data, **kw)
    )
    weighed = count_calls(monkeypatch, objects_module, "_text_of_strings")
    state = Items if channel == "items" else Text
    graph = line_graph(state, RepoSaver(tmp_path), fill=lambda _: {channel: value})
    graph.invoke({}, cfg("t"))
    assert len([n for n in packed if n > 64 * 1024]) == 1
    assert not [n for n in unpacked if n > 64 * 1024]
    assert weighed["_text_of_strings"] == 0  # the codec counted its characters (storing.stored_value)
    monkeypatch.undo()
    assert graph.get_state(cfg("t")).values[channel] == value
    assert Validator(tmp_path).run() == []


def _counted_pack(sizes: list[int], data: bytes) -> bytes:
    sizes.append(len(data))
    return data


def test_a_list_of_strings_packed_by_the_codec_is_what_the_serde_packs() -> None:
    """``packed_strings`` makes the bytes ``JsonPlusSerializer`` makes (its options change
    nothing for exact strings), so the files are those the serde's bytes gave, and their tree
    is the value; a list or string it cannot pack so (a subclass, a lone surrogate, anything
    not a string, a short one) is the serde's."""

    class Name(str):
        pass

    serde = JsonPlusSerializer()
    text = "é$\U0001f600 - a line\n" * 20_000
    for strings in (LIST, ["é" * 40, "x" * 300, "y" * 70_000, "", "\U0001f600", "$ref"] * 300, text):
        chars = len(strings) if isinstance(strings, str) else sum(map(len, strings))
        assert serde_module.packed_strings(strings) == (serde.dumps_typed(strings)[1], chars, strings)
        assert tree_module.msgpack_to_tree(serde.dumps_typed(strings)[1]) == strings  # its own tree
    for other in (
        [*LIST, Name("n")],
        [*LIST, "\ud800"],
        [*LIST, 1],
        [*LIST, None],
        LIST[:10],
        Name(text),
        text + "\ud800",
        text[:1000],
    ):
        assert serde_module.packed_strings(other) is None
    codec = ValueCodec(serde, Redactor())
    _, data = codec.dumps(LIST, "checkpoint", "t", "/")
    got = codec.strings_of(LIST, data)
    assert got is not None and got[0] == LIST and got[0] is not LIST and got[1] == sum(map(len, LIST))
    assert codec.strings_of(list(LIST), data) is None
    with_secret = [*LIST[:-1], SECRET]
    _, data = codec.dumps(with_secret, "checkpoint", "t", "/")  # redacted: not the bytes packed
    assert codec.strings_of(with_secret, data) is None and b"[REDACTED:openai-key]" in data


@settings(max_examples=examples(40), deadline=None)
@given(
    st.lists(
        st.lists(st.one_of(st.text(max_size=12), st.just(SECRET), st.integers(-(2**31), 2**31)), max_size=6),
        min_size=1,
        max_size=5,
    )
)
def test_the_codecs_split_of_what_it_returned_is_the_split_of_those_bytes(steps: list[list[Any]]) -> None:
    """``ValueCodec.split_of`` takes the redactor's split of the array it returned last (no
    1 MB copy made again by the value writer): the same count and items as splitting the
    bytes, for a list that grows turn by turn (the redactor's known-list path), with secrets
    redacted in the old or the new items, and for bytes it did not return last."""
    codec = ValueCodec(JsonPlusSerializer(), Redactor())
    value: list[Any] = []
    earlier: list[bytes] = []
    for added in steps:
        value = [*value, *added]
        _, data = codec.dumps(value, "checkpoint", "t", "/")
        assert codec.split_of(data) == msgpack_array_split(data)
        for old in earlier:  # not the last: split as it is
            assert codec.split_of(old) == msgpack_array_split(old)
        earlier.append(data)
    _, data = codec.dumps({"not": "a list"}, "checkpoint", "t", "/")
    assert codec.split_of(data) is None


@settings(max_examples=examples(30), deadline=None)
@given(st.one_of(st.text(max_size=40), st.lists(st.text(max_size=12), min_size=1, max_size=40)))
def test_strings_weighed_without_a_pass_weigh_as_the_sharer_weighs_them(tree: str | list[str]) -> None:
    """``storing._strings_weighed`` (the codec's count of characters) gives the weight and
    the tree the sharer gives for a string or a list of strings."""
    text = len(tree) if isinstance(tree, str) else sum(map(len, tree))
    weight, out = storing._strings_weighed("t", tree, text, None)
    sharer = Sharer()
    assert out == sharer.share(tree) and weight == (sharer.containers, sharer.values, sharer.text)
    assert out is tree  # the codec's checked copy is stored as it is

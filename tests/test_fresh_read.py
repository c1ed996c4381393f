"""The first read of a fresh process on a long thread (issue 37, item 4): what it decodes,
stats and walks is counted here, never timed; and every shortcut it takes gives exactly what
the long way gives (properties against the walks it replaces).

Real graphs on a real saver and filesystem; each "fresh process" is a new RepoSaver on the
root (empty caches).
"""

from __future__ import annotations

import base64
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import ormsgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import empty_checkpoint

from graphs import cfg, chat_graph, contents
from helpers import examples, rewrite, without_values_index
from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.core import index as index_module
from langgraph_checkpoint_repo.core import lineage as lineage_module
from langgraph_checkpoint_repo.core.caches import RACY_NS
from langgraph_checkpoint_repo.core.format import tree as tree_module
from langgraph_checkpoint_repo.core.format.messages import refusals
from langgraph_checkpoint_repo.core.format.objects import (
    Expander,
    plain_weight,
    tree_depth,
    tree_weight,
)
from langgraph_checkpoint_repo.core.format.tree import alone_type, from_tree, json_objects, named_types
from langgraph_checkpoint_repo.core.index import OBJECTS_SUFFIX, index_path
from langgraph_checkpoint_repo.core.layout import Layout
from langgraph_checkpoint_repo.core.lineage import Choice, Node
from langgraph_checkpoint_repo.core.objindex import ObjectIndex

SETTLE = RACY_NS / 1e9 + 0.02
SNAPSHOT_EVERY = 16  # a whole copy of the list every 16 puts: a later copy reuses earlier chunks


def chat(root: Path, turns: int = 40) -> list[str]:
    """A thread of ``turns`` turns written so that its files settle (the objects index holds
    them), then read once by a fresh saver (which writes the lineage index down); its texts."""
    graph = chat_graph(RepoSaver(root, durable=False, snapshot_every=SNAPSHOT_EVERY))
    for i in range(turns + 1):
        graph.invoke({"messages": [HumanMessage(f"turn {i}", id=f"u{i}")]}, cfg("t"))
        if i % 8 == 7 or i >= turns - 1:
            time.sleep(SETTLE)
    texts = contents(graph.get_state(cfg("t")).values["messages"])
    assert fresh_texts(root) == texts
    return texts


def fresh_texts(root: Path) -> list[str]:
    """The latest texts as a fresh saver reads them through the objects index (the values
    index, which would serve the whole list, removed first)."""
    without_values_index(root)
    got = RepoSaver(root).get_tuple(cfg("t"))
    assert got is not None
    return contents(got.checkpoint["channel_values"]["messages"])


def objects_file(root: Path) -> Path:
    layout = Layout(root)
    path = index_path(layout, layout.thread_dir("t"), OBJECTS_SUFFIX)
    assert path is not None and path.is_file()
    return path


class _CountingOrjson:
    """``orjson`` as index.py sees it, counting the parses of objects-index lines."""

    def __init__(self) -> None:
        self.lines = 0

    def loads(self, data: Any) -> Any:
        if bytes(data[:14]) == b'["checkpoints/':
            self.lines += 1
        return orjson.loads(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(orjson, name)


def test_a_fresh_read_parses_one_objects_index_line_per_holder_it_uses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A holder's earlier lines are dead (it was written down again): a read parses the
    last line of each holder a reference names, not every line of the file."""
    root = tmp_path / ".langgraph"
    want = chat(root)
    path = objects_file(root)
    header, _, body = path.read_bytes().partition(b"\n")
    holders = body.count(b"\n")
    path.write_bytes(header + b"\n" + body * 4)  # every line four times: three dead copies each
    assert path.stat().st_size < 256 * 1024  # not compacted on load: the file is read as it is
    counting = _CountingOrjson()
    monkeypatch.setattr(index_module, "orjson", counting)
    assert fresh_texts(root) == want
    assert 0 < counting.lines <= holders, (counting.lines, holders)


def lstats_from(monkeypatch: pytest.MonkeyPatch, modules: tuple[str, ...]) -> Counter[str]:
    """The paths ``os.lstat`` is called on from code in ``modules`` (file names), counted."""
    stats: Counter[str] = Counter()
    real_lstat = os.lstat

    def lstat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if sys._getframe(1).f_code.co_filename.endswith(modules):
            stats[os.fsdecode(path)] += 1  # a path, or bytes (metaview.py asks by them)
        return real_lstat(path, *args, **kwargs)

    monkeypatch.setattr(os, "lstat", lstat)
    return stats


def test_a_holder_is_stat_ed_once_per_read_however_many_of_its_objects_it_serves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index checks a holder's stat key once for all the objects a read takes from it
    (a whole copy of a list reuses the chunks an earlier copy's checkpoint holds), and not
    at all when the read's check of which checkpoint continues took it (threads.py)."""
    root = tmp_path / ".langgraph"
    want = chat(root)
    lookups: list[tuple[str, str]] = []
    find = ObjectIndex.find

    def counted_find(self: ObjectIndex, tdir: Path, name: str, holder: str, *args: Any) -> Any:
        lookups.append((name, holder))
        return find(self, tdir, name, holder, *args)

    monkeypatch.setattr(ObjectIndex, "find", counted_find)
    stats = lstats_from(monkeypatch, ("objindex.py", "threads.py"))
    assert fresh_texts(root) == want
    monkeypatch.undo()
    holders = {holder for _, holder in lookups}
    assert len(lookups) > len(holders) > 0  # some holder serves several objects
    assert {stats[h] for h in holders} == {1}, stats.most_common(3)


def test_the_objects_index_takes_the_stat_keys_the_lineage_check_of_the_same_read_took(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh get_tuple lstats every checkpoint to find which one continues; the holders of
    the messages are those checkpoints, so the objects index compares the keys that check
    took and lstats none of them again (1,181 lstats fewer on the bench's 300-turn chat).
    An in-place edit of a holder is still seen: test_objindex.py."""
    root = tmp_path / ".langgraph"
    want = chat(root)
    assert fresh_texts(root) == want  # the lineage index is written (the next read's hits)
    found: list[Any] = []
    find = ObjectIndex.find

    def counted_find(self: ObjectIndex, *args: Any) -> Any:
        got = find(self, *args)
        found.append(got)
        return got

    monkeypatch.setattr(ObjectIndex, "find", counted_find)
    by_index = lstats_from(monkeypatch, ("objindex.py",))
    assert fresh_texts(root) == want
    monkeypatch.undo()
    assert sum(got is not None for got in found) > 10  # the index served the objects
    assert not by_index, by_index.most_common(3)


# -- the shortcuts give what the walks they replace give --------------------------------
_SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),  # past 64 bits: orjson writes none, the shortcut steps aside
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["", "x", "$", "$type", "$ref", 'a"b', "tab\there", "é", "\x00"]),
)
_KEY = st.sampled_from(["a", "b", "content", "id", "$x", "$type", "$ref", "$chunks", 't"q', "é"])


def _tagged(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Tagged objects as the trees hold them: messages (plain or tagged fields), other
    constructors, bytes, maps."""
    fields = st.dictionaries(st.sampled_from(["content", "id", "type", "k"]), inner, max_size=3)
    message = st.builds(
        lambda f, cls, method: {
            "$type": ["langchain_core.messages." + cls[0], cls[1]],
            "$pydantic": 2,
            "$fields": f,
            **({"$method": "model_validate_json"} if method else {}),
        },
        fields,
        st.sampled_from([("ai", "AIMessage"), ("human", "HumanMessage"), ("base", "BaseMessage")]),
        st.booleans(),
    )
    other = st.builds(
        lambda key, arg: {"$type": ["m", "C"], key: arg},
        st.sampled_from(["$kwargs", "$args", "$arg"]),
        inner,
    )
    method = st.builds(lambda arg: {"$type": ["m", "C"], "$method": "make", "$arg": arg}, inner)
    raw = st.sampled_from([{"$bytes": base64.b64encode(b"hi").decode()}, {"$float": "nan"}])
    mapping = st.builds(lambda v: {"$map": [["k", v], [1, "one"]]}, inner)
    return st.one_of(message, other, method, raw, mapping)


TREES = st.recursive(
    _SCALAR,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(_KEY, inner, max_size=4), _tagged(inner)
    ),
    max_leaves=12,
)
PLAIN = st.recursive(
    _SCALAR,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_KEY, inner, max_size=4)),
    max_leaves=12,
)


def _walked_from_tree(tree: Any) -> Any:
    """from_tree as it was: a call for every node."""
    if isinstance(tree, list):
        return [_walked_from_tree(x) for x in tree]
    if not isinstance(tree, dict):
        return tree
    if not any(k.startswith("$") for k in tree):
        return {k: _walked_from_tree(v) for k, v in tree.items()}
    if "$type" in tree:
        mod, name = tree["$type"]
        if "$pydantic" in tree:
            code = tree_module.EXT_PYD1 if tree["$pydantic"] == 1 else tree_module.EXT_PYD2
            payload = [mod, name, _walked_from_tree(tree["$fields"])]
            if "$method" in tree:
                payload.append(tree["$method"])
        elif "$method" in tree:
            code = tree_module.EXT_METHOD
            payload = [mod, name, _walked_from_tree(tree["$arg"]), tree["$method"]]
        else:
            code, key = next((c, k) for c, k in tree_module.ARG_KEY.items() if k in tree)
            payload = [mod, name, _walked_from_tree(tree[key])]
        return ormsgpack.Ext(code, ormsgpack.packb(payload, option=ormsgpack.OPT_NON_STR_KEYS))
    if "$bytes" in tree:
        return base64.b64decode(tree["$bytes"], validate=True)
    if "$float" in tree:
        return float(tree["$float"])
    if "$map" in tree:
        return {tree_module.hashable(_walked_from_tree(k)): _walked_from_tree(v) for k, v in tree["$map"]}
    raise ValueError(f"unknown tag in {sorted(tree)}")


def _packed(convert: Any, tree: Any) -> bytes | str:
    try:
        return ormsgpack.packb(convert(tree), option=ormsgpack.OPT_NON_STR_KEYS)
    except (ValueError, TypeError, KeyError, StopIteration) as exc:
        return type(exc).__name__


@settings(max_examples=examples(400), deadline=None)
@given(TREES)
def test_from_tree_packs_the_bytes_a_walk_of_every_node_packs(tree: Any) -> None:
    assert _packed(from_tree, tree) == _packed(_walked_from_tree, tree)


def _outcome(walk: Any, tree: Any) -> Any:
    try:
        return walk(tree)
    except (ValueError, TypeError) as exc:  # a $type that is not a pair of names
        return type(exc).__name__


def _walked_types(tree: Any) -> list[tuple[str, ...]]:
    """named_types as it was: every object of the tree looked at."""
    found: list[tuple[str, ...]] = []
    for node in json_objects(tree):
        tree_module.node_types(node, found)
    return found


@settings(max_examples=examples(400), deadline=None)
@given(TREES)
def test_named_types_and_refusals_find_what_a_walk_of_every_node_finds(tree: Any) -> None:
    assert _outcome(named_types, tree) == _outcome(_walked_types, tree)
    for changes_only in (False, True):
        assert refusals(tree, changes_only=changes_only, alone=alone_type) == refusals(
            tree, changes_only=changes_only
        )


@settings(max_examples=examples(400), deadline=None)
@given(st.one_of(PLAIN, TREES))
def test_plain_weight_is_the_expanders_weight_of_a_tree_that_refers_to_nothing(tree: Any) -> None:
    got = plain_weight(tree)
    keyed = any("$ref" in node or "$chunks" in node for node in json_objects(tree))
    if keyed:
        assert got is None
        return
    assert got == (tree_weight(tree), tree_depth(tree))

    def load(digest: str, node: Any, holder: str) -> Any:
        raise AssertionError("a tree without references loads nothing")

    expander = Expander(load, "f.json", "/")
    assert expander._weigh(tree, 0, "f.json") == (got[0], 0, got[1])


def test_nothing_of_a_deep_tree_is_looked_at_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    """The quick looks at a tree's JSON are bounded by its size: tagged objects nested 100
    deep (as deep as a file holds), each holding a tag below, are serialised once by each
    walk, not once per object above them."""
    tree: Any = {"$bytes": "aGk="}
    for i in range(100):
        tree = {"$type": ["m", "C"], "$kwargs": {"x": tree, "n": i}}
    size = len(orjson.dumps(tree))
    dumped = [0]
    real = orjson.dumps

    def counting(value: Any, *args: Any, **kwargs: Any) -> bytes:
        out = real(value, *args, **kwargs)
        dumped[0] += len(out)
        return out

    monkeypatch.setattr(tree_module.orjson, "dumps", counting)
    for walk in (from_tree, named_types, lambda t: refusals(t, alone=alone_type)):
        dumped[0] = 0
        walk(tree)
        assert dumped[0] <= 2 * size, (walk, dumped[0], size)


def test_a_message_below_a_message_is_still_read_and_typed() -> None:
    """The look that skips what is below a message goes below one that holds another."""
    nested = {
        "$type": ["langchain_core.messages.human", "HumanMessage"],
        "$pydantic": 2,
        "$fields": {
            "content": "outer",
            "additional_kwargs": {
                "held": {
                    "$type": ["langchain_core.messages.ai", "AIMessage"],
                    "$pydantic": 2,
                    "$fields": {"content": "inner", "content_blocks": [{"type": "text", "text": "other"}]},
                }
            },
        },
    }
    assert named_types([nested]) == [
        ("langchain_core.messages.human", "HumanMessage"),
        ("langchain_core.messages.ai", "AIMessage"),
    ]
    found = refusals([nested], changes_only=True, alone=alone_type)
    assert [pointer for pointer, _ in found] == ["/0/$fields/additional_kwargs/held/$fields/content_blocks"]


# -- the lineage check of a fresh read: one lstat per checkpoint, no Python step per one --
def _deep_thread(root: Path, n: int) -> None:
    """A thread of ``n`` plain checkpoints (no graph), settled, then read by a fresh saver
    (which writes the lineage index down: the next fresh read's known links)."""
    saver = RepoSaver(root, durable=False)
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    for i in range(n):
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"count": i}
        checkpoint["channel_versions"] = {"count": saver.get_next_version(None, None)}
        config = saver.put(config, checkpoint, {"source": "loop", "step": i, "parents": {}}, {"count": 1})
    time.sleep(SETTLE)
    assert RepoSaver(root).get_tuple(cfg("t")) is not None


def _python_calls(call: Any) -> tuple[Any, Counter[str]]:
    """``call()``, and the Python functions it entered, by name, counted."""
    calls: Counter[str] = Counter()

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            calls[frame.f_code.co_name] += 1

    sys.setprofile(profile)
    try:
        got = call()
    finally:
        sys.setprofile(None)
    return got, calls


def test_a_fresh_lineage_check_lstats_each_checkpoint_once_and_steps_per_checkpoint_in_no_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rule (docs/reliability.md): a fresh read lstats every checkpoint file once, so an
    in-place edit of any parent link is seen. What it does around those lstats (the index's
    rows decoded, the keys compared, the links kept, the heads found) is one call over all of
    them, not a Python function per checkpoint: the calls entered do not grow with the thread
    (a generator expression, a row's Node or a loop's helper per checkpoint would)."""
    root = tmp_path / ".langgraph"
    sizes: dict[int, int] = {}
    for n in (64, 128):
        tree = root / str(n)
        _deep_thread(tree, n)
        cid, calls = _python_calls(lambda t=tree: RepoSaver(t).store.current("t", ""))
        assert cid is not None
        sizes[n] = sum(calls.values())
        saver = RepoSaver(tree)
        folder = str(saver.store.layout.checkpoints_dir("t", "")) + os.sep
        stats = lstats_from(monkeypatch, ("threads.py",))
        assert saver.store.current("t", "") == cid
        monkeypatch.undo()
        assert sorted(p for p in stats if p.startswith(folder)) == sorted(
            folder + name for name in os.listdir(folder) if name.endswith(".json")
        )
        assert set(stats.values()) == {1}, stats.most_common(2)
    assert sizes[128] - sizes[64] < 20, sizes


def test_an_in_place_edit_of_an_old_parent_link_is_seen_by_the_one_call_check(tmp_path: Path) -> None:
    """The keys compared in one call still catch an edit of one old checkpoint made in place
    (same folder, same inode): the edited link is read again, and the heads change."""
    root = tmp_path / ".langgraph"
    _deep_thread(root, 64)
    files = sorted(RepoSaver(root).store.layout.checkpoints_dir("t", "").glob("*.json"))
    assert [h.checkpoint_id for h in RepoSaver(root).store.lineage("t", "").heads()] == [files[-1].stem]
    old, inode = files[10], files[10].stat().st_ino
    # the 11th checkpoint edited to continue the 6th: the 10th is a head now, beside the latest
    rewrite(old, lambda doc: doc.__setitem__("parent_checkpoint_id", files[5].stem))
    assert old.stat().st_ino == inode
    heads = RepoSaver(root).store.lineage("t", "").heads()
    assert sorted(h.checkpoint_id for h in heads) == [files[9].stem, files[-1].stem]


_ROW = st.lists(
    st.one_of(
        st.sampled_from(["a", "b", "c"]),
        st.integers(0, 3),
        st.booleans(),
        st.none(),
        st.just({"chose": "a", "over": ["b"]}),
        st.just({"chose": 1}),
    ),
    min_size=8,
    max_size=10,
)
_GOOD_ROW = st.tuples(
    st.sampled_from(["a", "b", "c", "d"]),
    st.integers(0, 3),
    st.integers(0, 3),
    st.integers(0, 3),
    st.integers(0, 3),
    st.sampled_from([None, "a", "b", "z"]),
    st.sampled_from([None, None, None, {"chose": "a", "over": ["b", "c"]}, {"chose": "a"}]),
    st.sampled_from([None, None, None, "why", 3]),
    st.booleans(),
).map(list)


def _rows_one_by_one(rows: Any) -> Any:
    """index.lineage_from_rows as it was: each row unpacked and checked alone."""
    if type(rows) is not list:
        return None
    links: dict[str, Node] = {}
    keys: dict[str, Any] = {}
    for row in rows:
        if type(row) is not list or len(row) != 9:
            return None
        cid, mtime, ctime, size, ino, parent, choice, problem, deliberate = row
        ints = (mtime, ctime, size, ino)
        if not (type(cid) is str and all(type(x) is int for x in ints) and type(deliberate) is bool):
            return None
        if not (parent is None or type(parent) is str):
            return None
        if choice is None and problem is None:
            links[cid] = Node(parent, deliberate=deliberate)
        else:
            link = index_module._link_of_row(parent, choice, problem, deliberate)
            if link is None:
                return None
            links[cid] = link
        keys[cid] = ints
    return (list(links.items()), list(keys.items()))


@settings(max_examples=examples(150), deadline=None)
@given(st.one_of(st.lists(_GOOD_ROW, max_size=6), st.lists(st.one_of(_GOOD_ROW, _ROW), max_size=4)))
def test_lineage_rows_taken_apart_by_column_make_what_a_row_by_row_read_makes(rows: Any) -> None:
    got = index_module.lineage_from_rows(rows)
    assert (None if got is None else (list(got.links.items()), list(got.keys.items()))) == _rows_one_by_one(
        rows
    )


def _walked_rule(links: dict[str, Node]) -> Any:
    """The rule's parts as they were computed: a loop or a generator over every link."""
    kids: dict[str, list[str]] = {}
    for cid, link in links.items():
        if link.parent is not None and link.parent != cid:
            kids.setdefault(link.parent, []).append(cid)
    named = {link.parent for link in links.values() if link.parent is not None}
    heads = [c for c in sorted(links, reverse=True) if c not in named]
    ordered = all(link.parent is None or link.parent < cid for cid, link in links.items())
    over = {h for link in links.values() if link.choice is not None for h in link.choice.over}
    return all(len(c) < 2 for c in kids.values()), heads, ordered, over


_IDS = st.sampled_from([f"{i:02d}" for i in range(12)])
LINKS = st.dictionaries(
    _IDS,
    st.builds(
        Node,
        st.one_of(st.none(), _IDS),
        st.one_of(st.none(), st.builds(Choice, _IDS, st.lists(_IDS, max_size=2).map(tuple))),
        st.none(),
        st.just(True),
        st.booleans(),
    ),
    max_size=10,
)


@settings(max_examples=examples(150), deadline=None)
@given(LINKS)
def test_the_rule_s_one_call_looks_give_what_its_walks_give(links: dict[str, Node]) -> None:
    """Each look over every link in one call (no checkpoint named twice as a parent, no
    choice, every parent an older id) says what the loop it spares says."""
    no_fork, heads, ordered, over = _walked_rule(links)
    if no_fork:
        assert lineage_module.settled_by_forks(links) is None
    assert [h.checkpoint_id for h in lineage_module.find_heads(links)] == heads
    if ordered:
        assert not lineage_module.has_cycle(links)
    assert lineage_module.passed_over(links) == over
    if not over and all(link.choice is None for link in links.values()):
        assert lineage_module.settled_by_choices(links) == set()

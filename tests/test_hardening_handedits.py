"""Hand edits, caches and deterministic bytes (docs/format.md "Editing files by hand",
docs/reliability.md "Hand edits and caches").

The rule under test: a file is data a person may fix. An edit is used as written, from the next
read on, by every reader, warm caches included; a value its own type rejects fails naming the file
and the JSON pointer (never revived as something else); an edit that breaks an append chain fails
naming the edited file. And the same state always gives the same bytes, whatever PYTHONHASHSEED.

Every thread is written by a real compiled StateGraph through RepoSaver on tmp_path, then edited the
way a person would (load the JSON, change it, write it back in place).
"""

from __future__ import annotations

import dataclasses
import enum
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pydantic
import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import MessagesState
from pydantic import v1 as pydantic_v1
from typing_extensions import TypedDict

from graphs import BIG_TEXT, big_graph, cfg, chat_graph, line_graph
from helpers import checkpoint_files, cli, load
from langgraph_checkpoint_repo import FileFormatError, RepoSaver, UnrevivableValueError
from langgraph_checkpoint_repo.core.format.canonical import dump_json
from langgraph_checkpoint_repo.core.format.objects import object_digest

# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def edit(path: Path, change: Callable[[Any], None]) -> None:
    """A person's edit: load, change, write back in place (same inode), keeping the mtime as a
    tool that preserves it would; only ctime (and maybe size) tell the edit apart."""
    st = os.stat(path)
    doc = load(path)
    change(doc)
    with open(path, "wb") as fh:  # in place: the inode stays; the layout kept, as an editor does
        fh.write(dump_json(doc))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def shared_tree(path: Path, node: Any) -> Any:
    """The tree a ``{"$ref": ...}`` node of a file stands for: held by the checkpoint ``$in``
    names, or by the file itself (format 4), else in objects/ of its thread (format 3)."""
    tdir = path.parents[1] if path.parent.parent.parent.name == "threads" else path.parents[3]
    if isinstance(node, dict) and "$ref" in node:
        name = node["$ref"]
        if "$in" in node:
            return load(path.parent.parent / "checkpoints" / f"{node['$in']}.json")["objects"][name]
        own = load(path).get("objects") or {}
        if name in own:
            return own[name]
        return load(tdir / "objects" / f"{name}.json")["tree"]
    return node


def edit_shared(path: Path, locate: Callable[[Any], Any], change: Callable[[Any], None]) -> None:
    """A hand edit of a shared value (a message), the format-4 way (docs/format.md): its tree,
    changed, held by the edited file under its new name (objects are named by their content),
    and the reference ``locate`` finds in ``path`` pointed at it."""
    tree = shared_tree(path, locate(load(path)))
    change(tree)
    digest = object_digest(tree)[:16]

    def point(d: Any) -> None:
        ref = locate(d)
        old = ref["$ref"]
        d.setdefault("objects", {})[digest] = tree
        for key in ("$in", "$ns"):
            ref.pop(key, None)
        ref["$ref"] = digest
        rest = json.dumps({k: v for k, v in d.items() if k != "objects"})
        if old != digest and old in d["objects"] and old not in rest:
            del d["objects"][old]  # the file held it for this reference only: replaced

    edit(path, point)


def holding(root: Path, thread_id: str, channel: str, form: str) -> list[Path]:
    """Checkpoint files of a thread whose new value of ``channel`` is stored as ``form``
    ("value" or "append"), oldest first."""
    return [
        p for p in checkpoint_files(root, thread_id) if form in load(p).get("new_values", {}).get(channel, {})
    ]


def chat(root: Path, thread_id: str, turns: int, saver: RepoSaver | None = None) -> RepoSaver:
    saver = saver or RepoSaver(root, durable=False)
    graph = chat_graph(saver)
    for i in range(turns):
        graph.invoke({"messages": [HumanMessage(content=f"m{i}", id=f"h{i}")]}, cfg(thread_id))
    return saver


def tool_graph(saver: RepoSaver) -> Any:
    def call(state: MessagesState) -> dict[str, Any]:
        return {
            "messages": [
                AIMessage(content="", id="a1", tool_calls=[{"name": "f", "args": {}, "id": "c1"}]),
                ToolMessage(content="42", tool_call_id="c1", id="t1"),
            ]
        }

    return line_graph(MessagesState, saver, call=call)


def tool_message_index(path: Path, items: list[Any]) -> int:
    return next(i for i, m in enumerate(items) if shared_tree(path, m)["$type"][1] == "ToolMessage")


def drop_tool_call_id(root: Path) -> tuple[Path, str]:
    """Remove the ToolMessage's tool_call_id from the file that holds it; (file, pointer)."""
    path = holding(root, "t", "messages", "append")[-1]
    items = load(path)["new_values"]["messages"]["append"]["items"]
    i = tool_message_index(path, items)
    edit_shared(
        path,
        lambda d: d["new_values"]["messages"]["append"]["items"][i],
        lambda tree: tree["$fields"].pop("tool_call_id"),
    )
    return path, f"/new_values/messages/append/items/{i}"


# ---------------------------------------------------------------------------
# the rule: a text edit is used, by every reader, and validate passes
# ---------------------------------------------------------------------------


def test_hand_edit_of_message_text_is_seen_by_a_running_saver_and_validate_passes(root: Path) -> None:
    """The documented rule: a text edit is used as written, by get_tuple and list of a saver that had
    read the thread before the edit (here: the first reply, a link below the latest checkpoint),
    and the edited files still validate."""
    saver = chat(root, "t", 2)
    assert saver.get_tuple(cfg("t")) is not None
    assert len(list(saver.list(cfg("t")))) > 0  # warm every cache
    path = holding(root, "t", "messages", "append")[0]
    assert path != checkpoint_files(root, "t")[-1]

    items = load(path)["new_values"]["messages"]["append"]["items"]
    i = next(i for i, m in enumerate(items) if shared_tree(path, m)["$fields"]["content"] == "echo: m0")
    edit_shared(
        path,
        lambda d: d["new_values"]["messages"]["append"]["items"][i],
        lambda tree: tree["$fields"].update(content="ECHO: M0"),
    )
    latest = saver.get_tuple(cfg("t"))
    listed = next(iter(saver.list(cfg("t"), limit=1)))
    for tup in (latest, listed):
        assert tup is not None
        contents = [m.content for m in tup.checkpoint["channel_values"]["messages"]]
        assert contents == ["m0", "ECHO: M0", "m1", "echo: m1"]
    proc = cli(root, "validate", cwd="/")
    assert proc.returncode == 0, proc.stdout + proc.stderr


# ---------------------------------------------------------------------------
# a value its own type rejects
# ---------------------------------------------------------------------------


def test_removed_tool_call_id_fails_naming_file_and_pointer(root: Path) -> None:
    """LangGraph's hook falls back to model_construct and revives a ToolMessage without its
    tool_call_id; RepoSaver raises, naming the edited file and the message's JSON pointer."""
    tool_graph(RepoSaver(root, durable=False)).invoke({"messages": [HumanMessage("hi", id="h")]}, cfg("t"))
    path, pointer = drop_tool_call_id(root)
    with pytest.raises(UnrevivableValueError) as info:
        tool_graph(RepoSaver(root)).get_state(cfg("t"))
    assert f"{path} at {pointer}" in str(info.value)
    assert "ToolMessage rejects the stored data" in str(info.value)
    assert "tool_call_id" in str(info.value)


def test_validate_reports_a_message_its_type_rejects_at_file_and_pointer(root: Path) -> None:
    """validate --revive constructs LangGraph's own types (messages) strictly, as the saver would
    (plain validate constructs nothing, so it starts without LangGraph)."""
    tool_graph(RepoSaver(root, durable=False)).invoke({"messages": [HumanMessage("hi", id="h")]}, cfg("t"))
    path, pointer = drop_tool_call_id(root)
    proc = cli(root, "validate", "--revive", cwd="/")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if "ToolMessage" in ln]
    assert len(lines) == 1, proc.stdout
    # the message is checked where it lies: format 4, in the objects of the file it was edited
    # in (the edited reference at ``pointer`` of ``path`` names it)
    ref = load(path)
    for part in pointer.strip("/").split("/"):
        ref = ref[int(part)] if isinstance(ref, list) else ref[part]
    assert lines[0].startswith(f"{path}: /objects/{ref['$ref']}: "), lines[0]
    assert "tool_call_id" in lines[0]


def test_rejected_message_deep_in_an_append_chain_is_named_in_the_file_holding_it(root: Path) -> None:
    """The latest value is rebuilt from a chain of files; the error names the link that holds the
    broken message (the first checkpoint's full list), not the checkpoint being read."""
    chat(root, "t", 3)
    base = holding(root, "t", "messages", "value")[0]
    edit_shared(
        base,
        lambda d: d["new_values"]["messages"]["value"]["json"][0],
        lambda t: t["$fields"].update(type="ai"),
    )
    latest = checkpoint_files(root, "t")[-1]
    assert latest != base
    with pytest.raises(UnrevivableValueError) as info:
        chat_graph(RepoSaver(root)).get_state(cfg("t"))
    assert f"{base} at /new_values/messages/value/json/0: " in str(info.value)
    assert "HumanMessage rejects the stored data" in str(info.value)


def test_pending_write_its_type_rejects_fails_naming_the_writes_file(root: Path) -> None:
    """Format 4: the reply task's writes of step 0 are held by step 1's checkpoint, which took
    them from their writes file; the error names that file and the record's pointer."""
    chat(root, "t", 1)
    first_step, holder = checkpoint_files(root, "t")[1:3]  # step 0: the reply task's writes
    cid = load(first_step)["checkpoint_id"]
    (key,) = [k for k, r in load(holder)["parent_writes"].items() if r["writes"][0]["channel"] == "messages"]
    edit_shared(
        holder,
        lambda d: d["parent_writes"][key]["writes"][0]["value"]["json"][0],
        lambda t: t["$fields"].update(type="human"),
    )
    with pytest.raises(UnrevivableValueError) as info:
        RepoSaver(root).get_tuple(cfg("t", checkpoint_id=cid))
    assert f"{holder} at /parent_writes/{key}/writes/0/value/json/0: " in str(info.value)
    assert "AIMessage rejects the stored data" in str(info.value)


class Reading(pydantic.BaseModel):
    sensor: str
    value: float


class OldReading(pydantic_v1.BaseModel):
    sensor: str
    value: float


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Pair(NamedTuple):
    left: str
    right: str


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


def _bad_fields(tree: dict[str, Any]) -> None:
    tree["$fields"]["value"] = "not a number"


def _drop_kwarg(tree: dict[str, Any]) -> None:
    tree["$kwargs"].pop(sorted(tree["$kwargs"])[-1])


def _bad_member(tree: dict[str, Any]) -> None:
    tree["$arg"] = "purple"


class TypedState(TypedDict, total=False):
    reading: Reading
    old_reading: OldReading
    point: Point
    pair: Pair
    color: Color
    n: int


TYPED: dict[str, tuple[str, Any, Callable[[dict[str, Any]], None]]] = {
    "pydantic v2 model": ("reading", Reading(sensor="s", value=1.5), _bad_fields),
    "pydantic v1 model": ("old_reading", OldReading(sensor="s", value=1.5), _bad_fields),
    "dataclass": ("point", Point(1, 2), _drop_kwarg),
    "namedtuple": ("pair", Pair("a", "b"), _drop_kwarg),
    "enum": ("color", Color.RED, _bad_member),
}


def typed_graph(saver: RepoSaver, channel: str, value: Any) -> Any:
    return line_graph(TypedState, saver, node=lambda state: {channel: value, "n": 1})


@pytest.mark.parametrize("kind", list(TYPED))
def test_value_its_own_type_rejects_fails_naming_file_and_pointer(root: Path, kind: str) -> None:
    """For every kind of constructed type (the graph's own, registered by compiling it): no
    model_construct, no raw-dict or raw-value fallback."""
    channel, value, spoil = TYPED[kind]
    # LangGraph derives no allowlist entry for a NamedTuple field: name the type, as a user would
    allow = [(type(value).__module__, type(value).__name__)]
    typed_graph(RepoSaver(root, durable=False), channel, value).invoke({"n": 0}, cfg("t"))
    (path,) = holding(root, "t", channel, "value")
    stored = load(path)["new_values"][channel]["value"]["json"]
    assert shared_tree(path, stored)["$type"][1] == type(value).__name__
    graph = typed_graph(RepoSaver(root, allowlist=allow), channel, value)
    assert graph.get_state(cfg("t")).values[channel] == value
    if "$ref" in stored:  # big enough to be an object (format 3): edited the format-3 way
        edit_shared(path, lambda d: d["new_values"][channel]["value"]["json"], spoil)
    else:
        edit(path, lambda d: spoil(d["new_values"][channel]["value"]["json"]))
    with pytest.raises(UnrevivableValueError) as info:
        typed_graph(RepoSaver(root, allowlist=allow), channel, value).get_state(cfg("t"))
    assert f"{path} at /new_values/{channel}/value/json: " in str(info.value)
    assert f"{type(value).__name__} rejects the stored data" in str(info.value)


def test_set_with_tuple_member_comes_back_as_the_set(root: Path) -> None:
    """msgpack turns a set's tuple members into lists, so LangGraph's hook cannot build the set and
    hands back a list (InMemorySaver returns [1, [4, 5]]); RepoSaver returns the set that was stored."""

    class State(TypedDict):
        tags: set[Any]

    def node(s: State) -> dict[str, Any]:
        return {"tags": {1, (4, 5)}}

    line_graph(State, RepoSaver(root, durable=False), node=node).invoke({"tags": set()}, cfg("t"))
    state = line_graph(State, RepoSaver(root), node=node).get_state(cfg("t"))
    assert state.values["tags"] == {1, (4, 5)}
    assert type(state.values["tags"]) is set


def test_check_revival_constructs_only_langgraph_types(tmp_path: Path) -> None:
    """validate's check never imports or calls a type or method LangGraph does not ship as safe:
    a planted os.mkdir (as a constructor and as a method) runs nowhere and is not what it
    reports; a rejected message inside it is still found, at its pointer."""
    from langgraph_checkpoint_repo.serde import check_revival  # here: added with this check

    marker = tmp_path / "planted"
    planted = [
        {"$type": ["os", "mkdir"], "$arg": str(marker)},
        {"$type": ["os", "path"], "$method": "mkdir", "$arg": str(marker)},
    ]
    assert check_revival(planted) is None
    bad = {"$type": ["langchain_core.messages.human", "HumanMessage"], "$pydantic": 2, "$fields": {}}
    found = check_revival({"wrapped": {"$type": ["os", "mkdir"], "$arg": [bad]}})
    assert found is not None and found[0] == "/wrapped/$arg/0"
    assert "HumanMessage rejects the stored data" in found[1]
    assert not marker.exists()


# ---------------------------------------------------------------------------
# an edit that breaks an append chain
# ---------------------------------------------------------------------------


def _drop_last_base_item(root: Path) -> Path:
    base = holding(root, "t", "messages", "value")[0]
    edit(base, lambda d: d["new_values"]["messages"]["value"]["json"].pop())
    return base


def test_removed_list_item_in_an_append_base_fails_naming_the_edited_file_and_pointer(root: Path) -> None:
    """The checkpoint read is built on the edited one: the error names the edited file and the
    pointer of its list (and the append whose base_length no longer matches), not the next one."""
    chat(root, "t", 2)
    base = _drop_last_base_item(root)
    with pytest.raises(FileFormatError) as info:
        chat_graph(RepoSaver(root)).get_state(cfg("t"))
    assert info.value.path == str(base)
    assert info.value.pointer == "/new_values/messages/value/json"
    assert "base_length" in str(info.value)


def test_validate_reports_a_removed_base_item_once_at_the_edited_file(root: Path) -> None:
    chat(root, "t", 2)
    base = _drop_last_base_item(root)
    proc = cli(root, "validate", cwd="/")
    assert proc.returncode == 1
    lines = [ln for ln in proc.stdout.splitlines() if "base_length" in ln]
    assert len(lines) == 1, proc.stdout
    assert lines[0].startswith(f"{base}: /new_values/messages/value/json: "), lines[0]


# ---------------------------------------------------------------------------
# caches: every read sees every edit
# ---------------------------------------------------------------------------


def test_hand_edit_of_latest_step_is_seen_by_list_and_filter_of_a_running_saver(root: Path) -> None:
    saver = chat(root, "t", 2)
    latest = checkpoint_files(root, "t")[-1]
    step = load(latest)["metadata"]["step"]
    assert [t.metadata["step"] for t in saver.list(cfg("t"), filter={"step": step})]  # warm
    edit(latest, lambda d: d["metadata"].update(step=step + 40))
    assert saver.get_tuple(cfg("t")).metadata["step"] == step + 40  # type: ignore[union-attr]
    assert next(iter(saver.list(cfg("t")))).metadata["step"] == step + 40
    found = list(saver.list(cfg("t"), filter={"step": step + 40}))
    assert [t.config["configurable"]["checkpoint_id"] for t in found] == [latest.stem]
    assert list(saver.list(cfg("t"), filter={"step": step})) == []


def test_an_edited_parent_link_is_seen_by_a_fresh_saver_at_once_and_a_running_one_at_the_next_listing(
    root: Path,
) -> None:
    """The one stated exception to the cache rule (docs/reliability.md, "Hand edits and
    caches"): a running saver keeps a namespace's lineage while the folder's listing is
    unchanged; a fresh saver checks every checkpoint's stat key and sees the edit at once."""
    saver = chat(root, "t", 3)
    files = checkpoint_files(root, "t")
    time.sleep(0.1)  # the listing settles (the racy rule): from now on it is kept
    assert len(saver.store.lineage("t", "").heads()) == 1
    edit(files[-1], lambda d: d.update(parent_checkpoint_id=files[-4].stem))  # a second head
    assert len(RepoSaver(root).store.lineage("t", "").heads()) == 2  # fresh: at once
    assert len(saver.store.lineage("t", "").heads()) == 1  # running: the listing is the same
    (files[-1].parent / "x.tmp").write_bytes(b"")  # any change of the listing
    (files[-1].parent / "x.tmp").unlink()
    assert len(saver.store.lineage("t", "").heads()) == 2


def test_hand_edit_of_an_append_base_is_seen_by_a_running_saver(root: Path) -> None:
    """The latest value is cached as a whole; it is derived from every file of its chain, so an
    edit of the base (same size, mtime kept) is seen too."""
    saver = chat(root, "t", 3)
    before = saver.get_tuple(cfg("t"))
    assert before is not None and before.checkpoint["channel_values"]["messages"][0].content == "m0"
    base = holding(root, "t", "messages", "value")[0]
    size = base.stat().st_size
    edit_shared(
        base,
        lambda d: d["new_values"]["messages"]["value"]["json"][0],
        lambda t: t["$fields"].update(content="M0"),
    )
    # format 4: the message was held by the input's checkpoint; the edit holds its new tree in
    # the base file, so the size changes (the mtime is kept, as above)
    assert base.stat().st_size != size
    for tup in (saver.get_tuple(cfg("t")), next(iter(saver.list(cfg("t"))))):
        assert tup is not None
        assert tup.checkpoint["channel_values"]["messages"][0].content == "M0"


def test_hand_edit_of_a_large_value_file_is_seen_by_a_running_saver(root: Path, saver: RepoSaver) -> None:
    """A large value file is named by its content hash: an edit is reported, by a warm saver too,
    instead of the value cached before the edit."""
    big_graph(saver).invoke({"document": BIG_TEXT}, cfg("t"))
    assert saver.get_tuple(cfg("t")) is not None  # warm
    # the document channel's value (the input's {"document": ...} has a file of its own)
    files = (root / "threads" / "t" / "large").glob("*.json")
    (large,) = [p for p in files if load(p)["value"]["json"] == BIG_TEXT]
    edit(large, lambda d: d["value"].update(json=d["value"]["json"].upper()))
    with pytest.raises(FileFormatError) as info:
        saver.get_tuple(cfg("t"))
    assert info.value.path == str(large)
    assert info.value.pointer == "/sha256"


def test_next_put_after_a_hand_edit_of_the_list_base_does_not_append_onto_it(
    root: Path, saver: RepoSaver
) -> None:
    """A person removes a message from the latest checkpoint while the graph runs (between two of
    its steps). The graph does not re-read its state, so its next checkpoint holds its own list:
    written in full, not as an append onto the edited (now shorter) list, so it reads back whole."""

    def first(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(content="one", id="a1")]}

    def second(state: MessagesState) -> dict[str, Any]:
        latest = checkpoint_files(root, "t")[-1]  # written after "first": the person edits it now
        body = load(latest)["new_values"]["messages"]
        if "append" in body:
            edit(latest, lambda d: d["new_values"]["messages"]["append"]["items"].pop())
        else:
            edit(latest, lambda d: d["new_values"]["messages"]["value"]["json"].pop())
        return {"messages": [AIMessage(content="two", id="a2")]}

    graph = line_graph(MessagesState, saver, first=first, second=second)
    graph.invoke({"messages": [HumanMessage(content="go", id="h")]}, cfg("t"), durability="sync")
    fresh = line_graph(MessagesState, RepoSaver(root), first=first, second=second).get_state(cfg("t"))
    assert [m.content for m in fresh.values["messages"]] == ["go", "one", "two"]
    assert "value" in load(checkpoint_files(root, "t")[-1])["new_values"]["messages"]


# ---------------------------------------------------------------------------
# deterministic bytes
# ---------------------------------------------------------------------------

WRITER = r"""
import json, sys
from typing import Any
from typing_extensions import TypedDict
from langgraph.graph import END, START, StateGraph
from langgraph_checkpoint_repo import RepoSaver

class State(TypedDict, total=False):
    tags: set[str]
    frozen: frozenset[Any]
    nested: dict[str, Any]

TAGS = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"}

def node(state: State) -> dict[str, Any]:
    return {
        "tags": set(TAGS),
        "frozen": frozenset({"x", 3, 2.5, None, True, ("t", 1), frozenset({"p", "q", "r"})}),
        "nested": {"inner": [set(TAGS), {frozenset({"u", "v", "w"})}]},
    }

builder = StateGraph(State)
builder.add_node("node", node)
builder.add_edge(START, "node")
builder.add_edge("node", END)
graph = builder.compile(checkpointer=RepoSaver(sys.argv[1], durable=False))
graph.invoke({"tags": set()}, {"configurable": {"thread_id": "t"}})
print(json.dumps(list(TAGS)))
"""


def _write_with_seed(root: Path, seed: str) -> list[str]:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    proc = subprocess.run(
        [sys.executable, "-c", WRITER, str(root)], capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def _stored_values(root: Path) -> list[bytes]:
    """Every stored value node and metadata, byte for byte as on disk (ids and times left out)."""
    out: list[bytes] = []
    tdir = root / "threads" / "t"
    for path in sorted((tdir / "checkpoints").glob("*.json")):
        doc = load(path)
        out.append(json.dumps([doc.get("new_values", {}), doc["metadata"]["step"]]).encode())
    for path in sorted((tdir / "writes").glob("*.json"), key=lambda p: load(p)["task_path"]):
        out.append(json.dumps([w["value"] for w in load(path)["writes"]]).encode())
    return out


def test_same_state_gives_the_same_bytes_under_different_hash_seeds(tmp_path: Path) -> None:
    first = _write_with_seed(tmp_path / "one", "1")
    second = _write_with_seed(tmp_path / "two", "2")
    assert first != second, "the two seeds must iterate the set differently for this test to mean anything"
    one, two = _stored_values(tmp_path / "one"), _stored_values(tmp_path / "two")
    assert len(one) == len(two) > 2
    assert one == two
    stored = RepoSaver(tmp_path / "one").get_tuple(cfg("t"))
    assert stored is not None and stored.checkpoint["channel_values"]["tags"] == set(first)

"""The third outside review: what a pull request can do to whoever runs the graph, the
command line or the review on its checkout.

A pull request may change any file under the state root or beside it (``.cache/``,
symlinks, the root itself). Each test starts from a root a real graph wrote through
RepoSaver, changes files the way such a pull request could, and runs the saver, a graph or
the command line on it. Each failed before its fix (docs/reliability.md, "Third review").

* memory and time: an expansion is weighed (values and text) before it is built; every
  derived file is bounded before it is decoded; the list diff is O(n log n);
* acknowledged but unreadable: what a write accepts reads back (one nesting rule); a
  planted or damaged file under a content-addressed name is replaced, not trusted; repairs
  judge again under the thread's lock; ``import --replace`` replaces only a complete thread;
* the root itself: a symlinked root is refused; a lone surrogate is refused on read and write;
* import reads its source through the strict allowlist.

Blow-ups run in a subprocess under an address-space limit (``RLIMIT_AS``): before the fix
they died of MemoryError, after it they must end with one clean error naming the file.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from graphs import BIG_TEXT, big_graph, cfg, chat_graph, chat_root
from helpers import checkpoints, cli, cli_env, dump, load
from langgraph_checkpoint_repo import (
    FileFormatError,
    InvalidWriteError,
    RepoCheckpointError,
    RepoSaver,
    RepoStore,
    review,
)
from langgraph_checkpoint_repo.core.format.objects import MAX_NESTING, object_digest
from langgraph_checkpoint_repo.core.format.validation import SCHEMA_VERSION
from langgraph_checkpoint_repo.core.layout import Layout
from langgraph_checkpoint_repo.readmodel.reader import Reader

MEMORY_LIMIT_MB = 1500  # far below what the blow-ups needed (24 GB), far above a normal run


# ----------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------
def plant_object(tdir: Path, tree: Any) -> dict[str, str]:
    """An object file as a writer would make it (named by its content): a reference to it."""
    digest = object_digest(tree)
    folder = tdir / "objects"
    folder.mkdir(exist_ok=True)
    doc = {"schema_version": SCHEMA_VERSION, "kind": "object", "sha256": digest, "tree": tree}
    (folder / f"{digest}.json").write_text(json.dumps(doc), encoding="utf-8")
    return {"$ref": digest}


def chat_with_value(root: Path, make: Any) -> Path:
    """A two-turn chat whose latest checkpoint's ``messages`` is replaced by ``make(thread folder)``."""
    chat_root(root, turns=2)
    tdir = root / "threads" / "t"
    latest = checkpoints(tdir)[-1]
    doc = load(latest)
    doc["new_values"]["messages"] = {"value": {"serde": "msgpack", "json": make(tdir)}}
    dump(latest, doc)
    return latest


def limited(*code_lines: str, limit_mb: int = MEMORY_LIMIT_MB) -> subprocess.CompletedProcess[str]:
    """Python code run in a fresh process whose address space is limited to ``limit_mb``."""
    prelude = (
        f"import resource\nresource.setrlimit(resource.RLIMIT_AS, ({limit_mb << 20}, {limit_mb << 20}))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent("\n".join(code_lines))],
        capture_output=True,
        text=True,
        timeout=600,
        env=cli_env(),
    )


def limited_cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``langgraph-repo --root ROOT ARGS`` under the memory limit."""
    argv = ["langgraph-repo", "--root", str(root), *args]
    return limited(
        "import runpy, sys",
        f"sys.argv = {argv!r}",
        "runpy.run_module('langgraph_checkpoint_repo', run_name='__main__')",
    )


def limited_get_tuple(root: Path) -> subprocess.CompletedProcess[str]:
    return limited(
        "from langgraph_checkpoint_repo import RepoSaver, FileFormatError",
        "try:",
        f"    RepoSaver({str(root)!r}).get_tuple({{'configurable': {{'thread_id': 't'}}}})",
        "except FileFormatError as exc:",
        "    print('FileFormatError', exc)",
        "else:",
        "    print('read')",
    )


def clean_error(proc: subprocess.CompletedProcess[str], code: int, *words: str) -> str:
    """One line on stderr, the exit code, no traceback, naming ``words``."""
    assert proc.returncode == code, (proc.returncode, proc.stdout[-2000:], proc.stderr[-3000:])
    assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr, proc.stderr[-3000:]
    text = proc.stdout + proc.stderr
    for word in words:
        assert word in text, (word, text[-3000:])
    return text


# ----------------------------------------------------------------------------
# memory and time: expansions are weighed before they are built
# ----------------------------------------------------------------------------
def test_chunks_of_chunks_are_refused_before_they_are_built(tmp_path: Path) -> None:
    """Two small objects and ``{"$chunks": [B x 3000]}``, B itself 3,000 chunks of 1,000
    numbers: under 1 MB of files, 9 billion items once expanded. ``validate``, ``show`` and
    ``get_tuple`` built the whole list before weighing it (MemoryError); now each refuses it
    with one error naming the file, within a small address space."""
    root = tmp_path / ".langgraph"

    def make(tdir: Path) -> Any:
        a = plant_object(tdir, list(range(1000)))
        b = plant_object(tdir, {"$chunks": [a] * 3000})
        return {"$chunks": [b] * 3000}

    latest = chat_with_value(root, make)
    assert sum(p.stat().st_size for p in root.rglob("*.json")) < 1_000_000
    clean_error(limited_cli(root, "validate"), 1, latest.name, "expands to over 5,000,000 values")
    clean_error(limited_cli(root, "show", "t"), 4, latest.name, "expands to over 5,000,000 values")
    got = limited_get_tuple(root)
    assert got.returncode == 0, got.stderr[-3000:]
    assert got.stdout.startswith("FileFormatError") and latest.name in got.stdout, got.stdout


def test_the_expansion_limit_counts_text_not_only_values(tmp_path: Path) -> None:
    """``{"$chunks": [O x 5000]}`` with a 4 MiB string in O: 4.6 MB of files, a 20 GiB value
    (every later ``put`` of the state, ``show --json``, msgpack). Refused on read like a file
    of that size would be, naming the file."""
    root = tmp_path / ".langgraph"

    def make(tdir: Path) -> Any:
        return {"$chunks": [plant_object(tdir, ["x" * (4 << 20)])] * 5000}

    latest = chat_with_value(root, make)
    with pytest.raises(FileFormatError) as err:
        RepoSaver(root).get_tuple(cfg("t"))
    assert str(latest) in str(err.value) and "characters of text" in str(err.value)
    clean_error(limited_cli(root, "validate"), 1, latest.name, "characters of text")
    clean_error(limited_cli(root, "show", "t", "--json"), 4, latest.name, "characters of text")


@dataclass
class Node:
    """A recursive value: each level is big enough to be stored as an object of its own."""

    name: str
    child: Node | None = None


class TreeState(TypedDict, total=False):
    tree: Node | None


def nested(levels: int) -> Node:
    node: Node | None = None
    for i in range(levels):
        node = Node(f"level {i:03d} " + "x" * 120, node)
    assert node is not None
    return node


def tree_graph(saver: RepoSaver, levels: int) -> Any:
    builder = StateGraph(TreeState)
    builder.add_node("grow", lambda state: {"tree": nested(levels)})
    builder.add_edge(START, "grow")
    builder.add_edge("grow", END)
    return builder.compile(checkpointer=saver)


def lists_in_lists(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("depth", [252, 254])
@pytest.mark.parametrize("how", ["put", "put_writes", "store"])
def test_a_value_json_cannot_nest_that_deep_is_refused(tmp_path: Path, how: str, depth: int) -> None:
    """LangGraph's serializer takes lists nested 250-255 deep; the JSON encoder does not (254
    levels, the file's own included). Such a put, put_writes or store put raised a bare
    ``TypeError: Recursion limit reached``; it is refused as any invalid write is, naming
    what was written, with nothing of it on disk. A value a little less deep reads back."""
    from langgraph.checkpoint.base import empty_checkpoint

    root = tmp_path / ".langgraph"
    saver = RepoSaver(root, durable=False)
    config = cfg("t", checkpoint_ns="")
    first = saver.put(config, empty_checkpoint(), {"step": 0}, {})
    before = {p: p.read_bytes() for p in root.rglob("*.json")}

    def write(value: Any) -> None:
        if how == "put":
            checkpoint = empty_checkpoint()
            checkpoint["channel_values"] = {"data": value}
            checkpoint["channel_versions"] = {"data": 1}
            saver.put(first, checkpoint, {"step": 1}, {"data": 1})
        elif how == "put_writes":
            saver.put_writes(first, [("data", value)], "task-1")
        else:
            RepoStore(root, durable=False).put(("a",), "k", {"v": value})

    with pytest.raises(InvalidWriteError) as err:
        write(lists_in_lists(depth))
    assert "thread 't'" in str(err.value) or how == "store" or ".json" in str(err.value), err.value
    assert {p: p.read_bytes() for p in root.rglob("*.json")} == before
    write(lists_in_lists(200))  # well within: written and read back
    if how == "store":
        assert RepoStore(root).get(("a",), "k").value == {"v": lists_in_lists(200)}  # type: ignore[union-attr]
    else:
        got = RepoSaver(root).get_tuple(cfg("t"))
        assert got is not None
        stored = got.checkpoint["channel_values"]["data"] if how == "put" else got.pending_writes[0][2]
        assert stored == lists_in_lists(200)


def test_a_value_nested_deeper_than_a_read_follows_is_refused_on_write(tmp_path: Path) -> None:
    """A recursive dataclass 70 levels deep was written and acknowledged as 71 objects, and
    the reader refuses references more than 64 deep: the thread's latest state never read
    again. One rule for both sides: the write is refused, naming thread, checkpoint and
    channel, before any file of it is written; 64 levels are written and read back."""
    root = tmp_path / ".langgraph"
    ok = tree_graph(RepoSaver(root), MAX_NESTING)
    ok.invoke({}, cfg("fits"), durability="sync")
    assert RepoSaver(root, allowlist=[Node]).get_tuple(cfg("fits")) is not None
    assert tree_graph(RepoSaver(root), MAX_NESTING).get_state(cfg("fits")).values["tree"] == nested(
        MAX_NESTING
    )

    before = {p: p.read_bytes() for p in root.rglob("*.json")}
    saver = RepoSaver(root)
    with pytest.raises(InvalidWriteError) as err:
        tree_graph(saver, MAX_NESTING + 6).invoke({}, cfg("deep"), durability="sync")
    message = str(err.value)
    assert "thread 'deep'" in message and "checkpoint" in message, message
    assert "tree" in message and f"more than {MAX_NESTING} levels deep" in message, message
    after = {p: p.read_bytes() for p in root.rglob("*.json")}
    added = sorted(str(p.relative_to(root)) for p in after.keys() - before.keys())
    # the checkpoints before the refused one (input, start) may be there; no object of the value is
    assert not any("/objects/" in p for p in added if "deep" in p), added
    fresh = RepoSaver(root, allowlist=[Node])
    for tup in fresh.list(cfg("deep")):  # whatever was acknowledged reads back
        assert fresh.get_tuple(tup.config) is not None


# ----------------------------------------------------------------------------
# memory: derived files are bounded before they are decoded
# ----------------------------------------------------------------------------
def forged_listing(root: Path, names: int) -> Path:
    """A committed ``.cache/index/threads/t/checkpoints.list`` that passes every check but its
    stat key: ``names`` two-character names (3 bytes each in the file, ~60 bytes once split)."""

    body = b"ab\n" * (names - 1) + b"ab"  # the bytes of b"\n".join([b"ab"] * names), made in one copy
    head = {
        "index_version": 1,
        "kind": "listing",
        "folder": "threads/t/checkpoints",
        "key": [1, 2, 3, 4],
        "count": names,
        "crc32": zlib.crc32(body),
    }
    path = root / ".cache" / "index" / "threads" / "t" / "checkpoints.list"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(json.dumps(head, separators=(",", ":")).encode() + b"\n" + body)
    return path


def forged_meta(root: Path, lists: int) -> Path:
    """A committed ``checkpoints.meta`` of ``lists`` empty arrays: 2 bytes each in the file,
    56 in memory once parsed."""
    data = (
        b'{"index_version":1,"kind":"meta","folder":"threads/t/checkpoints","entries":['
        + b"[]," * (lists - 1)
        + b"[]"
        + b"]}"
    )
    path = root / ".cache" / "index" / "threads" / "t" / "checkpoints.meta"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_a_committed_index_listing_is_not_decoded_before_its_stat_key_matches(tmp_path: Path) -> None:
    """A 65 MiB ``checkpoints.list`` (65 KB gzipped) was read and split into 22 million names
    by every fresh process before its stat key was compared (the review measured +1.9 GB on
    the first ``get_tuple``; here it died of MemoryError under the 1.5 GB limit). The key
    comes first now, and the names are counted before they are split: a fresh ``get_tuple``
    in a small address space reads the real latest checkpoint, and ``fsck`` reports the file
    without splitting it."""
    root = tmp_path / ".langgraph"
    chat_root(root, turns=2)
    latest = checkpoints(root / "threads" / "t")[-1].stem
    forged_listing(root, 22_000_000)
    got = limited(
        "from langgraph_checkpoint_repo import RepoSaver",
        f"tup = RepoSaver({str(root)!r}).get_tuple({{'configurable': {{'thread_id': 't'}}}})",
        "print(tup.checkpoint['id'])",
    )
    assert got.returncode == 0, got.stderr[-3000:]
    assert got.stdout.strip() == latest
    clean_error(limited_cli(root, "fsck"), 1, "checkpoints.list")


def test_a_committed_index_meta_file_is_bounded_before_it_is_parsed(tmp_path: Path) -> None:
    """The same for ``checkpoints.meta``, read by the first ``list(filter=...)``: 22 million
    empty arrays (44 MiB) are refused from a count on the bytes, as any file of the root, and
    the filter reads the checkpoints themselves."""
    root = tmp_path / ".langgraph"
    chat_root(root, turns=2, run_id="r1")
    forged_meta(root, 22_000_000)
    got = limited(
        "from langgraph_checkpoint_repo import RepoSaver",
        f"saver = RepoSaver({str(root)!r})",
        "print(len(list(saver.list({'configurable': {'thread_id': 't'}}, filter={'run_id': 'r1'}))))",
    )
    assert got.returncode == 0, got.stderr[-3000:]
    assert int(got.stdout) > 0
    clean_error(limited_cli(root, "fsck"), 1, "checkpoints.meta")


# ----------------------------------------------------------------------------
# time: no algorithm on stored data worse than O(n log n)
# ----------------------------------------------------------------------------
class ListState(TypedDict, total=False):
    turn: int
    items: list[str]


def relabel_graph(saver: RepoSaver, lists: list[list[str]]) -> Any:
    """One node that sets ``items`` to ``lists[turn]``."""
    builder = StateGraph(ListState)
    builder.add_node("label", lambda state: {"items": lists[state["turn"]]})
    builder.add_edge(START, "label")
    builder.add_edge("label", END)
    return builder.compile(checkpointer=saver)


def listed_diff(root: Path, first: str, second: str) -> tuple[list[int], list[int]]:
    out = cli(root, "diff", "t", "--from", first, "--to", second, "--json", timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    change = next(c for c in json.loads(out.stdout)["changes"] if c["channel"] == "items")
    return [r["index"] for r in change["removed"]], [a["index"] for a in change["added"]]


def applied(before: list[str], after: list[str], removed: list[int], added: list[int]) -> list[str]:
    """The old list with the listing applied: must give the new one."""
    gone = set(removed)
    rebuilt = [x for i, x in enumerate(before) if i not in gone]
    for j in sorted(added):
        rebuilt.insert(j, after[j])
    return rebuilt


def test_diff_of_a_relabelled_list_with_repeated_items_is_not_quadratic(tmp_path: Path) -> None:
    """``diff`` used ``SequenceMatcher(autojunk=False)``, quadratic to cubic on lists whose
    items repeat: one turn relabelling an 8,000-item list ran past this test's 120 s deadline
    (the review measured half an hour and more on a 4,000-item list of bigger items). The
    diff is O(n log n) now (common prefix and suffix, then items unique on both sides as
    anchors, patience-style): the command ends well within its deadline with a listing that
    turns the old list into the new one, and a change among distinct items is listed as
    exactly that change."""
    root = tmp_path / ".langgraph"
    repeated = ["a", "b"] * 4000
    relabelled = ["b", "a", "c"] * 2666 + ["kept"]
    distinct = [f"item {i}" for i in range(8000)]
    edited = [*distinct[:4000], "item 4000 (edited)", *distinct[4001:], "item 8000"]
    lists = [repeated, relabelled, distinct, edited]
    graph = relabel_graph(RepoSaver(root, durable=False), lists)
    ids = []
    for turn in range(len(lists)):
        graph.invoke({"turn": turn}, cfg("t"))
        ids.append(graph.get_state(cfg("t")).config["configurable"]["checkpoint_id"])
    removed, added = listed_diff(root, ids[0], ids[1])
    assert applied(repeated, relabelled, removed, added) == relabelled
    removed, added = listed_diff(root, ids[2], ids[3])
    assert (removed, added) == ([4000], [4000, 8000])
    assert applied(distinct, edited, removed, added) == edited


def test_history_of_a_namespace_with_many_heads_draws_each_row_bounded(tmp_path: Path) -> None:
    """``history`` drew one lane per open branch and found a row's lanes by scanning them all:
    with thousands of heads (a thread forked again and again from one checkpoint, or files
    merged in from many branches) each row's picture, and the work per row, grew with the
    number of heads (quadratic output). Rows are drawn at most ``MAX_LANES`` lanes wide now,
    lanes found by id; a small history draws as before (tests/test_cli.py)."""

    MAX_LANES = getattr(review, "MAX_LANES", 32)  # the module's constant (32)

    root = tmp_path / ".langgraph"
    saver = chat_root(root, turns=1)
    graph = chat_graph(saver)
    fork_point = graph.get_state(cfg("t")).config
    heads = 3 * MAX_LANES
    for i in range(heads):
        graph.update_state(fork_point, {"messages": [HumanMessage(f"branch {i}")]})
    rows = Reader(root).history("t", "")
    assert sum(1 for r in rows if not r.children) >= heads
    widest = max(len(r.graph) for r in rows)
    assert widest <= 2 * MAX_LANES + 2, widest
    assert all("●" in r.graph for r in rows)
    out = cli(root, "history", "t")
    assert out.returncode == 0, out.stderr
    assert max(map(len, out.stdout.splitlines())) < 400


# ----------------------------------------------------------------------------
# acknowledged but unreadable: a name that exists is not proof of its content
# ----------------------------------------------------------------------------
def damage(path: Path, how: str, wrong: Any) -> None:
    """``planted``: a valid document of the kind under this name, holding something else;
    ``truncated``: the first half of the real file."""
    if how == "truncated":
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
        return
    doc = load(path)
    doc["tree" if "tree" in doc else "value"] = wrong
    dump(path, doc)


def object_named_for(tmp_path: Path, text: str) -> tuple[str, Any, Path | None]:
    """The object a chat turn saying ``text`` stores its message as (its name follows from the
    content alone: anyone can compute it), learnt from a scratch root: its name, its tree, and
    its ``objects/`` file when it has one (format 4: a message over ``large_value_bytes``; a
    smaller one is held by the checkpoint that introduces it)."""
    scratch = tmp_path / "scratch"
    chat_root(scratch, turns=0)
    chat_graph(RepoSaver(scratch, durable=False)).invoke({"messages": [HumanMessage(text)]}, cfg("t"))
    tdir = scratch / "threads" / "t"
    for path in (tdir / "objects").glob("*.json"):
        tree = load(path)["tree"]
        if tree.get("$fields", {}).get("content") == text:
            return path.stem, tree, path
    for path in checkpoints(tdir):
        for name, tree in (load(path).get("objects") or {}).items():
            if tree.get("$fields", {}).get("content") == text:
                return name, tree, None
    raise AssertionError("no object holds the message")


@pytest.mark.parametrize("how", ["planted", "truncated"])
def test_an_object_file_with_a_predictable_name_is_verified_before_it_is_relied_on(
    tmp_path: Path, how: str
) -> None:
    """The writer skipped an ``objects/`` file whose name already existed without looking at
    it: a file planted under the name a later message will have (or one damaged on disk) made
    that turn acknowledged but unreadable. Format 4 writes a message to ``objects/`` only when
    it is over ``large_value_bytes``, and otherwise refers to an ``objects/`` file it finds
    under the message's name instead of holding the message itself: both are attacked here.
    An existing file is used only when its content matches its name: the long message's file
    is written again, atomically, with the right bytes (it is named by its content, so they are
    known); the short message is held by the checkpoint, never referred to the planted file.
    The turn reads back, and the root validates but for the short message's planted file."""

    long_text = "hello " * 2000  # about 12 KiB: over the default large_value_bytes (8 KiB)
    name, _, real = object_named_for(tmp_path, long_text)
    short_name, short_tree, short_real = object_named_for(tmp_path / "short", "hello")
    assert real is not None and short_real is None
    root = tmp_path / ".langgraph"
    saver = chat_root(root, turns=1)
    tdir = root / "threads" / "t"
    planted = tdir / "objects" / f"{name}.json"
    planted.parent.mkdir(exist_ok=True)
    planted.write_bytes(real.read_bytes())
    damage(planted, how, {"$type": ["builtins", "set"], "$arg": ["not the message " * 10]})
    short_planted = tdir / "objects" / f"{short_name}.json"
    dump(
        short_planted,
        {"schema_version": SCHEMA_VERSION, "kind": "object", "sha256": short_name, "tree": short_tree},
    )
    damage(short_planted, how, {"$type": ["builtins", "set"], "$arg": ["not the message " * 10]})
    short_bad = short_planted.read_bytes()

    graph = chat_graph(saver)
    graph.invoke({"messages": [HumanMessage(long_text)]}, cfg("t"))
    graph.invoke({"messages": [HumanMessage("hello")]}, cfg("t"))
    messages = RepoSaver(root).get_tuple(cfg("t")).checkpoint["channel_values"]["messages"]
    assert [m.content for m in messages][-4:] == [long_text, f"echo: {long_text}", "hello", "echo: hello"]
    assert planted.read_bytes() == real.read_bytes()
    assert short_planted.read_bytes() == short_bad  # not relied on, not rewritten: nothing refers to it
    holders = [p for p in checkpoints(tdir) if short_name in (load(p).get("objects") or {})]
    assert holders, "the short message is held by a checkpoint, not taken from the planted file"
    proc = cli(root, "validate")
    problems = [ln for ln in proc.stdout.splitlines() if ": /" in ln]
    assert problems and all(ln.startswith(f"{short_planted}: ") for ln in problems), proc.stdout


@pytest.mark.parametrize("how", ["planted", "truncated"])
def test_a_large_file_is_verified_before_a_later_put_relies_on_it(tmp_path: Path, how: str) -> None:
    """The same for ``large/``: a value stored again (the same document) reused the file by
    its name alone."""

    root = tmp_path / ".langgraph"
    saver = RepoSaver(root, durable=False)
    graph = big_graph(saver)
    graph.invoke({"document": BIG_TEXT}, cfg("t"))
    graph.invoke({"document": BIG_TEXT[::-1]}, cfg("t"))
    folder = root / "threads" / "t" / "large"
    (large,) = [p for p in folder.glob("*.json") if load(p)["value"].get("json") == BIG_TEXT]
    good = large.read_bytes()
    damage(large, how, {"serde": "msgpack", "json": "not the document"})  # the latest state does not use it
    graph.invoke({"document": BIG_TEXT}, cfg("t"))  # the first value again: the same large file
    state = big_graph(RepoSaver(root)).get_state(cfg("t")).values
    assert state["document"] == BIG_TEXT
    assert large.read_bytes() == good
    assert cli(root, "validate").returncode == 0


def value_file_prune_will_write(root: Path) -> tuple[Path, str]:
    """The ``values/`` file ``prune`` writes for the base of the latest ``messages`` append
    (format 4: the list the parent holds, at the parent's version, unnamed in the append; the
    parent is a checkpoint prune removes), and the version it holds."""
    latest = load(checkpoints(root / "threads" / "t")[-1])
    assert "base" not in latest["new_values"]["messages"]["append"]  # it extends the parent's list
    parent = Reader(root).store.docs.header("t", "", latest["parent_checkpoint_id"])
    version = parent["checkpoint"]["channel_versions"]["messages"]
    return root / "threads" / "t" / Layout(root).value_rel("messages", version), version


def test_prune_does_not_take_a_planted_value_file_for_the_value_it_rescues(tmp_path: Path) -> None:
    """``prune`` kept a ``values/`` file already at the name it would rescue a value to,
    without looking at it: a planted file (another conversation, under the version's name)
    became the kept checkpoints' value once the checkpoint holding the real one was removed.
    Now one that holds another value makes prune refuse, naming it, with nothing removed."""
    root = tmp_path / ".langgraph"
    saver = chat_root(root, turns=3)
    before = saver.get_tuple(cfg("t")).checkpoint["channel_values"]["messages"]
    vpath, version = value_file_prune_will_write(root)
    vpath.parent.mkdir(exist_ok=True)
    empty = {"json": []}
    dump(
        vpath,
        {
            "schema_version": SCHEMA_VERSION,
            "kind": "value",
            "channel": "messages",
            "version": version,
            "value": empty,
        },
    )
    files = sorted(p.name for p in root.rglob("*.json"))
    with pytest.raises(FileFormatError) as err:
        RepoSaver(root).prune(["t"])
    assert str(vpath) in str(err.value)
    assert sorted(p.name for p in root.rglob("*.json")) == files
    assert RepoSaver(root).get_tuple(cfg("t")).checkpoint["channel_values"]["messages"] == before


def test_prune_rescues_again_over_a_damaged_value_file(tmp_path: Path) -> None:
    """A damaged (truncated) file at the rescue's name is written again from the checkpoint's
    inline value, atomically, so the state reads the same after the prune. Format 4's prune
    also writes the removed parent's bookkeeping, which the kept delta reads in its place
    (``values/@<parent>.json``, kind: base): a damaged one there is written again too."""
    root = tmp_path / ".langgraph"
    saver = chat_root(root, turns=3)
    before = saver.get_tuple(cfg("t")).checkpoint["channel_values"]["messages"]
    vpath, _ = value_file_prune_will_write(root)
    parent = load(checkpoints(root / "threads" / "t")[-1])["parent_checkpoint_id"]
    bpath = root / "threads" / "t" / Layout(root).base_rel(parent)
    vpath.parent.mkdir(exist_ok=True)
    vpath.write_text(f'{{"schema_version": {SCHEMA_VERSION}, "kind": "val', encoding="utf-8")
    bpath.write_text(f'{{"schema_version": {SCHEMA_VERSION}, "kind": "ba', encoding="utf-8")
    RepoSaver(root).prune(["t"])
    assert len(checkpoints(root / "threads" / "t")) == 1  # the parent is gone: both files are read
    assert load(vpath)["kind"] == "value" and load(bpath)["kind"] == "base"
    assert RepoSaver(root).get_tuple(cfg("t")).checkpoint["channel_values"]["messages"] == before
    assert cli(root, "validate").returncode == 0


# ----------------------------------------------------------------------------
# acknowledged but unreadable: every repair judges again under the thread's lock
# ----------------------------------------------------------------------------
def test_fsck_repair_judges_orphaned_writes_again_under_the_lock(tmp_path: Path) -> None:
    """With ``durability="async"`` LangGraph can save a step's writes before its checkpoint
    lands. ``fsck --repair`` judged such writes orphaned without the lock and removed them
    without judging again: once their checkpoint existed, acknowledged writes were deleted.
    Here the writes are put first, fsck judges, the checkpoint lands, then the repair runs
    on what fsck found: the writes stay, and are the checkpoint's pending writes. Format 4
    keeps a written message in the writes file itself, unless it is over
    ``large_value_bytes``: this one is, so the ``objects/`` file only the writes refer to is
    judged orphaned too, and stays with them."""
    from langgraph.checkpoint.base.id import uuid6

    from langgraph_checkpoint_repo.core.checks import fsck, repair

    root = tmp_path / ".langgraph"
    saver = chat_root(root, turns=1)
    latest = saver.get_tuple(cfg("t"))
    new_id = str(uuid6())
    config = cfg("t", checkpoint_ns="", checkpoint_id=new_id)
    text = "written before its checkpoint " * 300  # about 9 KiB: its own objects/ file
    saver.put_writes(config, [("messages", [HumanMessage(text)])], "task-1")

    reader = Reader(root)
    findings = fsck(reader.store)
    # the writes file, and the message object only it refers to
    assert sorted(f.kind for f in findings if f.repairable) == ["orphan-object", "orphan-writes"], findings
    checkpoint = {**latest.checkpoint, "id": new_id}
    saver.put(latest.config, checkpoint, {**latest.metadata, "step": 99}, {})  # the checkpoint lands
    repair(reader.store, findings)

    landed = RepoSaver(root).get_tuple(config)
    assert landed is not None
    assert [(t, c) for t, c, _ in landed.pending_writes] == [("task-1", "messages")]
    assert [m.content for m in landed.pending_writes[0][2]] == [text]
    assert not [f for f in fsck(Reader(root).store) if f.repairable]


def test_fsck_repair_removes_the_orphaned_writes_of_a_lost_checkpoint(tmp_path: Path) -> None:
    """A lost checkpoint leaves its writes orphaned and the checkpoints built onto it
    unreadable. ``fsck --repair`` removes the writes and reports the rest as invalid (exit 1),
    each problem once. Before, judging the thread's value files again under the lock read the
    lost link and stopped with exit 6 (found by docs/cli.md's example, docs/examples.py).
    Format 4 moves a step's writes into the next checkpoint, so the writes files a checkpoint
    in the middle of the history keeps are those that arrived after its child (a write
    ``put_writes`` saves late); its children hold only what changed since it (a delta), so
    they name it as missing."""
    root = tmp_path / ".langgraph"
    saver = chat_root(root, turns=3, in_order=True)  # no writes of lost's saved after its child
    tdir = root / "threads" / "t"
    lost = checkpoints(tdir)[4]  # turn 2's first loop checkpoint: turn 2 builds onto it
    late = cfg("t", checkpoint_ns="", checkpoint_id=lost.stem)
    saver.put_writes(late, [("messages", [HumanMessage("saved after the next step")])], "task-late")
    orphans = sorted((tdir / "writes").glob(f"{lost.stem}~*.json"))
    assert orphans
    lost.unlink()
    proc = cli(root, "fsck", "--repair")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    orphan_lines = [ln.split(": ")[0] for ln in proc.stdout.splitlines() if "orphan" in ln]
    assert orphan_lines == ["removed orphan-writes"]
    assert not any(p.exists() for p in orphans)
    invalid = [ln for ln in proc.stdout.splitlines() if ln.startswith("invalid: ")]
    assert invalid and len(invalid) == len(set(invalid)), proc.stdout
    assert any(f"since checkpoint {lost.stem}, which is missing" in ln for ln in invalid), proc.stdout


# ----------------------------------------------------------------------------
# acknowledged but unreadable: import --replace replaces only a complete thread
# ----------------------------------------------------------------------------
class DataState(TypedDict, total=False):
    turn: int
    data: list[Any]


def sqlite_source(path: Path, thread_id: str, values: list[list[Any]]) -> None:
    """A SQLite checkpoint file (SqliteSaver) whose thread went through ``values``, one a turn."""
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    builder = StateGraph(DataState)
    builder.add_node("set", lambda state: {"data": values[state["turn"]]})
    builder.add_edge(START, "set")
    builder.add_edge("set", END)
    with sqlite3.connect(path, check_same_thread=False) as conn:
        graph = builder.compile(checkpointer=SqliteSaver(conn))
        for turn in range(len(values)):
            graph.invoke({"turn": turn}, cfg(thread_id))


def test_import_replace_keeps_the_thread_when_the_new_one_cannot_be_written(
    tmp_path: Path, container_bound: int
) -> None:
    """``import --replace`` deleted the repository's thread first and wrote the new one
    afterwards: a value the saver refuses (here a list of more lists than a file may hold,
    under the lowered bound of ``container_bound``) left the thread gone. The new thread is
    written whole under a staging name first and swapped in only once complete; refused, the
    old thread is there as it was and the staging thread is gone."""
    root = tmp_path / ".langgraph"
    chat_root(root, turns=2)
    db = tmp_path / "source.sqlite"
    sqlite_source(db, "t", [[1, 2, 3], [[] for _ in range(container_bound + 1)]])
    before = {p: p.read_bytes() for p in (root / "threads").rglob("*") if p.is_file()}
    out = cli(root, "import", f"sqlite:///{db}", "--replace")
    assert out.returncode != 0 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert f"{container_bound:,} arrays and objects" in out.stderr, out.stderr
    after = {p: p.read_bytes() for p in (root / "threads").rglob("*") if p.is_file()}
    assert after == before
    assert [p.name for p in (root / "threads").iterdir()] == ["t"]
    assert cli(root, "validate").returncode == 0


def test_import_replace_swaps_in_the_complete_thread(tmp_path: Path) -> None:
    """The same replace with values the saver takes: the thread is the source's afterwards,
    under its own name, and nothing of the staging thread is left."""
    root = tmp_path / ".langgraph"
    chat_root(root, turns=2)
    db = tmp_path / "source.sqlite"
    sqlite_source(db, "t", [[1, 2, 3], [4, 5]])
    out = cli(root, "import", f"sqlite:///{db}", "--replace")
    assert out.returncode == 0, out.stderr
    assert [p.name for p in (root / "threads").iterdir()] == ["t"]
    state = RepoSaver(root).get_tuple(cfg("t")).checkpoint["channel_values"]
    assert state["data"] == [4, 5] and "messages" not in state
    assert cli(root, "validate").returncode == 0


# ----------------------------------------------------------------------------
# the root itself: confinement starts at the root
# ----------------------------------------------------------------------------
def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every entry under ``folder`` (files with their bytes), lock files and the index aside."""
    out: dict[str, bytes | None] = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        if ".cache" in path.relative_to(folder).parts:
            continue
        out[rel] = path.read_bytes() if path.is_file() else None
    return out


def other_project(tmp_path: Path) -> Path:
    """Another project's state: a repository whose ``.langgraph`` holds a thread."""
    other = tmp_path / "other"
    (other / ".git").mkdir(parents=True)
    chat_root(other / ".langgraph", turns=3)
    return other / ".langgraph"


@pytest.mark.parametrize("shape", ["root", "folder above the root"])
def test_a_symlinked_root_is_refused_by_every_command_and_the_saver(tmp_path: Path, shape: str) -> None:
    """A pull request makes ``.langgraph`` itself a symlink to ``../other/.langgraph``:
    ``delete``, ``prune``, ``fsck --repair``, ``migrate`` and a graph run acted on the other
    project's state (confinement started below the root). Now a root that is a symlink, or
    reached through one inside the repository, is refused by every command and by the saver,
    naming the link, and the other project's files stay as they were."""
    theirs = other_project(tmp_path)
    mine = tmp_path / "mine"
    (mine / ".git").mkdir(parents=True)
    if shape == "root":
        root = mine / ".langgraph"
        root.symlink_to(theirs, target_is_directory=True)
        link = root
    else:
        link = mine / "state"
        link.symlink_to(theirs.parent, target_is_directory=True)
        root = link / ".langgraph"
    before = snapshot(theirs)
    for args in (
        ("delete", "t", "--yes"),
        ("prune", "--keep-last", "1", "--yes"),
        ("fsck", "--repair"),
        ("migrate",),
        ("validate",),
        ("show", "t"),
    ):
        out = cli(root, *args)
        assert out.returncode == 6, (args, out.returncode, out.stdout, out.stderr)
        assert "Traceback" not in out.stderr and str(link) in out.stderr and "symlink" in out.stderr, (
            out.stderr
        )
    with pytest.raises(RepoCheckpointError) as err:
        chat_graph(RepoSaver(root)).invoke({"messages": [HumanMessage("hi")]}, cfg("t"))
    assert str(link) in str(err.value) and "symlink" in str(err.value)
    with pytest.raises(RepoCheckpointError):
        RepoSaver(theirs).store.files.remove_tree(Path(str(root / "threads" / "t")))
    assert snapshot(theirs) == before


def test_a_root_swapped_for_a_symlink_under_a_running_saver_is_refused(tmp_path: Path) -> None:
    """The link can arrive after the saver was made (a checkout while a server runs): every
    read, write and removal checks the root again, so nothing reaches the other project."""
    theirs = other_project(tmp_path)
    mine = tmp_path / "mine"
    (mine / ".git").mkdir(parents=True)
    root = mine / ".langgraph"
    saver = chat_root(root, turns=1)
    graph = chat_graph(saver)
    moved = tmp_path / "moved"
    root.rename(moved)
    root.symlink_to(theirs, target_is_directory=True)
    before = snapshot(theirs)
    with pytest.raises(RepoCheckpointError, match="symlink"):
        graph.invoke({"messages": [HumanMessage("hi")]}, cfg("t"))
    with pytest.raises(RepoCheckpointError, match="symlink"):
        saver.delete_thread("t")
    with pytest.raises(RepoCheckpointError, match="symlink"):
        saver.prune(["t"])
    assert snapshot(theirs) == before


# ----------------------------------------------------------------------------
# the data itself: every string is valid Unicode
# ----------------------------------------------------------------------------
def test_a_lone_surrogate_in_a_stored_string_is_refused_naming_file_and_pointer(tmp_path: Path) -> None:
    """A lone UTF-16 surrogate (``"\\ud83d"``, valid JSON, not valid Unicode) in a stored
    string: the review saw ``validate`` pass and ``diff`` die with a traceback; on this code
    the schema check's encoder refused the whole file at ``/`` ("cannot be validated:
    UnicodeEncodeError"), without saying where. Every string and key of a file must be valid
    Unicode now, checked when it is parsed: the saver, ``validate`` and ``diff`` refuse the
    file naming it and the JSON pointer of the string."""
    root = tmp_path / ".langgraph"
    chat_root(root, turns=2)
    latest = checkpoints(root / "threads" / "t")[-1]
    doc = load(latest)
    doc["new_values"]["messages"] = {"value": {"serde": "msgpack", "json": ["fine", {"k": "half \ud83d"}]}}
    latest.write_text(json.dumps(doc), encoding="utf-8")  # ensure_ascii: written as the \ud83d escape
    pointer = "/new_values/messages/value/json/1/k"
    with pytest.raises(FileFormatError) as err:
        RepoSaver(root).get_tuple(cfg("t"))
    assert err.value.path == str(latest) and err.value.pointer == pointer
    out = cli(root, "validate")
    assert out.returncode == 1 and f"{latest}: {pointer}: " in out.stdout and "surrogate" in out.stdout, out
    out = cli(root, "diff", "t")
    assert out.returncode == 4 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert str(latest) in out.stderr and pointer in out.stderr


def test_a_lone_surrogate_in_a_key_is_refused_too(tmp_path: Path) -> None:
    root = tmp_path / ".langgraph"
    chat_root(root, turns=1)
    latest = checkpoints(root / "threads" / "t")[-1]
    doc = load(latest)
    doc["metadata"]["note \udc00"] = "x"
    latest.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(FileFormatError) as err:
        RepoSaver(root).get_tuple(cfg("t"))
    assert err.value.path == str(latest) and err.value.pointer.startswith("/metadata/note")


def test_a_string_that_is_not_valid_unicode_is_never_written(tmp_path: Path) -> None:
    """The writer refuses such a string wherever the serializer does not already replace it
    (a thread id, a namespace, a task id go into the files as they are): an InvalidWriteError
    naming the file and the pointer, nothing written."""
    root = tmp_path / ".langgraph"
    saver = chat_root(root, turns=1)
    latest = saver.get_tuple(cfg("t"))
    files = snapshot(root)
    with pytest.raises(InvalidWriteError) as err:
        saver.put_writes(latest.config, [("messages", [])], "task \ud83d")
    assert err.value.pointer == "/task_id" and "surrogate" in str(err.value)
    assert snapshot(root) == files


# ----------------------------------------------------------------------------
# import reads its source through the strict allowlist
# ----------------------------------------------------------------------------
def plant_in_sqlite_write(db: Path, marker: Path) -> None:
    """A pending write of the SQLite file, replaced by msgpack naming ``os.system``."""
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    from langgraph_checkpoint_repo.core.format.tree import tree_to_msgpack

    with sqlite3.connect(db, check_same_thread=False) as conn:
        saver = SqliteSaver(conn)
        latest = saver.get_tuple(cfg("t"))
        assert latest is not None
        saver.put_writes(latest.config, [("data", "placeholder")], "planted-task")
        payload = tree_to_msgpack([{"$type": ["os", "system"], "$arg": f"touch {marker}"}])
        conn.execute(
            "UPDATE writes SET type = 'msgpack', value = ? WHERE task_id = 'planted-task'", (payload,)
        )


@pytest.mark.parametrize("direction", ["import", "export"])
def test_import_from_a_handed_sqlite_file_runs_nothing_it_names(tmp_path: Path, direction: str) -> None:
    """``import sqlite:///FILE`` read the source with SqliteSaver's default serializer, which
    allows every type: a msgpack extension in a pending write of a file someone hands you ran
    ``os.system`` on import (``export`` into such a file read it too, to see whether the thread
    is there). Every saver the command line opens reads through the strict allowlist
    (LangGraph's safe types plus ``--allow``): nothing runs, the error names the source."""
    marker = tmp_path / "pwned"
    db = tmp_path / "handed.sqlite"
    sqlite_source(db, "t", [[1, 2, 3]])
    plant_in_sqlite_write(db, marker)
    root = tmp_path / ".langgraph"
    if direction == "import":
        out = cli(root, "import", f"sqlite:///{db}")
    else:
        chat_root(root, turns=1)
        out = cli(root, "export", f"sqlite:///{db}", "--replace")
    assert not marker.exists()
    assert out.returncode == 4, (out.returncode, out.stdout, out.stderr[-2000:])
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert f"sqlite:///{db}" in out.stderr and "os.system" in out.stderr, out.stderr


# ----------------------------------------------------------------------------
# memory: an append chain is one value, bounded as one
# ----------------------------------------------------------------------------
def test_an_append_chain_naming_one_big_object_in_every_link_is_refused(tmp_path: Path) -> None:
    """Each link of an append chain was bounded on its own, the list rebuilt from all of them
    not at all: every link naming the same 1.2-million-number object rebuilt a value of 1.2
    million times the number of links (1,024 links: over a billion) from a few small files.
    The whole list is bounded like one value: refused at the link that passes the bound."""
    root = tmp_path / ".langgraph"
    chat_root(root, turns=3)
    tdir = root / "threads" / "t"
    big = plant_object(tdir, list(range(1_200_000)))
    links = []
    for path in checkpoints(tdir):
        doc = load(path)
        app = doc.get("new_values", {}).get("messages", {}).get("append")
        if app is not None:
            app["items"] = [big] * len(app["items"])
            dump(path, doc)
            links.append(path)
    assert len(links) >= 5
    with pytest.raises(FileFormatError) as err:
        RepoSaver(root).get_tuple(cfg("t"))
    assert err.value.pointer == "/new_values/messages/append", err.value
    assert "append chain expands to over 5,000,000 values" in str(err.value)
    assert err.value.path in map(str, links[3:])


def test_an_append_that_would_take_the_list_past_a_read_is_refused_on_write(
    tmp_path: Path, container_bound: int
) -> None:
    """The writer applies the same bound to the list it appends to: a list stored whole just
    within the bound (999,981 arrays) and then appended to (30 more, a tiny append) was
    acknowledged and could not be read back under the bound above. The put that would make
    the rebuilt list bigger than a read takes is refused, naming thread, checkpoint and
    channel, with nothing of it written; what was written before reads back. (Run under the
    lowered bound of ``container_bound``: the same rule, a fiftieth of the lists.)"""
    whole = container_bound - 20  # the list and the checkpoint's own arrays and objects fit
    from langgraph.checkpoint.base import empty_checkpoint

    root = tmp_path / ".langgraph"
    saver = RepoSaver(root, durable=False)
    config = cfg("t", checkpoint_ns="")
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"log": [[] for _ in range(whole)]}
    checkpoint["channel_versions"] = {"log": 1}
    config = saver.put(config, checkpoint, {"step": 1}, {"log": 1})
    files = snapshot(root)
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"log": [[] for _ in range(whole + 30)]}
    checkpoint["channel_versions"] = {"log": 2}
    with pytest.raises(InvalidWriteError) as err:
        saver.put(config, checkpoint, {"step": 2}, {"log": 2})
    assert "thread 't'" in str(err.value) and "/new_values/log" in str(err.value)
    assert f"would expand to over {container_bound:,} arrays and objects" in str(err.value)
    assert snapshot(root) == files
    assert len(RepoSaver(root).get_tuple(cfg("t")).checkpoint["channel_values"]["log"]) == whole


def test_copy_thread_does_not_replace_a_whole_object_of_the_target_with_a_damaged_one(tmp_path: Path) -> None:
    """``copy_thread`` wrote every ``objects/`` and ``large/`` file of the source over the
    target's: a damaged (or planted) file in the source under a name the target also holds
    made the target's own checkpoints unreadable. A file the target holds whole is kept; a
    source file that does not hold what its name says is refused, naming it, before anything
    is written. Format 4 gives a message its own ``objects/`` file when it is over
    ``large_value_bytes`` (a shorter one is held by its checkpoint): the words here are."""
    root = tmp_path / ".langgraph"
    saver = RepoSaver(root, durable=False)
    graph = chat_graph(saver)
    words = "the same words in both threads " * 300  # about 9 KiB
    for thread in ("a", "b"):
        graph.invoke({"messages": [HumanMessage(words)]}, cfg(thread))
    name = next(
        p.name
        for p in (root / "threads" / "a" / "objects").glob("*.json")
        if load(p)["tree"].get("$fields", {}).get("content") == words
    )
    assert (root / "threads" / "b" / "objects" / name).exists()  # the same name in the target
    damage(
        root / "threads" / "a" / "objects" / name,
        "planted",
        {"$type": ["builtins", "set"], "$arg": ["x" * 200]},
    )
    expected = len(checkpoints(root / "threads" / "a")) + len(checkpoints(root / "threads" / "b"))
    saver.copy_thread("a", "b")
    fresh = RepoSaver(root)
    copied = list(fresh.list(cfg("b")))
    assert len(copied) == expected  # b's own checkpoints and a's
    for tup in copied:
        assert fresh.get_tuple(tup.config) is not None
    assert fresh.get_tuple(cfg("b")).checkpoint["channel_values"]["messages"][0].content == words
    with pytest.raises(FileFormatError) as err:  # c lacks the object: a's damaged one is not copied
        saver.copy_thread("a", "c")
    assert name in str(err.value) and "/threads/a/" in str(err.value)
    assert not (root / "threads" / "c").exists()


def test_fsck_repair_leaves_nothing_the_next_fsck_reports(tmp_path: Path) -> None:
    """A run killed before its first checkpoint leaves a thread folder holding only what
    repair removes (a step's writes, a temp file); a store folder can hold only a temp file.
    Repair used to remove those files and leave the folders, which the next fsck reported as
    empty (the crash harness met it). One repair now leaves a root the next fsck passes."""
    from langgraph_checkpoint_repo.core.checks import fsck, repair
    from langgraph_checkpoint_repo.core.threads import ThreadStore

    root = tmp_path / ".langgraph"
    chat_root(root, "kept", turns=1)
    # in order: a step's writes saved after its child checkpoint can refer to a message that
    # checkpoint holds, invalid once it is removed, not one of the files repair removes
    chat_root(root, "killed", turns=1, in_order=True)
    tdir = root / "threads" / "killed"
    for path in checkpoints(tdir):
        path.unlink()  # as if the process died after the step's writes, before any checkpoint
    (tdir / "checkpoints" / ".1f1e0000-0000-6000-8000-000000000000.json.0123456789ab.tmp").write_text("{")
    folder = root / "store" / "users" / "ada"
    folder.mkdir(parents=True)
    (folder / ".theme.json.0123456789ab.tmp").write_text("{")
    store = ThreadStore(root)
    found = fsck(store)
    assert found and all(f.repairable for f in found), [(f.kind, f.path) for f in found]
    repair(store, found)
    assert fsck(ThreadStore(root)) == []
    assert not tdir.exists() and not (root / "store" / "users").exists()
    assert RepoSaver(root).get_tuple(cfg("kept")) is not None

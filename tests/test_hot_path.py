"""What a chat turn's calls do, counted (issue 37): the work that made a turn slow, and that
must not come back. Counts, not times: the times are bench/'s (docs/performance.md).

Real graphs on a real saver and filesystem; each test fails on the code before its change.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from graphs import Recorder, cfg, chain_graph, chat_graph
from helpers import lookups_per_put
from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.core import caches
from langgraph_checkpoint_repo.core import files as files_module
from langgraph_checkpoint_repo.core.errors import FileFormatError
from langgraph_checkpoint_repo.values import ValueWriter


@contextmanager
def lstats_under(folder: Path, itself: bool = False) -> Iterator[list[str]]:
    """Every ``os.lstat`` of a path under ``folder`` (``itself``: and of ``folder``) made
    meanwhile, on any thread."""
    seen: list[str] = []
    original = os.lstat
    prefix = str(folder) + os.sep

    def counting(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        name = os.fsdecode(path)  # a path, or bytes (metaview.py asks by them)
        if name.startswith(prefix) or (itself and name == str(folder)):
            seen.append(name)
        return original(path, *args, **kwargs)

    os.lstat = counting  # type: ignore[assignment]
    try:
        yield seen
    finally:
        os.lstat = original


@contextmanager
def during_the_next_write(act: Callable[[], None]) -> Iterator[None]:
    """Run ``act`` inside the next write of the saver's files, once its files are renamed into
    place and before the write brings the listings up to date (as a reader on another thread
    of the same process can)."""
    original = files_module.Files._written
    done: list[bool] = []

    def written(self: Any, docs: Any, path: Path, before: Any) -> None:
        if not done:
            done.append(True)
            act()
        original(self, docs, path, before)

    files_module.Files._written = written  # type: ignore[method-assign]
    try:
        yield
    finally:
        files_module.Files._written = original  # type: ignore[method-assign]


def _next_read_lstats(root: Path, *, read_beside: bool) -> tuple[int, int]:
    """A thread of a chain graph's turns, one more checkpoint put (with a ``get_tuple`` inside
    its write when ``read_beside``), then the lstats the next ``get_tuple`` makes in the
    checkpoints folder, and how many checkpoints there are."""
    saver = RepoSaver(root, durable=False)
    graph = chain_graph(saver)
    for _ in range(8):
        graph.invoke({"log": []}, cfg("t"))
    latest = saver.get_tuple(cfg("t"))
    assert latest is not None
    checkpoint = {**latest.checkpoint, "id": "1f1f1f1f-0000-6000-8000-000000000001"}
    args = (latest.config, checkpoint, latest.metadata, {})
    if read_beside:
        with during_the_next_write(lambda: saver.get_tuple(cfg("t"))):
            saver.put(*args)
    else:
        saver.put(*args)
    with lstats_under(saver.store.layout.checkpoints_dir("t", "")) as seen:
        got = saver.get_tuple(cfg("t"))
    assert got is not None and got.checkpoint["id"] == checkpoint["id"]
    return len(seen), len(saver.store.checkpoint_ids("t", ""))


def test_a_read_beside_our_own_write_costs_the_next_read_nothing(tmp_path: Path) -> None:
    """A reader that lists a thread's folder while a put of the same process is writing there
    saw the folder mid-change: kept, that listing replaced the one the put brings up to date,
    and the next ``get_tuple`` derived the lineage again with one lstat per checkpoint (every
    chat turn cost O(checkpoints): LangGraph reads beside its own background puts). The
    listing is used once and not kept now: the next read makes the lstats it makes after a
    turn nobody read beside."""
    beside, count = _next_read_lstats(tmp_path / "beside", read_beside=True)
    alone, _ = _next_read_lstats(tmp_path / "alone", read_beside=False)
    assert count >= 35
    assert beside <= alone, f"{beside} lstats after a read beside the write, {alone} without one"


def test_a_put_writes_does_not_wait_for_its_own_checkpoints_put(tmp_path: Path) -> None:
    """LangGraph submits a step's writes beside the checkpoint they belong to; waiting for that
    put made every step two calls in line instead of one. The writes are decided one call at a
    time (a message one of them holds is referred to by the other), so no wait is needed: a
    put held inside its write leaves the put_writes of its checkpoint free to finish, and the
    thread then reads as InMemorySaver's does."""
    saver = RepoSaver(tmp_path / "root", durable=False)
    ref = InMemorySaver()
    for s in (saver, ref):
        chat_graph(s).invoke({"messages": [HumanMessage("hi", id="h1")]}, cfg("t"))
    parent = saver.get_tuple(cfg("t"))
    assert parent is not None
    checkpoint = {**parent.checkpoint, "id": "1f1f1f1f-0000-6000-8000-000000000001"}
    config = parent.config
    held, release = threading.Event(), threading.Event()
    original = files_module.Files.write

    def write(self: Any, batches: Any, docs: Any = None) -> None:
        paths = [p for batch in batches for p, _ in batch]
        if any(p.name.startswith("1f1f1f1f") and p.parent.name == "checkpoints" for p in paths):
            held.set()
            assert release.wait(30), "the put was never released"
        original(self, batches, docs)

    files_module.Files.write = write  # type: ignore[method-assign]
    try:
        put = threading.Thread(target=saver.put, args=(config, checkpoint, parent.metadata, {}), daemon=True)
        put.start()
        assert held.wait(30)
        child = {"configurable": {**config["configurable"], "checkpoint_id": checkpoint["id"]}}
        writes = threading.Thread(
            target=saver.put_writes,
            args=(child, [("messages", [AIMessage("late", id="a9")])], "task-1"),
            daemon=True,
        )
        writes.start()
        writes.join(30)
        finished_while_the_put_was_held = not writes.is_alive()
    finally:
        release.set()
        files_module.Files.write = original  # type: ignore[method-assign]
    put.join(30)
    assert finished_while_the_put_was_held
    got = saver.get_tuple(child)
    assert got is not None and [(t, c, v[0].content) for t, c, v in got.pending_writes] == [
        ("task-1", "messages", "late")
    ]


@pytest.fixture(autouse=True)
def _no_leftover_patches() -> Iterator[None]:
    yield
    assert files_module.Files.write.__name__ == "write"


def _long_chat(root: Path, turns: int, **options: Any) -> tuple[RepoSaver, list[int]]:
    """A chat of ``turns`` turns (messages long enough to be stored apart), and how many
    objects each put looked up where they were stored before (``Overlap.locate_object``)."""
    saver = RepoSaver(root, durable=False, **options)
    counts = lookups_per_put(saver)
    graph = chat_graph(saver)
    for n in range(turns):
        text = f"turn {n}: " + "please keep this message long enough to be stored as an object " * 2
        graph.invoke({"messages": [HumanMessage(text, id=f"h{n}")]}, cfg("t"))
    return saver, counts


def test_a_whole_copy_of_a_long_list_looks_up_only_its_new_items(tmp_path: Path) -> None:
    """Every ``snapshot_every`` appends a list is written whole again. It used to look every
    item up again (one stat and a holder's read per message: a put 40x the median past 2,600
    turns); the items the version written before already had keep the references they had,
    so a whole copy looks up its new items and its chunks only."""
    saver, counts = _long_chat(tmp_path / "root", 60, snapshot_every=8)
    latest = saver.get_tuple(cfg("t"))
    assert latest is not None and len(latest.checkpoint["channel_values"]["messages"]) == 120
    # looking every item up again made it one per item and one per chunk (145 to 169 here);
    # the chunks alone are about one in three items, on three levels (46 to 52)
    assert max(counts[-40:]) <= 60, counts[-40:]


def _without_writes_names(path: Path) -> bytes:
    """A checkpoint file's bytes with the names of the writes files it took left out."""
    doc = json.loads(path.read_bytes())
    doc["parent_writes"] = sorted(doc.get("parent_writes", {}).values(), key=json.dumps)
    return json.dumps(doc, sort_keys=True, indent=1).encode()


def test_a_whole_copy_from_known_items_is_the_bytes_sharing_the_whole_list_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same calls made into two savers, one building every whole copy on the items it
    knew and one sharing the whole list each time, write the same files (byte for byte but
    for the names of the writes files each took, which are random); and the thread reads as
    InMemorySaver's."""
    recorder = Recorder()
    graph = chat_graph(recorder)
    for n in range(30):
        text = f"turn {n}: " + "please keep this message long enough to be stored as an object " * 2
        graph.invoke({"messages": [HumanMessage(text, id=f"h{n}")]}, cfg("t"))
    roots = {}
    built = []
    original = ValueWriter.whole_by_items

    def counted(self: ValueWriter, *args: Any, **kwargs: Any) -> Any:
        got = original(self, *args, **kwargs)
        built.append(got is not None and self.lists.get(("t", "", "messages")) is not None)
        return got

    for name in ("known", "whole"):
        monkeypatch.setattr(
            ValueWriter, "whole_by_items", counted if name == "known" else lambda *a, **k: None
        )
        saver = RepoSaver(tmp_path / name, durable=False, snapshot_every=8)
        for method, args in recorder.calls:
            getattr(saver, method)(*args)
        roots[name] = saver
    assert built.count(True) >= 3  # whole copies built on the items the last version had
    folders = {name: saver.store.layout.checkpoints_dir("t", "") for name, saver in roots.items()}
    names = sorted(p.name for p in folders["known"].iterdir())
    assert names == sorted(p.name for p in folders["whole"].iterdir()) and len(names) >= 90
    for file in names:  # the same bytes but for the names of the writes files taken (random)
        known, whole = (_without_writes_names(folders[n] / file) for n in ("known", "whole"))
        assert known == whole, file
    ours = RepoSaver(tmp_path / "known").get_tuple(cfg("t"))
    theirs = recorder.get_tuple(cfg("t"))
    assert ours is not None and theirs is not None
    assert ours.checkpoint["channel_values"] == theirs.checkpoint["channel_values"]


def test_a_put_reads_its_parents_file_once(tmp_path: Path) -> None:
    """A put reads its parent whole (to refer to its values and write itself as a delta on
    it) and needs the parent's own depth of deltas: both come from one read of the parent's
    file. It was read a second time for the depth: while the parent is unsettled (the put
    before, a few ms earlier) each read compares its bytes again."""
    saver = RepoSaver(tmp_path / "root", durable=False)
    chat_graph(saver).invoke({"messages": [HumanMessage("hi", id="h1")]}, cfg("t"))
    parent = saver.get_tuple(cfg("t"))
    assert parent is not None
    checkpoint = {**parent.checkpoint, "id": "1f1f1f1f-0000-6000-8000-000000000002"}
    ppath = saver.store.layout.checkpoint_path("t", "", parent.checkpoint["id"])
    original = files_module.Files.read_doc
    reads: list[Path] = []

    def read_doc(self: Any, path: Path, *args: Any, **kwargs: Any) -> Any:
        reads.append(path)
        return original(self, path, *args, **kwargs)

    files_module.Files.read_doc = read_doc  # type: ignore[method-assign]
    try:
        saver.put(parent.config, checkpoint, parent.metadata, {})
    finally:
        files_module.Files.read_doc = original  # type: ignore[method-assign]
    assert reads.count(ppath) == 1, reads
    child = saver.get_tuple(cfg("t"))
    assert child is not None and child.checkpoint["channel_values"] == parent.checkpoint["channel_values"]


@contextmanager
def stats_of(fragment: str) -> Iterator[list[str]]:
    """Every ``os.stat`` and ``os.lstat`` of a path holding ``fragment`` made meanwhile."""
    seen: list[str] = []
    originals = os.stat, os.lstat

    def wrap(original: Callable[..., os.stat_result]) -> Callable[..., os.stat_result]:
        def counting(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
            if fragment in os.fsdecode(path):  # a path, or bytes (metaview.py asks by them)
                seen.append(os.fsdecode(path))
            return original(path, *args, **kwargs)

        return counting

    os.stat, os.lstat = wrap(originals[0]), wrap(originals[1])  # type: ignore[assignment]
    try:
        yield seen
    finally:
        os.stat, os.lstat = originals  # type: ignore[assignment]


def test_a_new_message_is_looked_for_in_objects_only_when_the_thread_has_that_folder(tmp_path: Path) -> None:
    saver = RepoSaver(tmp_path / "repo", durable=False)
    graph = chat_graph(saver)
    graph.invoke({"messages": [HumanMessage("hi")]}, cfg("t"))
    objects = saver.store.layout.objects_dir("t")
    assert not objects.exists()  # format 4 keeps a chat's messages in its checkpoints
    with stats_of(os.sep + "objects") as seen:
        graph.invoke({"messages": [HumanMessage("again")]}, cfg("t"))
    # the folder asked once per message looked up: it was a stat of two names in it each
    assert seen and all(p == str(objects) for p in seen)


def test_the_parts_below_the_root_read_from_the_text_are_pathlibs() -> None:
    from langgraph_checkpoint_repo.core.layout import Layout

    for root in ("/tmp/r", "/", "rel/r", "/tmp/r/"):
        layout = Layout(Path(root))
        texts = ("/tmp/r/a/b.json", "/tmp/r", "/tmp/rx/a", "/tmp/r/../x", "rel/r/a", "/a/b", "rel/r", "/")
        for text in texts:
            path = Path(text)
            try:
                expected: tuple[str, ...] | None = path.relative_to(layout.root).parts
            except ValueError:
                expected = None
            assert layout.parts_below_root(path) == expected, (root, text)


def test_a_write_makes_one_path_per_folder(tmp_path: Path) -> None:
    saver = RepoSaver(tmp_path / "repo", durable=False)
    layout = saver.store.layout
    path = layout.checkpoint_path("t", "", "1")
    assert layout.folder_of(path) is layout.folder_of(layout.checkpoint_path("t", "", "2"))
    assert layout.folder_of(path) == path.parent
    assert layout.sibling(path, "x.json") is layout.sibling(path, "x.json") == path.parent / "x.json"
    assert layout.child(path.parent, "a/b.json") is layout.child(path.parent, "a/b.json")


def test_a_get_tuple_asks_about_each_file_once(tmp_path: Path) -> None:
    saver = RepoSaver(tmp_path / "repo", durable=False)
    graph = chat_graph(saver)
    for i in range(6):
        graph.invoke({"messages": [HumanMessage(f"turn {i}")]}, cfg("t"))
    time.sleep(0.06)  # settled: the kept line and chain are checked by their stat keys
    saver.get_tuple(cfg("t"))
    with lstats_under(tmp_path / "repo", itself=True) as seen:
        assert saver.get_tuple(cfg("t")) is not None
    # the chain of ``messages`` and the line of deltas run through the same checkpoint files:
    # each was asked about two and three times in one read; the root and the folders on the
    # way are asked once too, however many kept documents and values are checked by them
    assert seen and len(seen) == len(set(seen)), sorted(p for p in seen if seen.count(p) > 1)
    assert str(tmp_path / "repo") in seen


def test_one_look_asks_once_and_a_missing_file_again(tmp_path: Path) -> None:
    from langgraph_checkpoint_repo.core.caches import lstat, one_look, stat_key

    path = tmp_path / "f"
    path.write_text("a")
    with one_look():
        first = stat_key(lstat(path))
        path.write_text("longer")
        assert stat_key(lstat(path)) == first  # one look at the file, as first found
        with pytest.raises(FileNotFoundError):
            lstat(tmp_path / "g")
        (tmp_path / "g").write_text("b")
        assert lstat(tmp_path / "g").st_size == 1  # a missing file is asked about again
    assert stat_key(lstat(path)) != first  # outside a look: asked each time


def test_a_message_two_values_of_one_file_hold_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    from langgraph_checkpoint_repo.core.format import objects
    from langgraph_checkpoint_repo.core.format.tree import msgpack_to_tree

    reads: list[Any] = []
    read = objects.read_message

    def counted(tree: Any) -> Any:
        reads.append(tree)
        return read(tree)

    monkeypatch.setattr(objects, "read_message", counted)
    tree = msgpack_to_tree(JsonPlusSerializer().dumps_typed(AIMessage("hi " * 40, id="a"))[1])
    checked: set[tuple[bytes, Any]] = set()
    objects.Sharer(checked=checked).share([tree])  # the channel's append
    objects.Sharer(checked=checked).share([tree])  # the step's write riding in the same file
    assert len(reads) == 1  # it was read once per value holding it
    objects.Sharer().share([tree])  # another file: read again
    assert len(reads) == 2


def test_a_list_a_put_appended_is_read_next_as_written_and_as_a_fresh_read_builds_it(tmp_path: Path) -> None:
    """A put that appends to a kept list hands the reader the entry it would build
    (``ValueResolver.keep_appended``): the next ``get_tuple`` reads no link of the chain, and
    what it gives is what a process reading the files afresh builds, item by item (tree,
    types, weight, depth), and what InMemorySaver gives. A file changed by hand after the
    put is read again (its stat key and bytes are the entry's deps)."""
    saver = RepoSaver(tmp_path / "repo", durable=False)
    graph = chat_graph(saver)
    memory = InMemorySaver()
    mgraph = chat_graph(memory)
    for i in range(5):
        for g in (graph, mgraph):
            g.invoke({"messages": [HumanMessage(f"turn {i}", id=f"u{i}")]}, cfg("t"))
        latest = saver.store.checkpoint_ids("t", "")[-1]
        path = saver.store.layout.checkpoint_path("t", "", latest)
        kept = saver.store.values._values.get((path, "messages"))  # before any read of it
        got = saver.get_tuple(cfg("t"))
        assert got is not None and got.checkpoint["id"] == latest
        fresh_saver = RepoSaver(tmp_path / "repo", durable=False)
        fresh = fresh_saver.store.channel_value(fresh_saver.store.get("t", "", latest), "messages")
        if i:  # the first turn wrote the list whole: nothing kept to append to
            assert kept is not None and kept.depth == fresh.depth > 0
            assert (kept.tree, kept.types, kept.weight) == (fresh.tree, fresh.types, fresh.weight)
        want = memory.get_tuple(cfg("t"))
        assert want is not None
        mine = got.checkpoint["channel_values"]["messages"]
        theirs = want.checkpoint["channel_values"]["messages"]
        assert [(type(m), m.content) for m in mine] == [(type(m), m.content) for m in theirs]
    path = saver.store.layout.checkpoint_path("t", "", got.checkpoint["id"])
    text = path.read_text()
    assert '"base_length": 9' in text
    path.write_text(text.replace('"base_length": 9', '"base_length": 8'))
    with pytest.raises(FileFormatError, match="base_length says 8"):
        saver.get_tuple(cfg("t"))


def test_a_file_a_kept_value_found_settled_is_not_read_again_for_its_parse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file we wrote is checked by its bytes until it settles, by whichever cache asks
    first: once a kept value's check (``refresh``) found it settled with those bytes, the
    parse kept of it is settled too (``DocCache.settle``), not read and hashed again."""
    docs = caches.DocCache()
    path, data = tmp_path / "a.json", b'{"x": 1}'
    path.write_bytes(data)
    docs.remember(path, {"x": 1}, data)
    dep = docs.dep(path, docs.doc(path))
    assert dep[2] is not None  # not settled: its bytes' digest goes with it
    time.sleep(caches.RACY_NS / 1e9 + 0.01)
    assert caches.refresh((dep,), settle=docs.settle) == ((str(path), dep[1], None),)
    reads: list[Any] = []
    monkeypatch.setattr(caches, "file_digest", lambda p: reads.append(p))
    assert docs.fresh(path, os.lstat(path)) == {"x": 1} and reads == []

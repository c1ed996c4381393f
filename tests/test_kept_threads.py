"""What a saver keeps across threads stays within the threads it used last.

A server answers for thousands of threads over a day. The saver kept what it read of each
(parsed files, resolved values, the messages by name, the lists a put appends to) until the
process ended: some 600 KB for a thread of 12 turns, 243 MB after reading the latest state of
400 such threads, growing with every thread it ever answered for. Now it keeps the threads it
used last (``caches.KeptThreads``) and lets the others go; one let go is read again from its
files, under the same rule as in a fresh process.
"""

from __future__ import annotations

import gc
import json
import threading
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from graphs import cfg, contents, question, relay_graph, run_switching
from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.core.caches import Grouped, KeptThreads, thread_of
from langgraph_checkpoint_repo.core.errors import FileFormatError
from langgraph_checkpoint_repo.values import ValueWriter


def _turns(graph: Any, thread: str, turns: range) -> None:
    for turn in turns:
        graph.invoke({"messages": [question(turn)]}, cfg(thread))


def _threads_held(saver: RepoSaver) -> set[str]:
    """The thread folders (their names) something in the saver's caches belongs to."""
    store = saver.store
    held: set[str] = set()
    for lru in (
        store.files.docs._lru,
        store.files._wrote_named._lru,
        store.files._intact,
        store.docs._full,
        store.docs._chains,
        store.values._values,
        store._overlap._holding,
    ):
        group = lru._members._group
        assert group is not None
        held |= {g for g in map(group, list(lru)) if g is not None}
    held |= {t.name for t in store.values._objects}
    held |= {t.name for t in store.values.located}
    held |= {t.name for t in store.objects._entries}
    held |= {t.name for t in store.objects._lines}
    by_thread = store.files.docs._lru._members._group
    assert by_thread is not None
    held |= {g for g in map(by_thread, list(store.files.listings._by_folder)) if g is not None}
    held |= {f.relative_to(store.layout.threads_dir).parts[0] for f in store._unsaved}
    held |= {f.relative_to(store.layout.threads_dir).parts[0] for f in store._lineages}
    held |= {store.layout.thread_dir(key[0]).name for key in saver._lists}
    return held


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """Twelve threads of three turns through a graph with a subgraph reached by a ``Send``,
    and the same turns through InMemorySaver: its states, per thread."""
    path = tmp_path_factory.mktemp("kept") / ".langgraph"
    repo, memory = relay_graph(RepoSaver(path, durable=False)), relay_graph(InMemorySaver())
    expected = {}
    for k in range(12):
        for graph in (repo, memory):
            _turns(graph, f"user-{k}", range(3))
        expected[f"user-{k}"] = _seen(memory, f"user-{k}")
    return path, expected


def _seen(graph: Any, thread: str) -> list[tuple[list[str], list[str | None], tuple[str, ...]]]:
    """Each state of a thread's history, newest first: its messages' texts and ids, what runs next."""
    return [
        (contents(s.values.get("messages", [])), [m.id for m in s.values.get("messages", [])], s.next)
        for s in graph.get_state_history(cfg(thread))
    ]


def test_a_saver_answering_for_many_threads_keeps_what_it_read_of_the_last_ones_only(
    root: tuple[Path, dict[str, Any]],
) -> None:
    path, expected = root
    saver = RepoSaver(path, kept_threads=4)
    graph = relay_graph(saver)
    used: list[str] = []
    for _ in range(2):  # each thread is let go, then read again from its files
        for k in range(12):
            thread = f"user-{k}"
            assert _seen(graph, thread) == expected[thread]
            used.append(saver.store.layout.thread_dir(thread).name)
            held = _threads_held(saver)
            assert held <= set(used[-4:]), (held, used[-4:])
            assert used[-1] in held  # what was just read is kept (the rule is not "keep nothing")


def _same_as_in_memory(saver: RepoSaver, root: Path) -> None:
    repo, memory = relay_graph(saver), relay_graph(InMemorySaver())
    for turn in range(3):
        for thread in ("a", "b"):
            for graph in (repo, memory):
                _turns(graph, thread, range(turn, turn + 1))
    for thread in ("a", "b"):
        assert _seen(repo, thread) == _seen(memory, thread)
        assert _seen(relay_graph(RepoSaver(root)), thread) == _seen(memory, thread)


def test_a_thread_let_go_at_every_step_of_its_own_turns_reads_and_writes_as_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The harshest order other threads' calls can give: each time a read or a write says it
    uses the thread, the thread is let go at once, so nothing kept of it lasts from one step
    of a call to the next."""
    monkeypatch.setattr(KeptThreads, "use", lambda self, thread: [thread])
    _same_as_in_memory(RepoSaver(tmp_path / ".langgraph", durable=False), tmp_path / ".langgraph")


def test_a_put_whose_thread_is_let_go_once_it_decided_to_append_appends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A put looked up the list it appends to, then looked it up again: another thread's call
    letting the thread go in between raised KeyError, and the turn failed (helper 59)."""
    saver = RepoSaver(tmp_path / ".langgraph", durable=False)
    decided = ValueWriter.as_append

    def let_go_after(writer: ValueWriter, thread_id: str, *args: Any) -> Any:
        got = decided(writer, thread_id, *args)
        if (got[0] if type(got) is tuple else got) is not None:
            saver.store.let_go(thread_id)  # as another thread's call would, once it decided to append
        return got

    monkeypatch.setattr(ValueWriter, "as_append", let_go_after)
    _same_as_in_memory(saver, tmp_path / ".langgraph")
    # each put that decided to append, its thread let go at once, wrote the append (the turn's
    # get_tuple had read the list again; a put after the let-go, nothing kept, writes it whole)
    files = sorted(saver.store.layout.thread_dir("a").rglob("checkpoints/*.json"))  # every namespace
    stored = [json.loads(f.read_text()).get("new_values", {}).get("messages") for f in files]
    appended = [node for node in stored if isinstance(node, dict) and "append" in node]
    assert len(appended) >= 2, stored


def test_a_thread_let_go_between_its_turns_goes_on_as_an_append_and_as_in_memory(tmp_path: Path) -> None:
    saver = RepoSaver(tmp_path / ".langgraph", durable=False, kept_threads=1)
    repo, memory = relay_graph(saver), relay_graph(InMemorySaver())
    for turn in range(4):
        for thread in ("a", "b"):  # each turn of one lets the other go
            for graph in (repo, memory):
                _turns(graph, thread, range(turn, turn + 1))
    for thread in ("a", "b"):
        assert _seen(repo, thread) == _seen(memory, thread)
    # the latest file of "a" stores its messages as the items appended, as when never let go:
    # the turn's get_tuple read the list again and the put appended to it
    folder = saver.store.layout.checkpoints_dir("a", "")
    latest = json.loads(max(folder.iterdir()).read_text())
    assert "append" in latest["new_values"]["messages"], latest["new_values"]["messages"]


def test_the_memory_a_saver_holds_stops_growing_with_the_threads_it_reads(
    root: tuple[Path, dict[str, Any]],
) -> None:
    path, _ = root
    saver = RepoSaver(path, kept_threads=3)
    saver.get_tuple(cfg("user-11"))  # what any first read brings (codecs, schemas)
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        for k in range(3):
            saver.get_tuple(cfg(f"user-{k}"))
        gc.collect()
        three = tracemalloc.get_traced_memory()[0] - start
        for k in range(3, 11):
            saver.get_tuple(cfg(f"user-{k}"))
        gc.collect()
        eleven = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    # each of the first three is kept: what one costs; each one more lets one go, and only
    # bounded memos grow (paths made from names, each thread's few folders): before, each
    # of the eight held as much as each of the first three
    per_kept, per_more = three / 3, (eleven - three) / 8
    assert per_more < per_kept / 3, (per_kept, per_more)


def test_a_thread_let_go_inside_another_threads_call_never_fails_that_call(tmp_path: Path) -> None:
    """A thread an earlier version stored under a name it did not encode (``con``): reading it
    is refused, naming its folder. Letting it go later, inside a read of another thread, worked
    its folder out through that same check, and the other thread's read raised the refusal of
    ``con`` (helper 61)."""
    root = tmp_path / ".langgraph"
    graph = relay_graph(RepoSaver(root, durable=False))
    _turns(graph, "good", range(1))
    (root / "threads" / "con").mkdir()  # bare, as an earlier version wrote it
    saver = RepoSaver(root, kept_threads=1)
    with pytest.raises(FileFormatError, match="con"):
        saver.get_tuple(cfg("con"))
    tup = saver.get_tuple(cfg("good"))  # lets "con" go: the first call, not a retry
    assert tup is not None
    assert contents(tup.checkpoint["channel_values"]["messages"]) == [
        "turn-0-question",
        "answer to turn-0-question",
    ]


def test_kept_threads_is_refused_below_one_and_when_not_an_integer(tmp_path: Path) -> None:
    for bad in (0, -1, True, 2.0, "64", None):
        with pytest.raises(ValueError, match="kept_threads"):
            RepoSaver(tmp_path / "refused", kept_threads=bad)
    assert not (tmp_path / "refused").exists()
    assert RepoSaver(tmp_path / "one", kept_threads=1).store.kept.size == 1
    assert RepoSaver(tmp_path / "default").store.kept.size == 512


def test_a_grouped_dict_changed_while_another_thread_drops_its_group_stays_whole() -> None:
    """``Grouped.setdefault`` wrote the key, then read it back: a ``drop_group`` in between
    (a let-go in another thread) made it raise KeyError, and a put or a list across threads
    failed with it (helper 60). Every change now takes the dict's lock: no error, and every
    key held is noted in its group, so the next let-go drops it."""
    threads_dir = Path("/root-of-a-test/threads")
    grouped = Grouped(thread_of(threads_dir))
    keys = [threads_dir / f"t{k % 3}" / "checkpoints" / f"{k}.json" for k in range(30)]
    errors: list[BaseException] = []
    done = threading.Event()

    def change() -> None:
        try:
            for round_ in range(3_000):
                key = keys[round_ % len(keys)]
                grouped.setdefault(key, {})[round_] = round_  # the value read back: a KeyError before
                grouped[keys[(round_ + 7) % len(keys)]] = {}
                grouped.pop(keys[(round_ + 13) % len(keys)], None)
        except BaseException as exc:  # the test reports any
            errors.append(exc)
        finally:
            done.set()

    def drop() -> None:
        while not done.is_set():
            for group in ("t0", "t1", "t2"):
                grouped.drop_group(group)

    run_switching(change, drop)
    assert errors == []
    for group in ("t0", "t1", "t2"):  # nothing held outside its group's note
        grouped.drop_group(group)
    assert dict(grouped) == {}

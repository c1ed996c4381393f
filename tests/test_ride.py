"""A step's writes ride in the file of the checkpoint that follows them (ride.py, issue 37):
one durable write where there were two, and nothing acknowledged before it is on disk.

Real graphs (sync and async) and direct calls on a real saver and filesystem, compared with
InMemorySaver where behaviour is in doubt.
"""

from __future__ import annotations

import asyncio
import json
import operator
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Interrupt

from graphs import ask_graph, cfg, chat_graph, delta_graph
from langgraph_checkpoint_repo import RepoSaver, ride
from langgraph_checkpoint_repo.core import durable
from langgraph_checkpoint_repo.core.errors import InvalidWriteError
from langgraph_checkpoint_repo.core.format.tree import msgpack_to_tree
from langgraph_checkpoint_repo.values import ValueWriter


@contextmanager
def files_and_rounds() -> Iterator[tuple[list[Path], list[int]]]:
    """Every file renamed into place meanwhile, and the rounds of fsyncs (``durable``'s waits
    on the disk), on any thread."""
    placed: list[Path] = []
    rounds: list[int] = []
    replace, each = os.replace, durable._each_at_once

    def placing(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        placed.append(Path(dst))
        replace(src, dst, *args, **kwargs)

    def counted(call: Any, items: list[Any]) -> None:
        if items and call in durable.FSYNC_CALLS:
            rounds.append(len(items))
        each(call, items)

    os.replace = placing  # type: ignore[assignment]
    durable._each_at_once = counted
    try:
        yield placed, rounds
    finally:
        os.replace = replace  # type: ignore[assignment]
        durable._each_at_once = each


def history(saver: BaseCheckpointSaver[Any], graph: Any, thread: str) -> list[Any]:
    """What a user sees of a thread, without ids: values, next, each checkpoint's pending
    writes (channel and value) and interrupts, newest first."""
    out = []
    for state in graph.get_state_history(cfg(thread)):
        got = saver.get_tuple(state.config)
        assert got is not None
        writes = sorted((c, _written(v)) for _, c, v in got.pending_writes or [])
        interrupts = [i.value for t in state.tasks for i in t.interrupts]
        out.append((_plain(state.values), state.next, writes, interrupts))
    return out


def _plain(values: dict[str, Any]) -> dict[str, Any]:
    return {k: [m.content for m in v] if k == "messages" else v for k, v in values.items()}


def _written(value: Any) -> str:
    """A pending write without what differs from saver to saver (an interrupt's id)."""
    if isinstance(value, list) and value and all(isinstance(i, Interrupt) for i in value):
        value = [i.value for i in value]
    if isinstance(value, list) and value and all(isinstance(m, BaseMessage) for m in value):
        value = [m.content for m in value]
    return json.dumps(value, sort_keys=True, default=repr)


def turns(graph: Any, thread: str, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        graph.invoke({"messages": [HumanMessage(f"turn {i}", id=f"u{i}")]}, cfg(thread))


@pytest.fixture
def patient(monkeypatch: pytest.MonkeyPatch) -> None:
    """A wait no loaded machine outlasts: which calls ride, not how long LangGraph takes
    between a step's writes and its checkpoint (the bench counts the rounds as they come)."""
    monkeypatch.setattr(ride, "GRACE", 2.0)


def test_a_chat_turns_writes_ride_in_the_next_checkpoint_and_no_writes_file_is_made(
    tmp_path: Path, patient: None
) -> None:
    saver = RepoSaver(tmp_path / ".langgraph")
    graph = chat_graph(saver)
    turns(graph, "t", 1)  # the thread's folders made
    with files_and_rounds() as (placed, rounds):
        turns(graph, "t", 3, start=1)
    assert not [p for p in placed if p.parent.name == "writes"], placed
    # three checkpoints a turn (input, loop, loop), each a file then its name: two waits each
    assert len(rounds) == 3 * 3 * 2, rounds
    memory = InMemorySaver()
    turns(chat_graph(memory), "t", 4)
    assert history(saver, graph, "t") == history(memory, chat_graph(memory), "t")
    fresh = RepoSaver(tmp_path / ".langgraph")
    assert history(fresh, chat_graph(fresh), "t") == history(memory, chat_graph(memory), "t")


def test_async_turns_ride_too(tmp_path: Path, patient: None) -> None:
    saver = RepoSaver(tmp_path / ".langgraph")
    graph = chat_graph(saver)

    async def run() -> None:
        for i in range(3):
            await graph.ainvoke({"messages": [HumanMessage(f"turn {i}", id=f"u{i}")]}, cfg("t"))

    with files_and_rounds() as (placed, _):
        asyncio.run(run())
    assert not [p for p in placed if p.parent.name == "writes"], placed
    memory = InMemorySaver()
    turns(chat_graph(memory), "t", 3)
    assert history(saver, graph, "t") == history(memory, chat_graph(memory), "t")


def test_an_interrupts_writes_are_on_disk_when_invoke_returns(tmp_path: Path) -> None:
    """No put follows an interrupt: its writes stop waiting and are written alone."""
    saver = RepoSaver(tmp_path / ".langgraph")
    memory = InMemorySaver()
    for s in (saver, memory):
        ask_graph(s).invoke({"log": []}, cfg("t"))
    fresh = RepoSaver(tmp_path / ".langgraph")
    expected = history(memory, ask_graph(memory), "t")
    assert history(fresh, ask_graph(fresh), "t") == expected
    assert expected[0][1] == ("ask",) and expected[0][3], expected[0]
    for s in (fresh, memory):
        ask_graph(s).invoke(Command(resume="Ada"), cfg("t"))
    assert history(fresh, ask_graph(fresh), "t") == history(memory, ask_graph(memory), "t")


def _waiting_writes(saver: RepoSaver, conf: dict[str, Any], writes: list[tuple[str, Any]]) -> Any:
    """``put_writes`` on another thread, returned once it waits for a child's put: the call's
    thread and what it raised (filled in when it ends)."""
    raised: list[BaseException] = []

    def call() -> None:
        try:
            saver.put_writes(conf, writes, "task-1")
        except BaseException as exc:
            raised.append(exc)

    worker = threading.Thread(target=call)
    c = conf["configurable"]
    key = (c["thread_id"], c["checkpoint_ns"], c["checkpoint_id"])
    with saver._ride.putting(c["thread_id"]):  # a put under way: the call keeps waiting
        worker.start()
        deadline = time.monotonic() + 30
        while key not in saver._ride._waiting:
            assert worker.is_alive() and time.monotonic() < deadline, raised
            time.sleep(0.001)
    return worker, raised


def _parent(saver: RepoSaver) -> dict[str, Any]:
    return dict(
        saver.put(cfg("t", checkpoint_ns=""), empty_checkpoint(), {"source": "input", "step": -1}, {})
    )


def _child(values: dict[str, Any]) -> Any:
    child = empty_checkpoint()
    child["channel_values"] = values
    child["channel_versions"] = dict.fromkeys(values, "1")
    return child


class Unstorable:
    """A value no serializer takes."""


def test_a_failed_put_lets_the_writes_waiting_for_it_write_their_own_file(tmp_path: Path) -> None:
    saver = RepoSaver(tmp_path / ".langgraph")
    conf = _parent(saver)
    worker, raised = _waiting_writes(saver, conf, [("note", "kept")])
    with pytest.raises(InvalidWriteError):
        saver.put(conf, _child({"a": Unstorable()}), {"source": "loop", "step": 0}, {"a": "1"})
    worker.join(30)
    assert not worker.is_alive() and not raised
    assert list((tmp_path / ".langgraph" / "threads" / "t" / "writes").glob("*.json"))
    got = RepoSaver(tmp_path / ".langgraph").get_tuple(conf)
    assert got is not None and got.pending_writes == [("task-1", "note", "kept")]


def test_a_write_the_put_cannot_store_fails_its_own_call_not_the_put(tmp_path: Path) -> None:
    saver = RepoSaver(tmp_path / ".langgraph")
    conf = _parent(saver)
    worker, raised = _waiting_writes(saver, conf, [("note", Unstorable())])
    child = saver.put(conf, _child({"a": 1}), {"source": "loop", "step": 0}, {"a": "1"})
    worker.join(30)
    assert not worker.is_alive()
    assert len(raised) == 1 and isinstance(raised[0], InvalidWriteError), raised
    assert "task task-1" in str(raised[0])  # named as its own file, not as the put's
    fresh = RepoSaver(tmp_path / ".langgraph")
    got = fresh.get_tuple(child)
    assert got is not None and got.checkpoint["channel_values"] == {"a": 1}
    parent = fresh.get_tuple(conf)
    assert parent is not None and parent.pending_writes == []


def test_a_taken_write_returns_only_once_the_checkpoint_holding_it_is_durable(tmp_path: Path) -> None:
    saver = RepoSaver(tmp_path / ".langgraph")
    conf = _parent(saver)
    order: list[str] = []
    original = durable.fsync_dir

    def noting(folder: Path) -> None:
        original(folder)
        if folder.name == "checkpoints":
            order.append("checkpoint durable")

    worker, raised = _waiting_writes(saver, conf, [("note", "kept")])
    durable.fsync_dir = noting  # type: ignore[assignment]
    try:
        watcher = threading.Thread(target=lambda: (worker.join(30), order.append("put_writes returned")))
        watcher.start()
        saver.put(conf, _child({"a": 1}), {"source": "loop", "step": 0}, {"a": "1"})
        watcher.join(30)
    finally:
        durable.fsync_dir = original  # type: ignore[assignment]
    assert not raised and order == ["checkpoint durable", "put_writes returned"], order
    got = RepoSaver(tmp_path / ".langgraph").get_tuple(conf)
    assert got is not None and got.pending_writes == [("task-1", "note", "kept")]


def test_a_graph_whose_put_waits_for_its_writes_stops_waiting_after_three_steps(tmp_path: Path) -> None:
    """LangGraph saves a DeltaChannel's writes before the next checkpoint: a call that waited
    for that put would wait for nothing each step. After three such steps in a row the
    thread's calls write alone, and the thread reads as InMemorySaver's."""
    saver = RepoSaver(tmp_path / ".langgraph")
    memory = InMemorySaver()
    for s in (saver, memory):
        delta_graph(s).invoke({"items": [], "n": 0}, cfg("t"))
    assert "t" in saver._ride._alone

    def seen(s: BaseCheckpointSaver[Any]) -> list[Any]:
        return [(st.values, st.next) for st in delta_graph(s).get_state_history(cfg("t"))]

    assert seen(RepoSaver(tmp_path / ".langgraph")) == seen(memory)


def test_one_put_late_on_a_loaded_machine_does_not_stop_the_waiting(tmp_path: Path) -> None:
    """A put that comes just after its parent's put_writes gave up (a slow moment) counts one
    strike; the next put that takes a waiting call clears it."""
    saver = RepoSaver(tmp_path / ".langgraph")
    conf = _parent(saver)
    saver.put_writes(conf, [("note", "alone")], "task-0")  # no put follows within the wait: alone
    child = saver.put(conf, _child({"a": 1}), {"source": "loop", "step": 0}, {"a": "1"})
    assert saver._ride._strikes == {"t": 1}
    worker, raised = _waiting_writes(saver, dict(child), [("note", "rides")])
    saver.put(child, _child({"a": 2}), {"source": "loop", "step": 1}, {"a": "2"})
    worker.join(30)
    assert not raised and saver._ride._strikes == {} and saver._ride._alone == {}
    got = RepoSaver(tmp_path / ".langgraph").get_tuple(child)
    assert got is not None and got.pending_writes == [("task-1", "note", "rides")]


def test_a_third_call_of_one_step_writes_alone_at_once(tmp_path: Path) -> None:
    """A wide fan-out does not hold a worker thread per task: two calls of a checkpoint wait
    for its child's put, the others write their own files at once."""
    saver = RepoSaver(tmp_path / ".langgraph")
    conf = _parent(saver)
    c = conf["configurable"]
    with saver._ride.putting("t"):  # a put under way: waiting calls keep waiting
        first, raised1 = _waiting_writes(saver, conf, [("a", 1)])
        second = threading.Thread(target=saver.put_writes, args=(conf, [("b", 2)], "task-2"))
        second.start()
        deadline = time.monotonic() + 30
        while len(saver._ride._waiting.get((c["thread_id"], "", c["checkpoint_id"]), [])) < 2:
            assert time.monotonic() < deadline
            time.sleep(0.001)
        saver.put_writes(conf, [("c", 3)], "task-3")  # returns: written alone
        writes = list((tmp_path / ".langgraph" / "threads" / "t" / "writes").glob("*.json"))
        assert len(writes) == 1 and first.is_alive() and second.is_alive()
    saver.put(conf, _child({"a": 1}), {"source": "loop", "step": 0}, {"a": "1"})
    first.join(30)
    second.join(30)
    assert not raised1
    got = RepoSaver(tmp_path / ".langgraph").get_tuple(conf)
    assert got is not None and sorted(got.pending_writes) == [
        ("task-1", "a", 1),
        ("task-2", "b", 2),
        ("task-3", "c", 3),
    ]


def test_a_failure_after_the_file_is_durable_does_not_store_the_taken_writes_twice(tmp_path: Path) -> None:
    """Once the checkpoint holding them is durable, the taken calls are let go as done: a
    failure after that (removing the files it took) cannot send them to write again."""
    saver = RepoSaver(tmp_path / ".langgraph")
    conf = _parent(saver)
    worker, raised = _waiting_writes(saver, conf, [("__interrupt__", "ask")])

    def failing(paths: Any) -> None:
        raise OSError("injected after the commit")

    saver.store.files.discard_files = failing  # type: ignore[method-assign]
    saver.put(conf, _child({"a": 1}), {"source": "loop", "step": 0}, {"a": "1"})
    worker.join(30)
    assert not raised
    assert not list((tmp_path / ".langgraph" / "threads" / "t" / "writes").glob("*.json"))
    got = RepoSaver(tmp_path / ".langgraph").get_tuple(conf)
    assert got is not None and got.pending_writes == [("task-1", "__interrupt__", "ask")]


class Pair(TypedDict, total=False):
    done: Annotated[list[str], operator.add]


def test_uneven_parallel_tasks_do_not_stop_the_waiting(tmp_path: Path) -> None:
    """A step whose fast task gave up waiting while its slow sibling rode counts no strike:
    the put took a waiting call."""
    saver = RepoSaver(tmp_path / ".langgraph")

    def fast(state: Pair) -> dict[str, Any]:
        return {"done": ["fast"]}

    def slow(state: Pair) -> dict[str, Any]:
        time.sleep(ride.GRACE * 5)
        return {"done": ["slow"]}

    builder = StateGraph(Pair)
    builder.add_node("fast", fast)
    builder.add_node("slow", slow)
    builder.add_edge(START, "fast")
    builder.add_edge(START, "slow")
    builder.add_edge("fast", END)
    builder.add_edge("slow", END)
    graph = builder.compile(checkpointer=saver)
    for _ in range(ride.STRIKES + 1):
        graph.invoke({"done": []}, cfg("t"))
    assert "t" not in saver._ride._alone and not saver._ride._strikes.get("t")


def test_a_caller_that_puts_one_call_after_another_writes_alone_at_once(tmp_path: Path) -> None:
    """A copy, an import or a fork makes its next put only after its put_writes returned:
    inside ``writes_alone`` (sync, and through asyncio.to_thread) the call does not wait, even
    while another put of the thread is under way."""
    saver = RepoSaver(tmp_path / ".langgraph")
    conf = _parent(saver)
    folder = tmp_path / ".langgraph" / "threads" / "t" / "writes"
    with saver._ride.putting("t"):  # a put under way: a call outside writes_alone would wait
        with ride.writes_alone():
            saver.put_writes(conf, [("a", 1)], "task-1")
        assert len(list(folder.glob("*.json"))) == 1

        async def copy() -> None:
            with ride.writes_alone():
                await saver.aput_writes(conf, [("b", 2)], "task-2")

        asyncio.run(copy())
        assert len(list(folder.glob("*.json"))) == 2


def test_a_riding_write_of_the_messages_the_channel_appended_is_not_serialised_again(
    tmp_path: Path, patient: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The step's write riding in a put holds the very messages the put's ``messages``
    appended: it takes their bytes (redacted, as ``codec.dumps`` would give them) and tree
    from the append (``ValueWriter.tails``) instead of serialising, redacting and unpacking
    them again; what is read back is unchanged."""
    hits: list[int] = []
    tail_of = ValueWriter.tail_of

    def checked(self: ValueWriter, value: Any) -> Any:
        tail = tail_of(self, value)
        if tail is not None:
            assert self.codec.dumps(value, "writes", "t", "/") == ("msgpack", tail.data)
            assert msgpack_to_tree(tail.data) == tail.tree
            hits.append(len(value))
        return tail

    monkeypatch.setattr(ValueWriter, "tail_of", checked)
    saver = RepoSaver(tmp_path / ".langgraph", durable=False)
    graph = chat_graph(saver)
    secret = "sk-" + "proj-" + "a1B2c3D4e5" * 5
    turns(graph, "t", 1)
    hits.clear()
    for i in range(1, 4):
        graph.invoke({"messages": [HumanMessage(f"turn {i}: {secret}", id=f"u{i}")]}, cfg("t"))
    # each turn: the input's write and the reply's, one message each, asked for its bytes
    # (``dumps``) and its tree (``value_node``)
    assert hits == [1] * 2 * 2 * 3, hits
    state = graph.get_state(cfg("t")).values["messages"]
    assert secret not in str([m.content for m in state]) and "[REDACTED:" in state[-1].content
    fresh = RepoSaver(tmp_path / ".langgraph")
    assert history(fresh, chat_graph(fresh), "t") == history(saver, graph, "t")

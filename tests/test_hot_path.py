"""What a chat turn's calls do, counted (issue 37): the work that made a turn slow, and that
must not come back. Counts, not times: the times are bench/'s (docs/performance.md).

Real graphs on a real saver and filesystem; each test fails on the code before its change.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from graphs import cfg, chain_graph, chat_graph
from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.core import files as files_module


@contextmanager
def lstats_under(folder: Path) -> Iterator[list[str]]:
    """Every ``os.lstat`` of a path under ``folder`` made meanwhile, on any thread."""
    seen: list[str] = []
    original = os.lstat
    prefix = str(folder) + os.sep

    def counting(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if str(path).startswith(prefix):
            seen.append(str(path))
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

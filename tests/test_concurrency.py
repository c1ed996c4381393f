"""Several writers and readers on one root: processes, Python threads, and files that
change underneath a long-lived saver (another process, ``git pull``, ``rm``).

Workers are real processes running this very module: each is forked (tests/forkserver.py)
from a parent process that loaded it by path once, and calls ``worker_main``, so the graphs
they run are the ones defined here, each with its own saver, caches and locks.
Start order is forced with marker files, never with sleeps, and no assertion is
about time.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import Checkpoint, CheckpointTuple, empty_checkpoint
from langgraph.graph import MessagesState
from langgraph.graph.state import CompiledStateGraph

from forkserver import Child, Parent
from graphs import cfg as thread_cfg
from graphs import chat_graph, contents, run_switching
from helpers import checkpoint_files, file_bytes
from langgraph_checkpoint_repo import LockTimeoutError, RepoSaver
from langgraph_checkpoint_repo.core.layout import Layout

Graph = CompiledStateGraph[Any, Any, Any, Any]
WAIT_LIMIT = 120.0  # seconds a worker waits for a marker before giving up (never reached when healthy)


# ----------------------------------------------------------------------------
# the graph every process runs
# ----------------------------------------------------------------------------
def _bot(state: MessagesState) -> dict[str, Any]:
    return {"messages": [AIMessage(content=f"reply {len(state['messages'])}")]}


# every config names the root namespace, as LangGraph's own configs do (list() then stays in it)
cfg = partial(thread_cfg, checkpoint_ns="")
# one user message in, one bot reply out: 3 checkpoints and 2 messages per turn
bot_graph = partial(chat_graph, reply=_bot, node="bot")


def conversation(prefix: str, turns: int) -> list[str]:
    """The messages `turns` turns of chat_graph produce for user words prefix0, prefix1, ..."""
    out: list[str] = []
    for i in range(turns):
        out += [f"{prefix}{i}", f"reply {len(out) + 1}"]
    return out


def messages_of(tup: CheckpointTuple | None) -> list[str]:
    assert tup is not None
    return contents(tup.checkpoint["channel_values"].get("messages", []))


def run_turns(graph: Graph, thread_id: str, prefix: str, turns: int, start: int = 0) -> None:
    for i in range(start, start + turns):
        graph.invoke({"messages": [HumanMessage(content=f"{prefix}{i}")]}, cfg(thread_id))


# ----------------------------------------------------------------------------
# workers (run in subprocesses)
# ----------------------------------------------------------------------------
def wait_for(path: Path) -> None:
    deadline = time.monotonic() + WAIT_LIMIT
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} never appeared")
        time.sleep(0.002)


def touch(path: Path) -> None:
    path.write_text("")


def _work_chat(a: dict[str, Any]) -> dict[str, Any]:
    """Run chat turns on one thread; optionally first put writes on checkpoint `writes_on` (then
    touch `wrote`), and pause before turn `pause_at` until `resume` exists."""
    saver = RepoSaver(a["root"], durable=a.get("durable", True))
    graph = bot_graph(saver)
    if a.get("writes_on"):
        saver.put_writes(cfg(a["thread"], checkpoint_id=a["writes_on"]), a["writes"], a["task"])
        touch(Path(a["wrote"]))
    if a.get("ready"):
        touch(Path(a["ready"]))
    if a.get("go"):
        wait_for(Path(a["go"]))
    for i in range(a.get("start", 0), a.get("start", 0) + a["turns"]):
        if i == a.get("pause_at"):
            wait_for(Path(a["resume"]))
        graph.invoke({"messages": [HumanMessage(content=f"{a['prefix']}{i}")]}, cfg(a["thread"]))
    return {"messages": messages_of(saver.get_tuple(cfg(a["thread"])))}


def _work_branch(a: dict[str, Any]) -> dict[str, Any]:
    """Append checkpoints to this worker's own branch of a shared thread (explicit parent
    ids), put writes on each, and put writes for distinct tasks on the shared root checkpoint."""
    saver = RepoSaver(a["root"])
    thread, worker = a["thread"], a["worker"]
    touch(Path(a["ready"]))
    wait_for(Path(a["go"]))
    # reads (and caches) the thread's listing first; another worker may already have added to it
    latest = saver.get_tuple(cfg(thread))
    assert latest is not None and latest.config["configurable"]["checkpoint_id"] >= a["root_id"]
    parent = cfg(thread, checkpoint_id=a["root_id"])
    root_tuple = saver.get_tuple(parent)
    assert root_tuple is not None
    items: list[str] = list(root_tuple.checkpoint["channel_values"]["items"])
    version = root_tuple.checkpoint["channel_versions"]["items"]
    for i in range(a["count"]):
        items = [*items, f"w{worker}-{i}"]
        version = saver.get_next_version(version, None)
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"items": items}
        checkpoint["channel_versions"] = {"items": version}
        metadata: dict[str, Any] = {"source": "loop", "step": i, "parents": {}, "worker": worker}
        parent = saver.put(parent, checkpoint, metadata, {"items": version})  # type: ignore[arg-type]
        saver.put_writes(parent, [("items", [f"pending w{worker}-{i}"]), ("note", i)], f"w{worker}-{i}")
        saver.put_writes(
            cfg(thread, checkpoint_id=a["root_id"]),
            [("shared", f"w{worker}-{i}")],
            f"root-{worker}-{i}",
        )
    touch(Path(a["done"]))
    for other in range(a["workers"]):
        wait_for(Path(a["done"]).with_name(f"done-{other}"))
    root_after = saver.get_tuple(cfg(thread, checkpoint_id=a["root_id"]))
    assert root_after is not None
    return {
        "seen": len(list(saver.list(cfg(thread)))),
        "root_writes": len(root_after.pending_writes or []),
    }


def _work_hold_lock(a: dict[str, Any]) -> dict[str, Any]:
    """Hold a thread's lock file (as a writer of that thread would) until told to let go."""
    lock = FileLock(a["lock"])
    with lock:
        touch(Path(a["ready"]))
        wait_for(Path(a["release"]))
    return {"held": True}


def _work_read(a: dict[str, Any]) -> dict[str, Any]:
    """Read the latest checkpoint and the whole list (no lock) in a loop until the writer is
    done; record every failure and every state that is not a prefix of the conversation."""
    saver = RepoSaver(a["root"])
    expected = conversation(a["prefix"], a["turns"])
    seen: set[int] = set()
    bad: list[str] = []
    reads = 0
    touch(Path(a["ready"]))
    done = Path(a["done"])
    while True:
        finished = done.exists()
        try:
            tup = saver.get_tuple(cfg(a["thread"]))
            if tup is not None:
                got = messages_of(tup)
                if got != expected[: len(got)]:
                    bad.append(f"not a prefix: {got}")
                seen.add(len(got))
                if len(got) >= a["mid"] and not Path(a["saw_mid"]).exists():
                    touch(Path(a["saw_mid"]))
                listed = list(saver.list(cfg(a["thread"])))
                if not listed:
                    bad.append("list() returned nothing after get_tuple returned a checkpoint")
                for item in listed:
                    if messages_of(item) != expected[: len(messages_of(item))]:
                        bad.append(f"list() returned a wrong state: {messages_of(item)}")
            reads += 1
        except Exception as exc:
            bad.append(f"{type(exc).__name__}: {exc}")
        if finished:
            break
    final = saver.get_tuple(cfg(a["thread"]))
    return {
        "reads": reads,
        "failures": len(bad),
        "seen": sorted(seen),
        "bad": bad[:5],
        "final": messages_of(final),
    }


def _work_delete_thread(a: dict[str, Any]) -> dict[str, Any]:
    RepoSaver(a["root"]).delete_thread(a["thread"])
    return {}


def _work_prune(a: dict[str, Any]) -> dict[str, Any]:
    RepoSaver(a["root"]).prune([a["thread"]], strategy=a["strategy"])
    return {}


def _work_churn(a: dict[str, Any]) -> dict[str, Any]:
    """Create a thread (a checkpoint and a write) and delete it again, over and over; half-way,
    with the thread present, wait until the reader has seen it."""
    saver = RepoSaver(a["root"], durable=False)
    wait_for(Path(a["go"]))
    for i in range(a["cycles"]):
        checkpoint, version = _checkpoint_for(saver, f"word{i}")
        config = saver.put(cfg(a["thread"]), checkpoint, {"step": i}, {"word": version})
        saver.put_writes(config, [("word", f"pending{i}")], f"task{i}")
        if i == a["cycles"] // 2:
            wait_for(Path(a["seen"]))
        saver.delete_thread(a["thread"])
    return {}


def _work_fan(a: dict[str, Any]) -> dict[str, Any]:
    """Run turns of crash_child's graph (a Send fan-out, values in large/ files) on one
    thread, logging every put and put_writes that returned; start when `go` exists."""
    from langchain_core.messages import HumanMessage as Human

    from crash_child import LoggingSaver, build_graph

    graph = build_graph(LoggingSaver(Path(a["root"]), Path(a["log"])))
    touch(Path(a["ready"]))
    wait_for(Path(a["go"]))
    for i in range(a["turns"]):
        message = Human(id=f"{a['prefix']}{i}", content=f"{a['prefix']}{i}")
        graph.invoke({"messages": [message], "turn": i}, cfg(a["thread"]), durability="sync")
    return {}


WORKERS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "fan": _work_fan,
    "chat": _work_chat,
    "branch": _work_branch,
    "hold_lock": _work_hold_lock,
    "read": _work_read,
    "delete_thread": _work_delete_thread,
    "prune": _work_prune,
    "churn": _work_churn,
}


def worker_main(mode: str, args: str) -> None:
    print(json.dumps(WORKERS[mode](json.loads(args))))


_PARENT: list[Parent] = []  # the forking parent of this module's workers (see forking_parent)


@pytest.fixture(scope="module", autouse=True)
def forking_parent() -> Iterator[None]:
    """One parent for the module's workers: it loads this module once (tests/ first on
    sys.path, as pytest has it); every worker is a child forked from it."""
    _PARENT.append(Parent(__file__, "concurrency_worker"))
    yield
    _PARENT.pop().close()


def spawn(mode: str, **args: Any) -> Child:
    """Start a worker process running WORKERS[mode](args)."""
    return _PARENT[-1].start("worker_main", mode, json.dumps(args))


def finish(proc: Child) -> dict[str, Any]:
    """Wait for a worker; fail with its stderr unless it exited 0; return its JSON result."""
    out, err = proc.communicate(timeout=WAIT_LIMIT + 60)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def run_worker(mode: str, **args: Any) -> dict[str, Any]:
    return finish(spawn(mode, **args))


def wait_all(paths: Iterable[Path], procs: Iterable[Child]) -> None:
    """Wait for marker files, failing early (with stderr) if a worker died first."""
    for path in paths:
        deadline = time.monotonic() + WAIT_LIMIT
        while not path.exists():
            for proc in procs:
                if proc.poll() not in (None, 0):
                    pytest.fail(f"worker died: {proc.communicate()[1]}")
            assert time.monotonic() < deadline, f"{path} never appeared"
            time.sleep(0.002)


# ----------------------------------------------------------------------------
# checks on the files
# ----------------------------------------------------------------------------
def leftovers(root: Path) -> list[str]:
    """Temp files and hidden names anywhere under the root (the .gitignore and the
    lock folder aside): an interrupted or non-atomic write would leave these."""
    out = []
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if rel.parts[0] == ".cache" or str(rel) == ".gitignore":
            continue
        if path.name.endswith(".tmp") or path.name.startswith("."):
            out.append(str(rel))
    return out


def parse_all(root: Path) -> dict[str, Any]:
    """Every data file parses as JSON (a torn write would not)."""
    return {
        str(p.relative_to(root)): json.loads(p.read_bytes())
        for p in root.rglob("*.json")
        if ".cache" not in p.relative_to(root).parts
    }


def assert_every_checkpoint_loads(saver: RepoSaver, thread_id: str) -> list[CheckpointTuple]:
    """list() and get_tuple() agree on every checkpoint of the thread."""
    listed = list(saver.list(cfg(thread_id)))
    for tup in listed:
        assert saver.get_tuple(tup.config) == tup
    return listed


# ----------------------------------------------------------------------------
# processes
# ----------------------------------------------------------------------------
def test_processes_on_their_own_threads_lose_nothing(tmp_path: Path) -> None:
    """Four processes chatting at once on one root, one thread each: every thread ends with
    all its checkpoints and messages, every file loads, no temp file is left behind."""
    root, workers, turns = tmp_path / "root", 4, 4
    procs = [
        spawn(
            "chat",
            root=str(root),
            thread=f"thread-{w}",
            prefix=f"w{w}-",
            turns=turns,
            ready=str(tmp_path / f"ready-{w}"),
            go=str(tmp_path / "go"),
        )
        for w in range(workers)
    ]
    wait_all([tmp_path / f"ready-{w}" for w in range(workers)], procs)
    touch(tmp_path / "go")  # all start together
    results = [finish(p) for p in procs]

    saver = RepoSaver(root)
    for w, result in enumerate(results):
        expected = conversation(f"w{w}-", turns)
        assert result["messages"] == expected
        listed = assert_every_checkpoint_loads(saver, f"thread-{w}")
        assert len(listed) == 3 * turns == len(checkpoint_files(root, f"thread-{w}"))
        assert messages_of(listed[0]) == expected
        assert sorted(t.metadata["step"] for t in listed) == list(range(-1, 3 * turns - 1))
    assert len(list(saver.list(None))) == workers * 3 * turns
    assert parse_all(root)
    assert leftovers(root) == []


def test_processes_on_one_thread_keep_every_checkpoint_and_write(tmp_path: Path) -> None:
    """Four processes append to their own branches of one thread (explicit parent ids) and
    put writes for distinct tasks on the shared first checkpoint, all at once: every
    checkpoint, link, value and write of every process is there, none twice."""
    root, workers, count = tmp_path / "root", 4, 6
    saver = RepoSaver(root)
    version = saver.get_next_version(None, None)
    first = empty_checkpoint()
    first["channel_values"] = {"items": ["start"]}
    first["channel_versions"] = {"items": version}
    root_config = saver.put(
        cfg("shared"),
        first,
        {"source": "input", "step": -1, "parents": {}},
        {"items": version},
    )
    procs = [
        spawn(
            "branch",
            root=str(root),
            thread="shared",
            root_id=root_config["configurable"]["checkpoint_id"],
            worker=w,
            workers=workers,
            count=count,
            ready=str(tmp_path / f"ready-{w}"),
            go=str(tmp_path / "go"),
            done=str(tmp_path / f"done-{w}"),
        )
        for w in range(workers)
    ]
    wait_all([tmp_path / f"ready-{w}" for w in range(workers)], procs)
    touch(tmp_path / "go")
    results = [finish(p) for p in procs]

    total = 1 + workers * count
    # every process, with its own warm caches, ends up seeing everything
    assert results == [{"seen": total, "root_writes": workers * count}] * workers
    for reader in (saver, RepoSaver(root)):
        listed = assert_every_checkpoint_loads(reader, "shared")
        assert len(listed) == total == len(checkpoint_files(root, "shared"))
        root_tuple = reader.get_tuple(root_config)
        assert root_tuple is not None
        assert sorted(w[0] for w in root_tuple.pending_writes or []) == sorted(
            f"root-{w}-{i}" for w in range(workers) for i in range(count)
        )
        assert {(w[0], w[2]) for w in root_tuple.pending_writes or []} == {
            (f"root-{w}-{i}", f"w{w}-{i}") for w in range(workers) for i in range(count)
        }
        for w in range(workers):
            mine = sorted(
                (t for t in listed if t.metadata.get("worker") == w), key=lambda t: t.metadata["step"]
            )
            assert [t.metadata["step"] for t in mine] == list(range(count))
            parent_id = root_config["configurable"]["checkpoint_id"]
            for i, tup in enumerate(mine):
                assert tup.parent_config is not None
                assert tup.parent_config["configurable"]["checkpoint_id"] == parent_id
                assert tup.checkpoint["channel_values"]["items"] == ["start"] + [
                    f"w{w}-{j}" for j in range(i + 1)
                ]
                assert tup.pending_writes == [
                    (f"w{w}-{i}", "items", [f"pending w{w}-{i}"]),
                    (f"w{w}-{i}", "note", i),
                ]
                parent_id = tup.config["configurable"]["checkpoint_id"]
    assert leftovers(root) == []
    assert parse_all(root)


def _checkpoint_for(saver: RepoSaver, word: str) -> tuple[Checkpoint, str]:
    version = saver.get_next_version(None, None)
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"word": word}
    checkpoint["channel_versions"] = {"word": version}
    return checkpoint, version


def test_lock_held_by_another_process_times_out_without_writing(tmp_path: Path) -> None:
    """While another process holds a thread's lock, put and put_writes raise LockTimeoutError
    naming the thread and write nothing; once it lets go, the same put succeeds."""
    root, thread = tmp_path / "root", "Locked Thread/1"
    saver = RepoSaver(root, lock_timeout=0.5)
    first, version = _checkpoint_for(saver, "first")
    first_config = saver.put(cfg(thread), first, {"source": "input", "step": -1}, {"word": version})
    files_before = file_bytes(root)
    holder = spawn(
        "hold_lock",
        lock=str(Layout(root).lock_path(thread)),
        ready=str(tmp_path / "held"),
        release=str(tmp_path / "release"),
    )
    wait_all([tmp_path / "held"], [holder])

    second, version2 = _checkpoint_for(saver, "second")
    with pytest.raises(LockTimeoutError) as info:
        saver.put(first_config, second, {"source": "loop", "step": 0}, {"word": version2})
    assert repr(thread) in str(info.value)
    with pytest.raises(LockTimeoutError, match="Locked Thread/1"):
        saver.put_writes(first_config, [("word", "pending")], "task-1")
    assert file_bytes(root) == files_before
    assert leftovers(root) == []
    latest = RepoSaver(root).get_tuple(cfg(thread))
    assert latest is not None and latest.checkpoint["id"] == first["id"]

    touch(tmp_path / "release")
    assert finish(holder) == {"held": True}
    saver.put(first_config, second, {"source": "loop", "step": 0}, {"word": version2})
    latest = RepoSaver(root).get_tuple(cfg(thread))
    assert latest is not None
    assert latest.checkpoint["id"] == second["id"]
    assert latest.checkpoint["channel_values"] == {"word": "second"}


def test_other_threads_do_not_wait_for_a_locked_thread(tmp_path: Path, root: Path) -> None:
    """A process holding thread A's lock blocks writers of A only: a graph run on thread B
    completes with a short lock timeout, and A stays readable (readers take no lock)."""
    saver = RepoSaver(root, lock_timeout=0.5)
    graph = bot_graph(saver)
    run_turns(graph, "A", "a", 1)
    holder = spawn(
        "hold_lock",
        lock=str(Layout(root).lock_path("A")),
        ready=str(tmp_path / "held"),
        release=str(tmp_path / "release"),
    )
    wait_all([tmp_path / "held"], [holder])
    try:
        run_turns(graph, "B", "b", 2)
        assert messages_of(saver.get_tuple(cfg("B"))) == conversation("b", 2)
        assert messages_of(saver.get_tuple(cfg("A"))) == conversation("a", 1)
        assert len(list(saver.list(cfg("A")))) == 3
        with pytest.raises(LockTimeoutError):  # A really is locked meanwhile
            run_turns(graph, "A", "a", 1, start=1)
    finally:
        touch(tmp_path / "release")
        finish(holder)
    assert messages_of(RepoSaver(root).get_tuple(cfg("B"))) == conversation("b", 2)


def test_copy_thread_waits_for_a_writer_of_the_source(tmp_path: Path, root: Path) -> None:
    """A copy must not read a source thread another process is writing (or pruning) at that
    moment: with the source's lock held elsewhere, copy_thread times out and writes nothing;
    once the writer is done, the copy is whole."""
    saver = RepoSaver(root, lock_timeout=0.5)
    run_turns(bot_graph(saver), "src", "m", 2)
    holder = spawn(
        "hold_lock",
        lock=str(Layout(root).lock_path("src")),
        ready=str(tmp_path / "held"),
        release=str(tmp_path / "release"),
    )
    wait_all([tmp_path / "held"], [holder])
    try:
        with pytest.raises(LockTimeoutError, match="'src'"):
            saver.copy_thread("src", "dst")
        assert RepoSaver(root).get_tuple(cfg("dst")) is None
        assert not Layout(root).thread_dir("dst").exists()
    finally:
        touch(tmp_path / "release")
        finish(holder)
    saver.copy_thread("src", "dst")
    fresh = RepoSaver(root)
    assert [t.checkpoint for t in fresh.list(cfg("dst"))] == [t.checkpoint for t in fresh.list(cfg("src"))]


@pytest.mark.parametrize("durable", [True, False], ids=["durable", "not-durable"])
def test_reader_without_lock_sees_only_complete_states(tmp_path: Path, durable: bool) -> None:
    """A reader process polling get_tuple and list while a writer process chats never fails
    and only ever sees whole states (a prefix of the conversation: no torn file, no dangling
    reference), and sees the final state at the end. The writer waits, half-way, until the
    reader has seen a half-way state, so the two really overlap."""
    root, turns = tmp_path / "root", 8
    mid = turns  # messages after half the turns
    RepoSaver(root)
    reader = spawn(
        "read",
        root=str(root),
        thread="t",
        prefix="m",
        turns=turns,
        mid=mid,
        ready=str(tmp_path / "reader-ready"),
        done=str(tmp_path / "writer-done"),
        saw_mid=str(tmp_path / "saw-mid"),
    )
    writer = spawn(
        "chat",
        root=str(root),
        thread="t",
        prefix="m",
        turns=turns,
        durable=durable,
        go=str(tmp_path / "reader-ready"),
        pause_at=turns // 2,
        resume=str(tmp_path / "saw-mid"),
    )
    written = finish(writer)
    touch(tmp_path / "writer-done")
    read = finish(reader)

    expected = conversation("m", turns)
    assert written["messages"] == expected
    assert read["bad"] == [], f"{read['failures']} of {read['reads']} reads failed"
    assert read["final"] == expected
    assert mid in read["seen"] and read["reads"] > 0
    assert set(read["seen"]) <= set(range(len(expected) + 1))
    assert leftovers(root) == []


def test_history_being_read_survives_a_prune_by_another_process(root: Path) -> None:
    """Walking a thread's history (list() is lazy, like get_state_history) while another
    process prunes it must not fail, whether the reader had read the thread before (cached
    headers) or not: the walk yields whole states only."""
    run_turns(bot_graph(RepoSaver(root)), "t", "m", 3)
    expected = conversation("m", 3)
    warm, cold = RepoSaver(root), RepoSaver(root)
    assert len(list(warm.list(cfg("t")))) == 9
    walks = [warm.list(cfg("t")), cold.list(cfg("t"))]
    for walk in walks:
        assert messages_of(next(walk)) == expected

    run_worker("prune", root=str(root), thread="t", strategy="keep_latest")

    for walk, reader in zip(walks, (warm, cold), strict=True):
        for tup in walk:
            assert messages_of(tup) == expected[: len(messages_of(tup))]
        assert [t.config for t in reader.list(cfg("t"))] == [t.config for t in RepoSaver(root).list(cfg("t"))]


def test_latest_read_while_another_process_deletes_the_thread(tmp_path: Path) -> None:
    """A lock-free reader asking for the latest checkpoint while another process keeps creating
    and deleting the thread gets either None or a whole checkpoint with its write, never an
    error. The writer waits, half-way, until the reader has seen the thread."""
    root, cycles = tmp_path / "root", 100
    writer = spawn(
        "churn",
        root=str(root),
        thread="t",
        cycles=cycles,
        go=str(tmp_path / "go"),
        seen=str(tmp_path / "seen"),
    )
    reader = RepoSaver(root)
    errors: dict[str, int] = {}
    whole = 0
    touch(tmp_path / "go")
    while writer.poll() is None:
        try:
            tup = reader.get_tuple(cfg("t"))
        except Exception as exc:
            errors[type(exc).__name__] = errors.get(type(exc).__name__, 0) + 1
            continue
        if tup is None:
            continue
        i = tup.metadata["step"]
        assert tup.checkpoint["channel_values"] == {"word": f"word{i}"}
        assert tup.pending_writes in ([], [(f"task{i}", "word", f"pending{i}")])
        whole += 1
        if whole == 1:
            touch(tmp_path / "seen")
    finish(writer)
    assert whole > 0
    assert errors == {}
    assert reader.get_tuple(cfg("t")) is None


# ----------------------------------------------------------------------------
# Python threads sharing one saver
# ----------------------------------------------------------------------------
def test_one_saver_shared_by_python_threads(root: Path) -> None:
    """One RepoSaver used from 8 Python threads at once: put_writes of distinct tasks on one
    checkpoint, graph runs on distinct threads and reads of both, interleaved; nothing is
    lost or mixed up, in memory or on disk."""
    saver = RepoSaver(root)
    graph = bot_graph(saver)
    checkpoint, version = _checkpoint_for(saver, "base")
    base = saver.put(cfg("shared"), checkpoint, {"source": "input", "step": -1}, {"word": version})
    tasks, graph_threads, turns = 24, 6, 3

    def write(i: int) -> None:
        saver.put_writes(
            base, [("word", f"w{i}"), ("note", {"i": i, "big": "x" * (i * 500)})], f"task-{i:02}"
        )

    def chat(g: int) -> None:
        run_turns(graph, f"g{g}", f"g{g}-", turns)

    def read(_: int) -> None:
        tup = saver.get_tuple(base)
        assert tup is not None and tup.checkpoint["channel_values"] == {"word": "base"}
        for t in saver.list(None, limit=5):
            assert saver.get_tuple(t.config) is not None

    jobs: list[tuple[Callable[[int], None], int]] = []
    for i in range(tasks):
        jobs.append((write, i))
        if i < graph_threads:
            jobs.append((chat, i))
        jobs.append((read, i))
    with ThreadPoolExecutor(max_workers=8) as pool:
        for future in [pool.submit(fn, arg) for fn, arg in jobs]:
            future.result()

    expected_writes = [
        w
        for i in range(tasks)
        for w in (
            (f"task-{i:02}", "word", f"w{i}"),
            (f"task-{i:02}", "note", {"i": i, "big": "x" * (i * 500)}),
        )
    ]
    for reader in (saver, RepoSaver(root)):
        tup = reader.get_tuple(base)
        assert tup is not None
        assert tup.pending_writes == expected_writes
        for g in range(graph_threads):
            listed = assert_every_checkpoint_loads(reader, f"g{g}")
            assert len(listed) == 3 * turns
            assert messages_of(listed[0]) == conversation(f"g{g}-", turns)
    assert leftovers(root) == []


def test_maintenance_while_python_threads_chat_through_the_same_saver(root: Path) -> None:
    """An admin task copies and deletes threads while request threads chat on other threads
    through the same saver (as in a server): no call fails and every conversation is whole.
    The interpreter switches threads very often here, so the calls really interleave."""
    saver = RepoSaver(root, durable=False)
    graph = bot_graph(saver)
    sources = 4
    for k in range(sources):
        run_turns(graph, f"m{k}", f"m{k}-", 2)
    errors: list[str] = []
    turns_done: dict[int, int] = {}
    stop = threading.Event()

    def chatter(i: int) -> None:
        n = 0
        try:
            while not stop.is_set():
                run_turns(graph, f"g{i}", f"g{i}-", 1, start=n)
                n += 1
        except Exception as exc:
            errors.append(f"chat: {exc!r}")
        turns_done[i] = n

    def admin() -> None:
        try:
            for r in range(16):
                k = r % sources
                saver.copy_thread(f"m{k}", f"c{k}")
                assert messages_of(saver.get_tuple(cfg(f"c{k}"))) == conversation(f"m{k}-", 2)
                saver.delete_thread(f"c{k}")
        except Exception as exc:
            errors.append(f"admin: {exc!r}")
        finally:
            stop.set()

    run_switching(*(partial(chatter, i) for i in range(3)), admin)

    assert errors == []
    fresh = RepoSaver(root)
    for i, n in turns_done.items():
        assert messages_of(fresh.get_tuple(cfg(f"g{i}"))) == conversation(f"g{i}-", n)
    for k in range(sources):
        assert messages_of(fresh.get_tuple(cfg(f"m{k}"))) == conversation(f"m{k}-", 2)
        assert fresh.get_tuple(cfg(f"c{k}")) is None


# ----------------------------------------------------------------------------
# durable=False
# ----------------------------------------------------------------------------
def test_not_durable_still_writes_whole_valid_files(root: Path) -> None:
    """durable=False skips fsync only: files are still complete and schema-valid (a durable
    saver reads back the same tuples), and no temp file remains after puts, writes, copy,
    prune and delete."""
    fast = RepoSaver(root, durable=False)
    graph = bot_graph(fast)
    run_turns(graph, "t", "f", 4)
    graph.invoke({"messages": [HumanMessage(content="big " * 5000)]}, cfg("t"))  # a 20 KB object file
    run_turns(graph, "u", "u", 2)
    fast.copy_thread("t", "t-copy")
    fast.prune(["t"])
    fast.delete_thread("u")
    run_turns(graph, "t", "f", 1, start=4)

    docs = parse_all(root)
    assert any(doc["kind"] == "object" and "big big" in json.dumps(doc) for doc in docs.values())
    assert leftovers(root) == []
    durable_reader = RepoSaver(root)
    for thread in ("t", "t-copy"):
        assert list(durable_reader.list(cfg(thread))) == list(fast.list(cfg(thread)))
        assert_every_checkpoint_loads(durable_reader, thread)
    assert messages_of(durable_reader.get_tuple(cfg("t-copy")))[-2:] == [
        "big " * 5000,
        "reply 9",
    ]
    assert messages_of(durable_reader.get_tuple(cfg("t")))[-2:] == ["f4", "reply 11"]
    assert durable_reader.get_tuple(cfg("u")) is None


# ----------------------------------------------------------------------------
# files changing underneath a long-lived saver
# ----------------------------------------------------------------------------
def _age(folder: Path) -> None:
    """Date a folder back by a minute, as if it had been written long ago (so a saver's cached
    listing of it is one it trusts, as in a long-running server)."""
    past = time.time() - 60
    os.utime(folder, (past, past))


def test_warm_saver_sees_checkpoints_and_writes_from_another_process(tmp_path: Path, root: Path) -> None:
    """A saver that already read a thread (caches warm) sees the checkpoints and the pending
    writes another process adds afterwards, through get_tuple and list."""
    warm = RepoSaver(root)
    graph = bot_graph(warm)
    run_turns(graph, "t", "m", 2)
    _age(Layout(root).checkpoints_dir("t", ""))
    # a step's writes ride in the next checkpoint (ride.py): the folder is made by hand, empty,
    # as a thread whose late writes were all taken leaves it
    Layout(root).writes_dir("t", "").mkdir(exist_ok=True)
    _age(Layout(root).writes_dir("t", ""))
    assert messages_of(warm.get_tuple(cfg("t"))) == conversation("m", 2)
    known = warm.get_tuple(cfg("t"))
    assert known is not None and known.pending_writes == []
    assert len(list(warm.list(cfg("t")))) == 6

    other = spawn(
        "chat",
        root=str(root),
        thread="t",
        prefix="m",
        turns=2,
        start=2,
        writes_on=known.config["configurable"]["checkpoint_id"],
        writes=[["note", "from outside"]],
        task="outside",
        wrote=str(tmp_path / "wrote"),
        pause_at=2,
        resume=str(tmp_path / "resume"),
    )
    wait_all([tmp_path / "wrote"], [other])
    again = warm.get_tuple(known.config)
    assert again is not None and again.pending_writes == [("outside", "note", "from outside")]

    touch(tmp_path / "resume")
    finish(other)
    assert messages_of(warm.get_tuple(cfg("t"))) == conversation("m", 4)
    listed = list(warm.list(cfg("t")))
    assert len(listed) == 12
    assert listed == list(RepoSaver(root).list(cfg("t")))
    run_turns(graph, "t", "m", 1, start=4)  # and it carries on from there
    assert messages_of(RepoSaver(root).get_tuple(cfg("t"))) == conversation("m", 5)


def test_warm_saver_sees_files_pulled_in_from_a_clone(tmp_path: Path) -> None:
    """Like `git pull`: a clone of the root gets new turns from another process, and its new
    files are copied into the root (file times preserved); the warm saver sees them."""
    root, clone = tmp_path / "root", tmp_path / "clone"
    warm = RepoSaver(root)
    run_turns(bot_graph(warm), "t", "m", 2)
    shutil.copytree(root, clone)
    _age(Layout(root).checkpoints_dir("t", ""))
    assert len(list(warm.list(cfg("t")))) == 6

    run_worker("chat", root=str(clone), thread="t", prefix="m", turns=1, start=2)
    for path in sorted(clone.rglob("*.json")):
        target = root / path.relative_to(clone)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)

    assert messages_of(warm.get_tuple(cfg("t"))) == conversation("m", 3)
    assert list(warm.list(cfg("t"))) == list(RepoSaver(root).list(cfg("t")))
    assert len(list(warm.list(cfg("t")))) == 9


def test_warm_saver_forgets_files_removed_from_outside(root: Path) -> None:
    """After `rm` of a checkpoint file (which holds its parent's writes, format 4), the warm
    saver no longer returns it or them; after another process deletes the whole thread, it
    sees no thread and can start the thread afresh."""
    warm = RepoSaver(root)
    graph = bot_graph(warm)
    run_turns(graph, "t", "m", 3)
    _age(Layout(root).checkpoints_dir("t", ""))
    listed = list(warm.list(cfg("t")))
    latest, previous = listed[0], listed[1]
    assert previous.pending_writes  # the bot's reply, written under the previous checkpoint
    assert warm.get_tuple(previous.config) == previous

    latest_file = Layout(root).checkpoint_path("t", "", latest.config["configurable"]["checkpoint_id"])
    writes_files = sorted(
        p
        for p in Layout(root).writes_dir("t", "").glob("*.json")
        if json.loads(p.read_bytes())["checkpoint_id"] == previous.config["configurable"]["checkpoint_id"]
    )
    # format 4: the latest checkpoint took them from their writes files; rm of it removes them
    assert not writes_files and "parent_writes" in json.loads(latest_file.read_bytes())
    subprocess.run(["rm", str(latest_file)], check=True)

    assert warm.get_tuple(latest.config) is None
    now = warm.get_tuple(cfg("t"))
    assert now is not None and now.config == previous.config
    assert now.pending_writes == []
    assert [t.config for t in warm.list(cfg("t"))] == [t.config for t in listed[1:]]
    graph.invoke({"messages": [HumanMessage(content="after rm")]}, cfg("t"))
    assert messages_of(warm.get_tuple(cfg("t")))[-2:] == ["after rm", "reply 6"]

    run_worker("delete_thread", root=str(root), thread="t")
    assert warm.get_tuple(cfg("t")) is None
    assert list(warm.list(cfg("t"))) == []
    assert list(warm.list(None)) == []
    run_turns(graph, "t", "new", 1)
    assert messages_of(warm.get_tuple(cfg("t"))) == conversation("new", 1)
    assert messages_of(RepoSaver(root).get_tuple(cfg("t"))) == conversation("new", 1)


def test_warm_saver_sees_other_process_checkpoints_after_its_own_put(root: Path) -> None:
    """Process A lists a thread, process B adds a turn while A's node runs (A holds no lock
    then), A writes its own checkpoints: A's list() must still show B's checkpoints."""
    warm = RepoSaver(root)
    graph = bot_graph(warm)
    run_turns(graph, "t", "m", 1)
    other = {"root": str(root), "thread": "t", "prefix": "b", "turns": 1}
    pending = [True]

    def slow_bot(state: MessagesState) -> dict[str, Any]:
        if pending:  # another process takes its turn while this node "thinks"
            pending.pop()
            run_worker("chat", **other)
        return _bot(state)

    slow = bot_graph(warm, reply=slow_bot)
    _age(Layout(root).checkpoints_dir("t", ""))
    slow.invoke({"messages": [HumanMessage(content="a1")]}, cfg("t"))

    everything = list(RepoSaver(root).list(cfg("t")))
    assert len(everything) == 9
    assert [t.config for t in warm.list(cfg("t"))] == [t.config for t in everything]


def test_processes_on_shared_and_own_threads_at_once_keep_every_put_and_write(tmp_path: Path) -> None:
    """Five processes run a real fan-out graph at the same moment: three on one shared
    thread, two on threads of their own. Afterwards every checkpoint whose put returned in
    any process loads, every put_writes that returned is among its checkpoint's pending
    writes, nothing else is on disk, and validate (checks.Validator) finds no problem."""
    from langgraph_checkpoint_repo.core.checks import Validator

    root, turns = tmp_path / "root", 3
    threads = ["shared", "shared", "shared", "own-3", "own-4"]
    procs = [
        spawn(
            "fan",
            root=str(root),
            thread=thread,
            prefix=f"p{w}-",
            turns=turns,
            log=str(tmp_path / f"log-{w}"),
            ready=str(tmp_path / f"ready-{w}"),
            go=str(tmp_path / "go"),
        )
        for w, thread in enumerate(threads)
    ]
    wait_all([tmp_path / f"ready-{w}" for w in range(len(threads))], procs)
    touch(tmp_path / "go")
    for proc in procs:
        finish(proc)

    saver = RepoSaver(root)
    puts: dict[str, set[str]] = {}
    for w, thread in enumerate(threads):
        entries = [json.loads(line) for line in (tmp_path / f"log-{w}").read_text().splitlines()]
        for entry in entries:
            if "put" in entry:
                tup = saver.get_tuple(cfg(thread, checkpoint_id=entry["put"]))
                assert tup is not None and tup.checkpoint["id"] == entry["put"]
                puts.setdefault(thread, set()).add(entry["put"])
        for entry in entries:
            if "writes" in entry:
                tup = saver.get_tuple(cfg(thread, checkpoint_id=entry["writes"]))
                assert tup is not None
                assert entry["task_id"] in {t for t, _, _ in tup.pending_writes or []}
        # each process: one turn at a time, five checkpoints a turn
        assert sum("put" in e for e in entries) == 5 * turns
    for thread, ids in puts.items():
        on_disk = {p.stem for p in Layout(root).checkpoints_dir(thread, "").glob("*.json")}
        assert on_disk == ids
        assert {t.checkpoint["id"] for t in saver.list(cfg(thread))} == ids
    assert len(puts["shared"]) == 3 * 5 * turns
    problems = Validator(root).run()
    assert problems == [], [p.line() for p in problems]
    assert leftovers(root) == []


def test_reads_while_another_thread_of_the_process_writes_see_whole_states(tmp_path: Path) -> None:
    """One saver, one thread putting checkpoints and another reading the thread meanwhile
    (LangGraph reads state while its tasks write; the Agent Server serves reads beside runs).
    The writer used to change the shared parent links and id list in place: a reader could
    die of "dictionary changed size during iteration", and a reader that derived the ids or
    links while a put landed kept them without that put, so after the writes the latest
    checkpoint was an older one. Every read now sees one consistent set: no error, each
    latest id it gets is one that was put, and the last put is the latest afterwards."""
    saver = RepoSaver(tmp_path / "root", durable=False)
    config = thread_cfg("t", checkpoint_ns="")
    put_ids: set[str] = set()
    done = threading.Event()
    errors: list[BaseException] = []
    seen: list[str] = []

    def put_steps(steps: range) -> None:
        nonlocal config
        for step in steps:
            checkpoint = empty_checkpoint()
            checkpoint["channel_values"] = {"n": step}
            checkpoint["channel_versions"] = {"n": step + 1}
            put_ids.add(checkpoint["id"])
            config = saver.put(config, checkpoint, {"step": step, "source": "loop"}, {"n": step + 1})

    put_steps(range(1500))  # long enough that walking the links takes a while

    def write() -> None:
        try:
            put_steps(range(1500, 1700))
        except BaseException as exc:
            errors.append(exc)
        finally:
            done.set()

    def read() -> None:
        try:
            while not done.is_set():
                tup = saver.get_tuple(thread_cfg("t"))
                if tup is not None:
                    seen.append(tup.checkpoint["id"])
                saver.heads(thread_cfg("t"))
        except BaseException as exc:
            errors.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter lets it
    try:
        threads = [threading.Thread(target=f) for f in (write, read, read)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    finally:
        sys.setswitchinterval(interval)
    assert not errors, errors
    assert seen and set(seen) <= put_ids
    latest = saver.get_tuple(thread_cfg("t"))
    assert latest is not None and latest.checkpoint["channel_values"] == {"n": 1699}

"""Maintenance operations of RepoSaver on real graphs.

Compared with InMemorySaver where it implements the method (delete_thread,
get_delta_channel_history, get_next_version); otherwise with the contract
documented in ``langgraph.checkpoint.base`` (copy_thread, delete_for_runs,
prune). Every result is also read back through a fresh RepoSaver, so nothing
passes only because of a warm in-process cache.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from graphs import cfg, contents, extend, line_graph
from langgraph_checkpoint_repo import RepoSaver

Graph = CompiledStateGraph[Any, Any, Any, Any]
Key = tuple[str, str, str]  # thread id, namespace, checkpoint id
DST = "Kopie/ü " * 20  # longer than a path segment: stored under a hashed folder name
BIG = "p2 " + "long text " * 1500  # over large_value_bytes: stored in a large-value file


# ----------------------------------------------------------------------------
# graphs
# ----------------------------------------------------------------------------
def _think(state: MessagesState) -> dict[str, Any]:
    return {"messages": [AIMessage(content=f"thought about {state['messages'][-1].content}")]}


def _reply(state: MessagesState) -> dict[str, Any]:
    return {"messages": [AIMessage(content=f"reply {len(state['messages'])}")]}


def _approve(state: MessagesState) -> dict[str, Any]:
    answer = interrupt("approve?")
    return {"messages": [HumanMessage(content=f"approved: {answer}")]}


def agent_graph(saver: BaseCheckpointSaver[Any], *, ask: bool = False) -> Graph:
    """A chat whose "agent" node is a subgraph (its own checkpoint namespace);
    with ``ask`` a human approval (interrupt) sits between agent and reply."""
    agent = line_graph(MessagesState, None, think=_think)
    approve = {"approve": _approve} if ask else {}
    return line_graph(MessagesState, saver, agent=agent, **approve, reply=_reply)


class DeltaState(TypedDict):
    items: Annotated[list[str], DeltaChannel(extend, snapshot_frequency=3)]
    evens: Annotated[list[str], DeltaChannel(extend, snapshot_frequency=2)]
    n: int


DELTA_CHANNELS = ("items", "evens")
DELTA_STEPS = 10


def _tick(state: DeltaState) -> dict[str, Any]:
    n = state["n"]
    update: dict[str, Any] = {"items": [f"item{n}"], "n": n + 1}
    if n % 2 == 0:
        update["evens"] = [f"even{n}"]
    return update


def _more(state: DeltaState) -> str:
    return END if state["n"] % DELTA_STEPS == 0 else "tick"


def delta_graph(saver: BaseCheckpointSaver[Any]) -> Graph:
    """A loop of DELTA_STEPS steps appending to two DeltaChannels of different snapshot cadence."""
    builder = StateGraph(DeltaState)
    builder.add_node("tick", _tick)
    builder.add_edge(START, "tick")
    builder.add_conditional_edges("tick", _more)
    return builder.compile(checkpointer=saver)


def expected_delta(steps: int) -> dict[str, Any]:
    return {
        "items": [f"item{n}" for n in range(steps)],
        "evens": [f"even{n}" for n in range(steps) if n % 2 == 0],
        "n": steps,
    }


# ----------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------
def run_turns(graph: Graph, thread_id: str, words: Iterable[str], run_id: str | None = None) -> None:
    for word in words:
        graph.invoke({"messages": [HumanMessage(content=word)]}, cfg(thread_id, run_id=run_id or None))


def turn_contents(words: Iterable[str]) -> list[str]:
    """The conversation agent_graph produces for these user turns."""
    out: list[str] = []
    for word in words:
        out += [word, f"thought about {word}", f"reply {len(out) + 2}"]
    return out


def plain(value: Any) -> Any:
    """A saver-independent picture of a value (message ids and interrupt ids are random)."""
    if isinstance(value, BaseMessage):
        return (value.type, value.content)
    if isinstance(value, (list, tuple)):
        return tuple(plain(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, plain(v)) for k, v in value.items()))
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return type(value).__name__


def summary(saver: BaseCheckpointSaver[Any], thread_id: str) -> list[tuple[Any, ...]]:
    """Every checkpoint of a thread as saver-independent rows (ids and task ids left out)."""
    rows = []
    for tup in saver.list(cfg(thread_id)):
        ns = tup.config["configurable"]["checkpoint_ns"]
        rows.append(
            (
                ns.split(":")[0],
                tup.metadata.get("step"),
                tup.metadata.get("source"),
                tup.metadata.get("run_id"),
                plain(tup.checkpoint["channel_values"]),
                sorted((w[1], plain(w[2])) for w in tup.pending_writes or []),
            )
        )
    return sorted(rows, key=repr)


def tuples(saver: RepoSaver, thread_id: str | None = None) -> dict[Key, CheckpointTuple]:
    config = cfg(thread_id) if thread_id is not None else None
    out = {}
    for tup in saver.list(config):
        c = tup.config["configurable"]
        out[(c["thread_id"], c["checkpoint_ns"], c["checkpoint_id"])] = tup
    return out


def per_ns_latest(saver: RepoSaver, thread_id: str) -> dict[str, CheckpointTuple]:
    latest: dict[str, CheckpointTuple] = {}
    for (_, ns, cid), tup in tuples(saver, thread_id).items():
        if ns not in latest or cid > latest[ns].config["configurable"]["checkpoint_id"]:
            latest[ns] = tup
    return latest


def json_files(root: Path) -> dict[str, Any]:
    """Every data file under the root, parsed (relative path -> document)."""
    return {
        str(p.relative_to(root)): json.loads(p.read_text("utf-8"))
        for p in sorted(root.rglob("*.json"))
        if ".cache" not in p.parts
    }


def _large_refs(node: Any, found: set[str]) -> set[str]:
    if isinstance(node, dict):
        if isinstance(node.get("large"), str):
            found.add(node["large"])
        for value in node.values():
            _large_refs(value, found)
    elif isinstance(node, list):
        for value in node:
            _large_refs(value, found)
    return found


def assert_no_orphan_large_files(root: Path) -> None:
    """Every large-value file is referred to by some remaining file, and the other way round."""
    docs = json_files(root)
    referred = _large_refs([d for d in docs.values() if d["kind"] != "large_value"], set())
    stored = {d["sha256"] for d in docs.values() if d["kind"] == "large_value"}
    assert stored == referred


def history_picture(saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> dict[str, Any]:
    """get_delta_channel_history without task ids (they derive from checkpoint ids)."""
    hist = saver.get_delta_channel_history(config=config, channels=list(DELTA_CHANNELS))
    return {
        ch: {"writes": [(w[1], w[2]) for w in h["writes"]], "seed": plain(h.get("seed"))}
        for ch, h in hist.items()
    }


# ----------------------------------------------------------------------------
# delete_thread, copy_thread, delete_for_runs
# ----------------------------------------------------------------------------
def test_delete_thread_matches_in_memory_saver(root: Path) -> None:
    """delete_thread removes one thread (all namespaces) and leaves the others exactly
    as InMemorySaver does; the deleted id can start a fresh conversation."""
    repo, mem = RepoSaver(root), InMemorySaver()
    for saver in (repo, mem):
        graph = agent_graph(saver)
        run_turns(graph, "doomed", ["a1", "a2"])
        run_turns(graph, "kept", ["b1", "b2", "b3"])
    kept_before = summary(repo, "kept")
    assert summary(repo, "doomed") == summary(mem, "doomed")
    assert {row[0] for row in summary(repo, "doomed")} == {"", "agent"}

    repo.delete_thread("doomed")
    mem.delete_thread("doomed")

    for saver in (repo, mem, RepoSaver(root)):
        assert summary(saver, "doomed") == []
        assert saver.get_tuple(cfg("doomed")) is None
        assert summary(saver, "kept") == summary(mem, "kept") == kept_before
    assert not repo.store.layout.thread_dir("doomed").exists()

    for saver in (repo, mem):
        run_turns(agent_graph(saver), "doomed", ["again"])
    assert summary(repo, "doomed") == summary(mem, "doomed")
    latest = RepoSaver(root).get_tuple(cfg("doomed"))
    assert latest is not None
    assert contents(latest.checkpoint["channel_values"]["messages"]) == turn_contents(["again"])


def _assert_same_tuple(src: CheckpointTuple, dst: CheckpointTuple, src_id: str, dst_id: str) -> None:
    def moved(config: RunnableConfig | None) -> RunnableConfig | None:
        if config is None:
            return None
        assert config["configurable"]["thread_id"] == src_id
        return {"configurable": {**config["configurable"], "thread_id": dst_id}}

    assert dst.config == moved(src.config)
    assert dst.parent_config == moved(src.parent_config)
    assert dst.checkpoint == src.checkpoint
    assert dst.metadata == src.metadata
    assert dst.pending_writes == src.pending_writes


def test_copy_thread_keeps_everything_and_both_threads_go_on_independently(root: Path) -> None:
    """A copy of a thread paused at an interrupt has every checkpoint, parent link, metadata
    and pending write of the source (subgraph namespace too); the source is unchanged;
    resuming each with a different answer keeps them apart."""
    saver = RepoSaver(root)
    graph = agent_graph(saver, ask=True)
    graph.invoke({"messages": [HumanMessage(content="u0")]}, cfg("src"))
    graph.invoke(Command(resume="first"), cfg("src"))
    graph.invoke({"messages": [HumanMessage(content="u1")]}, cfg("src"))
    source_before = tuples(saver, "src")
    latest = saver.get_tuple(cfg("src"))
    assert latest is not None and any(w[1] == "__interrupt__" for w in latest.pending_writes or [])
    assert {ns.split(":")[0] for _, ns, _ in source_before} == {"", "agent"}

    saver.copy_thread("src", DST)

    for reader in (saver, RepoSaver(root)):
        assert tuples(reader, "src") == source_before
        copied = tuples(reader, DST)
        assert {(ns, cid) for _, ns, cid in copied} == {(ns, cid) for _, ns, cid in source_before}
        for (_, ns, cid), tup in source_before.items():
            _assert_same_tuple(tup, copied[(DST, ns, cid)], "src", DST)
        # same newest-first order
        assert [t.config["configurable"]["checkpoint_id"] for t in reader.list(cfg(DST))] == [
            t.config["configurable"]["checkpoint_id"] for t in reader.list(cfg("src"))
        ]
    assert graph.get_state(cfg(DST)).next == ("approve",)

    src_out = graph.invoke(Command(resume="from source"), cfg("src"))
    dst_out = graph.invoke(Command(resume="from copy"), cfg(DST))
    prefix = ["u0", "thought about u0", "approved: first", "reply 3", "u1", "thought about u1"]
    assert contents(src_out["messages"]) == [*prefix, "approved: from source", "reply 7"]
    assert contents(dst_out["messages"]) == [*prefix, "approved: from copy", "reply 7"]
    graph.invoke({"messages": [HumanMessage(content="only in copy")]}, cfg(DST))
    graph.invoke(Command(resume="again"), cfg(DST))

    fresh = RepoSaver(root)
    src_latest, dst_latest = fresh.get_tuple(cfg("src")), fresh.get_tuple(cfg(DST))
    assert src_latest is not None and dst_latest is not None
    assert contents(src_latest.checkpoint["channel_values"]["messages"]) == contents(src_out["messages"])
    assert contents(dst_latest.checkpoint["channel_values"]["messages"])[-4:] == [
        "only in copy",
        "thought about only in copy",
        "approved: again",
        "reply 11",
    ]
    src_texts = {
        text
        for tup in fresh.list(cfg("src"))
        for text in contents(tup.checkpoint["channel_values"].get("messages", []))
    }
    assert "approved: from copy" not in src_texts and "only in copy" not in src_texts
    assert set(source_before) <= set(tuples(fresh, "src"))


def test_delete_for_runs_removes_exactly_those_runs(root: Path) -> None:
    """Checkpoints whose metadata run_id is listed go, in every thread and namespace,
    with their writes; every other checkpoint reads back exactly as before (values
    that lived inline in deleted checkpoints were kept), and the thread goes on."""
    saver = RepoSaver(root)
    graph = agent_graph(saver)
    run_turns(graph, "t", ["t1"], run_id="run-1")
    run_turns(graph, "t", [BIG], run_id="run-2")
    run_turns(graph, "t", ["t3"], run_id="run-3")
    run_turns(graph, "u", ["u1"], run_id="run-1")
    run_turns(graph, "u", ["u2"], run_id="run-4")
    before = tuples(saver)
    doomed_runs = {"run-1", "run-3"}
    doomed = {key for key, tup in before.items() if tup.metadata.get("run_id") in doomed_runs}
    assert {ns.split(":")[0] for _, ns, _ in doomed} == {"", "agent"}
    assert {tup.metadata.get("run_id") for tup in before.values()} == {"run-1", "run-2", "run-3", "run-4"}

    saver.delete_for_runs(sorted(doomed_runs))

    for reader in (saver, RepoSaver(root)):
        after = tuples(reader)
        assert set(after) == set(before) - doomed
        for key, tup in after.items():
            assert tup == before[key]
    assert_no_orphan_large_files(root)
    doomed_ids = {cid for _, _, cid in doomed}
    for rel, doc in json_files(root).items():
        if doc["kind"] in ("writes", "checkpoint"):
            assert doc["checkpoint_id"] not in doomed_ids, rel

    # the latest of "t" is now run-2's; the conversation goes on from there
    run_turns(graph, "t", ["t4"], run_id="run-5")
    latest = RepoSaver(root).get_tuple(cfg("t"))
    assert latest is not None
    assert contents(latest.checkpoint["channel_values"]["messages"]) == turn_contents(["t1", BIG, "t4"])
    saver.delete_for_runs([])
    saver.delete_for_runs(["no-such-run"])
    assert set(tuples(RepoSaver(root))) == set(tuples(saver))


# ----------------------------------------------------------------------------
# prune
# ----------------------------------------------------------------------------
def _chat_thread_for_prune(root: Path) -> tuple[RepoSaver, Graph]:
    saver = RepoSaver(root)
    graph = agent_graph(saver)
    run_turns(graph, "t", ["p1", BIG, "p3"])
    run_turns(graph, "other", ["o1", "o2"])
    return saver, graph


def test_prune_keep_latest_keeps_each_namespaces_latest_and_the_graph_resumes(root: Path) -> None:
    """After keep_latest every namespace's latest checkpoint reads back exactly as before
    (values that sat inline in pruned checkpoints were rescued), older ones are gone,
    other threads are untouched, and the conversation continues with its full history."""
    saver, graph = _chat_thread_for_prune(root)
    latest_before = per_ns_latest(saver, "t")
    count_before = len(tuples(saver, "t"))
    other_before = tuples(saver, "other")
    assert len(latest_before) == 4  # the root namespace and one per agent subgraph run

    saver.prune(["t"], strategy="keep_latest")

    for reader in (saver, RepoSaver(root)):
        after = tuples(reader, "t")
        assert len(after) < count_before
        assert per_ns_latest(reader, "t") == latest_before
        assert tuples(reader, "other") == other_before
    latest = RepoSaver(root).get_tuple(cfg("t"))
    assert latest is not None
    assert contents(latest.checkpoint["channel_values"]["messages"]) == turn_contents(["p1", BIG, "p3"])
    assert_no_orphan_large_files(root)

    run_turns(graph, "t", ["p4"])
    latest = RepoSaver(root).get_tuple(cfg("t"))
    assert latest is not None
    assert contents(latest.checkpoint["channel_values"]["messages"]) == turn_contents(["p1", BIG, "p3", "p4"])


def test_prune_keep_latest_leaves_one_checkpoint_per_namespace(root: Path) -> None:
    """The documented contract: keep_latest retains only the most recent checkpoint per
    namespace (a graph without DeltaChannels needs no ancestor to resume)."""
    saver, _ = _chat_thread_for_prune(root)
    latest_before = per_ns_latest(saver, "t")

    saver.prune(["t"])

    remaining = tuples(RepoSaver(root), "t")
    assert sorted(remaining) == sorted(
        ("t", ns, tup.config["configurable"]["checkpoint_id"]) for ns, tup in latest_before.items()
    )


def test_prune_delete_removes_everything_of_those_threads(root: Path) -> None:
    """strategy="delete" removes every checkpoint, write and file of the thread, nothing else."""
    saver, graph = _chat_thread_for_prune(root)
    other_before = tuples(saver, "other")

    saver.prune(["t", "never-existed"], strategy="delete")

    for reader in (saver, RepoSaver(root)):
        assert tuples(reader, "t") == {}
        assert reader.get_tuple(cfg("t")) is None
        assert tuples(reader, "other") == other_before
    assert not saver.store.layout.thread_dir("t").exists()
    with pytest.raises(ValueError, match="strategy"):
        saver.prune(["other"], strategy="keep_some")
    assert tuples(saver, "other") == other_before
    run_turns(graph, "t", ["new"])
    latest = RepoSaver(root).get_tuple(cfg("t"))
    assert latest is not None
    assert contents(latest.checkpoint["channel_values"]["messages"]) == turn_contents(["new"])


# ----------------------------------------------------------------------------
# DeltaChannel (beta)
# ----------------------------------------------------------------------------
def test_delta_channel_history_matches_in_memory_saver(root: Path) -> None:
    """For every checkpoint of the same run, the writes (in order) and the seed that
    get_delta_channel_history returns equal InMemorySaver's, and so does the state."""
    repo, mem = RepoSaver(root), InMemorySaver()
    for saver in (repo, mem):
        assert delta_graph(saver).invoke({"items": [], "evens": [], "n": 0}, cfg("d")) == expected_delta(
            DELTA_STEPS
        )
    repo_list, mem_list = list(repo.list(cfg("d"))), list(mem.list(cfg("d")))
    assert [t.metadata["step"] for t in repo_list] == [t.metadata["step"] for t in mem_list]
    assert len(repo_list) == DELTA_STEPS + 2
    seeds = 0
    for r, m in zip(repo_list, mem_list, strict=True):
        assert plain(r.checkpoint["channel_values"]) == plain(m.checkpoint["channel_values"])
        picture = history_picture(repo, r.config)
        assert picture == history_picture(mem, m.config)
        assert picture == history_picture(RepoSaver(root), r.config)
        seeds += sum(1 for h in picture.values() if h["seed"] is not None)
    assert seeds > 0  # snapshots were written and found
    assert delta_graph(repo).get_state(cfg("d")).values == expected_delta(DELTA_STEPS)


def _chain_to_snapshots(saver: RepoSaver, config: RunnableConfig) -> set[str]:
    """The latest checkpoint and its ancestors back to a stored value of every delta channel."""
    tup = saver.get_tuple(config)
    assert tup is not None
    chain = {tup.config["configurable"]["checkpoint_id"]}
    unseeded = {ch for ch in DELTA_CHANNELS if ch not in tup.checkpoint["channel_values"]}
    while unseeded and tup.parent_config is not None:
        tup = saver.get_tuple(tup.parent_config)
        assert tup is not None
        chain.add(tup.config["configurable"]["checkpoint_id"])
        unseeded -= set(tup.checkpoint["channel_values"])
    assert not unseeded
    return chain


def test_delta_channel_state_survives_prune_keep_latest(root: Path) -> None:
    """keep_latest keeps the ancestors back to each delta channel's nearest snapshot, so
    the state (and the history that rebuilds it) is the same after prune; the loop goes on."""
    saver = RepoSaver(root)
    graph = delta_graph(saver)
    graph.invoke({"items": [], "evens": [], "n": 0}, cfg("d"))
    latest = saver.get_tuple(cfg("d"))
    assert latest is not None
    needed = _chain_to_snapshots(saver, cfg("d"))
    assert len(needed) > 1  # the latest checkpoint is not itself a snapshot of both channels
    history_before = history_picture(saver, latest.config)

    saver.prune(["d"])

    for reader in (saver, RepoSaver(root)):
        remaining = {cid for _, _, cid in tuples(reader, "d")}
        assert needed <= remaining
        assert history_picture(reader, latest.config) == history_before
        assert delta_graph(reader).get_state(cfg("d")).values == expected_delta(DELTA_STEPS)

    assert graph.invoke(None, cfg("d")) == expected_delta(DELTA_STEPS)  # finished: nothing to do
    graph.invoke({"n": DELTA_STEPS}, cfg("d"))
    assert delta_graph(RepoSaver(root)).get_state(cfg("d")).values == expected_delta(2 * DELTA_STEPS)


def test_delta_channel_prune_keeps_only_the_chain_back_to_the_snapshots(root: Path) -> None:
    """keep_latest may keep what a DeltaChannel needs, but no more: in one long run the
    ancestors older than both channels' nearest snapshots must go."""
    saver = RepoSaver(root)
    delta_graph(saver).invoke({"items": [], "evens": [], "n": 0}, cfg("d"))
    needed = _chain_to_snapshots(saver, cfg("d"))
    assert len(needed) < len(tuples(saver, "d"))

    saver.prune(["d"])

    assert {cid for _, _, cid in tuples(RepoSaver(root), "d")} == needed


def test_delta_channel_state_survives_copy_thread(root: Path) -> None:
    """copy_thread copies the whole parent chain, so the copy rebuilds the same delta state
    and continues on its own."""
    saver = RepoSaver(root)
    graph = delta_graph(saver)
    graph.invoke({"items": [], "evens": [], "n": 0}, cfg("d"))

    saver.copy_thread("d", "d-copy")

    for reader in (saver, RepoSaver(root)):
        assert delta_graph(reader).get_state(cfg("d-copy")).values == expected_delta(DELTA_STEPS)
        for tup in reader.list(cfg("d")):
            cid = tup.config["configurable"]["checkpoint_id"]
            assert history_picture(reader, cfg("d-copy", checkpoint_id=cid, checkpoint_ns="")) == (
                history_picture(reader, tup.config)
            )
    graph.invoke({"n": DELTA_STEPS}, cfg("d-copy"))
    fresh = delta_graph(RepoSaver(root))
    assert fresh.get_state(cfg("d-copy")).values == expected_delta(2 * DELTA_STEPS)
    assert fresh.get_state(cfg("d")).values == expected_delta(DELTA_STEPS)


# ----------------------------------------------------------------------------
# versions
# ----------------------------------------------------------------------------
def _version_parts(version: str) -> tuple[int, str]:
    number, _, rest = version.partition(".")
    assert len(number) == 8 and number.isdigit(), version
    assert len(rest) == 8 and all(c in "0123456789abcdef" for c in rest), version
    return int(number), rest


def test_get_next_version_is_short_increasing_and_continues_every_older_form(root: Path) -> None:
    """Versions are ``"<8-digit counter>.<8 hex>"``, strictly increasing as strings (LangGraph
    compares them so), also past 9 -> 10; they continue int, float and InMemorySaver's long
    versions with the next counter and compare greater than the long one they continue."""
    repo, mem = RepoSaver(root), InMemorySaver()
    current: str | None = None
    mem_current: str | None = None
    for expected in range(1, 120):
        nxt = repo.get_next_version(current, None)
        mem_current = mem.get_next_version(mem_current, None)
        assert isinstance(nxt, str)
        assert _version_parts(nxt)[0] == expected == int(mem_current.split(".")[0])
        assert current is None or nxt > current
        # a long version (format 3, InMemorySaver) continued: the next counter, and greater
        from_long = repo.get_next_version(mem_current, None)
        assert _version_parts(from_long)[0] == expected + 1 and from_long > mem_current
        assert nxt > mem_current  # short beats long at the same counter, too
        current = nxt
    from_int = repo.get_next_version(99, None)  # type: ignore[arg-type]
    assert _version_parts(from_int)[0] == 100 and from_int > repo.get_next_version(98, None)  # type: ignore[arg-type]
    assert _version_parts(repo.get_next_version(7.0, None))[0] == 8  # type: ignore[arg-type]
    # two branches continuing one version never share the next one
    assert len({repo.get_next_version("00000005.00000000", None) for _ in range(200)}) == 200
    # the graph's stored channel versions have the same shape; LangGraph is shown them widened
    # to the long form's 32 digits, so another saver's next (long) version counts as newer
    chat = agent_graph(repo)
    run_turns(chat, "v", ["x"])
    latest = repo.get_tuple(cfg("v"))
    assert latest is not None
    for version in latest.checkpoint["channel_versions"].values():
        assert str(version).startswith("0" * 24)
        _version_parts(str(version)[24:])
        assert mem.get_next_version(str(version), None) > str(version)
    files = sorted((root / "threads" / "v" / "checkpoints").glob("*.json"))
    stored = [json.loads(p.read_text()).get("version") for p in files]
    assert len(files) > 1 and all(_version_parts(v) for v in stored if v is not None) and any(stored)


# ----------------------------------------------------------------------------
# async twins
# ----------------------------------------------------------------------------
def _prepared_roots(tmp_path: Path) -> tuple[Path, Path]:
    """Two identical roots (a copied folder), so sync and async calls can be compared 1:1."""
    base = tmp_path / "base"
    saver = RepoSaver(base)
    chat = agent_graph(saver)
    run_turns(chat, "t", ["a1"], run_id="run-1")
    run_turns(chat, "t", ["a2"], run_id="run-2")
    run_turns(chat, "u", ["b1"], run_id="run-1")
    delta_graph(saver).invoke({"items": [], "evens": [], "n": 0}, cfg("d"))
    sync_root, async_root = tmp_path / "sync", tmp_path / "async"
    shutil.copytree(base, sync_root)
    shutil.copytree(base, async_root)
    return sync_root, async_root


async def _alist(saver: RepoSaver, config: RunnableConfig | None, **kw: Any) -> list[CheckpointTuple]:
    return [tup async for tup in saver.alist(config, **kw)]


def _files_without_writes(root: Path) -> dict[str, Any]:
    """Data files, writes files aside (their names hold a fresh uuid per put_writes)."""
    return {rel: doc for rel, doc in json_files(root).items() if doc["kind"] != "writes"}


async def test_async_reads_match_sync_reads(tmp_path: Path) -> None:
    """alist, aget_tuple and aget_delta_channel_history return what the sync methods return."""
    sync_root, _ = _prepared_roots(tmp_path)
    saver = RepoSaver(sync_root)
    for config in (None, cfg("t"), cfg("t", checkpoint_ns=""), cfg("u"), cfg("d")):
        assert await _alist(saver, config) == list(saver.list(config))
        assert await _alist(saver, config, limit=3) == list(saver.list(config, limit=3))
        assert await _alist(saver, config, filter={"run_id": "run-1"}) == list(
            saver.list(config, filter={"run_id": "run-1"})
        )
    for tup in saver.list(None):
        assert await saver.aget_tuple(tup.config) == saver.get_tuple(tup.config) == tup
        before = await _alist(saver, cfg(tup.config["configurable"]["thread_id"]), before=tup.config)
        assert before == list(saver.list(cfg(tup.config["configurable"]["thread_id"]), before=tup.config))
    assert await saver.aget_tuple(cfg("missing")) is None
    for tup in saver.list(cfg("d")):
        hist = await saver.aget_delta_channel_history(config=tup.config, channels=list(DELTA_CHANNELS))
        assert hist == saver.get_delta_channel_history(config=tup.config, channels=list(DELTA_CHANNELS))
    assert await saver.aget_delta_channel_history(config=cfg("d"), channels=[]) == {}


async def test_async_writes_match_sync_writes(tmp_path: Path) -> None:
    """aput and aput_writes store the same checkpoint, metadata and writes as put and put_writes."""
    sync_root, async_root = _prepared_roots(tmp_path)
    sync_saver, async_saver = RepoSaver(sync_root), RepoSaver(async_root)
    parent = sync_saver.get_tuple(cfg("t"))
    assert parent is not None and await async_saver.aget_tuple(cfg("t")) == parent
    checkpoint = {**parent.checkpoint, "id": "1f000000-0000-6000-8000-000000000001"}
    messages = [*parent.checkpoint["channel_values"]["messages"], HumanMessage(content="put", id="m-put")]
    checkpoint["channel_values"] = {**checkpoint["channel_values"], "messages": messages}
    version = sync_saver.get_next_version(checkpoint["channel_versions"]["messages"], None)
    checkpoint["channel_versions"] = {**checkpoint["channel_versions"], "messages": version}
    metadata: dict[str, Any] = {"source": "update", "step": 99, "parents": {}, "run_id": "run-x"}
    writes = [("messages", [AIMessage(content="w", id="m-w")]), ("note", {"k": [1, 2.5, None]})]

    sync_cfg = sync_saver.put(parent.config, checkpoint, metadata, {"messages": version})  # type: ignore[arg-type]
    async_cfg = await async_saver.aput(parent.config, checkpoint, metadata, {"messages": version})  # type: ignore[arg-type]
    assert sync_cfg == async_cfg
    sync_saver.put_writes(sync_cfg, writes, "task-1", "path-1")
    await async_saver.aput_writes(async_cfg, writes, "task-1", "path-1")
    await async_saver.aput_writes(async_cfg, writes, "task-1", "path-1")  # repeated: first write wins
    sync_saver.put_writes(sync_cfg, writes, "task-1", "path-1")

    for s_reader, a_reader in ((sync_saver, async_saver), (RepoSaver(sync_root), RepoSaver(async_root))):
        s_tup, a_tup = s_reader.get_tuple(sync_cfg), await a_reader.aget_tuple(async_cfg)
        assert s_tup == a_tup
        assert s_tup is not None
        assert contents(s_tup.checkpoint["channel_values"]["messages"])[-1] == "put"
        assert s_tup.metadata == metadata
        assert s_tup.pending_writes == [("task-1", ch, value) for ch, value in writes]
    assert _files_without_writes(sync_root) == _files_without_writes(async_root)


async def test_async_maintenance_matches_sync_maintenance(tmp_path: Path) -> None:
    """adelete_for_runs, acopy_thread, aprune and adelete_thread leave the same files and
    the same listings as their sync twins."""
    sync_root, async_root = _prepared_roots(tmp_path)
    sync_saver, async_saver = RepoSaver(sync_root), RepoSaver(async_root)

    async def same() -> None:
        assert await _alist(async_saver, None) == list(sync_saver.list(None))
        assert list(RepoSaver(async_root).list(None)) == list(RepoSaver(sync_root).list(None))
        assert json_files(async_root) == json_files(sync_root)

    sync_saver.delete_for_runs(["run-1"])
    await async_saver.adelete_for_runs(["run-1"])
    await same()
    assert {t.metadata.get("run_id") for t in sync_saver.list(cfg("t"))} == {"run-2"}

    sync_saver.copy_thread("d", "d2")
    await async_saver.acopy_thread("d", "d2")
    await same()
    assert delta_graph(async_saver).get_state(cfg("d2")).values == expected_delta(DELTA_STEPS)

    sync_saver.prune(["d", "t"])
    await async_saver.aprune(["d", "t"])
    await same()
    assert delta_graph(async_saver).get_state(cfg("d")).values == expected_delta(DELTA_STEPS)
    sync_hist = sync_saver.get_delta_channel_history(config=cfg("d"), channels=list(DELTA_CHANNELS))
    async_hist = await async_saver.aget_delta_channel_history(config=cfg("d"), channels=list(DELTA_CHANNELS))
    assert sync_hist == async_hist

    sync_saver.prune(["u"], strategy="delete")
    await async_saver.aprune(["u"], strategy="delete")
    sync_saver.delete_thread("d2")
    await async_saver.adelete_thread("d2")
    await same()
    assert {t.config["configurable"]["thread_id"] for t in sync_saver.list(None)} == {"t", "d"}

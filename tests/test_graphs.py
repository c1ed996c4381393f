"""Real compiled LangGraph graphs running through RepoSaver on a real folder.

No mocks: every test compiles StateGraphs, runs them with a RepoSaver rooted
in pytest's tmp_path, and checks what LangGraph reads back (often through a
fresh RepoSaver instance, as a new process would).
"""

from __future__ import annotations

import asyncio
import json
import operator
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command, RetryPolicy, Send, interrupt
from typing_extensions import TypedDict

from graphs import LogState, ask_graph, cfg, chain_graph, chat_graph, line_graph
from langgraph_checkpoint_repo import RepoSaver

# ----------------------------------------------------------------------
# 1. a second process resumes a thread
# ----------------------------------------------------------------------

CHAT_CHILD = textwrap.dedent(
    """
    import json, sys
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph_checkpoint_repo import RepoSaver

    root, thread_id, text = sys.argv[1], sys.argv[2], sys.argv[3]

    def reply(state):
        last = state["messages"][-1]
        turn = sum(isinstance(m, HumanMessage) for m in state["messages"])
        return {"messages": [AIMessage(content=f"echo {turn}: {last.content}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    graph = builder.compile(checkpointer=RepoSaver(root))
    out = graph.invoke({"messages": [HumanMessage(content=text)]}, {"configurable": {"thread_id": thread_id}})
    print(json.dumps([[type(m).__name__, m.content] for m in out["messages"]]))
    """
)


def _run_child(code: str, *args: str, cwd: Path) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_second_process_resumes_thread(tmp_path: Path, root: Path) -> None:
    """State written by one Python process is continued by another: the conversation keeps both turns."""
    first = json.loads(_run_child(CHAT_CHILD, str(root), "conv", "hello from turn one", cwd=tmp_path))
    assert first == [["HumanMessage", "hello from turn one"], ["AIMessage", "echo 1: hello from turn one"]]

    second = json.loads(_run_child(CHAT_CHILD, str(root), "conv", "and turn two", cwd=tmp_path))
    assert second == [
        ["HumanMessage", "hello from turn one"],
        ["AIMessage", "echo 1: hello from turn one"],
        ["HumanMessage", "and turn two"],
        ["AIMessage", "echo 2: and turn two"],
    ]

    # and this (third) process reads the same four messages from the files
    stored = RepoSaver(root).get_tuple(cfg("conv"))
    assert stored is not None
    messages = stored.checkpoint["channel_values"]["messages"]
    assert [(type(m).__name__, m.content) for m in messages] == [tuple(x) for x in second]
    assert stored.metadata["step"] == 4  # turn one: steps -1, 0, 1; turn two: steps 2, 3, 4


# ----------------------------------------------------------------------
# 2. interrupt / resume with a fresh saver
# ----------------------------------------------------------------------


def test_interrupt_then_resume_with_fresh_saver(root: Path) -> None:
    """interrupt() pauses with its payload visible in get_state; a new saver on the root resumes it."""
    calls: Counter[str] = Counter()
    config = cfg("ask-thread")
    graph = ask_graph(RepoSaver(root, durable=False), calls)
    paused = graph.invoke({"log": []}, config)
    assert [i.value for i in paused["__interrupt__"]] == [
        {"question": "What is your name?", "choices": ["Ada", "Grace"]}
    ]

    fresh = ask_graph(RepoSaver(root), calls)
    snapshot = fresh.get_state(config)
    assert snapshot.next == ("ask",)
    (task,) = snapshot.tasks
    assert task.name == "ask"
    assert [i.value for i in task.interrupts] == [
        {"question": "What is your name?", "choices": ["Ada", "Grace"]}
    ]
    assert task.interrupts[0].id == paused["__interrupt__"][0].id

    done = fresh.invoke(Command(resume="Grace"), config)
    assert done["answer"] == "Grace"
    assert done["log"] == ["prepared", "answered Grace"]
    assert calls == {"prepare": 1, "ask": 2}  # ask re-runs from the top on resume, prepare does not
    after = ask_graph(RepoSaver(root), calls).get_state(config)
    assert after.next == () and after.tasks == ()
    assert after.values["answer"] == "Grace"


# ----------------------------------------------------------------------
# 3. subgraphs
# ----------------------------------------------------------------------


def _parent_with_subgraph(saver: RepoSaver, calls: Counter[str]) -> Any:
    def inner_prep(state: LogState) -> dict[str, Any]:
        calls["inner_prep"] += 1
        return {"log": ["inner_prep"]}

    def inner_ask(state: LogState) -> dict[str, Any]:
        calls["inner_ask"] += 1
        ok = interrupt("confirm inner?")
        return {"log": [f"inner_ask:{ok}"]}

    def outer_start(state: LogState) -> dict[str, Any]:
        calls["outer_start"] += 1
        return {"log": ["outer_start"]}

    def outer_end(state: LogState) -> dict[str, Any]:
        calls["outer_end"] += 1
        return {"log": ["outer_end"]}

    inner = line_graph(LogState, None, inner_prep=inner_prep, inner_ask=inner_ask)
    return line_graph(LogState, saver, outer_start=outer_start, sub=inner, outer_end=outer_end)


def test_subgraph_state_is_stored_and_its_interrupt_resumes(root: Path) -> None:
    """A compiled subgraph node gets its own checkpoint namespace on disk, and its interrupt resumes."""
    calls: Counter[str] = Counter()
    config = cfg("sub-thread")
    saver = RepoSaver(root, durable=False)
    graph = _parent_with_subgraph(saver, calls)
    paused = graph.invoke({"log": []}, config)
    assert [i.value for i in paused["__interrupt__"]] == ["confirm inner?"]

    fresh_saver = RepoSaver(root)
    fresh = _parent_with_subgraph(fresh_saver, calls)
    state = fresh.get_state(config, subgraphs=True)
    assert state.next == ("sub",)
    (task,) = state.tasks
    assert task.name == "sub"
    sub_state = task.state
    assert sub_state is not None and not isinstance(sub_state, dict)
    sub_ns = sub_state.config["configurable"]["checkpoint_ns"]
    assert sub_ns.startswith("sub:")
    assert sub_state.values == {"log": ["outer_start", "inner_prep"]}
    assert sub_state.next == ("inner_ask",)
    assert [i.value for i in sub_state.tasks[0].interrupts] == ["confirm inner?"]

    listed = list(fresh_saver.list(config))
    namespaces = {t.config["configurable"]["checkpoint_ns"] for t in listed}
    assert namespaces == {"", sub_ns}
    sub_tuples = [t for t in listed if t.config["configurable"]["checkpoint_ns"]]
    assert sub_tuples and all(t.config["configurable"]["thread_id"] == "sub-thread" for t in sub_tuples)
    assert sub_tuples[0].checkpoint["channel_values"]["log"] == ["outer_start", "inner_prep"]
    sub_id = sub_state.config["configurable"]["checkpoint_id"]
    assert sub_tuples[0].config["configurable"]["checkpoint_id"] == sub_id
    assert list(fresh_saver.list(cfg("sub-thread", checkpoint_ns=sub_ns)))

    done = fresh.invoke(Command(resume="yes"), config)
    # the subgraph returns its whole log (input included) and the parent's reducer appends it
    assert done["log"] == ["outer_start", "outer_start", "inner_prep", "inner_ask:yes", "outer_end"]
    assert calls == {"outer_start": 1, "inner_prep": 1, "inner_ask": 2, "outer_end": 1}
    final = fresh.get_state(config, subgraphs=True)
    assert final.next == () and final.tasks == ()


# ----------------------------------------------------------------------
# 4. history, time travel and forks
# ----------------------------------------------------------------------


def _ids(snapshots: list[Any]) -> list[str]:
    return [s.config["configurable"]["checkpoint_id"] for s in snapshots]


def _parent_id(snapshot: Any) -> str | None:
    return snapshot.parent_config["configurable"]["checkpoint_id"] if snapshot.parent_config else None


def test_history_time_travel_and_update_state_fork(root: Path) -> None:
    """History is newest first with exact parent links; replaying and update_state on old checkpoints fork."""
    calls: Counter[str] = Counter()
    config = cfg("history")
    saver = RepoSaver(root, durable=False)
    graph = chain_graph(saver, calls)
    graph.invoke({"log": []}, config)

    history = list(graph.get_state_history(config))
    assert [h.metadata["step"] for h in history] == [3, 2, 1, 0, -1]
    assert [h.next for h in history] == [(), ("c",), ("b",), ("a",), ("__start__",)]
    assert [h.values for h in history] == [{"log": v} for v in (["a", "b", "c"], ["a", "b"], ["a"], [], [])]
    ids = _ids(history)
    assert ids == sorted(ids, reverse=True) and len(set(ids)) == 5
    assert [_parent_id(h) for h in history] == [*ids[1:], None]

    # time travel: re-run from the checkpoint taken after "a"
    after_a = history[2]
    replayed = graph.invoke(None, after_a.config)
    assert replayed == {"log": ["a", "b", "c"]}
    assert calls == {"a": 1, "b": 2, "c": 2}

    fresh = chain_graph(RepoSaver(root), calls)
    branch = list(fresh.get_state_history(config))
    new = [h for h in branch if h.config["configurable"]["checkpoint_id"] not in set(ids)]
    # LangGraph first copies after_a into a "fork" checkpoint, then runs b and c on top of it
    assert [(h.metadata["step"], h.metadata["source"], h.next) for h in new] == [
        (4, "loop", ()),
        (3, "loop", ("c",)),
        (2, "fork", ("b",)),
    ]
    assert branch[0].config == new[0].config
    new_ids = _ids(new)
    assert [_parent_id(h) for h in new] == [*new_ids[1:], ids[2]]  # the fork hangs off after_a
    assert new[0].values == {"log": ["a", "b", "c"]} and new[2].values == {"log": ["a"]}
    # both branches are listed
    assert set(ids) <= set(_ids(branch))
    old_head = fresh.get_state(history[0].config)
    assert old_head.values == {"log": ["a", "b", "c"]} and _parent_id(old_head) == ids[1]

    # update_state on an older checkpoint forks off that checkpoint
    before_a = history[3]
    forked_config = fresh.update_state(before_a.config, {"log": ["patched"]})
    forked = fresh.get_state(forked_config)
    assert _parent_id(forked) == ids[3]
    assert forked.values == {"log": ["patched"]}
    assert forked.next == ("a",)
    everything = RepoSaver(root).list(config)
    listed = [t.config["configurable"]["checkpoint_id"] for t in everything]
    assert set(ids) | set(new_ids) <= set(listed)
    assert forked_config["configurable"]["checkpoint_id"] in listed
    assert listed[0] == forked_config["configurable"]["checkpoint_id"]  # newest first
    assert len(listed) == len(set(listed)) == 5 + len(new) + 1
    # the fork continues from its own state
    assert fresh.invoke(None, forked_config) == {"log": ["patched", "a", "b", "c"]}
    assert fresh.get_state(config).values == {"log": ["patched", "a", "b", "c"]}


# ----------------------------------------------------------------------
# 5. Send fan-out and pending writes
# ----------------------------------------------------------------------


class FanState(TypedDict, total=False):
    items: list[str]
    results: Annotated[list[str], operator.add]
    total: int


def _saved_results(saver: RepoSaver, config: Any) -> int:
    """How many ``results`` writes the thread's latest checkpoint has pending."""
    latest = saver.get_tuple(config)
    return sum(1 for _, ch, _ in (latest.pending_writes if latest else None) or [] if ch == "results")


def _fan_graph(
    saver: RepoSaver, calls: Counter[str], fail_once: set[str] | None = None, n_ok: int = 0
) -> Any:
    """Map (one Send per item) then reduce. Items in ``fail_once`` raise on their first call,
    after waiting until ``n_ok`` sibling tasks have finished."""
    lock = threading.Lock()
    fail_once = fail_once if fail_once is not None else set()
    siblings_done = threading.Event()

    def work(arg: dict[str, str], config: RunnableConfig) -> dict[str, Any]:
        item = arg["item"]
        with lock:
            calls[item] += 1
            failing = item in fail_once
            fail_once.discard(item)
        if failing:
            # fail only once the siblings' writes are saved (LangGraph saves a task's writes
            # after it returns, so a flag it sets is not enough); the deadline is a deadlock guard
            assert siblings_done.wait(30), "siblings never finished"
            thread = {"configurable": {"thread_id": config["configurable"]["thread_id"]}}
            deadline = time.monotonic() + 30
            while _saved_results(saver, thread) < n_ok:
                assert time.monotonic() < deadline, "siblings' writes never saved"
                time.sleep(0.01)
            raise RuntimeError(f"boom on {item}")
        with lock:
            calls["finished"] += 1
            if calls["finished"] >= n_ok:
                siblings_done.set()
        return {"results": [f"done:{item}"]}

    def reduce(state: FanState) -> dict[str, Any]:
        calls["reduce"] += 1
        return {"total": len(state["results"])}

    builder = StateGraph(FanState)
    builder.add_node("work", work)
    builder.add_node("reduce", reduce)
    builder.add_conditional_edges(START, lambda s: [Send("work", {"item": i}) for i in s["items"]], ["work"])
    builder.add_edge("work", "reduce")
    builder.add_edge("reduce", END)
    return builder.compile(checkpointer=saver)


def test_send_fan_out_reduces_all_parallel_writes(root: Path) -> None:
    """Parallel Send tasks all write through the operator.add reducer and the result is stored."""
    calls: Counter[str] = Counter()
    config = cfg("fan")
    items = [f"item{i}" for i in range(6)]
    out = _fan_graph(RepoSaver(root, durable=False), calls).invoke({"items": items}, config)
    assert out["results"] == [f"done:{i}" for i in items]
    assert out["total"] == 6
    assert all(calls[i] == 1 for i in items) and calls["reduce"] == 1

    stored = _fan_graph(RepoSaver(root), Counter()).get_state(config)
    assert stored.values == out


def test_failed_parallel_step_keeps_sibling_writes_and_reruns_only_failed_task(root: Path) -> None:
    """When one Send task fails, siblings' writes are saved as pending writes and not re-run on resume."""
    calls: Counter[str] = Counter()
    config = cfg("fan-fail")
    saver = RepoSaver(root, durable=False)
    graph = _fan_graph(saver, calls, fail_once={"bad"}, n_ok=2)
    with pytest.raises(RuntimeError, match="boom on bad"):
        graph.invoke({"items": ["a", "bad", "c"]}, config)
    assert calls == {"a": 1, "bad": 1, "c": 1, "finished": 2}

    latest = RepoSaver(root).get_tuple(config)
    assert latest is not None
    writes = latest.pending_writes or []
    results = sorted(v for _, ch, v in writes if ch == "results")
    assert results == [["done:a"], ["done:c"]]
    errors = [(tid, v) for tid, ch, v in writes if ch == "__error__"]
    assert len(errors) == 1 and "boom on bad" in str(errors[0][1])
    ok_tasks = {tid for tid, ch, _ in writes if ch == "results"}
    assert len(ok_tasks) == 2 and errors[0][0] not in ok_tasks

    resumed = _fan_graph(RepoSaver(root), calls).invoke(None, config)
    assert calls["a"] == 1 and calls["c"] == 1, "successful tasks were re-run"
    assert calls["bad"] == 2
    assert resumed["results"] == ["done:a", "done:bad", "done:c"]  # Send order, not finish order
    assert resumed["total"] == 3


# ----------------------------------------------------------------------
# 6. retries
# ----------------------------------------------------------------------


class Transient(Exception):
    pass


def test_retry_policy_recovers_failing_node(root: Path) -> None:
    """A node that fails twice then succeeds under RetryPolicy completes and the stored state is right."""
    attempts: Counter[str] = Counter()

    def flaky(state: LogState) -> dict[str, Any]:
        attempts["flaky"] += 1
        if attempts["flaky"] < 3:
            raise Transient(f"attempt {attempts['flaky']}")
        return {"log": [f"ok after {attempts['flaky']}"]}

    def after(state: LogState) -> dict[str, Any]:
        return {"log": ["after"]}

    builder = StateGraph(LogState)
    policy = RetryPolicy(max_attempts=3, initial_interval=0.001, jitter=False, retry_on=Transient)
    builder.add_node("flaky", flaky, retry_policy=policy)
    builder.add_node("after", after)
    builder.add_edge(START, "flaky")
    builder.add_edge("flaky", "after")
    builder.add_edge("after", END)
    config = cfg("retry")
    graph = builder.compile(checkpointer=RepoSaver(root, durable=False))
    out = graph.invoke({"log": []}, config)
    assert out == {"log": ["ok after 3", "after"]}
    assert attempts["flaky"] == 3

    saver = RepoSaver(root)
    latest = saver.get_tuple(config)
    assert latest is not None
    assert latest.checkpoint["channel_values"]["log"] == ["ok after 3", "after"]
    assert latest.metadata["step"] == 2
    for t in saver.list(config):
        assert all(ch != "__error__" for _, ch, _ in t.pending_writes or [])


# ----------------------------------------------------------------------
# 7. durability modes
# ----------------------------------------------------------------------


def test_durability_modes_same_state_and_expected_checkpoint_counts(root: Path) -> None:
    """sync, async and exit durability reach the same state; exit stores only the final checkpoint."""
    saver = RepoSaver(root, durable=False)
    graph = chain_graph(saver)
    finals: dict[str, Any] = {}
    for mode in ("sync", "async", "exit"):
        finals[mode] = graph.invoke({"log": []}, cfg(f"dur-{mode}"), durability=mode)
    assert finals["sync"] == finals["async"] == finals["exit"] == {"log": ["a", "b", "c"]}

    reader = chain_graph(RepoSaver(root))
    counts = {mode: len(list(reader.get_state_history(cfg(f"dur-{mode}")))) for mode in finals}
    assert counts == {"sync": 5, "async": 5, "exit": 1}
    for mode in finals:
        state = reader.get_state(cfg(f"dur-{mode}"))
        assert state.values == {"log": ["a", "b", "c"]} and state.next == ()
        assert state.metadata["step"] == 3


# ----------------------------------------------------------------------
# 8. async
# ----------------------------------------------------------------------


def _async_chain_graph(saver: RepoSaver) -> Any:
    """chain_graph with async nodes."""

    def make(name: str) -> Any:
        async def node(state: LogState) -> dict[str, Any]:
            await asyncio.sleep(0)
            return {"log": [name]}

        return node

    return line_graph(LogState, saver, **{name: make(name) for name in "abc"})


async def test_ainvoke_and_astream_store_checkpoints(root: Path) -> None:
    """ainvoke and astream with async nodes store the same history a sync run would."""
    graph = _async_chain_graph(RepoSaver(root, durable=False))
    out = await graph.ainvoke({"log": []}, cfg("async-invoke"))
    assert out == {"log": ["a", "b", "c"]}
    updates = [u async for u in graph.astream({"log": ["x"]}, cfg("async-stream"), stream_mode="updates")]
    assert updates == [{"a": {"log": ["a"]}}, {"b": {"log": ["b"]}}, {"c": {"log": ["c"]}}]

    reader = _async_chain_graph(RepoSaver(root))
    for thread_id, log in (("async-invoke", ["a", "b", "c"]), ("async-stream", ["x", "a", "b", "c"])):
        state = await reader.aget_state(cfg(thread_id))
        assert state.values == {"log": log}
        history = [h async for h in reader.aget_state_history(cfg(thread_id))]
        assert [h.metadata["step"] for h in history] == [3, 2, 1, 0, -1]
        assert [_parent_id(h) for h in history] == [*_ids(history)[1:], None]


async def test_ainvoke_interrupt_and_resume_with_fresh_saver(root: Path) -> None:
    """interrupt() under ainvoke, then Command(resume=...) via ainvoke on a fresh saver."""
    calls: Counter[str] = Counter()
    config = cfg("async-ask")
    paused = await ask_graph(RepoSaver(root, durable=False), calls).ainvoke({"log": []}, config)
    assert paused["__interrupt__"][0].value["question"] == "What is your name?"

    fresh = ask_graph(RepoSaver(root), calls)
    snapshot = await fresh.aget_state(config)
    assert [i.value["choices"] for t in snapshot.tasks for i in t.interrupts] == [["Ada", "Grace"]]
    done = await fresh.ainvoke(Command(resume="Ada"), config)
    assert done["answer"] == "Ada" and done["log"] == ["prepared", "answered Ada"]
    assert calls == {"prepare": 1, "ask": 2}
    assert (await fresh.aget_state(config)).next == ()


# ----------------------------------------------------------------------
# 9. sync calls inside a loop, and many threads with their own loops
# ----------------------------------------------------------------------


async def test_sync_invoke_inside_running_event_loop(root: Path) -> None:
    """A sync graph.invoke called from a coroutine (a loop is running) works and persists."""
    asyncio.get_running_loop()  # raises if no loop is running
    graph = chain_graph(RepoSaver(root, durable=False))
    assert graph.invoke({"log": []}, cfg("in-loop")) == {"log": ["a", "b", "c"]}
    second = graph.invoke({"log": ["again"]}, cfg("in-loop"))
    assert second == {"log": ["a", "b", "c", "again", "a", "b", "c"]}
    assert len(list(graph.get_state_history(cfg("in-loop")))) == 10
    stored = RepoSaver(root).get_tuple(cfg("in-loop"))
    assert stored is not None and stored.checkpoint["channel_values"]["log"][-1] == "c"


async def _async_reply(state: MessagesState) -> dict[str, Any]:
    await asyncio.sleep(0)
    return {"messages": [AIMessage(content=f"re: {state['messages'][-1].content}")]}


def test_threads_with_own_event_loops_share_one_saver(root: Path) -> None:
    """Several OS threads, each with its own asyncio.run, drive one saver on different threads safely."""
    n_threads, turns = 8, 3
    saver = RepoSaver(root, durable=False)
    graph = chat_graph(saver, _async_reply)
    barrier = threading.Barrier(n_threads)
    errors: list[BaseException] = []

    async def converse(tid: str) -> None:
        for turn in range(turns):
            await graph.ainvoke({"messages": [HumanMessage(content=f"{tid} turn {turn}")]}, cfg(tid))

    def worker(tid: str) -> None:
        try:
            barrier.wait(30)
            asyncio.run(converse(tid))
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=worker, args=(f"t{i}",)) for i in range(n_threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
    assert not any(w.is_alive() for w in workers)
    assert errors == []

    reader = RepoSaver(root)
    everything = list(reader.list(None))
    assert len(everything) == n_threads * turns * 3
    for i in range(n_threads):
        tid = f"t{i}"
        tuples = list(reader.list(cfg(tid)))
        assert len(tuples) == turns * 3
        ids = {t.config["configurable"]["checkpoint_id"] for t in tuples}
        for t in tuples:  # every checkpoint is readable and its parent exists
            assert t.parent_config is None or t.parent_config["configurable"]["checkpoint_id"] in ids
            assert reader.get_tuple(t.config) is not None
        latest = reader.get_tuple(cfg(tid))
        assert latest is not None
        contents = [m.content for m in latest.checkpoint["channel_values"]["messages"]]
        expected = [x for n in range(turns) for x in (f"{tid} turn {n}", f"re: {tid} turn {n}")]
        assert contents == expected


# ----------------------------------------------------------------------
# differential check against LangGraph's InMemorySaver
# ----------------------------------------------------------------------


def _nested_graph(saver: Any) -> Any:
    """outer -> (subgraph "mid" -> subgraph "deep" with an interrupt) -> trim (RemoveMessage)."""

    def deep(state: MessagesState) -> dict[str, Any]:
        answer = interrupt({"depth": 2})
        return {"messages": [AIMessage(content=f"deep:{answer}:" + "x" * 9000, id=f"ai-{answer}")]}

    deep_graph = StateGraph(MessagesState)
    deep_graph.add_node("deep", deep)
    deep_graph.add_edge(START, "deep")
    mid_graph = StateGraph(MessagesState)
    mid_graph.add_node("mid", deep_graph.compile())
    mid_graph.add_edge(START, "mid")

    def trim(state: MessagesState) -> dict[str, Any]:
        if len(state["messages"]) > 4:
            return {"messages": [RemoveMessage(id=str(state["messages"][0].id))]}
        return {}

    outer = StateGraph(MessagesState)
    outer.add_node("outer", mid_graph.compile())
    outer.add_node("trim", trim)
    outer.add_edge(START, "outer")
    outer.add_edge("outer", "trim")
    return outer.compile(checkpointer=saver)


def _describe_run(graph: Any, reload: Any, thread_id: str) -> list[Any]:
    """Everything observable about three interrupted/resumed turns, saver ids left out."""
    config = cfg(thread_id)
    seen: list[Any] = []
    for turn in range(3):
        graph.invoke({"messages": [HumanMessage(content=f"turn {turn} 😀", id=f"h{turn}")]}, config)
        state = graph.get_state(config, subgraphs=True)
        mid = state.tasks[0].state
        deep = mid.tasks[0].state
        seen.append((state.next, mid.next, deep.next, [i.value for i in deep.tasks[0].interrupts]))
        seen.append(deep.config["configurable"]["checkpoint_ns"].count("|"))
        graph.invoke(Command(resume=f"r{turn}"), config)
        graph = reload()
    final = graph.get_state(config)
    seen.append([(type(m).__name__, m.content, m.id) for m in final.values["messages"]])
    seen.append([(h.metadata["step"], h.metadata["source"], h.next) for h in graph.get_state_history(config)])
    return seen


def test_nested_subgraphs_and_odd_thread_ids_match_in_memory_saver(root: Path) -> None:
    """Two-level subgraph interrupts, large messages, RemoveMessage and odd thread ids: RepoSaver (reloaded
    between turns) shows LangGraph exactly what InMemorySaver shows."""
    memory = InMemorySaver()
    for thread_id in ["Weird/Thread ÜÑÍ 😀 ..", "x" * 300, "UPPER case"]:
        expected = _describe_run(_nested_graph(memory), lambda: _nested_graph(memory), thread_id)
        got = _describe_run(
            _nested_graph(RepoSaver(root, durable=False)), lambda: _nested_graph(RepoSaver(root)), thread_id
        )
        assert got == expected
        assert got[1] == 1  # the deep subgraph's namespace is two levels deep
    namespaces = {t.config["configurable"]["checkpoint_ns"] for t in RepoSaver(root).list(None)}
    assert {len(ns.split("|")) if ns else 0 for ns in namespaces} == {0, 1, 2}

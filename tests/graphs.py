"""The graphs, configs and states the tests share, and the fixture tree every format version must migrate.

``line_graph`` wires nodes START -> ... -> END, the shape most test graphs have; ``chat_graph``
and the other builders take the variants a test needs as parameters, so no test module keeps
its own copy. ``build_fixture_tree`` writes one thread per situation a migration has to carry: a
chat, a thread waiting on an interrupt, a subgraph waiting on one, a forked history, a failed
fan-out with the pending writes of the tasks that finished, a value stored in ``large/`` and a
DeltaChannel. ``resume_fixture_tree`` finishes every waiting thread, so a test can show that a
migrated tree still runs.
"""

from __future__ import annotations

import copy
import operator
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Annotated, Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.channels import DeltaChannel
from langgraph.checkpoint.base import LATEST_VERSION, BaseCheckpointSaver, Checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command, Send, interrupt
from typing_extensions import TypedDict

from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.ride import writes_alone

BIG_TEXT = "0123456789abcdef" * 1024  # 16 KiB: over the saver's large_value_bytes default


def cfg(thread_id: str, **extra: Any) -> RunnableConfig:
    """A thread's config; extras that are None are left out (as if not given)."""
    return {"configurable": {"thread_id": thread_id, **{k: v for k, v in extra.items() if v is not None}}}


class LogState(TypedDict):
    log: Annotated[list[str], operator.add]


def line_graph(state: type[Any], saver: BaseCheckpointSaver[Any] | None, /, **nodes: Any) -> Any:
    """START, then each node in the order given, then END: the shape most test graphs share."""
    builder = StateGraph(state)
    for name, node in nodes.items():
        builder.add_node(name, node)
    names = list(nodes)
    for source, target in zip([START, *names], [*names, END], strict=True):
        builder.add_edge(source, target)
    return builder.compile(checkpointer=saver)


def echo(state: MessagesState) -> dict[str, Any]:
    return {"messages": [AIMessage(content=f"echo: {state['messages'][-1].content}")]}


def chat_graph(
    saver: BaseCheckpointSaver[Any] | None,
    reply: Callable[[MessagesState], Any] = echo,
    *,
    node: str = "reply",
) -> Any:
    """One user message in, one answer out: ``reply`` (sync or async) runs as node ``node``."""
    return line_graph(MessagesState, saver, **{node: reply})


def contents(messages: Iterable[BaseMessage]) -> list[str]:
    return [str(m.content) for m in messages]


def invoke_in_order(graph: Any, value: Any, config: RunnableConfig) -> Any:
    """``graph.invoke`` whose saves are made one at a time in the order LangGraph makes them
    (one worker: ``max_concurrency``), each step's writes in a file at once, which the next
    checkpoint takes (``writes_alone``): the same files whatever the machine's load. Else a
    step's ``put_writes``, run in a worker thread while the loop goes on, now and then starts
    after the next checkpoint's put and stays a writes file of its own."""
    with writes_alone():
        return graph.invoke(value, {**config, "max_concurrency": 1})


def chat_root(
    root: Path,
    thread_id: str = "t",
    turns: int = 3,
    *,
    run_id: str | None = None,
    serde: SerializerProtocol | None = None,
    in_order: bool = False,
) -> RepoSaver:
    """A thread written by ``turns`` turns of chat_graph ("turn 0", "turn 1", ...); its saver.
    ``in_order``: each turn run by ``invoke_in_order``, for a test that counts files."""
    saver = RepoSaver(root, serde=serde, durable=False)
    graph = chat_graph(saver)
    for i in range(turns):
        value, config = {"messages": [HumanMessage(content=f"turn {i}")]}, cfg(thread_id, run_id=run_id)
        if in_order:
            invoke_in_order(graph, value, config)
        else:
            graph.invoke(value, config)
    return saver


class AskState(TypedDict, total=False):
    question: str
    answer: str
    log: Annotated[list[str], operator.add]


def ask_graph(saver: BaseCheckpointSaver[Any] | None, calls: Counter[str] | None = None) -> Any:
    """prepare, then ask (an interrupt); ``calls`` counts how often each node ran."""
    calls = calls if calls is not None else Counter()

    def prepare(state: AskState) -> dict[str, Any]:
        calls["prepare"] += 1
        return {"question": "What is your name?", "log": ["prepared"]}

    def ask(state: AskState) -> dict[str, Any]:
        calls["ask"] += 1
        answer = interrupt({"question": state["question"], "choices": ["Ada", "Grace"]})
        return {"answer": answer, "log": [f"answered {answer}"]}

    return line_graph(AskState, saver, prepare=prepare, ask=ask)


def sub_graph(saver: BaseCheckpointSaver[Any] | None) -> Any:
    def inner_ask(state: LogState) -> dict[str, Any]:
        ok = interrupt("confirm inner?")
        return {"log": [f"inner_ask:{ok}"]}

    inner = line_graph(LogState, None, inner_prep=lambda s: {"log": ["inner_prep"]}, inner_ask=inner_ask)
    return line_graph(LogState, saver, outer_start=lambda s: {"log": ["outer_start"]}, sub=inner)


def chain_graph(saver: BaseCheckpointSaver[Any] | None, calls: Counter[str] | None = None) -> Any:
    """START -> a -> b -> c -> END, each node appending its name to ``log`` (and counted in ``calls``)."""
    calls = calls if calls is not None else Counter()

    def make(name: str) -> Any:
        def node(state: LogState) -> dict[str, Any]:
            calls[name] += 1
            return {"log": [name]}

        return node

    return line_graph(LogState, saver, **{name: make(name) for name in "abc"})


class FanState(TypedDict, total=False):
    items: list[str]
    results: Annotated[list[str], operator.add]


def fan_graph(saver: BaseCheckpointSaver[Any] | None, *, fail: bool, ran: list[str] | None = None) -> Any:
    """One Send per item; with ``fail``, "bad" raises once its siblings' writes are saved.

    Waiting for the saved writes (not just for the siblings to return) keeps the failed
    step's pending writes the same on every run, however loaded the machine is. ``ran``
    records every item a task ran for, so a test can tell a task whose write was saved
    (not run again on resume) from one that had to run again.
    """

    def saved_results(config: RunnableConfig) -> int:
        assert saver is not None
        tup = saver.get_tuple({"configurable": {"thread_id": config["configurable"]["thread_id"]}})
        return sum(1 for _, channel, _ in (tup.pending_writes if tup else []) if channel == "results")

    def work(arg: dict[str, str], config: RunnableConfig) -> dict[str, Any]:
        if ran is not None:
            ran.append(arg["item"])
        if arg["item"] == "bad" and fail:
            deadline = time.monotonic() + 60
            while saved_results(config) < 2:
                assert time.monotonic() < deadline, "the other tasks' writes were never saved"
                time.sleep(0.005)
            raise RuntimeError("boom on bad")
        return {"results": [f"done:{arg['item']}"]}

    builder = StateGraph(FanState)
    builder.add_node("work", work)
    builder.add_node("reduce", lambda s: {})
    builder.add_conditional_edges(START, lambda s: [Send("work", {"item": i}) for i in s["items"]], ["work"])
    builder.add_edge("work", "reduce")
    builder.add_edge("reduce", END)
    return builder.compile(checkpointer=saver)


class BigState(TypedDict, total=False):
    document: str
    summary: str


def big_graph(saver: BaseCheckpointSaver[Any] | None) -> Any:
    return line_graph(BigState, saver, summarise=lambda s: {"summary": f"{len(s['document'])} characters"})


def extend(state: list[str], writes: Sequence[list[str]]) -> list[str]:
    """DeltaChannel reducer: deterministic and batching-invariant."""
    out = list(state)
    for items in writes:
        out.extend(items)
    return out


class DeltaState(TypedDict):
    items: Annotated[list[str], DeltaChannel(extend, snapshot_frequency=3)]
    n: int


def delta_graph(saver: BaseCheckpointSaver[Any] | None, stop: int = 7) -> Any:
    def tick(state: DeltaState) -> dict[str, Any]:
        return {"items": [f"item{state['n']}"], "n": state["n"] + 1}

    builder = StateGraph(DeltaState)
    builder.add_node("tick", tick)
    builder.add_edge(START, "tick")
    builder.add_conditional_edges("tick", lambda s: END if s["n"] >= stop else "tick")
    return builder.compile(checkpointer=saver)


def make_checkpoint(
    cid: str, values: dict[str, Any], versions: dict[str, Any], *, input_seen: bool = False
) -> Checkpoint:
    """A checkpoint to put by hand: a "node" saw ``versions`` (and, with ``input_seen``, the input)."""
    seen: dict[str, Any] = {"node": dict(versions)}
    if input_seen:
        seen["__input__"] = {}
    return Checkpoint(
        v=LATEST_VERSION,
        id=cid,
        ts="2024-05-06T07:08:09.123456+00:00",
        channel_values=values,
        channel_versions=dict(versions),
        versions_seen=seen,
        updated_channels=sorted(values),
    )


def run_fixture_graphs(
    saver: BaseCheckpointSaver[Any],
    *,
    chat_words: Sequence[str] = ("hello", "how are you?"),
    reply: Callable[[MessagesState], Any] = echo,
    big: bool = True,
) -> None:
    """Leave one thread per situation in ``saver`` (used for fixture trees, transfers and the
    command line's shared root, which chats with its own ``reply`` and has no "big" thread)."""
    chat = chat_graph(saver, reply)
    for word in chat_words:
        chat.invoke({"messages": [HumanMessage(content=word)]}, {**cfg("chat"), "metadata": {"user": "ada"}})
    ask_graph(saver).invoke({"log": []}, cfg("ask"))
    sub_graph(saver).invoke({"log": []}, cfg("sub"))
    chain = chain_graph(saver)
    chain.invoke({"log": []}, cfg("fork"))
    history = list(chain.get_state_history(cfg("fork")))
    chain.invoke(None, history[2].config)  # replay from after "a": a fork
    chain.update_state(history[3].config, {"log": ["patched"]})
    try:
        fan_graph(saver, fail=True).invoke({"items": ["a", "bad", "c"]}, cfg("fan"))
    except RuntimeError as exc:
        assert "boom on bad" in str(exc)
    else:  # pragma: no cover - the graph is built to fail
        raise AssertionError("the fan-out was meant to fail")
    if big:
        big_graph(saver).invoke({"document": BIG_TEXT}, cfg("big"))
    delta_graph(saver).invoke({"items": [], "n": 0}, cfg("delta"))


def build_fixture_tree(root: Path) -> None:
    """Write the fixture threads into a new root with this release's format."""
    run_fixture_graphs(RepoSaver(root, durable=False))
    relay = relay_graph(RepoSaver(root, durable=False))
    for turn in range(1, RELAY_TURNS + 1):  # since format 3: objects/, chunked lists
        relay.invoke({"messages": [question(turn)]}, cfg("relay"))


def numbered_reply(state: MessagesState) -> dict[str, Any]:
    """An answer with an id from the question, so the whole conversation is deterministic."""
    last = state["messages"][-1]
    return {"messages": [AIMessage(content=f"answer to {last.content}", id=f"ai-{last.id}")]}


def relay_graph(saver: BaseCheckpointSaver[Any] | None) -> Any:
    """The answer comes from a subgraph reached through a ``Send`` that carries the whole
    conversation: every message shows up in the ``Send``, the tasks channel, its write and a new
    subgraph namespace on every turn, as in a prebuilt tool-calling agent."""
    inner = line_graph(MessagesState, None, answer=numbered_reply)
    g = StateGraph(MessagesState)
    g.add_node("inner", inner)
    g.add_conditional_edges(START, lambda s: [Send("inner", {"messages": s["messages"]})])
    g.add_edge("inner", END)
    return g.compile(checkpointer=saver)


def question(turn: int) -> HumanMessage:
    return HumanMessage(content=f"turn-{turn}-question", id=f"h-{turn}")


RELAY_TURNS = 10


def resume_fixture_tree(saver: BaseCheckpointSaver[Any]) -> dict[str, Any]:
    """Finish every waiting thread of a fixture tree; the final state of each thread.

    The fan-out's "ran" list shows which tasks ran again: only "bad" should, because the
    writes of "a" and "c" were saved before it failed.
    """
    out: dict[str, Any] = {}
    out["ask"] = ask_graph(saver).invoke(Command(resume="Ada"), cfg("ask"))
    out["sub"] = sub_graph(saver).invoke(Command(resume=True), cfg("sub"))
    ran: list[str] = []
    out["fan"] = {**fan_graph(saver, fail=False, ran=ran).invoke(None, cfg("fan")), "ran": ran}
    chat = chat_graph(saver)
    out["chat"] = chat.invoke({"messages": [HumanMessage(content="still there?")]}, cfg("chat"))
    out["big"] = big_graph(saver).get_state(cfg("big")).values
    out["fork"] = chain_graph(saver).get_state(cfg("fork")).values
    out["delta"] = delta_graph(saver, stop=9).invoke({"n": 7}, cfg("delta"))
    return out


def normalised(states: dict[str, Any]) -> dict[str, Any]:
    """resume_fixture_tree's states with messages as (type, content): message ids are random per run."""
    out = dict(states)
    out["chat"] = [(m.type, m.content) for m in states["chat"]["messages"]]
    return out


class Recorder(InMemorySaver):
    """InMemorySaver that keeps every put and put_writes LangGraph made, to make again
    (their configs cut to the ids a saver reads)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        self.calls.append(("put", copy.deepcopy((ids_of(config), checkpoint, metadata, new_versions))))
        return super().put(config, checkpoint, metadata, new_versions)

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        self.calls.append(("put_writes", copy.deepcopy((ids_of(config), writes, task_id, task_path))))
        super().put_writes(config, writes, task_id, task_path)


def ids_of(config: Any) -> dict[str, Any]:
    """A config's thread, namespace and checkpoint ids, nothing else."""
    conf = config["configurable"]
    return {
        "configurable": {k: conf[k] for k in ("thread_id", "checkpoint_ns", "checkpoint_id") if k in conf}
    }


def time_travel(saver: BaseCheckpointSaver[Any]) -> Any:
    """Time travel as LangGraph's docs show it, on thread "fork": a run of ``chain_graph``, a
    replay from a past checkpoint, an ``update_state`` of another; the state that continues."""
    chain = chain_graph(saver)
    chain.invoke({"log": []}, cfg("fork"))
    history = list(chain.get_state_history(cfg("fork")))
    chain.invoke(None, history[2].config)
    chain.update_state(history[3].config, {"log": ["patched"]})
    return chain.get_state(cfg("fork")).values


def run_switching(*targets: Callable[[], Any]) -> None:
    """Run ``targets`` in threads of their own until each returns, the interpreter switching
    between threads after any bytecode (as a loaded server gives): races show in a few runs."""
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        workers = [threading.Thread(target=target) for target in targets]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    finally:
        sys.setswitchinterval(switch)

"""RepoSaver against InMemorySaver, the reference, on random sequences of graph operations.

Each seed drives the same sequence through two copies of one graph, one per saver:
invoke, resume an interrupt, ``update_state`` of the latest and of an older checkpoint
(as each node, as input, as END), ``__copy__`` forks with and without updates, running
a fork on, and new input. The graph has a ``Send`` fan-out, an interrupt, a subgraph
with an interrupt of its own, messages and a DeltaChannel. After every operation the
result (or the exception), ``get_state(subgraphs=True)`` and the whole
``get_state_history`` (tasks, their results and interrupts included) must be the same.

Checkpoint, task and interrupt ids are made from time and checkpoint ids, so they differ
between the two runs; every id is replaced by the order in which it first appears, which
is the same in both when the savers agree. A failure names the seed and the operation,
so ``pytest -k "seed_3"`` replays it. ``LANGGRAPH_REPO_LONG=1`` runs many more seeds.
"""

from __future__ import annotations

import asyncio
import dataclasses
import operator
import random
import re
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.channels import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, Interrupt, Send, StateUpdate, interrupt
from typing_extensions import TypedDict

from graphs import cfg, extend, line_graph
from helpers import LONG
from langgraph_checkpoint_repo import RepoSaver

SYNC_SEEDS = range(40) if LONG else range(5)  # five: the fewest that make every kind and node
ASYNC_SEEDS = range(100, 115) if LONG else range(100, 102)
OPS_PER_SEED = 60 if LONG else 30
NODES = ("a", "work", "ask", "tail", "sub", "__start__")
OPERATIONS = ("input", "resume", "update_latest", "update_older", "copy", "copy_update", "run_fork", "end")


class SubState(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    ask: bool


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    messages: Annotated[list[AnyMessage], add_messages]
    items: Annotated[list[str], DeltaChannel(extend, snapshot_frequency=3)]
    count: int
    note: str
    ask: bool
    fan: int
    sub: bool


def build_graph(saver: BaseCheckpointSaver[Any]) -> Any:
    def s1(state: SubState) -> dict[str, Any]:
        return {"log": ["s1"]}

    def s2(state: SubState) -> dict[str, Any]:
        if state.get("ask"):
            return {"log": [f"s2:{interrupt('inner ok?')}"]}
        return {"log": ["s2"]}

    inner = line_graph(SubState, None, s1=s1, s2=s2)

    def a(state: State) -> dict[str, Any]:
        count = state.get("count", 0) + 1
        mark = f"{count}.{len(state.get('log', []))}"
        return {
            "count": count,
            "note": f"a{mark}",
            "log": ["a"],
            "items": [f"i{mark}"],
            "messages": [AIMessage(content=f"a says {mark}", id=f"ai-{mark}")],
        }

    def route(state: State) -> list[Any]:
        sends: list[Any] = [Send("work", {"item": i}) for i in range(state.get("fan", 0))]
        return [*sends, "ask" if state.get("ask") else "tail"]

    def work(arg: dict[str, Any]) -> dict[str, Any]:
        return {"log": [f"w{arg['item']}"]}

    def ask(state: State) -> dict[str, Any]:
        return {"log": [f"ask:{interrupt({'question': 'ok?', 'count': state.get('count')})}"]}

    def after(state: State) -> str:
        return "sub" if state.get("sub") else END

    builder = StateGraph(State)
    builder.add_node("a", a)
    builder.add_node("work", work)
    builder.add_node("ask", ask)
    builder.add_node("tail", lambda s: {"log": ["tail"]})
    builder.add_node("sub", inner)
    builder.add_edge(START, "a")
    builder.add_conditional_edges("a", route, ["work", "ask", "tail"])
    builder.add_conditional_edges("ask", after, ["sub", END])
    builder.add_conditional_edges("tail", after, ["sub", END])
    builder.add_edge("work", END)
    builder.add_edge("sub", END)
    return builder.compile(checkpointer=saver)


_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\b[0-9a-f]{32}\b")


class Canon:
    """Plain data with every id replaced by its order of first appearance."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}

    def text(self, s: str) -> str:
        return _ID.sub(lambda m: self.ids.setdefault(m.group(0), f"<id{len(self.ids)}>"), s)

    def __call__(self, obj: Any) -> Any:
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, BaseMessage):
            return self({"$message": type(obj).__name__, **obj.model_dump()})
        if isinstance(obj, Interrupt):
            return {"$interrupt": self(obj.value), "id": self.text(obj.id)}
        if isinstance(obj, BaseException):
            return {"$error": type(obj).__name__, "message": self.text(str(obj))}
        if hasattr(obj, "_asdict"):  # StateSnapshot, PregelTask
            fields = {k: v for k, v in obj._asdict().items() if k != "created_at"}
            return {"$" + type(obj).__name__: self(fields)}
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            return self({f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)})
        if isinstance(obj, dict):  # the saver object a subgraph's config carries is not state
            return {self.text(str(k)): self(v) for k, v in obj.items() if k != "__pregel_checkpointer"}
        if isinstance(obj, (list, tuple)):
            return [self(v) for v in obj]
        return obj


@dataclasses.dataclass
class Op:
    kind: str
    node: str
    pick: float  # which older checkpoint, as a fraction of the history
    with_values: bool
    k: int

    def describe(self) -> str:
        return f"#{self.k} {self.kind} as_node={self.node} pick={self.pick:.2f} values={self.with_values}"


def make_ops(seed: int, n: int) -> list[Op]:
    rng = random.Random(seed)
    return [
        Op(rng.choice(OPERATIONS), rng.choice(NODES), rng.random(), rng.random() < 0.7, k) for k in range(n)
    ]


def _input(op: Op) -> dict[str, Any]:
    rng = random.Random(op.k)
    return {
        "log": [f"in{op.k}"],
        "messages": [HumanMessage(content=f"human {op.k}", id=f"h{op.k}")],
        "items": [f"x{op.k}"],
        "ask": rng.random() < 0.4,
        "fan": rng.randint(0, 2),
        "sub": rng.random() < 0.4,
    }


def _update(op: Op) -> dict[str, Any] | None:
    if not op.with_values:
        return None
    if op.node == "__start__":
        return _input(op)
    return {"note": f"u{op.k}", "log": [f"u{op.k}"], "items": [f"u{op.k}"]}


class Driver:
    """Runs one operation sequence on one graph, sync or async, and records what it saw."""

    def __init__(self, graph: Any, thread_id: str, use_async: bool) -> None:
        self.graph = graph
        self.cfg: RunnableConfig = cfg(thread_id)
        self.use_async = use_async
        self.fork: RunnableConfig | None = None
        self.seen: list[Any] | None = None  # the history ``observe`` read after the last operation

    async def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if not self.use_async:
            out = getattr(self.graph, name)(*args, **kwargs)
            return list(out) if name == "get_state_history" else out
        if name == "get_state_history":
            return [s async for s in self.graph.aget_state_history(*args, **kwargs)]
        return await getattr(self.graph, "a" + name)(*args, **kwargs)

    async def apply(self, op: Op) -> Any:
        """The operation's outcome: what it returned, or the exception it raised."""
        try:
            return await self._apply(op)
        except Exception as exc:  # both savers must fail the same way
            return exc

    async def _apply(self, op: Op) -> Any:
        # the history as the last observe read it (nothing ran since), or read now before the first
        history = self.seen if self.seen is not None else await self.call("get_state_history", self.cfg)
        self.seen = None
        older = history[min(int(op.pick * len(history)), len(history) - 1)] if history else None
        if op.kind == "input" or not history:
            return await self.call("invoke", _input(op), self.cfg)
        if op.kind == "resume":
            state = await self.call("get_state", self.cfg)
            if not state.interrupts:
                return "no interrupt"
            return await self.call("invoke", Command(resume=f"r{op.k}"), self.cfg)
        if op.kind == "update_latest":
            return await self.call("update_state", self.cfg, _update(op), as_node=op.node)
        if op.kind == "update_older":
            self.fork = await self.call("update_state", older.config, _update(op), as_node=op.node)
            return self.fork
        if op.kind == "copy":
            self.fork = await self.call("update_state", older.config, None, as_node="__copy__")
            return self.fork
        if op.kind == "copy_update":
            update = [StateUpdate(values=_update(op), as_node=op.node)]
            self.fork = await self.call("update_state", older.config, update, as_node="__copy__")
            return self.fork
        if op.kind == "run_fork":
            target = self.fork or older.config
            self.fork = None
            return await self.call("invoke", None, target)
        assert op.kind == "end"
        return await self.call("update_state", self.cfg, None, as_node=END)

    async def observe(self) -> dict[str, Any]:
        state = await self.call("get_state", self.cfg, subgraphs=True)
        self.seen = await self.call("get_state_history", self.cfg)
        return {"state": state, "history": self.seen}


def _first_difference(a: Any, b: Any, path: str = "") -> str:
    if type(a) is not type(b):
        return f"{path or '/'}: {a!r} != {b!r}"
    if isinstance(a, dict):
        for key in sorted(set(a) | set(b), key=str):
            if key not in a or key not in b:
                return f"{path}/{key}: only in {'reference' if key in a else 'RepoSaver'}"
            if a[key] != b[key]:
                return _first_difference(a[key], b[key], f"{path}/{key}")
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return _first_difference(x, y, f"{path}/{i}")
    return f"{path or '/'}: {a!r} != {b!r}"


async def run_differential(seed: int, root: Path, use_async: bool, n_ops: int = OPS_PER_SEED) -> int:
    """Drive both savers through one seed's operations; the number of operations compared."""
    reference = Driver(build_graph(InMemorySaver()), f"seed-{seed}", use_async)
    repo = Driver(build_graph(RepoSaver(root, durable=False)), f"seed-{seed}", use_async)
    canon_ref, canon_repo = Canon(), Canon()
    compared = 0
    for op in make_ops(seed, n_ops):
        want = canon_ref({"outcome": await reference.apply(op), **await reference.observe()})
        got = canon_repo({"outcome": await repo.apply(op), **await repo.observe()})
        if got != want:
            raise AssertionError(
                f"seed {seed} ({'async' if use_async else 'sync'}), operation {op.describe()}: "
                f"RepoSaver differs from InMemorySaver at {_first_difference(want, got)}"
            )
        compared += 1
    return compared


@pytest.mark.parametrize("seed", SYNC_SEEDS, ids=lambda s: f"seed_{s}")
def test_random_operations_match_inmemorysaver_sync(seed: int, tmp_path: Path) -> None:
    assert asyncio.run(run_differential(seed, tmp_path, use_async=False)) == OPS_PER_SEED


@pytest.mark.parametrize("seed", ASYNC_SEEDS, ids=lambda s: f"seed_{s}")
async def test_random_operations_match_inmemorysaver_async(seed: int, tmp_path: Path) -> None:
    assert await run_differential(seed, tmp_path, use_async=True) == OPS_PER_SEED


def test_operation_mix_covers_every_kind_and_node() -> None:
    """The default seeds exercise every operation and every as_node, forks included."""
    ops = [op for seed in SYNC_SEEDS for op in make_ops(seed, OPS_PER_SEED)]
    assert {op.kind for op in ops} == set(OPERATIONS)
    assert {op.node for op in ops if op.kind == "copy_update"} == set(NODES)
    assert len(ops) + len(ASYNC_SEEDS) * OPS_PER_SEED >= 200

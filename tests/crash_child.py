"""The process tests/test_crash.py kills: a real graph run through RepoSaver(durable=True).

Run as ``python tests/crash_child.py ROOT THREAD TURNS LOG READY``, or ``main([ROOT, ...])``
in a child forked by tests/forkserver.py (test_crash.py does that). It resumes whatever
the thread holds (an unfinished run is finished first), then runs the remaining turns.
Every checkpoint whose ``put`` has returned, and every ``put_writes`` that has returned,
is appended to LOG and fsynced before the saver returns to LangGraph, so the parent knows
exactly what the saver had promised when the process was killed. READY is created once
imports are done and the graph is compiled, so kills land while the graph is running.

The graph is deterministic: its final state is a pure function of TURNS (messages carry
fixed ids; every value is derived from the turn number), so an interrupted and resumed
thread must end exactly like one that was never interrupted. Each turn has four steps
(input, plan, a Send fan-out of three tasks, reply); the plan's ``blob`` and the first
task's ``big`` are over the saver's 8 KiB ``large_value_bytes``, so they go to ``large/``
files (the first from a checkpoint, the second from a writes file).
"""

from __future__ import annotations

import hashlib
import json
import operator
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Send
from typing_extensions import TypedDict

from graphs import cfg  # tests/ is on sys.path: this script's own folder, or pytest's
from langgraph_checkpoint_repo import RepoSaver

PARTS = 3
BIG_BYTES = 10 * 1024  # over RepoSaver's default large_value_bytes (8 KiB)


class CrashState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    turn: int
    blob: str
    big: str
    results: Annotated[list[str], operator.add]
    done: Annotated[list[int], operator.add]


def filler(tag: str, size: int = BIG_BYTES) -> str:
    """``size`` characters that depend only on ``tag`` (and do not compress to nothing)."""
    out: list[str] = []
    block = hashlib.sha256(tag.encode()).hexdigest()
    while len(out) * 64 < size:
        out.append(block)
        block = hashlib.sha256(block.encode()).hexdigest()
    return "".join(out)[:size]


def _plan(state: CrashState) -> dict[str, Any]:
    turn = state["turn"]
    return {"blob": filler(f"blob-{turn}")}


def _fan_out(state: CrashState) -> list[Send]:
    return [Send("work", {"turn": state["turn"], "part": p}) for p in range(PARTS)]


def _work(arg: dict[str, int]) -> dict[str, Any]:
    turn, part = arg["turn"], arg["part"]
    out: dict[str, Any] = {"results": [f"t{turn}p{part}:{filler(f'r-{turn}-{part}', 48)}"]}
    if part == 0:
        out["big"] = filler(f"big-{turn}")
    return out


def _reply(state: CrashState) -> dict[str, Any]:
    turn = state["turn"]
    mine = [r for r in state["results"] if r.startswith(f"t{turn}p")]
    digest = hashlib.sha256("".join([state["blob"], state["big"], *mine]).encode()).hexdigest()
    return {
        "messages": [AIMessage(id=f"a{turn}", content=f"turn {turn}: {len(mine)} parts, {digest}")],
        "done": [turn],
    }


def build_graph(saver: RepoSaver) -> CompiledStateGraph[Any, Any, Any, Any]:
    builder = StateGraph(CrashState)
    builder.add_node("plan", _plan)
    builder.add_node("work", _work)
    builder.add_node("reply", _reply)
    builder.add_edge(START, "plan")
    builder.add_conditional_edges("plan", _fan_out, ["work"])
    builder.add_edge("work", "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=saver)


def turn_input(turn: int) -> dict[str, Any]:
    return {"messages": [HumanMessage(id=f"h{turn}", content=f"turn {turn}")], "turn": turn}


def run_thread(graph: CompiledStateGraph[Any, Any, Any, Any], thread_id: str, turns: int) -> None:
    """Finish an interrupted run if there is one, then run the turns not yet done.

    ``durability="sync"``: each checkpoint is saved before the next step starts, so the
    writes of a step always belong to a checkpoint that is already on disk.
    """
    config = cfg(thread_id)
    # Not get_state: when every task of the last step has its writes saved, get_state applies
    # them and reports next=() although the step's checkpoint was never written; new input
    # on that checkpoint then drops those writes (a turn lost). The newest entry of the
    # history shows the checkpoint as stored, with the step still to finish.
    state = next(iter(graph.get_state_history(config, limit=1)), None) or graph.get_state(config)
    note = getattr(graph.checkpointer, "note", None)
    if note is not None:  # for the parent's diagnostics: where this life started
        note(
            {
                "start": (state.config or {}).get("configurable", {}).get("checkpoint_id"),
                "next": list(state.next),
                "done": len(state.values.get("done", [])),
            }
        )
    if state.next:
        graph.invoke(None, config, durability="sync")
        state = graph.get_state(config)
        if note is not None:
            note(
                {
                    "resumed": state.config["configurable"]["checkpoint_id"],
                    "next": list(state.next),
                    "done": len(state.values.get("done", [])),
                }
            )
    done = list(state.values.get("done", []))
    assert done == list(range(len(done))), done
    for turn in range(len(done), turns):
        graph.invoke(turn_input(turn), config, durability="sync")


class LoggingSaver(RepoSaver):
    """RepoSaver that records, durably, every put and put_writes that has returned."""

    def __init__(self, root: Path, log: Path) -> None:
        super().__init__(root, durable=True)
        self._log_fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def note(self, entry: dict[str, Any]) -> None:
        self._record(entry)

    def _record(self, entry: dict[str, Any]) -> None:
        os.write(self._log_fd, json.dumps(entry).encode() + b"\n")
        os.fsync(self._log_fd)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        out = super().put(config, checkpoint, metadata, new_versions)
        self._record({"put": checkpoint["id"], "ns": out["configurable"]["checkpoint_ns"]})
        return out

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        super().put_writes(config, writes, task_id, task_path)
        conf = config["configurable"]
        self._record(
            {"writes": conf["checkpoint_id"], "ns": conf.get("checkpoint_ns", ""), "task_id": task_id}
        )


def main(argv: list[str]) -> int:
    root, thread_id, turns, log, ready = argv
    saver = LoggingSaver(Path(root), Path(log))
    graph = build_graph(saver)
    Path(ready).touch()
    run_thread(graph, thread_id, int(turns))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

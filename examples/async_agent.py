"""The async path, and a human-in-the-loop interrupt that waits in the files across a restart.

Run it: ``python examples/async_agent.py`` (``--root DIR`` puts the state in DIR instead of
``.langgraph/`` at the top of the git work tree). The first process streams the graph with
``astream`` until ``interrupt()`` asks a person to approve a refund, and stops there: the
question now waits in the files. A second, fresh Python process resumes the thread with
``Command(resume=...)`` through ``ainvoke`` and prints the final state and the history length.

``RepoSaver`` is both the sync and the async checkpointer: ``ainvoke``/``astream`` use its
async methods, which run the file work in a worker thread so the event loop is never blocked.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, interrupt

from langgraph_checkpoint_repo import RepoSaver

THREAD: RunnableConfig = {"configurable": {"thread_id": "async-demo"}}
DECISION = "approved by Ada"


class Refund(TypedDict, total=False):
    order: str
    amount: int
    decision: str
    status: str


async def draft(state: Refund) -> Refund:
    """Stands for the work before the approval (an agent reading the order, say)."""
    await asyncio.sleep(0)
    return {"amount": 42}


async def approve(state: Refund) -> Refund:
    """Pauses the run for a person: the value given to interrupt() is what they are shown."""
    decision = interrupt({"question": f"Refund ${state['amount']} for order {state['order']}?"})
    return {"decision": str(decision)}


async def finish(state: Refund) -> Refund:
    return {"status": f"refund of ${state['amount']} for {state['order']} {state['decision']}"}


def build(root: Path | None) -> CompiledStateGraph[Refund, None, Refund, Refund]:
    builder = StateGraph(Refund)
    builder.add_node("draft", draft)
    builder.add_node("approve", approve)
    builder.add_node("finish", finish)
    builder.add_edge(START, "draft")
    builder.add_edge("draft", "approve")
    builder.add_edge("approve", "finish")
    builder.add_edge("finish", END)
    return builder.compile(checkpointer=RepoSaver(root))  # None: .langgraph/ of the git work tree


async def first(graph: CompiledStateGraph[Refund, None, Refund, Refund]) -> None:
    """Stream until the interrupt; what is waiting is read back from the saver."""
    async for update in graph.astream({"order": "A-1001"}, THREAD, stream_mode="updates"):
        print(f"  update: {update}")
    state = await graph.aget_state(THREAD)
    (waiting,) = [i.value for task in state.tasks for i in task.interrupts]
    print(f"Paused before {state.next}: interrupt waiting for a person: {waiting}")


async def resume(graph: CompiledStateGraph[Refund, None, Refund, Refund]) -> None:
    """The second process: the interrupt comes from the files; the answer finishes the run."""
    waiting = await graph.aget_state(THREAD)
    print(f"Second process read the thread from the files: next {waiting.next}")
    final: dict[str, Any] = await graph.ainvoke(Command(resume=DECISION), THREAD)
    print(f"Resumed with Command(resume={DECISION!r}). Final state: {final}")
    history = [snap async for snap in graph.aget_state_history(THREAD)]
    print(f"aget_state_history: {len(history)} checkpoints")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--root", type=Path, help="folder of the state (default: .langgraph/)")
    parser.add_argument("--resume", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    graph = build(args.root)
    if args.resume:
        asyncio.run(resume(graph))
        return
    asyncio.run(first(graph))
    root = graph.checkpointer.root  # type: ignore[union-attr]
    print("First run stopped at the interrupt; the question waits in the files.")
    print("Starting a new process to answer it...\n", flush=True)  # before the child's output
    subprocess.run([sys.executable, __file__, "--resume", "--root", str(root)], check=True)


if __name__ == "__main__":
    main()

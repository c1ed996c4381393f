"""Quickstart: a chat graph whose state lives in .langgraph/ as reviewable JSON.

Run it: ``python examples/quickstart.py``. The first turn runs here; the second
turn runs in a fresh Python process that knows nothing but the files, resumes
the thread and prints the whole conversation; then the files are listed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph

from langgraph_checkpoint_repo import RepoSaver

THREAD: RunnableConfig = {"configurable": {"thread_id": "quickstart"}}


def reply(state: MessagesState) -> dict[str, list[BaseMessage]]:
    """A stand-in for a model call: answers from what the thread remembers."""
    said = [m.content for m in state["messages"] if m.type == "human"]
    text = f"You said {said[-1]!r}. I remember {len(said)} message(s) from you: {said}"
    return {"messages": [AIMessage(text)]}


def build() -> CompiledStateGraph:  # type: ignore[type-arg]
    builder = StateGraph(MessagesState)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=RepoSaver())  # .langgraph/ at the top of the git work tree


def main() -> None:
    graph = build()
    if "--resume" in sys.argv:
        graph.invoke({"messages": [("user", "And what did I say first?")]}, THREAD)
        print("Second process resumed the thread. Conversation so far:")
        for message in graph.get_state(THREAD).values["messages"]:
            print(f"  {message.type:>5}: {message.content}")
        return
    graph.invoke({"messages": [("user", "Hello! My name is Ada.")]}, THREAD)
    print("First turn saved. Starting a new process to continue the thread...\n", flush=True)
    subprocess.run([sys.executable, __file__, "--resume"], check=True)
    root = graph.checkpointer.root  # type: ignore[union-attr]
    files = sorted(p for p in Path(root).rglob("*.json") if ".cache" not in p.parts)
    print(f"\nFiles under {root} ({len(files)}):")
    for path in files:
        print(f"  {path.relative_to(root)}  ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    main()

"""Long-term memory in files: an agent whose tool remembers a user's preference in RepoStore.

Run it: ``pip install -e ".[examples]"`` then ``python examples/memory.py`` (``--root DIR`` puts
the state in DIR instead of ``.langgraph/`` at the top of the git work tree). In one thread the
user says "remember theme is dark": the agent's tool writes the preference to the store, one
file. A fresh Python process then starts another thread, asks what the agent knows, and the
tool reads the preference back from that file. The file is printed at the end.

The chat model is a stand-in (deterministic, offline): swap it for a real one
(``init_chat_model(...)``) and the tools and the store stay as they are.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, tool

from langgraph_checkpoint_repo import RepoSaver, RepoStore
from langgraph_checkpoint_repo.core.layout import find_default_root

USER = "ada"
SECOND = "--second-process"


def preferences(runtime: ToolRuntime) -> tuple[str, ...]:
    user = str((runtime.config.get("configurable") or {}).get("user_id") or "anonymous")
    return ("users", user, "preferences")


@tool
def remember_preference(name: str, value: str, runtime: ToolRuntime) -> str:
    """Remember one preference of the user, for every later conversation."""
    assert runtime.store is not None
    runtime.store.put(preferences(runtime), name, {"value": value})
    return f"Noted: {name} = {value}."


@tool
def recall_preferences(runtime: ToolRuntime) -> str:
    """What the user asked to be remembered."""
    assert runtime.store is not None
    found = sorted((i.key, i.value["value"]) for i in runtime.store.search(preferences(runtime), limit=100))
    return "; ".join(f"{name} = {value}" for name, value in found) or "nothing yet"


class StandInModel(BaseChatModel):
    """A STAND-IN for a real chat model: "remember NAME is VALUE" calls ``remember_preference``,
    anything else ``recall_preferences``; after the tool it answers with the tool's result."""

    @property
    def _llm_type(self) -> str:
        return "stand-in"

    def bind_tools(
        self, tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool], **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self.bind(**kwargs)

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        turn = sum(isinstance(m, HumanMessage) for m in messages)
        last = messages[-1]
        if isinstance(last, ToolMessage):
            reply = AIMessage(str(last.content), id=f"answer-{turn}")
        else:
            words = str(last.content).split()
            if len(words) >= 4 and words[0].lower() == "remember" and words[2] == "is":
                call = {
                    "name": "remember_preference",
                    "args": {"name": words[1], "value": " ".join(words[3:])},
                }
            else:
                call = {"name": "recall_preferences", "args": {}}
            reply = AIMessage("", tool_calls=[{**call, "id": f"call-{turn}"}], id=f"ask-{turn}")
        return ChatResult(generations=[ChatGeneration(message=reply)])


def agent(root: Path) -> Any:
    """The agent, its threads in RepoSaver's files and its memory in RepoStore's, one root."""
    return create_agent(
        StandInModel(),
        tools=[remember_preference, recall_preferences],
        checkpointer=RepoSaver(root),
        store=RepoStore(root),
    )


def ask(root: Path, thread: str, text: str) -> str:
    config = {"configurable": {"thread_id": thread, "user_id": USER}}
    result = agent(root).invoke({"messages": [HumanMessage(text)]}, config)  # type: ignore[arg-type]
    return str(result["messages"][-1].content)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--root", type=Path, default=None, help="state folder (default: .langgraph/ at the git top)"
    )
    parser.add_argument(SECOND, action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    root = (args.root or find_default_root()).absolute()
    if args.second_process:
        print("-- a fresh process, another thread --")
        print("user: what do you know about me?")
        print(f"agent: {ask(root, 'memory-2', 'what do you know about me?')}")
        return 0
    print("user: remember theme is dark")
    print(f"agent: {ask(root, 'memory-1', 'remember theme is dark')}")
    subprocess.run([sys.executable, __file__, "--root", str(root), SECOND], check=True)
    path = RepoStore(root).path(("users", USER, "preferences"), "theme")
    print(f"-- {path.relative_to(root.parent)} --")
    print(path.read_text(encoding="utf-8"), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""A prebuilt tool-calling agent (``langchain.agents.create_agent``) whose thread lives in files.

Run it: ``pip install -e ".[examples]"`` then ``python examples/agent.py`` (``--root DIR``
puts the state in DIR instead of ``.langgraph/`` at the top of the git work tree). The first
user turn runs here: the model calls the weather tool and answers from its result. The second
turn runs in a fresh Python process that knows nothing but the files: it resumes the thread,
prints the whole conversation (tool calls and tool results included) and the checkpoint
history; then the files are listed.

The chat model is a fake so the example needs no API key or network: swap ``FakeWeatherModel()``
for a real one (``ChatOpenAI(model="gpt-4o-mini")``, ``init_chat_model(...)``) and nothing else
changes.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool, tool

from langgraph_checkpoint_repo import RepoSaver

THREAD_ID = "agent-demo"
THREAD: RunnableConfig = {"configurable": {"thread_id": THREAD_ID}}
WEATHER = {"Paris": "sunny, 21 C", "Oslo": "light snow, -3 C"}


@tool
def get_weather(city: str) -> str:
    """Look up the current weather in a city."""
    return f"{city}: {WEATHER.get(city, 'no report')}"


class FakeWeatherModel(BaseChatModel):
    """A STAND-IN for a real chat model such as ``ChatOpenAI``: deterministic, offline.

    After a user message it calls ``get_weather`` for the last word of the message; after the
    tool's result it answers from it. That is the loop a real model drives in the agent.
    """

    @property
    def _llm_type(self) -> str:
        return "fake-weather"

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """create_agent binds its tools; this model knows its one tool already."""
        return self.bind(**kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            reply = AIMessage(content=f"The weather report says {last.content}.")
        else:
            turn = sum(isinstance(m, HumanMessage) for m in messages)
            city = str(last.content).rstrip("?!. ").split()[-1]
            call = {"name": get_weather.name, "args": {"city": city}, "id": f"call-{turn}"}
            reply = AIMessage(content="", tool_calls=[call])
        return ChatResult(generations=[ChatGeneration(message=reply)])


def build(root: Path | None) -> Any:
    """The agent people build, with the file saver as its checkpointer."""
    saver = RepoSaver(root)  # None: .langgraph/ at the top of the git work tree
    return create_agent(FakeWeatherModel(), [get_weather], checkpointer=saver)


def show(message: BaseMessage) -> str:
    """One line per message; a tool call shows its name and arguments."""
    if isinstance(message, AIMessage) and message.tool_calls:
        calls = ", ".join(f"{c['name']}({c['args']})" for c in message.tool_calls)
        return f"{'ai':>5}: calls {calls}"
    if isinstance(message, ToolMessage):
        return f"{'tool':>5}: {message.name} returned {message.content!r}"
    return f"{message.type:>5}: {message.content}"


def resume(agent: Any) -> None:
    """The second process: a new turn on the thread the files hold, then what they hold."""
    agent.invoke({"messages": [HumanMessage("And what is it like in Oslo?")]}, THREAD)
    print("Second process resumed the thread from the files. Conversation so far:")
    for message in agent.get_state(THREAD).values["messages"]:
        print("  " + show(message))
    print("\nCheckpoint history (newest first):")
    for snap in agent.get_state_history(THREAD):
        meta = snap.metadata or {}
        nxt = ",".join(snap.next) or "-"
        print(
            f"  step {meta.get('step')!s:>2}  {meta.get('source')!s:<5}  next {nxt:<9}  "
            f"{len(snap.values.get('messages', []))} messages"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--root", type=Path, help="folder of the state (default: .langgraph/)")
    parser.add_argument("--resume", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    agent = build(args.root)
    if args.resume:
        resume(agent)
        return
    agent.invoke({"messages": [HumanMessage("What is the weather in Paris?")]}, THREAD)
    root = agent.checkpointer.root
    print("First turn saved (the model called get_weather, then answered).")
    print("Starting a new process to continue the thread...\n", flush=True)  # before the child prints
    subprocess.run([sys.executable, __file__, "--resume", "--root", str(root)], check=True)
    folders = Counter(p.parent.name for p in Path(root).rglob("*.json") if ".cache" not in p.parts)
    print(f"\nFiles under {root}: " + ", ".join(f"{n} in {name}/" for name, n in sorted(folders.items())))
    print(f"Read them with: langgraph-repo --root {root} history {THREAD_ID}")


if __name__ == "__main__":
    main()

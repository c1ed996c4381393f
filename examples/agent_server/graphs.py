"""Two graphs for ``langgraph dev``, their state kept by RepoSaver in ``.langgraph/`` here.

Run from this folder: ``langgraph dev`` (after ``pip install -e "../..[server]"``). The
server supplies the checkpointer named in ``langgraph.json``, so neither graph compiles one.
``langgraph.json`` names the graphs as a module (``graphs:approval``), not as a file
(``./graphs.py:approval``): the server imports a file under a made-up module name
(``__graphs``), and that name would be stored as the name of ``Request`` in the files.
``pyproject.toml`` here lets the server's own reads (and ``langgraph-repo``) construct the
graphs' types (docs/types.md).

* ``approval``: drafts a reply to a ``Request`` (a type of this app's own), then stops at
  ``interrupt()`` until a person resumes it.
* ``agent``: ``langchain.agents.create_agent`` with one tool and a stand-in chat model that
  calls the tool, then answers from its result (swap in a real model, e.g. ``ChatOpenAI``).
* ``memory``: an agent whose tools remember a user's preferences in the server's store
  (RepoStore, named in ``langgraph.json``): ``store/users/<user_id>/preferences/<name>.json``,
  one reviewable file per preference, read back in any later thread.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, tool
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from typing_extensions import TypedDict


@dataclass
class Request:
    """What the customer asked for, as the app models it."""

    order: str
    reason: str


class Draft(TypedDict, total=False):
    ask: str
    request: Request
    draft: str
    decision: str


def write_draft(state: Draft) -> Draft:
    words = state["ask"].split()
    order = next((w for w in words if w.isdigit()), "unknown")
    request = Request(order=order, reason=words[0] if words else "")
    return {"request": request, "draft": f"Dear customer, about order {order}: we are on it."}


def ask_a_person(state: Draft) -> Draft:
    """Stops the run; the value given to ``Command(resume=...)`` comes back here."""
    return {"decision": str(interrupt({"question": "Send this draft?", "draft": state["draft"]}))}


_builder = StateGraph(Draft)
_builder.add_node("write_draft", write_draft)
_builder.add_node("ask_a_person", ask_a_person)
_builder.add_edge(START, "write_draft")
_builder.add_edge("write_draft", "ask_a_person")
_builder.add_edge("ask_a_person", END)
approval = _builder.compile()


@tool
def order_status(order_id: str) -> str:
    """Where an order is, by its id."""
    return f"Order {order_id} shipped yesterday and arrives on Friday."


class StandInModel(BaseChatModel):
    """A deterministic chat model: a tool call for each question, then an answer from the result."""

    @property
    def _llm_type(self) -> str:
        return "stand-in"

    def bind_tools(
        self, tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool], **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self.bind(**kwargs)

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        asked = sum(isinstance(m, HumanMessage) for m in messages)
        last = messages[-1]
        if isinstance(last, ToolMessage):
            reply = AIMessage(f"Here is what I found: {last.content}", id=f"answer-{asked}")
        else:
            words = str(last.content).split()
            order = next((w.strip("?.!,") for w in words if w[:1].isdigit()), "unknown")
            call = {"name": "order_status", "args": {"order_id": order}, "id": f"call-{asked}"}
            reply = AIMessage("", tool_calls=[call], id=f"ask-{asked}")
        return ChatResult(generations=[ChatGeneration(message=reply)])


agent = create_agent(StandInModel(), tools=[order_status])


def _preferences(runtime: ToolRuntime) -> tuple[str, ...]:
    """The namespace of this user's preferences: the run's ``configurable.user_id``."""
    user = str((runtime.config.get("configurable") or {}).get("user_id") or "anonymous")
    return ("users", user, "preferences")


@tool
def remember_preference(name: str, value: str, runtime: ToolRuntime) -> str:
    """Remember one preference of the user (kept across threads)."""
    assert runtime.store is not None
    runtime.store.put(_preferences(runtime), name, {"value": value})
    return f"Noted: {name} = {value}."


@tool
def recall_preferences(runtime: ToolRuntime) -> str:
    """Everything the user asked to be remembered."""
    assert runtime.store is not None
    found = runtime.store.search(_preferences(runtime), limit=100)
    pairs = sorted((i.key, i.value["value"]) for i in found)
    return "; ".join(f"{name} = {value}" for name, value in pairs) or "nothing yet"


class MemoryModel(BaseChatModel):
    """A deterministic chat model for the memory agent: "remember NAME is VALUE" calls
    ``remember_preference``, anything else ``recall_preferences``; then it answers from the result."""

    @property
    def _llm_type(self) -> str:
        return "stand-in-memory"

    def bind_tools(
        self, tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool], **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self.bind(**kwargs)

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        turn = sum(isinstance(m, HumanMessage) for m in messages)
        last = messages[-1]
        if isinstance(last, ToolMessage):
            reply = AIMessage(f"{last.content}", id=f"memory-answer-{turn}")
        else:
            words = str(last.content).split()
            if len(words) >= 4 and words[0].lower() == "remember" and words[2] == "is":
                args = {"name": words[1], "value": " ".join(words[3:])}
                call = {"name": "remember_preference", "args": args}
            else:
                call = {"name": "recall_preferences", "args": {}}
            reply = AIMessage("", tool_calls=[{**call, "id": f"memory-call-{turn}"}], id=f"memory-ask-{turn}")
        return ChatResult(generations=[ChatGeneration(message=reply)])


memory = create_agent(MemoryModel(), tools=[remember_preference, recall_preferences])

"""The support-desk app issue 35 was found on: the review's scenario, with a fake chat model.

A parent graph ``triage`` -> ``agent`` (a ``create_agent`` graph as a subgraph node: every call
of it is a checkpoint namespace of its own) -> ``wrap_up``. The agent's tools: ``lookup_order``;
``check_stock``, which fails (its ToolMessage has ``status="error"``); ``issue_refund``, which
asks a human with ``interrupt()`` before it acts; ``remember``, which writes a memory to the
store (``RepoStore`` in the app). ``triage`` sets the ``category`` channel of the parent state.

The model is deterministic: each user text names what it wants (a refund, stock, a memory,
an order), and the model calls the matching tool once, then answers from its result. Ids
come from the number of user turns, so two savers see the same messages.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.store.base import BaseStore
from langgraph.types import Command, Durability, interrupt

from bench.agent_graphs import FakeToolModel

THREAD = "desk-1"
MEMORY = ("customers", "ada")

#: the user's turns: main holds the first two, the branch of the scenario the next three
TURNS = (
    "Where is my order A-1001?",
    "Is the blue mug in stock?",
    "Please refund order A-1001, it arrived broken: $18.50.",
    "Remember that I prefer email updates.",
    "Where is my order A-1002?",
)


@tool
def lookup_order(order_id: str) -> str:
    """Look up an order's shipping status by its id."""
    return f"Order {order_id}: shipped, arriving in 3 days."


@tool
def check_stock(item: str, runtime: ToolRuntime) -> ToolMessage:
    """Check the warehouse stock of an item (the warehouse API is down in this app)."""
    return ToolMessage(
        content=f"Warehouse API timed out while checking {item!r}.",
        name="check_stock",
        tool_call_id=runtime.tool_call_id or "",
        status="error",
        id=f"tool-{runtime.tool_call_id}",
    )


@tool
def issue_refund(order_id: str, amount: float) -> str:
    """Refund an order, once a human approved it."""
    answer = interrupt({"question": f"Approve a refund of ${amount:.2f} for {order_id}?", "order": order_id})
    if isinstance(answer, dict) and answer.get("approved"):
        return f"Refund of ${amount:.2f} for {order_id} issued."
    return f"Refund for {order_id} declined by the reviewer."


@tool
def remember(fact: str, runtime: ToolRuntime) -> str:
    """Remember a fact about the customer for later conversations."""
    store = runtime.store
    if store is not None:
        store.put(MEMORY, "preferences", {"fact": fact})
    return f"Remembered: {fact}"


TOOLS: tuple[BaseTool, ...] = (lookup_order, check_stock, issue_refund, remember)


def _call(turn: int, text: str) -> dict[str, Any]:
    """The one tool call the model makes for a user's text."""
    order = re.search(r"A-\d+", text)
    if "refund" in text.lower():
        amount = float(re.search(r"\$(\d+(?:\.\d+)?)", text).group(1))  # type: ignore[union-attr]
        name, args = "issue_refund", {"order_id": order.group(0) if order else "?", "amount": amount}
    elif "stock" in text.lower():
        item = re.search(r"the (.+?) in stock", text)
        name, args = "check_stock", {"item": item.group(1) if item else "?"}
    elif "remember" in text.lower():
        name, args = "remember", {"fact": "prefers email updates"}
    else:
        name, args = "lookup_order", {"order_id": order.group(0) if order else "?"}
    return {"name": name, "args": args, "id": f"call-{turn}"}


def reply(messages: Sequence[BaseMessage]) -> AIMessage:
    """A tool call after a user message; an answer after the tool's result."""
    turn = sum(isinstance(m, HumanMessage) for m in messages)
    last = messages[-1] if messages else None
    if isinstance(last, ToolMessage):
        if last.status == "error":
            asked = [c for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
            call = next((c for c in asked if c["id"] == last.tool_call_id), None)
            item = call["args"].get("item", "that") if call else "that"
            text = f"Sorry, I could not check the {item} right now: the warehouse is not answering."
        else:
            text = f"Done: {last.content}"
        return AIMessage(content=text, id=f"ai-answer-{turn}")
    user = next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)
    call = _call(turn, str(user.content) if user is not None else "")
    return AIMessage(content="", tool_calls=[call], id=f"ai-call-{turn}")


class DeskModel(FakeToolModel):
    """The support desk's fake chat model (``reply``)."""

    def respond(self, messages: Sequence[BaseMessage]) -> AIMessage:
        return reply(messages)


class DeskState(MessagesState):
    category: str | None


def build_support_desk(checkpointer: BaseCheckpointSaver[Any] | None, store: BaseStore | None = None) -> Any:
    """triage -> agent (``create_agent`` as a subgraph node) -> wrap_up."""

    def triage(state: DeskState) -> dict[str, Any]:
        text = str(state["messages"][-1].content).lower()
        category = "refund" if "refund" in text else "stock" if "stock" in text else "order"
        if "remember" in text:
            category = "account"
        return {"category": category}

    def wrap_up(state: DeskState) -> dict[str, list[AnyMessage]]:
        turn = sum(isinstance(m, HumanMessage) for m in state["messages"])
        return {"messages": [AIMessage(content="Is there anything else I can help with?", id=f"wrap-{turn}")]}

    agent = create_agent(DeskModel(), list(TOOLS))
    builder = StateGraph(DeskState)
    builder.add_node("triage", triage)
    builder.add_node("agent", agent)
    builder.add_node("wrap_up", wrap_up)
    builder.add_edge(START, "triage")
    builder.add_edge("triage", "agent")
    builder.add_edge("agent", "wrap_up")
    builder.add_edge("wrap_up", END)
    return builder.compile(checkpointer=checkpointer, store=store)


def config(thread: str = THREAD) -> RunnableConfig:
    return {"configurable": {"thread_id": thread}}


def user_turn(
    graph: Any, n: int, thread: str = THREAD, text: str | None = None, durability: Durability | None = None
) -> Any:
    """User turn ``n`` (1-based) of ``TURNS`` (or ``text``); a refund stops at the human's approval.
    ``durability="sync"`` makes the files a turn writes the same on every run (LangGraph's
    default saves a step's checkpoint while the next step runs: where a message is stored
    once then depends on which put comes first)."""
    said = TURNS[n - 1] if text is None else text
    message = HumanMessage(content=said, id=f"user-{n}")
    return graph.invoke({"messages": [message]}, config(thread), durability=durability)


def approve(
    graph: Any, approved: bool = True, thread: str = THREAD, durability: Durability | None = None
) -> Any:
    """The human's answer to the refund's question."""
    return graph.invoke(Command(resume={"approved": approved}), config(thread), durability=durability)

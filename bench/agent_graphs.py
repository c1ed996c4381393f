"""The agents people build, with a fake chat model: for the agents workload and tests/test_agents.py.

A turn is one user message with a unique marker (``turn-7-harbour``), so the copies of that text
a saver writes can be counted with grep. The model is deterministic: what it says and every id
it gives come from the conversation it is shown (the number of user turns), never from a
random source or from state of its own, so the same model object serves every saver alike.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Annotated, Any

from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, InjectedToolCallId, tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, MessagesState, StateGraph

WORDS = ("harbour", "lantern", "meadow", "quartz", "saffron", "timber", "violet", "walnut")


def marker(turn: int) -> str:
    """The unique text of user turn ``turn`` (1-based) that grep counts."""
    return f"turn-{turn}-{WORDS[turn % len(WORDS)]}"


def order_id(turn: int) -> str:
    return f"A-{1000 + turn}"


def user_message(turn: int) -> HumanMessage:
    """User turn ``turn`` (1-based), with a fixed id so two savers see the same message."""
    text = f"Where is my order {order_id(turn)}? It was due last week. [{marker(turn)}]"
    return HumanMessage(content=text, id=f"user-{turn}")


#: the ways a graph is invoked with a user's text, taken in turn: a message, a message dict,
#: a (role, text) tuple (``graph.invoke({"messages": [...]})`` takes all three)
INPUT_FORMS = ("message", "dict", "tuple")


def turn_input(turn: int) -> tuple[str, dict[str, Any]]:
    """(form, graph input) of user turn ``turn``: the forms in turn, the same text in each."""
    form = INPUT_FORMS[(turn - 1) % len(INPUT_FORMS)]
    message = user_message(turn)
    if form == "dict":
        return form, {"messages": [{"role": "user", "content": message.content}]}
    if form == "tuple":
        return form, {"messages": [("user", message.content)]}
    return form, {"messages": [message]}


@tool
def lookup_order(order_id: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> ToolMessage:
    """Look up an order's shipping status by its id."""
    text = f"Order {order_id}: shipped, arriving in {len(order_id) % 5 + 2} days."
    # A ToolMessage with an id of its own: one left without gets a random id from add_messages,
    # which mutates it in place while a background thread may be serialising the same write.
    return ToolMessage(
        content=text, name="lookup_order", tool_call_id=tool_call_id, id=f"tool-{tool_call_id}"
    )


TOOLS: tuple[BaseTool, ...] = (lookup_order,)


class FakeToolModel(BaseChatModel):
    """A chat model whose reply is a pure function of the conversation it is shown
    (``respond``), so the same object serves every saver alike; binding tools changes nothing."""

    def respond(self, messages: Sequence[BaseMessage]) -> AIMessage:
        raise NotImplementedError

    @property
    def _llm_type(self) -> str:
        return type(self).__name__

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self.bind(**kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.respond(messages))])


class ToolCallingFakeModel(FakeToolModel):
    """Answers each user turn with one ``lookup_order`` call, then (after the tool's result) a reply.

    Which turn it is comes from the number of user messages shown, so ids and text depend on
    the input only.
    """

    def respond(self, messages: Sequence[BaseMessage]) -> AIMessage:
        return reply(messages)


def reply(messages: Sequence[BaseMessage]) -> AIMessage:
    """A tool call after a user message; a short answer after the tool's result."""
    turn = sum(isinstance(m, HumanMessage) for m in messages)
    last = messages[-1] if messages else None
    if isinstance(last, ToolMessage):
        return AIMessage(content=f"Good news: {last.content}", id=f"ai-answer-{turn}")
    call = {"name": lookup_order.name, "args": {"order_id": order_id(turn)}, "id": f"call-{turn}"}
    return AIMessage(content="", tool_calls=[call], id=f"ai-call-{turn}")


def build_create_agent(checkpointer: BaseCheckpointSaver[Any]) -> Any:
    """``langchain.agents.create_agent``: the agent LangChain recommends today."""
    return create_agent(ToolCallingFakeModel(), list(TOOLS), checkpointer=checkpointer)


def build_react_agent(checkpointer: BaseCheckpointSaver[Any]) -> Any:
    """``langgraph.prebuilt.create_react_agent``: deprecated, still widely used; it sends each tool
    call a ``Send`` that carries the conversation."""
    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return create_react_agent(ToolCallingFakeModel(), list(TOOLS), checkpointer=checkpointer)


def build_subgraph_graph(checkpointer: BaseCheckpointSaver[Any]) -> Any:
    """A ``MessagesState`` graph whose one node is a compiled subgraph that appends an AI reply:
    every run of the node is a new checkpoint namespace of the thread."""

    def answer(state: MessagesState) -> dict[str, list[AnyMessage]]:
        turn = sum(isinstance(m, HumanMessage) for m in state["messages"])
        text = f"Order {order_id(turn)} is on its way; I will let you know when it arrives."
        return {"messages": [AIMessage(content=text, id=f"ai-reply-{turn}")]}

    inner = StateGraph(MessagesState)
    inner.add_node("answer", answer)
    inner.add_edge(START, "answer")
    inner.add_edge("answer", END)
    outer = StateGraph(MessagesState)
    outer.add_node("assistant", inner.compile())
    outer.add_edge(START, "assistant")
    outer.add_edge("assistant", END)
    return outer.compile(checkpointer=checkpointer)


BUILDERS: dict[str, Callable[[BaseCheckpointSaver[Any]], Any]] = {
    "create_agent": build_create_agent,
    "create_react_agent": build_react_agent,
    "subgraph": build_subgraph_graph,
}
"""The three graphs, by the name the report and the tests use."""

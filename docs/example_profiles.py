"""``myapp/profiles.py`` of docs/migrating.md's example project ("Your own state schema,
across threads"; docs/examples.py copies it there, docs/example_graphs.py and
tests/test_state_migration.py load it from here): version 1 of the state kept the
conversation's notes in ``notes`` and the customer's name in ``profile.name``; version 2 calls
them ``summary`` and ``profile.full_name`` and adds ``profile.tier``."""

from __future__ import annotations

from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict


class StateV1(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    notes: str
    profile: dict[str, Any]


class StateV2(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    summary: str
    profile: dict[str, Any]


def reply_v1(state: StateV1) -> dict[str, Any]:
    asked = state["messages"][-1].content
    said = f"Hello {state['profile']['name']}, I have noted: {asked}"
    return {"messages": [AIMessage(said)], "notes": f"asked: {asked}"}


def reply_v2(state: StateV2) -> dict[str, Any]:
    asked, profile = state["messages"][-1].content, state["profile"]
    said = f"Hello {profile['full_name']} ({profile['tier']} plan); earlier you {state['summary']}"
    return {"messages": [AIMessage(said)], "summary": f"asked: {asked}"}


def graph(version: int, checkpointer: Any = None) -> Any:
    """START -> reply -> END on version 1 or 2 of the state."""
    builder = StateGraph(StateV1 if version == 1 else StateV2)
    builder.add_node("reply", reply_v1 if version == 1 else reply_v2)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=checkpointer)


def to_v2(state: dict[str, Any]) -> dict[str, Any]:
    """The migration as a function (``migrate-state --function myapp.profiles:to_v2``): what
    profile-v2.toml declares, written in Python. Migrated state comes back unchanged."""
    if "notes" in state:
        state["summary"] = state.pop("notes")
    profile = state.get("profile")
    if isinstance(profile, dict):
        if "name" in profile:
            profile["full_name"] = profile.pop("name")
        profile.setdefault("tier", "free")
    return state

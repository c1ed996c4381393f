"""A graph's own types, including a class defined inside a function (docs/design.md, "The
graph's own types"). No ``from __future__ import annotations`` here: pydantic resolves a local
class's annotations from the function that defines it, as LangGraph's own tests do."""

import operator
from pathlib import Path
from typing import Annotated

from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel

from langgraph_checkpoint_repo import RepoSaver


def test_a_local_state_class_revives_in_the_process_that_defined_it(tmp_path: Path) -> None:
    """A pydantic state class defined inside a function has no importable name (LangGraph's
    own test_in_one_fan_out_state_graph_waiting_edge_custom_state_class_pydantic_input
    builds its graph so): the graph's reads construct it from the class the graph holds."""

    class Inner(BaseModel):
        label: str

    class State(BaseModel):
        query: str
        docs: Annotated[list[Inner], operator.add] = []

    def retriever_one(state: State) -> dict[str, object]:
        return {"docs": [Inner(label="one")]}

    def retriever_two(state: State) -> dict[str, object]:
        return {"docs": [Inner(label="two")]}

    builder = StateGraph(State)
    builder.add_node("one", retriever_one)
    builder.add_node("two", retriever_two)
    builder.add_node("join", lambda s: {"query": s.query + "!"})
    builder.add_edge(START, "one")
    builder.add_edge(START, "two")
    builder.add_edge(["one", "two"], "join")
    builder.add_edge("join", END)
    config = {"configurable": {"thread_id": "t"}}
    builder.compile(checkpointer=RepoSaver(tmp_path / "root", durable=False)).invoke({"query": "q"}, config)
    fresh = builder.compile(checkpointer=RepoSaver(tmp_path / "root"))
    state = fresh.get_state(config)
    assert state.values["query"] == "q!"
    assert sorted(d.label for d in state.values["docs"]) == ["one", "two"]
    assert all(type(d) is Inner for d in state.values["docs"])
    assert len(list(fresh.get_state_history(config))) >= 3

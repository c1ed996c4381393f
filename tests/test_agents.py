"""The agents people build (bench/agent_graphs.py) through RepoSaver read back as InMemorySaver has them.

``create_agent``, ``create_react_agent`` (a ``Send`` per tool call) and a graph whose node is a
compiled subgraph each run three user turns on both savers. ``get_state`` (with subgraphs) and the
whole ``get_state_history`` (values, next, tasks with their results, metadata, configs) must be
the same once ids are replaced by their order of first appearance (``Canon``, as in
test_differential.py; ``created_at`` is left out there, the only timestamp), sync and async, and
a fresh RepoSaver on the same root reads the same history.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bench.agent_graphs import BUILDERS, marker, user_message
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver

from graphs import cfg
from langgraph_checkpoint_repo import RepoSaver
from test_differential import Canon

TURNS = 3
GRAPHS = sorted(BUILDERS)
CONFIG: RunnableConfig = cfg("agent")


def observe(graph: Any) -> Any:
    """The thread as a reader sees it, with ids made comparable."""
    state = graph.get_state(CONFIG, subgraphs=True)
    return Canon()({"state": state, "history": list(graph.get_state_history(CONFIG))})


async def aobserve(graph: Any) -> Any:
    state = await graph.aget_state(CONFIG, subgraphs=True)
    history = [s async for s in graph.aget_state_history(CONFIG)]
    return Canon()({"state": state, "history": history})


def check_conversation(graph: Any, name: str) -> None:
    """Each turn's user text is in the state once, and the agents called their tool each turn."""
    messages = graph.get_state(CONFIG).values["messages"]
    for turn in range(1, TURNS + 1):
        assert sum(marker(turn) in str(m.content) for m in messages) == 1
    tool_results = [m for m in messages if isinstance(m, ToolMessage)]
    assert len(tool_results) == (0 if name == "subgraph" else TURNS)
    assert sum(isinstance(m, HumanMessage) for m in messages) == TURNS


@pytest.mark.parametrize("name", GRAPHS)
def test_sync_turns_read_back_as_in_memory_saver_and_from_a_fresh_instance(name: str, tmp_path: Path) -> None:
    root = tmp_path / "root"
    repo = BUILDERS[name](RepoSaver(root, durable=False))
    memory = BUILDERS[name](InMemorySaver())
    for turn in range(1, TURNS + 1):
        repo.invoke({"messages": [user_message(turn)]}, CONFIG)
        memory.invoke({"messages": [user_message(turn)]}, CONFIG)
    check_conversation(memory, name)
    expected = observe(memory)
    assert len(expected["history"]) > TURNS
    assert observe(repo) == expected
    fresh = BUILDERS[name](RepoSaver(root, durable=False))
    assert observe(fresh) == expected


@pytest.mark.parametrize("name", GRAPHS)
async def test_async_turns_read_back_as_in_memory_saver(name: str, tmp_path: Path) -> None:
    repo = BUILDERS[name](RepoSaver(tmp_path / "root", durable=False))
    memory = BUILDERS[name](InMemorySaver())
    for turn in range(1, TURNS + 1):
        await repo.ainvoke({"messages": [user_message(turn)]}, CONFIG)
        await memory.ainvoke({"messages": [user_message(turn)]}, CONFIG)
    check_conversation(memory, name)
    expected = await aobserve(memory)
    assert await aobserve(repo) == expected
    assert observe(repo) == expected


def test_history_has_tasks_with_results_and_the_react_agent_sends(tmp_path: Path) -> None:
    """The comparison above covers what makes these graphs hard: tasks that finished carry their
    results, and ``create_react_agent``'s tool call is a ``Send`` whose task is in the history."""
    graph = BUILDERS["create_react_agent"](RepoSaver(tmp_path / "root", durable=False))
    graph.invoke({"messages": [user_message(1)]}, CONFIG)
    history = list(graph.get_state_history(CONFIG))
    tasks = [t for s in history for t in s.tasks]
    assert any(t.name == "tools" and t.result is not None for t in tasks)
    assert any(t.name == "agent" and t.result is not None for t in tasks)

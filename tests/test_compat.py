"""Each private name of another package that ``_compat`` uses, checked on its own.

When an upgrade of LangGraph, a saver or rich removes or changes one, the test named
after it fails here, in one place, before anything deeper breaks.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph
from rich.console import Console
from rich.table import Table
from typing_extensions import TypedDict

from langgraph_checkpoint_repo import _compat


class Point(TypedDict):
    x: int


def test_safe_msgpack_types_still_list_langchain_messages() -> None:
    assert ("langchain_core.messages.human", "HumanMessage") in _compat.SAFE_MSGPACK_TYPES
    assert all(isinstance(t, tuple) for t in _compat.SAFE_MSGPACK_METHODS)


def test_with_msgpack_allowlist_adds_types_to_a_jsonplus_serde() -> None:
    serde = JsonPlusSerializer(allowed_msgpack_modules=[("a.b", "C")])
    widened = _compat.with_msgpack_allowlist(serde, [("d.e", "F")])
    assert ("d.e", "F") in _compat.allowed_msgpack_modules(widened)
    assert ("a.b", "C") in _compat.allowed_msgpack_modules(widened)


def test_allowed_msgpack_modules_tells_explicit_from_everything() -> None:
    assert _compat.allowed_msgpack_modules(JsonPlusSerializer(allowed_msgpack_modules=True)) is True
    explicit = _compat.allowed_msgpack_modules(JsonPlusSerializer(allowed_msgpack_modules=[("a.b", "C")]))
    assert ("a.b", "C") in explicit


def test_collect_graph_types_is_build_serde_allowlist_with_its_classes() -> None:
    """The keys are exactly what LangGraph's public build_serde_allowlist gives (for strict
    mode's with_allowlist); the classes are the state's own objects, local ones included."""
    from dataclasses import dataclass

    from langgraph._internal._serde import build_serde_allowlist

    @dataclass
    class State:
        n: int

    builder = StateGraph(State)
    builder.add_node("a", lambda s: {"n": 1})
    builder.add_edge(START, "a")
    graph = builder.compile(checkpointer=InMemorySaver())
    schemas: list[Any] = [builder.state_schema]
    keys, classes = _compat.collect_graph_types(schemas=schemas, channels=dict(graph.channels))
    assert keys == build_serde_allowlist(schemas=schemas, channels=dict(graph.channels))
    assert (State.__module__, "State") in keys
    assert classes[(State.__module__, "State")] is State


def test_sqlite_saver_task_path_flag_and_adoption(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "a.db", check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()
    assert _compat.sqlite_has_task_path(saver) is True
    fresh = SqliteSaver(conn)
    _compat.adopt_sqlite_tables(fresh, has_task_path=False)
    assert fresh.is_setup is True and _compat.sqlite_has_task_path(fresh) is False
    assert list(fresh.list(None)) == []  # reads without running setup


def test_postgres_saver_still_has_a_cursor_factory() -> None:
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    assert callable(PostgresSaver._cursor) and callable(AsyncPostgresSaver._cursor)


def test_rich_table_cells_can_be_read_and_replaced() -> None:
    table = Table("a")
    table.add_row("x")
    column = table.columns[0]
    assert _compat.table_cells(column) == ["x"]
    _compat.set_table_cells(column, ["y"])
    console = Console(width=20, record=True)
    console.print(table)
    assert "y" in console.export_text()


def test_send_from_args_rebuilds_a_send() -> None:
    from langgraph.types import Send

    send = Send("node", {"x": 1})
    packed = JsonPlusSerializer().dumps_typed(send)
    assert JsonPlusSerializer().loads_typed(packed) == send
    assert _compat.send_from_args(["node", {"x": 1}]) == send


def test_delta_snapshot_wraps_a_value() -> None:
    snap = _compat.DeltaSnapshot(["a", "b"])
    assert snap.value == ["a", "b"]


def test_ext_hook_of_a_jsonplus_serde_can_be_read_and_replaced() -> None:
    serde = JsonPlusSerializer()
    assert _compat.has_custom_ext_hook(serde) is False
    seen: list[int] = []

    def hook(code: int, data: bytes) -> object:
        seen.append(code)
        return "hooked"

    _compat.set_ext_hook(serde, hook)
    packed = serde.dumps_typed({1, 2})  # a set is an extension value
    assert serde.loads_typed(packed) == "hooked" and seen

"""The one place that uses private names of other packages.

LangGraph, its savers and rich do not promise these names across releases. Every use
goes through this module and each name has a test in ``tests/test_compat.py``, so an
upgrade that removes or changes one fails loudly here instead of somewhere deep in a
read path.

The standard library's private ``_json`` (the C half of ``json``, which git's diff driver
uses so as not to import ``re``) is not here: the core imports nothing of this layer, so it
has its own single wrapper there, core/cjson.py, with a test per name in tests/test_cjson.py.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langgraph.checkpoint.serde._msgpack import SAFE_MSGPACK_METHODS, SAFE_MSGPACK_TYPES
    from langgraph.checkpoint.serde.base import SerializerProtocol
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
    from langgraph.checkpoint.serde.jsonplus import _send_from_args as send_from_args
    from langgraph.checkpoint.serde.types import _DeltaSnapshot as DeltaSnapshot

# LangGraph's names, imported on first use: importing LangGraph takes seconds, and the
# command line's --help and its table printing (table_cells) need none of it
_LAZY = {
    "SAFE_MSGPACK_METHODS": ("langgraph.checkpoint.serde._msgpack", "SAFE_MSGPACK_METHODS"),
    "SAFE_MSGPACK_TYPES": ("langgraph.checkpoint.serde._msgpack", "SAFE_MSGPACK_TYPES"),
    "send_from_args": ("langgraph.checkpoint.serde.jsonplus", "_send_from_args"),
    "DeltaSnapshot": ("langgraph.checkpoint.serde.types", "_DeltaSnapshot"),
}


def __getattr__(name: str) -> Any:
    """A LangGraph name of ``_LAZY``, imported when it is first asked for."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attr = _LAZY[name]
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


__all__ = [
    "SAFE_MSGPACK_METHODS",
    "SAFE_MSGPACK_TYPES",
    "DeltaSnapshot",
    "adopt_sqlite_tables",
    "allowed_msgpack_modules",
    "collect_graph_types",
    "has_custom_ext_hook",
    "postgres_cursor",
    "send_from_args",
    "set_ext_hook",
    "sqlite_has_task_path",
    "table_cells",
    "with_msgpack_allowlist",
]


def with_msgpack_allowlist(
    serde: SerializerProtocol, extra: Collection[tuple[str, ...]]
) -> SerializerProtocol:
    """The serde with more types allowed, as ``BaseCheckpointSaver.with_allowlist`` makes it."""
    from langgraph.checkpoint.base import _with_msgpack_allowlist

    return _with_msgpack_allowlist(serde, extra)


def collect_graph_types(
    *, schemas: list[Any], channels: dict[str, Any]
) -> tuple[set[tuple[str, ...]], dict[tuple[str, ...], type]]:
    """The types ``StateGraph.compile`` registers for a graph in strict msgpack mode
    (``build_serde_allowlist``), and the classes among them: LangGraph's walk of the schemas
    records every type it visits in ``seen``, which its public function does not return."""
    from langgraph._internal import _serde

    keys = _serde.curated_core_allowlist()
    seen: set[Any] = set()
    seen_ids: set[int] = set()
    for schema in schemas:
        if schema is not None:
            _serde._collect_from_type(schema, keys, seen, seen_ids)
    for channel in channels.values():
        for attr in ("ValueType", "UpdateType"):
            typ = getattr(channel, attr, None)
            if typ is not None:
                _serde._collect_from_type(typ, keys, seen, seen_ids)
    classes: dict[tuple[str, ...], type] = {
        (t.__module__, t.__name__): t
        for t in seen
        if isinstance(t, type) and (t.__module__, t.__name__) in keys
    }
    return keys, classes


def allowed_msgpack_modules(serde: SerializerProtocol) -> Any:
    """What a JsonPlusSerializer was built to allow: a set, True (everything) or None."""
    return getattr(serde, "_allowed_msgpack_modules", None)


def postgres_cursor(saver: Any) -> Callable[[], Any]:
    """PostgresSaver's (or AsyncPostgresSaver's async) cursor factory: neither has a public one."""
    return saver._cursor  # type: ignore[no-any-return]


def sqlite_has_task_path(saver: Any) -> bool:
    """Whether a SqliteSaver's writes table has the task_path column."""
    return bool(getattr(saver, "_has_task_path", True))


def adopt_sqlite_tables(saver: Any, has_task_path: bool) -> None:
    """Make a SqliteSaver read an existing database as it is, without running its setup."""
    saver._has_task_path = has_task_path
    saver.is_setup = True


def table_cells(column: Any) -> list[Any]:
    """The cells of a rich table column (rich keeps them in a private list)."""
    return column._cells  # type: ignore[no-any-return]


def set_table_cells(column: Any, cells: list[Any]) -> None:
    column._cells = cells


def has_custom_ext_hook(serde: JsonPlusSerializer) -> bool:
    """Whether a JsonPlusSerializer was given an ext hook of its own (then reviving is its
    business, and the strict hook is not put in its place)."""
    return bool(getattr(serde, "_custom_unpack_ext_hook", True))


def set_ext_hook(serde: JsonPlusSerializer, hook: Callable[[int, bytes], Any]) -> None:
    """Make a JsonPlusSerializer unpack msgpack extensions with ``hook``."""
    serde._unpack_ext_hook = hook  # type: ignore[attr-defined]

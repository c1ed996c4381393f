"""The running graph's own state types, for the msgpack allowlist.

LangGraph registers a graph's types (its pydantic models, dataclasses, enums)
with the checkpointer through ``with_allowlist`` only when the process runs
with ``LANGGRAPH_STRICT_MSGPACK=true``. RepoSaver is always strict, so it asks
the same question itself: when a graph calls it, it finds that graph on the
call stack and derives the allowlist exactly as ``StateGraph.compile`` would,
with LangGraph's own ``build_serde_allowlist``. The types come from code the
user runs, never from a file.
"""

from __future__ import annotations

import sys
import weakref
from types import FrameType
from typing import Any

from langgraph.pregel import Pregel

from ._compat import build_serde_allowlist

_MAX_FRAMES = 16


def calling_graph(frame: FrameType | None) -> Pregel[Any, Any] | None:
    """The nearest Pregel graph among the callers' ``self``."""
    for _ in range(_MAX_FRAMES):
        if frame is None:
            return None
        candidate = frame.f_locals.get("self")
        if isinstance(candidate, Pregel):
            return candidate
        frame = frame.f_back
    return None


def graph_allowlist(graph: Pregel[Any, Any]) -> set[tuple[str, ...]]:
    """What ``StateGraph.compile`` passes to ``with_allowlist`` in strict mode."""
    builder = getattr(graph, "builder", None)
    schemas: list[Any] = []
    channels: dict[str, Any] = dict(graph.channels)
    if builder is not None and hasattr(builder, "state_schema"):
        schemas = [builder.state_schema, builder.input_schema, builder.output_schema]
        if getattr(builder, "context_schema", None) is not None:
            schemas.append(builder.context_schema)
        schemas.extend(node.input_schema for node in builder.nodes.values())
        for branches in builder.branches.values():
            schemas.extend(b.input_schema for b in branches.values() if b.input_schema is not None)
        channels.update(builder.channels)
    return build_serde_allowlist(schemas=schemas, channels=channels)


class GraphTypes:
    """Remembers which graphs were already looked at (weakly), so each is derived once."""

    def __init__(self) -> None:
        self._seen: dict[int, weakref.ref[Pregel[Any, Any]]] = {}

    def new_types(self, depth: int) -> set[tuple[str, ...]] | None:
        """The allowlist of the graph calling us, the first time that graph calls."""
        graph = calling_graph(sys._getframe(depth + 1))
        if graph is None:
            return None
        ref = self._seen.get(id(graph))
        if ref is not None and ref() is graph:
            return None
        self._seen[id(graph)] = weakref.ref(graph)
        return graph_allowlist(graph)

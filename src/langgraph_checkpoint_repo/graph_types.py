"""A graph's own types, for the reads that graph makes (docs/types.md, "Which graph reads").

The rule: a read constructs LangGraph's safe types, the saver's ``allowlist`` (and what
``with_allowlist`` added), and, when a compiled graph makes the read, that graph's state
types, derived exactly as ``StateGraph.compile`` derives them in strict msgpack mode
(LangGraph's ``build_serde_allowlist``). The types come from code the user runs, never from
a file.

Explicit first: with ``LANGGRAPH_STRICT_MSGPACK=true`` LangGraph itself hands each compiled
graph its own view of the saver (``with_allowlist``), and that view reads with the graph's
types; nothing here is needed. LangGraph's default mode gives a saver nothing that names the
graph calling it (not the config, not the runtime; checked on langgraph 1.2), so each read
entry point of the saver asks ``GraphViews.for_caller`` for the graph on the call stack: the
nearest caller's ``self`` that is a ``Pregel``. This is the one place that looks at frames,
and the trade-off is documented in docs/design.md: two graphs on one saver never share types,
a fresh process reads in any order, at the price of depending on LangGraph calling the saver
from a method of the graph (every version since 0.2 does). The graph's classes are kept as
objects too, so a class defined inside a function (no importable name) revives.
"""

from __future__ import annotations

import inspect
import weakref
from types import FrameType
from typing import TYPE_CHECKING, Any, TypeVar

from ._compat import collect_graph_types

if TYPE_CHECKING:  # imported where used: langgraph.pregel takes a second to import, and
    # validate (which reads values through codec, and so this module) needs no graph
    from langgraph.pregel import Pregel

_MAX_FRAMES = 64  # LangGraph calls a saver a dozen frames below the graph's method
S = TypeVar("S")


def frame_above(depth: int) -> FrameType | None:
    """The frame ``depth`` calls above the caller of this function (public ``inspect``)."""
    frame = inspect.currentframe()
    for _ in range(depth + 1):
        frame = frame.f_back if frame is not None else None
    return frame


def calling_graph(frame: FrameType | None) -> Pregel[Any, Any] | None:
    """The nearest Pregel graph among the callers' ``self``."""
    from langgraph.pregel import Pregel

    for _ in range(_MAX_FRAMES):
        if frame is None:
            return None
        code = frame.f_code
        if code.co_argcount and code.co_varnames[0] == "self":  # only methods have one
            candidate = frame.f_locals.get("self")
            if isinstance(candidate, Pregel):
                return candidate
        frame = frame.f_back
    return None


def graph_types(graph: Pregel[Any, Any]) -> tuple[set[tuple[str, ...]], dict[tuple[str, ...], type]]:
    """What ``StateGraph.compile`` passes to ``with_allowlist`` in strict mode, and the
    classes those (module, name) keys stand for."""
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
    return collect_graph_types(schemas=schemas, channels=channels)


def graph_allowlist(graph: Pregel[Any, Any]) -> set[tuple[str, ...]]:
    """The (module, name) keys of ``graph_types``."""
    return graph_types(graph)[0]


def graph_name(graph: Pregel[Any, Any]) -> str:
    return str(getattr(graph, "name", None) or type(graph).__name__)


class GraphViews:
    """A saver's view per calling graph, made once per graph and kept while the graph lives.

    ``make(graph)`` builds the view (``with_allowlist`` of the graph's types); a view is
    never shared between two graphs, and the saver itself is never widened."""

    def __init__(self) -> None:
        self._views: dict[int, tuple[weakref.ref[Pregel[Any, Any]], Any]] = {}

    def for_caller(self, saver: S, frame: FrameType | None, make: Any) -> S:
        """The view of the graph that is calling (``frame`` is the read entry's own), or ``saver``."""
        graph = calling_graph(frame)
        if graph is None:
            return saver
        key = id(graph)
        hit = self._views.get(key)
        if hit is not None and hit[0]() is graph:
            return hit[1]  # type: ignore[no-any-return]
        view = make(graph)
        views = self._views
        self._views[key] = (weakref.ref(graph, lambda _: views.pop(key, None)), view)
        return view  # type: ignore[no-any-return]

"""Which types a read may construct: the calling graph's own, and the name of ``__main__``.

The rule (docs/types.md): a read constructs LangGraph's safe types, the saver's
``allowlist`` (and what ``with_allowlist`` added), and, when a compiled graph makes the
read, that graph's state types, derived exactly as ``StateGraph.compile`` derives them in
strict msgpack mode (LangGraph's ``build_serde_allowlist``). LangGraph itself passes those
types (``with_allowlist``) only when ``LANGGRAPH_STRICT_MSGPACK=true``, so every read entry
point finds the calling graph on the stack and reads through that graph's own view of the
saver: two graphs on one saver never share types, and the order of calls does not matter.
The types come from code the user runs, never from a file.

A type defined in a script run as ``python agent.py`` is named ``__main__.X`` by Python.
Written so, no other program could read it back; ``main_module_name`` is the name the
script can be imported by, which the codec records instead.
"""

from __future__ import annotations

import inspect
import sys
import weakref
from functools import cache
from pathlib import Path
from types import FrameType, ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

from ._compat import build_serde_allowlist

if TYPE_CHECKING:  # imported where used: langgraph.pregel takes a second to import, and
    # validate (which reads values through codec, and so this module) needs no graph
    from langgraph.pregel import Pregel

_MAX_FRAMES = 32
# files that mark the top of a project: a script below it is importable by its path from there
_PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
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


# ----------------------------------------------------------------------
# __main__
# ----------------------------------------------------------------------
MAIN = "__main__"


@cache
def main_module_name() -> str | None:
    """The name the running program's main module can be imported by, or None.

    ``python -m pkg.mod``: ``pkg.mod``. ``python path/to/agent.py``: its dotted path from the
    top of its project (the nearest folder up with a pyproject.toml, setup.py, setup.cfg or
    .git; below a ``src`` folder there, from that), else from its own folder (``agent``).
    None for ``python -c``, a REPL or notebook, or a path that is not a module name."""
    main = sys.modules.get(MAIN)
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name and spec.name != MAIN:
        return str(spec.name)
    file = getattr(main, "__file__", None)
    if not file or not file.endswith(".py"):
        return None
    path = Path(file).resolve()
    top = next((d for d in path.parents if any((d / m).exists() for m in _PROJECT_MARKERS)), path.parent)
    if (top / "src") in path.parents:
        top = top / "src"
    parts = [*path.relative_to(top).parent.parts, path.stem]
    if not all(p.isidentifier() for p in parts):
        return None
    return ".".join(parts)


def import_named(module: str) -> ModuleType:
    """``importlib.import_module``, except that the main module's importable name is the
    running ``__main__`` when nothing imported it under that name: importing the script again
    would run it a second time and make second copies of its classes."""
    import importlib

    loaded = sys.modules.get(module)
    if loaded is not None:
        return loaded
    if module == main_module_name() and MAIN in sys.modules:
        return sys.modules[MAIN]
    return importlib.import_module(module)

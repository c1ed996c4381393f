"""The types a reader without a graph may construct: ``--allow`` and ``[tool.langgraph-repo]``.

The command line and the Agent Server's saver (agent_server.py) read with no graph on the
stack, so they read under LangGraph's safe types plus what the user allows explicitly
(docs/types.md): ``--allow module:Name`` (or ``module:*``), and in the project's
pyproject.toml ``allow = [...]`` and ``graph = "pkg.mod:graph"`` (the types a compiled graph
registers, found as ``compile`` finds them). Allowing a type imports its module, and
``graph`` imports the graph's module: that runs the project's code, which is why it is only
ever taken from pyproject.toml or the command line, never from the state folder (a
pyproject.toml inside it is ignored).
"""

from __future__ import annotations

import importlib
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import BadInputError
from .graph_types import graph_allowlist

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the tests run on 3.11
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

TABLE = "langgraph-repo"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:([A-Za-z_][A-Za-z0-9_]*|\*)$")


@dataclass
class Allowed:
    """What the command line may construct, and where the user said so."""

    types: set[tuple[str, ...]] = field(default_factory=set)
    pyproject: Path | None = None  # the one with a [tool.langgraph-repo] table
    hint: Path | None = None  # else the nearest one, to name in advice

    def fix(self, keys: Sequence[tuple[str, ...]]) -> str:
        """The refused-type advice for the command line: the option, or the pyproject entry."""
        path = self.pyproject or self.hint
        where = str(path) if path is not None else "the project's pyproject.toml"
        items = [f"{k[0]}:{k[1]}" for k in keys]
        modules = sorted({f"{k[0]}:*" for k in keys})
        return (
            f"To allow them: {' '.join(f'--allow {i}' for i in items)} "
            f"(or {', '.join(modules)}), or allow = {json.dumps(items)} under [tool.{TABLE}] in {where}"
        )


def parse_allow(item: str, source: str) -> tuple[str, str]:
    """``module:Name`` or ``module:*`` as a (module, name) key; ``source`` names where it came from."""
    if not _NAME.match(item):
        raise BadInputError(f"{source} {item!r}: expected module:Name or module:* (e.g. myapp.state:Order)")
    module, _, name = item.partition(":")
    return module, name


def find_pyproject(root: Path, cwd: Path, *, table: bool = True) -> Path | None:
    """The nearest pyproject.toml with a ``[tool.langgraph-repo]`` table (any, without
    ``table``), looking up from the root's folder, then from the current folder; none inside
    the root (that is data)."""
    root = root.resolve()
    for start in (root.parent, cwd.resolve()):
        for folder in (start, *start.parents):
            candidate = folder / "pyproject.toml"
            if folder == root or root in folder.parents or not candidate.is_file():
                continue
            if not table or _has_table(candidate):
                return candidate
    return None


def _has_table(path: Path) -> bool:
    """True when ``path`` has our table; another project's broken pyproject.toml is not ours."""
    try:
        return TABLE in _read_toml(path).get("tool", {})
    except BadInputError:
        with path.open("rb") as f:
            if f"tool.{TABLE}".encode() in f.read(MAX_PYPROJECT_BYTES + 1):
                raise
        return False


MAX_PYPROJECT_BYTES = 4 * 1024 * 1024  # a pull request can make it anything: read it bounded


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_PYPROJECT_BYTES + 1)
        if len(raw) > MAX_PYPROJECT_BYTES:
            raise BadInputError(f"{path}: over {MAX_PYPROJECT_BYTES:,} bytes, not read as a pyproject.toml")
        data: dict[str, Any] = tomllib.loads(raw.decode("utf-8"))
        return data
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise BadInputError(f"{path}: cannot read it as TOML: {exc}") from None
    except RecursionError:
        raise BadInputError(f"{path}: cannot read it as TOML: nested too deeply") from None


def allowed_types(root: Path, given: list[str]) -> Allowed:
    """``--allow`` items plus the project's ``[tool.langgraph-repo]`` (``allow``, ``graph``)."""
    found = Allowed({parse_allow(item, "--allow") for item in given})
    found.pyproject = find_pyproject(root, Path.cwd())
    if found.pyproject is None:
        found.hint = find_pyproject(root, Path.cwd(), table=False)
        if found.types:
            _importable(Path.cwd())
        return found
    table = _read_toml(found.pyproject)["tool"][TABLE]
    where = f"{found.pyproject} [tool.{TABLE}]"
    if not isinstance(table, dict):
        raise BadInputError(f"{where}: must be a table")
    unknown = sorted(set(table) - {"allow", "graph"})
    if unknown:
        raise BadInputError(f"{where}: unknown key {unknown[0]!r} (it takes allow and graph)")
    allow = table.get("allow", [])
    graphs = table.get("graph", [])
    graphs = [graphs] if isinstance(graphs, str) else graphs
    for key, items in (("allow", allow), ("graph", graphs)):
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise BadInputError(f"{where} {key}: must be a list of strings")
    found.types |= {parse_allow(item, f"{where} allow") for item in allow}
    _importable(found.pyproject.parent)
    for spec in graphs:
        found.types |= graph_allowlist(_load_graph(spec, f"{where} graph"))
    return found


def _importable(project: Path) -> None:
    """Let allowed types be imported from the project, as the program that wrote them
    imported them (after the installed packages, so nothing installed is shadowed)."""
    for folder in (project, project / "src"):
        if folder.is_dir() and str(folder) not in sys.path:
            sys.path.append(str(folder))


def _load_graph(spec: str, where: str) -> Any:
    """The compiled graph ``pkg.mod:name`` names (importing ``pkg.mod`` runs its code)."""
    from langgraph.pregel import Pregel

    module, sep, name = spec.partition(":")
    if not sep or not module or not name:
        raise BadInputError(f"{where} {spec!r}: expected module:name of a compiled graph")
    try:
        graph = getattr(importlib.import_module(module), name)
    except Exception as exc:  # the user's module failed to import: say so, in one line
        raise BadInputError(f"{where} {spec!r}: cannot load it: {type(exc).__name__}: {exc}") from None
    if not isinstance(graph, Pregel):
        raise BadInputError(f"{where} {spec!r}: is a {type(graph).__name__}, not a compiled graph")
    return graph

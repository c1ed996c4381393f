"""The types a reader without a graph may construct: ``--allow`` and ``[tool.langgraph-repo]``.

Reading state never runs the checkout's code (docs/types.md, "Reading never runs the
checkout's code"): the command line's read commands construct only LangGraph's safe types
and what ``--allow`` names on the command line, and show a graph's own types from their
stored data. The project's table (``allow = [...]``, ``graph = "pkg.mod:graph"``) is read
only where values must be constructed and only after an explicit choice: the Agent Server's
factory (``langgraph.json`` names it) and ``export --trust-project``. Even then:

* a standard-library or builtin name (``os:system``) is refused, whatever the table says;
* the table is read only from a pyproject.toml inside the repository that holds the root
  (never above its top, never inside the root, which is data) and owned by the current user,
  as git reads a repository's config only when ``safe.directory`` allows it;
* the project's folder is appended to ``sys.path`` (after the installed packages) only for
  that explicit use, and the current folder only when ``--allow`` names a type.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .core.errors import BadInputError
from .core.layout import git_top
from .core.typenames import TypeKey, is_foreign
from .readmodel.retention import Retention, parse_retention

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the tests run on 3.11
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

TABLE = "langgraph-repo"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:([A-Za-z_][A-Za-z0-9_]*|\*)$")


@dataclass
class Allowed:
    """What a reader may construct, and where the user said so."""

    types: set[TypeKey] = field(default_factory=set)
    pyproject: Path | None = None  # the one whose [tool.langgraph-repo] table was used
    langgraph_json: Path | None = None  # the one whose checkpointer.serde list was used

    def fix(self, keys: Sequence[TypeKey]) -> str:
        """The refused-type advice for the command line: the option that allows them."""
        items = [f"{k[0]}:{k[1]}" for k in keys]
        modules = sorted({f"{k[0]}:*" for k in keys})
        return (
            f"To allow them: {' '.join(f'--allow {i}' for i in items)} (or {', '.join(modules)}); "
            "that imports their module. Without it they are shown as stored (docs/types.md)"
        )


def parse_allow(item: str, source: str) -> TypeKey:
    """``module:Name`` or ``module:*`` as a (module, name) key; ``source`` names where it came
    from. A name from Python itself (``os:system``) is never allowed: no state type needs one
    that LangGraph does not allow already, and constructing one can run any command."""
    if not _NAME.match(item):
        raise BadInputError(f"{source} {item!r}: expected module:Name or module:* (e.g. myapp.state:Order)")
    module, _, name = item.partition(":")
    if is_foreign((module, name)):
        raise BadInputError(
            f"{source} {item!r}: a name from Python's standard library or builtins is never allowed "
            "(constructing one can run code); LangGraph's safe types (datetime, Decimal, UUID ...) "
            "need no option"
        )
    return module, name


def cli_types(given: Sequence[str]) -> Allowed:
    """What ``--allow`` names; nothing of the project is read. Naming a type on the command
    line is the choice to import its module, so the current folder (and its ``src``) is
    appended to ``sys.path`` (after the installed packages) for it, as before."""
    found = Allowed({parse_allow(item, "--allow") for item in given})
    if found.types:
        importable(Path.cwd())
    return found


def find_pyproject(root: Path, cwd: Path | None = None) -> Path | None:
    """The project's pyproject.toml with a ``[tool.langgraph-repo]`` table: the nearest one
    from the root's folder up to the top of the git work tree holding the root (the root's
    folder alone outside git), owned by the current user; none inside the root (that is data).
    ``cwd`` is not consulted: where a command runs from must not pick its configuration."""
    root = root.absolute()
    top = git_top(root.parent)
    stop = top if top is not None else root.parent
    for folder in (root.parent, *root.parent.parents):
        candidate = folder / "pyproject.toml"
        if _ours(candidate) and _has_table(candidate):
            return candidate
        if folder == stop:
            break
    return None


def _ours(path: Path) -> bool:
    """A regular file the current user owns (on systems with owners)."""
    try:
        st = path.lstat()
    except OSError:
        return False
    if not path.is_file() or path.is_symlink():
        return False
    getuid = getattr(os, "getuid", None)
    return getuid is None or st.st_uid == getuid()


def _table(pyproject: Path) -> tuple[dict[str, Any], str]:
    """The ``[tool.langgraph-repo]`` table of a pyproject.toml that has one, and where it is
    (for errors); not a table (``langgraph-repo = ["ttl"]``) is an error naming the file, for
    every reader of the table alike."""
    table = _read_toml(pyproject)["tool"][TABLE]
    where = f"{pyproject} [tool.{TABLE}]"
    if not isinstance(table, dict):
        raise BadInputError(f"{where}: must be a table")
    return table, where


def _has_table(path: Path) -> bool:
    """True when ``path`` has our table; another project's broken pyproject.toml is not ours."""
    try:
        tool = _read_toml(path).get("tool", {})
        return isinstance(tool, dict) and TABLE in tool  # `tool = "langgraph-repo"` is not the table
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


def project_types(root: Path, given: Sequence[str] = ()) -> Allowed:
    """``--allow`` items plus the project's types: ``checkpointer.serde.allowed_msgpack_modules``
    of the ``langgraph.json`` beside the root when it has that list, else the ``allow`` of the
    ``[tool.langgraph-repo]`` table; the table's ``graph`` either way (docs/types.md).

    For the explicit uses only (the Agent Server, ``export --trust-project``): ``graph``
    imports the graph's module, which runs the project's code."""
    found = cli_types(given)
    config = root.absolute().parent / CONFIG_FILE
    listed = serde_types(config) if _ours(config) else None
    if listed is not None:
        found.types |= listed
        found.langgraph_json = config
        importable(config.parent)
    found.pyproject = find_pyproject(root)
    if found.pyproject is None:
        return found
    table, where = _table(found.pyproject)
    unknown = sorted(set(table) - {"allow", "graph", "ttl"})
    if unknown:
        raise BadInputError(f"{where}: unknown key {unknown[0]!r} (it takes allow, graph and ttl)")
    allow = table.get("allow", [])
    graphs = table.get("graph", [])
    graphs = [graphs] if isinstance(graphs, str) else graphs
    for key, items in (("allow", allow), ("graph", graphs)):
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise BadInputError(f"{where} {key}: must be a list of strings")
    if listed is None:  # langgraph.json's list, when it has one, is the project's
        found.types |= {parse_allow(item, f"{where} allow") for item in allow}
    importable(found.pyproject.parent)
    for spec in graphs:
        from .graph_types import graph_allowlist  # imports LangGraph: only for a graph entry

        found.types |= {k for k in graph_allowlist(_load_graph(spec, f"{where} graph")) if not is_foreign(k)}
    return found


CONFIG_FILE = "langgraph.json"
SERDE_KEY = "checkpointer.serde.allowed_msgpack_modules"


def serde_types(path: Path) -> set[TypeKey] | None:
    """The types ``langgraph.json``'s ``checkpointer.serde.allowed_msgpack_modules`` lists
    (``[["my_agent.models", "MyState"], ...]``; ``null``: none beyond LangGraph's safe ones),
    or None when the file has no such key. ``true`` (every type, with a warning) is refused:
    a reader of these files constructs only what someone listed."""
    config = read_langgraph_json(path)
    checkpointer = config.get("checkpointer")
    serde = checkpointer.get("serde") if isinstance(checkpointer, dict) else None
    if not isinstance(serde, dict) or "allowed_msgpack_modules" not in serde:
        return None
    value, where = serde["allowed_msgpack_modules"], f"{path} {SERDE_KEY}"
    if value is None or value is False:
        return set()
    if value is True:
        raise BadInputError(
            f"{where}: true (every type) is not allowed: langgraph-checkpoint-repo constructs only "
            'the types listed, e.g. [["my_agent.models", "MyState"]]'
        )
    if not isinstance(value, list) or not all(
        isinstance(e, list) and len(e) >= 2 and all(isinstance(p, str) for p in e) for e in value
    ):
        raise BadInputError(
            f'{where}: expected a list of [module, Name] lists, e.g. [["my_agent.models", "MyState"]]'
        )
    return {parse_allow(f"{'.'.join(e[:-1])}:{e[-1]}", where) for e in value}


def read_langgraph_json(path: Path) -> dict[str, Any]:
    """A ``langgraph.json``, read bounded (a pull request can make it anything)."""
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_PYPROJECT_BYTES + 1)
        config = json.loads(raw) if len(raw) <= MAX_PYPROJECT_BYTES else None
    except (OSError, ValueError, RecursionError) as exc:
        raise BadInputError(f"{path}: cannot read it as JSON: {exc}") from None
    if not isinstance(config, dict):
        raise BadInputError(f"{path}: not a JSON object of at most {MAX_PYPROJECT_BYTES:,} bytes")
    return config


def ttl_of(config: dict[str, Any], section: str, path: Path) -> dict[str, Any] | None:
    """``langgraph.json``'s ``<section>.ttl`` (``checkpointer`` or ``store``): an object, or None."""
    part = config.get(section)
    ttl = part.get("ttl") if isinstance(part, dict) else None
    if ttl is not None and not isinstance(ttl, dict):
        raise BadInputError(f"{path}: {section}.ttl must be an object, not {ttl!r}")
    return ttl


@dataclass(frozen=True)
class RetentionFound:
    """The project's retention settings, checked, and where they were read."""

    config: dict[str, Any]  # as written: RepoSaver(ttl=...) takes it
    policy: Retention
    source: str  # the file and key, for logs and errors


def project_retention(root: Path, config: Path | None = None) -> RetentionFound | None:
    """The retention the project sets, one precedence (docs/reliability.md, "Retention"):
    ``checkpointer.ttl`` of ``langgraph.json`` (``config``; by default the one beside the root)
    when it has that key, else the ``ttl`` of the ``[tool.langgraph-repo]`` table of the
    project's pyproject.toml (``find_pyproject``), else None. Reading them runs no code."""
    config = config if config is not None else root.absolute().parent / CONFIG_FILE
    if _ours(config):
        ttl = ttl_of(read_langgraph_json(config), "checkpointer", config)
        if ttl is not None:
            where = f"{config} checkpointer.ttl"
            return RetentionFound(ttl, parse_retention(ttl, where), where)
    pyproject = find_pyproject(root)
    ttl = _table(pyproject)[0].get("ttl") if pyproject is not None else None
    if ttl is None:
        return None
    where = f"{pyproject} [tool.{TABLE}.ttl]"
    if not isinstance(ttl, dict):
        raise BadInputError(f"{where}: must be a table, not {ttl!r}")
    return RetentionFound(ttl, parse_retention(ttl, where), where)


def importable(project: Path) -> None:
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


def json_list(types: set[TypeKey]) -> str:
    """The ``allow`` entries of ``types``, as TOML/JSON (for advice)."""
    return json.dumps(sorted(f"{k[0]}:{k[1]}" for k in types))

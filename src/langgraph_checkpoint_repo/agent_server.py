"""RepoSaver and RepoStore behind LangGraph's Agent Server and ``langgraph dev``.

The server takes a custom checkpointer and a custom store from ``langgraph.json``::

    "checkpointer": {"path": "langgraph_checkpoint_repo.agent_server.checkpointer"},
    "store": {"path": "langgraph_checkpoint_repo.agent_server.store"}

and enters each factory itself (once per event-loop thread) and closes it on shutdown, so a
factory is an async context manager. Both use one root (the store in its ``store/``):
``LANGGRAPH_REPO_ROOT`` when set (the variable ``langgraph-repo`` reads too), else
``.langgraph`` next to the nearest ``langgraph.json`` from the server's working folder up, the
folder ``langgraph dev`` reads its graphs from.

The server reads state with no graph on the stack (``GET /threads/{id}/state``), so a read
there constructs only what the project allows: the ``[tool.langgraph-repo]`` table of its
pyproject.toml (``allow``, ``graph``; docs/types.md). Naming these factories in langgraph.json
is the explicit choice that lets the table be used (the server runs the project's graphs
anyway); the store's values are revived under the same table.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .core.errors import RepoCheckpointError

if TYPE_CHECKING:
    from .repostore import RepoStore
    from .saver import RepoSaver

ROOT_ENV = "LANGGRAPH_REPO_ROOT"
STRICT_ENV = "LANGGRAPH_REPO_STRICT_TURNS"  # 1: the server's saver refuses a second writer's turn
CONFIG_FILE = "langgraph.json"


def server_root(cwd: Path | None = None) -> Path:
    """The root the server's saver uses: the environment variable, else next to langgraph.json."""
    start = (cwd or Path.cwd()).absolute()
    named = os.environ.get(ROOT_ENV)
    if named:
        return start / Path(named).expanduser()  # a relative value: relative to where the server runs
    for folder in (start, *start.parents):
        if (folder / CONFIG_FILE).is_file():
            return folder / ".langgraph"
    raise RepoCheckpointError(
        f"no {CONFIG_FILE} in {start} or any folder above it, and {ROOT_ENV} is not set: "
        f"run the server from the folder of its {CONFIG_FILE}, or set {ROOT_ENV} to the folder "
        "the checkpoints go in"
    )


def server_saver(cwd: Path | None = None) -> RepoSaver:
    """The saver, allowed the types the project's ``[tool.langgraph-repo]`` table names."""
    from .project_types import project_types
    from .saver import RepoSaver  # LangGraph is imported when the server asks, not before

    root = server_root(cwd)
    strict = os.environ.get(STRICT_ENV, "") not in ("", "0")  # docs/forks.md, "Concurrent turns"
    return RepoSaver(root, allowlist=sorted(project_types(root).types), strict_turns=strict)


@asynccontextmanager
async def checkpointer() -> AsyncIterator[RepoSaver]:
    """The factory ``langgraph.json`` names: one RepoSaver for the server's lifetime."""
    # off the event loop: reading pyproject.toml and importing the graphs it names block
    yield await asyncio.to_thread(server_saver)


def server_store(cwd: Path | None = None) -> RepoStore:
    """The store, on the saver's root, allowed the same types; its TTL settings from the
    ``store.ttl`` table of ``langgraph.json`` (the server does not sweep a custom store: with
    ``sweep_interval_minutes`` set, the factory starts RepoStore's own sweeper)."""
    from .project_types import project_types
    from .repostore import RepoStore

    root = server_root(cwd)
    return RepoStore(root, allowlist=sorted(project_types(root).types), ttl=_store_ttl(cwd))


def _store_ttl(cwd: Path | None) -> Any:
    """``langgraph.json``'s ``store.ttl`` (next to which the root lies by default), or None."""
    start = (cwd or Path.cwd()).absolute()
    for folder in (start, *start.parents):
        path = folder / CONFIG_FILE
        if path.is_file():
            try:
                config = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise RepoCheckpointError(f"{path}: cannot read the store's TTL settings: {exc}") from None
            ttl = (config.get("store") or {}).get("ttl") if isinstance(config, dict) else None
            if ttl is not None and not isinstance(ttl, dict):
                raise RepoCheckpointError(f"{path}: store.ttl must be an object, not {ttl!r}")
            return ttl
    return None


@asynccontextmanager
async def store() -> AsyncIterator[RepoStore]:
    """The store factory ``langgraph.json`` names: one RepoStore for the server's lifetime."""
    made = await asyncio.to_thread(server_store)
    sweeping = bool(made.ttl_config and made.ttl_config.get("sweep_interval_minutes"))
    if sweeping:
        made.start_ttl_sweeper()
    try:
        yield made
    finally:
        if sweeping:
            await asyncio.to_thread(made.stop_ttl_sweeper, 30)

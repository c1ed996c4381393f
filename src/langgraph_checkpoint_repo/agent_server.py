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

Retention: ``checkpointer.ttl`` of that ``langgraph.json`` (else the table's ``ttl``) is the
saver's ``ttl``, and ``store.ttl`` the store's; the server sweeps neither a custom checkpointer
nor a custom store, so with ``sweep_interval_minutes`` each factory runs its object's own
sweeper while the server runs (docs/reliability.md, "Retention").
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .core.caches import KEPT_THREADS, KEPT_THREADS_MAX
from .core.errors import RepoCheckpointError

if TYPE_CHECKING:
    from .repostore import RepoStore
    from .saver import RepoSaver

ROOT_ENV = "LANGGRAPH_REPO_ROOT"
STRICT_ENV = "LANGGRAPH_REPO_STRICT_TURNS"  # 1: the server's saver refuses a second writer's turn
KEPT_ENV = "LANGGRAPH_REPO_KEPT_THREADS"  # how many threads the server's saver keeps read (RepoSaver)
CONFIG_FILE = "langgraph.json"
_log = logging.getLogger("langgraph_checkpoint_repo")


def server_config(cwd: Path | None = None) -> Path | None:
    """The ``langgraph.json`` the server reads: the nearest from its working folder up."""
    start = (cwd or Path.cwd()).absolute()
    return next((f / CONFIG_FILE for f in (start, *start.parents) if (f / CONFIG_FILE).is_file()), None)


def server_root(cwd: Path | None = None) -> Path:
    """The root the server's saver uses: the environment variable, else next to langgraph.json."""
    start = (cwd or Path.cwd()).absolute()
    named = os.environ.get(ROOT_ENV)
    if named:
        return start / Path(named).expanduser()  # a relative value: relative to where the server runs
    config = server_config(start)
    if config is not None:
        return config.parent / ".langgraph"
    raise RepoCheckpointError(
        f"no {CONFIG_FILE} in {start} or any folder above it, and {ROOT_ENV} is not set: "
        f"run the server from the folder of its {CONFIG_FILE}, or set {ROOT_ENV} to the folder "
        "the checkpoints go in"
    )


def server_saver(cwd: Path | None = None) -> RepoSaver:
    """The saver, allowed the types the project's ``[tool.langgraph-repo]`` table names; its
    retention from ``checkpointer.ttl`` of the server's ``langgraph.json``, else the table's
    ``ttl`` (project_types.project_retention; the server does not sweep a custom checkpointer:
    with ``sweep_interval_minutes`` set, the factory starts RepoSaver's own sweeper)."""
    from .project_types import project_retention, project_types
    from .saver import RepoSaver  # LangGraph is imported when the server asks, not before

    root = server_root(cwd)
    strict = os.environ.get(STRICT_ENV, "") not in ("", "0")  # docs/forks.md, "Concurrent turns"
    retention = project_retention(root, server_config(cwd))
    if retention is not None:
        _log.info("retention of %s (%s): %s", root, retention.source, retention.policy.describe())
    ttl = retention.config if retention is not None else None
    types = sorted(project_types(root).types)
    return RepoSaver(root, allowlist=types, strict_turns=strict, ttl=ttl, kept_threads=_kept_threads())


def _kept_threads() -> int:
    """``kept_threads`` from the environment (docs/reliability.md, "Memory across threads"):
    a server answering for more threads than the default keeps may give it more memory."""
    raw = os.environ.get(KEPT_ENV, "").strip()
    if not raw:
        return KEPT_THREADS
    value = int(raw) if raw.isascii() and raw.isdigit() else 0  # int() takes "1_0" and other digits too
    if not 1 <= value <= KEPT_THREADS_MAX:
        raise RepoCheckpointError(
            f"{KEPT_ENV}={raw!r}: expected a whole number of threads, from 1 to {KEPT_THREADS_MAX}"
        )
    return value


@asynccontextmanager
async def checkpointer() -> AsyncIterator[RepoSaver]:
    """The factory ``langgraph.json`` names: one RepoSaver for the server's lifetime (and its
    retention sweeper, when ``sweep_interval_minutes`` is set, stopped on the way out)."""
    # off the event loop: reading pyproject.toml and importing the graphs it names block
    made = await asyncio.to_thread(server_saver)
    async with _sweeping(made, made.retention is not None and bool(made.retention.sweep_interval_minutes)):
        yield made


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
    from .project_types import read_langgraph_json, ttl_of

    path = server_config(cwd)
    return ttl_of(read_langgraph_json(path), "store", path) if path is not None else None


@asynccontextmanager
async def store() -> AsyncIterator[RepoStore]:
    """The store factory ``langgraph.json`` names: one RepoStore for the server's lifetime."""
    made = await asyncio.to_thread(server_store)
    async with _sweeping(made, bool(made.ttl_config and made.ttl_config.get("sweep_interval_minutes"))):
        yield made


class _Sweeps(Protocol):
    def start_ttl_sweeper(self) -> Any: ...
    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool: ...


@asynccontextmanager
async def _sweeping(made: _Sweeps, sweeping: bool) -> AsyncIterator[None]:
    """The factory's own sweeper (the server sweeps neither a custom store nor a custom
    checkpointer), when asked for: started on the way in, stopped on the way out."""
    if sweeping:
        made.start_ttl_sweeper()
    try:
        yield
    finally:
        if sweeping:
            await asyncio.to_thread(made.stop_ttl_sweeper, 30)

"""RepoSaver behind LangGraph's Agent Server and ``langgraph dev``.

The server takes a custom checkpointer from ``langgraph.json``::

    "checkpointer": {"path": "langgraph_checkpoint_repo.agent_server.checkpointer"}

and enters the factory itself (once per event-loop thread) and closes it on shutdown, so the
factory is an async context manager. The root is ``LANGGRAPH_REPO_ROOT`` when set (the
variable ``langgraph-repo`` reads too), else ``.langgraph`` next to the nearest
``langgraph.json`` from the server's working folder up, the folder ``langgraph dev`` reads its
graphs from.

The server reads state with no graph on the stack (``GET /threads/{id}/state``), so a read
there constructs only what the project allows: the ``[tool.langgraph-repo]`` table of its
pyproject.toml (``allow``, ``graph``; docs/types.md). Naming this factory in langgraph.json is
the explicit choice that lets the table be used (the server runs the project's graphs anyway).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from .core.errors import RepoCheckpointError

if TYPE_CHECKING:
    from .saver import RepoSaver

ROOT_ENV = "LANGGRAPH_REPO_ROOT"
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
    return RepoSaver(root, allowlist=sorted(project_types(root).types))


@asynccontextmanager
async def checkpointer() -> AsyncIterator[RepoSaver]:
    """The factory ``langgraph.json`` names: one RepoSaver for the server's lifetime."""
    # off the event loop: reading pyproject.toml and importing the graphs it names block
    yield await asyncio.to_thread(server_saver)

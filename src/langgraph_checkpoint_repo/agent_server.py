"""RepoSaver behind LangGraph's Agent Server and ``langgraph dev``.

The server takes a custom checkpointer from ``langgraph.json``::

    "checkpointer": {"path": "langgraph_checkpoint_repo.agent_server.checkpointer"}

and enters the factory once per event loop, so the factory is an async context manager: the
server owns the saver's lifetime. The root is ``LANGGRAPH_REPO_ROOT`` when set (the variable
``langgraph-repo`` reads too, so both see the same files), else ``.langgraph`` next to the
nearest ``langgraph.json`` from the server's working folder up, the folder ``langgraph dev``
reads its graphs from.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import RepoCheckpointError

if TYPE_CHECKING:
    from .saver import RepoSaver

ROOT_ENV = "LANGGRAPH_REPO_ROOT"
CONFIG_FILE = "langgraph.json"


def server_root(cwd: Path | None = None) -> Path:
    """The root the server's saver uses: the environment variable, else next to langgraph.json."""
    start = (cwd or Path.cwd()).absolute()
    named = os.environ.get(ROOT_ENV)
    if named:
        return start / named  # a relative value is relative to where the server runs
    for folder in (start, *start.parents):
        if (folder / CONFIG_FILE).is_file():
            return folder / ".langgraph"
    raise RepoCheckpointError(
        f"no {CONFIG_FILE} in {start} or any folder above it, and {ROOT_ENV} is not set: "
        f"set {ROOT_ENV} to the folder the checkpoints go in"
    )


@asynccontextmanager
async def checkpointer() -> AsyncIterator[RepoSaver]:
    """The factory ``langgraph.json`` names: one RepoSaver for the server's lifetime."""
    from .saver import RepoSaver  # LangGraph is imported when the server asks, not before

    yield RepoSaver(server_root())

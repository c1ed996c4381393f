"""``langgraph-repo``: inspect, check and tidy the state RepoSaver keeps in a repository.

Commands are typer functions, one module per group: ``read`` (threads, history, show,
diff, tasks), ``health`` (validate, fsck), ``render``, ``maintain`` (delete, copy, prune,
migrate), ``transfer`` (import, export), ``heads``, ``review``, ``gitsetup`` (git-setup),
``server`` (the sub-group of ``server sync``) and ``store`` (RepoStore's items, a typer group
of its own). What they show is worked out in ``readmodel``
and ``core.checks`` and drawn with rich by ``output`` (the screening console, tables, JSON),
``views`` (rich text and tables), ``shape`` (the ``--json`` shapes) and ``markdown``
(render's Markdown). ``app`` holds the typer app, global options and the mapping of every
error to its exit code (``exits.EXIT_CODES``, docs/cli.md).
"""

from __future__ import annotations

from .exits import CliError

# importing the command modules registers their commands on ``app``, in this order (--help's)
# isort: off
from . import read  # noqa: F401
from . import health  # noqa: F401
from . import render  # noqa: F401
from . import maintain  # noqa: F401
from . import transfer  # noqa: F401
from . import heads  # noqa: F401
from . import review  # noqa: F401
from . import edit  # noqa: F401
from . import gitsetup  # noqa: F401
from . import server  # noqa: F401
from . import store  # noqa: F401

# isort: on
from .app import app, main

__all__ = ["CliError", "app", "main"]
